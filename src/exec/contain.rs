//! Keeping what commands start from outliving the run.
//!
//! Where cgroup v2 is writable, every command fsscale starts moves itself
//! (between fork and exec) into a cgroup of the current run, made below a
//! cgroup of this fsscale process; at the end of each run the run's cgroup
//! is killed (`cgroup.kill`), which reaches what a command daemonised
//! (`setsid cmd &`) too. A guardian process, in a session of its own, holds
//! the read end of a pipe whose write end only fsscale and its workers
//! hold: when they are all gone, even after `kill -9`, it kills and removes
//! the whole cgroup tree. Without cgroup v2 fsscale falls back to being a
//! child subreaper: orphans of commands are reparented to it and killed at
//! the end of each run (after `kill -9` they survive; the results record
//! which containment was in force).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use crate::sys;

/// Every run's cgroup tree (and `--memory-limit`'s cgroup) is `PREFIX<pid>-<8 hex>`.
pub const CGROUP_PREFIX: &str = "fsscale-";

/// The current run's `cgroup.procs`, open for writing, or -1. Commands
/// write "0" to it between fork and exec (async-signal-safe).
static PROCS_FD: AtomicI32 = AtomicI32::new(-1);

/// The current run's `cpu.stat`, open for reading, or -1: the CPU time of
/// every process the run's commands started, daemons included.
static CPU_STAT_FD: AtomicI32 = AtomicI32::new(-1);

/// CPU seconds the current run's cgroup has used so far (cgroup v2's
/// `cpu.stat` `usage_usec`, always there whatever controllers are on), or
/// `None` without a run cgroup.
pub fn run_cgroup_cpu_s() -> Option<f64> {
    let fd = CPU_STAT_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    // SAFETY: reading into our own buffer from a descriptor this module owns for the run.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    let text = std::str::from_utf8(buf.get(..usize::try_from(n).ok()?)?).ok()?;
    let usec: u64 = text.lines().find_map(|l| l.strip_prefix("usage_usec "))?.trim().parse().ok()?;
    Some(usec as f64 / 1e6)
}

/// How a fsscale process contains the commands it runs.
pub struct Containment {
    /// This process's cgroup for commands (`.../fsscale-<pid>-<rand>`).
    root: Option<PathBuf>,
    guardian: Option<(libc::pid_t, OwnedFd)>,
    runs: u64,
    /// `root`, `flock`ed while this run (and its forked workers) live:
    /// `fsscale cleanup` removes only trees whose lock nobody holds, which
    /// it must do itself when the guardian was killed too.
    _lock: Option<std::fs::File>,
}

/// The cgroup of one run; killed and removed by [`Containment::end_run`].
pub struct RunCgroup {
    dir: Option<PathBuf>,
    procs: Option<OwnedFd>,
    cpu_stat: Option<OwnedFd>,
}

impl Containment {
    /// Sets up containment: a cgroup and its guardian where possible, the
    /// subreaper fallback otherwise. Call while the process is single-threaded.
    /// `inside`: a v2 cgroup to make the tree in (`--memory-limit`'s, so
    /// that commands are inside both), else below this process's own.
    pub fn start(inside: Option<&Path>) -> Containment {
        // Either way orphans of commands come to us rather than to init.
        sys::become_subreaper();
        let fallback = Containment { root: None, guardian: None, runs: 0, _lock: None };
        let Some(parent) = inside.map(Path::to_path_buf).or_else(own_cgroup_dir) else { return fallback };
        let Ok((root, lock)) = make_locked_cgroup(&parent) else { return fallback };
        let Some(guardian) = start_guardian(&root) else {
            let _ = std::fs::remove_dir(&root);
            return fallback;
        };
        Containment { root: Some(root), guardian: Some(guardian), runs: 0, _lock: Some(lock) }
    }

    /// Whether a cgroup contains the commands (else the subreaper fallback).
    pub(crate) fn has_cgroup(&self) -> bool {
        self.root.is_some()
    }

    /// What the results record: `cgroup v2 (PATH)` or the fallback.
    pub fn describe(&self) -> String {
        match &self.root {
            Some(root) => format!("cgroup v2 ({})", root.display()),
            None => "subreaper (cgroup v2 not writable: what a command daemonises dies at the run's end, \
                     but survives a kill -9 of fsscale)"
                .to_string(),
        }
    }

    /// Makes the cgroup of the next run; every command started until
    /// [`Containment::end_run`] goes into it.
    pub(crate) fn start_run(&mut self) -> RunCgroup {
        self.runs += 1;
        let none = RunCgroup { dir: None, procs: None, cpu_stat: None };
        let Some(root) = &self.root else { return none };
        let dir = root.join(format!("run-{}", self.runs));
        if std::fs::create_dir(&dir).is_err() {
            return none;
        }
        let procs =
            sys::cstring(&dir.join("cgroup.procs")).ok().and_then(|p| sys::open(sys::CWD, &p, libc::O_WRONLY, 0).ok());
        if let Some(fd) = &procs {
            PROCS_FD.store(fd.as_raw_fd(), Ordering::SeqCst);
        }
        let cpu_stat = sys::cstring(&dir.join("cpu.stat"))
            .ok()
            .and_then(|p| sys::open(sys::CWD, &p, libc::O_RDONLY | libc::O_CLOEXEC, 0).ok());
        if let Some(fd) = &cpu_stat {
            CPU_STAT_FD.store(fd.as_raw_fd(), Ordering::SeqCst);
        }
        RunCgroup { dir: Some(dir), procs, cpu_stat }
    }

    /// Kills whatever the run's commands left running; returns how many
    /// processes that was.
    pub(crate) fn end_run(&mut self, run: RunCgroup) -> usize {
        PROCS_FD.store(-1, Ordering::SeqCst);
        CPU_STAT_FD.store(-1, Ordering::SeqCst);
        drop(run.procs);
        drop(run.cpu_stat);
        match run.dir {
            Some(dir) => kill_cgroup(&dir),
            None => kill_orphans(self.guardian.as_ref().map(|(pid, _)| *pid)),
        }
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        PROCS_FD.store(-1, Ordering::SeqCst);
        CPU_STAT_FD.store(-1, Ordering::SeqCst);
        if let Some(root) = &self.root {
            kill_cgroup(root);
        }
        if let Some((pid, pipe)) = self.guardian.take() {
            drop(pipe); // EOF: the guardian finds the tree gone and leaves
            let _ = sys::wait_child(pid, true);
        }
    }
}

/// `--memory-limit`'s `cgroup.procs`, open for writing, or -1.
static MEMORY_PROCS_FD: AtomicI32 = AtomicI32::new(-1);

/// Where the run's processes enter `--memory-limit`'s cgroup (`None`: no
/// limit): its `cgroup.procs`, which the caller keeps open until it sets `None`.
pub fn set_memory_cgroup(procs: Option<RawFd>) {
    MEMORY_PROCS_FD.store(procs.unwrap_or(-1), Ordering::Relaxed);
}

/// Whether the run's processes enter a memory cgroup fsscale itself is not in.
pub fn memory_limited() -> bool {
    MEMORY_PROCS_FD.load(Ordering::Relaxed) >= 0
}

/// In a process just forked to do the run's work (a worker, the host of
/// thread workers, a command between fork and exec): enters
/// `--memory-limit`'s cgroup, if there is one. Only async-signal-safe calls.
/// A failure is the caller's to report: a process outside the limit's
/// cgroup would measure without the limit, silently.
pub fn enter_memory_cgroup() -> Result<(), sys::Errno> {
    write_zero(MEMORY_PROCS_FD.load(Ordering::Relaxed))
}

/// For [`super::run`]'s `pre_exec`: moves the calling (forked) process into
/// the memory limit's cgroup, then the current run's cgroup (which, where
/// both are v2, is inside the former). Only async-signal-safe calls. A
/// failure fails the spawn: a command outside the run's cgroup, and what it
/// daemonises, would outlive the run.
pub(super) fn enter_run_cgroup() -> Result<(), sys::Errno> {
    enter_memory_cgroup()?;
    write_zero(PROCS_FD.load(Ordering::Relaxed))
}

/// Writes to stderr that joining a cgroup failed with `errno`, without
/// allocating (between fork and exec).
pub(super) fn say_join_failed(errno: sys::Errno) {
    let (line, len) = join_failed_line(errno);
    // SAFETY: write(2) of our own buffer to stderr.
    unsafe { libc::write(2, line.as_ptr().cast(), len) };
}

const JOIN_FAILED: &[u8] = b"fsscale: the command did not start: joining the run's cgroup failed (errno ";

/// `fsscale: ... (errno N)` and a newline, in a buffer on the stack, and its length.
fn join_failed_line(errno: sys::Errno) -> ([u8; JOIN_FAILED.len() + 13], usize) {
    let mut line = [0u8; JOIN_FAILED.len() + 13];
    line[..JOIN_FAILED.len()].copy_from_slice(JOIN_FAILED);
    let mut buf = [0u8; 20];
    let digits = sys::decimal(u64::from(errno.unsigned_abs()), &mut buf);
    let len = JOIN_FAILED.len() + digits.len();
    line[JOIN_FAILED.len()..len].copy_from_slice(digits);
    line[len..len + 2].copy_from_slice(b")\n");
    (line, len + 2)
}

/// Writes "0" (this process) to the `cgroup.procs` open as `fd`, if any;
/// a write the kernel interrupts, or refuses for the moment, is retried.
fn write_zero(fd: RawFd) -> Result<(), sys::Errno> {
    if fd < 0 {
        return Ok(());
    }
    let mut tries = 0;
    loop {
        // SAFETY: write(2) of a constant buffer to an open descriptor.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1 {
            return Ok(());
        }
        let errno = sys::last_errno();
        tries += 1;
        if !matches!(errno, libc::EINTR | libc::EAGAIN | libc::EBUSY) || tries >= 100 {
            return Err(errno);
        }
        // A millisecond between tries; nanosleep is async-signal-safe.
        sys::sleep_ns(1_000_000);
    }
}

/// Kills and removes the cgroup trees of killed runs whose guardian died
/// too (and `--memory-limit` cgroups of killed runs): fsscale's form of
/// name, anywhere in the cgroup v2 hierarchy or v1's memory hierarchy, and
/// a lock nobody holds (never judged by PID). Returns what it removed.
pub fn remove_dead_cgroups() -> Vec<String> {
    let mut removed = Vec::new();
    for path in dead_cgroups() {
        let Ok(name) = sys::cstring(&path) else { continue };
        let Ok(Some(_held)) = crate::lockfile::lock_if_unheld(crate::sys::CWD, &name) else { continue };
        let killed = kill_cgroup(&path);
        if !path.exists() {
            removed.push(format!("removed cgroup {} (killed {killed} process(es))", path.display()));
        }
    }
    removed
}

/// Makes a cgroup of this run's below `parent`, named as fsscale names them,
/// and `flock`s it: the lock is what tells it from a killed run's (another
/// fsscale's [`remove_dead_cgroups`] may take it before the lock: then a new
/// name, as [`crate::lockfile::make_locked_dir`] does).
pub(crate) fn make_locked_cgroup(parent: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    crate::lockfile::make_locked_dir(parent, || format!("{CGROUP_PREFIX}{}-{}", std::process::id(), sys::random_hex(4)))
}

/// The cgroups of killed fsscale runs (named as fsscale names them, their
/// lock free), for a warning; [`remove_dead_cgroups`] removes them.
pub fn dead_cgroups() -> Vec<PathBuf> {
    let hierarchies = crate::sys::mounts().into_iter().filter(|m| {
        m.fs_type == "cgroup2" || (m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "memory"))
    });
    let mut dead = Vec::new();
    let mut pending: Vec<(PathBuf, usize)> = hierarchies.map(|m| (PathBuf::from(m.mount_point), 0)).collect();
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            let path = entry.path();
            if !is_run_cgroup(&entry.file_name().to_string_lossy()) {
                // Slices and scopes nest a few levels; fsscale's are below a process's own.
                if depth < 12 {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            let Ok(name) = sys::cstring(&path) else { continue };
            if matches!(crate::lockfile::lock_if_unheld(crate::sys::CWD, &name), Ok(Some(_))) {
                dead.push(path);
            }
        }
    }
    dead
}

/// `fsscale-<digits>-<8 hex digits>`.
fn is_run_cgroup(name: &str) -> bool {
    let Some((pid, tag)) = name.strip_prefix(CGROUP_PREFIX).and_then(|r| r.split_once('-')) else { return false };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && tag.len() == 8
        && tag.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The directory of this process's cgroup v2, if that hierarchy is mounted
/// and writable here.
fn own_cgroup_dir() -> Option<PathBuf> {
    let mount = crate::sys::mounts().into_iter().find(|m| m.fs_type == "cgroup2")?.mount_point;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = Path::new(&mount).join(path.trim_start_matches('/'));
    sys::writable(&dir).then_some(dir)
}

/// Forks the guardian of `root`; returns its pid and the pipe's write end.
fn start_guardian(root: &Path) -> Option<(libc::pid_t, OwnedFd)> {
    let (read, write) = sys::pipe().ok()?;
    let kill_path = sys::cstring(&root.join("cgroup.kill")).ok()?;
    // Forking a multi-threaded process leaves other threads' locks held in
    // the child: without a guardian, the fallback contains the commands.
    if sys::thread_count() != Some(1) {
        return None;
    }
    // SAFETY: this process is single-threaded (checked above); the child only
    // makes system calls and leaves through _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return None;
    }
    if pid == 0 {
        // SAFETY: plain system calls in the forked child.
        unsafe {
            libc::setsid();
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
                libc::signal(signal, libc::SIG_IGN);
            }
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
            // Hold nothing but the pipe: an inherited lock or write end would keep things alive.
            libc::dup2(read.as_raw_fd(), 3);
            libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            let mut byte = 0u8;
            loop {
                let got = libc::read(3, (&mut byte as *mut u8).cast(), 1);
                if got == 0 || (got < 0 && sys::last_errno() != libc::EINTR) {
                    break;
                }
            }
            guardian_teardown(&kill_path, root);
            libc::_exit(0);
        }
    }
    drop(read);
    Some((pid, write))
}

/// In the guardian: kill every process in the tree, then remove its cgroups
/// (children first; a few tries while the killed processes exit).
fn guardian_teardown(kill: &std::ffi::CStr, root: &Path) {
    if let Ok(fd) = sys::open(sys::CWD, kill, libc::O_WRONLY, 0) {
        let _ = sys::write(&fd, b"1");
    }
    for _ in 0..100 {
        if remove_tree(root) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Removes a cgroup and its children; true when it is gone.
fn remove_tree(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    std::fs::remove_dir(dir).is_ok() || !dir.exists()
}

/// Kills every process in the cgroup `dir` (and below), waits until it is
/// empty, removes it; returns how many processes were in it.
pub fn kill_cgroup(dir: &Path) -> usize {
    // Processes a command's own group kill already reached may still be on
    // their way out (more so on a loaded machine): give them a moment, so
    // only what really stayed behind is counted and reported.
    let mut count = procs(dir).len();
    for _ in 0..50 {
        if count == 0 {
            break;
        }
        reap_orphans(None);
        std::thread::sleep(Duration::from_millis(2));
        count = procs(dir).len();
    }
    if count > 0 {
        if std::fs::write(dir.join("cgroup.kill"), b"1").is_err() {
            // Kernels before 5.14 have no cgroup.kill: signal each process.
            for pid in procs(dir) {
                let _ = sys::send_signal(pid, libc::SIGKILL);
            }
        }
        reap_orphans(None);
    }
    for attempt in 0..250 {
        reap_orphans(None);
        if remove_tree(dir) {
            break;
        }
        // Without cgroup.kill, one that forked between the read and the kill is signalled now.
        if attempt % 10 == 9 {
            for pid in procs(dir) {
                let _ = sys::send_signal(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(4));
    }
    count
}

fn procs(dir: &Path) -> Vec<libc::pid_t> {
    let mut all: Vec<libc::pid_t> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                all.extend(procs(&entry.path()));
            }
        }
    }
    all
}

/// Fallback: kills the processes reparented to this subreaper (anything a
/// command left running), other than `keep`; returns how many.
fn kill_orphans(keep: Option<libc::pid_t>) -> usize {
    let me = std::process::id() as libc::pid_t;
    let orphans: Vec<libc::pid_t> = children_of(me).into_iter().filter(|p| Some(*p) != keep).collect();
    for &pid in &orphans {
        let _ = sys::send_signal(pid, libc::SIGKILL);
    }
    reap_orphans(keep);
    orphans.len()
}

/// Reaps exited children that no one else waits for (orphans reparented to
/// us), leaving `keep` alone.
fn reap_orphans(keep: Option<libc::pid_t>) {
    let me = std::process::id() as libc::pid_t;
    for pid in children_of(me) {
        if Some(pid) == keep {
            continue;
        }
        let _ = sys::wait_child(pid, false);
    }
}

/// Children of `parent`, from /proc (`task/*/children` needs a kernel
/// option, so every process's parent is read instead).
fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(proc) = std::fs::read_dir("/proc") else { return Vec::new() };
    proc.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()))
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The fields after the command name, which is in parentheses and may hold anything.
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
            ppid.and_then(|p| p.parse::<libc::pid_t>().ok()) == Some(parent)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joining_writes_this_process_and_a_refused_write_is_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cgroup.procs");
        std::fs::write(&path, b"").unwrap();
        let writable = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert_eq!(write_zero(writable.as_raw_fd()), Ok(()));
        assert_eq!(std::fs::read(&path).unwrap(), b"0");
        assert_eq!(write_zero(-1), Ok(()), "no cgroup: nothing to join");
        let read_only = std::fs::File::open(&path).unwrap();
        assert_eq!(write_zero(read_only.as_raw_fd()), Err(libc::EBADF));
    }

    #[test]
    fn a_failed_join_says_so_with_its_errno() {
        for (errno, text) in [(16, "(errno 16)\n"), (0, "(errno 0)\n"), (i32::MAX, "(errno 2147483647)\n")] {
            let (line, len) = join_failed_line(errno);
            let line = std::str::from_utf8(&line[..len]).unwrap();
            assert_eq!(line, format!("fsscale: the command did not start: joining the run's cgroup failed {text}"));
        }
    }

    #[test]
    fn a_cgroup_is_made_locked_under_a_run_name_and_a_missing_parent_is_the_error() {
        // mkdir and flock work alike on any directory.
        let parent = tempfile::tempdir().unwrap();
        let (dir, _lock) = make_locked_cgroup(parent.path()).unwrap();
        assert_eq!(dir.parent(), Some(parent.path()));
        assert!(is_run_cgroup(&dir.file_name().unwrap().to_string_lossy()), "{}", dir.display());
        // Held: a sweeper of killed runs' cgroups cannot take it.
        let name = sys::cstring(&dir).unwrap();
        assert!(crate::lockfile::lock_if_unheld(crate::sys::CWD, &name).unwrap().is_none());
        let missing = make_locked_cgroup(&parent.path().join("gone")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
