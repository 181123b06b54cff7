//! What to run: the plain configuration the CLI builds, and the parsers for
//! the values users type (worker lists, durations).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};

use crate::fs::FsOptions;
use crate::tree::TreeSpec;
use crate::vocab::InputError;
use crate::workloads::Sharing;
use crate::workloads::{CommandSpec, Share, Workload};

/// The most workers one point may have: far above any core count fsscale is
/// meant for (1024 workers is a tested design point), low enough to catch typos.
pub(crate) const MAX_WORKERS: usize = 16_384;

pub use crate::vocab::{parse_objectives, parse_rates, Arrivals, Cache, Mode, Objective, Order, Rate};

mod values;
pub mod variant;
pub use crate::stats::steady::SteadyWarmup;
pub use crate::vocab::Variant;
pub use values::{auto_sample_interval, default_rank_workers, default_workers, parse_duration, parse_workers};

/// Settings of the fixed-work (macro) workloads.
#[derive(Debug, Clone, PartialEq)]
pub struct MacroOptions {
    /// Size of the generated tree (1 = about 94,000 files).
    pub scale: f64,
    pub seed: u64,
    /// A tarball to use instead of the generated one.
    pub tarball: Option<PathBuf>,
    /// An extraction command instead of the built-in extractor.
    pub extract_cmd: Option<String>,
    /// Where generated tarballs are kept between runs.
    pub cache_dir: PathBuf,
    /// traverse: walk this directory (read only) instead of a generated tree.
    pub tree: Option<PathBuf>,
    /// traverse: `fstatat` every entry.
    pub stat: bool,
    /// Fixed work: the cache states to measure each point in (`--cache warm,cold`).
    pub caches: Vec<Cache>,
}

/// Everything `fsscale run` needs, free of any command-line types.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub dir: PathBuf,
    pub workloads: Vec<Workload>,
    pub modes: Vec<Mode>,
    /// Sharing levels; each workload runs at those of these it supports.
    pub shares: Vec<Share>,
    /// Refuse a workload/share combination that cannot run, rather than skip
    /// it (the user named both the workloads and the sharing levels).
    pub strict_shares: bool,
    /// `--share` was given (else `shares` is the default, which a workload may adapt).
    pub shares_given: bool,
    pub macro_options: MacroOptions,
    /// The `command` workload's templates (`--cmd` and friends).
    pub command: Option<CommandSpec>,
    /// `replay`: a dbench loadfile instead of the built-in trace.
    pub trace: Option<PathBuf>,
    /// Time every op of fixed-time loops into latency histograms.
    pub latency: bool,
    /// `--rate`: open loops at these rates (each a point), none for closed loops.
    pub rates: Vec<Rate>,
    /// `--rate-per-worker`: `rates` are each worker's, so a point's is `workers` times one.
    pub rate_per_worker: bool,
    /// `--arrivals`: how an open loop's ops are spaced.
    pub arrivals: Arrivals,
    /// `--slo`: search each point for the highest rate meeting these (see
    /// [`crate::results::objective`]); its probes are open loops.
    pub objectives: Vec<Objective>,
    /// The workloads' own options (lookup shape, mdtest items, grow size).
    pub options: crate::workloads::WorkloadOptions,
    /// `--profile locks,cpu` and `--verify`.
    pub instruments: crate::instruments::InstrumentConfig,
    /// The filesystems to run on: `--dir` as it is, or made fresh.
    pub filesystems: FsOptions,
    pub workers: Vec<usize>,
    pub pin: bool,
    pub duration: Duration,
    pub warmup: Duration,
    pub runs: usize,
    /// Runs of every point before its measured ones, kept apart from every statistic.
    pub warmup_runs: usize,
    /// Fixed-time loops' warm-up runs last until their rate is steady (`--warmup-max`, not 0).
    pub steady: Option<SteadyWarmup>,
    /// `--variant`: every point runs under each, in a balanced order within every round.
    pub variants: Vec<Variant>,
    pub order: Order,
    /// Orders `Order::Shuffled`'s rounds; recorded in the results.
    pub order_seed: u64,
    /// `--until-ci`: repeat a point until its mean's 95% confidence
    /// interval is within ± this many percent, or it has `max_runs` runs.
    pub until_ci_pct: Option<f64>,
    pub max_runs: usize,
    pub sample_interval: Duration,
    /// A worker without progress for this long fails the run.
    pub stall_timeout: Duration,
    pub output: PathBuf,
    pub command_line: Vec<String>,
    /// `--memory-limit`: the run's processes in a memory cgroup of this many bytes.
    pub memory_limit: Option<u64>,
    /// `--label` and `--note`, recorded in the results.
    pub label: Option<String>,
    pub note: Option<String>,
    /// `--rev`: the revision measured, recorded in the results.
    pub rev: Option<String>,
    /// `--force` (and `--resume`, which continues the file at `output`):
    /// an existing results file at `output` may be replaced.
    pub replace_output: bool,
}

/// The shortest timed window: wake-up latency and timer slack (tens of
/// microseconds) must stay a small fraction of it.
pub(crate) const MIN_DURATION: Duration = Duration::from_millis(1);

/// The shortest stall timeout: the watch compares progress every 250 ms.
pub(crate) const MIN_STALL_TIMEOUT: Duration = Duration::from_millis(500);

/// `--max-runs` unless given (runs with variants: [`variant::DEFAULT_PAIRED_MAX_ROUNDS`]).
pub const DEFAULT_MAX_RUNS: usize = 30;

/// The narrowest `--until-ci` target: a hundredth of a percent.
pub(crate) const MIN_UNTIL_CI_PCT: f64 = 0.01;

/// One measured combination; each is run `runs` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PointSpec {
    pub workload: Workload,
    pub mode: Mode,
    pub share: Share,
    pub workers: usize,
    /// Fixed work: the cache state each run starts in; `None` for fixed-time loops, which warm their own.
    pub cache: Option<Cache>,
    /// `--variant`: the index of the variant this point runs under.
    #[serde(default)]
    pub variant: Option<usize>,
    /// `--rate`: an open loop at this many ops a second, all workers together.
    #[serde(default)]
    pub rate: Option<Rate>,
}

impl RunConfig {
    /// Refuses a results file (or its journal) that is one of the run's
    /// inputs, or lies inside the tree it walks: writing it would overwrite
    /// or change what is measured. Files are compared by device and inode,
    /// so no other name for them (a link, `./x`) gets through.
    fn check_output_is_not_an_input(&self) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        if self.output.as_os_str().is_empty() {
            return Ok(());
        }
        let id = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        let inputs = [("--trace", &self.trace), ("--tarball", &self.macro_options.tarball)];
        for output in [self.output.clone(), crate::results::journal_path(&self.output)] {
            let Some(out) = id(&output) else { continue };
            for (option, input) in inputs.iter().filter_map(|(o, i)| Some((o, i.as_ref()?))) {
                if id(input) == Some(out) {
                    bail!(
                        "-o {} is the {option} file {}; writing results there would overwrite it: choose another -o",
                        output.display(),
                        input.display()
                    );
                }
            }
        }
        if let Some(tree) = &self.macro_options.tree {
            let tree_id = id(tree);
            // The nearest directory of -o's that exists (the rest would be made inside it).
            let absolute = std::path::absolute(&self.output).unwrap_or_else(|_| self.output.clone());
            let inside = absolute
                .ancestors()
                .skip(1)
                .find_map(|a| std::fs::canonicalize(a).ok())
                .is_some_and(|real| real.ancestors().any(|a| id(a) == tree_id));
            if tree_id.is_some() && inside {
                bail!(
                    "-o {} lies inside --tree {}, which fsscale walks and never writes: choose an -o outside it",
                    self.output.display(),
                    tree.display()
                );
            }
        }
        Ok(())
    }

    /// Refuses to replace a file that is already at `output` unless
    /// `replace_output`: the natural slip after a reboot (the same command
    /// again) would otherwise lose a finished baseline without a word. An
    /// empty file holds nothing to lose (a default `-o` is made so), and
    /// what is not a regular file is refused later, as what it is.
    pub(crate) fn check_not_replacing(&self) -> Result<()> {
        let shown = || crate::escape::shell_word(&self.output.display().to_string());
        let Ok(meta) = std::fs::symlink_metadata(&self.output) else { return Ok(()) };
        if self.replace_output || !meta.is_file() || meta.len() == 0 || self.output_is_being_written() {
            return Ok(());
        }
        let what = match crate::results::ResultsFile::load(&self.output) {
            Ok(doc) => {
                let runs: usize = doc.points.iter().map(|p| p.runs.len()).sum();
                let others = match doc.status {
                    crate::results::Status::Complete => "or another -o".to_string(),
                    _ => format!("another -o, or --resume {} to finish it", shown()),
                };
                format!(
                    "a results file ({}, {runs} runs) is there already; give --force to replace it, {others}",
                    doc.status.name()
                )
            }
            Err(_) => "a file is there already; give --force to replace it, or another -o".to_string(),
        };
        bail!("-o {}: {what}", shown())
    }

    /// Whether a live run holds `output`'s journal: the results' `Saver`
    /// then refuses the path itself, naming that run.
    fn output_is_being_written(&self) -> bool {
        let journal = crate::results::journal_path(&self.output);
        let Ok(name) = crate::sys::cstring(&journal) else { return false };
        matches!(crate::lockfile::lock_if_unheld(crate::sys::CWD, &name), Ok(None))
    }

    /// Refuses `--files` or `--items` whose prebuilt paths would not fit in
    /// memory: every worker builds its own before the start (no allocation
    /// in the timed loop), so they add up over the largest point.
    fn check_paths_fit_in_memory(&self) -> Result<()> {
        let workers = self.workers.iter().copied().max().unwrap_or(1) as u64;
        // A path (the --dir prefix, the chain and the name), its allocation and its place in the order.
        let per_path = 64 + 16 * self.options.lookup.depth as u64 + self.dir.as_os_str().len() as u64;
        let mdtest = self.workloads.iter().any(|w| w.is_mdtest());
        let lookups = self.workloads.iter().any(|w| matches!(w, Workload::Stat | Workload::OpenClose));
        let asked =
            [("--files", self.options.lookup.files as u64, lookups), ("--items", self.options.mdtest.items, mdtest)];
        let available = crate::sys::available_memory();
        for (option, count, _) in asked.into_iter().filter(|(_, _, used)| *used) {
            let need = count.saturating_mul(workers).saturating_mul(per_path);
            if let Some(available) = available.filter(|&a| need > a / 2) {
                bail!(
                    "{option} {count} at {} needs about {} MiB for the paths every worker builds \
                     before the start, more than half of the {} MiB of memory available; use fewer",
                    crate::vocab::workers(workers as usize),
                    need >> 20,
                    available >> 20
                );
            }
        }
        Ok(())
    }

    /// Checks combinations before anything runs, so a bad one costs nothing.
    pub fn validate(&self) -> Result<()> {
        self.check_timing()?;
        self.check_output_is_not_an_input()?;
        if self.options.lookup.absolute {
            crate::scratch::check_trusted_path(&self.dir)?;
        }
        self.check_combinations()?;
        self.check_rates()?;
        variant::check(&self.variants, self.order)?;
        self.check_options_have_a_workload()?;
        self.check_paths_fit_in_memory()?;
        self.check_macro_inputs()
    }

    /// Runs, `--until-ci`, the window and the stall timeout.
    fn check_timing(&self) -> Result<()> {
        if self.runs == 0 {
            bail!("--runs must be at least 1");
        }
        if let Some(value) = self.until_ci_pct {
            let pct = crate::vocab::readable_number(value);
            let pct = pct.as_str();
            if !(value > 0.0 && value < 100.0) {
                bail!("--until-ci {pct}: give the half-width of the confidence interval in percent of the mean, e.g. --until-ci 2");
            }
            if value < MIN_UNTIL_CI_PCT {
                bail!(
                    "--until-ci {pct}: no run-to-run noise is that small (the clock alone is coarser); \
                     use at least --until-ci {MIN_UNTIL_CI_PCT}"
                );
            }
            if self.max_runs < self.runs.max(2) {
                bail!(
                    "--max-runs {} is below the {} runs every point gets anyway (-n, and at least 2 for an interval)",
                    self.max_runs,
                    self.runs.max(2)
                );
            }
        }
        if self.duration < MIN_DURATION {
            bail!(
                "--duration {:?} is shorter than fsscale can time: the window's edges are set by a sleeping \
                 coordinator whose wake-ups are tens of microseconds late; use at least {MIN_DURATION:?}",
                self.duration
            );
        }
        if self.instruments.any() && self.command.as_ref().is_some_and(|c| c.driver.is_some()) {
            bail!("--profile and --verify follow fsscale's own workers; a command driver (--metric, --metric-json, --driver) runs its own clients, which they cannot tell apart: profile the driver with perf instead");
        }
        if self.stall_timeout < MIN_STALL_TIMEOUT {
            bail!("--stall-timeout {:?} is too short to tell a busy worker from a stuck one; use at least {MIN_STALL_TIMEOUT:?}", self.stall_timeout);
        }
        if let Some(steady) = self.steady.filter(|_| self.warmup_runs > 0) {
            let least = steady.rule.least_s();
            if steady.max_s < least {
                bail!(
                    "--warmup-max {}s is too short to tell a steady rate: the rule compares two blocks of its \
                     windows, {least}s; use at least --warmup-max {least}s, or 0 for warm-up runs of exactly --duration",
                    steady.max_s,
                );
            }
        }
        Ok(())
    }

    /// Every workload runs in some mode at some sharing level asked for
    /// (with `--share` given and a workload named, at every one asked).
    fn check_combinations(&self) -> Result<()> {
        for &workload in &self.workloads {
            let mut runnable = 0;
            for share in self.shares_for(workload) {
                // A named share is refused only when no requested mode can run it.
                let verdicts: Vec<Result<(), InputError>> =
                    self.modes.iter().map(|&mode| self.check_combination(workload, mode, share)).collect();
                let ok = verdicts.iter().filter(|v| v.is_ok()).count();
                runnable += ok;
                if ok == 0 && self.strict_shares {
                    return Err(verdicts.into_iter().find_map(Result::err).expect("no mode ran").into());
                }
            }
            if runnable == 0 {
                // Nothing of this workload would run: say why for the first combination.
                let first = self.check_combination(workload, self.modes[0], self.shares_for(workload)[0]);
                match first {
                    Err(why) => return Err(why.into()),
                    Ok(()) => bail!("{workload}: nothing to run"),
                }
            }
        }
        Ok(())
    }

    /// `--rate` and `--slo` pace fixed-time loops and replay, whose ops
    /// they can space; they time every op themselves.
    fn check_rates(&self) -> Result<()> {
        let option = match (self.objectives.is_empty(), self.rate_per_worker) {
            (false, _) => "--slo",
            (true, true) => "--rate-per-worker",
            (true, false) => "--rate",
        };
        if !self.objectives.is_empty() && !self.rates.is_empty() {
            bail!("--slo searches for its rates itself, below each point's closed-loop throughput; leave out {}", {
                if self.rate_per_worker {
                    "--rate-per-worker"
                } else {
                    "--rate"
                }
            });
        }
        if !self.objectives.is_empty() && !self.variants.is_empty() {
            bail!(
                "--slo searches each point on its own, so its variants would not share their rates; \
                 search each variant in a run of its own, or compare them with --rate at the rates found"
            );
        }
        if self.rates.is_empty() && self.objectives.is_empty() {
            if self.arrivals != Arrivals::Even {
                bail!("--arrivals spaces an open loop's ops; give --rate too (e.g. --rate 10k --arrivals poisson)");
            }
            return Ok(());
        }
        if let Some(w) = self.workloads.iter().find(|w| w.is_fixed_work() || **w == Workload::Command) {
            bail!(
                "{option}: {w} is {}, whose ops cannot be set at a rate; an open loop paces the fixed-time loops and replay",
                if *w == Workload::Command { "a command" } else { "fixed work" }
            );
        }
        if self.latency {
            bail!("{option} times every op already (response and service time); leave out --latency");
        }
        let most = self.workers.iter().copied().max().unwrap_or(1);
        if let Some(r) = self.rates.iter().find(|r| self.rate_per_worker && r.times(most).is_none()) {
            bail!("--rate-per-worker {r} at {most} workers asks more than 10^12 ops/s in all; use a lower rate");
        }
        Ok(())
    }

    /// Options that only some workloads read name one of them.
    fn check_options_have_a_workload(&self) -> Result<()> {
        match (&self.command, self.workloads.contains(&Workload::Command)) {
            (None, true) => bail!("the command workload needs --cmd, e.g. --cmd 'git -C {{dir}} status'"),
            (Some(_), false) => {
                bail!("--cmd and its options are for the command workload; add `command` to the workloads")
            }
            (Some(command), true) => command.validate()?,
            (None, false) => {}
        }
        if self.trace.is_some() && !self.workloads.contains(&Workload::Replay) {
            bail!("--trace is for the replay workload; add `replay` to the workloads");
        }
        let sized = |w: &Workload| w.traits().lookups == crate::vocab::Lookups::Files;
        if self.options.lookup.files != 1 && !self.workloads.iter().any(sized) {
            bail!("--files sizes the working set of stat and open-close (the mdtest phases take --items); add one of them to the workloads");
        }
        if !self.options.lookup.is_default() && !self.workloads.iter().any(|w| w.takes_lookup_shape()) {
            bail!("--depth, --path and --random shape the lookups of stat, open-close and the mdtest phases; add one of them to the workloads");
        }
        if self.options.lookup.files == 0 || self.options.lookup.depth == 0 {
            bail!("--files and --depth count from 1 (1 file, 1 path component: the default)");
        }
        Ok(())
    }

    /// The tree, tarball and extraction command of the macro workloads.
    fn check_macro_inputs(&self) -> Result<()> {
        let m = &self.macro_options;
        TreeSpec { scale: m.scale, seed: m.seed }.validate()?;
        if let Some(tarball) = &m.tarball {
            if !tarball.is_file() {
                bail!("--tarball {} is not a readable file", tarball.display());
            }
        }
        if let Some(tree) = &m.tree {
            if !tree.is_dir() {
                bail!("--tree {} is not a directory", tree.display());
            }
        }
        if let Some(cmd) = &m.extract_cmd {
            if !cmd.contains("{dir}") {
                bail!(
                    "--extract-cmd must contain {{dir}} (the worker's directory), e.g. 'tar xf {{tarball}} -C {{dir}}'"
                );
            }
        }
        Ok(())
    }

    /// Whether `workload` can run in `mode` at `share` with these options; the error says why not.
    /// The sharing levels `workload` runs at: those asked for, except that
    /// a `traverse` of an existing `--tree` (never copied, so never private)
    /// defaults to every worker walking all of it (`same`, N concurrent
    /// finds) unless `--share` was given (`shared`: walk it together).
    fn shares_for(&self, workload: Workload) -> Vec<Share> {
        if workload == Workload::Traverse && self.macro_options.tree.is_some() && !self.shares_given {
            return vec![Share::Same];
        }
        self.shares.clone()
    }

    fn check_combination(&self, workload: Workload, mode: Mode, share: Share) -> Result<(), InputError> {
        workload.check_share(share)?;
        if workload == Workload::Command && self.command.as_ref().is_some_and(|c| c.driver.is_some()) {
            if mode == Mode::Thread {
                return Err(InputError::unsupported(
                    "command: a driver is one command per point, so --mode does not apply; use --mode process",
                ));
            }
            if share != Share::Private {
                return Err(InputError::unsupported(
                    "command: a driver is one command per point, so --share does not apply; use --share private",
                ));
            }
        }
        if workload == Workload::Traverse && share == Share::Private && self.macro_options.tree.is_some() {
            return Err(InputError::unsupported(
                "traverse: --share private would need a copy of --tree per worker and --tree is \
                 never written to; use --share same or --share shared",
            ));
        }
        Ok(())
    }

    /// The rates of the points of `workers` workers: one closed loop
    /// without `--rate`, else each rate asked (times the workers with
    /// `--rate-per-worker`).
    fn point_rates(&self, workers: usize) -> Vec<Option<Rate>> {
        if self.rates.is_empty() {
            return vec![None];
        }
        let total = |r: &Rate| if self.rate_per_worker { r.times(workers) } else { Some(*r) };
        self.rates.iter().filter_map(total).map(Some).collect()
    }

    /// Points in run order: workload, then cache state (fixed work only),
    /// then mode, then sharing level, then worker count, then rate.
    pub fn points(&self) -> Vec<PointSpec> {
        let mut points = Vec::new();
        for &workload in &self.workloads {
            let caches: Vec<Option<Cache>> = if workload.is_fixed_work() {
                self.macro_options.caches.iter().copied().map(Some).collect()
            } else {
                vec![None]
            };
            for &cache in &caches {
                for &mode in &self.modes {
                    for share in self
                        .shares_for(workload)
                        .into_iter()
                        .filter(|&s| self.check_combination(workload, mode, s).is_ok())
                    {
                        for &workers in &self.workers {
                            // Variants innermost: the variants of one point are neighbours in every round.
                            let variants: Vec<Option<usize>> = match self.variants.len() {
                                0 => vec![None],
                                n => (0..n).map(Some).collect(),
                            };
                            for variant in variants {
                                for rate in self.point_rates(workers) {
                                    points.push(PointSpec { workload, mode, share, workers, cache, variant, rate });
                                }
                            }
                        }
                    }
                }
            }
        }
        points
    }
}

/// A plan for unit tests.
#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use super::fixtures::config;
    use super::*;

    #[test]
    fn default_rank_workers_end_at_the_ranks() {
        assert_eq!(default_rank_workers(1), [1]);
        assert_eq!(default_rank_workers(4), [1, 2, 4]);
        assert_eq!(default_rank_workers(6), [1, 2, 4, 6]);
        assert_eq!(default_rank_workers(1024).len(), 11);
    }

    #[test]
    fn default_workers_bracket_the_core_count() {
        assert_eq!(default_workers(1), [1, 2]);
        assert_eq!(default_workers(2), [1, 2, 4]);
        assert_eq!(default_workers(6), [1, 2, 4, 6, 12]);
        assert_eq!(default_workers(64), [1, 2, 4, 8, 16, 32, 64, 128]);
    }

    #[test]
    fn parses_worker_lists() {
        assert_eq!(parse_workers("1,2,4", 2).unwrap(), [1, 2, 4]);
        assert_eq!(parse_workers("1..4", 2).unwrap(), [1, 2, 3, 4]);
        assert_eq!(parse_workers("cores,2xcores,1", 8).unwrap(), [1, 8, 16]);
        assert_eq!(parse_workers("cores..2xcores", 2).unwrap(), [2, 3, 4]);
        assert_eq!(parse_workers("4,4, 2", 2).unwrap(), [2, 4]);
        assert_eq!(parse_workers("1024", 2).unwrap(), [1024]);
    }

    #[test]
    fn rejects_bad_worker_lists_with_a_hint() {
        for (spec, expected) in [
            ("0", "--workers: '0' gives 0 workers; use counts like 1,2,4, ranges like 1..8, 'cores' or '2xcores'"),
            (
                "two",
                "--workers: 'two' is not a worker count; use counts like 1,2,4, ranges like 1..8, 'cores' or '2xcores'",
            ),
            ("8..2", "--workers: range '8..2' runs backwards; write it as 2..8"),
            ("1,,2", "--workers: empty entry in '1,,2'; use counts like 1,2,4, ranges like 1..8, 'cores' or '2xcores'"),
            ("99999", "--workers: '99999' is 99999 workers, more than the limit of 16384"),
        ] {
            assert_eq!(parse_workers(spec, 2).unwrap_err().to_string(), expected);
        }
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("5 parsecs").unwrap_err().to_string().contains("unknown unit"));
        assert!(parse_duration("abc").unwrap_err().to_string().contains("not a duration"));
    }

    #[test]
    fn points_are_ordered_workload_mode_share_workers() {
        let points = config(vec![Workload::Stat, Workload::Read], vec![Cache::Warm]).points();
        assert_eq!(points.len(), 8);
        assert_eq!(
            points[1],
            PointSpec {
                workload: Workload::Stat,
                mode: Mode::Process,
                share: Share::Private,
                workers: 2,
                cache: None,
                variant: None,
                rate: None
            }
        );
        assert_eq!(points[2].mode, Mode::Thread);
        assert_eq!(points[4].workload, Workload::Read);
    }

    #[test]
    fn each_rate_is_a_point_and_per_worker_rates_grow_with_the_workers() {
        let rate = |t: &str| Rate::parse(t).unwrap();
        let mut config = config(vec![Workload::Stat], vec![]);
        config.modes = vec![Mode::Process];
        config.rates = vec![rate("1k"), rate("5k")];
        let rates: Vec<(usize, Option<Rate>)> = config.points().iter().map(|p| (p.workers, p.rate)).collect();
        assert_eq!(rates, [(1, Some(rate("1k"))), (1, Some(rate("5k"))), (2, Some(rate("1k"))), (2, Some(rate("5k")))]);
        config.rate_per_worker = true;
        let rates: Vec<Option<Rate>> = config.points().iter().map(|p| p.rate).collect();
        assert_eq!(rates, [Some(rate("1k")), Some(rate("5k")), Some(rate("2k")), Some(rate("10k"))]);
        config.validate().unwrap();
    }

    #[test]
    fn a_rate_is_refused_where_ops_cannot_be_paced() {
        let mut paced = config(vec![Workload::Stat, Workload::Untar], vec![Cache::Warm]);
        paced.rates = vec![Rate::parse("1k").unwrap()];
        assert_eq!(
            paced.check_rates().unwrap_err().to_string(),
            "--rate: untar is fixed work, whose ops cannot be set at a rate; an open loop paces the fixed-time loops and replay"
        );
        paced.workloads = vec![Workload::Stat];
        paced.latency = true;
        assert_eq!(
            paced.check_rates().unwrap_err().to_string(),
            "--rate times every op already (response and service time); leave out --latency"
        );
        paced.latency = false;
        paced.rate_per_worker = true;
        paced.rates = vec![Rate::parse("1G").unwrap()];
        paced.workers = vec![1, 2000];
        assert_eq!(
            paced.check_rates().unwrap_err().to_string(),
            "--rate-per-worker 1G at 2000 workers asks more than 10^12 ops/s in all; use a lower rate"
        );
        let mut closed = config(vec![Workload::Stat], vec![]);
        closed.arrivals = Arrivals::Poisson;
        assert!(closed.check_rates().unwrap_err().to_string().starts_with("--arrivals spaces an open loop's ops"));
    }

    #[test]
    fn cache_states_multiply_fixed_work_only() {
        let points = config(vec![Workload::Stat, Workload::Untar], vec![Cache::Warm, Cache::Cold]).points();
        let stat: Vec<_> = points.iter().filter(|p| p.workload == Workload::Stat).collect();
        assert_eq!(stat.len(), 4, "a fixed-time loop warms its own caches: one point per mode and count");
        assert!(stat.iter().all(|p| p.cache.is_none()));
        let untar: Vec<Option<Cache>> =
            points.iter().filter(|p| p.workload == Workload::Untar).map(|p| p.cache).collect();
        assert_eq!(untar.len(), 8);
        assert_eq!(&untar[..4], [Some(Cache::Warm); 4], "every warm point before the first cold one");
        assert_eq!(&untar[4..], [Some(Cache::Cold); 4]);
    }
}
