//! `fsscale history ...` and `fsscale gate`: their arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::values::*;
use fsscale::vocab::{Mode, Rate, Share};

#[derive(Args, Debug)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Record results files in the history (a run already recorded, by its run id, is left as it is, unless the file has more runs now: a run recorded unfinished and since resumed).
    Add(HistoryAddArgs),
    /// Print each matching series: a sparkline, then a row per result, marking the steps `changes` finds.
    Show(HistoryQueryArgs),
    /// Find where each matching series' level stepped (judged with each result's runs; steps held to a false discovery rate across the series searched): the first result after each step, the levels before and after, their ratio with its 95% interval, what the other figure did, and why, from the profiles both sides recorded. With --since, exits 3 when a step to worse begins after it.
    Changes(HistoryChangesArgs),
}

/// Where the store is.
#[derive(Args, Debug, Clone)]
pub struct StoreArg {
    /// The history store: an SQLite file, made if missing (default: $XDG_DATA_HOME/fsscale/history.sqlite, else ~/.local/share/fsscale/history.sqlite).
    #[arg(long, value_name = "PATH")]
    pub history_db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct HistoryAddArgs {
    /// Results files from `fsscale run` (from any host: series are kept apart by host).
    #[arg(value_name = "RESULTS.json", required = true)]
    pub results: Vec<PathBuf>,
    /// The revision the files measured, for files that do not record one (`run --rev`); a file's own is kept otherwise.
    #[arg(long, value_name = "REV", value_parser = parse_rev)]
    pub rev: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// Which series of the history a query takes: `history show`, `history
/// changes` and `report --history` filter alike.
#[derive(Args, Debug)]
pub struct SeriesArgs {
    /// Only this workload's series (or a group's: mdtest, mdtest-dirs).
    #[arg(short = 'w', long, value_name = "WORKLOAD", value_parser = parse_workload_arg)]
    pub workload: Option<WorkloadArg>,
    /// Only series at this worker count.
    #[arg(short = 'j', long, value_name = "N")]
    pub workers: Option<usize>,
    /// Only series of this host (as results record its hostname).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Only series of this mode.
    #[arg(long, value_parser = choice::<Mode>())]
    pub mode: Option<Mode>,
    /// Only series of this sharing level.
    #[arg(long, value_parser = choice::<Share>())]
    pub share: Option<Share>,
    /// Only series on this filesystem configuration (`--fs` label, e.g. ext4:noatime).
    #[arg(long, value_name = "FS")]
    pub fs: Option<String>,
    /// Only series of this --variant.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Only the series of open loops at this rate (their response p99), e.g. 20k.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub rate: Option<Rate>,
}

/// How a query searches each series for steps (`history show`, `history
/// changes`, `report --history`).
#[derive(Args, Debug)]
pub struct SearchArgs {
    /// Each series' most recent N results (steps are searched in the last 1,000 of them at most: the search is quadratic).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub last: u64,
    /// The false discovery rate steps are held to across the series searched (for one series, its significance), in (0, 0.5).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.01, value_parser = parse_significance)]
    pub significance: f64,
    /// The fewest results on each side of a step (2 to 100).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..=100))]
    pub min_segment: u64,
    /// The figure each series is judged on: ops (its ops/s, or a driver's metric) or cpu (ops per worker CPU-second, where every result has it); the other is searched too, and each step says what it did.
    #[arg(long, default_value = "ops", value_parser = choice::<FigureArg>())]
    pub figure: FigureArg,
}

#[derive(Args, Debug)]
pub struct HistoryQueryArgs {
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = choice::<AnalyzeFormat>())]
    pub format: AnalyzeFormat,
    #[command(flatten)]
    pub store: StoreArg,
    // Last: a heading holds for the arguments after it.
    #[command(flatten, next_help_heading = "Which series")]
    pub series: SeriesArgs,
    #[command(flatten, next_help_heading = "Step search")]
    pub search: SearchArgs,
}

#[derive(Args, Debug)]
pub struct HistoryChangesArgs {
    /// Exit 3 when a step to worse begins after this revision's results, or after this date (2026-11-27, or RFC 3339): the alert for a nightly job.
    #[arg(long, value_name = "REV|DATE", value_parser = parse_since)]
    pub since: Option<String>,
    #[command(flatten)]
    pub query: HistoryQueryArgs,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("current").required(true).args(["results", "run"])))]
pub struct GateArgs {
    /// Results of a revision known to be good (before the change). Give it again for more invocations of it: their runs are pooled, and invocations measured apart (alternately with bad's) steady a reference on a shared machine.
    #[arg(long, value_name = "GOOD.json", required = true)]
    pub good: Vec<PathBuf>,
    /// Results of a revision known to be bad (with the change), once or more: a revision is then called by which of good and bad it is nearer.
    #[arg(long, value_name = "BAD.json")]
    pub bad: Vec<PathBuf>,
    /// This revision's results, already measured.
    #[arg(long, value_name = "RESULTS.json")]
    pub results: Option<PathBuf>,
    /// Measure this revision first: the arguments of `fsscale run` (after --), e.g. `-- --like GOOD.json`. A run that fails skips the revision (125).
    #[arg(last = true, value_name = "RUN-ARGS", num_args = 1.., allow_hyphen_values = true)]
    pub run: Vec<String>,
    /// Call a point worse only when its whole confidence interval lies beyond ±PCT percent, as compare does (default 2).
    #[arg(long, value_name = "PCT")]
    pub noise_threshold: Option<f64>,
    /// Confidence level in percent.
    #[arg(short = 'c', long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,
    /// Judge ops per worker CPU-second instead of ops/s, as `compare --per-cpu` does: other work on the machine moves it far less (points without the workers' CPU time are not judged).
    #[arg(long)]
    pub per_cpu: bool,
    /// Before bisecting, run the gate at the known good revision with `--check good` and at the bad one with `--check bad`: it measures them again and exits 128 with the reason if they do not measure as said (as ktest's BISECT_CHECK).
    #[arg(long, value_name = "good|bad", value_parser = choice::<CheckArg>())]
    pub check: Option<CheckArg>,
    /// Where a revision is too noisy to call, measure it again, up to N rounds in all, before answering 125 (skip); each round's runs join the earlier ones.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_rounds: u32,
}
