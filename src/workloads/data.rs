//! Data workloads on 4 KiB blocks: `read`, `write`, `append`, `fsync`.
//!
//! At `--share shared` all workers use one file, worker i at offset i × 4 KiB;
//! at `--share same` they all hit offset 0, the same page of one file.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;

use anyhow::Result;

use super::{close_quietly, create_file, Description, Op, Share, SysError, WorkerEnv, Workload};
use crate::sys::{self, Errno};

/// The size of one read or write.
pub const DATA_BLOCK: usize = 4096;

/// `append` truncates its file after this many appends (1 MiB of 4 KiB blocks).
pub(super) const APPENDS_PER_TRUNCATE: u32 = (1024 * 1024 / DATA_BLOCK) as u32;

const FILE: &str = "f";

pub(super) fn describe(workload: Workload) -> Description {
    let shared = Ok("one file shared/f; worker i at offset i*4KiB");
    let same = Ok("every worker at offset 0 of shared/f (the same page)");
    match workload {
        Workload::Read => Description {
            family: "data",
            op: "pread() of 4 KiB from a cached file, always the same offset",
            private: "worker i reads its own file w<i>/f",
            shared,
            same,
        },
        Workload::Write => Description {
            family: "data",
            op: "pwrite() of 4 KiB over existing data, always the same offset",
            private: "worker i writes its own file w<i>/f",
            shared,
            same,
        },
        Workload::Fsync => Description {
            family: "data",
            op: "pwrite() of 4 KiB over existing data, then fsync() of the file",
            private: "worker i writes and syncs its own file w<i>/f",
            shared,
            same,
        },
        _ => Description {
            family: "data",
            op: "write() of 4 KiB to an O_APPEND file; every 256th op also ftruncate()s it to 0 (files stay <= 1 MiB per worker)",
            private: "worker i appends to its own file w<i>/f",
            shared: Ok("every worker appends to the one file shared/f"),
            same: Err("appends already all go to the end of one file at --share shared"),
        },
    }
}

pub(super) fn prepare_shared(workload: Workload, share: Share, workers: usize, dir: RawFd) -> Result<()> {
    let len = match (workload, share) {
        (Workload::Append, _) => 0,
        (_, Share::Shared) => (workers * DATA_BLOCK) as u64,
        _ => DATA_BLOCK as u64,
    };
    create_file(dir, &sys::cname(FILE), len)
        .map_err(|(call, e)| anyhow::anyhow!("{call}(\"{FILE}\") failed: {}", sys::errno_text(e)))
}

/// Opens the worker's data file, creating it first when it is the worker's own.
fn open_data_file(env: &WorkerEnv<'_>, flags: libc::c_int, len: u64) -> Result<(CString, RawFd)> {
    let name = sys::cname(FILE);
    if env.share == Share::Private {
        env.create_file(&name, len)?;
    }
    let fd = env.open(&name, flags)?;
    Ok((name, fd))
}

fn offset_of(env: &WorkerEnv<'_>) -> i64 {
    match env.share {
        Share::Shared => (env.index * DATA_BLOCK) as i64,
        Share::Private | Share::Same => 0,
    }
}

#[inline(always)]
fn full(call: &'static str, result: Result<usize, Errno>) -> Result<(), SysError> {
    match result {
        Ok(DATA_BLOCK) => Ok(()),
        Ok(_) => Err(SysError { call, errno: 0, arg: 0 }),
        Err(errno) => Err(SysError { call, errno, arg: 0 }),
    }
}

/// `read`.
pub(super) struct Read {
    name: CString,
    fd: RawFd,
    offset: i64,
    buf: Box<[u8]>,
}

impl Read {
    pub(super) fn setup(env: &WorkerEnv<'_>) -> Result<Read> {
        let (name, fd) = open_data_file(env, libc::O_RDONLY, DATA_BLOCK as u64)?;
        let buf = vec![0u8; DATA_BLOCK].into_boxed_slice();
        Ok(Read { name, fd, offset: offset_of(env), buf })
    }
}

impl Op for Read {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        full("pread", sys::pread(self.fd, &mut self.buf, self.offset))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

impl Drop for Read {
    fn drop(&mut self) {
        close_quietly(self.fd);
    }
}

/// `write`, and `fsync` when `sync` is set.
pub(super) struct Write {
    name: CString,
    fd: RawFd,
    offset: i64,
    buf: Box<[u8]>,
    sync: bool,
}

impl Write {
    pub(super) fn setup(env: &WorkerEnv<'_>, sync: bool) -> Result<Write> {
        let (name, fd) = open_data_file(env, libc::O_WRONLY, DATA_BLOCK as u64)?;
        let buf = vec![0xa5u8; DATA_BLOCK].into_boxed_slice();
        Ok(Write { name, fd, offset: offset_of(env), buf, sync })
    }
}

impl Op for Write {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        full("pwrite", sys::pwrite(self.fd, &self.buf, self.offset))?;
        if self.sync {
            sys::fsync(self.fd).map_err(SysError::new("fsync", 0))?;
        }
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

impl Drop for Write {
    fn drop(&mut self) {
        close_quietly(self.fd);
    }
}

/// `append`.
pub(super) struct Append {
    name: CString,
    fd: RawFd,
    buf: Box<[u8]>,
    appended: u32,
}

impl Append {
    pub(super) fn setup(env: &WorkerEnv<'_>) -> Result<Append> {
        super::refuse_same(env)?;
        let (name, fd) = open_data_file(env, libc::O_WRONLY | libc::O_APPEND, 0)?;
        let buf = vec![0x3cu8; DATA_BLOCK].into_boxed_slice();
        Ok(Append { name, fd, buf, appended: 0 })
    }
}

impl Op for Append {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        full("write", sys::write(self.fd, &self.buf))?;
        self.appended += 1;
        if self.appended == APPENDS_PER_TRUNCATE {
            self.appended = 0;
            sys::ftruncate(self.fd, 0).map_err(SysError::new("ftruncate", 0))?;
        }
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

impl Drop for Append {
    fn drop(&mut self) {
        close_quietly(self.fd);
    }
}
