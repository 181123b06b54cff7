//! `dup-close`: the file-descriptor table. Processes each have their own
//! table; threads share one, which is what `--mode thread` exposes.

use std::ffi::CStr;

use anyhow::Result;

use super::{Description, Op, SysError, WorkerEnv, WorkerFile};
use crate::sys;

pub(super) fn describe() -> Description {
    Description {
        family: "fd table",
        op: "dup() of an open file descriptor, then close() of the copy",
        private: "worker i dups its own open file w<i>/f",
        shared: Ok("worker i dups its own open file description of shared/f"),
        same: Ok("every worker dups one open file description of shared/f (one struct file refcount)"),
    }
}

pub(super) struct DupClose<'a> {
    file: WorkerFile<'a>,
}

impl<'a> DupClose<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<DupClose<'a>> {
        Ok(DupClose { file: WorkerFile::open(env, libc::O_RDONLY, 0)? })
    }
}

impl Op for DupClose<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let copy = sys::dup(&self.file).map_err(SysError::new("dup", 0))?;
        copy.close().map_err(SysError::new("close", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}
