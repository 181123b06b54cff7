//! `readdir`: one op is one full listing of a 100-entry directory.

use std::ffi::{CStr, CString};
use std::os::fd::BorrowedFd;

use anyhow::{bail, Result};

use super::{create_file, Description, Op, Share, SysError, WorkerEnv};
use crate::sys::{self, Errno};

/// Regular files in each listed directory (plus `.` and `..`).
pub(crate) const ENTRIES: usize = 100;

/// Large enough for 100 short names in one `getdents64` call; the second call returns 0.
const BUFFER: usize = 32 * 1024;

pub(super) fn describe() -> Description {
    Description {
        family: "directory",
        op: "openat(O_DIRECTORY) of a 100-file directory, getdents64() until it returns 0, close()",
        private: "worker i lists w<i>/d",
        shared: Ok("one parent directory; worker i lists its own shared/d<i>"),
        same: Ok("every worker lists shared/d"),
    }
}

pub(super) fn prepare_shared(share: Share, dir: BorrowedFd<'_>) -> Result<()> {
    if share == Share::Same {
        fill_directory(dir, &sys::cname("d"))
            .map_err(|(call, name, e)| anyhow::anyhow!("{call}(\"{name}\") failed: {}", sys::errno_text(e)))?;
    }
    Ok(())
}

/// Makes directory `name` holding files e000..e099.
fn fill_directory(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), (&'static str, String, Errno)> {
    let label = name.to_string_lossy().into_owned();
    sys::mkdirat(dir, name, 0o700).map_err(|e| ("mkdirat", label.clone(), e))?;
    for i in 0..ENTRIES {
        let file = format!("{label}/e{i:03}");
        create_file(dir, &sys::cname(&file), 0).map_err(|(call, e)| (call, file.clone(), e))?;
    }
    Ok(())
}

pub(super) struct Readdir<'a> {
    dir: BorrowedFd<'a>,
    name: CString,
    buf: Box<[u8]>,
}

impl<'a> Readdir<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Readdir<'a>> {
        let name = env.own_name("d");
        if env.makes_own_objects() {
            fill_directory(env.dir, &name)
                .map_err(|(call, path, errno)| env.setup_error(call, &sys::cname(&path), errno))?;
        }
        let mut op = Readdir { dir: env.dir, name, buf: vec![0u8; BUFFER].into_boxed_slice() };
        // One untimed listing proves the op sees what it should.
        let seen = op.count_entries().map_err(|e| env.setup_error(e.call, &op.name, e.errno))?;
        if seen != ENTRIES + 2 {
            bail!(
                "setup: {}/{} lists {seen} entries, expected {}",
                env.dir_label,
                op.name.to_string_lossy(),
                ENTRIES + 2
            );
        }
        Ok(op)
    }

    fn count_entries(&mut self) -> Result<usize, SysError> {
        let fd = sys::open_bare(self.dir, &self.name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .map_err(SysError::new("openat", 0))?;
        let mut count = 0;
        loop {
            let filled = sys::getdents64(&fd, &mut self.buf).map_err(SysError::new("getdents64", 0))?;
            if filled == 0 {
                break;
            }
            count += sys::dirents(&self.buf, filled).count();
        }
        fd.close().map_err(SysError::new("close", 0))?;
        Ok(count)
    }
}

impl Op for Readdir<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let fd = sys::open_bare(self.dir, &self.name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .map_err(SysError::new("openat", 0))?;
        // A failed listing drops `fd`, which closes it.
        while sys::getdents64(&fd, &mut self.buf).map_err(SysError::new("getdents64", 0))? > 0 {}
        fd.close().map_err(SysError::new("close", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}
