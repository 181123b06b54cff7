//! Replays a parsed trace in one client's directory, one operation per
//! call, looping at the end (the POSIX call each operation maps to: the guide's "Trace replay").
//!
//! The semantics are dbench's own (its `fileio` backend), so that dbench's
//! loadfiles replay as dbench replays them: a recorded status is enforced
//! only where dbench enforces it (Unlink, Rmdir and Rename must succeed or
//! fail as recorded; a WriteX must write all its bytes); an NTCreateX that
//! disagrees with its status is tolerated, as dbench only prints it (a
//! handle whose open failed then fails the first op that uses it); Mkdir,
//! FIND_FIRST, QUERY_PATH_INFORMATION, Deltree and locks are not checked.
//! FIND_FIRST and QUERY_PATH_INFORMATION look a name up as dbench's
//! `resolve_name` does (stat, then a case-insensitive search of the
//! directory), and FIND_FIRST lists the directory only for a wildcard
//! pattern, up to its max count. Deltree removes files and keeps
//! directories. At the end of the file a client starts it over with no
//! cleanup between passes, as dbench does.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};

use super::trace::{OpKind, Trace, TraceOp};
use crate::sys::{self, Errno};

/// A replay step that did not do what the trace recorded.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {error:#}")]
pub struct ReplayError {
    /// The loadfile's line.
    pub line: u32,
    pub error: anyhow::Error,
}

/// One client's replay state: its directory, its open handles, its buffer.
pub struct Player<'a> {
    trace: &'a Trace,
    dir: BorrowedFd<'a>,
    fds: Vec<Option<sys::BareFd>>,
    buf: Vec<u8>,
    next: usize,
}

impl<'a> Player<'a> {
    /// A player in `dir` (the client's own directory, which it does not own).
    pub fn new(trace: &'a Trace, dir: BorrowedFd<'a>) -> Player<'a> {
        let fds = std::iter::repeat_with(|| None).take(trace.handle_names.len()).collect();
        Player { trace, dir, fds, buf: vec![0x5a; trace.max_io.max(1)], next: 0 }
    }

    /// Performs the next operation; returns its kind and the bytes it moved.
    #[inline]
    pub(crate) fn step(&mut self) -> Result<(OpKind, u64), ReplayError> {
        let index = self.next;
        self.next = if index + 1 == self.trace.ops.len() { 0 } else { index + 1 };
        let op = &self.trace.ops[index];
        match self.perform(op) {
            Ok(bytes) => Ok((op.kind(), bytes)),
            Err(error) => Err(ReplayError { line: self.trace.lines[index], error }),
        }
    }

    fn fd(&self, handle: usize) -> anyhow::Result<BorrowedFd<'_>> {
        self.fds[handle].as_ref().map(AsFd::as_fd).ok_or_else(|| self.not_open(handle))
    }

    fn not_open(&self, handle: usize) -> anyhow::Error {
        anyhow::anyhow!(
            "handle {} is not open (the trace closed it or its open failed)",
            self.trace.handle_names[handle]
        )
    }

    fn perform(&mut self, op: &TraceOp) -> anyhow::Result<u64> {
        let kind = op.kind().name();
        match op {
            TraceOp::Create { path, parent, directory, disposition, handle, expect_ok } => {
                resolve(self.dir, path, parent, &mut self.buf);
                let outcome = self.create(path, *directory, *disposition);
                self.keep_handle(*handle, outcome, *expect_ok);
                Ok(0)
            }
            TraceOp::Close { handle } => {
                let fd = self.fds[*handle].take().ok_or_else(|| self.not_open(*handle))?;
                fd.close().map_err(failed(kind, "close"))?;
                Ok(0)
            }
            TraceOp::Read { handle, offset, size } => self.transfer(kind, *handle, *offset, *size, false),
            TraceOp::Write { handle, offset, size } => self.transfer(kind, *handle, *offset, *size, true),
            TraceOp::Rename { from, to, expect_ok } => {
                expect(kind, from, sys::renameat(self.dir, from, to), *expect_ok, "renameat").map(|()| 0)
            }
            TraceOp::Unlink { path, expect_ok } => {
                expect(kind, path, sys::unlinkat(self.dir, path, 0), *expect_ok, "unlinkat").map(|()| 0)
            }
            TraceOp::Mkdir { path, parent } => {
                resolve(self.dir, path, parent, &mut self.buf);
                let _ = sys::mkdirat(self.dir, path, 0o700);
                Ok(0)
            }
            TraceOp::Rmdir { path, expect_ok } => {
                expect(kind, path, sys::unlinkat(self.dir, path, libc::AT_REMOVEDIR), *expect_ok, "rmdir").map(|()| 0)
            }
            TraceOp::Deltree { path } => {
                remove_files(self.dir, path, &mut self.buf);
                Ok(0)
            }
            TraceOp::Flush { handle } => sys::fsync(self.fd(*handle)?).map_err(failed(kind, "fsync")).map(|()| 0),
            TraceOp::FindFirst { path, dir, wildcard, max } => {
                resolve(self.dir, path, dir, &mut self.buf);
                if *wildcard {
                    list_dir(self.dir, dir, *max, &mut self.buf);
                }
                Ok(0)
            }
            TraceOp::QueryPath { path, parent } => {
                resolve(self.dir, path, parent, &mut self.buf);
                Ok(0)
            }
            TraceOp::QueryFile { handle } => sys::fstat(self.fd(*handle)?).map_err(failed(kind, "fstat")).map(|_| 0),
            TraceOp::QueryFs => sys::statfs_of(self.dir).map_err(failed(kind, "fstatfs")).map(|()| 0),
            TraceOp::SetFileInfo { handle } => {
                sys::touch(self.fd(*handle)?).map_err(failed(kind, "futimens")).map(|()| 0)
            }
            TraceOp::Lock { handle, offset, size, unlock, expect_ok } => {
                // A client never conflicts with itself, so a recorded lock
                // conflict cannot be reproduced; only unexpected failures count.
                let locked = lock(self.fd(*handle)?, *offset, *size, *unlock);
                locked
                    .or_else(|e| if *expect_ok { Err(e) } else { Ok(()) })
                    .map_err(failed(kind, "fcntl(F_SETLK)"))
                    .map(|()| 0)
            }
        }
    }

    /// ReadX or (`write`) WriteX of `size` bytes at `offset`: the bytes moved.
    fn transfer(
        &mut self,
        kind: &'static str,
        handle: usize,
        offset: i64,
        size: usize,
        write: bool,
    ) -> anyhow::Result<u64> {
        let Some(fd) = &self.fds[handle] else { return Err(self.not_open(handle)) };
        // A negative offset is the kernel's to refuse (EINVAL), as it was.
        let offset = offset as u64;
        if !write {
            return Ok(sys::pread(fd, &mut self.buf[..size], offset).map_err(failed(kind, "pread"))? as u64);
        }
        let n = sys::pwrite(fd, &self.buf[..size], offset).map_err(failed(kind, "pwrite"))?;
        if n != size {
            return Err(anyhow::anyhow!("{kind}: pwrite wrote {n} of {size} bytes"));
        }
        Ok(n as u64)
    }

    /// An NTCreateX's outcome kept in its handle's slot (a handle the trace
    /// reopens replaces the old one); a disagreement with the recorded
    /// status is tolerated, as dbench does.
    fn keep_handle(&mut self, handle: usize, outcome: Result<sys::BareFd, Errno>, expect_ok: bool) {
        if expect_ok {
            self.fds[handle] = None;
        }
        match (outcome, expect_ok) {
            (Ok(fd), true) => self.fds[handle] = Some(fd),
            (Ok(fd), false) => drop(fd.close()),
            (Err(_), _) => {}
        }
    }

    /// NTCreateX as dbench maps it: disposition 2 (create) adds O_CREAT, 4
    /// and 5 (overwrite, overwrite-if) O_CREAT|O_TRUNC, the others open an
    /// existing name; create option 0x1 asks for a directory, made first
    /// (an existing one is fine). A directory opened as a file is reopened
    /// as a directory.
    fn create(&self, path: &CStr, directory: bool, disposition: u32) -> Result<sys::BareFd, Errno> {
        if directory {
            let _ = sys::mkdirat(self.dir, path, 0o700);
            return sys::open_bare(self.dir, path, libc::O_RDONLY | libc::O_DIRECTORY, 0);
        }
        let flags = libc::O_RDWR
            | match disposition {
                2 => libc::O_CREAT,
                4 | 5 => libc::O_CREAT | libc::O_TRUNC,
                _ => 0,
            };
        match sys::open_bare(self.dir, path, flags, 0o600) {
            Err(libc::EISDIR) => sys::open_bare(self.dir, path, libc::O_RDONLY | libc::O_DIRECTORY, 0),
            done => done,
        }
    }
}

/// Checks a call's outcome against what the trace recorded.
fn expect(kind: &str, path: &CStr, done: Result<(), Errno>, expect_ok: bool, call: &str) -> anyhow::Result<()> {
    match (done, expect_ok) {
        (Ok(()), true) | (Err(_), false) => Ok(()),
        (Err(errno), true) => {
            Err(anyhow::anyhow!("{kind}: {call}(\"{}\") failed: {}", path.to_string_lossy(), sys::errno_text(errno)))
        }
        (Ok(()), false) => {
            Err(anyhow::anyhow!("{kind} \"{}\" succeeded, but the trace recorded a failure", path.to_string_lossy()))
        }
    }
}

/// Calls `each` with every entry name of directory `dir` below `base`
/// (`.` and `..` included) until it returns false; nothing if `dir` cannot
/// be opened.
fn scan_dir(base: BorrowedFd<'_>, dir: &CStr, buf: &mut [u8], mut each: impl FnMut(&[u8], u8) -> bool) {
    let Ok(fd) = sys::open_bare(base, dir, libc::O_RDONLY | libc::O_DIRECTORY, 0) else { return };
    let mut scratch = [0u8; 8192];
    let buf: &mut [u8] = if buf.len() >= 8192 { buf } else { &mut scratch };
    'reading: while let Ok(filled) = sys::getdents64(&fd, buf) {
        if filled == 0 {
            break;
        }
        for entry in sys::dirents(buf, filled) {
            if !each(entry.name().to_bytes(), entry.d_type) {
                break 'reading;
            }
        }
    }
}

/// A FIND_FIRST listing: up to `max` entries of `dir`.
fn list_dir(base: BorrowedFd<'_>, dir: &CStr, max: usize, buf: &mut [u8]) {
    let mut left = max;
    scan_dir(base, dir, buf, |_, _| {
        left = left.saturating_sub(1);
        left > 0
    });
}

/// dbench's `resolve_name`: a stat of the name, and when it is missing, a
/// case-insensitive search of its directory `parent` (what an SMB server does).
fn resolve(base: BorrowedFd<'_>, path: &CStr, parent: &CStr, buf: &mut [u8]) {
    if sys::fstatat(base, path, 0).is_ok() {
        return;
    }
    let bytes = path.to_bytes();
    let leaf = bytes.iter().rposition(|&b| b == b'/').map_or(bytes, |slash| &bytes[slash + 1..]);
    scan_dir(base, parent, buf, |name, _| !name.eq_ignore_ascii_case(leaf));
}

/// dbench's Deltree: every file below `dir` is unlinked, recursively;
/// directories stay. Failures are ignored, as dbench ignores them.
fn remove_files(base: BorrowedFd<'_>, dir: &CStr, buf: &mut [u8]) {
    let mut names: Vec<(Vec<u8>, u8)> = Vec::new();
    scan_dir(base, dir, buf, |name, d_type| {
        if name != b"." && name != b".." {
            names.push((name.to_vec(), d_type));
        }
        true
    });
    for (name, d_type) in names {
        let mut path = dir.to_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(&name);
        let Ok(path) = std::ffi::CString::new(path) else { continue };
        let is_dir = match d_type {
            libc::DT_DIR => true,
            libc::DT_UNKNOWN => sys::fstatat(base, &path, libc::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR),
            _ => false,
        };
        if is_dir {
            remove_files(base, &path, buf);
        } else {
            let _ = sys::unlinkat(base, &path, 0);
        }
    }
}

/// An op's failed call as an error naming the op and the call.
fn failed(kind: &'static str, call: &'static str) -> impl Fn(Errno) -> anyhow::Error {
    move |errno| anyhow::anyhow!("{kind}: {call} failed: {}", sys::errno_text(errno))
}

/// `fcntl(F_SETLK)` of a write lock on (`unlock`: an unlock of) `size` bytes at `offset`.
fn lock(fd: BorrowedFd<'_>, offset: i64, size: i64, unlock: bool) -> Result<(), Errno> {
    let lock = libc::flock {
        l_type: if unlock { libc::F_UNLCK } else { libc::F_WRLCK } as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: offset,
        l_len: size,
        l_pid: 0,
    };
    sys::set_lock(fd, libc::F_SETLK, &lock)
}
