//! `command`: bring-your-own workload. N copies of a command run from a
//! common start, each in its own directory, timed to completion; or (with a
//! metric, see [`CommandSpec::driver`]) one driver command per point whose
//! own client count is the swept `{workers}`, run by the runner.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::{Description, Job, JobContext, JobOutput, Share, WorkerEnv};
use crate::exec::{self, CommandLine, Metric, Placeholders, RunOptions};

pub(super) fn describe() -> Description {
    Description {
        family: "external (--cmd)",
        op: "one run of --cmd to completion; with --metric/--metric-json/--driver one driver command per point \
             reports the figure",
        private: "copy i runs in w<i>/ ({dir}); --setup and --cleanup run there, untimed",
        shared: Err("copies run in a directory each, or all in one with --share same"),
        same: Ok("all copies run in shared/; --setup and --cleanup run once, untimed"),
    }
}

/// The `command` workload's settings, free of command-line types.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// The measured command, with placeholders.
    pub cmd: String,
    /// Untimed, per worker (once at `--share same`) before the start.
    pub setup: Option<String>,
    /// Untimed, per worker (once at `--share same`) after every worker finished.
    pub cleanup: Option<String>,
    /// Untimed, once before every run (e.g. dropping caches).
    pub prepare: Option<String>,
    /// Run the templates with `sh -c` instead of splitting them into words.
    pub shell: bool,
    /// Kills any of the commands (and its process group) that runs longer.
    pub timeout: Option<Duration>,
    /// One driver command per point reporting this figure, instead of N copies.
    pub driver: Option<Metric>,
    /// `--variant`: the variant the run is under (`{variant}`, `$FSSCALE_VARIANT`); set per run.
    pub variant: Option<String>,
}

impl CommandSpec {
    /// Every template with its flag name, for checking.
    pub(crate) fn templates(&self) -> Vec<(&'static str, &str)> {
        let mut all = vec![("--cmd", self.cmd.as_str())];
        all.extend(self.setup.as_deref().map(|t| ("--setup", t)));
        all.extend(self.cleanup.as_deref().map(|t| ("--cleanup", t)));
        all.extend(self.prepare.as_deref().map(|t| ("--prepare", t)));
        all
    }

    /// Checks every template before anything runs.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (flag, template) in self.templates() {
            let probe = Placeholders {
                dir: Path::new("/d"),
                worker: 0,
                workers: 1,
                scratch: Path::new("/s"),
                tarball: None,
                variant: None,
            };
            CommandLine::build(template, self.shell, &probe).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
        }
        Ok(())
    }

    /// Runs one of the templates to completion (untimed work and drivers).
    pub fn run(
        &self,
        template: &str,
        values: &Placeholders<'_>,
        capture_stdout: bool,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<exec::Finished> {
        let line = CommandLine::build(template, self.shell, values)?;
        let env = values.environment();
        let scan = match self.driver.as_ref().map(|m| &m.source) {
            Some(exec::MetricSource::Regex(regex)) if capture_stdout => Some(regex),
            _ => None,
        };
        let options =
            RunOptions { cwd: Some(values.dir), timeout: self.timeout, capture_stdout, scan, env: &env, stop };
        Ok(exec::run(&line, &options)?)
    }
}

impl CommandSpec {
    /// Runs the untimed `template` of `flag` (`--setup`, `--cleanup`,
    /// `--prepare`) when it was given; its error names the flag.
    pub(crate) fn run_untimed(
        &self,
        flag: &str,
        template: Option<&str>,
        values: &Placeholders<'_>,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<()> {
        match template {
            Some(t) => self.run(t, values, false, stop).map(drop).map_err(|e| anyhow::anyhow!("{flag}: {e:#}")),
            None => Ok(()),
        }
    }
}

/// One copy of the command, as worker `index` runs it.
pub(super) struct CommandCopy<'a> {
    spec: &'a CommandSpec,
    dir: std::path::PathBuf,
    scratch: &'a Path,
    index: usize,
    workers: usize,
    /// Whether this worker runs --setup and --cleanup (not at `--share same`,
    /// where the coordinator runs them once).
    own_setup: bool,
}

impl<'a> CommandCopy<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<CommandCopy<'a>> {
        let spec = env.command.ok_or_else(|| anyhow::anyhow!("command needs --cmd (internal error: none given)"))?;
        Ok(CommandCopy {
            spec,
            dir: env.dir_path(),
            scratch: env.scratch_path,
            index: env.index,
            workers: env.workers,
            own_setup: env.share == Share::Private,
        })
    }

    fn values(&self) -> Placeholders<'_> {
        Placeholders {
            dir: &self.dir,
            worker: self.index,
            workers: self.workers,
            scratch: self.scratch,
            tarball: None,
            variant: self.spec.variant.as_deref(),
        }
    }
}

impl Job for CommandCopy<'_> {
    fn prepare(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<()> {
        let setup = self.spec.setup.as_deref().filter(|_| self.own_setup);
        self.spec.run_untimed("--setup", setup, &self.values(), ctx.stop)
    }

    fn run(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<JobOutput> {
        self.spec.run(&self.spec.cmd, &self.values(), false, ctx.stop)?;
        (ctx.progress)(1);
        Ok(JobOutput { entries: 1, bytes: 0, walk: None })
    }

    fn finish(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<()> {
        let cleanup = self.spec.cleanup.as_deref().filter(|_| self.own_setup);
        self.spec.run_untimed("--cleanup", cleanup, &self.values(), ctx.stop)
    }
}
