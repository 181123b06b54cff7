//! Comparing two results files point by point: the same workload, mode,
//! sharing level and worker count, tested on the runs' ops/s.
//!
//! The change is mean(new)/mean(base) − 1, so that it agrees with the t
//! tests; its confidence interval is Fieller's for a ratio of means, which
//! carries the base's uncertainty too. Medians are reported beside it.
//!
//! A significant change is called better or worse only when its whole
//! confidence interval lies beyond the noise threshold (±2% by default), as
//! Criterion.rs does with its noise threshold: the t tests see only the
//! spread of one invocation's runs, and two invocations of the same system
//! differ by more than that (docs/STATISTICS.md, detection power).

mod between;
mod change;
mod differences;
mod invocations;
mod judging;
mod moved;

pub use crate::instruments::attribution::{
    attribute, profiling_command, Attribution, FunctionDelta, SiteDelta, SiteSide,
};
pub use between::{compare_between, Between, Dimension};
pub use change::FigureKind;
pub use differences::{differences, Difference};
pub use invocations::{compare_invocations, Detectable, InvocationStats, DETECT_POWER};
pub(crate) use judging::cpu_bound;
pub use moved::{moved, MovedStat, MAX_MOVED};

use serde::{Deserialize, Serialize};

use crate::results::{Point, ResultsFile};
use crate::stats::hierarchical::Invocations;
use crate::stats::hypothesis::TestKind;
use crate::stats::{Sample, Summary};
use crate::vocab::{Mode, Quantile, Rate};
use crate::vocab::{Share, Workload};

#[derive(Debug, Clone, Copy)]
pub struct CompareConfig {
    pub test: TestKind,
    /// Confidence level in (0, 1), e.g. 0.95.
    pub confidence: f64,
    pub figure: Figure,
    /// Changes whose confidence interval reaches inside ±this many percent
    /// are "within noise", however significant (0 turns it off).
    pub noise_threshold_pct: f64,
    /// Whether a side's noise marks (drift, two modes, a busy machine) make
    /// a significant change "too noisy" (`--no-noise-veto` turns it off:
    /// with Student's t and no threshold, ministat's verdicts).
    pub noise_veto: bool,
    /// `--detect PCT`: with invocations measured on both sides, how many a
    /// side a change of PCT percent would need to be found.
    pub detect_pct: Option<f64>,
    /// Hold the false discovery rate over a comparison's points at
    /// 1 − confidence (Benjamini–Hochberg), rather than judge each point on
    /// its own (`--no-fdr`: ministat's per-pair verdicts).
    pub fdr: bool,
    /// Paired designs compare ops per CPU-second at points where the
    /// machine was busy and the workers CPU-bound (`--no-auto-per-cpu` turns it off).
    pub auto_per_cpu: bool,
    /// Open loops are judged by this quantile of each run's response times (`--response`).
    pub response: Quantile,
}

impl CompareConfig {
    /// `compare`'s defaults: Welch's t, 95%, ops/s, ±2%, the veto on.
    pub const DEFAULT: CompareConfig = CompareConfig {
        test: TestKind::Welch,
        confidence: 0.95,
        figure: Figure::Throughput,
        noise_threshold_pct: DEFAULT_NOISE_THRESHOLD_PCT,
        noise_veto: true,
        detect_pct: None,
        fdr: true,
        auto_per_cpu: true,
        response: Quantile::P99,
    };
}

impl Default for CompareConfig {
    fn default() -> CompareConfig {
        CompareConfig::DEFAULT
    }
}

/// The fewest earlier results of a point on a host whose spread a
/// comparison takes as the point's threshold (see [`compare_using`]).
pub(crate) const HISTORY_MIN_RESULTS: usize = 6;

/// The default noise threshold, in percent: on this VM, A/A pairs of
/// separate invocations differ by about 1–2% even when each invocation's
/// runs agree to 0.5% (docs/STATISTICS.md).
pub const DEFAULT_NOISE_THRESHOLD_PCT: f64 = 2.0;

/// What is compared, run against run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Figure {
    /// Each run's throughput (a driver's own figure).
    #[default]
    Throughput,
    /// Each run's ops per second of the workers' own CPU time: on a shared
    /// machine it moves far less with other load. Points without it (drivers,
    /// files from before it was recorded) are listed as unmatched.
    OpsPerCpuSecond,
    /// Open loops (`--rate`), in place of their throughput (the rate they
    /// were asked): each run's response time at this quantile, in µs,
    /// smaller better. Each run's own quantile is one figure, so the tests
    /// and intervals are over runs, as for ops/s: the run, not the op, is
    /// the unit that repeats (ops of one run share its disturbances).
    Response(Quantile),
}

impl Figure {
    /// Whether a larger figure of `p` is the better one.
    fn higher_is_better(self, p: &Point) -> bool {
        match self {
            Figure::Response(_) => false,
            Figure::Throughput | Figure::OpsPerCpuSecond => p.higher_is_better(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Better,
    Worse,
    NoDifferenceProven,
    /// Fewer than 2 runs on a side: nothing can be tested.
    TooFewRuns,
    /// Significant, but a side's runs drift, fall into two groups or ran on
    /// a busy machine (`Row::noise` says which): the difference may be the machine's.
    TooNoisy,
    /// Significant, but its confidence interval reaches inside the noise
    /// threshold: no bigger than two invocations of one system differ by.
    WithinNoise,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifferenceProven => "no difference proven",
            Verdict::TooFewRuns => "too few runs",
            Verdict::TooNoisy => "too noisy",
            Verdict::WithinNoise => "within noise",
        }
    }
}

/// One matched point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What else the points were measured on (`on ext4`, `cold cache`), when
    /// points were matched by it: see `Point::condition`.
    #[serde(default, alias = "fs", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub workload: Workload,
    pub mode: Mode,
    pub share: Share,
    pub workers: usize,
    /// Open-loop points: the rate both sides asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// What the figures are counted in (ops/s, entries/s, runs/s, a metric's name).
    #[serde(default = "default_unit")]
    pub unit: String,
    pub base: Summary,
    pub new: Summary,
    pub base_runs: Vec<f64>,
    pub new_runs: Vec<f64>,
    /// The figures `change_pct` is the ratio of, as `figure_kind` says: the
    /// means, or with `--test paired` the paired runs' geometric means.
    #[serde(default)]
    pub base_figure: f64,
    #[serde(default)]
    pub new_figure: f64,
    #[serde(default)]
    pub figure_kind: FigureKind,
    /// (new_figure / base_figure − 1) × 100, so its sign is base → new's.
    pub change_pct: f64,
    /// Paired designs: how many rounds (or invocations) were paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
    /// `--between DIM=A,B`: the two values compared, base first, which the
    /// row's own dimension stands for (`share: private → shared`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<Compared>,
    /// Confidence interval of `change_pct`; `None` when unbounded or untestable.
    pub change_ci_pct: Option<(f64, f64)>,
    pub test: TestKind,
    pub p_value: Option<f64>,
    /// `p_value` adjusted for the comparison's other points (Benjamini–Hochberg):
    /// what the verdict is judged on, unless `--no-fdr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_value: Option<f64>,
    pub verdict: Verdict,
    /// A paired point on a busy machine compared in ops per CPU-second (see [`CompareConfig::auto_per_cpu`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_cpu_when_busy: bool,
    /// Why a side's runs cannot support a verdict (see `Point::noise_problem`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<String>,
    /// False for a smaller-is-better driver figure (a time): then a rise is worse.
    #[serde(default = "yes")]
    pub higher_is_better: bool,
    /// Several invocations per side: how each side's figures vary between and within them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocations: Option<InvocationStats>,
    /// Several invocations per side: what they could have found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<Detectable>,
    /// What defines its workload differently on the two sides (see
    /// [`differences()`]): the points measured different things.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defined_differently: Option<String>,
    /// What the two sides' profiles say changed (see [`attribute`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// The machine's and the workers' stats that moved (LKP's list), at the
    /// comparison's false discovery rate over the point's stats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<MovedStat>,
    /// A side a CPU quota throttled, in words (`new: throttled by a CPU
    /// quota of 0.85 CPUs in 5 of 5 runs`): its wait is the quota's, and its
    /// ops/s are judged as they are, not as a busy machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<String>,
    /// The point's own noise threshold where the history measured how much
    /// its invocations differ (see [`compare_using`]); `None`: the comparison's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<PointThreshold>,
}

/// One point's noise threshold, in percent, and where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointThreshold {
    pub pct: f64,
    pub why: String,
}

fn yes() -> bool {
    true
}

/// What a `--between` comparison sets against what, in one dimension.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compared {
    pub dimension: String,
    pub base: String,
    pub new: String,
}

impl Compared {
    /// `private→shared`: what a cell of the compared dimension shows.
    pub(crate) fn arrow(&self) -> String {
        format!("{}→{}", self.base, self.new)
    }
}

impl Row {
    /// The workers as a cell shows them, with an open loop's rate: `2 at 20k/s`.
    pub(crate) fn workers_text(&self) -> String {
        match self.rate {
            Some(rate) => format!("{} at {rate}/s", self.workers),
            None => self.workers.to_string(),
        }
    }

    /// The mode as a cell shows it: `process→thread` where it was compared.
    pub(crate) fn mode_text(&self) -> String {
        self.compared_as("mode").unwrap_or_else(|| self.mode.to_string())
    }

    /// The sharing level as a cell shows it: `private→shared` where it was compared.
    pub(crate) fn share_text(&self) -> String {
        self.compared_as("share").unwrap_or_else(|| self.share.to_string())
    }

    /// The point in words, both sides' values where they differ: `stat process private→shared x2`.
    pub fn point_words(&self) -> String {
        format!("{} {} {} x{}", self.workload, self.mode_text(), self.share_text(), self.workers)
    }

    fn compared_as(&self, dimension: &str) -> Option<String> {
        self.between.as_ref().filter(|b| b.dimension == dimension).map(Compared::arrow)
    }

    /// Whether the change, significant or not, goes the bad way by more than `pct` percent.
    pub fn worse_by_more_than(&self, pct: f64) -> bool {
        if self.higher_is_better {
            self.change_pct < -pct
        } else {
            self.change_pct > pct
        }
    }
}

fn default_unit() -> String {
    "ops/s".to_string()
}

/// The geometric mean of the changes of one workload's rows: it lies
/// between the smallest and the largest of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    /// The rows' condition (filesystem, cache, variant) when rows have one: one summary per table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub workload: Workload,
    pub points: usize,
    pub geomean_change_pct: f64,
    pub better: usize,
    pub worse: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub base: String,
    pub new: String,
    pub confidence: f64,
    /// See [`CompareConfig::noise_threshold_pct`].
    #[serde(default)]
    pub noise_threshold_pct: f64,
    /// See [`CompareConfig::noise_veto`].
    #[serde(default = "yes")]
    pub noise_veto: bool,
    /// See [`CompareConfig::fdr`].
    #[serde(default)]
    pub fdr: bool,
    pub rows: Vec<Row>,
    pub summaries: Vec<WorkloadSummary>,
    /// Points present in only one of the files, as "workload mode share xN (base only)".
    pub unmatched: Vec<String>,
    /// What the invocations compared can and cannot promise (see [`invocations`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocations_note: Option<String>,
    /// What differs between the sides' settings and hosts (see [`differences()`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<Difference>,
    /// A change was found but neither side recorded a profile: the
    /// commands that would record what explains it, base and new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_hint: Option<(String, String)>,
}

impl Comparison {
    /// What "within noise" means, when one of `rows` (of this comparison) is.
    pub(crate) fn within_noise_note<'a>(&self, rows: impl IntoIterator<Item = &'a Row>) -> Option<String> {
        rows.into_iter().any(|r| r.verdict == Verdict::WithinNoise).then(|| {
            format!(
                "within noise: significant, but its interval reaches inside ±{}%, which two invocations of one \
                 system can differ by (--noise-threshold)",
                self.noise_threshold_pct
            )
        })
    }
}

type Key = (Option<String>, Workload, Mode, Share, usize, Option<Rate>);

/// Points match on workload, mode, share, workers and asked rate, and on
/// their condition (filesystem configuration, cache state) when a file
/// holds several; two files of one condition each (tmpfs.json against
/// ext4.json) are compared across it.
fn key(p: &Point, by_condition: bool) -> Key {
    (if by_condition { p.condition() } else { None }, p.workload, p.mode, p.share, p.workers, p.rate)
}

fn conditions(doc: &ResultsFile) -> usize {
    let mut labels: Vec<Option<String>> = doc.points.iter().map(Point::condition).collect();
    labels.sort();
    labels.dedup();
    labels.len()
}

/// The unit of an open loop's figure: `µs p99 response`.
pub(crate) fn response_unit(quantile: Quantile) -> String {
    format!("µs {quantile} response")
}

/// Every run's figure, or `None` when a run lacks it.
pub(crate) fn figures(p: &Point, figure: Figure) -> Option<Vec<f64>> {
    match figure {
        Figure::Throughput => Some(p.runs.iter().map(|r| r.ops_per_s).collect()),
        Figure::OpsPerCpuSecond => p.ops_per_cpu_s(),
        // A run that timed no op in its window has no p99: the point is unmatched.
        Figure::Response(quantile) => p
            .runs
            .iter()
            .map(|r| {
                let response = &r.open_loop.as_ref()?.response;
                (response.count > 0).then(|| response.quantile(quantile.fraction()) as f64 / 1e3)
            })
            .collect(),
    }
}

/// Compares `new` against `base`; `base_label` and `new_label` name them in the output.
pub fn compare(
    base: &ResultsFile,
    new: &ResultsFile,
    base_label: &str,
    new_label: &str,
    config: &CompareConfig,
) -> Comparison {
    compare_using(base, new, base_label, new_label, config, &|_| None)
}

/// [`compare`], where `threshold_of` may give a base point a noise
/// threshold of its own (how much its invocations differ on this host, from
/// the history) in place of the configured one.
pub fn compare_using(
    base: &ResultsFile,
    new: &ResultsFile,
    base_label: &str,
    new_label: &str,
    config: &CompareConfig,
    threshold_of: &dyn Fn(&Point) -> Option<PointThreshold>,
) -> Comparison {
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    let by_condition = conditions(base) > 1 || conditions(new) > 1;
    let key = |p: &Point| key(p, by_condition);
    let describe = |k: &Key, why: &str| {
        let on = k.0.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
        let rate = k.5.map(|r| format!(" at {r} ops/s")).unwrap_or_default();
        format!("{} {} {} x{}{rate}{on} ({why})", k.1, k.2, k.3, k.4)
    };
    for b in base.points.iter().filter(|p| !p.runs.is_empty()) {
        let Some(n) = new.points.iter().find(|n| key(n) == key(b) && !n.runs.is_empty()) else {
            unmatched.push(describe(&key(b), "base only"));
            continue;
        };
        let by_cpu = config.auto_per_cpu
            && config.test == TestKind::Paired
            && config.figure == Figure::Throughput
            && judging::per_cpu_fits(b, n);
        // An open loop's throughput is the rate it was asked: its response time is its figure.
        let figure = match (b.rate.is_some() || n.rate.is_some(), by_cpu) {
            (true, _) => Figure::Response(config.response),
            (false, true) => Figure::OpsPerCpuSecond,
            (false, false) => config.figure,
        };
        let (Some(base_runs), Some(new_runs)) = (figures(b, figure), figures(n, figure)) else {
            let missing = match figure {
                Figure::Response(_) => "a run timed no op in its window",
                Figure::Throughput | Figure::OpsPerCpuSecond => "no worker CPU time recorded",
            };
            unmatched.push(describe(&key(b), missing));
            continue;
        };
        let threshold = threshold_of(b);
        let noise_threshold_pct = threshold.as_ref().map_or(config.noise_threshold_pct, |t| t.pct);
        let point_config = CompareConfig { figure, noise_threshold_pct, ..*config };
        let mut row = compare_point(b, n, base_runs, new_runs, &point_config, None);
        row.per_cpu_when_busy = by_cpu;
        row.threshold = threshold;
        // A condition names the row only when points were matched by it.
        if !by_condition {
            row.condition = None;
        }
        rows.push(row);
    }
    for n in new.points.iter().filter(|p| !p.runs.is_empty()) {
        if !base.points.iter().any(|b| key(b) == key(n) && !b.runs.is_empty()) {
            unmatched.push(describe(&key(n), "new only"));
        }
    }
    let invocations_note = match config.test {
        // Paired runs share one invocation by design: their comparison is within it.
        TestKind::Paired => None,
        _ if rows.iter().any(|r| r.threshold.is_some()) => Some(format!(
            "invocations: one per side; where the history holds {} or more results of a point on this host, how \
             much they differ is its threshold (said under its table); elsewhere ±{}% (--noise-threshold) is assumed",
            HISTORY_MIN_RESULTS, config.noise_threshold_pct
        )),
        _ => invocations::one_per_side_note(&rows, config),
    };
    let mut c =
        Comparison::of(base_label.to_string(), new_label.to_string(), config, rows, unmatched, invocations_note);
    c.set_differences(differences(base, new));
    c.set_profile_hint(base, new);
    c
}

impl Comparison {
    /// Where a row changed and no row could be explained (no profiles on
    /// both sides), the commands that would record the profiles.
    pub(crate) fn set_profile_hint(&mut self, base: &ResultsFile, new: &ResultsFile) {
        let changed = self.rows.iter().any(|r| matches!(r.verdict, Verdict::Better | Verdict::Worse));
        if changed && self.rows.iter().all(|r| r.attribution.is_none()) {
            self.profile_hint = profiling_command(&base.command_line).zip(profiling_command(&new.command_line));
        }
    }

    /// Records what differs between the sides and marks each row whose workload it defines.
    pub(crate) fn set_differences(&mut self, found: Vec<Difference>) {
        for row in &mut self.rows {
            let why: Vec<String> =
                found.iter().filter(|d| d.defines.contains(&row.workload)).map(Difference::describe).collect();
            row.defined_differently = (!why.is_empty()).then(|| why.join("; "));
        }
        self.differences = found;
    }

    /// The rows whose workload the two sides defined differently.
    pub fn not_comparable(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.defined_differently.is_some())
    }

    /// The comparison of `rows` (sorted here), with each workload's summary.
    fn of(
        base: String,
        new: String,
        config: &CompareConfig,
        mut rows: Vec<Row>,
        unmatched: Vec<String>,
        invocations_note: Option<String>,
    ) -> Comparison {
        // Tables in the order the base ran them (as given), rows by mode, share and workers.
        let tables: Vec<(Option<String>, Workload)> =
            crate::results::grouped(rows.iter().map(|r| ((r.condition.clone(), r.workload), ())))
                .into_iter()
                .map(|(k, _)| k)
                .collect();
        let table = |r: &Row| tables.iter().position(|t| t.0 == r.condition && t.1 == r.workload);
        rows.sort_by_key(|r| (table(r), r.mode, r.share, r.workers, r.rate));
        judging::adjust_for_fdr(&mut rows, config);
        let summaries = summarize(&rows);
        Comparison {
            base,
            new,
            confidence: config.confidence,
            noise_threshold_pct: config.noise_threshold_pct,
            noise_veto: config.noise_veto,
            fdr: config.fdr,
            rows,
            summaries,
            unmatched,
            invocations_note,
            differences: Vec::new(),
            profile_hint: None,
        }
    }
}

/// Compares the figures `base_runs` of `b` and `new_runs` of `n` (with
/// several invocations per side, `nested` holds them invocation by invocation).
fn compare_point(
    b: &Point,
    n: &Point,
    base_runs: Vec<f64>,
    new_runs: Vec<f64>,
    config: &CompareConfig,
    nested: Option<(&Invocations, &Invocations)>,
) -> Row {
    let bs = Sample::new(&base_runs).expect("runs have finite ops/s");
    let ns = Sample::new(&new_runs).expect("runs have finite ops/s");
    let summary = |v: &[f64]| Summary::of(v).expect("non-empty");
    // Each run's recorded round, where the figures are the point's own runs (not pooled invocations).
    let rounds = |p: &Point, figures: &[f64]| -> Vec<(usize, f64)> {
        match p.runs.len() == figures.len() {
            true => p.runs.iter().map(|r| r.run).zip(figures.iter().copied()).collect(),
            false => figures.iter().copied().enumerate().collect(),
        }
    };
    let change = change::measure(&bs, &ns, (&rounds(b, &base_runs), &rounds(n, &new_runs)), config, nested);
    let (change_pct, change_ci_pct, p_value) = (change.pct, change.ci_pct, change.p_value);
    // Invocations measured on both sides: their spread is in the interval, drift and a busy machine included.
    let spread_measured = nested.is_some_and(|(b, n)| b.count() >= 2 && n.count() >= 2);
    // A `command` driver's figure may be smaller-is-better (a time, a latency).
    let improved = if config.figure.higher_is_better(b) { change_pct > 0.0 } else { change_pct < 0.0 };
    let noise_of = |p: &Point| match config.figure {
        Figure::Throughput | Figure::Response(_) => p.noise_problem(),
        Figure::OpsPerCpuSecond => p.cpu_noise_problem(),
    };
    let noise: Vec<String> = [("base", b), ("new", n)]
        .iter()
        .filter_map(|(side, p)| noise_of(p).map(|why| format!("{side}: {why}")))
        .collect();
    let noise = (!noise.is_empty()).then(|| noise.join("; "));
    let significant = p_value.map(|p| p < 1.0 - config.confidence && change_pct != 0.0);
    // Beyond the threshold: the whole interval, or, where Fieller's interval
    // is unbounded, the change itself.
    let threshold = config.noise_threshold_pct;
    // No threshold: the test alone decides (the interval is Fieller's, not the test's own).
    let beyond_threshold = threshold == 0.0
        || match change_ci_pct {
            Some((lo, hi)) => lo > threshold || hi < -threshold,
            None => change_pct.abs() > threshold,
        };
    let verdict = match significant {
        None => Verdict::TooFewRuns,
        Some(false) => Verdict::NoDifferenceProven,
        Some(true) if !beyond_threshold => Verdict::WithinNoise,
        // Paired by round, what moves both sides of a round alike (drift, a
        // busy machine) cancels, so the sides' own noise does not veto.
        Some(true)
            if config.noise_veto
                && noise.is_some()
                && config.test != TestKind::Paired
                && !spread_measured
                && !beyond_any_noise(b, n, &bs, &ns, change_pct) =>
        {
            Verdict::TooNoisy
        }
        Some(true) if improved => Verdict::Better,
        Some(true) => Verdict::Worse,
    };
    Row {
        unit: match config.figure {
            Figure::Throughput => b.unit(),
            Figure::OpsPerCpuSecond => format!("{}/cpu-s", b.unit().trim_end_matches("/s")),
            Figure::Response(quantile) => response_unit(quantile),
        },
        condition: b.condition(),
        workload: b.workload,
        mode: b.mode,
        share: b.share,
        workers: b.workers,
        rate: b.rate,
        base: summary(&base_runs),
        new: summary(&new_runs),
        base_runs,
        new_runs,
        base_figure: change.base,
        new_figure: change.new,
        figure_kind: change.kind,
        change_pct,
        pairs: change.pairs,
        between: None,
        change_ci_pct,
        test: config.test,
        p_value,
        q_value: None,
        verdict,
        per_cpu_when_busy: false,
        noise,
        higher_is_better: config.figure.higher_is_better(b),
        invocations: None,
        detectable: None,
        defined_differently: None,
        attribution: attribute(b, n),
        moved: moved(b, n, 1.0 - config.confidence),
        throttled: throttled_words(b, n),
        threshold: None,
    }
}

/// [`Row::throttled`] of two sides.
fn throttled_words(b: &Point, n: &Point) -> Option<String> {
    let sides: Vec<String> = [("base", b), ("new", n)]
        .iter()
        .filter_map(|(side, p)| Some(format!("{side}: {}", p.quota_words()?)))
        .collect();
    (!sides.is_empty()).then(|| sides.join("; "))
}

/// Whether a change is a collapse the noise diagnostics cannot explain, so
/// that their veto does not apply: every run of one side is below a tenth
/// of every run of the other, and the change is larger than the share of
/// the machine other work took in any run of either side. Other work takes
/// a share of a runnable worker's CPU, not nine tenths of it, however much
/// its own runs spread: a collapse to 0 ops/s against a busy base is then
/// called worse, while a rate halved beside a hog stays too noisy to call.
fn beyond_any_noise(b: &Point, n: &Point, bs: &Sample, ns: &Sample, change_pct: f64) -> bool {
    let busiest = b.runs.iter().chain(&n.runs).filter_map(|r| r.noise).map(|x| x.others_cpu).fold(0.0, f64::max);
    let collapse = ns.max() < bs.min() / 10.0 || bs.max() < ns.min() / 10.0;
    collapse && change_pct.abs() > 100.0 * busiest
}

fn summarize(rows: &[Row]) -> Vec<WorkloadSummary> {
    let mut out: Vec<WorkloadSummary> = Vec::new();
    let tables = crate::results::grouped(rows.iter().map(|r| ((r.condition.clone(), r.workload), ())));
    for ((condition, workload), _) in tables {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.workload == workload && r.condition == condition).collect();
        // The rows' own changes, so the summary lies within their range.
        let log_sum: f64 = mine.iter().map(|r| (1.0 + r.change_pct / 100.0).ln()).sum();
        out.push(WorkloadSummary {
            condition,
            workload,
            points: mine.len(),
            geomean_change_pct: ((log_sum / mine.len() as f64).exp() - 1.0) * 100.0,
            better: mine.iter().filter(|r| r.verdict == Verdict::Better).count(),
            worse: mine.iter().filter(|r| r.verdict == Verdict::Worse).count(),
        });
    }
    out
}

/// Points significantly worse by more than `threshold_pct` percent.
pub fn regressions(comparison: &Comparison, threshold_pct: f64) -> Vec<&Row> {
    comparison.rows.iter().filter(|r| r.verdict == Verdict::Worse && r.change_pct.abs() > threshold_pct).collect()
}

#[cfg(test)]
mod simulation;

#[cfg(test)]
pub(crate) mod tests;
