//! Page faults on a file mapping (will-it-scale's page_fault2/3):
//! `fault-shared` writes to a `MAP_SHARED` mapping (the page cache's pages
//! mapped and dirtied), `fault-private` to a `MAP_PRIVATE` one (a copy of
//! each page made). One op is the first write to one page of a fresh
//! mapping of `--map-size` bytes (128 MiB, as page_fault2/3 map, by
//! default); after every page of it, the mapping is unmapped and mapped
//! again (`munmap`, `mmap`: 2 calls per mapping's pages).
//!
//! Private: worker i's own file of that size. Shared: one file, worker i
//! mapping its own range of it. Same: every worker mapping the same range.
//! The size is the working set: one that fits in the CPU's caches (4 MiB)
//! faults 11–30% faster here than the peer's 128 MiB.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd};

use anyhow::Result;

use super::{Description, Op, Share, SysError, WorkerEnv, WorkerFile};
use crate::sys;

/// The page each op writes one byte of; `--map-size` is a multiple of it.
pub const PAGE: u64 = 4096;

/// `--map-size` unless given: will-it-scale's page_fault2/3 map 128 MiB.
pub const DEFAULT_MAP_BYTES: u64 = 128 << 20;

/// `mmap` and `munmap` per op: once per mapping's pages.
pub(super) fn renewals_per_op(map_bytes: u64) -> f64 {
    PAGE as f64 / map_bytes as f64
}

/// `fault-shared`.
pub(super) const FAULT_SHARED: Description = Description {
    op: "a write to one page of a MAP_SHARED mapping of a file: a page fault mapping its page-cache page; after every page of the --map-size mapping (128 MiB unless given, as page_fault2), munmap() and mmap() it again",
    same: Ok("every worker maps the same --map-size bytes of shared/f (the same pages)"),
    ..FAULT
};

/// `fault-private`.
pub(super) const FAULT_PRIVATE: Description = Description {
    op: "a write to one page of a MAP_PRIVATE mapping of a file: a page fault copying the page; after every page of the --map-size mapping (128 MiB unless given, as page_fault3), munmap() and mmap() it again",
    same: Ok("every worker maps the same --map-size bytes of shared/f (copies of the same pages)"),
    ..FAULT
};

/// What both fault workloads share.
const FAULT: Description = Description {
    family: "memory",
    op: "",
    private: "worker i maps its own file w<i>/f of --map-size bytes",
    shared: Ok("one file shared/f; worker i maps its own --map-size bytes of it, at i times that"),
    same: Ok(""),
};

/// The length of the shared file: a range per worker, or one for all.
pub(super) fn shared_len(share: Share, workers: usize, map_bytes: u64) -> u64 {
    map_bytes * if share == Share::Shared { workers as u64 } else { 1 }
}

/// `fault-shared` and `fault-private`.
pub(super) struct Fault<'a> {
    file: WorkerFile<'a>,
    offset: libc::off_t,
    flags: libc::c_int,
    base: *mut u8,
    /// Bytes mapped at once, and the pages in them.
    len: usize,
    pages: usize,
    next: usize,
}

impl<'a> Fault<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>, shared_mapping: bool) -> Result<Fault<'a>> {
        let map_bytes = env.options.map_bytes;
        let file = WorkerFile::open(env, libc::O_RDWR, map_bytes)?;
        let offset = if env.share == Share::Shared { (env.index as u64 * map_bytes) as libc::off_t } else { 0 };
        let flags = if shared_mapping { libc::MAP_SHARED } else { libc::MAP_PRIVATE };
        let (len, pages) = (map_bytes as usize, (map_bytes / PAGE) as usize);
        let mut fault = Fault { file, offset, flags, base: std::ptr::null_mut(), len, pages, next: 0 };
        fault.map().map_err(|e| env.setup_error("mmap", &fault.file.name, e.errno))?;
        Ok(fault)
    }

    #[inline(always)]
    fn map(&mut self) -> Result<(), SysError> {
        // SAFETY: a fresh mapping of an open file, owned by this op until unmapped.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                self.len,
                libc::PROT_READ | libc::PROT_WRITE,
                self.flags,
                self.file.as_fd().as_raw_fd(),
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
        // SAFETY: `base` is this op's own mapping of `len` bytes.
        SysError::status("munmap", unsafe { libc::munmap(self.base.cast(), self.len) })?;
        self.base = std::ptr::null_mut();
        Ok(())
    }
}

impl Op for Fault<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        if self.next == self.pages {
            self.next = 0;
            self.unmap()?;
            self.map()?;
        }
        // SAFETY: the page lies inside the mapping; the file is at least as long.
        unsafe { self.base.add(self.next * PAGE as usize).write_volatile(1) };
        self.next += 1;
        Ok(())
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.file.name
    }
}

impl Drop for Fault<'_> {
    fn drop(&mut self) {
        if !self.base.is_null() {
            let _ = self.unmap();
        }
    }
}
