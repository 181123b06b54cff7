//! `untar`: extract the whole tarball into the worker's own directory, with
//! the built-in extractor or an external command (`--extract-cmd`).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::{Description, Job, JobContext, JobOutput, WorkerEnv};
use crate::archive::{self, ExtractStats};

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
                    .replace("{tarball}", &shell_quote(&source.tarball))
                    .replace("{dir}", &shell_quote(&dir))
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

/// Single-quotes a path for `sh`.
fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// Runs `command` with `sh -c`, polling for a stop request; failures carry the stderr tail.
fn run_command(command: &str, ctx: &JobContext<'_>) -> Result<(), String> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: between fork and exec only async-signal-safe calls: restore the
    // signals a worker ignores or blocks, so the command can be interrupted.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| format!("starting `{command}`: {e}"))?;
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        text
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if (ctx.stop)() => {
                let _ = child.kill();
                let _ = child.wait();
                // Joined so no thread outlives the worker (a later point may fork).
                let _ = reader.join();
                return Err("stopped".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(format!("waiting for `{command}`: {e}")),
        }
    };
    let text = reader.join().unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&text);
    let tail: Vec<&str> = text.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
    let how = match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_string(),
    };
    Err(format!("`{command}` {how}{}", if tail.is_empty() { String::new() } else { format!(": {}", tail.join(" | ")) }))
}
