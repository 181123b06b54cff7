//! The BPF map element commands fsscale makes itself (aya's maps cover the
//! rest): a worker's task storage made from user space, and read back in tests.

use crate::sys::Errno;

/// `BPF_MAP_UPDATE_ELEM`: sets `key` to `value` in the BPF map `map`
/// (sizes as the map was made with; the kernel checks them against it).
///
/// # Safety
/// `key` and `value` are at least the map's key and value sizes: the
/// kernel reads that many bytes from each.
pub(crate) unsafe fn bpf_map_update(map: std::os::fd::BorrowedFd, key: &[u8], value: &[u8]) -> Result<(), Errno> {
    const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
    bpf_map_elem(BPF_MAP_UPDATE_ELEM, map, key, value.as_ptr() as u64)
}

/// `BPF_MAP_LOOKUP_ELEM`: the value of `key` in the BPF map `map` into
/// `value`.
///
/// # Safety
/// `key` is at least the map's key size and `value` at least its value
/// size: the kernel reads and writes that many bytes.
#[cfg(test)]
pub(crate) unsafe fn bpf_map_lookup(map: std::os::fd::BorrowedFd, key: &[u8], value: &mut [u8]) -> Result<(), Errno> {
    const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
    bpf_map_elem(BPF_MAP_LOOKUP_ELEM, map, key, value.as_mut_ptr() as u64)
}

fn bpf_map_elem(command: libc::c_long, map: std::os::fd::BorrowedFd, key: &[u8], value: u64) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    /// The `bpf_attr` of the map element commands (`linux/bpf.h`).
    #[repr(C, align(8))]
    struct ElemAttr {
        map_fd: u32,
        key: u64,
        value: u64,
        flags: u64,
    }
    let attr = ElemAttr { map_fd: map.as_raw_fd() as u32, key: key.as_ptr() as u64, value, flags: 0 };
    // SAFETY: the attribute points at `key` and at the caller's value
    // buffer, both borrowed for the call and at least the map's sizes (the
    // callers' contract).
    let ret =
        unsafe { libc::syscall(libc::SYS_bpf, command, &attr as *const ElemAttr, std::mem::size_of::<ElemAttr>()) };
    crate::sys::status(ret as libc::c_int)
}
