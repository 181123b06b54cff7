//! A process that outlives rank 0 of an MPI job to remove its scratch.
//!
//! When a rank dies, mpirun sends every other rank SIGTERM and, milliseconds
//! later, SIGKILL: rank 0 has no time to remove a scratch directory full of
//! every rank's files. So rank 0 starts a warden first: a fresh `fsscale`
//! process in a session of its own (mpirun's signals do not reach it), told
//! through a pipe which scratch directories and results file are in use.
//! When the pipe closes without a goodbye, rank 0 is gone: the warden
//! removes what is still registered, through the same proof a `fsscale
//! cleanup --scratch` gives (fsscale's marker, held by no live process).

use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};

use crate::sys;

/// The hidden subcommand the warden runs as.
pub const SUBCOMMAND: &str = "scratch-warden";

/// Rank 0's end of the pipe.
pub(crate) struct Warden {
    pipe: std::fs::File,
}

impl Warden {
    /// Starts the warden (fork and exec of this very binary; the child only
    /// makes system calls before the exec, as a threaded process must).
    pub fn start() -> Result<Warden> {
        let exe = sys::cstring(Path::new("/proc/self/exe"))?;
        let argv0 = sys::cname("fsscale");
        let sub = sys::cname(SUBCOMMAND);
        let argv = [argv0.as_ptr(), sub.as_ptr(), std::ptr::null()];
        let (read, write) = sys::pipe()
            .map_err(|e| anyhow::anyhow!("cannot make the scratch warden's pipe: {}", sys::errno_text(e)))?;
        // SAFETY: between fork and exec the child makes only async-signal-safe system calls.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("cannot start the scratch warden: {}", sys::errno_text(sys::last_errno()));
        }
        if pid == 0 {
            // SAFETY: plain system calls in the forked child, then exec or _exit.
            unsafe {
                libc::setsid();
                libc::dup2(read.as_raw_fd(), 3);
                libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                for fd in 0..3 {
                    libc::dup2(null, fd);
                }
                libc::execv(exe.as_ptr(), argv.as_ptr());
                libc::_exit(127);
            }
        }
        drop(read);
        Ok(Warden { pipe: std::fs::File::from(write) })
    }

    /// `path` is in use: remove it if rank 0 dies.
    pub(crate) fn watch(&mut self, path: &Path) {
        self.say('+', path);
    }

    /// `path` is gone (or kept on purpose): forget it.
    pub fn release(&mut self, path: &Path) {
        self.say('-', path);
    }

    /// The results file: a temporary copy of it that a killed save left is removed.
    pub fn results(&mut self, path: &Path) {
        self.say('r', path);
    }

    /// Rank 0 ends normally: the warden leaves without removing anything.
    pub(crate) fn dismiss(mut self) {
        let _ = self.pipe.write_all(b"done\n");
    }

    fn say(&mut self, what: char, path: &Path) {
        // A warden that is gone (it failed to start its binary) costs only the safety net.
        let _ = writeln!(self.pipe, "{what}{}", path.display());
    }
}

/// The warden's body: reads the registrations on fd 3 until the pipe closes.
pub fn serve() -> Result<()> {
    // SAFETY: fd 3 is the pipe the parent set up; owned here from now on.
    let pipe = std::fs::File::from(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(3) });
    let mut watched: Vec<PathBuf> = Vec::new();
    let mut results: Option<PathBuf> = None;
    for line in std::io::BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        match line.split_at_checked(1) {
            _ if line == "done" => return Ok(()),
            Some(("+", path)) => watched.push(PathBuf::from(path)),
            Some(("-", path)) => watched.retain(|p| p != Path::new(path)),
            Some(("r", path)) => results = Some(PathBuf::from(path)),
            _ => {}
        }
    }
    // Rank 0 is gone. Its marker locks are released as its last descriptors close.
    for path in &watched {
        for _ in 0..50 {
            if !path.exists() || super::remove_dead(path).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if let Some(results) = results {
        remove_temporary_copies(&results);
    }
    Ok(())
}

/// Removes `.NAME.<16 hex>.tmp` beside `results`: a save that was cut short
/// (the results file itself, complete up to the last run, stays).
fn remove_temporary_copies(results: &Path) {
    let (Some(dir), Some(name)) = (results.parent(), results.file_name()) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(hex) = file.strip_prefix(&prefix).and_then(|rest| rest.strip_suffix(".tmp")) else { continue };
        if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
