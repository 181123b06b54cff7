//! One run of a point as the results record it: its figures, what the
//! workers and the machine did during it, and its writeback.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sections::Sections;
use crate::stats::histogram::Histogram;
use crate::vocab::DeviceIo;
use crate::vocab::OpKind;

/// One repetition of a point, in its own fresh scratch directory.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// Its index among the point's runs (or warm-up runs).
    pub run: usize,
    /// Its place in the order of all runs of the results file, warm-ups included, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// When it started, RFC 3339 in UTC to the millisecond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// What its `--variant` setup wrote to stderr (the last lines), though
    /// it exited 0: a setting that may not have taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_stderr: Option<String>,
    /// Ops completed inside the timed window, all workers together.
    pub ops: u64,
    /// Exact length of the timed window.
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    pub ops_per_s_per_worker: f64,
    /// Ops of each worker inside the window, by worker index (fairness).
    pub per_worker_ops: Vec<u64>,
    /// Fixed-time loops: every op the workers made in the run, all workers
    /// together: warm-up, the window, and each worker's ops between the
    /// window's edges and its seeing them. Each op's system calls, counted
    /// from outside (strace, a tracer), match these exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_made: Option<u64>,
    /// CPU each worker was bound to, by worker index, with `--pin`.
    pub pinned_cpus: Option<Vec<usize>>,
    pub worker_cpu: WorkerCpu,
    pub system_cpu: SystemCpu,
    pub timeline: Timeline,
    /// Fixed work: each worker's time from the common start to its completion
    /// (the run's `elapsed_s` is the slowest); absent for fixed-time loops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_s: Option<Vec<f64>>,
    /// Fixed work: bytes of file data written by all workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The backing block device's I/O during the window (made filesystems only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_io: Option<DeviceIo>,
    /// Fixed work: a `syncfs` right after the job, timed apart from it, and
    /// the device I/O until it returned: what was still in the page cache
    /// when the job's clock stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback: Option<Writeback>,
    /// How busy the machine was with other work (see [`RunNoise`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<RunNoise>,
    /// What the scheduler did to each worker in the window, by worker index
    /// (see [`WorkerSched`]); absent for drivers and where unreadable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched: Vec<WorkerSched>,
    /// The machine's counters that changed over the window, by name
    /// (`vmstat.pgfault`, `softirqs.TIMER`, `interrupts`, `fs.dentries`,
    /// `slab.dentry`; docs/RESULTS.md lists them): counters' increments and
    /// levels' changes, unchanged ones left out. Under MPI, rank 0's node's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub system_stats: BTreeMap<String, i64>,
    /// The instruments' sections (`--profile`, `--verify`), written flat
    /// into the record as they always were (`"locks": {...}`).
    #[serde(flatten)]
    pub sections: Sections,
    /// Latency of the window's ops, all workers merged (`--latency`; `replay`: all kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Histogram>,
    /// An open-loop run (`--rate`): the rate asked, and each op's response
    /// and service time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<super::OpenLoop>,
    /// `replay`: latency (and so count) of each operation kind in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_ops: Option<BTreeMap<OpKind, Histogram>>,
    /// Under MPI: the work of each node's ranks, nodes in order of their lowest rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeOps>>,
    /// A walk shared by MPI ranks (`traverse --share shared`): the messages
    /// each walking rank sent and received, in worker order. No hub: the
    /// busiest is within about twice the mean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub walk_messages: Vec<u64>,
    /// A walk shared through a queue (`traverse --share shared`): what each
    /// walker did with it, in worker order. Why a second walker is or is
    /// not faster: the work it stole, how long it waited for work, how
    /// often it found the queue locked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub walk: Vec<WalkRecord>,
    /// A warm-up run that lasted until its rate was steady: how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyOutcome>,
}

/// One walker's part of a shared walk (see [`RunRecord::walk`]).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct WalkRecord {
    /// Directories it listed.
    pub dirs: u64,
    /// Directories it took from the queue that another walker (or rank) had put there.
    pub stolen: u64,
    /// Directories it put on the queue for others.
    pub given: u64,
    /// Seconds it waited with nothing to list.
    pub idle_s: f64,
    /// Times it found the queue's lock held.
    pub lock_waits: u64,
}

/// How a warm-up run that ran until steady ended (see [`crate::stats::steady::SteadyRule`]).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct SteadyOutcome {
    /// Its last two blocks of windows agreed within the rule's tolerance;
    /// false: `--warmup-max` ended it first.
    pub reached: bool,
    /// The change between those blocks' mean rates, percent (absent when
    /// the run was too short to have two blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
}

/// One node's part of an MPI run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NodeOps {
    pub host: String,
    /// Ranks of the node that served workers.
    pub ranks: usize,
    /// Their ops (fixed work: entries) in their windows.
    pub ops: u64,
    /// Their ops per second: each rank's over its own window, summed (fixed
    /// work: over the run's time, the slowest worker's).
    pub ops_per_s: f64,
}

/// The writeback after a fixed-work job (see [`RunRecord::writeback`]).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct Writeback {
    /// How long `syncfs` took.
    pub sync_s: f64,
    /// The device's I/O during it (made filesystems on a block device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_io: Option<DeviceIo>,
}

/// What else the machine was doing during a run.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct RunNoise {
    /// The share of all CPU time in the window that went to other processes
    /// (and a hypervisor's steal): `/proc/stat`'s busy time less the run's own
    /// (its workers and the commands they ran) and less kernel threads'. For
    /// a driver, the server it drives counts here.
    pub others_cpu: f64,
    /// The share that kernel threads used (RCU, writeback, kworkers: mostly
    /// working for the run), kept out of `others_cpu`.
    #[serde(default)]
    pub kernel_threads_cpu: f64,
    /// The 1-minute load average when the run started (it includes the run's own recent workers).
    pub load_1m: f64,
    /// Clock ticks of all CPUs in the window: `others_cpu` is good to about 1/ticks.
    #[serde(default)]
    pub ticks: u64,
    /// Time a CPU quota on the run's cgroup (CFS bandwidth: cgroup v2
    /// `cpu.max`, v1 `cpu.cfs_quota_us`) held it off the CPUs in the window,
    /// summed over CPUs (`cpu.stat`'s throttled time); absent without a quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<RunThrottling>,
}

/// A CPU quota's throttling in one run's window.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct RunThrottling {
    /// The quota, in CPUs (the tightest of the run's cgroups and their ancestors').
    pub quota_cpus: f64,
    /// Throttled time, summed over CPUs.
    pub throttled_s: f64,
    /// Enforcement periods in the window, and those in which the quota ran out.
    pub periods: u64,
    pub throttled_periods: u64,
}

/// One worker in one window, as its scheduler saw it: on a CPU, runnable
/// but waiting for one (the runqueue), or neither (sleeping: on a lock, on
/// I/O). Runqueue time says "not scheduled"; a worker that is neither on a
/// CPU nor waiting for one was blocked.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct WorkerSched {
    /// The worker's own window: from when it saw the window open (or its
    /// fixed work start) to when it saw it close (or finished).
    #[serde(default)]
    pub window_s: f64,
    /// Time on a CPU (`/proc/<tid>/schedstat`, field 1).
    pub on_cpu_s: f64,
    /// Time runnable but waiting on a runqueue (`/proc/<tid>/schedstat`, field 2).
    pub runqueue_s: f64,
    /// Context switches it made by sleeping (`ru_nvcsw`).
    pub voluntary_switches: u64,
    /// Context switches forced on it by preemption (`ru_nivcsw`).
    pub involuntary_switches: u64,
    /// Page faults served without I/O (`ru_minflt`); absent in files from before it was kept.
    #[serde(default)]
    pub minor_faults: u64,
    /// Page faults that waited for I/O (`ru_majflt`).
    #[serde(default)]
    pub major_faults: u64,
    /// Moves to another CPU (`/proc/<tid>/sched`'s `se.nr_migrations`; 0
    /// where the kernel has no scheduler debug file).
    #[serde(default)]
    pub migrations: u64,
}

impl RunRecord {
    /// A CPU quota's throttling, where the quota ran out in the run's window.
    pub fn throttled(&self) -> Option<RunThrottling> {
        self.noise?.throttled.filter(|t| t.throttled_periods > 0 && t.throttled_s > 0.0)
    }

    /// Whether other work took the machine during the run: more than
    /// [`super::BUSY_SHARE`] of all CPU time beyond two ticks of
    /// `/proc/stat`'s resolution. Where a CPU quota throttled the run, the
    /// tick-sampled `/proc/stat` counts some of the quota's idle as busy
    /// (3-10% of a 2-CPU VM seen at a 0.5-CPU quota, nothing else running),
    /// so such a run is busy only where its workers waited for a CPU
    /// beyond the time the quota held them off: by more than that share
    /// of their windows.
    pub(crate) fn was_busy(&self) -> bool {
        let Some(noise) = &self.noise else { return false };
        let sampled = noise.others_cpu > super::BUSY_SHARE + 2.0 / noise.ticks.max(1) as f64;
        match (self.throttled(), self.sched.is_empty()) {
            (Some(quota), false) => {
                let waited: f64 = self.sched.iter().map(|w| w.runqueue_s).sum();
                let windows: f64 = self.sched.iter().map(|w| w.window_s).sum();
                windows > 0.0 && (waited - quota.throttled_s) / windows > super::BUSY_SHARE
            }
            _ => sampled,
        }
    }

    /// Ops per second of the workers' own CPU time (user and system, their
    /// children's included) in the window: on a shared machine it moves far
    /// less with other load than ops/s does. `None` without CPU time.
    pub fn ops_per_cpu_s(&self) -> Option<f64> {
        let cpu = self.worker_cpu.user_s + self.worker_cpu.sys_s;
        // Below a microsecond no clock measured it: a figure of it would be noise, or infinite.
        let rate = (cpu >= 1e-6).then(|| self.ops as f64 / cpu)?;
        (rate.is_finite() && rate <= super::check::MAX_FIGURE).then_some(rate)
    }

    /// Each worker's shares of its own window spent runnable but waiting
    /// for a CPU, and neither on one nor waiting (asleep: blocked on a lock,
    /// on I/O, on a child).
    pub fn worker_sched_shares(&self) -> Vec<SchedShares> {
        (self.sched.iter())
            .filter(|w| w.window_s > 0.0)
            .map(|w| SchedShares {
                runqueue: (w.runqueue_s / w.window_s).min(1.0),
                asleep: (1.0 - (w.on_cpu_s + w.runqueue_s) / w.window_s).clamp(0.0, 1.0),
            })
            .collect()
    }

    /// [`RunRecord::worker_sched_shares`], mean over the workers; `None` without scheduler figures.
    pub fn sched_shares(&self) -> Option<SchedShares> {
        let shares = self.worker_sched_shares();
        let n = shares.len() as f64;
        (!shares.is_empty()).then(|| SchedShares {
            runqueue: shares.iter().map(|s| s.runqueue).sum::<f64>() / n,
            asleep: shares.iter().map(|s| s.asleep).sum::<f64>() / n,
        })
    }
}

/// [`RunRecord::sched_shares`]: fractions of the workers' windows, mean over workers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchedShares {
    pub runqueue: f64,
    pub asleep: f64,
}

/// CPU time the workers themselves used inside the window (`getrusage(RUSAGE_THREAD)`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct WorkerCpu {
    pub user_s: f64,
    pub sys_s: f64,
}

/// System-wide CPU breakdown over the window from `/proc/stat`, as fractions of all CPU time.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct SystemCpu {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

/// Total ops counted at each sample, from the start of the window.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Timeline {
    pub interval_s: f64,
    /// Seconds since the window opened, one per sample (the last is the window's end).
    pub at_s: Vec<f64>,
    pub cumulative_ops: Vec<u64>,
    /// `--latency` (and `replay`'s ops): the latency of the ops finished in
    /// each interval, one entry per sample (interval `i` ends at `at_s[i]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<IntervalLatency>,
}

/// Per-interval percentiles, each the upper bound of its log-linear bucket
/// (within 1/16 above the true one); 0 for an interval in which no op finished.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct IntervalLatency {
    pub ops: Vec<u64>,
    pub p50_ns: Vec<u64>,
    pub p99_ns: Vec<u64>,
}

impl IntervalLatency {
    /// Adds an interval's ops from their bucket counts (the histogram's layout).
    pub fn record(&mut self, buckets: &[u64]) {
        self.ops.push(buckets.iter().sum());
        self.p50_ns.push(crate::stats::histogram::dense_quantile(buckets, 0.50).unwrap_or(0));
        self.p99_ns.push(crate::stats::histogram::dense_quantile(buckets, 0.99).unwrap_or(0));
    }

    /// Drops the last interval (a sample the window's end replaces).
    pub fn pop(&mut self) {
        self.ops.pop();
        self.p50_ns.pop();
        self.p99_ns.pop();
    }

    /// `(seconds since the window opened, p50 ns, p99 ns)` of the intervals
    /// in which ops finished; a received file's lists are read only as far
    /// as all three and the samples go.
    pub fn intervals<'a>(&'a self, at_s: &'a [f64]) -> impl Iterator<Item = (f64, u64, u64)> + 'a {
        at_s.iter()
            .zip(&self.ops)
            .zip(self.p50_ns.iter().zip(&self.p99_ns))
            .filter(|((_, ops), _)| **ops > 0)
            .map(|((at, _), (p50, p99))| (*at, *p50, *p99))
    }
}

impl Timeline {
    /// Adds a sample: `ops` counted `since_start_ns` after the window opened.
    pub fn record(&mut self, since_start_ns: u64, ops: u64) {
        self.at_s.push(since_start_ns as f64 / 1e9);
        self.cumulative_ops.push(ops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::run;

    #[test]
    fn the_instruments_sections_are_written_flat_in_the_run_as_files_always_had_them() {
        let mut r = run(0, &[10], 1.0);
        r.sections.cpu_profile = Some(crate::results::fixtures::cpu_profile(&[("f;g", 3)]));
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["cpu_profile"]["samples"], 3, "{json}");
        assert!(json.get("sections").is_none() && json.get("locks").is_none(), "{json}");
        let back: RunRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
    }

    fn worker(window_s: f64, on_cpu_s: f64, runqueue_s: f64) -> WorkerSched {
        WorkerSched { window_s, on_cpu_s, runqueue_s, ..Default::default() }
    }

    #[test]
    fn a_throttled_run_is_busy_only_by_the_wait_its_quota_does_not_explain() {
        let quota =
            |throttled_s: f64| RunThrottling { quota_cpus: 0.85, throttled_s, periods: 10, throttled_periods: 10 };
        let at = |others_cpu: f64, throttled: Option<RunThrottling>, runqueue_s: f64| {
            let mut r = run(0, &[10], 1.0);
            r.noise = Some(RunNoise { others_cpu, ticks: 500, throttled, ..Default::default() });
            r.sched = vec![worker(1.0, 1.0 - runqueue_s, runqueue_s)];
            r
        };
        // Unthrottled: /proc/stat's others decide.
        assert!(at(0.08, None, 0.0).was_busy());
        assert!(!at(0.02, None, 0.3).was_busy());
        // Throttled 15%, waiting 15%: the quota's wait, however /proc/stat sampled it.
        let capped = at(0.08, Some(quota(0.15)), 0.15);
        assert!(!capped.was_busy());
        assert_eq!(capped.throttled().map(|t| t.quota_cpus), Some(0.85));
        // Waiting 30% with 15% throttled: other work took the rest.
        assert!(at(0.0, Some(quota(0.15)), 0.30).was_busy());
        // A quota that never ran out throttled nothing: /proc/stat decides.
        let unused = RunThrottling { throttled_periods: 0, throttled_s: 0.0, ..quota(0.0) };
        assert!(at(0.08, Some(unused), 0.0).was_busy());
        assert_eq!(at(0.08, Some(unused), 0.0).throttled(), None);
    }

    #[test]
    fn sched_shares_are_of_each_workers_own_window() {
        let mut r = run(0, &[10, 10], 2.0);
        r.sched = vec![worker(2.0, 0.5, 1.5), worker(2.0, 1.0, 0.0)];
        let shares = r.worker_sched_shares();
        assert_eq!(shares, [SchedShares { runqueue: 0.75, asleep: 0.0 }, SchedShares { runqueue: 0.0, asleep: 0.5 }]);
        assert_eq!(r.sched_shares(), Some(SchedShares { runqueue: 0.375, asleep: 0.25 }));
        // Its own window: a worker that ran 1 s of its 1 s never slept.
        r.sched[1].window_s = 1.0;
        assert_eq!(r.worker_sched_shares()[1], SchedShares { runqueue: 0.0, asleep: 0.0 });
        r.sched.clear();
        assert_eq!(r.sched_shares(), None);
    }
}

/// A figure every run has (or may have), for `export --figure`: what
/// ministat compares, run by run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFigure {
    /// The point's own figure: ops/s (fixed work: entries/s; a driver's metric).
    Rate,
    /// The run's time: the window, or for fixed work the slowest worker's.
    Elapsed,
    /// The workers' user CPU seconds.
    User,
    /// The workers' system CPU seconds.
    Sys,
    /// User and system together.
    Cpu,
    /// Fixed work: the syncfs after the job.
    Sync,
    /// Share of the workers' window runnable but waiting for a CPU.
    Runq,
    /// Share of the workers' window asleep.
    Asleep,
    /// Ops per second per worker.
    PerWorker,
    /// Ops per worker CPU-second.
    OpsPerCpuS,
}

crate::choice!(RunFigure {
    Rate => "rate",
    Elapsed => "elapsed",
    User => "user",
    Sys => "sys",
    Cpu => "cpu",
    Sync => "sync",
    Runq => "runq",
    Asleep => "asleep",
    PerWorker => "per-worker",
    OpsPerCpuS => "ops-per-cpu-s",
});

impl RunFigure {
    /// The figure of `run`, when it was measured.
    pub fn of(self, run: &RunRecord) -> Option<f64> {
        match self {
            RunFigure::Rate => Some(run.ops_per_s),
            RunFigure::Elapsed => Some(run.elapsed_s),
            RunFigure::User => Some(run.worker_cpu.user_s),
            RunFigure::Sys => Some(run.worker_cpu.sys_s),
            RunFigure::Cpu => Some(run.worker_cpu.user_s + run.worker_cpu.sys_s),
            RunFigure::Sync => run.writeback.map(|w| w.sync_s),
            RunFigure::Runq => run.sched_shares().map(|s| s.runqueue),
            RunFigure::Asleep => run.sched_shares().map(|s| s.asleep),
            RunFigure::PerWorker => Some(run.ops_per_s_per_worker),
            RunFigure::OpsPerCpuS => run.ops_per_cpu_s(),
        }
    }

    /// What it is counted in; `rate` is the point's own unit.
    pub fn unit(self, point_unit: &str) -> String {
        match self {
            RunFigure::Rate => point_unit.to_string(),
            RunFigure::Elapsed | RunFigure::User | RunFigure::Sys | RunFigure::Cpu | RunFigure::Sync => "s".into(),
            RunFigure::Runq | RunFigure::Asleep => "share of the window".into(),
            RunFigure::PerWorker => format!("{point_unit} per worker"),
            RunFigure::OpsPerCpuS => "ops per worker CPU-second".into(),
        }
    }
}
