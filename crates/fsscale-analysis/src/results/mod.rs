//! The results document: typed, versioned JSON, rewritten after every
//! finished run so that a crash or Ctrl-C loses nothing already measured.

pub mod bounds;
pub use bounds::Cut;
mod check;
pub mod cluster;
mod host;
mod journal;
pub mod kernel_latency;
pub mod objective;
pub mod offcpu;
mod open_loop;
pub mod profile;
mod run;
pub mod sections;
pub(crate) mod stacks;
mod target;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use crate::sys::{mounts, Mount};
pub use host::Host;
pub use journal::{journal_path, Saver};
pub use kernel_latency::{CallLatency, KernelLatency};
pub use offcpu::{OffCpuProfile, SleepSite};
pub use open_loop::{fell_behind, OpenLoop, KEEPS_UP};
pub use profile::{
    Attach, Collector, CpuProfile, FunctionShare, LockHolder, LockObject, LockProfile, LockSite, ProgramCost,
    SyscallCheck, SyscallCount,
};
pub use run::{
    IntervalLatency, NodeOps, RunFigure, RunNoise, RunRecord, RunThrottling, SchedShares, SteadyOutcome, SystemCpu,
    Timeline, WalkRecord, WorkerCpu, WorkerSched, Writeback,
};
pub use sections::Sections;
pub use target::Target;

use crate::stats::diagnostics::{diagnose, Diagnostics};
use crate::stats::histogram::{Histogram, Percentiles};
use crate::stats::{Sample, Summary};
use crate::vocab::OpKind;
use crate::vocab::{Cache, Fresh, FsRecord, InstrumentConfig, Mode, Order};
use crate::vocab::{Share, Workload};

/// Bumped whenever a field changes meaning or disappears (adding fields does not).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ResultsFile {
    pub schema_version: u32,
    pub tool: Tool,
    pub command_line: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: Status,
    /// Why the run stopped early, when it did.
    pub error: Option<String>,
    pub host: Host,
    pub target: Target,
    pub settings: Settings,
    pub points: Vec<Point>,
    /// `--label`: what this run is called in comparisons, reports and plots
    /// (instead of its file's path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `--note`: what the person who ran it wanted to remember of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `--rev`: the revision measured (a commit, a kernel version), by
    /// which the history names the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// A random name for the run that wrote this document; its journal
    /// carries it, so a journal of another run at the same path is never folded in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// An MPI job's ranks were the workers (absent on one machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<cluster::ClusterInfo>,
    /// `run --resume`: each invocation that continued the run, with the runs
    /// it found (runs at `position` from `first_position` on are its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumed>,
    /// The `--variant` whose setup ran and whose teardown has not (yet):
    /// in a file a killed run left, the setup that may still be in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_in_effect: Option<String>,
    /// What reading it passed over (a journal line that does not parse);
    /// never written, said with the completeness warnings.
    #[serde(skip)]
    pub read_notes: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Complete => "complete",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }
}

/// One `run --resume` of the document.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Resumed {
    pub at: String,
    /// Runs (warm-ups included) it kept from before.
    pub runs_kept: usize,
    /// The `position` of its first run.
    pub first_position: usize,
    /// The machine it ran on, when not the one [`ResultsFile::host`]
    /// describes (`--resume --force` on another host, kernel or CPU set):
    /// its runs were measured there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Settings {
    pub duration_s: f64,
    pub warmup_s: f64,
    pub runs: usize,
    /// Warm-up runs of every point (`--warmup-runs`), kept in `Point::warmup_runs`.
    #[serde(default)]
    pub warmup_runs: usize,
    /// Fixed-time loops' warm-up runs lasted until their rate was steady by this rule (`--warmup-max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_until_steady: Option<crate::stats::steady::SteadyWarmup>,
    /// `--variant`: the configurations every point ran under, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<crate::vocab::Variant>,
    /// The order of the runs (`--order`); absent in files from before it was chosen (sequential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// The seed of a shuffled order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// `--until-ci`: points were repeated until their mean's 95% CI was within ± this percentage, or `max_runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ci_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<usize>,
    pub sample_interval_s: f64,
    pub pin: bool,
    /// `--pin`: the CPUs in the order workers are bound to them (worker i
    /// to the i-th, modulo their count): cores first, then their SMT
    /// siblings, socket by socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_order: Option<Vec<usize>>,
    /// The archive `untar` extracted, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untar: Option<UntarSettings>,
    /// `--latency`: fixed-time loops timed every op.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency: bool,
    /// `--profile` and `--verify`: the instruments every run had on (their
    /// cost is in the figures; see docs/INSTRUMENTS.md).
    #[serde(default, skip_serializing_if = "is_default")]
    pub instruments: InstrumentConfig,
    /// The `command` workload's templates, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandSettings>,
    /// The trace `replay` played, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySettings>,
    /// How commands (`command`, `--extract-cmd`) were kept from outliving a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<String>,
    /// How often made filesystems were made anew (`--fresh`), when `--fs` made any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh: Option<Fresh>,
    /// `traverse --tree`: the tree walked, as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walked_tree: Option<WalkedTree>,
    /// With mdtest phases: `items` per worker, `write_bytes`, `stonewall_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mdtest: Option<MdtestSettings>,
    /// `stat`, `open-close` and the mdtest phases: the shape of their lookups, when not one hot
    /// relative name (`--files`, `--depth`, `--path`, `--random`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup: Option<crate::vocab::LookupShape>,
    /// `append-grow`: the bytes each worker appended (`--grow-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grow_bytes: Option<u64>,
    /// `fault-shared`, `fault-private`: bytes mapped at once (`--map-size`);
    /// absent in files from before it was chosen, which mapped 4 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_bytes: Option<u64>,
    /// `--memory-limit`: the memory cgroup the run's processes ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<MemoryLimitSettings>,
    /// `--rate`: the points are open loops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopSettings>,
}

impl Settings {
    /// `--slo`'s objectives; none without a search.
    pub fn objectives(&self) -> &[crate::vocab::Objective] {
        self.open_loop.as_ref().map_or(&[], |o| &o.objectives)
    }
}

/// How an open-loop run's ops were due (each point's rate is its own).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct OpenLoopSettings {
    /// The rates asked (`--rate`), or each worker's (`--rate-per-worker`).
    pub rates: Vec<crate::vocab::Rate>,
    pub per_worker: bool,
    pub arrivals: crate::vocab::Arrivals,
    /// Poisson arrivals: the seed of the workers' gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--slo`: every closed-loop point was searched for the highest rate
    /// meeting these (see [`objective`]); `rates` is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<crate::vocab::Objective>,
}

/// A memory cgroup's limit on what the run's processes, and the cache they
/// filled, could hold.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MemoryLimitSettings {
    /// The limit as the kernel took it (a multiple of the page size).
    pub bytes: u64,
    /// Which file set it, and the cgroup's path.
    pub cgroup: String,
}

/// An existing tree `traverse` walked (`--tree`), counted before the runs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WalkedTree {
    pub path: String,
    /// Entries below it (files, directories, links; hard links once each) and bytes of file data.
    pub entries: u64,
    pub bytes: u64,
    /// SHA-256 of what a walk sees (every entry's path, type, mode, size
    /// and link target, in name order), which `run --like` compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// How `command` ran.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CommandSettings {
    pub cmd: String,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub prepare: Option<String>,
    /// Run through `sh -c` (else split into words, no shell).
    pub shell: bool,
    pub timeout_s: Option<f64>,
    /// Driver form: how the figure was read (`regex ...`, `json ...`, `wall time`).
    pub metric: Option<String>,
}

/// What `replay` played.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ReplaySettings {
    /// `fileserver (built in)` or the loadfile's path.
    pub trace: String,
    /// Operations in one pass, by kind.
    pub ops_per_pass: BTreeMap<OpKind, u64>,
    /// Bytes read and written in one pass.
    pub bytes_per_pass: u64,
    /// SHA-256 of the loadfile (none for the built-in trace), which `run
    /// --like` compares before it reads the file again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// What a point's figure is when it is not ops/s (`command` drivers).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MetricInfo {
    /// Its name in tables and charts (`tps`, `time s`).
    pub name: String,
    pub higher_is_better: bool,
}

/// What `untar` extracted, and how.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct UntarSettings {
    pub tarball: String,
    /// The generated tree's scale and seed; absent with `--tarball`.
    pub scale: Option<f64>,
    pub seed: Option<u64>,
    /// The external command, when not the built-in extractor.
    pub extract_cmd: Option<String>,
    /// Entries (files, directories, links) and bytes of file data in the archive.
    pub entries: u64,
    pub bytes: u64,
    /// `--tarball`'s SHA-256, which `run --like` compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// One (workload, mode, share, workers) combination and its repeated runs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Point {
    pub workload: Workload,
    /// Exactly what one counted op is.
    pub op: String,
    pub mode: Mode,
    pub share: Share,
    pub workers: usize,
    /// An open-loop point (`--rate`): the ops a second asked of all its
    /// workers together. Points of different rates are compared apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<crate::vocab::Rate>,
    /// False while runs are still missing (the run was interrupted or failed).
    pub complete: bool,
    pub runs: Vec<RunRecord>,
    /// Warm-up runs (`--warmup-runs`), measured like the others, in no statistic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warmup_runs: Vec<RunRecord>,
    /// Over the runs' ops/s; absent until a run has finished.
    pub summary: Option<PointSummary>,
    /// The filesystem configuration (`ext4:data=journal`) when fsscale made
    /// one with `--fs`; points of different configurations are compared apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<String>,
    /// Fixed work: whether each run started with caches dropped (`--cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Cache>,
    /// `--variant`: the variant every run of this point ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// How that filesystem was made and mounted (from its first run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FsRecord>,
    /// `command` drivers: the runs' `ops_per_s` hold this figure instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<MetricInfo>,
    /// Under MPI: the rank that was worker i, for every i.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<usize>>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PointSummary {
    pub ops_per_s: Summary,
    pub ops_per_s_per_worker_median: f64,
    /// Over the runs' ops per worker CPU-second, when every run has one
    /// (fixed-time loops and fixed work; not drivers, whose figure is theirs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_cpu_s: Option<Summary>,
    /// Latency over every run's ops (histograms merged), with `--latency` and for `replay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Percentiles>,
    /// What the runs say about the measurement: spread, outliers, two modes, drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,
    /// Runs (indices) during which other work took a noticeable share of the machine (see [`BUSY_SHARE`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_runs: Vec<usize>,
    /// Runs (indices) in which a CPU quota on the run's cgroup ran out (see [`RunRecord::throttled`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled_runs: Vec<usize>,
}

/// What a point's diagnostics say against a verdict: drift with run order, two modes.
fn diagnosed_problems(diagnostics: Option<&Diagnostics>) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(d) = diagnostics {
        if let (true, Some(drift)) = (d.is_drifting(), d.drift) {
            problems.push(format!("drifts with run order (Spearman ρ = {:+.2}, p = {:.3})", drift.rho, drift.p_value));
        }
        if d.is_bimodal() {
            problems.push(format!("two modes (bimodality {:.2})", d.bimodality.unwrap_or(0.0)));
        }
    }
    problems
}

/// A run is "busy" when other work took more than this share of all CPU
/// time in its window, beyond two ticks of `/proc/stat`'s resolution.
pub(crate) const BUSY_SHARE: f64 = 0.05;

impl Point {
    /// A point whose warm-up ran until steady: its warm-up runs' seconds
    /// together, and whether the last one ended steady.
    pub fn warmup_until_steady(&self) -> Option<(f64, bool)> {
        let last = self.warmup_runs.last()?.steady?;
        Some((self.warmup_runs.iter().map(|r| r.elapsed_s).sum(), last.reached))
    }

    /// Every run's latency histogram merged, when the runs have them.
    fn merged_latency(&self) -> Option<Histogram> {
        let mut merged: Option<Histogram> = None;
        for h in self.runs.iter().filter_map(|r| r.latency.as_ref()) {
            merged.get_or_insert_with(Histogram::default).merge(h);
        }
        merged
    }

    /// `replay`: each kind's histogram over every run.
    pub(crate) fn merged_replay_ops(&self) -> BTreeMap<OpKind, Histogram> {
        let mut merged: BTreeMap<OpKind, Histogram> = BTreeMap::new();
        for ops in self.runs.iter().filter_map(|r| r.replay_ops.as_ref()) {
            for (kind, h) in ops {
                merged.entry(*kind).or_default().merge(h);
            }
        }
        merged
    }

    /// What the point was measured on besides its workload, mode, sharing
    /// and workers, as words that follow its name: `on ext4:data=journal`,
    /// `cold cache`, both, or nothing for `--dir` with warm caches (the
    /// default, so files from before `--cache` was recorded still match).
    /// Points of different conditions are analyzed and compared apart.
    pub fn condition(&self) -> Option<String> {
        let parts: Vec<String> = [
            self.fs.as_ref().map(|f| format!("on {f}")),
            (self.cache == Some(Cache::Cold)).then(|| "cold cache".to_string()),
            self.variant.as_ref().map(|v| format!("variant {v}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// A figure as a throughput for scaling analyses: itself, or its
    /// reciprocal for a smaller-is-better figure (a time per run becomes runs per second).
    pub(crate) fn as_throughput(&self, value: f64) -> f64 {
        if self.higher_is_better() {
            value
        } else {
            1.0 / value
        }
    }

    /// What the point's figure is counted in: a driver metric's name,
    /// `runs/s` for command copies, `entries/s` for other fixed work,
    /// `ops/s` for fixed-time loops.
    pub fn unit(&self) -> String {
        match (&self.metric, self.workload) {
            (Some(metric), _) => metric.name.clone(),
            (None, Workload::Command) => "runs/s".into(),
            (None, w) if w.is_fixed_work() => "entries/s".into(),
            (None, _) => "ops/s".into(),
        }
    }

    /// The unit of [`Point::as_throughput`]: the unit, or its reciprocal
    /// for a smaller-is-better figure.
    pub(crate) fn throughput_unit(&self) -> String {
        if self.higher_is_better() {
            self.unit()
        } else {
            format!("1/({})", self.unit())
        }
    }

    /// Whether a larger figure is better (false only for such `command` metrics).
    pub fn higher_is_better(&self) -> bool {
        self.metric.as_ref().is_none_or(|m| m.higher_is_better)
    }

    /// Recomputes the summary from the runs.
    /// Runs during which other work took more than [`BUSY_SHARE`] of the
    /// machine: besides the workers, what they ran, and a driver's whole
    /// process tree (a server outside the run, which a driver talks to, is
    /// other work: start it with `--setup` to count it as the run's).
    fn busy_runs(&self) -> Vec<usize> {
        self.runs.iter().enumerate().filter(|(_, r)| r.was_busy()).map(|(i, _)| i).collect()
    }

    /// What a CPU quota did to the runs, in words (`throttled by a CPU
    /// quota of 0.85 CPUs in 5 of 5 runs, 15% of the workers' time`), where
    /// it ran out in any: their wait is the quota's, not other work's.
    pub(crate) fn quota_words(&self) -> Option<String> {
        let throttled: Vec<RunThrottling> = self.runs.iter().filter_map(RunRecord::throttled).collect();
        let quota = throttled.iter().map(|t| t.quota_cpus).reduce(f64::min)?;
        let held: f64 = throttled.iter().map(|t| t.throttled_s).sum();
        let windows: f64 = self.runs.iter().flat_map(|r| &r.sched).map(|w| w.window_s).sum();
        let share = if windows > 0.0 {
            format!(", {:.0}% of the workers' time", 100.0 * held / windows)
        } else {
            String::new()
        };
        Some(format!(
            "throttled by a CPU quota of {} CPUs in {} of {} runs{share}",
            (quota * 100.0).round() / 100.0,
            throttled.len(),
            self.runs.len()
        ))
    }

    /// Other work took the machine in more than a fifth of its runs: one
    /// disturbed run in five moves a mean little, more than that is the
    /// machine's figure.
    pub fn mostly_busy(&self) -> bool {
        self.summary.as_ref().is_some_and(|s| s.busy_runs.len() * 5 > self.runs.len())
    }

    /// Why this point's runs cannot support a verdict, if they cannot: they
    /// drift with their order, fall into two groups, or other work took the
    /// machine in more than a fifth of them.
    pub fn noise_problem(&self) -> Option<String> {
        let summary = self.summary.as_ref()?;
        let mut problems = diagnosed_problems(summary.diagnostics.as_ref());
        problems.extend(self.too_short().map(short_problem));
        if self.mostly_busy() {
            problems.push(format!("machine busy in {} of {} runs", summary.busy_runs.len(), self.runs.len()));
        }
        problems.extend(self.behind_problem());
        (!problems.is_empty()).then(|| problems.join(", "))
    }

    /// An open loop that fell behind its rate in a run: its times are an
    /// overload's, not figures at that rate.
    fn behind_problem(&self) -> Option<String> {
        let (behind, runs) = self.behind_runs().filter(|(behind, _)| *behind > 0)?;
        Some(format!("behind its rate in {behind} of {runs} runs"))
    }

    /// Every run's ops per worker CPU-second, when every run has one.
    pub fn ops_per_cpu_s(&self) -> Option<Vec<f64>> {
        if self.metric.is_some() {
            return None;
        }
        self.runs.iter().map(RunRecord::ops_per_cpu_s).collect()
    }

    /// [`Point::noise_problem`] of the ops per worker CPU-second: drift or
    /// two modes in them; other work's load does not count, since it takes
    /// CPUs, not the workers' CPU time.
    pub(crate) fn cpu_noise_problem(&self) -> Option<String> {
        let mut problems = diagnosed_problems(diagnose(&self.ops_per_cpu_s()?).as_ref());
        problems.extend(self.too_short().map(short_problem));
        problems.extend(self.behind_problem());
        (!problems.is_empty()).then(|| problems.join(", "))
    }

    /// Fixed work timed by fsscale whose median job took under
    /// [`MIN_FIXED_WORK_S`]: that median, in seconds.
    pub(crate) fn too_short(&self) -> Option<f64> {
        if !self.workload.is_fixed_work() || self.metric.is_some() || self.runs.is_empty() {
            return None;
        }
        let elapsed: Vec<f64> = self.runs.iter().map(|r| r.elapsed_s).collect();
        let median = Summary::of(&elapsed).ok()?.median;
        (median < MIN_FIXED_WORK_S).then_some(median)
    }

    /// Half the 95% confidence interval of the runs' mean, in percent of it (below 2 runs: none).
    pub fn mean_interval_pct(&self) -> Option<f64> {
        let rates: Vec<f64> = self.runs.iter().map(|r| r.ops_per_s).collect();
        Sample::new(&rates).ok().and_then(|s| s.mean_interval_pct(0.95))
    }

    /// Half the 95% confidence interval of this point's ratio to `base`,
    /// its runs paired with `base`'s by round (the paired t interval of
    /// [`paired_log_ratio`](crate::stats::hypothesis::paired_log_ratio)), in
    /// percent: the geometric half-width sqrt(hi/lo) - 1. `None` below two
    /// rounds, or while the points have not run the same number of rounds.
    pub fn paired_interval_pct(&self, base: &Point) -> Option<f64> {
        if self.runs.len() != base.runs.len() {
            return None;
        }
        use crate::stats::hypothesis::{paired_log_ratio, Pairs};
        let rates = |p: &Point| p.runs.iter().map(|r| r.ops_per_s).collect::<Vec<_>>();
        let ratio = paired_log_ratio(&Pairs::new(&rates(base), &rates(self)).ok()?, 0.95).ok()?;
        let (lo, hi) = ratio.interval;
        Some(100.0 * ((hi / lo).sqrt() - 1.0))
    }

    pub fn summarize(&mut self) {
        let rates: Vec<f64> = self.runs.iter().map(|r| r.ops_per_s).collect();
        let per_worker: Vec<f64> = self.runs.iter().map(|r| r.ops_per_s_per_worker).collect();
        self.summary = match (Summary::of(&rates), Summary::of(&per_worker)) {
            (Ok(ops_per_s), Ok(per_worker)) => Some(PointSummary {
                ops_per_s,
                ops_per_s_per_worker_median: per_worker.median,
                ops_per_cpu_s: self.ops_per_cpu_s().and_then(|v| Summary::of(&v).ok()),
                latency: self.merged_latency().map(|h| h.percentiles()),
                diagnostics: diagnose(&rates),
                busy_runs: self.busy_runs(),
                throttled_runs: (0..self.runs.len()).filter(|&i| self.runs[i].throttled().is_some()).collect(),
            }),
            _ => None,
        };
    }
}

/// The shortest fixed-work job (`untar`, the mdtest phases, ...) whose time
/// fsscale calls a verdict on. Shorter, the workers' skew at the start
/// barrier, a scheduler slice (3-4 ms on a busy 2-vCPU VM, several per
/// worker when workers outnumber CPUs) and the CPU's ramp-up are a large
/// share of the time: here, mdtest phases of 11-38 ms spread by 16-33%
/// run to run and showed an effective concurrency above the CPUs
/// (docs/BENCHMARKS.md).
pub const MIN_FIXED_WORK_S: f64 = 0.05;

fn short_problem(median_s: f64) -> String {
    format!("jobs of {:.0} ms, too short to time (under {:.0} ms)", median_s * 1e3, MIN_FIXED_WORK_S * 1e3)
}

/// The largest results file or journal fsscale reads (a million runs of
/// 1024 workers stays far below it; /dev/zero and its like are refused).
pub(crate) const MAX_INPUT_BYTES: u64 = 4 << 30;

impl ResultsFile {
    pub(crate) fn to_json(&self) -> String {
        crate::escape::json_pretty(self).expect("results serialize") + "\n"
    }

    /// Reads a results file, naming it in every error. Only a regular file:
    /// a FIFO would block and a directory is a mistake.
    pub fn load(path: &Path) -> Result<ResultsFile> {
        if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            anyhow::bail!("{} is a directory, not a results file; name a .json file fsscale run wrote", path.display());
        }
        let text = crate::sys::read_input(path, MAX_INPUT_BYTES)
            .with_context(|| format!("reading results file {}", path.display()))?;
        ResultsFile::from_json(&text, Some(path))
            .with_context(|| format!("{} is not an fsscale results file", path.display()))
    }

    /// A document from its JSON (with the journal beside `path` folded in,
    /// when it was read from a file), checked as every input is.
    pub fn from_json(text: &str, path: Option<&Path>) -> Result<ResultsFile> {
        let mut doc = serde_json::from_str::<ResultsFile>(text)?;
        if let Some(path) = path {
            doc.fold_journal(path)?;
        }
        doc.bound_profiles();
        doc.check()?;
        // Stored summaries are a cache of the runs: a file edited (or
        // crafted) to disagree with them is read as its runs say.
        for point in &mut doc.points {
            point.summarize();
        }
        Ok(doc)
    }

    /// The document as one line of JSON, as the history keeps it.
    pub(crate) fn to_compact_json(&self) -> String {
        crate::escape::json_compact(self).expect("results serialize")
    }

    /// Writes the document atomically (a temporary file of this process's
    /// own, renamed over `path`), so a reader never sees half a file.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::atomic_file::write(path, self.to_json().as_bytes()).context("saving the results")
    }
}

/// Hand-built results for unit tests of the renderers and analyses (the
/// measuring crate's tests use them too: a tiny module, always built).
#[doc(hidden)]
pub mod fixtures;

/// Formats a time as RFC 3339 in UTC, to the second.
/// `items` grouped by key, the groups in the order their keys first
/// appear: tables and series follow the order the plan ran them in (the
/// workloads and filesystems as given), not an alphabetical one.
pub fn grouped<K: PartialEq, V>(items: impl IntoIterator<Item = (K, V)>) -> Vec<(K, Vec<V>)> {
    let mut groups: Vec<(K, Vec<V>)> = Vec::new();
    for (key, value) in items {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value),
            None => groups.push((key, vec![value])),
        }
    }
    groups
}

pub fn rfc3339(time: std::time::SystemTime) -> String {
    let secs = time.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// [`rfc3339`] to the millisecond: `2026-11-23T10:04:05.123Z`.
pub fn rfc3339_millis(time: std::time::SystemTime) -> String {
    let millis = time.duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_millis()).unwrap_or(0);
    let whole = rfc3339(time);
    format!("{}.{millis:03}Z", &whole[..whole.len() - 1])
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The mdtest phases' settings, as run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MdtestSettings {
    pub items: u64,
    pub write_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_s: Option<f64>,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_matches_known_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(1_795_316_763)), "2026-11-22T03:06:03Z");
    }

    #[test]
    fn a_drivers_runs_are_busy_where_other_work_took_the_machine() {
        use crate::vocab::{Share, Workload};
        let noisy = |run: usize, others_cpu: f64| {
            let mut r = fixtures::run(run, &[1], 1.0);
            r.noise = Some(RunNoise { others_cpu, ticks: 200, ..Default::default() });
            r
        };
        let mut driver =
            fixtures::point(Workload::Command, Share::Private, 2, vec![noisy(0, 0.01), noisy(1, 0.40), noisy(2, 0.30)]);
        driver.metric = Some(MetricInfo { name: "events/s".into(), higher_is_better: true });
        driver.summarize();
        assert_eq!(driver.summary.unwrap().busy_runs, [1, 2], "the driver's own tree is not in others_cpu");
    }
}
