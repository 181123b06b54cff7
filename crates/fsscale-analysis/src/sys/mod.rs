//! Thin, allocation-free wrappers around the system calls fsscale measures
//! and the few it needs to manage workers.
//!
//! Every wrapper returns the raw errno on failure so that a hot loop can
//! propagate it as a `Copy` value; turning it into text happens once, off the
//! hot path, in [`errno_text`].

mod files;
mod mounts;
mod process;
pub mod quota;
pub mod topology;
pub use files::{
    available_memory, check_own_file, check_private_dir, ensure_private_dir, fd_path, freeze_and_thaw, meminfo_value,
    open_dir_input, open_input, others_can_replace_in, read_input, total_memory, total_swap,
};
pub use mounts::{find_mount, mounts, parse_mountinfo, Mount};
pub use process::*;
pub(crate) use quota::cgroup_cpu_limit;

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};

/// An errno value as returned by a failed system call.
pub type Errno = i32;

/// What [`fstatat`] and [`fstat`] fill: the platform's `struct stat`.
pub type Stat = rustix::fs::Stat;

/// The current directory, as the directory of the `*at` calls.
pub const CWD: BorrowedFd<'static> = rustix::fs::CWD;

/// Not an errno the kernel returns: what fsscale opened to read or lock is
/// not a regular file (a FIFO or device planted at the name), so it was
/// refused rather than waited on. [`errno_text`] says so.
pub(crate) const NOT_REGULAR: Errno = -4097;

#[inline(always)]
pub fn last_errno() -> Errno {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// A raw call's status (0, or -1 with errno) as a result.
#[inline(always)]
pub fn status(ret: libc::c_int) -> Result<(), Errno> {
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

/// rustix's error as the raw errno the hot loops carry.
#[inline(always)]
fn raw<T>(result: rustix::io::Result<T>) -> Result<T, Errno> {
    result.map_err(|e| e.raw_os_error())
}

/// `open(2)` flags as libc spells them (the kernel's values), always close-on-exec.
#[inline(always)]
fn oflags(flags: libc::c_int) -> OFlags {
    OFlags::from_bits_retain(flags as _) | OFlags::CLOEXEC
}

#[inline(always)]
fn at_flags(flags: libc::c_int) -> AtFlags {
    AtFlags::from_bits_retain(flags as _)
}

#[inline(always)]
fn mode(mode: libc::mode_t) -> Mode {
    Mode::from_bits_retain(mode as _)
}

/// `openat`, close-on-exec; the descriptor is the caller's to keep (closed
/// by libc when dropped: off the hot path, where [`open_bare`] is).
#[inline(always)]
pub fn open(dir: impl AsFd, name: &CStr, flags: libc::c_int, perm: libc::mode_t) -> Result<OwnedFd, Errno> {
    raw(rustix::fs::openat(dir, name, oflags(flags), mode(perm)))
}

/// `openat` by the bare system call, owned (see [`BareFd`]).
#[inline(always)]
pub fn open_bare(dir: impl AsFd, name: &CStr, flags: libc::c_int, perm: libc::mode_t) -> Result<BareFd, Errno> {
    open(dir, name, flags, perm).map(BareFd::from)
}

/// [`open_bare`] for a relative path of any length: past `PATH_MAX` (a
/// tree deeper than 4 KiB of names) it walks there piece by piece, each
/// piece a whole number of components shorter than the limit. A walk's hot path.
pub fn open_long(dir: impl AsFd, path: &CStr, flags: libc::c_int) -> Result<BareFd, Errno> {
    const PIECE: usize = 3072;
    let bytes = path.to_bytes();
    if bytes.len() < PIECE {
        return open_bare(dir, path, flags, 0);
    }
    let mut at: Option<BareFd> = None;
    let mut rest = bytes;
    loop {
        let (piece, next) = if rest.len() < PIECE {
            (rest, &rest[rest.len()..])
        } else {
            let cut = rest[..PIECE].iter().rposition(|&b| b == b'/').filter(|&c| c > 0).ok_or(libc::ENAMETOOLONG)?;
            (&rest[..cut], &rest[cut + 1..])
        };
        let last = next.is_empty();
        let piece = CString::new(piece).map_err(|_| libc::EINVAL)?;
        let flags = if last { flags } else { libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW };
        let opened = match &at {
            Some(fd) => open_bare(fd, &piece, flags, 0)?,
            None => open_bare(dir.as_fd(), &piece, flags, 0)?,
        };
        if last {
            return Ok(opened);
        }
        at = Some(opened);
        rest = next;
    }
}

/// A descriptor closed by the bare system call. libc's `close`, like its
/// `openat` and `write`, is a cancellation point, which costs every call two
/// more calls around it: 1.5% of a warm walk's time, and as much of an
/// extraction's, where the kernel's work is what is measured. fsscale
/// cancels no thread, and rustix makes every other call bare.
pub struct BareFd(RawFd);

impl From<OwnedFd> for BareFd {
    fn from(fd: OwnedFd) -> BareFd {
        BareFd(fd.into_raw_fd())
    }
}

impl AsFd for BareFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor is open while this value lives, which the borrow cannot outlive.
        unsafe { BorrowedFd::borrow_raw(self.0) }
    }
}

impl AsRawFd for BareFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl BareFd {
    /// Closes it, with the kernel's answer (a workload counts the close).
    #[inline(always)]
    pub fn close(self) -> Result<(), Errno> {
        let fd = std::mem::ManuallyDrop::new(self).0;
        // SAFETY: the descriptor this value owned, closed once: Drop will not run.
        raw(unsafe { rustix::io::try_close(fd) })
    }
}

impl Drop for BareFd {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once.
        unsafe { rustix::io::close(self.0) };
    }
}

/// A pipe, close-on-exec: (read end, write end).
pub fn pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
    raw(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC))
}

#[inline(always)]
pub fn fstatat(dir: impl AsFd, name: &CStr, flags: libc::c_int) -> Result<Stat, Errno> {
    raw(rustix::fs::statat(dir, name, at_flags(flags)))
}

/// The target of the symbolic link `name` in `dir`.
pub fn readlinkat(dir: impl AsFd, name: &CStr) -> Result<Vec<u8>, Errno> {
    raw(rustix::fs::readlinkat(dir, name, Vec::new())).map(CString::into_bytes)
}

#[inline(always)]
pub fn fstat(fd: impl AsFd) -> Result<Stat, Errno> {
    raw(rustix::fs::fstat(fd))
}

#[inline(always)]
pub fn unlinkat(dir: impl AsFd, name: &CStr, flags: libc::c_int) -> Result<(), Errno> {
    raw(rustix::fs::unlinkat(dir, name, at_flags(flags)))
}

#[inline(always)]
pub fn mkdirat(dir: impl AsFd, name: &CStr, perm: libc::mode_t) -> Result<(), Errno> {
    raw(rustix::fs::mkdirat(dir, name, mode(perm)))
}

/// `renameat` within one directory.
#[inline(always)]
pub fn renameat(dir: impl AsFd, from: &CStr, to: &CStr) -> Result<(), Errno> {
    let dir = dir.as_fd();
    raw(rustix::fs::renameat(dir, from, dir, to))
}

/// `linkat` within one directory.
#[inline(always)]
pub fn linkat(dir: impl AsFd, from: &CStr, to: &CStr) -> Result<(), Errno> {
    let dir = dir.as_fd();
    link_across(dir, from, dir, to)
}

/// `symlinkat`: a link in `dir` named `name` to `target`.
#[inline(always)]
pub fn symlinkat(target: &CStr, dir: impl AsFd, name: &CStr) -> Result<(), Errno> {
    raw(rustix::fs::symlinkat(target, dir, name))
}

#[inline(always)]
pub fn pread(fd: impl AsFd, buf: &mut [u8], offset: u64) -> Result<usize, Errno> {
    raw(rustix::io::pread(fd, buf, offset))
}

#[inline(always)]
pub fn pwrite(fd: impl AsFd, buf: &[u8], offset: u64) -> Result<usize, Errno> {
    raw(rustix::io::pwrite(fd, buf, offset))
}

#[inline(always)]
pub fn read(fd: impl AsFd, buf: &mut [u8]) -> Result<usize, Errno> {
    raw(rustix::io::read(fd, buf))
}

#[inline(always)]
pub fn write(fd: impl AsFd, buf: &[u8]) -> Result<usize, Errno> {
    raw(rustix::io::write(fd, buf))
}

/// `lseek(fd, 0, SEEK_SET)`: back to the start of the file.
#[inline(always)]
pub fn rewind(fd: impl AsFd) -> Result<(), Errno> {
    raw(rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0))).map(drop)
}

#[inline(always)]
pub fn ftruncate(fd: impl AsFd, len: u64) -> Result<(), Errno> {
    raw(rustix::fs::ftruncate(fd, len))
}

#[inline(always)]
pub fn fsync(fd: impl AsFd) -> Result<(), Errno> {
    raw(rustix::fs::fsync(fd))
}

/// `futimens(fd, NULL)`: both times to now.
#[inline(always)]
pub fn touch(fd: impl AsFd) -> Result<(), Errno> {
    let now = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
        last_modification: rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
    };
    raw(rustix::fs::futimens(fd, &now))
}

#[cfg(target_os = "linux")]
/// `syncfs`: everything of the filesystem holding `fd` written home.
pub fn syncfs(fd: impl AsFd) {
    let _ = rustix::fs::syncfs(fd);
}

/// `fchmod`.
#[inline(always)]
pub fn fchmod(fd: impl AsFd, perm: libc::mode_t) -> Result<(), Errno> {
    raw(rustix::fs::fchmod(fd, mode(perm)))
}

/// `fchmodat(dir, name, mode, 0)`.
#[inline(always)]
pub fn chmodat(dir: impl AsFd, name: &CStr, perm: libc::mode_t) -> Result<(), Errno> {
    raw(rustix::fs::chmodat(dir, name, mode(perm), AtFlags::empty()))
}

/// Modification time `mtime` (seconds), access time left as it is.
fn mtime_only(mtime: i64) -> rustix::fs::Timestamps {
    rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_OMIT },
        last_modification: rustix::fs::Timespec { tv_sec: mtime as _, tv_nsec: 0 },
    }
}

/// Sets an open file's modification time (`futimens`), leaving its access time.
#[inline(always)]
pub fn set_mtime(fd: impl AsFd, mtime: i64) -> Result<(), Errno> {
    raw(rustix::fs::futimens(fd, &mtime_only(mtime)))
}

/// Sets `name`'s modification time in `dir` (`utimensat`, never following a link).
#[inline(always)]
pub fn set_mtime_at(dir: impl AsFd, name: &CStr, mtime: i64) -> Result<(), Errno> {
    raw(rustix::fs::utimensat(dir, name, &mtime_only(mtime), AtFlags::SYMLINK_NOFOLLOW))
}

/// `linkat(from_dir, from, to_dir, to, 0)`: never following a link.
#[inline(always)]
pub fn link_across(from_dir: impl AsFd, from: &CStr, to_dir: impl AsFd, to: &CStr) -> Result<(), Errno> {
    raw(rustix::fs::linkat(from_dir, from, to_dir, to, AtFlags::empty()))
}

/// `fstatfs`, for its cost: what it says is not read.
#[inline(always)]
pub fn statfs_of(fd: impl AsFd) -> Result<(), Errno> {
    raw(rustix::fs::fstatfs(fd)).map(drop)
}

/// `flock(fd, operation)`, the operation as libc spells it (`LOCK_EX`,
/// `LOCK_SH`, `LOCK_UN`, each with `LOCK_NB` or not).
#[inline(always)]
pub fn flock(fd: impl AsFd, operation: libc::c_int) -> Result<(), Errno> {
    use rustix::fs::FlockOperation as Op;
    let blocking = operation & libc::LOCK_NB == 0;
    let op = match (operation & !libc::LOCK_NB, blocking) {
        (libc::LOCK_EX, true) => Op::LockExclusive,
        (libc::LOCK_EX, false) => Op::NonBlockingLockExclusive,
        (libc::LOCK_SH, true) => Op::LockShared,
        (libc::LOCK_SH, false) => Op::NonBlockingLockShared,
        (libc::LOCK_UN, true) => Op::Unlock,
        (libc::LOCK_UN, false) => Op::NonBlockingUnlock,
        _ => return Err(libc::EINVAL),
    };
    raw(rustix::fs::flock(fd, op))
}

#[cfg(target_os = "linux")]
/// `fcntl(fd, command, lock)` for a byte-range lock (`F_SETLK`,
/// `F_OFD_SETLKW`, ...): rustix locks whole files only.
#[inline(always)]
pub fn set_lock(fd: impl AsFd, command: libc::c_int, lock: &libc::flock) -> Result<(), Errno> {
    // SAFETY: a lock command with a valid, initialised flock struct the kernel only reads.
    status(unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), command, lock) })
}

#[cfg(target_os = "linux")]
/// `fallocate(fd, mode, offset, len)`, the mode as libc spells it.
#[inline(always)]
pub fn fallocate(fd: impl AsFd, mode: libc::c_int, offset: u64, len: u64) -> Result<(), Errno> {
    raw(rustix::fs::fallocate(fd, rustix::fs::FallocateFlags::from_bits_retain(mode as _), offset, len))
}

/// `flock(LOCK_EX | LOCK_NB)`: `EWOULDBLOCK` when another holds it.
pub fn lock_exclusive_now(fd: impl AsFd) -> Result<(), Errno> {
    flock(fd, libc::LOCK_EX | libc::LOCK_NB)
}

/// `dup(2)` itself (what `dup-close` measures: not close-on-exec, closed at
/// once), bare-closed (see [`BareFd`]).
#[inline(always)]
pub fn dup(fd: impl AsFd) -> Result<BareFd, Errno> {
    raw(rustix::io::dup(fd)).map(BareFd::from)
}

#[cfg(target_os = "linux")]
/// One `getdents64` call into `buf`; returns the number of bytes filled (0
/// at the end). rustix offers the call only behind its own iterator
/// (`RawDir`); the walks read the records in place with [`dirents`].
#[inline(always)]
pub fn getdents64(fd: impl AsFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `buf.len()` bytes; the kernel writes at most that.
    let ret = unsafe { libc::syscall(libc::SYS_getdents64, fd.as_fd().as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(ret as usize)
    }
}

/// One record of a `getdents64` buffer, read in place: nothing is copied
/// or allocated, and the name is measured only when asked for.
#[derive(Clone, Copy)]
pub struct Dirent<'a> {
    /// The record's name field: the name, its NUL, then padding.
    field: &'a [u8],
    pub d_type: u8,
}

impl<'a> Dirent<'a> {
    /// The name, as the kernel wrote it (NUL-terminated in its record).
    pub fn name(&self) -> &'a CStr {
        // A record without its NUL would be a kernel bug: read as an empty name.
        CStr::from_bytes_until_nul(self.field).unwrap_or(c"")
    }

    /// `.` or `..`, told from the first bytes alone.
    pub fn is_dot(&self) -> bool {
        matches!(self.field, [b'.', 0, ..] | [b'.', b'.', 0, ..])
    }
}

/// The records a `getdents64` call put in `buf[..filled]`, `.` and `..`
/// included. linux_dirent64 is d_ino u64, d_off i64, d_reclen u16, d_type
/// u8, then the NUL-terminated name.
pub fn dirents(buf: &[u8], filled: usize) -> impl Iterator<Item = Dirent<'_>> {
    let mut offset = 0;
    std::iter::from_fn(move || {
        if offset >= filled {
            return None;
        }
        let reclen = u16::from_ne_bytes([buf[offset + 16], buf[offset + 17]]) as usize;
        let entry = Dirent { d_type: buf[offset + 18], field: &buf[offset + 19..offset + reclen] };
        offset += reclen.max(1);
        Some(entry)
    })
}

#[cfg(target_os = "linux")]
/// The mount an open file is on (`statx` `STATX_MNT_ID`): unlike the
/// device number, it tells a bind mount of the same filesystem apart.
pub fn mount_id(fd: impl AsFd) -> Result<u64, Errno> {
    use rustix::fs::StatxFlags;
    let stx = raw(rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID))?;
    if stx.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return Err(libc::ENOSYS);
    }
    Ok(stx.stx_mnt_id)
}

/// Bytes free for unprivileged writers on the filesystem holding `path` (`statvfs`).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(path).ok()?;
    Some(st.f_bavail * st.f_frsize)
}

/// `text` at most `max` bytes long, shortened in the middle (`head…tail`),
/// so a long path in a message never pushes out what follows it.
pub fn shorten_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(3) / 2;
    let mut head = keep;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - keep;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}...{}", &text[..head], &text[tail..])
}

/// The effective user id.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The effective user's home directory from the password database.
pub fn home_from_passwd() -> Option<std::path::PathBuf> {
    // SAFETY: passwd is plain data; getpwuid_r writes into our buffer only.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid pointers and the buffer's real length.
    let ret = unsafe { libc::getpwuid_r(euid(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if ret != 0 || result.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into `buf`, NUL-terminated by getpwuid_r.
    let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
    use std::os::unix::ffi::OsStrExt;
    Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()))).filter(|d| d.is_absolute())
}

/// `bytes` random bytes as lowercase hex, for names nobody can predict.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    #[cfg(target_os = "linux")]
    let got = rustix::rand::getrandom(&mut buf[..], rustix::rand::GetRandomFlags::empty()).ok() == Some(bytes);
    #[cfg(not(target_os = "linux"))]
    let got = std::fs::File::open("/dev/urandom").and_then(|mut f| io::Read::read_exact(&mut f, &mut buf)).is_ok();
    if !got {
        // getrandom cannot fail for small sizes after boot; the clock and pid are a fallback.
        let seed = monotonic_ns() ^ ((std::process::id() as u64) << 32);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed.rotate_left(8 * (i as u32 % 8)) >> 3) as u8;
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn cstring(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("path {:?} contains a NUL byte", path)))
}

/// A C string built from a name known to hold no NUL byte (names fsscale makes itself).
pub fn cname(name: &str) -> CString {
    CString::new(name).expect("fsscale-made names never contain NUL")
}

/// "No space left on device (ENOSPC)": the message plus the symbolic name kernel people grep for.
pub fn errno_text(errno: Errno) -> String {
    if errno == NOT_REGULAR {
        return "not a regular file or a directory (a FIFO or device was put there)".to_string();
    }
    let message = errno_text_plain(&io::Error::from_raw_os_error(errno));
    match errno_name(errno) {
        Some(name) => format!("{message} ({name})"),
        None => format!("{message} (errno {errno})"),
    }
}

/// [`errno_text`] as an error, for `map_err(sys::errno_error)?`.
pub fn errno_error(errno: Errno) -> anyhow::Error {
    anyhow::anyhow!(errno_text(errno))
}

/// `strerror`'s text of an I/O error, without Rust's " (os error N)".
pub(crate) fn errno_text_plain(error: &io::Error) -> String {
    let message = error.to_string();
    match message.find(" (os error") {
        Some(cut) => message[..cut].to_string(),
        None => message,
    }
}

fn errno_name(errno: Errno) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EDQUOT => "EDQUOT",
        libc::ESTALE => "ESTALE",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => return None,
    })
}

#[cfg(target_os = "linux")]
/// An anonymous `MAP_SHARED` mapping of `len` bytes, zero-filled by the
/// kernel and page-aligned; shared by forked processes and threads alike.
/// `sparse`: reserve no swap, so pages cost memory only once touched (a
/// large arena mostly unused).
pub fn map_shared(len: usize, sparse: bool) -> std::io::Result<*mut u8> {
    let flags = libc::MAP_SHARED | libc::MAP_ANONYMOUS | if sparse { libc::MAP_NORESERVE } else { 0 };
    // SAFETY: anonymous mapping, no file; the caller owns it and unmaps it.
    let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(base.cast())
}

#[cfg(target_os = "linux")]
/// Sleeps while `word` holds `expected`, at most `timeout`. A shared (not
/// private) futex: processes wait on it through a `MAP_SHARED` mapping.
/// Spurious returns happen; callers re-check the word.
pub fn futex_wait(word: &std::sync::atomic::AtomicU32, expected: u32, timeout: Option<std::time::Duration>) {
    let ts = timeout.map(|t| rustix::time::Timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as _,
        tv_nsec: t.subsec_nanos() as _,
    });
    let _ = rustix::thread::futex::wait(word, rustix::thread::futex::Flags::empty(), expected, ts.as_ref());
}

#[cfg(target_os = "linux")]
/// Wakes every waiter on `word`.
pub fn futex_wake_all(word: &std::sync::atomic::AtomicU32) {
    let _ = rustix::thread::futex::wake(word, rustix::thread::futex::Flags::empty(), i32::MAX as u32);
}

#[cfg(target_os = "linux")]
/// The calling thread's kernel task id.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// The page size.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Clock ticks a second (`_SC_CLK_TCK`), the unit of /proc's CPU times.
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}

/// Monotonic clock in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {

    #[cfg(target_os = "linux")]
    #[test]
    fn dirents_are_read_in_place_and_dots_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        for name in [".x", "..y", "...", "a", &"n".repeat(255)] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let fd = std::fs::File::open(dir.path()).unwrap();
        let mut buf = vec![0u8; 4096];
        let (mut names, mut dots) = (Vec::new(), 0);
        loop {
            let filled = getdents64(&fd, &mut buf).unwrap();
            if filled == 0 {
                break;
            }
            for e in dirents(&buf, filled) {
                if e.is_dot() {
                    dots += 1;
                } else {
                    names.push((e.name().to_str().unwrap().to_string(), e.d_type == libc::DT_DIR));
                }
            }
        }
        names.sort();
        let mut want: Vec<(String, bool)> =
            [".x", "..y", "...", "a", "d"].iter().map(|n| (n.to_string(), *n == "d")).collect();
        want.push(("n".repeat(255), false));
        want.sort();
        assert_eq!((names, dots), (want, 2));
    }

    #[test]
    fn online_cpu_ids_match_the_online_count() {
        let ids = online_cpu_ids();
        assert_eq!(ids.len(), online_cpus());
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    use super::*;

    #[test]
    fn reads_schedstat_and_this_threads_counters() {
        assert_eq!(ThreadSched::parse_schedstat("8713512 2075 13\n"), Some((8713512, 2075)));
        assert_eq!(ThreadSched::parse_schedstat("8713512\n"), None);
        assert_eq!(ThreadSched::parse_schedstat("x 1 2"), None);
        // Faults are this thread's own: touching fresh memory faults. 40 MiB
        // is past malloc's largest mmap threshold (32 MiB), so it is a fresh
        // mapping, never reused heap; transparent huge pages fault per 2 MiB.
        let faults_before = thread_sched()[ThreadSched::MINOR_FAULTS];
        let mut memory = vec![0u8; 40 << 20];
        for page in memory.chunks_mut(page_size()) {
            page[0] = 1;
        }
        std::hint::black_box(&memory);
        let faulted = thread_sched()[ThreadSched::MINOR_FAULTS] - faults_before;
        assert!(faulted >= 20, "{faulted} minor faults for 40 MiB of fresh memory");
        let before = thread_sched();
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(20) {}
        let after = thread_sched();
        let delta = |k: usize| after[k] - before[k];
        // On a CPU and waiting for one are both up to date when the thread
        // reads them itself: between them never more than its wall time.
        // (How much of it a spinning thread spends blocked, on a page fault
        // where memory is short, is the machine's.) A millisecond's spin
        // shows on the CPU clock.
        let (on_cpu, waiting, wall) =
            (delta(ThreadSched::ON_CPU_NS), delta(ThreadSched::RUNQUEUE_NS), delta(ThreadSched::WALL_NS));
        assert!(on_cpu > 0 && on_cpu + waiting <= wall + wall / 100, "{on_cpu} + {waiting} ns of {wall}");
        assert!(after.iter().zip(before).all(|(a, b)| *a >= b));
        let before = thread_sched();
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(1) {}
        assert!(thread_sched()[ThreadSched::ON_CPU_NS] > before[ThreadSched::ON_CPU_NS]);
    }
}
