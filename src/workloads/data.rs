//! Data workloads on 4 KiB blocks: `read`, `write`, `append`, `fsync` at a
//! fixed offset, `read-direct`, `write-direct` there with `O_DIRECT`, and
//! `read-seq`, `write-seq` through the file position.
//!
//! At `--share shared` all workers use one file, worker i at offset i × 4 KiB
//! (the sequential ones: each its own open file description, so its own
//! position); at `--share same` they all hit offset 0, the same page of one
//! file (the sequential ones: one open file description, one position).

use std::ffi::{CStr, CString};
use std::os::fd::BorrowedFd;

use anyhow::Result;

use super::{create_file, Description, Op, Share, SysError, WorkerEnv, WorkerFile, Workload, FILE};
use crate::sys::{self, Errno};

/// The size of one read or write.
pub const DATA_BLOCK: usize = 4096;

/// 1 MiB in blocks: `append` truncates its file after this many appends,
/// `read-seq` and `write-seq` go back to the start after as many ops.
pub(super) const BLOCKS_PER_MIB: u32 = (1024 * 1024 / DATA_BLOCK) as u32;

/// The file `read-seq` and `write-seq` go through: 1 MiB.
pub(super) const SEQ_FILE_LEN: u64 = BLOCKS_PER_MIB as u64 * DATA_BLOCK as u64;

const SHARED: Result<&str, &str> = Ok("one file shared/f; worker i at offset i*4KiB");

const SAME: Result<&str, &str> = Ok("every worker at offset 0 of shared/f (the same page)");

/// `read`.
pub(super) const READ: Description = Description {
    family: "data",
    op: "pread() of 4 KiB from a cached file, always the same offset",
    private: "worker i reads its own file w<i>/f",
    shared: SHARED,
    same: SAME,
};

/// `write`.
pub(super) const WRITE: Description = Description {
    family: "data",
    op: "pwrite() of 4 KiB over existing data, always the same offset",
    private: "worker i writes its own file w<i>/f",
    shared: SHARED,
    same: SAME,
};

/// `read-seq`.
pub(super) const READ_SEQ: Description = Description {
    family: "data",
    op: "read() of 4 KiB through the file position of a cached file; every 256th op of a worker also lseek()s to 0 (the file holds 1 MiB per worker that shares its position, so no read meets its end)",
    private: "worker i reads its own file w<i>/f",
    shared: Ok("one file shared/f, each worker its own open file description (own position)"),
    same: Ok("every worker reads through one open file description of shared/f (one position, its f_pos lock)"),
};

/// `write-seq`.
pub(super) const WRITE_SEQ: Description = Description {
    family: "data",
    op: "write() of 4 KiB through the file position over a 1 MiB file; every 256th op of a worker also lseek()s to 0",
    private: "worker i writes its own file w<i>/f",
    shared: Ok("one file shared/f, each worker its own open file description (own position)"),
    same: Ok("every worker writes through one open file description of shared/f (one position, its f_pos lock)"),
};

/// `read-direct`.
pub(super) const READ_DIRECT: Description = Description {
    family: "data",
    op: "pread() of 4 KiB with O_DIRECT (from the device, past the page cache), always the same offset",
    private: "worker i reads its own file w<i>/f",
    shared: SHARED,
    same: SAME,
};

/// `write-direct`.
pub(super) const WRITE_DIRECT: Description = Description {
    family: "data",
    op: "pwrite() of 4 KiB with O_DIRECT (to the device, past the page cache), always the same offset",
    private: "worker i writes its own file w<i>/f",
    shared: SHARED,
    same: SAME,
};

/// `fsync`.
pub(super) const FSYNC: Description = Description {
    family: "data",
    op: "pwrite() of 4 KiB over existing data, then fsync() of the file",
    private: "worker i writes and syncs its own file w<i>/f",
    shared: SHARED,
    same: SAME,
};

/// `append`.
pub(super) const APPEND: Description = Description {
    family: "data",
    op: "write() of 4 KiB to an O_APPEND file; every 256th op also ftruncate()s it to 0 (files stay <= 1 MiB per worker)",
    private: "worker i appends to its own file w<i>/f",
    shared: Ok("every worker appends to the one file shared/f"),
    same: Err("appends already all go to the end of one file at --share shared"),
};

pub(super) fn prepare_shared(workload: Workload, share: Share, workers: usize, dir: BorrowedFd<'_>) -> Result<()> {
    let len = match (workload, share) {
        (Workload::Append, _) => 0,
        (_, Share::Shared) => (workers * DATA_BLOCK) as u64,
        _ => DATA_BLOCK as u64,
    };
    create_file(dir, &sys::cname(FILE), len)
        .map_err(|(call, e)| anyhow::anyhow!("{call}(\"{FILE}\") failed: {}", sys::errno_text(e)))
}

/// Opens the worker's data file, creating it first when it is the worker's own.
fn open_data_file(env: &WorkerEnv<'_>, flags: libc::c_int, len: u64) -> Result<(CString, sys::BareFd)> {
    let name = sys::cname(FILE);
    if env.share == Share::Private {
        env.create_file(&name, len)?;
    }
    let fd = env.open(&name, flags)?;
    Ok((name, fd))
}

fn offset_of(env: &WorkerEnv<'_>) -> u64 {
    match env.share {
        Share::Shared => (env.index * DATA_BLOCK) as u64,
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
    fd: sys::BareFd,
    offset: u64,
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
        full("pread", sys::pread(&self.fd, &mut self.buf, self.offset))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

/// `write`, and `fsync` when `sync` is set.
pub(super) struct Write {
    name: CString,
    fd: sys::BareFd,
    offset: u64,
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
        full("pwrite", sys::pwrite(&self.fd, &self.buf, self.offset))?;
        if self.sync {
            sys::fsync(&self.fd).map_err(SysError::new("fsync", 0))?;
        }
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

/// `append`.
pub(super) struct Append {
    name: CString,
    fd: sys::BareFd,
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
        full("write", sys::write(&self.fd, &self.buf))?;
        self.appended += 1;
        if self.appended == BLOCKS_PER_MIB {
            self.appended = 0;
            sys::ftruncate(&self.fd, 0).map_err(SysError::new("ftruncate", 0))?;
        }
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

/// `read-seq` and `write-seq`: 4 KiB at a time through the file position.
pub(super) struct Sequential<'a> {
    file: WorkerFile<'a>,
    buf: Box<[u8]>,
    write: bool,
    /// Blocks moved since the last rewind.
    moved: u32,
}

impl<'a> Sequential<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>, write: bool) -> Result<Sequential<'a>> {
        let buf = vec![0x6bu8; DATA_BLOCK].into_boxed_slice();
        let flags = if write { libc::O_WRONLY } else { libc::O_RDONLY };
        Ok(Sequential { file: WorkerFile::open(env, flags, SEQ_FILE_LEN)?, buf, write, moved: 0 })
    }
}

impl Op for Sequential<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        if self.write {
            full("write", sys::write(&self.file, &self.buf))?;
        } else {
            full("read", sys::read(&self.file, &mut self.buf))?;
        }
        // Every worker goes back after its own 256 blocks, so a position
        // that N workers share moves at most N MiB between rewinds.
        self.moved += 1;
        if self.moved == BLOCKS_PER_MIB {
            self.moved = 0;
            sys::rewind(&self.file).map_err(SysError::new("lseek", 0))?;
        }
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

/// A block aligned as `O_DIRECT` wants its buffers.
#[repr(C, align(4096))]
struct AlignedBlock([u8; DATA_BLOCK]);

/// `read-direct` and `write-direct`.
pub(super) struct Direct {
    name: CString,
    fd: sys::BareFd,
    offset: u64,
    buf: Box<AlignedBlock>,
    write: bool,
}

impl Direct {
    pub(super) fn setup(env: &WorkerEnv<'_>, write: bool) -> Result<Direct> {
        let name = sys::cname(FILE);
        if env.share == Share::Private {
            env.create_file(&name, DATA_BLOCK as u64)?;
        }
        let flags = libc::O_DIRECT | if write { libc::O_WRONLY } else { libc::O_RDONLY };
        let fd = sys::open_bare(env.dir, &name, flags, 0).map_err(|errno| match errno {
            libc::EINVAL => anyhow::anyhow!(
                "{}: this filesystem does not support O_DIRECT (openat(\"{}/{FILE}\", O_DIRECT): {}); \
                 measure it on one that does, e.g. --fs ext4",
                env.workload,
                env.dir_label,
                sys::errno_text(errno)
            ),
            _ => env.setup_error("openat", &name, errno),
        })?;
        let buf = Box::new(AlignedBlock([0x5au8; DATA_BLOCK]));
        Ok(Direct { name, fd, offset: offset_of(env), buf, write })
    }
}

impl Op for Direct {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        if self.write {
            full("pwrite", sys::pwrite(&self.fd, &self.buf.0, self.offset))
        } else {
            full("pread", sys::pread(&self.fd, &mut self.buf.0, self.offset))
        }
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}
