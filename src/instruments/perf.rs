//! `perf_event_open` events: counters and sampling ring buffers. The
//! bindings (the attribute struct, constants, ioctls) come from
//! `perf-event-open-sys`; the ring buffer is read here.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use anyhow::{anyhow, Result};
use perf_event_open_sys as sys;

pub use sys::bindings::perf_event_attr as Attr;

/// A fresh attribute block of the kernel's size, disabled until enabled.
pub(crate) fn attr(kind: u32, config: u64) -> Attr {
    let mut attr = Attr { type_: kind, config, size: std::mem::size_of::<Attr>() as u32, ..Attr::default() };
    attr.set_disabled(1);
    attr.set_exclude_hv(1);
    attr
}

/// One open event.
pub(crate) struct PerfEvent {
    fd: OwnedFd,
    ring: Option<Ring>,
}

impl PerfEvent {
    /// Opens `attr` for task `pid` (-1: all) on `cpu` (-1: any).
    pub fn open(attr: &mut Attr, pid: i32, cpu: i32, what: &str) -> Result<PerfEvent> {
        Self::open_in_group(attr, pid, cpu, None, what)
    }

    /// [`PerfEvent::open`] as a member of `leader`'s group: it counts exactly
    /// while the leader does (open it enabled; the leader turns it on and off).
    pub(crate) fn open_in_group(
        attr: &mut Attr,
        pid: i32,
        cpu: i32,
        leader: Option<&PerfEvent>,
        what: &str,
    ) -> Result<PerfEvent> {
        let group = leader.map_or(-1, |l| l.fd.as_raw_fd());
        let flags = sys::bindings::PERF_FLAG_FD_CLOEXEC as _;
        // SAFETY: attr is a valid, sized attribute block; group is -1 or an
        // open perf descriptor; a descriptor returned is new, and ours alone.
        let fd = unsafe {
            let fd = sys::perf_event_open(attr, pid, cpu, group, flags);
            (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
        };
        let Some(fd) = fd else {
            let e = std::io::Error::last_os_error();
            let hint = match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    " (needs root, or kernel.perf_event_paranoid at most 1 for tasks and 0 for CPUs)"
                }
                Some(libc::EMFILE) => " (too many open files: fewer workers, or a higher ulimit -n)",
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => " (this kernel or machine does not have the event)",
                _ => "",
            };
            return Err(anyhow!("perf_event_open of {what} failed: {e}{hint}"));
        };
        Ok(PerfEvent { fd, ring: None })
    }

    pub fn enable(&self) -> Result<()> {
        self.switch(true, 0)
    }

    pub fn disable(&self) -> Result<()> {
        self.switch(false, 0)
    }

    /// Turns the group this event leads on (all its members with it).
    pub(crate) fn enable_group(&self) -> Result<()> {
        self.switch(true, sys::bindings::PERF_IOC_FLAG_GROUP)
    }

    pub(crate) fn disable_group(&self) -> Result<()> {
        self.switch(false, sys::bindings::PERF_IOC_FLAG_GROUP)
    }

    /// `PERF_EVENT_IOC_ENABLE` or `_DISABLE` with `flag`.
    fn switch(&self, on: bool, flag: u32) -> Result<()> {
        let fd = self.fd.as_raw_fd();
        // SAFETY: an enable or disable ioctl, with an integer flag, on our own perf descriptor.
        let ret = unsafe {
            match on {
                true => sys::ioctls::ENABLE(fd, flag),
                false => sys::ioctls::DISABLE(fd, flag),
            }
        };
        if ret < 0 {
            let what = if on { "enable" } else { "disable" };
            return Err(anyhow!("cannot {what} a perf event: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// A counting event's value.
    pub fn count(&self) -> Result<u64> {
        let mut value = [0u8; 8];
        match crate::sys::read(&self.fd, &mut value) {
            Ok(8) => Ok(u64::from_ne_bytes(value)),
            Ok(n) => Err(anyhow!("reading a perf counter: {n} bytes of 8")),
            Err(e) => Err(anyhow!("reading a perf counter: {}", crate::sys::errno_text(e))),
        }
    }

    /// Maps a ring buffer of `pages` data pages (a power of two) for samples.
    pub(crate) fn map_ring(&mut self, pages: usize) -> Result<()> {
        self.ring = Some(Ring::map(self.fd.as_raw_fd(), pages)?);
        Ok(())
    }

    /// Hands every record in the ring to `each(type, body)` and frees its room.
    pub(crate) fn drain(&mut self, each: impl FnMut(u32, &[u8])) {
        if let Some(ring) = &mut self.ring {
            ring.drain(each);
        }
    }
}

/// The mmap'd metadata page and data pages of a sampling event.
struct Ring {
    base: *mut u8,
    len: usize,
    /// The page size the ring was mapped with (its metadata page's length).
    page: usize,
    data_size: usize,
}

impl Ring {
    fn map(fd: i32, pages: usize) -> Result<Ring> {
        let page = crate::sys::page_size();
        let len = page * (1 + pages);
        // SAFETY: maps the event's buffer as the kernel expects: 1 + 2^n pages, shared.
        let base = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if base == libc::MAP_FAILED {
            return Err(anyhow!("mapping a perf ring buffer of {len} bytes: {}", std::io::Error::last_os_error()));
        }
        Ok(Ring { base: base.cast(), len, page, data_size: page * pages })
    }

    fn meta(&self) -> *mut sys::bindings::perf_event_mmap_page {
        self.base.cast()
    }

    fn drain(&mut self, mut each: impl FnMut(u32, &[u8])) {
        let meta = self.meta();
        // SAFETY: the metadata page is mapped for the ring's life; the kernel
        // writes data_head, we write data_tail (the documented protocol).
        let (head, mut tail, offset) = unsafe {
            let head = std::ptr::read_volatile(&(*meta).data_head);
            fence(Ordering::Acquire);
            (head, std::ptr::read_volatile(&(*meta).data_tail), (*meta).data_offset as usize)
        };
        // Kernels before 4.1 leave data_offset 0: the data follows the metadata page.
        let offset = if offset == 0 { self.page } else { offset };
        // The data area is only ever read through copies of the published
        // records (tail..head): the kernel writes the rest as we read, so no
        // slice may cover it.
        // SAFETY: the data area starts at data_offset inside the mapping and is data_size long.
        let data = Published { start: unsafe { self.base.add(offset) }, len: self.data_size };
        while tail + 8 <= head {
            let at = (tail as usize) % self.data_size;
            let header = data.copy(at, 8);
            let kind = u32::from_ne_bytes(header[0..4].try_into().unwrap());
            let size = u16::from_ne_bytes(header[6..8].try_into().unwrap()) as usize;
            if size < 8 || tail + size as u64 > head {
                break;
            }
            let record = data.copy(at, size);
            each(kind, &record[8..]);
            tail += size as u64;
        }
        fence(Ordering::Release);
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(&mut (*meta).data_tail, tail) };
    }
}

/// A ring's data area, which the kernel keeps writing beyond the published records.
struct Published {
    start: *const u8,
    len: usize,
}

impl Published {
    /// A copy of `len` published bytes from `at`, wrapping around the end of the data area.
    fn copy(&self, at: usize, len: usize) -> Vec<u8> {
        assert!(at < self.len && len <= self.len, "a record inside the ring");
        let first = len.min(self.len - at);
        let mut bytes = vec![0u8; len];
        // SAFETY: both ranges lie inside the mapped data area (checked above)
        // and hold records the kernel published before data_head, which it
        // does not write again until data_tail passes them.
        unsafe {
            std::ptr::copy_nonoverlapping(self.start.add(at), bytes.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(self.start, bytes.as_mut_ptr().add(first), len - first);
        }
        bytes
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map` mapped.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

// SAFETY: the mapping is owned by the ring and used from one thread at a time.
unsafe impl Send for Ring {}
