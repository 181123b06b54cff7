//! System-wide CPU time from `/proc/stat`, to tell how busy the machine was
//! during the window and where the time went.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use crate::results::{RunThrottling, SystemCpu};
use crate::sys::quota::{quota_cgroups, read_throttling, throttled_between, QuotaCgroup, Throttling};

/// Quota cgroups whose throttling a window reads (the innermost few).
const QUOTA_CGROUPS_READ: usize = 4;

/// The aggregate "cpu" line, in clock ticks, the ticks all kernel threads
/// have used so far, and the throttling counters of the cgroups whose CPU
/// quota applies to the run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CpuTicks {
    fields: [u64; 8],
    kernel_threads: u64,
    /// The tightest quota, in CPUs, and each quota cgroup's counters.
    quota_cpus: Option<f64>,
    throttling: [Option<Throttling>; QUOTA_CGROUPS_READ],
}

impl CpuTicks {
    pub fn read() -> CpuTicks {
        let mut ticks = std::fs::read_to_string("/proc/stat").map(|text| CpuTicks::parse(&text)).unwrap_or_default();
        ticks.kernel_threads = kernel_thread_ticks();
        let quotas = QUOTAS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        ticks.quota_cpus = quotas.iter().map(|q| q.cpus).reduce(f64::min);
        for (slot, counters) in ticks.throttling.iter_mut().zip(read_throttling(&quotas)) {
            *slot = counters;
        }
        ticks
    }

    /// A CPU quota's throttling between `self` and `later`; `None` without a quota.
    pub(crate) fn throttled(&self, later: &CpuTicks) -> Option<RunThrottling> {
        let quota_cpus = later.quota_cpus?;
        let t = throttled_between(&self.throttling, &later.throttling)?;
        Some(RunThrottling {
            quota_cpus,
            throttled_s: t.throttled_s,
            periods: t.periods,
            throttled_periods: t.throttled_periods,
        })
    }

    /// Ticks as `/proc/stat` would give them (user, nice, system, idle,
    /// iowait, irq, softirq, steal): a window's edges made up by a test.
    #[cfg(test)]
    pub(super) fn planted(fields: [u64; 8]) -> CpuTicks {
        CpuTicks { fields, ..CpuTicks::default() }
    }

    fn parse(text: &str) -> CpuTicks {
        let mut ticks = CpuTicks::default();
        if let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) {
            for (slot, value) in ticks.fields.iter_mut().zip(line.split_whitespace().skip(1)) {
                *slot = value.parse().unwrap_or(0);
            }
        }
        ticks
    }

    /// Clock ticks of all CPUs between `self` and `later`.
    pub fn ticks(&self, later: &CpuTicks) -> u64 {
        (0..8).map(|i| later.fields[i].saturating_sub(self.fields[i])).sum()
    }

    /// The share of all CPU time between `self` (earlier) and `later` that
    /// went to other processes (and a hypervisor's steal): busy time less
    /// `own_s` seconds of the run's own workers and commands and less what
    /// kernel threads used, since those mostly work for the run (RCU freeing
    /// what creat-unlink removed, writeback, kworkers). `None` without
    /// readable ticks.
    pub(crate) fn others_share(&self, later: &CpuTicks, own_s: f64) -> Option<f64> {
        let (total, busy) = self.total_and_busy(later)?;
        let kernel = later.kernel_threads.saturating_sub(self.kernel_threads) as f64;
        Some(((busy - kernel) / clock_hz() - own_s).max(0.0) / (total / clock_hz())).map(|s| s.min(1.0))
    }

    /// The share of all CPU time between `self` and `later` that kernel threads used.
    pub(crate) fn kernel_threads_share(&self, later: &CpuTicks) -> Option<f64> {
        let (total, _) = self.total_and_busy(later)?;
        Some((later.kernel_threads.saturating_sub(self.kernel_threads) as f64 / total).min(1.0))
    }

    /// All ticks and busy ticks (not idle, not iowait) between `self` and `later`.
    fn total_and_busy(&self, later: &CpuTicks) -> Option<(f64, f64)> {
        let delta = |i: usize| later.fields[i].saturating_sub(self.fields[i]) as f64;
        let total: f64 = (0..8).map(delta).sum();
        (total > 0.0).then(|| (total, total - delta(3) - delta(4)))
    }

    /// Fractions of all CPU time between `self` (earlier) and `later`.
    pub fn breakdown(&self, later: &CpuTicks) -> SystemCpu {
        let delta: Vec<f64> = self.fields.iter().zip(later.fields).map(|(a, b)| b.saturating_sub(*a) as f64).collect();
        let total: f64 = delta.iter().sum();
        if total == 0.0 {
            return SystemCpu::default();
        }
        let f = |i: usize| delta[i] / total;
        SystemCpu {
            user: f(0),
            nice: f(1),
            system: f(2),
            idle: f(3),
            iowait: f(4),
            irq: f(5),
            softirq: f(6),
            steal: f(7),
        }
    }
}

pub(super) fn clock_hz() -> f64 {
    crate::sys::clock_ticks_per_second() as f64
}

/// The `/proc/<pid>/stat` of every kernel thread (kthreadd, pid 2, and its
/// children), held open by [`find_kernel_threads`] so that reading them at a
/// window's edges is one `pread` each, not a walk of /proc.
static KERNEL_THREADS: Mutex<Vec<File>> = Mutex::new(Vec::new());

/// The cgroups whose CPU quota applies to this process, found by
/// [`find_kernel_threads`] before a point's runs (a variant's setup may set one).
static QUOTAS: Mutex<Vec<QuotaCgroup>> = Mutex::new(Vec::new());

/// Finds the kernel threads now, before a run's warm-up, so that
/// [`CpuTicks::read`] is quick at the window's edges, and the cgroups whose
/// CPU quota applies. Kernel threads live long; one that starts inside a
/// window is missed (its ticks count as others').
pub(crate) fn find_kernel_threads() {
    let mut quotas = quota_cgroups();
    quotas.truncate(QUOTA_CGROUPS_READ);
    *QUOTAS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = quotas;
    let Ok(dir) = std::fs::read_dir("/proc") else { return };
    let found: Vec<File> = dir
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| File::open(e.path().join("stat")).ok())
        .filter(|f| read_stat(f).is_some_and(|p| p.pid == 2 || p.ppid == 2))
        .collect();
    *KERNEL_THREADS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = found;
}

/// User and system ticks so far of the kernel threads [`find_kernel_threads`] found.
fn kernel_thread_ticks() -> u64 {
    let threads = KERNEL_THREADS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    threads.iter().filter_map(read_stat).map(|p| p.ticks).sum()
}

/// Reads an open `/proc/<pid>/stat` afresh (the kernel renders it on every read).
fn read_stat(file: &File) -> Option<ProcessTicks> {
    let mut buf = [0u8; 1024];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_process_stat(std::str::from_utf8(&buf[..n]).ok()?)
}

/// What [`kernel_thread_ticks`] needs of a `/proc/<pid>/stat` line.
#[derive(Debug, PartialEq)]
struct ProcessTicks {
    pid: u64,
    ppid: u64,
    /// utime + stime.
    ticks: u64,
}

fn parse_process_stat(text: &str) -> Option<ProcessTicks> {
    // "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so fields count from the last ')'.
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_once(' ')?.0.trim().parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    // After ')': state is field 3 of proc(5), so field n is at n - 3.
    Some(ProcessTicks { pid, ppid: field(4 - 3)?, ticks: field(14 - 3)? + field(15 - 3)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown_is_fractions_of_the_delta() {
        let a = CpuTicks::parse("cpu  100 0 50 800 10 0 0 0 0 0\ncpu0 1 2 3\n");
        let b = CpuTicks::parse("cpu  160 0 90 900 10 0 0 0 0 0\n");
        let cpu = a.breakdown(&b);
        assert_eq!((cpu.user, cpu.system, cpu.idle, cpu.iowait), (0.3, 0.2, 0.5, 0.0));
        assert_eq!(a.breakdown(&a), SystemCpu::default());
    }

    #[test]
    fn others_share_is_busy_time_not_the_runs_own() {
        let hz = crate::sys::clock_ticks_per_second() as f64;
        // 200 ticks (2 CPUs × 1 s at 100 Hz): 150 busy, 50 idle.
        let a = CpuTicks::parse("cpu  0 0 0 0 0 0 0 0\n");
        let b = CpuTicks::parse("cpu  100 0 50 40 10 0 0 0\n");
        let busy_s = 150.0 / hz;
        let own = busy_s - 50.0 / hz;
        assert!((a.others_share(&b, own).unwrap() - 0.25).abs() < 1e-9, "50 of 200 ticks were others'");
        assert_eq!(a.others_share(&b, busy_s * 2.0), Some(0.0), "never below 0 (tick rounding)");
        assert_eq!(a.others_share(&a, 0.0), None);
        // Kernel threads' 30 ticks come off others' 50.
        let b_with_kernel = CpuTicks { kernel_threads: 30, ..b };
        assert!((a.others_share(&b_with_kernel, own).unwrap() - 0.10).abs() < 1e-9);
        assert_eq!(a.kernel_threads_share(&b_with_kernel), Some(0.15));
    }

    #[test]
    fn reads_process_stat_lines_and_finds_kernel_threads() {
        let line = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 7 11 0 0 20 0 1 0 2 0 0";
        assert_eq!(parse_process_stat(line), Some(ProcessTicks { pid: 2, ppid: 0, ticks: 18 }));
        let odd = "4242 (a) b (c)) R 2 0 0 0 -1 0 0 0 0 0 100 250 0 0 20 0 1 0 2 0 0";
        assert_eq!(parse_process_stat(odd), Some(ProcessTicks { pid: 4242, ppid: 2, ticks: 350 }));
        assert_eq!(parse_process_stat("garbage"), None);
        // Linux always has kthreadd; its stat is readable.
        let own = std::fs::read_to_string("/proc/2/stat").expect("kthreadd");
        assert_eq!(parse_process_stat(&own).map(|p| p.pid), Some(2));
        find_kernel_threads();
        assert!(!KERNEL_THREADS.lock().unwrap().is_empty(), "kthreadd at least");
        assert!(CpuTicks::read().kernel_threads > 0);
    }
}
