//! `dup-close`: the file-descriptor table. Processes each have their own
//! table; threads share one, which is what `--mode thread` exposes.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use anyhow::Result;

use super::{close_quietly, create_file, Description, Op, Share, SysError, WorkerEnv};
use crate::sys;

const FILE: &str = "f";

pub(super) fn describe() -> Description {
    Description {
        family: "fd table",
        op: "dup() of an open file descriptor, then close() of the copy",
        private: "worker i dups its own open file w<i>/f",
        shared: Ok("worker i dups its own open file description of shared/f"),
        same: Ok("every worker dups one open file description of shared/f (one struct file refcount)"),
    }
}

pub(super) fn prepare_shared(share: Share, dir: RawFd) -> Result<Option<OwnedFd>> {
    let name = sys::cname(FILE);
    let fail = |call: &str, e| anyhow::anyhow!("{call}(\"{FILE}\") failed: {}", sys::errno_text(e));
    create_file(dir, &name, 0).map_err(|(call, e)| fail(call, e))?;
    if share != Share::Same {
        return Ok(None);
    }
    let fd = sys::openat(dir, &name, libc::O_RDONLY, 0).map_err(|e| fail("openat", e))?;
    // SAFETY: fresh fd, owned by the returned value.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
}

pub(super) struct DupClose {
    name: CString,
    fd: RawFd,
    /// Whether `fd` is the worker's own (closed on drop) or the coordinator's.
    owns_fd: bool,
}

impl DupClose {
    pub(super) fn setup(env: &WorkerEnv<'_>) -> Result<DupClose> {
        let name = sys::cname(FILE);
        if let (Share::Same, Some(file)) = (env.share, &env.point.shared_file) {
            return Ok(DupClose { name, fd: file.as_raw_fd(), owns_fd: false });
        }
        if env.share == Share::Private {
            env.create_file(&name, 0)?;
        }
        let fd = env.open(&name, libc::O_RDONLY)?;
        Ok(DupClose { name, fd, owns_fd: true })
    }
}

impl Op for DupClose {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let copy = sys::dup(self.fd).map_err(SysError::new("dup", 0))?;
        sys::close(copy).map_err(SysError::new("close", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

impl Drop for DupClose {
    fn drop(&mut self) {
        if self.owns_fd {
            close_quietly(self.fd);
        }
    }
}
