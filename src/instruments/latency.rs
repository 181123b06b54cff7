//! `--profile latency`: each system call the workers make in the window,
//! timed in the kernel by the programs of `bpf/latency.bpf.c` and kept as
//! per-CPU log-linear histograms per call number, in groups of 16 buckets.
//! BPF only: through tracefs every call would cost its task a trace record
//! and fsscale a parse.

use std::collections::BTreeMap;

use anyhow::Result;

use super::bpf::shared::{CallGroup, CallGroupKey, CALL_GROUPS, HIST_SUB};
use super::bpf::{Loaded, MapSizes};
use crate::results::kernel_latency::INTERVAL_CALLS;
use crate::results::{CallLatency, IntervalLatency, KernelLatency};
use crate::stats::histogram::{Histogram, BUCKETS};

/// The compiled program (`bpf/build` makes it from its `bpf/*.bpf.c`).
pub(crate) const OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/out/latency.bpf.o");

/// Kernel memory the call histograms may take at most, all CPUs' copies
/// together: a per-CPU entry is on every possible CPU.
const HISTOGRAM_BUDGET: usize = 64 << 20;
/// Entries kept whatever the CPUs: a workload's dozen calls, ten groups each, twice over.
const LEAST_ENTRIES: usize = 256;

/// Histogram entries (a call's group of buckets) for a machine of `cpus`
/// possible CPUs: every group of every call up to 64 CPUs; beyond, what
/// fits [`HISTOGRAM_BUDGET`] (409 at 1,024 CPUs). A full map counts its
/// drops in the profile's lost events.
fn histogram_entries(cpus: usize) -> u32 {
    let per_entry = std::mem::size_of::<CallGroup>() * cpus.max(1);
    (HISTOGRAM_BUDGET / per_entry).clamp(LEAST_ENTRIES, CALL_GROUPS as usize) as u32
}

pub(crate) struct BpfLatency {
    loaded: Loaded,
    /// The workers' ops just before and after the programs went on, and off.
    ops_at: [u64; 4],
    intervals: Intervals,
}

impl BpfLatency {
    pub(crate) fn arm(tasks: &[i32]) -> Result<BpfLatency> {
        let events = [("raw_syscalls", "sys_enter"), ("raw_syscalls", "sys_exit")];
        let cpus = aya::util::nr_cpus().unwrap_or(1);
        let maps = MapSizes { classic_only: &["calls"], sized: &[("latency", histogram_entries(cpus))] };
        let loaded = Loaded::load("--profile latency", OBJECT, &[], &events, &maps, tasks)?;
        Ok(BpfLatency { loaded, ops_at: [0; 4], intervals: Intervals::default() })
    }

    /// Ends a sample interval of the window: each call's buckets since the last.
    pub fn sample(&mut self) -> Result<()> {
        let entries: Vec<(CallGroupKey, Vec<CallGroup>)> = self.loaded.per_cpu_entries("latency")?;
        self.intervals.sample(&entries);
        Ok(())
    }

    /// Forgets the last sample (one the window's end replaces).
    pub fn forget_last_sample(&mut self) {
        self.intervals.pop();
    }

    /// Turns the programs on (`on`) or off, reading `ops` (the workers' op
    /// counters) on both sides: a coordinator that waits for a CPU between
    /// the switch and the window's own count would otherwise make the
    /// calls look more than the ops.
    pub fn switch(&mut self, on: bool, ops: &dyn Fn() -> u64) -> Result<()> {
        let at = if on { 0 } else { 2 };
        self.ops_at[at] = ops();
        self.loaded.switch(on)?;
        self.ops_at[at + 1] = ops();
        Ok(())
    }

    pub fn finish(mut self) -> Result<KernelLatency> {
        self.loaded.switch(false)?;
        let entries: Vec<(CallGroupKey, Vec<CallGroup>)> = self.loaded.per_cpu_entries("latency")?;
        // The last interval, to the window's end.
        self.intervals.sample(&entries);
        let calls = KernelLatency::ranked(summed(&entries));
        let intervals = self.intervals.finish(&calls);
        let [on_before, on_after, off_before, off_after] = self.ops_at;
        Ok(KernelLatency {
            // Fixed work counts no ops while it runs: no bracket.
            ops_counted: (off_after > 0)
                .then(|| [off_before.saturating_sub(on_after), off_after.saturating_sub(on_before)]),
            programs: self.loaded.cost(),
            lost_events: self.loaded.lost()?,
            calls,
            intervals,
        })
    }
}

/// Each call's buckets at the last two samples, and its intervals so far.
#[derive(Default)]
struct Intervals {
    samples: usize,
    last: BTreeMap<u32, Vec<u64>>,
    before_last: BTreeMap<u32, Vec<u64>>,
    by_call: BTreeMap<u32, IntervalLatency>,
}

impl Intervals {
    fn sample(&mut self, entries: &[(CallGroupKey, Vec<CallGroup>)]) {
        let mut now: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for (key, per_cpu) in entries {
            let dense = now.entry(key.nr).or_insert_with(|| vec![0; BUCKETS]);
            for cpu in per_cpu {
                add_group(dense, key.group, cpu);
            }
        }
        for (nr, buckets) in &now {
            let since: Vec<u64> = match self.last.get(nr) {
                Some(last) => buckets.iter().zip(last).map(|(n, l)| n.saturating_sub(*l)).collect(),
                None => buckets.clone(),
            };
            let samples = self.samples;
            // A call first made now had no calls in the intervals before.
            let intervals = self.by_call.entry(*nr).or_insert_with(|| IntervalLatency {
                ops: vec![0; samples],
                p50_ns: vec![0; samples],
                p99_ns: vec![0; samples],
            });
            intervals.record(&since);
        }
        self.before_last = std::mem::replace(&mut self.last, now);
        self.samples += 1;
    }

    fn pop(&mut self) {
        for intervals in self.by_call.values_mut() {
            intervals.pop();
        }
        self.by_call.retain(|_, i| !i.ops.is_empty());
        self.last = std::mem::take(&mut self.before_last);
        self.samples = self.samples.saturating_sub(1);
    }

    /// The intervals of the most made of `calls` (ranked), by name.
    fn finish(mut self, calls: &[CallLatency]) -> BTreeMap<String, IntervalLatency> {
        let number = |name: &str| self.by_call.keys().copied().find(|nr| syscall_name(*nr) == name);
        let kept: Vec<u32> = calls.iter().take(INTERVAL_CALLS).filter_map(|c| number(&c.call)).collect();
        kept.into_iter().filter_map(|nr| Some((syscall_name(nr), self.by_call.remove(&nr)?))).collect()
    }
}

/// Adds one CPU's counts of bucket group `group` to `dense` (the
/// histogram's buckets); a group past the last bucket, which no program
/// makes, goes to the last.
fn add_group(dense: &mut [u64], group: u32, cpu: &CallGroup) {
    let first = group as usize * HIST_SUB;
    for (i, &n) in cpu.slots.iter().enumerate() {
        dense[(first + i).min(BUCKETS - 1)] += n;
    }
}

/// Each call number's groups, on every CPU, as one histogram per call.
fn summed(entries: &[(CallGroupKey, Vec<CallGroup>)]) -> Vec<CallLatency> {
    let mut by_call: BTreeMap<u32, (Vec<u64>, u64, u64, u64)> = BTreeMap::new();
    for (key, per_cpu) in entries {
        let (dense, sum, min, max) = by_call.entry(key.nr).or_insert_with(|| (vec![0; BUCKETS], 0, u64::MAX, 0));
        for cpu in per_cpu.iter().filter(|c| c.count > 0) {
            *sum += cpu.total_ns;
            *min = (*min).min(cpu.min_ns);
            *max = (*max).max(cpu.max_ns);
            add_group(dense, key.group, cpu);
        }
    }
    by_call
        .into_iter()
        .filter_map(|(nr, (dense, sum_ns, min_ns, max_ns))| {
            let ns = Histogram::from_dense(&dense, sum_ns, min_ns, max_ns);
            (ns.count > 0).then(|| CallLatency {
                call: syscall_name(nr),
                count: ns.count,
                total_s: sum_ns as f64 / 1e9,
                ns: Some(ns),
                log2_ns: Vec::new(),
            })
        })
        .collect()
}

/// A system call's name on this architecture, from libc's numbers;
/// `syscall N` for one not listed.
pub(crate) fn syscall_name(nr: u32) -> String {
    let named = COMMON.iter().chain(LEGACY).find(|(n, _)| *n == i64::from(nr));
    named.map_or_else(|| format!("syscall {nr}"), |(_, constant)| constant.trim_start_matches("SYS_").to_string())
}

macro_rules! numbers {
    ($($constant:ident),* $(,)?) => {
        &[$((libc::$constant as i64, stringify!($constant))),*]
    };
}

/// Calls every architecture has: the filesystem's, and the common rest.
const COMMON: &[(i64, &str)] = numbers![
    SYS_read,
    SYS_write,
    SYS_close,
    SYS_fstat,
    SYS_lseek,
    SYS_mmap,
    SYS_munmap,
    SYS_brk,
    SYS_pread64,
    SYS_pwrite64,
    SYS_readv,
    SYS_writev,
    SYS_sched_yield,
    SYS_madvise,
    SYS_nanosleep,
    SYS_clock_nanosleep,
    SYS_getpid,
    SYS_gettid,
    SYS_clone,
    SYS_clone3,
    SYS_execve,
    SYS_exit,
    SYS_exit_group,
    SYS_wait4,
    SYS_kill,
    SYS_fcntl,
    SYS_flock,
    SYS_fsync,
    SYS_fdatasync,
    SYS_sync,
    SYS_syncfs,
    SYS_sync_file_range,
    SYS_truncate,
    SYS_ftruncate,
    SYS_fallocate,
    SYS_getdents64,
    SYS_getcwd,
    SYS_chdir,
    SYS_fchdir,
    SYS_fchmod,
    SYS_fchown,
    SYS_statfs,
    SYS_fstatfs,
    SYS_openat,
    SYS_openat2,
    SYS_mkdirat,
    SYS_mknodat,
    SYS_fchownat,
    SYS_newfstatat,
    SYS_unlinkat,
    SYS_renameat,
    SYS_renameat2,
    SYS_linkat,
    SYS_symlinkat,
    SYS_readlinkat,
    SYS_fchmodat,
    SYS_faccessat,
    SYS_faccessat2,
    SYS_utimensat,
    SYS_statx,
    SYS_futex,
    SYS_getxattr,
    SYS_setxattr,
    SYS_lgetxattr,
    SYS_fgetxattr,
    SYS_listxattr,
    SYS_rt_sigaction,
    SYS_rt_sigprocmask,
    SYS_rt_sigreturn,
    SYS_ioctl,
    SYS_pipe2,
    SYS_dup,
    SYS_dup3,
    SYS_ppoll,
    SYS_pselect6,
    SYS_epoll_pwait,
    SYS_mprotect,
    SYS_io_uring_enter,
    SYS_io_submit,
    SYS_io_getevents,
    SYS_copy_file_range,
    SYS_splice,
    SYS_sendfile,
    SYS_getrandom,
    SYS_prlimit64,
    SYS_set_robust_list,
    SYS_rseq,
    SYS_close_range,
    SYS_sched_getaffinity,
    SYS_sched_setaffinity,
    SYS_getrusage,
    SYS_perf_event_open,
    SYS_bpf,
    SYS_mount,
    SYS_umount2,
    SYS_readahead,
];

/// The older calls x86-64 keeps beside their `*at` forms.
#[cfg(target_arch = "x86_64")]
const LEGACY: &[(i64, &str)] = numbers![
    SYS_open,
    SYS_stat,
    SYS_lstat,
    SYS_creat,
    SYS_unlink,
    SYS_mkdir,
    SYS_rmdir,
    SYS_rename,
    SYS_link,
    SYS_symlink,
    SYS_readlink,
    SYS_chmod,
    SYS_chown,
    SYS_access,
    SYS_getdents,
    SYS_poll,
    SYS_select,
    SYS_pipe,
    SYS_dup2,
    SYS_fork,
    SYS_vfork,
    SYS_epoll_wait,
    SYS_utime,
    SYS_utimes,
    SYS_futimesat,
];
#[cfg(not(target_arch = "x86_64"))]
const LEGACY: &[(i64, &str)] = &[];

/// `--profile latency`'s measuring half: BPF only.
pub(crate) struct LatencyRecorder;

impl super::Recorder for LatencyRecorder {
    fn needs(&self, _config: &super::InstrumentConfig) -> super::Needs {
        use crate::sys::cap;
        super::Needs {
            caps: vec![
                (cap::BPF, "BPF programs"),
                (cap::PERFMON, "perf events of every CPU"),
                (cap::SYSLOG, "kernel symbols"),
            ],
            // Its fallback, classic tracepoints, needs tracefs.
            tracefs: true,
            ..super::Needs::default()
        }
    }

    fn bpf_refused(&self, _config: &super::InstrumentConfig) -> Option<String> {
        super::bpf::unavailable().or_else(|| BpfLatency::arm(&[]).err().map(|e| format!("{e:#}")))
    }

    fn arm(&self, run: &super::ArmFor<'_>) -> Result<Option<Box<dyn super::Armed>>> {
        let tasks = run.tasks;
        Ok(Some(Box::new(BpfLatency::arm(tasks)?)))
    }
}

impl super::Armed for BpfLatency {
    fn start(&mut self, ops: &dyn Fn() -> u64) -> Result<()> {
        self.switch(true, ops)
    }
    fn drain(&mut self) -> Result<()> {
        self.sample()
    }
    fn forget_last_sample(&mut self) {
        BpfLatency::forget_last_sample(self)
    }
    fn stop(&mut self, ops: &dyn Fn() -> u64) -> Result<()> {
        self.switch(false, ops)
    }
    fn finish(self: Box<Self>, record: &mut crate::results::RunRecord) -> Result<()> {
        record.sections.kernel_latency = Some(BpfLatency::finish(*self)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_named_as_the_kernel_numbers_them_here() {
        assert_eq!(syscall_name(libc::SYS_openat as u32), "openat");
        assert_eq!(syscall_name(libc::SYS_close as u32), "close");
        assert_eq!(syscall_name(100_000), "syscall 100000");
    }

    /// `ns` recorded as the programs record them, spread over `cpus` CPUs.
    fn as_the_programs_keep(nr: u32, ns: &[u64], cpus: usize) -> Vec<(CallGroupKey, Vec<CallGroup>)> {
        // Zeroed, as the kernel leaves an entry on the CPUs other than the one that made it.
        let empty = CallGroup { count: 0, total_ns: 0, min_ns: 0, max_ns: 0, slots: [0; HIST_SUB] };
        let mut groups: BTreeMap<u32, Vec<CallGroup>> = BTreeMap::new();
        for (i, &took) in ns.iter().enumerate() {
            let bucket = crate::stats::histogram::bucket_of(took);
            let g = &mut groups.entry((bucket / HIST_SUB) as u32).or_insert_with(|| vec![empty; cpus])[i % cpus];
            g.min_ns = if g.count == 0 { took } else { g.min_ns.min(took) };
            g.count += 1;
            g.total_ns += took;
            g.max_ns = g.max_ns.max(took);
            g.slots[bucket % HIST_SUB] += 1;
        }
        groups.into_iter().map(|(group, per_cpu)| (CallGroupKey { nr, group }, per_cpu)).collect()
    }

    #[test]
    fn per_cpu_groups_sum_into_one_histogram_per_call_within_a_sixteenth() {
        // Known times: a cached openat's microsecond, a few slow ones, one 4.89 µs fsync.
        let openat: Vec<u64> = (0..10_000u64).map(|i| 1_000 + (i * 37) % 500).chain([80_000, 2_000_000]).collect();
        let mut entries = as_the_programs_keep(libc::SYS_openat as u32, &openat, 3);
        entries.extend(as_the_programs_keep(libc::SYS_fsync as u32, &[4_890], 3));
        let calls = KernelLatency::ranked(summed(&entries));
        let names: Vec<(&str, u64)> = calls.iter().map(|c| (c.call.as_str(), c.count)).collect();
        assert_eq!(names, [("openat", 10_002), ("fsync", 1)]);
        assert_eq!(calls[0].ns.as_ref(), Some(&Histogram::of(&openat)), "exactly the histogram of the times");
        let mut sorted = openat.clone();
        sorted.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = sorted[((q * sorted.len() as f64).ceil() as usize).max(1) - 1] as f64;
            let printed = calls[0].quantile_s(q).unwrap() * 1e9;
            assert!(exact <= printed && printed <= exact * 17.0 / 16.0, "p{q}: {printed} against {exact}");
        }
        assert_eq!(calls[1].quantile_s(0.5), Some(4.89e-6), "a call made once: its own time");
        assert!((calls[0].total_s - openat.iter().sum::<u64>() as f64 / 1e9).abs() < 1e-12);
    }

    #[test]
    fn each_interval_has_each_calls_percentiles_and_a_call_first_made_later_has_none_before() {
        let openat = libc::SYS_openat as u32;
        let fsync = libc::SYS_fsync as u32;
        let mut intervals = Intervals::default();
        // The programs' maps only grow: each sample reads the sums so far.
        let mut so_far: Vec<u64> = (0..100).map(|_| 1_000).collect();
        intervals.sample(&as_the_programs_keep(openat, &so_far, 2));
        so_far.extend((0..100).map(|_| 8_000));
        let mut both = as_the_programs_keep(openat, &so_far, 2);
        both.extend(as_the_programs_keep(fsync, &[2_000_000], 2));
        intervals.sample(&both);
        // A sample the window's end replaces, then the end.
        so_far.extend((0..50).map(|_| 1_000_000));
        let mut later = as_the_programs_keep(openat, &so_far, 2);
        later.extend(as_the_programs_keep(fsync, &[2_000_000], 2));
        intervals.sample(&later);
        intervals.pop();
        intervals.sample(&later);
        let calls = KernelLatency::ranked(summed(&later));
        let kept = intervals.finish(&calls);
        let bound = |v: u64| Histogram { min_ns: 0, max_ns: u64::MAX, ..Histogram::of(&[v]) }.quantile(1.0);
        let o = &kept["openat"];
        assert_eq!(o.ops, [100, 100, 50]);
        assert_eq!(o.p50_ns, [bound(1_000), bound(8_000), bound(1_000_000)]);
        let f = &kept["fsync"];
        assert_eq!((f.ops.as_slice(), f.p99_ns.as_slice()), (&[0, 1, 0][..], &[0, bound(2_000_000), 0][..]));
    }

    #[test]
    fn the_histograms_fit_the_budget_on_a_thousand_cpus_and_keep_every_group_on_few() {
        assert_eq!(histogram_entries(2), CALL_GROUPS);
        assert_eq!(histogram_entries(64), CALL_GROUPS);
        let big = histogram_entries(1024) as usize;
        assert!(big >= LEAST_ENTRIES && big * std::mem::size_of::<CallGroup>() * 1024 <= HISTOGRAM_BUDGET);
    }
}
