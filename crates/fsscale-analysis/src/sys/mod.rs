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
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// An errno value as returned by a failed system call.
pub type Errno = i32;

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
    check(ret).map(drop)
}

#[inline(always)]
fn check(ret: libc::c_int) -> Result<libc::c_int, Errno> {
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(ret)
    }
}

#[inline(always)]
fn check_size(ret: libc::ssize_t) -> Result<usize, Errno> {
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(ret as usize)
    }
}

#[inline(always)]
pub fn openat(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> Result<RawFd, Errno> {
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
    check(unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) })
}

/// `openat` for a relative path of any length: past `PATH_MAX` (a tree
/// deeper than 4 KiB of names) it walks there piece by piece, each piece a
/// whole number of components shorter than the limit. Bare system calls
/// (see [`BareFd`]): this is a walk's hot path.
fn openat_long(dir: RawFd, path: &CStr, flags: libc::c_int) -> Result<RawFd, Errno> {
    const PIECE: usize = 3072;
    let bytes = path.to_bytes();
    if bytes.len() < PIECE {
        return openat_bare(dir, path, flags);
    }
    let mut at = dir;
    let mut rest = bytes;
    let close_at = |fd: RawFd| {
        if fd != dir {
            drop(BareFd(fd));
        }
    };
    loop {
        let (piece, next) = if rest.len() < PIECE {
            (rest, &rest[rest.len()..])
        } else {
            let cut = rest[..PIECE].iter().rposition(|&b| b == b'/').filter(|&c| c > 0).ok_or(libc::ENAMETOOLONG)?;
            (&rest[..cut], &rest[cut + 1..])
        };
        let last = next.is_empty();
        let piece = CString::new(piece).map_err(|_| libc::EINVAL)?;
        let opened =
            openat_bare(at, &piece, if last { flags } else { libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW });
        close_at(at);
        at = opened?;
        if last {
            return Ok(at);
        }
        rest = next;
    }
}

/// [`openat`] off the hot path: the new descriptor owned by the value
/// returned, so no caller converts a raw one.
pub fn open_owned(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> Result<OwnedFd, Errno> {
    // SAFETY: a descriptor openat just returned, owned by nobody else.
    openat(dir, name, flags, mode).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`openat_long`], owned.
pub fn open_long_owned(dir: RawFd, path: &CStr, flags: libc::c_int) -> Result<BareFd, Errno> {
    openat_long(dir, path, flags).map(BareFd)
}

/// A descriptor opened and closed by bare system calls. libc's `openat`,
/// `write` and `close` are cancellation points, which cost every call two
/// more calls around it: 1.5% of a warm walk's time, and as much of an
/// extraction's, where the kernel's work is what is measured. fsscale
/// cancels no thread.
pub struct BareFd(RawFd);

impl BareFd {
    pub fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Drop for BareFd {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::syscall(libc::SYS_close, self.0)
        };
        // Elsewhere (the analysis half's builds) libc's own.
        #[cfg(not(target_os = "linux"))]
        let _ = close(self.0);
    }
}

/// `openat` by the bare system call, owned (see [`BareFd`]).
pub fn open_bare(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> Result<BareFd, Errno> {
    openat_bare_mode(dir, name, flags, mode).map(BareFd)
}

/// `write` by the bare system call (see [`BareFd`]).
pub fn write_bare(fd: RawFd, buf: &[u8]) -> Result<usize, Errno> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the buffer is valid for `buf.len()` bytes.
        let ret = unsafe { libc::syscall(libc::SYS_write, fd, buf.as_ptr(), buf.len()) };
        if ret < 0 {
            Err(last_errno())
        } else {
            Ok(ret as usize)
        }
    }
    #[cfg(not(target_os = "linux"))]
    write(fd, buf)
}

fn openat_bare(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<RawFd, Errno> {
    openat_bare_mode(dir, name, flags, 0)
}

fn openat_bare_mode(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> Result<RawFd, Errno> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
        let ret = unsafe { libc::syscall(libc::SYS_openat, dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
        if ret < 0 {
            Err(last_errno())
        } else {
            Ok(ret as RawFd)
        }
    }
    #[cfg(not(target_os = "linux"))]
    openat(dir, name, flags, mode)
}

/// A pipe, close-on-exec: (read end, write end).
pub fn pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: fresh descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[inline(always)]
pub fn close(fd: RawFd) -> Result<(), Errno> {
    // SAFETY: closing an fd we own; a bad fd is reported as EBADF.
    check(unsafe { libc::close(fd) }).map(drop)
}

#[inline(always)]
pub fn fstatat(dir: RawFd, name: &CStr, buf: &mut libc::stat, flags: libc::c_int) -> Result<(), Errno> {
    // SAFETY: `buf` is a valid, writable stat buffer.
    check(unsafe { libc::fstatat(dir, name.as_ptr(), buf, flags) }).map(drop)
}

/// The target of the symbolic link `name` in `dir` (at most 4 KiB, as PATH_MAX).
pub fn readlinkat(dir: RawFd, name: &CStr) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: the buffer is writable for its length.
    let n = check_size(unsafe { libc::readlinkat(dir, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) })?;
    buf.truncate(n);
    Ok(buf)
}

#[inline(always)]
pub fn fstat(fd: RawFd, buf: &mut libc::stat) -> Result<(), Errno> {
    // SAFETY: `buf` is a valid, writable stat buffer.
    check(unsafe { libc::fstat(fd, buf) }).map(drop)
}

#[inline(always)]
pub fn unlinkat(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<(), Errno> {
    // SAFETY: valid C string.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
}

#[inline(always)]
pub fn mkdirat(dir: RawFd, name: &CStr, mode: libc::mode_t) -> Result<(), Errno> {
    // SAFETY: valid C string.
    check(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) }).map(drop)
}

#[inline(always)]
pub fn renameat(dir: RawFd, from: &CStr, to: &CStr) -> Result<(), Errno> {
    // SAFETY: valid C strings.
    check(unsafe { libc::renameat(dir, from.as_ptr(), dir, to.as_ptr()) }).map(drop)
}

#[inline(always)]
pub fn linkat(dir: RawFd, from: &CStr, to: &CStr) -> Result<(), Errno> {
    // SAFETY: valid C strings.
    check(unsafe { libc::linkat(dir, from.as_ptr(), dir, to.as_ptr(), 0) }).map(drop)
}

#[inline(always)]
pub fn pread(fd: RawFd, buf: &mut [u8], offset: i64) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    check_size(unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset) })
}

#[inline(always)]
pub fn pwrite(fd: RawFd, buf: &[u8], offset: i64) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    check_size(unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), offset) })
}

#[inline(always)]
pub fn read(fd: RawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    check_size(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

#[inline(always)]
pub fn write(fd: RawFd, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    check_size(unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) })
}

/// `lseek(fd, 0, SEEK_SET)`: back to the start of the file.
#[inline(always)]
pub fn rewind(fd: RawFd) -> Result<(), Errno> {
    // SAFETY: plain syscall on an fd.
    if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

#[inline(always)]
pub fn ftruncate(fd: RawFd, len: i64) -> Result<(), Errno> {
    // SAFETY: plain syscall on an fd.
    check(unsafe { libc::ftruncate(fd, len) }).map(drop)
}

#[inline(always)]
pub fn fsync(fd: RawFd) -> Result<(), Errno> {
    // SAFETY: plain syscall on an fd.
    check(unsafe { libc::fsync(fd) }).map(drop)
}

#[inline(always)]
pub fn dup(fd: RawFd) -> Result<RawFd, Errno> {
    // SAFETY: plain syscall on an fd.
    check(unsafe { libc::dup(fd) })
}

#[cfg(target_os = "linux")]
/// One `getdents64` call into `buf`; returns the number of bytes filled (0 at the end).
#[inline(always)]
pub fn getdents64(fd: RawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: the buffer is valid for `buf.len()` bytes; the kernel writes at most that.
    let ret = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
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
/// Converts a path to a C string, naming the path when it holds a NUL byte.
/// The mount an open file is on (`statx` `STATX_MNT_ID`): unlike the
/// device number, it tells a bind mount of the same filesystem apart.
pub fn mount_id(fd: RawFd) -> Result<u64, Errno> {
    // SAFETY: statx is plain data, filled by the kernel.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: an empty path with AT_EMPTY_PATH names `fd` itself.
    check(unsafe { libc::statx(fd, c"".as_ptr(), libc::AT_EMPTY_PATH, libc::STATX_MNT_ID, &mut stx) })?;
    if stx.stx_mask & libc::STATX_MNT_ID == 0 {
        return Err(libc::ENOSYS);
    }
    Ok(stx.stx_mnt_id)
}

/// Bytes free for unprivileged writers on the filesystem holding `path` (`statvfs`).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let c = cstring(path).ok()?;
    // SAFETY: statvfs is plain data, filled by the kernel.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and buffer.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
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
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
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
    // SAFETY: the buffer is valid for its length.
    let got = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if got != buf.len() as isize {
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
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 with a relative timeout or none.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, expected, ts_ptr);
    }
}

#[cfg(target_os = "linux")]
/// Wakes every waiter on `word`.
pub fn futex_wake_all(word: &std::sync::atomic::AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

#[cfg(target_os = "linux")]
/// The calling thread's kernel task id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Monotonic clock in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
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
            let filled = getdents64(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut buf).unwrap();
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
