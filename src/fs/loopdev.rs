//! Loop devices attached through the image's open descriptor, never by path.
//!
//! `losetup IMAGE` opens the image by name: in a directory another user can
//! write, the name can be swapped for a symbolic link to any file between
//! creating the image and attaching it, and root then formats that file.
//! Attaching the descriptor fsscale created (`LOOP_CONFIGURE`, or
//! `LOOP_SET_FD` on kernels before 5.8) binds the device to that very inode,
//! which is then checked through `LOOP_GET_STATUS64`. The device is made
//! autoclear: once its last user (the mount) lets go, the kernel detaches
//! it, also after fsscale is killed.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{anyhow, bail, Result};

use crate::sys;

const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_SET_STATUS64: libc::c_ulong = 0x4C04;
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LOOP_MAJOR: u32 = 7;
const LO_NAME_SIZE: usize = 64;

/// The kernel's `struct loop_info64`.
#[repr(C)]
#[derive(Clone, Copy)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; LO_NAME_SIZE],
    lo_crypt_name: [u8; LO_NAME_SIZE],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// The kernel's `struct loop_config`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

impl LoopInfo64 {
    fn zeroed() -> LoopInfo64 {
        // SAFETY: a plain-data struct of integers and byte arrays; all zeroes is valid.
        unsafe { std::mem::zeroed() }
    }
}

/// A loop device bound to an image; the descriptor keeps it from being
/// cleared before the filesystem on it is mounted.
pub(super) struct LoopDevice {
    pub path: String,
    _device: File,
}

/// The (device, inode) of an open file, as the loop driver reports them.
pub(super) fn file_id(file: &File) -> Result<(u64, u64)> {
    let st = sys::fstat(file).map_err(|e| anyhow!("fstat of the image: {}", sys::errno_text(e)))?;
    Ok((st.st_dev, st.st_ino))
}

/// Binds a free loop device to `image` (open read-write) and proves it
/// serves that inode.
pub(super) fn attach(image: &File, image_path: &Path) -> Result<LoopDevice> {
    let control = open_rw(Path::new("/dev/loop-control"))?;
    let wanted = file_id(image)?;
    // Another process may take the free device between asking and binding: ask again.
    for _ in 0..64 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
        let number = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
        if number < 0 {
            bail!("no free loop device (/dev/loop-control: {})", sys::errno_text(sys::last_errno()));
        }
        let path = format!("/dev/loop{number}");
        let device = open_rw(Path::new(&path))?;
        check_is_loop(&device, &path)?;
        match configure(&device, image, image_path) {
            Ok(()) => {}
            Err(libc::EBUSY) => continue,
            Err(errno) => bail!("attaching {} to {path}: {}", image_path.display(), sys::errno_text(errno)),
        }
        let info = status(&device).map_err(|e| anyhow!("{path}: LOOP_GET_STATUS64: {}", sys::errno_text(e)))?;
        if (info.lo_device, info.lo_inode) != wanted {
            let _ = detach_fd(&device);
            bail!("{path} serves another file than the image fsscale created; refused");
        }
        return Ok(LoopDevice { path, _device: device });
    }
    bail!("every free loop device was taken by another process before fsscale could bind one; try again")
}

fn configure(device: &File, image: &File, image_path: &Path) -> Result<(), sys::Errno> {
    let mut info = LoopInfo64::zeroed();
    info.lo_flags = LO_FLAGS_AUTOCLEAR;
    // For people reading `losetup -l`; the kernel binds the descriptor, not this name.
    use std::os::unix::ffi::OsStrExt;
    let name = image_path.as_os_str().as_bytes();
    let n = name.len().min(LO_NAME_SIZE - 1);
    info.lo_file_name[..n].copy_from_slice(&name[..n]);
    let config = LoopConfig { fd: image.as_raw_fd() as u32, block_size: 0, info, reserved: [0; 8] };
    // SAFETY: the config outlives the call; the kernel only reads it.
    if unsafe { libc::ioctl(device.as_raw_fd(), LOOP_CONFIGURE as _, &config) } == 0 {
        return Ok(());
    }
    match sys::last_errno() {
        // Before Linux 5.8: bind, then set the flags.
        libc::EINVAL | libc::ENOTTY => {
            // SAFETY: LOOP_SET_FD takes the descriptor as its argument.
            if unsafe { libc::ioctl(device.as_raw_fd(), LOOP_SET_FD as _, image.as_raw_fd()) } != 0 {
                return Err(sys::last_errno());
            }
            // SAFETY: the info outlives the call; the kernel only reads it.
            if unsafe { libc::ioctl(device.as_raw_fd(), LOOP_SET_STATUS64 as _, &info) } != 0 {
                let errno = sys::last_errno();
                let _ = detach_fd(device);
                return Err(errno);
            }
            Ok(())
        }
        errno => Err(errno),
    }
}

fn status(device: &File) -> Result<LoopInfo64, sys::Errno> {
    let mut info = LoopInfo64::zeroed();
    // SAFETY: the kernel fills a struct of exactly this layout.
    if unsafe { libc::ioctl(device.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) } != 0 {
        return Err(sys::last_errno());
    }
    Ok(info)
}

fn detach_fd(device: &File) -> Result<(), sys::Errno> {
    // SAFETY: LOOP_CLR_FD takes no argument.
    if unsafe { libc::ioctl(device.as_raw_fd(), LOOP_CLR_FD as _, 0) } != 0 {
        return Err(sys::last_errno());
    }
    Ok(())
}

/// Detaches loop device `path` if it still serves the image `(device,
/// inode)`; `Ok(false)` when it serves something else or nothing.
pub(super) fn detach_if_serving(path: &str, image: (u64, u64)) -> Result<bool> {
    let device = open_rw(Path::new(path))?;
    check_is_loop(&device, path)?;
    match status(&device) {
        Ok(info) if (info.lo_device, info.lo_inode) == image => {}
        // ENXIO: nothing bound (autoclear already detached it).
        Ok(_) | Err(libc::ENXIO) => return Ok(false),
        Err(errno) => bail!("{path}: LOOP_GET_STATUS64: {}", sys::errno_text(errno)),
    }
    match detach_fd(&device) {
        Ok(()) | Err(libc::ENXIO) => Ok(true),
        Err(errno) => bail!("detaching {path}: {}", sys::errno_text(errno)),
    }
}

fn open_rw(path: &Path) -> Result<File> {
    let name = sys::cstring(path)?;
    let fd = sys::open(sys::CWD, &name, libc::O_RDWR | libc::O_CLOEXEC, 0)
        .map_err(|e| anyhow!("opening {}: {}", path.display(), sys::errno_text(e)))?;
    Ok(File::from(fd))
}

fn check_is_loop(device: &File, path: &str) -> Result<()> {
    let st = sys::fstat(device).map_err(|e| anyhow!("fstat of {path}: {}", sys::errno_text(e)))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFBLK || libc::major(st.st_rdev) != LOOP_MAJOR {
        bail!("{path} is not a loop device; refused");
    }
    Ok(())
}
