//! Files whose `flock` says a live fsscale run owns something (a registry
//! entry, a scratch directory's marker). Liveness is the lock, never a PID:
//! the kernel drops it when the last process holding it (the run, or a
//! forked worker) is gone, whatever PID namespace looks at it.

use std::ffi::CStr;
use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use crate::sys::{self, Errno};

/// Creates `name` in `dir` exclusively (`O_EXCL | O_NOFOLLOW`, so nothing
/// planted there is reused) and locks it for as long as the file is open.
pub fn create_locked(dir: impl AsFd, name: &CStr, mode: libc::mode_t) -> Result<File, Errno> {
    let dir = dir.as_fd();
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_RDWR;
    let file = File::from(sys::open(dir, name, flags, mode)?);
    // Nobody else can hold a file made just now.
    if let Err(errno) = sys::lock_exclusive_now(&file) {
        let _ = sys::unlinkat(dir, name, 0);
        return Err(errno);
    }
    Ok(file)
}

/// Opens `name` in `dir` (never through a link) and takes its lock if no
/// live run holds it: `Some(file)`, holding the lock until dropped; `None`
/// when it is held (its run is alive).
///
/// What is locked is a regular file or a directory (a tracing instance, a
/// cgroup); it is opened without blocking, so a FIFO or device planted at
/// the name (in a sticky shared directory, say) is refused as
/// [`sys::NOT_REGULAR`], never waited on.
pub fn lock_if_unheld(dir: impl AsFd, name: &CStr) -> Result<Option<File>, Errno> {
    let file = File::from(sys::open(dir, name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0)?);
    let kind = file.metadata().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?.file_type();
    if !(kind.is_file() || kind.is_dir()) {
        return Err(sys::NOT_REGULAR);
    }
    // EWOULDBLOCK: a live run holds it.
    match sys::lock_exclusive_now(&file) {
        Ok(()) => Ok(Some(file)),
        Err(libc::EWOULDBLOCK) => Ok(None),
        Err(errno) => Err(errno),
    }
}

/// Makes a directory in `parent`, named by `name` (a fresh name each call),
/// and takes its lock: what tells a live run's from a killed run's (a
/// cgroup, a tracing instance).
///
/// Between the `mkdir` and the lock it looks like a killed run's to another
/// fsscale sweeping those, which may take it first: then it tries again
/// under a new name, three times at most. The error names the directory:
/// the `mkdir`'s (its kind kept: permission, no such parent) or, after three
/// tries, the last lock's.
pub fn make_locked_dir(parent: &Path, mut name: impl FnMut() -> String) -> std::io::Result<(PathBuf, File)> {
    use std::io::{Error, ErrorKind};
    let mut last = Error::from(ErrorKind::WouldBlock);
    for _ in 0..3 {
        let dir = parent.join(name());
        std::fs::create_dir(&dir).map_err(|e| Error::new(e.kind(), format!("creating {}: {e}", dir.display())))?;
        let path = sys::cstring(&dir)?;
        let why = match lock_if_unheld(sys::CWD, &path) {
            Ok(Some(lock)) => return Ok((dir, lock)),
            // A sweeper holds it, or has removed it already: it is the sweeper's.
            Ok(None) => Error::new(ErrorKind::WouldBlock, "another process holds it"),
            Err(errno) => {
                let _ = std::fs::remove_dir(&dir);
                Error::from_raw_os_error(errno)
            }
        };
        last = Error::new(why.kind(), format!("locking {}: {why}", dir.display()));
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_waiting_and_a_directory_can_be_locked() {
        let dir = tempfile::tempdir().unwrap();
        let fd = File::open(dir.path()).unwrap();
        rustix::fs::mknodat(
            sys::CWD,
            dir.path().join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(lock_if_unheld(&fd, c"fifo").unwrap_err(), sys::NOT_REGULAR);
        std::fs::create_dir(dir.path().join("instance")).unwrap();
        assert!(lock_if_unheld(&fd, c"instance").unwrap().is_some());
    }

    #[test]
    fn a_held_lock_is_seen_and_a_dropped_one_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let fd = File::open(dir.path()).unwrap();
        let held = create_locked(&fd, c"entry", 0o600).unwrap();
        assert!(lock_if_unheld(&fd, c"entry").unwrap().is_none());
        assert_eq!(create_locked(&fd, c"entry", 0o600).unwrap_err(), libc::EEXIST);
        drop(held);
        assert!(lock_if_unheld(&fd, c"entry").unwrap().is_some());
    }
}
