//! Thin, allocation-free wrappers around the system calls fsscale measures
//! and the few it needs to manage workers.
//!
//! Every wrapper returns the raw errno on failure so that a hot loop can
//! propagate it as a `Copy` value; turning it into text happens once, off the
//! hot path, in [`errno_text`].

mod files;
mod mounts;
pub mod topology;
pub use files::{available_memory, ensure_private_dir, fd_path, open_input, others_can_replace_in, read_input};
pub use mounts::{find_mount, mounts, parse_mountinfo, Mount};

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::RawFd;
use std::path::Path;

/// An errno value as returned by a failed system call.
pub type Errno = i32;

#[inline(always)]
pub fn last_errno() -> Errno {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
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
/// whole number of components shorter than the limit.
pub fn openat_long(dir: RawFd, path: &CStr, flags: libc::c_int) -> Result<RawFd, Errno> {
    const PIECE: usize = 3072;
    let bytes = path.to_bytes();
    if bytes.len() < PIECE {
        return openat(dir, path, flags, 0);
    }
    let mut at = dir;
    let mut rest = bytes;
    let close_at = |fd: RawFd| {
        if fd != dir {
            let _ = close(fd);
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
            openat(at, &piece, if last { flags } else { libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW }, 0);
        close_at(at);
        at = opened?;
        if last {
            return Ok(at);
        }
        rest = next;
    }
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

/// The records a `getdents64` call put in `buf[..filled]`, as (name, d_type),
/// `.` and `..` included. linux_dirent64 is d_ino u64, d_off i64,
/// d_reclen u16, d_type u8, then the NUL-terminated name.
pub fn dirents(buf: &[u8], filled: usize) -> impl Iterator<Item = (&[u8], u8)> {
    let mut offset = 0;
    std::iter::from_fn(move || {
        if offset >= filled {
            return None;
        }
        let reclen = u16::from_ne_bytes([buf[offset + 16], buf[offset + 17]]) as usize;
        let d_type = buf[offset + 18];
        let name = &buf[offset + 19..offset + reclen];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        offset += reclen.max(1);
        Some((&name[..end], d_type))
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
pub fn errno_text_plain(error: &io::Error) -> String {
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

/// Number of online CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 {
        1
    } else {
        n as usize
    }
}

/// The online CPUs' numbers (`/sys/devices/system/cpu/online`: `0-3,6`);
/// per-CPU kernel objects (perf events) are made for these.
pub fn online_cpu_ids() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_else(|_| "0".into());
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.parse::<usize>().ok()),
        }
    }
    cpus
}

#[cfg(target_os = "linux")]
/// The CPUs this process may run on (its affinity mask: `taskset`, cpusets), in order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data filled by the kernel.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer and size.
    let ok = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == 0;
    let cpus: Vec<usize> = if ok {
        // SAFETY: CPU_ISSET reads within the set for i < CPU_SETSIZE.
        (0..libc::CPU_SETSIZE as usize).filter(|&i| unsafe { libc::CPU_ISSET(i, &set) }).collect()
    } else {
        Vec::new()
    };
    if cpus.is_empty() {
        (0..online_cpus()).collect()
    } else {
        cpus
    }
}

/// Elsewhere: every online CPU.
#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Vec<usize> {
    (0..online_cpus()).collect()
}

/// The CPU bandwidth limit of this process's cgroup and its ancestors, in
/// CPUs (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`).
pub fn cgroup_cpu_limit() -> Option<f64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = mounts();
    let mut limit: Option<f64> = None;
    let mut tighten = |cpus: f64| {
        if cpus > 0.0 && cpus.is_finite() {
            limit = Some(limit.map_or(cpus, |l| l.min(cpus)));
        }
    };
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else { continue };
        let v2 = id == "0" && controllers.is_empty();
        let v1 = controllers.split(',').any(|c| c == "cpu");
        let Some(mount) = mounts.iter().find(|m| {
            (v2 && m.fs_type == "cgroup2")
                || (v1 && m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "cpu"))
        }) else {
            continue;
        };
        let mut dir = Path::new(&mount.mount_point).join(path.trim_start_matches('/'));
        loop {
            if v2 {
                let max = std::fs::read_to_string(dir.join("cpu.max")).unwrap_or_default();
                let mut parts = max.split_whitespace();
                if let (Some(quota), Some(period)) = (parts.next(), parts.next()) {
                    if let (Ok(q), Ok(p)) = (quota.parse::<f64>(), period.parse::<f64>()) {
                        tighten(q / p);
                    }
                }
            } else {
                let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok()?.trim().parse::<f64>().ok();
                if let (Some(q), Some(p)) = (read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")) {
                    tighten(q / p);
                }
            }
            if dir == Path::new(&mount.mount_point) || !dir.pop() {
                break;
            }
        }
    }
    limit
}

/// How many CPUs this process can really use: its affinity mask, lowered
/// to a cgroup CPU limit (rounded up). What `cores` means in `--workers`.
pub fn usable_cpus() -> usize {
    let allowed = allowed_cpus().len().max(1);
    match cgroup_cpu_limit() {
        Some(limit) => allowed.min(limit.ceil().max(1.0) as usize),
        None => allowed,
    }
}

#[cfg(target_os = "linux")]
/// Binds the calling thread (or single-threaded process) to one CPU.
pub fn pin_to_cpu(cpu: usize) -> Result<(), Errno> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(libc::EINVAL);
        }
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)).map(drop)
    }
}

/// What the scheduler says about the calling thread so far, as
/// [`ThreadSched::FIELDS`] counters: user and system CPU microseconds and
/// context switches made (voluntary: it slept) and suffered (involuntary:
/// preempted) from `getrusage(RUSAGE_THREAD)`, and nanoseconds on a CPU and
/// runnable but waiting on a runqueue from `/proc/thread-self/schedstat`
/// (0 where the kernel has no schedstat), and CLOCK_MONOTONIC ns.
pub fn thread_sched() -> [u64; ThreadSched::FIELDS] {
    let usage = rusage(libc::RUSAGE_THREAD);
    let (on_cpu, waiting) = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| ThreadSched::parse_schedstat(&text))
        .unwrap_or((0, 0));
    [
        micros(usage.ru_utime),
        micros(usage.ru_stime),
        usage.ru_nvcsw as u64,
        usage.ru_nivcsw as u64,
        on_cpu,
        waiting,
        monotonic_ns(),
    ]
}

/// Indices into [`thread_sched`]'s counters.
pub struct ThreadSched;

impl ThreadSched {
    pub const USER_US: usize = 0;
    pub const SYSTEM_US: usize = 1;
    pub const VOLUNTARY: usize = 2;
    pub const INVOLUNTARY: usize = 3;
    pub const ON_CPU_NS: usize = 4;
    pub const RUNQUEUE_NS: usize = 5;
    /// CLOCK_MONOTONIC when read: the worker's own window is between its two reads.
    pub const WALL_NS: usize = 6;
    pub const FIELDS: usize = 7;

    /// `/proc/<tid>/schedstat`: "on-CPU ns, runqueue wait ns, timeslices".
    pub fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        Some((fields.next()??, fields.next()??))
    }
}

/// User and system CPU microseconds of this process's children that were
/// waited for (`RUSAGE_CHILDREN`): commands a worker ran, and theirs.
pub fn children_cpu_micros() -> (u64, u64) {
    let usage = rusage(libc::RUSAGE_CHILDREN);
    (micros(usage.ru_utime), micros(usage.ru_stime))
}

/// `getrusage(who)`.
fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: rusage is plain data filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage buffer.
    unsafe { libc::getrusage(who, &mut usage) };
    usage
}

fn micros(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64
}

/// Raises the soft open-file limit to the hard limit: 1024 threaded workers
/// each holding a few descriptors exceed the usual soft limit of 1024.
pub fn raise_fd_limit() {
    // SAFETY: rlimit is plain data.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
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
        // 20 ms of spinning is on a CPU (or waiting for one), and all counters only grow.
        assert!(
            after[ThreadSched::ON_CPU_NS] + after[ThreadSched::RUNQUEUE_NS]
                >= before[ThreadSched::ON_CPU_NS] + 15_000_000
        );
        assert!(after.iter().zip(before).all(|(a, b)| *a >= b));
    }
}
