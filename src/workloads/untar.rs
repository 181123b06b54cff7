//! `untar`: extract the whole tarball into the worker's own directory, with
//! the built-in extractor or an external command (`--extract-cmd`).

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{Description, Job, JobContext, JobOutput, WorkerEnv};
use crate::archive::{self, ExtractStats};
use crate::exec;

pub(super) fn describe() -> Description {
    Description {
        family: "macro (fixed work, timed to completion)",
        op: "extract every entry of the tarball (--scale tree or --tarball) into the worker's own directory; \
             built in, or --extract-cmd",
        private: "worker i extracts into w<i>/",
        shared: Err("every extraction needs a directory of its own"),
        same: Err("every extraction needs a directory of its own"),
    }
}

/// The tree the macro workloads use, as the coordinator prepared it.
#[derive(Debug, Clone)]
pub struct TreeSource {
    pub tarball: PathBuf,
    /// What the tarball holds (from a scan), for commands that do not report it.
    pub contents: ExtractStats,
    /// `--extract-cmd`, with `{tarball}`, `{dir}`, `{worker}` placeholders.
    pub command: Option<String>,
    /// traverse: walk this directory (read only) instead of the extracted tarball.
    pub walk_tree: Option<PathBuf>,
    /// traverse: `fstatat` every entry.
    pub stat: bool,
}

pub(super) enum Untar {
    Builtin { file: std::fs::File, dir: i32 },
    External { command: String, contents: ExtractStats },
}

impl Untar {
    pub(super) fn setup(env: &WorkerEnv<'_>) -> Result<Untar> {
        let source = env.tree.as_ref().context("untar needs a tarball (internal error: none prepared)")?;
        match &source.command {
            None => {
                let file = std::fs::File::open(&source.tarball)
                    .with_context(|| format!("setup: opening tarball {}", source.tarball.display()))?;
                Ok(Untar::Builtin { file, dir: env.dir })
            }
            Some(template) => {
                let dir = env.dir_path();
                let command = template
                    .replace("{tarball}", &exec::sh_quote(&source.tarball.display().to_string()))
                    .replace("{dir}", &exec::sh_quote(&dir.display().to_string()))
                    .replace("{worker}", &env.index.to_string())
                    .replace("{workers}", &env.workers.to_string());
                Ok(Untar::External { command, contents: source.contents })
            }
        }
    }
}

impl Job for Untar {
    fn run(&mut self, ctx: &JobContext<'_>) -> Result<JobOutput, String> {
        match self {
            Untar::Builtin { file, dir } => {
                let mut reader: &mut dyn Read = file;
                let stats =
                    archive::extract(&mut reader, *dir, ctx.stop, ctx.progress).map_err(|e| format!("{e:#}"))?;
                Ok(JobOutput { entries: stats.entries(), bytes: stats.bytes })
            }
            Untar::External { command, contents } => {
                run_command(command, ctx)?;
                (ctx.progress)(contents.entries());
                Ok(JobOutput { entries: contents.entries(), bytes: contents.bytes })
            }
        }
    }
}

/// Runs `command` with `sh -c` in a process group of its own; failures carry the stderr tail.
fn run_command(command: &str, ctx: &JobContext<'_>) -> Result<(), String> {
    let options = exec::RunOptions { cwd: None, timeout: None, capture_stdout: false, env: &[], stop: ctx.stop };
    exec::run(&exec::CommandLine::Shell(command.to_string()), &options).map(drop).map_err(|e| e.to_string())
}
