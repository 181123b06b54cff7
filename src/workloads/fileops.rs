//! Operations on an open file that move no data (will-it-scale's lseek1/2,
//! lock1/2, fallocate1/2; fxmark DWTL): `lseek` (the file position),
//! `fcntl-lock` (POSIX record locks), `flock` (whole-file locks),
//! `fallocate` (blocks allocated and freed), `truncate` (the size).
//!
//! `fallocate` and `truncate` work on a 1 MiB range: worker i's own file,
//! or (shared) its own range of one file, or for `truncate` the one size
//! every worker moves.
//!
//! Private: worker i's own file `w<i>/f`. Shared: one file `shared/f`, each
//! worker its own open file description. Same: every worker on one open
//! file description the coordinator opened before the workers started
//! (threads share it; forked processes inherit it).

use std::ffi::CStr;

use anyhow::Result;

use super::{Description, Op, Share, SysError, WorkerEnv, WorkerFile};
use crate::sys;

const PRIVATE: &str = "worker i on its own file w<i>/f";

/// `lseek`.
pub(super) const LSEEK: Description = Description {
    family: "file",
    op: "lseek(fd, 0, SEEK_SET) of an open file",
    private: PRIVATE,
    shared: Ok("one file shared/f, each worker its own open file description (will-it-scale's lseek2)"),
    same: Ok("every worker seeks one open file description of shared/f (its f_pos lock; not lseek2)"),
};

/// `fcntl-lock`.
pub(super) const FCNTL_LOCK: Description = Description {
    family: "file",
    op: "fcntl(F_SETLK) of a write lock on one byte, then fcntl(F_SETLK, F_UNLCK) of it; the pair is one op \
         (will-it-scale's lock1 counts each call)",
    private: PRIVATE,
    shared: Ok("one file shared/f; worker i locks byte i (no overlap: the inode's lock list is what is shared)"),
    same: Ok("one file shared/f; every worker write-locks byte 0 with F_OFD_SETLKW through its own open file \
               description, so each waits for the others (will-it-scale's lock2, contended; threads too)"),
};

/// `fallocate`.
pub(super) const FALLOCATE: Description = Description {
    family: "file",
    op: "fallocate() of 1 MiB, then fallocate(PUNCH_HOLE|KEEP_SIZE) of it: its pages or blocks allocated and freed \
         (not fallocate1's 8 KiB steps with a truncate every 128)",
    private: PRIVATE,
    shared: Ok("one file shared/f; worker i allocates and frees its own 1 MiB range at i MiB"),
    same: Err("every worker would allocate and free one range under the others"),
};

/// `truncate`.
pub(super) const TRUNCATE: Description = Description {
    family: "file",
    op: "ftruncate() of an empty file to 1 MiB, then back to 0 (sparse: the size moves, no data)",
    private: PRIVATE,
    shared: Ok("one file shared/f, every worker growing and shrinking it (one inode's size and lock)"),
    same: Err("shared already moves the one file's size"),
};

/// `flock`.
pub(super) const FLOCK: Description = Description {
    family: "file",
    op: "flock(LOCK_EX) of an open file, then flock(LOCK_UN); at --share shared LOCK_SH, so no worker waits",
    private: PRIVATE,
    shared: Ok("one file shared/f, each worker its own open file description taking a shared lock"),
    same: Ok("every worker locks one open file description of shared/f (the lock is the description's: none waits)"),
};

/// `lseek`.
pub(super) struct Lseek<'a> {
    file: WorkerFile<'a>,
}

impl<'a> Lseek<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Lseek<'a>> {
        Ok(Lseek { file: WorkerFile::open(env, libc::O_RDWR, 0)? })
    }
}

impl Op for Lseek<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        sys::rewind(&self.file).map_err(SysError::new("lseek", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

/// `fcntl-lock`: a write lock on the worker's byte, then its release; at
/// `same` all on byte 0, waiting for one another.
pub(super) struct FcntlLock<'a> {
    file: WorkerFile<'a>,
    lock: libc::flock,
    unlock: libc::flock,
    /// `F_SETLK` (POSIX locks, never waiting: no two workers share a byte),
    /// or at `same` `F_OFD_SETLKW`: the lock's owner is the open file
    /// description, so threads of one process contend as processes do.
    set: libc::c_int,
}

impl<'a> FcntlLock<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<FcntlLock<'a>> {
        let byte = if env.share == Share::Shared { env.index as libc::off_t } else { 0 };
        let (file, set) = match env.share {
            // Each its own description of shared/f: one shared description would be one owner.
            Share::Same => {
                let name = sys::cname(super::FILE);
                (WorkerFile::own(env, name, libc::O_RDWR)?, libc::F_OFD_SETLKW)
            }
            _ => (WorkerFile::open(env, libc::O_RDWR, 0)?, libc::F_SETLK),
        };
        // SAFETY: flock is plain data.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = byte;
        lock.l_len = 1;
        let mut unlock = lock;
        unlock.l_type = libc::F_UNLCK as libc::c_short;
        Ok(FcntlLock { file, lock, unlock, set })
    }
}

impl Op for FcntlLock<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        // l_pid 0, as OFD locks need.
        sys::set_lock(&self.file, self.set, &self.lock).map_err(SysError::new("fcntl(F_SETLK, F_WRLCK)", 0))?;
        sys::set_lock(&self.file, self.set, &self.unlock).map_err(SysError::new("fcntl(F_SETLK, F_UNLCK)", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

/// `flock`: the whole-file lock taken and released.
pub(super) struct Flock<'a> {
    file: WorkerFile<'a>,
    mode: libc::c_int,
}

impl<'a> Flock<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Flock<'a>> {
        let mode = if env.share == Share::Shared { libc::LOCK_SH } else { libc::LOCK_EX };
        Ok(Flock { file: WorkerFile::open(env, libc::O_RDWR, 0)?, mode })
    }
}

impl Op for Flock<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        sys::flock(&self.file, self.mode).map_err(SysError::new("flock", 0))?;
        sys::flock(&self.file, libc::LOCK_UN).map_err(SysError::new("flock(LOCK_UN)", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

/// The range `fallocate` and `truncate` move.
pub(super) const RANGE: u64 = 1 << 20;

/// `fallocate`: a worker's range allocated, then its blocks punched out.
pub(super) struct Fallocate<'a> {
    file: WorkerFile<'a>,
    offset: u64,
}

impl<'a> Fallocate<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Fallocate<'a>> {
        super::refuse_same(env)?;
        let offset = if env.share == Share::Shared { env.index as u64 * RANGE } else { 0 };
        let mut op = Fallocate { file: WorkerFile::open(env, libc::O_RDWR, 0)?, offset };
        // One op untimed: a filesystem without fallocate or hole punching
        // (FUSE, older NFS) is refused before the window, in words.
        op.once().map_err(|e| match e.errno {
            libc::EOPNOTSUPP => anyhow::anyhow!(
                "{}: this filesystem does not support {} ({}); measure it on one that does, e.g. --fs tmpfs or --fs ext4",
                env.workload,
                e.call,
                sys::errno_text(e.errno)
            ),
            errno => env.setup_error(e.call, &op.file.name, errno),
        })?;
        Ok(op)
    }
}

impl Op for Fallocate<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        sys::fallocate(&self.file, 0, self.offset, RANGE).map_err(SysError::new("fallocate", 0))?;
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        sys::fallocate(&self.file, punch, self.offset, RANGE).map_err(SysError::new("fallocate(PUNCH_HOLE)", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

/// `truncate`: the file's size up by 1 MiB and back.
pub(super) struct Truncate<'a> {
    file: WorkerFile<'a>,
}

impl<'a> Truncate<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Truncate<'a>> {
        super::refuse_same(env)?;
        Ok(Truncate { file: WorkerFile::open(env, libc::O_RDWR, 0)? })
    }
}

impl Op for Truncate<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        sys::ftruncate(&self.file, RANGE).map_err(SysError::new("ftruncate", 0))?;
        sys::ftruncate(&self.file, 0).map_err(SysError::new("ftruncate", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}
