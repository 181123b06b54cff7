//! This process and the machine's CPUs: which CPUs there are and may be
//! used, pinning, a thread's scheduler figures, CPU time of children, the
//! descriptor limit, and how many threads run.

#[cfg(target_os = "linux")]
use super::Errno;
use super::{cgroup_cpu_limit, monotonic_ns};

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
    use rustix::thread::CpuSet;
    let cpus: Vec<usize> = match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&i| set.is_set(i)).collect(),
        Err(_) => Vec::new(),
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
    use rustix::thread::CpuSet;
    if cpu >= CpuSet::MAX_CPU {
        return Err(libc::EINVAL);
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| e.raw_os_error())
}

#[cfg(target_os = "linux")]
/// Names the calling thread (or single-threaded process) `fsscale-w<index>`,
/// as `ps`, `top` and `/proc/<pid>/comm` show it: forked workers are told
/// apart by their name as worker threads are (PIDs wrap, so their order is
/// not the fork order). No allocation: it runs in a forked child.
pub fn name_worker(index: usize) {
    // The kernel keeps 15 bytes and a NUL; "fsscale-w" and up to 6 digits fit.
    let mut name = [0u8; 16];
    let prefix = b"fsscale-w";
    name[..prefix.len()].copy_from_slice(prefix);
    let mut buf = [0u8; 20];
    let digits = decimal(index as u64, &mut buf);
    let kept = digits.len().min(15 - prefix.len());
    name[prefix.len()..prefix.len() + kept].copy_from_slice(&digits[..kept]);
    // Its last byte is never written: always NUL-terminated.
    if let Ok(name) = std::ffi::CStr::from_bytes_until_nul(&name) {
        let _ = rustix::thread::set_name(name);
    }
}

/// `n` in decimal digits, written into `buf` without allocating (for a
/// forked child, or between fork and exec).
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[start..];
        }
    }
}

/// What the scheduler says about the calling thread so far, as
/// [`ThreadSched::FIELDS`] counters: user and system CPU microseconds and
/// context switches made (voluntary: it slept) and suffered (involuntary:
/// preempted) from `getrusage(RUSAGE_THREAD)`, and nanoseconds on a CPU and
/// runnable but waiting on a runqueue (0 where the kernel has no
/// schedstat), CLOCK_MONOTONIC ns, and page faults (minor, major: from
/// the same `getrusage`, so no system call more in the worker's window). The time on a CPU is the thread's
/// own CPU clock, brought up to date as it is read: schedstat's first field
/// is the scheduler's sum as of its last tick or switch, so a window of a
/// millisecond could show none. Its wait is schedstat's, complete whenever
/// the thread itself reads it (it is on a CPU then).
pub fn thread_sched() -> [u64; ThreadSched::FIELDS] {
    let usage = rusage(libc::RUSAGE_THREAD);
    let (on_cpu, waiting) = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| ThreadSched::parse_schedstat(&text))
        .map_or((0, 0), |(_, waiting)| (thread_cpu_ns(), waiting));
    [
        micros(usage.ru_utime),
        micros(usage.ru_stime),
        usage.ru_nvcsw as u64,
        usage.ru_nivcsw as u64,
        on_cpu,
        waiting,
        monotonic_ns(),
        usage.ru_minflt as u64,
        usage.ru_majflt as u64,
    ]
}

/// Whether this kernel keeps scheduler statistics per thread
/// (`/proc/thread-self/schedstat`, CONFIG_SCHEDSTATS or CONFIG_SCHED_INFO):
/// without them [`thread_sched`]'s on-CPU and runqueue figures are zeros.
pub fn has_schedstat() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| std::path::Path::new("/proc/thread-self/schedstat").exists())
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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
    /// Page faults served without I/O (`ru_minflt`).
    pub const MINOR_FAULTS: usize = 7;
    /// Page faults that waited for I/O (`ru_majflt`).
    pub const MAJOR_FAULTS: usize = 8;
    pub const FIELDS: usize = 9;

    /// `/proc/<tid>/schedstat`: "on-CPU ns, runqueue wait ns, timeslices".
    pub(crate) fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
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
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: rusage is plain data, all zeros a valid value; the kernel fills it.
    unsafe {
        libc::getrusage(who, usage.as_mut_ptr());
        usage.assume_init()
    }
}

fn micros(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64
}

/// Raises the soft open-file limit to the hard limit: 1024 threaded workers
/// each holding a few descriptors exceed the usual soft limit of 1024.
pub fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let _ = setrlimit(Resource::Nofile, Rlimit { current: limit.maximum, maximum: limit.maximum });
    }
}

/// How many threads this process has (`/proc/self/status`), where it says.
pub fn thread_count() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok())
}

/// `readlink /proc/self/ns/pid` in the initial PID namespace: its inode is
/// the kernel's fixed `PROC_PID_INIT_INO`.
const INITIAL_PID_NAMESPACE: &str = "pid:[4026531836]";

/// Whether this process's PIDs are the kernel's global ones (which
/// tracepoints and tracefs's pid filters use): false in a PID namespace of
/// its own (a container, `unshare -p`); None where /proc cannot say.
pub fn in_initial_pid_namespace() -> Option<bool> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(link.as_os_str() == INITIAL_PID_NAMESPACE)
}

/// A pidfd for thread `tid`: its own (`PIDFD_THREAD`, Linux 6.9 and
/// later), or, where the kernel has no thread pidfds, its process's when
/// `tid` leads it (which names the same task).
#[cfg(target_os = "linux")]
pub fn pidfd_of_thread(tid: i32) -> Result<std::os::fd::OwnedFd, Errno> {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    // PIDFD_THREAD is O_EXCL's value; rustix does not name it yet.
    let thread = PidfdFlags::from_bits_retain(libc::O_EXCL as _);
    let pid = Pid::from_raw(tid).ok_or(libc::ESRCH)?;
    let open = |flags| pidfd_open(pid, flags).map_err(|e| e.raw_os_error());
    open(thread).or_else(|errno| if errno == libc::EINVAL { open(PidfdFlags::empty()) } else { Err(errno) })
}

/// Linux capability numbers fsscale's instruments check (`linux/capability.h`).
pub mod cap {
    pub const DAC_OVERRIDE: u32 = 1;
    pub const SYS_ADMIN: u32 = 21;
    pub const SYSLOG: u32 = 34;
    pub const PERFMON: u32 = 38;
    pub const BPF: u32 = 39;

    /// Its name as `capabilities(7)` spells it.
    pub fn name(cap: u32) -> &'static str {
        match cap {
            DAC_OVERRIDE => "CAP_DAC_OVERRIDE",
            SYS_ADMIN => "CAP_SYS_ADMIN",
            SYSLOG => "CAP_SYSLOG",
            PERFMON => "CAP_PERFMON",
            BPF => "CAP_BPF",
            _ => "an unnamed capability",
        }
    }
}

/// This process's effective capabilities (`CapEff` in `/proc/self/status`).
pub fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_capabilities(&status)
}

fn parse_capabilities(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// Sends `signal` (libc's number; 0 only asks whether it could) to process
/// `pid`, or to process group `-pid` when `pid` is negative. `ESRCH` when
/// nobody is there.
pub fn send_signal(pid: i32, signal: libc::c_int) -> Result<(), super::Errno> {
    use rustix::process::{kill_process, kill_process_group, test_kill_process, test_kill_process_group};
    use rustix::process::{Pid, Signal};
    let target = Pid::from_raw(pid.checked_abs().ok_or(libc::ESRCH)?).ok_or(libc::ESRCH)?;
    let sent = match (signal, pid < 0) {
        (0, false) => test_kill_process(target),
        (0, true) => test_kill_process_group(target),
        (signal, group) => {
            let signal = Signal::from_named_raw(signal).ok_or(libc::EINVAL)?;
            if group {
                kill_process_group(target, signal)
            } else {
                kill_process(target, signal)
            }
        }
    };
    sent.map_err(|e| e.raw_os_error())
}

/// Waits for child `pid` (`hang`: until it changes state; else only if it
/// has): its raw wait status, `Ok(None)` while it runs, `Err(ECHILD)` when
/// it is not (or no longer) a child of ours.
pub fn wait_child(pid: i32, hang: bool) -> Result<Option<i32>, super::Errno> {
    use rustix::process::{waitpid, Pid, WaitOptions};
    let options = if hang { WaitOptions::empty() } else { WaitOptions::NOHANG };
    let pid = Pid::from_raw(pid).ok_or(libc::ECHILD)?;
    let waited = waitpid(Some(pid), options).map_err(|e| e.raw_os_error())?;
    Ok(waited.map(|(_, status)| status.as_raw()))
}

/// Ends this (forked) process at once with `code`: no destructor, no
/// `atexit` handler, no flush of another's buffers (`_exit`).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(code) }
}

#[cfg(target_os = "linux")]
/// Makes this process the child subreaper: orphans of its descendants come
/// to it rather than to init.
pub fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Makes `fd` non-blocking (`O_NONBLOCK`, through `FIONBIO`).
pub fn set_nonblocking(fd: impl std::os::fd::AsFd) {
    let _ = rustix::io::ioctl_fionbio(fd, true);
}

/// Whether this process may write in `path` (`access(W_OK)`).
pub fn writable(path: &std::path::Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

/// Sleeps until `ns` on CLOCK_MONOTONIC (`clock_nanosleep`, `TIMER_ABSTIME`).
/// A signal may end it early: callers loop on the clock.
#[cfg(target_os = "linux")]
pub fn sleep_until_monotonic(ns: u64) {
    let until = rustix::time::Timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ };
    let _ = rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &until);
}

/// Lets the calling thread's timed sleeps end when asked: a normal
/// thread's timer slack lets the kernel wake it up to 50 µs late.
#[cfg(target_os = "linux")]
pub fn tighten_timer_slack() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

/// Sleeps `ns` nanoseconds (`nanosleep`: async-signal-safe, for a forked child).
pub fn sleep_ns(ns: u64) {
    let pause = rustix::time::Timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ };
    let _ = rustix::thread::nanosleep(&pause);
}

#[cfg(test)]
mod capability_tests {
    use super::*;

    #[test]
    fn effective_capabilities_are_read_from_capeff() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\nCapBnd:\t0\n";
        let caps = parse_capabilities(status).unwrap();
        for c in [cap::DAC_OVERRIDE, cap::SYS_ADMIN, cap::SYSLOG, cap::PERFMON, cap::BPF] {
            assert!(caps & (1 << c) != 0, "{}", cap::name(c));
        }
        assert_eq!(parse_capabilities("CapEff:\t0000000000200000\n"), Some(1 << cap::SYS_ADMIN));
        assert_eq!(parse_capabilities("Name:\tx\n"), None);
    }

    #[test]
    fn this_process_knows_its_pid_namespace() {
        assert!(in_initial_pid_namespace().is_some());
    }
}
