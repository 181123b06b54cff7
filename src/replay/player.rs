//! Replays a parsed trace in one client's directory, one operation per
//! call, looping at the end; POSIX mapping as [`OpKind::posix`] lists.

use std::ffi::CStr;
use std::os::fd::RawFd;

use super::trace::{OpKind, Trace, TraceOp};
use crate::sys::{self, Errno};

/// A replay step that did not do what the trace recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayError {
    pub line: u32,
    pub message: String,
}

/// One client's replay state: its directory, its open handles, its buffer.
pub struct Player<'a> {
    trace: &'a Trace,
    dir: RawFd,
    fds: Vec<RawFd>,
    buf: Vec<u8>,
    next: usize,
}

impl<'a> Player<'a> {
    /// A player in `dir` (the client's own directory, which it does not own).
    pub fn new(trace: &'a Trace, dir: RawFd) -> Player<'a> {
        Player { trace, dir, fds: vec![-1; trace.handle_names.len()], buf: vec![0x5a; trace.max_io.max(1)], next: 0 }
    }

    /// Performs the next operation; returns its kind and the bytes it moved.
    #[inline]
    pub fn step(&mut self) -> Result<(OpKind, u64), ReplayError> {
        let index = self.next;
        self.next = if index + 1 == self.trace.ops.len() { 0 } else { index + 1 };
        let op = &self.trace.ops[index];
        match self.perform(op) {
            Ok(bytes) => Ok((op.kind(), bytes)),
            Err(message) => Err(ReplayError { line: self.trace.lines[index], message }),
        }
    }

    fn fd(&self, handle: usize) -> Result<RawFd, String> {
        match self.fds[handle] {
            -1 => Err(format!(
                "handle {} is not open (the trace closed it or its open failed)",
                self.trace.handle_names[handle]
            )),
            fd => Ok(fd),
        }
    }

    fn perform(&mut self, op: &TraceOp) -> Result<u64, String> {
        let kind = op.kind().name();
        let sys_fail = |call: &str, path: &CStr, errno: Errno| {
            format!("{kind}: {call}(\"{}\") failed: {}", path.to_string_lossy(), sys::errno_text(errno))
        };
        match op {
            TraceOp::Create { path, directory, disposition, handle, expect_ok } => {
                let outcome = self.create(path, *directory, *disposition);
                match (outcome, expect_ok) {
                    (Ok(fd), true) => {
                        if self.fds[*handle] >= 0 {
                            let _ = sys::close(self.fds[*handle]);
                        }
                        self.fds[*handle] = fd;
                    }
                    (Ok(fd), false) => {
                        let _ = sys::close(fd);
                        return Err(format!(
                            "{kind} \"{}\" succeeded, but the trace recorded a failure",
                            path.to_string_lossy()
                        ));
                    }
                    (Err((call, errno)), true) => return Err(sys_fail(call, path, errno)),
                    (Err(_), false) => {}
                }
                Ok(0)
            }
            TraceOp::Close { handle } => {
                let fd = self.fd(*handle)?;
                self.fds[*handle] = -1;
                sys::close(fd).map_err(|e| format!("{kind}: close failed: {}", sys::errno_text(e)))?;
                Ok(0)
            }
            TraceOp::Read { handle, offset, size } => {
                let fd = self.fd(*handle)?;
                let n = sys::pread(fd, &mut self.buf[..*size], *offset)
                    .map_err(|e| format!("{kind}: pread failed: {}", sys::errno_text(e)))?;
                Ok(n as u64)
            }
            TraceOp::Write { handle, offset, size } => {
                let fd = self.fd(*handle)?;
                let n = sys::pwrite(fd, &self.buf[..*size], *offset)
                    .map_err(|e| format!("{kind}: pwrite failed: {}", sys::errno_text(e)))?;
                if n != *size {
                    return Err(format!("{kind}: pwrite wrote {n} of {size} bytes"));
                }
                Ok(n as u64)
            }
            TraceOp::Rename { from, to, expect_ok } => {
                expect(kind, from, sys::renameat(self.dir, from, to), *expect_ok, "renameat").map(|()| 0)
            }
            TraceOp::Unlink { path, expect_ok } => {
                expect(kind, path, sys::unlinkat(self.dir, path, 0), *expect_ok, "unlinkat").map(|()| 0)
            }
            TraceOp::Mkdir { path, expect_ok } => {
                expect(kind, path, sys::mkdirat(self.dir, path, 0o700), *expect_ok, "mkdirat").map(|()| 0)
            }
            TraceOp::Rmdir { path, expect_ok } => {
                expect(kind, path, sys::unlinkat(self.dir, path, libc::AT_REMOVEDIR), *expect_ok, "rmdir").map(|()| 0)
            }
            TraceOp::Deltree { path } => {
                crate::scratch::remove_tree_at(self.dir, path).map_err(|e| format!("{kind}: {e:#}"))?;
                Ok(0)
            }
            TraceOp::Flush { handle } => {
                sys::fsync(self.fd(*handle)?).map_err(|e| format!("{kind}: fsync failed: {}", sys::errno_text(e)))?;
                Ok(0)
            }
            TraceOp::FindFirst { dir, expect_ok } => {
                let listed = list_dir(self.dir, dir, &mut self.buf);
                expect(kind, dir, listed, *expect_ok, "getdents64").map(|()| 0)
            }
            TraceOp::QueryPath { path, expect_ok } => {
                // SAFETY: stat is plain data.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                let done = sys::fstatat(self.dir, path, &mut st, 0);
                expect(kind, path, done, *expect_ok, "fstatat").map(|()| 0)
            }
            TraceOp::QueryFile { handle } => {
                // SAFETY: stat is plain data.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                sys::fstat(self.fd(*handle)?, &mut st)
                    .map_err(|e| format!("{kind}: fstat failed: {}", sys::errno_text(e)))?;
                Ok(0)
            }
            TraceOp::QueryFs => {
                // SAFETY: statfs is plain data; valid fd and pointer.
                let mut st: libc::statfs = unsafe { std::mem::zeroed() };
                if unsafe { libc::fstatfs(self.dir, &mut st) } != 0 {
                    return Err(format!("{kind}: fstatfs failed: {}", sys::errno_text(sys::last_errno())));
                }
                Ok(0)
            }
            TraceOp::SetFileInfo { handle } => {
                let fd = self.fd(*handle)?;
                // SAFETY: a null times pointer means "now" for both times.
                if unsafe { libc::futimens(fd, std::ptr::null()) } != 0 {
                    return Err(format!("{kind}: futimens failed: {}", sys::errno_text(sys::last_errno())));
                }
                Ok(0)
            }
            TraceOp::Lock { handle, offset, size, unlock, expect_ok } => {
                let fd = self.fd(*handle)?;
                // SAFETY: flock is plain data.
                let mut lock: libc::flock = unsafe { std::mem::zeroed() };
                lock.l_type = if *unlock { libc::F_UNLCK } else { libc::F_WRLCK } as libc::c_short;
                lock.l_whence = libc::SEEK_SET as libc::c_short;
                lock.l_start = *offset;
                lock.l_len = *size;
                // SAFETY: valid fd and flock pointer.
                let failed = unsafe { libc::fcntl(fd, libc::F_SETLK, &lock) } != 0;
                // A client never conflicts with itself, so a recorded lock
                // conflict cannot be reproduced; only unexpected failures count.
                if failed && *expect_ok {
                    return Err(format!("{kind}: fcntl(F_SETLK) failed: {}", sys::errno_text(sys::last_errno())));
                }
                Ok(0)
            }
        }
    }

    /// NTCreateX: dispositions 0 supersede, 1 open, 2 create, 3 open-if,
    /// 4 overwrite, 5 overwrite-if; create option 0x1 asks for a directory.
    fn create(&self, path: &CStr, directory: bool, disposition: u32) -> Result<RawFd, (&'static str, Errno)> {
        if directory {
            if matches!(disposition, 2 | 3) {
                match sys::mkdirat(self.dir, path, 0o700) {
                    Ok(()) => {}
                    Err(libc::EEXIST) if disposition == 3 => {}
                    Err(e) => return Err(("mkdirat", e)),
                }
            }
            return sys::openat(self.dir, path, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| ("openat", e));
        }
        let flags = libc::O_RDWR
            | match disposition {
                0 | 5 => libc::O_CREAT | libc::O_TRUNC,
                2 => libc::O_CREAT | libc::O_EXCL,
                3 => libc::O_CREAT,
                4 => libc::O_TRUNC,
                _ => 0,
            };
        sys::openat(self.dir, path, flags, 0o600).map_err(|e| ("openat", e))
    }
}

impl Drop for Player<'_> {
    fn drop(&mut self) {
        for &fd in &self.fds {
            if fd >= 0 {
                let _ = sys::close(fd);
            }
        }
    }
}

/// Checks a call's outcome against what the trace recorded.
fn expect(kind: &str, path: &CStr, done: Result<(), Errno>, expect_ok: bool, call: &str) -> Result<(), String> {
    match (done, expect_ok) {
        (Ok(()), true) | (Err(_), false) => Ok(()),
        (Err(errno), true) => {
            Err(format!("{kind}: {call}(\"{}\") failed: {}", path.to_string_lossy(), sys::errno_text(errno)))
        }
        (Ok(()), false) => {
            Err(format!("{kind} \"{}\" succeeded, but the trace recorded a failure", path.to_string_lossy()))
        }
    }
}

/// Reads a directory to its end, as a FIND_FIRST listing does.
fn list_dir(base: RawFd, dir: &CStr, buf: &mut [u8]) -> Result<(), Errno> {
    let fd = sys::openat(base, dir, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let mut scratch = [0u8; 8192];
    let buf: &mut [u8] = if buf.len() >= 8192 { buf } else { &mut scratch };
    let outcome = loop {
        match sys::getdents64(fd, buf) {
            Ok(0) => break Ok(()),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    let _ = sys::close(fd);
    outcome
}
