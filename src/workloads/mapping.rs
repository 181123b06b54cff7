//! Page faults on a file mapping (will-it-scale's page_fault2/3):
//! `fault-shared` writes to a `MAP_SHARED` mapping (the page cache's pages
//! mapped and dirtied), `fault-private` to a `MAP_PRIVATE` one (a copy of
//! each page made). One op is the first write to one page of a fresh
//! mapping of 4 MiB; after every page of it, the mapping is unmapped and
//! mapped again (`munmap`, `mmap`: 2 calls per 1,024 ops).
//!
//! Private: worker i's own 4 MiB file. Shared: one file, worker i mapping
//! its own 4 MiB of it. Same: every worker mapping the same 4 MiB.

use std::ffi::CStr;

use anyhow::Result;

use super::{Description, Op, Share, SysError, WorkerEnv, WorkerFile};
use crate::sys;

/// Bytes mapped at once.
pub(super) const MAPPED: usize = 4 << 20;
const PAGE: usize = 4096;
/// Faults per mapping: `mmap` and `munmap` come once per this many ops.
pub(super) const PAGES: usize = MAPPED / PAGE;

/// `fault-shared`.
pub(super) const FAULT_SHARED: Description = Description {
    op: "a write to one page of a MAP_SHARED mapping of a file: a page fault mapping its page-cache page; after all 1,024 pages of the 4 MiB mapping, munmap() and mmap() it again",
    same: Ok("every worker maps the same 4 MiB of shared/f (the same pages)"),
    ..FAULT
};

/// `fault-private`.
pub(super) const FAULT_PRIVATE: Description = Description {
    op: "a write to one page of a MAP_PRIVATE mapping of a file: a page fault copying the page; after all 1,024 pages of the 4 MiB mapping, munmap() and mmap() it again",
    same: Ok("every worker maps the same 4 MiB of shared/f (copies of the same pages)"),
    ..FAULT
};

/// What both fault workloads share.
const FAULT: Description = Description {
    family: "memory",
    op: "",
    private: "worker i maps its own 4 MiB file w<i>/f",
    shared: Ok("one file shared/f; worker i maps its own 4 MiB of it at i * 4 MiB"),
    same: Ok(""),
};

/// The length of the shared file: a range per worker, or one for all.
pub(super) fn shared_len(share: Share, workers: usize) -> u64 {
    (MAPPED * if share == Share::Shared { workers } else { 1 }) as u64
}

/// `fault-shared` and `fault-private`.
pub(super) struct Fault {
    file: WorkerFile,
    offset: libc::off_t,
    flags: libc::c_int,
    base: *mut u8,
    next: usize,
}

impl Fault {
    pub(super) fn setup(env: &WorkerEnv<'_>, shared_mapping: bool) -> Result<Fault> {
        let file = WorkerFile::open(env, libc::O_RDWR, MAPPED as u64)?;
        let offset = if env.share == Share::Shared { (env.index * MAPPED) as libc::off_t } else { 0 };
        let flags = if shared_mapping { libc::MAP_SHARED } else { libc::MAP_PRIVATE };
        let mut fault = Fault { file, offset, flags, base: std::ptr::null_mut(), next: 0 };
        fault.map().map_err(|e| env.setup_error("mmap", &fault.file.name, e.errno))?;
        Ok(fault)
    }

    #[inline(always)]
    fn map(&mut self) -> Result<(), SysError> {
        // SAFETY: a fresh mapping of an open file, owned by this op until unmapped.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAPPED,
                libc::PROT_READ | libc::PROT_WRITE,
                self.flags,
                self.file.fd,
                self.offset,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(SysError { call: "mmap", errno: sys::last_errno(), arg: 0 });
        }
        self.base = base.cast();
        Ok(())
    }

    #[inline(always)]
    fn unmap(&mut self) -> Result<(), SysError> {
        // SAFETY: `base` is this op's own mapping of MAPPED bytes.
        SysError::status("munmap", unsafe { libc::munmap(self.base.cast(), MAPPED) })?;
        self.base = std::ptr::null_mut();
        Ok(())
    }
}

impl Op for Fault {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        if self.next == PAGES {
            self.next = 0;
            self.unmap()?;
            self.map()?;
        }
        // SAFETY: the page lies inside the mapping; the file is at least as long.
        unsafe { self.base.add(self.next * PAGE).write_volatile(1) };
        self.next += 1;
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

impl Drop for Fault {
    fn drop(&mut self) {
        if !self.base.is_null() {
            let _ = self.unmap();
        }
    }
}
