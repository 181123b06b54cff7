//! `untar`: extract the whole tarball into the worker's own directory, with
//! the built-in extractor or an external command (`--extract-cmd`).

use std::io::Read;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{Description, Job, JobContext, JobOutput, WorkerEnv};
use crate::archive::{self, ExtractStats};
use crate::exec;

pub(super) fn describe() -> Description {
    Description {
        family: "macro (fixed work, timed to completion)",
        // What the built-in extractor refuses, and why, is in the guide: a header is one line.
        op: "extract every entry of the tarball (--scale tree or --tarball) into the worker's own directory; \
             built in (never writing outside it), or --extract-cmd",
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
    /// What `walk_tree` holds.
    pub walk_contents: ExtractStats,
    /// `--tarball`'s SHA-256 (a generated tarball is defined by its scale and seed).
    pub tarball_sha256: Option<String>,
    /// The digest of what a walk of `walk_tree` sees (see `archive::tally_with_digest`).
    pub walk_digest: Option<String>,
    /// traverse: `fstatat` every entry.
    pub stat: bool,
}

pub(super) enum Untar<'a> {
    Builtin {
        file: std::fs::File,
        dir: BorrowedFd<'a>,
    },
    External {
        command: exec::CommandLine,
        env: Vec<(&'static str, String)>,
        dir: BorrowedFd<'a>,
        contents: ExtractStats,
    },
}

impl<'a> Untar<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Untar<'a>> {
        let source = env.tree.as_ref().context("untar needs a tarball (internal error: none prepared)")?;
        match &source.command {
            None => {
                let file = crate::sys::open_input(&source.tarball, u64::MAX)
                    .with_context(|| format!("setup: opening tarball {}", source.tarball.display()))?;
                Ok(Untar::Builtin { file, dir: env.dir })
            }
            Some(template) => {
                let dir = env.dir_path();
                let values = exec::Placeholders {
                    dir: &dir,
                    worker: env.index,
                    workers: env.workers,
                    scratch: env.scratch_path,
                    tarball: Some(&source.tarball),
                    variant: None,
                };
                let command = exec::CommandLine::build(template, true, &values)
                    .map_err(|e| anyhow::anyhow!("--extract-cmd: {e}"))?;
                Ok(Untar::External { command, env: values.environment(), dir: env.dir, contents: source.contents })
            }
        }
    }
}

impl Job for Untar<'_> {
    fn run(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<JobOutput> {
        match self {
            Untar::Builtin { file, dir } => {
                let mut reader: &mut dyn Read = file;
                let stats = archive::extract(&mut reader, *dir, ctx.stop, ctx.progress)?;
                Ok(JobOutput { entries: stats.entries(), bytes: stats.bytes, walk: None })
            }
            Untar::External { command, env, contents, .. } => {
                let options = exec::RunOptions {
                    cwd: None,
                    timeout: None,
                    capture_stdout: false,
                    scan: None,
                    env,
                    stop: ctx.stop,
                };
                exec::run(command, &options)?;
                (ctx.progress)(contents.entries());
                Ok(JobOutput { entries: contents.entries(), bytes: contents.bytes, walk: None })
            }
        }
    }

    /// An external extractor's exit status proves nothing (`true {dir}`
    /// exits 0): after the timed job, untimed, the worker's directory must
    /// hold every entry of the tarball and every byte of its files.
    fn finish(&mut self, _ctx: &JobContext<'_>) -> anyhow::Result<()> {
        let Untar::External { command, dir, contents, .. } = self else { return Ok(()) };
        let found = archive::tally(*dir)
            .map_err(|e| anyhow::anyhow!("checking what `{}` extracted: {e:#}", command.display()))?;
        if found.entries() != contents.entries() || found.bytes != contents.bytes {
            anyhow::bail!(
                "`{}` exited 0 but extracted {} entries and {} bytes of file data where the tarball holds {} and {}; \
                 check --extract-cmd (it must extract {{tarball}} into {{dir}})",
                command.display(),
                found.entries(),
                found.bytes,
                contents.entries(),
                contents.bytes
            );
        }
        Ok(())
    }
}
