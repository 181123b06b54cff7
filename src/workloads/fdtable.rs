//! `dup-close`: the file-descriptor table. Processes each have their own
//! table; threads share one, which is what `--mode thread` exposes.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, RawFd};

use anyhow::Result;

use super::{close_quietly, Description, Op, Share, SysError, WorkerEnv};
use crate::sys;

use super::FILE;

pub(super) fn describe() -> Description {
    Description {
        family: "fd table",
        op: "dup() of an open file descriptor, then close() of the copy",
        private: "worker i dups its own open file w<i>/f",
        shared: Ok("worker i dups its own open file description of shared/f"),
        same: Ok("every worker dups one open file description of shared/f (one struct file refcount)"),
    }
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
