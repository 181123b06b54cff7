//! The command line: clap lives here and nowhere else. Each subcommand's
//! arguments turn into a plain configuration for the core.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};

use fsscale::exec::Metric;
use fsscale::fs::{Backing, Fresh, FsOptions, FsSpec};
use fsscale::plan::{self, Cache, MacroOptions, Mode, Order, RunConfig};
use fsscale::results::rfc3339;
use fsscale::stats::hypothesis::TestKind;
use fsscale::sys;
use fsscale::workloads::{CommandSpec, Share, Workload};

#[derive(Parser, Debug)]
#[command(
    name = "fsscale",
    version,
    about = "Measure how filesystem and VFS operations scale with CPU cores",
    long_about = "Measure how filesystem and VFS operations scale with CPU cores.\n\n\
        fsscale runs classic microbenchmarks (stat, open/close, creat/unlink, ...) over a sweep of \
        worker counts, as processes or threads, in private or shared directories, repeats every \
        point, and records everything in versioned JSON. It then compares systems point by point with \
        significance tests (`compare`), explains where scaling stops with a Universal Scalability Law \
        fit (`analyze`), and includes a byte-compatible ministat (`ministat`).",
    after_help = "Quick start: `fsscale run` runs the default suite in the current directory; `fsscale list` shows every workload.",
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug)]
pub struct CleanupArgs {
    /// Also remove scratch directories of killed runs in DIR (only fsscale's own, with their marker, held by no live run; never across a mount). Repeatable.
    #[arg(long, value_name = "DIR")]
    pub scratch: Vec<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List every workload: what one op does and what each sharing level shares.
    List,
    /// Run workloads over a sweep of worker counts and print a table.
    Run(Box<RunArgs>),
    /// Write a self-contained HTML report (environment, charts, comparisons, findings) of results files.
    Report(ReportArgs),
    /// Draw one workload's scaling chart from results files, as SVG or PNG.
    Plot(PlotArgs),
    /// Remove what a killed run left behind: mounts, loop devices and images of filesystems fsscale made; list (and with --scratch DIR remove) its scratch directories.
    Cleanup(CleanupArgs),
    /// Print a shell completion script: `fsscale completions bash > /etc/bash_completion.d/fsscale`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (fsscale.1 and fsscale-SUBCOMMAND.1) into DIR, or print fsscale.1.
    Manpage {
        /// Directory to write every page into (e.g. /usr/local/share/man/man1).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Internal: outlives rank 0 of an MPI job to remove its scratch if it is killed.
    #[command(name = "scratch-warden", hide = true)]
    ScratchWarden,
    /// Generate the deterministic ports-like source tree, as a directory or an uncompressed tarball.
    Tree(TreeArgs),
    /// Compare results files point by point: change, confidence interval, test, verdict.
    Compare(CompareArgs),
    /// Scaling analysis: speedup, efficiency, Universal Scalability Law fit, collapse.
    Analyze(AnalyzeArgs),
    /// Print one point's per-run figures, one a line: input for `fsscale ministat` or any other tool.
    Export(ExportArgs),
    /// ministat-compatible statistics on data files (`fsscale ministat --help`).
    #[command(disable_help_flag = true)]
    Ministat {
        /// ministat's own arguments: [-C column] [-c confidence] [-d delimiters] [-Anqs] [-w width] [file ...]
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Workloads to run (see `fsscale list`), `mdtest` (its four file phases in order), `mdtest-dirs` (its directory phases), or `all` (every built-in one). Default: stat, open-close, creat-unlink, untar, traverse; `command` with --cmd, `replay` with --trace.
    #[arg(value_name = "WORKLOAD", value_parser = parse_workload_arg)]
    pub workloads: Vec<WorkloadArg>,

    /// Directory to run in; every run gets its own fresh scratch directory inside it (mode 0700), removed afterwards.
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub dir: PathBuf,

    /// Worker counts: e.g. `1,2,4`, `1..8`, `cores`, `2xcores`. Default: 1, powers of two up to the number of online CPUs, then twice that.
    #[arg(short = 'j', long, value_name = "LIST")]
    pub workers: Option<String>,

    /// Workers as forked processes (private fd tables) or threads of one process (one fd table); give both to run both.
    #[arg(long, value_name = "MODE", value_delimiter = ',', default_value = "process", value_parser = choices(MODES, parse_mode))]
    pub mode: Vec<Mode>,

    /// Sharing levels: private (own directory and files), shared (one directory or file, own entries or offsets), same (the very same entry). Default: private,shared where the workload allows them.
    #[arg(long, value_name = "LEVEL", value_delimiter = ',', value_parser = choices(SHARES, parse_share))]
    pub share: Option<Vec<Share>>,

    /// Bind worker i to the i-th CPU this process may use (CPU i mod online CPUs without taskset); recorded in the results. Under MPI a rank binds to its node's CPUs in rank order.
    #[arg(long)]
    pub pin: bool,

    /// Under MPI (mpirun -np R fsscale run ...): which ranks serve a point of N workers. spread: one rank per node before a second on any (N = nodes measures one client per node); pack: fill a node first.
    #[arg(long, value_name = "HOW", value_parser = choices(PLACEMENTS, parse_placement))]
    pub placement: Option<fsscale::cluster::Placement>,

    /// Length of the timed window of every run (e.g. 500ms, 2s, 1m; a bare number is seconds).
    #[arg(short, long, value_name = "TIME", default_value = "0.5s", value_parser = parse_duration)]
    pub duration: std::time::Duration,

    /// Untimed warm-up after the start barrier, before the window opens.
    #[arg(short, long, value_name = "TIME", default_value = "0.1s", value_parser = parse_duration)]
    pub warmup: std::time::Duration,

    /// A worker that makes no progress for this long (no ops, no tar entry, no directory; or that does not leave after the window) fails the run, named.
    #[arg(long, value_name = "TIME", default_value = "60s", value_parser = parse_duration)]
    pub stall_timeout: std::time::Duration,

    /// Repetitions of every point, each in a fresh scratch directory.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 5)]
    pub runs: usize,

    /// Runs of every point before its measured ones: measured and kept in the results as warm-up, left out of every statistic.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub warmup_runs: usize,

    /// interleaved: run k of every point (and filesystem) before run k+1 of any, so drift spreads over all alike; sequential: every run of a point before the next; shuffled: rounds in a random order (seed recorded).
    #[arg(long, value_name = "ORDER", default_value = "interleaved", value_parser = choices(ORDERS, parse_order))]
    pub order: Order,

    /// shuffled: the seed of the rounds' order (default: random, recorded in the results).
    #[arg(long, value_name = "N")]
    pub order_seed: Option<u64>,

    /// Repeat each point, round by round, until its mean's 95% confidence interval is within ± PCT% (or --max-runs); -n is then the least.
    #[arg(long, value_name = "PCT")]
    pub until_ci: Option<f64>,

    /// --until-ci: the most runs a point gets.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub max_runs: usize,

    /// Interval of the ops time series: `auto` (1 s for windows of 10 s or more, else a tenth of the window) or a time.
    #[arg(long, value_name = "TIME", default_value = "auto")]
    pub sample_interval: String,

    /// untar: size of the generated tree (1 = about 94,000 files, 265 MB); the tarball is made once and cached.
    #[arg(long, default_value_t = 0.01)]
    pub scale: f64,

    /// untar: seed of the generated tree.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// untar: extract this tarball instead of the generated one (read only).
    #[arg(long, value_name = "FILE")]
    pub tarball: Option<PathBuf>,

    /// untar: extract with this command instead of the built-in extractor, run by sh per worker; {tarball}, {dir}, {worker} and {workers} are replaced (e.g. 'tar xf {tarball} -C {dir}').
    #[arg(long, value_name = "CMD")]
    pub extract_cmd: Option<String>,

    /// traverse: walk this directory (never written to) instead of the generated tree.
    #[arg(long, value_name = "DIR")]
    pub tree: Option<PathBuf>,

    /// traverse: fstatat() every entry, as find -ls or ls -lR would.
    #[arg(long)]
    pub stat: bool,

    /// mdtest phases: files (or directories) each worker creates, stats, reads, removes (mdtest -n).
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = "mdtest phases")]
    pub items: u64,

    /// mdtest phases: bytes written to each file as it is created, and read back by mdtest-read (mdtest -w/-e).
    #[arg(long, value_name = "BYTES", default_value_t = 0, help_heading = "mdtest phases")]
    pub write_bytes: u64,

    /// mdtest phases: end each phase for every worker this long after the common start; the items done by then count (mdtest -W).
    #[arg(long, value_name = "TIME", value_parser = parse_duration, help_heading = "mdtest phases")]
    pub stonewall: Option<std::time::Duration>,

    /// Fixed work (untar, traverse, command): warm, or cold: sync and drop page, dentry and inode caches before every run (root only); warm,cold measures both, as separate points in one file.
    #[arg(long, value_name = "warm|cold", value_delimiter = ',', default_value = "warm", value_parser = choices(CACHES, parse_cache))]
    pub cache: Vec<Cache>,

    /// Time every op of fixed-time loops into log-linear histograms: p50/p90/p99/p99.9/max in the results and tables (two clock reads per op; off by default).
    #[arg(long)]
    pub latency: bool,

    /// Explain every run with instruments, exactly over its window: locks (where workers wait on kernel locks: lock:contention_* tracepoints, root), cpu (where their CPU time goes: sampled kernel and user stacks, root); e.g. --profile locks,cpu. Their cost is in the figures, which are marked.
    #[arg(long, value_name = "locks|cpu", value_delimiter = ',', value_parser = ["locks", "cpu"], help_heading = "Instruments")]
    pub profile: Vec<String>,

    /// Count the workers' system calls in the window with the kernel's tracepoints and warn where they differ from ops × calls per op by more than 0.5% (root).
    #[arg(long, help_heading = "Instruments")]
    pub verify: bool,

    /// Print the instruments' tables under every point, not only under those whose efficiency falls.
    #[arg(long, help_heading = "Instruments")]
    pub explain_all: bool,

    /// replay: a dbench loadfile (NTCreateX, ReadX, ... lines) instead of the built-in fileserver trace.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// command: what to measure. {dir} (the worker's own directory, also the working directory), {worker}, {workers} and {scratch} are replaced. Run as N concurrent copies timed to completion, or, with --metric, --metric-json or --driver, as one driver per point.
    #[arg(long, value_name = "CMD", help_heading = "Command workload")]
    pub cmd: Option<String>,

    /// command: untimed, before the start: per copy in its {dir} (once at --share same), or once before a driver.
    #[arg(long, value_name = "CMD", help_heading = "Command workload")]
    pub setup: Option<String>,

    /// command: untimed, after every copy finished: per copy in its {dir} (once at --share same), or once after a driver.
    #[arg(long, value_name = "CMD", help_heading = "Command workload")]
    pub cleanup: Option<String>,

    /// command: untimed, once before every run, e.g. 'sh -c "echo 3 > /proc/sys/vm/drop_caches"'.
    #[arg(long, value_name = "CMD", help_heading = "Command workload")]
    pub prepare: Option<String>,

    /// command: run --cmd, --setup, --cleanup and --prepare with sh -c (placeholders are quoted); otherwise they are split into words and run directly.
    #[arg(long, help_heading = "Command workload")]
    pub shell: bool,

    /// command: kill any of the commands, with its whole process group, after this long (e.g. 30s); the point then fails.
    #[arg(long, value_name = "TIME", value_parser = parse_duration, help_heading = "Command workload")]
    pub timeout: Option<std::time::Duration>,

    /// command: one driver command per point (its client count is {workers}) instead of N copies; implied by --metric and --metric-json; without them its wall time is the figure.
    #[arg(long, help_heading = "Command workload")]
    pub driver: bool,

    /// command driver: the figure is the number this regular expression captures (first group, else the whole match) in the last match in stdout, else stderr.
    #[arg(long, value_name = "REGEX", help_heading = "Command workload")]
    pub metric: Option<String>,

    /// command driver: the figure is the number at this dotted path in stdout parsed as JSON, e.g. jobs.0.read.iops.
    #[arg(long, value_name = "PATH", conflicts_with = "metric", help_heading = "Command workload")]
    pub metric_json: Option<String>,

    /// command driver: the figure's name in tables and charts (e.g. tps).
    #[arg(long, value_name = "NAME", help_heading = "Command workload")]
    pub metric_name: Option<String>,

    /// command driver: a larger figure is better (transactions/s); without it a smaller one is (latency, time).
    #[arg(long, help_heading = "Command workload")]
    pub higher_is_better: bool,

    /// Filesystems to run on, each made fresh: dir (--dir as it is, the default), tmpfs, ramfs (no size limit: refused unless the work fits in available memory), ext4, xfs, btrfs, f2fs, each with optional mount options: e.g. ext4,xfs or ext4:data=journal,ext4:data=ordered. Needs root.
    #[arg(long, value_name = "KIND[:OPTS],...", default_value = "dir", value_parser = parse_fs_list)]
    pub fs: FsList,

    /// What made filesystems live on: ram (an image in /dev/shm on a loop device), file:DIR (an image in DIR), or dev:/dev/NAME (a real device; needs --destroy-device-data).
    #[arg(long, value_name = "ram|file:DIR|dev:DEV", default_value = "ram", value_parser = parse_backing)]
    pub backing: Backing,

    /// Size of made filesystems (e.g. 512M, 4G); default: 1 GiB, or 3x the data the workloads write.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub fs_size: Option<u64>,

    /// Extra mkfs options, e.g. '-b 1024' or '-O ^has_journal'.
    #[arg(long, value_name = "OPTS", allow_hyphen_values = true)]
    pub mkfs_opts: Option<String>,

    /// Make the filesystem anew before every run, every point, or once per filesystem. With the interleaved order, point and once keep every point's (or every filesystem's) own mounted until its last run: that many mounts and images at once.
    #[arg(long, value_name = "run|point|once", default_value = "run", value_parser = choices(FRESHNESS, parse_fresh))]
    pub fresh: Fresh,

    /// Allow --backing dev: to erase the device (never a mounted one).
    #[arg(long)]
    pub destroy_device_data: bool,

    /// Results JSON file (default: fsscale-results/<timestamp>.json in the current directory). Rewritten after every run.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The end-of-run tables on stdout: text, markdown (a GitHub table per point, for pasting) or json (the results document).
    #[arg(long, default_value = "text", value_parser = choices(FORMATS, parse_format))]
    pub format: Format,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["dir", "tar"])))]
pub struct TreeArgs {
    /// Size factor: 1 = about 94,000 files in 27,000 directories and 265 MB; 0.01 for tests, 10 for big machines.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seed: the same seed and scale give the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the tree into this directory, which must not exist yet.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write an uncompressed tarball to this file, which must not exist yet.
    #[arg(long, value_name = "FILE")]
    pub tar: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files; the first is the base that the others are compared with.
    #[arg(value_name = "RESULTS.json", required = true)]
    pub results: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "fsscale-report.html")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Results files, one or more series each.
    #[arg(value_name = "RESULTS.json", required = true)]
    pub results: Vec<PathBuf>,
    /// The workload to chart.
    #[arg(short = 'w', long, value_parser = parse_workload_arg)]
    pub workload: WorkloadArg,
    /// Output file: .svg or .png.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline results file (from `fsscale run`).
    #[arg(value_name = "BASE.json")]
    pub base: PathBuf,
    /// Results files to compare with the baseline, each on its own.
    #[arg(value_name = "NEW.json", required = true)]
    pub new: Vec<PathBuf>,
    /// Test on the runs' ops/s: welch (unequal variances), student (pooled, as ministat) or mann-whitney (ranks, for non-normal data).
    #[arg(long, default_value = "welch", value_parser = choices(TESTS, parse_test))]
    pub test: TestKind,
    /// Confidence level in percent, for the interval and the verdict.
    #[arg(short = 'c', long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,
    /// Show a ministat-style dot plot of every point's runs (x = base, + = new).
    #[arg(long)]
    pub plot: bool,
    /// Exit with status 3 when any point is significantly worse by more than PCT percent (for CI gates).
    #[arg(long, value_name = "PCT")]
    pub fail_if_worse: Option<f64>,
    /// Output format: text, markdown or json.
    #[arg(long, default_value = "text", value_parser = choices(FORMATS, parse_format))]
    pub format: Format,
    /// No colours (also when NO_COLOR is set, or output is not a terminal).
    #[arg(long)]
    pub no_color: bool,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Results files from `fsscale run`.
    #[arg(value_name = "RESULTS.json", required_unless_present = "csv")]
    pub results: Vec<PathBuf>,
    /// Fit a file of (N, throughput) pairs instead, e.g. from another benchmark: one pair per line, comma or space separated.
    #[arg(long, value_name = "FILE", conflicts_with = "results")]
    pub csv: Option<PathBuf>,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = choices(FORMATS, parse_format))]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A results file from `fsscale run`.
    #[arg(value_name = "RESULTS.json")]
    pub results: PathBuf,
    /// ministat: one point's figure per run, a line each (needs --workload and -j); csv, markdown, json-lines: a row per point (per run with --runs), the options below filtering the points.
    #[arg(long, value_enum, default_value_t = ExportFormatArg::Ministat)]
    pub format: ExportFormatArg,
    /// With --format csv|markdown|json-lines: a row per run instead of per point.
    #[arg(long)]
    pub runs: bool,
    /// The point's workload.
    #[arg(long, value_parser = parse_workload)]
    pub workload: Option<Workload>,
    /// The point's worker count.
    #[arg(long, short = 'j')]
    pub workers: Option<usize>,
    /// The point's mode, when the file has several.
    #[arg(long, value_parser = choices(MODES, parse_mode))]
    pub mode: Option<Mode>,
    /// The point's sharing level, when the file has several.
    #[arg(long, value_parser = choices(SHARES, parse_share))]
    pub share: Option<Share>,
    /// The point's filesystem configuration (`--fs` label), when the file has several.
    #[arg(long)]
    pub fs: Option<String>,
    /// The point's cache state (warm or cold), when the file has both.
    #[arg(long, value_name = "warm|cold", value_parser = choices(CACHES, parse_cache))]
    pub cache: Option<Cache>,
}

/// `fsscale export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormatArg {
    Ministat,
    Csv,
    Markdown,
    JsonLines,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

fn parse_format(text: &str) -> Result<Format, String> {
    match text {
        "text" => Ok(Format::Text),
        "markdown" | "md" => Ok(Format::Markdown),
        "json" => Ok(Format::Json),
        _ => Err("use text, markdown or json".into()),
    }
}

fn parse_test(text: &str) -> Result<TestKind, String> {
    match text {
        "welch" => Ok(TestKind::Welch),
        "student" => Ok(TestKind::Student),
        "mann-whitney" | "mw" => Ok(TestKind::MannWhitney),
        _ => Err("use welch, student or mann-whitney".into()),
    }
}

/// A workload name on the command line, or `all`.
#[derive(Clone, Debug)]
pub enum WorkloadArg {
    One(Workload),
    /// `mdtest`, `mdtest-dirs`: phases run in mdtest's order.
    Group(&'static [Workload]),
    All,
}

fn parse_workload(name: &str) -> Result<Workload, String> {
    match parse_workload_arg(name)? {
        WorkloadArg::One(w) => Ok(w),
        WorkloadArg::All | WorkloadArg::Group(_) => Err("name one workload, not all or a group".into()),
    }
}

fn parse_workload_arg(name: &str) -> Result<WorkloadArg, String> {
    match name {
        "all" => return Ok(WorkloadArg::All),
        "mdtest" => return Ok(WorkloadArg::Group(&Workload::MDTEST)),
        "mdtest-dirs" => return Ok(WorkloadArg::Group(&Workload::MDTEST_DIRS)),
        _ => {}
    }
    Workload::from_name(name).map(WorkloadArg::One).ok_or_else(|| {
        let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
        format!(
            "unknown workload; choose from {}, the groups mdtest and mdtest-dirs, or all (`fsscale list` describes them)",
            names.join(", ")
        )
    })
}

/// Parsed `--fs`: mount options may hold commas, so a piece that does not
/// start with a filesystem kind continues the previous one's options.
#[derive(Clone, Debug)]
pub struct FsList(pub Vec<FsSpec>);

fn parse_fs_list(text: &str) -> Result<FsList, String> {
    let mut pieces: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let kind = piece.split(':').next().unwrap_or("");
        let is_kind = ["dir", "tmpfs", "ramfs", "ext4", "xfs", "btrfs", "f2fs"].contains(&kind);
        match pieces.last_mut() {
            Some(last) if !is_kind && last.contains(':') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => pieces.push(piece.to_string()),
        }
    }
    pieces.iter().map(|p| FsSpec::parse(p)).collect::<Result<Vec<_>, _>>().map(FsList)
}

fn parse_backing(text: &str) -> Result<Backing, String> {
    Backing::parse(text)
}

fn parse_fresh(text: &str) -> Result<Fresh, String> {
    match text {
        "run" => Ok(Fresh::Run),
        "point" => Ok(Fresh::Point),
        "once" => Ok(Fresh::Once),
        _ => Err("use run, point or once".into()),
    }
}

/// `512M`, `4G`, `1073741824`.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let value: f64 = number.parse().map_err(|_| format!("'{text}' is not a size; write e.g. 512M or 4G"))?;
    if value.is_nan() || value <= 0.0 {
        return Err(format!("'{text}' is not a positive size"));
    }
    Ok((value * (1u64 << shift) as f64) as u64)
}

fn parse_order(text: &str) -> Result<Order, String> {
    match text {
        "interleaved" => Ok(Order::Interleaved),
        "sequential" => Ok(Order::Sequential),
        "shuffled" => Ok(Order::Shuffled),
        _ => Err("use interleaved, sequential or shuffled".into()),
    }
}

fn parse_cache(text: &str) -> Result<Cache, String> {
    match text {
        "warm" => Ok(Cache::Warm),
        "cold" => Ok(Cache::Cold),
        _ => Err("use warm or cold".into()),
    }
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    match text {
        "process" | "processes" => Ok(Mode::Process),
        "thread" | "threads" => Ok(Mode::Thread),
        _ => Err("use process or thread (or process,thread for both)".into()),
    }
}

fn parse_share(text: &str) -> Result<Share, String> {
    Share::ALL
        .into_iter()
        .find(|s| s.name() == text)
        .ok_or_else(|| "use private, shared or same (comma-separated for several)".into())
}

/// An enumerated option's parser: `--help` and the completions list the
/// `values` (their aliases are accepted, not shown); `parse` makes the value.
fn choices<T: Clone + Send + Sync + 'static>(
    values: &[(&'static str, &'static [&'static str])],
    parse: fn(&str) -> Result<T, String>,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values: Vec<PossibleValue> =
        values.iter().map(|(name, aliases)| PossibleValue::new(*name).aliases(aliases.iter().copied())).collect();
    PossibleValuesParser::new(values).try_map(move |text| parse(&text))
}

const MODES: &[(&str, &[&str])] = &[("process", &["processes"]), ("thread", &["threads"])];
const SHARES: &[(&str, &[&str])] = &[("private", &[]), ("shared", &[]), ("same", &[])];
const CACHES: &[(&str, &[&str])] = &[("warm", &[]), ("cold", &[])];
const FORMATS: &[(&str, &[&str])] = &[("text", &[]), ("markdown", &["md"]), ("json", &[])];
const FRESHNESS: &[(&str, &[&str])] = &[("run", &[]), ("point", &[]), ("once", &[])];
const ORDERS: &[(&str, &[&str])] = &[("interleaved", &[]), ("sequential", &[]), ("shuffled", &[])];
const TESTS: &[(&str, &[&str])] = &[("welch", &[]), ("student", &[]), ("mann-whitney", &["mw"])];
const PLACEMENTS: &[(&str, &[&str])] = &[("spread", &[]), ("pack", &[])];

/// A shell completion script for `shell`, from the command definition.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "fsscale", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The man pages: `fsscale.1`, then `fsscale-SUB.1` for every visible subcommand.
pub fn manpages() -> Result<Vec<(String, Vec<u8>)>> {
    let command = <Cli as clap::CommandFactory>::command();
    let mut pages = Vec::new();
    let mut render = |name: String, cmd: clap::Command| -> Result<()> {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        pages.push((format!("{name}.1"), out));
        Ok(())
    };
    render("fsscale".into(), command.clone())?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("fsscale-{}", sub.get_name());
        let page = sub.clone().display_name(name.clone()).bin_name(format!("fsscale {}", sub.get_name()));
        render(name, page.version(env!("CARGO_PKG_VERSION")))?;
    }
    Ok(pages)
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    plan::parse_duration(text)
}

fn parse_placement(text: &str) -> Result<fsscale::cluster::Placement, String> {
    text.parse()
}

/// This process's place in an MPI job, as the config needs it.
#[derive(Clone, Copy)]
pub struct RankOf {
    pub rank: usize,
    pub ranks: usize,
}

impl RunArgs {
    /// Builds the core's configuration; `argv` is recorded in the results.
    /// Under MPI (`mpi`) the default worker counts go up to the ranks, and
    /// only rank 0 makes the results file.
    pub fn into_config(self, argv: Vec<String>, mpi: Option<RankOf>) -> Result<RunConfig> {
        let cores = sys::usable_cpus();
        let workers = match (&self.workers, mpi) {
            (Some(spec), _) => plan::parse_workers(spec, cores).map_err(anyhow::Error::msg)?,
            (None, Some(job)) => plan::default_rank_workers(job.ranks),
            (None, None) => plan::default_workers(cores),
        };
        let mut workloads = Vec::new();
        for arg in &self.workloads {
            match arg {
                WorkloadArg::All => workloads.extend(Workload::ALL.into_iter().filter(|w| w.is_builtin())),
                WorkloadArg::One(w) => workloads.push(*w),
                WorkloadArg::Group(phases) => workloads.extend(phases.iter().copied()),
            }
        }
        if workloads.is_empty() {
            match (&self.cmd, &self.trace) {
                (None, None) => workloads.extend(Workload::DEFAULT_SUITE),
                (cmd, trace) => {
                    workloads.extend(cmd.as_ref().map(|_| Workload::Command));
                    workloads.extend(trace.as_ref().map(|_| Workload::Replay));
                }
            }
        }
        let command = self.command_spec()?;
        let mut seen = std::collections::HashSet::new();
        workloads.retain(|w| seen.insert(*w));
        let sample_interval = match self.sample_interval.as_str() {
            "auto" => plan::auto_sample_interval(self.duration),
            text => {
                let interval = plan::parse_duration(text).map_err(|e| anyhow::anyhow!("--sample-interval {e}"))?;
                if interval < std::time::Duration::from_millis(1) {
                    bail!("--sample-interval must be at least 1ms");
                }
                interval
            }
        };
        let output = match (self.output, mpi) {
            (Some(path), _) => path,
            // Rank 0 alone writes the results.
            (None, Some(job)) if job.rank != 0 => PathBuf::new(),
            (None, _) => default_output()?,
        };
        Ok(RunConfig {
            dir: self.dir,
            workloads,
            modes: dedup(self.mode),
            shares: dedup(self.share.clone().unwrap_or_else(|| vec![Share::Private, Share::Shared])),
            shares_given: self.share.is_some(),
            strict_shares: self.share.is_some()
                && !self.workloads.is_empty()
                && !self.workloads.iter().any(|w| matches!(w, WorkloadArg::All)),
            filesystems: FsOptions {
                specs: self.fs.0.clone(),
                backing: self.backing.clone(),
                size: self.fs_size,
                mkfs_options: self.mkfs_opts.as_deref().unwrap_or("").split_whitespace().map(String::from).collect(),
                fresh: self.fresh,
                destroy_device_data: self.destroy_device_data,
            },
            macro_options: MacroOptions {
                scale: self.scale,
                seed: self.seed,
                tarball: self.tarball.clone(),
                extract_cmd: self.extract_cmd.clone(),
                cache_dir: cache_dir(),
                tree: self.tree.clone(),
                stat: self.stat,
                caches: dedup(self.cache.clone()),
            },
            command,
            trace: self.trace.clone(),
            latency: self.latency,
            instruments: instruments(&self.profile, self.verify),
            mdtest: fsscale::workloads::MdtestOptions {
                items: self.items,
                write_bytes: self.write_bytes,
                stonewall: self.stonewall,
            },
            workers,
            pin: self.pin,
            duration: self.duration,
            warmup: self.warmup,
            runs: self.runs,
            warmup_runs: self.warmup_runs,
            order: self.order,
            order_seed: self.order_seed.unwrap_or_else(|| {
                u64::from_str_radix(&sys::random_hex(8), 16).expect("random_hex gives 16 hex digits")
            }),
            until_ci_pct: self.until_ci,
            max_runs: self.max_runs,
            sample_interval,
            stall_timeout: self.stall_timeout,
            output,
            command_line: argv,
        })
    }
}

impl RunArgs {
    /// The `command` workload's settings, or an error naming the flag that needs `--cmd`.
    fn command_spec(&self) -> Result<Option<CommandSpec>> {
        let Some(cmd) = &self.cmd else {
            let orphan = [
                ("--setup", self.setup.is_some()),
                ("--cleanup", self.cleanup.is_some()),
                ("--prepare", self.prepare.is_some()),
                ("--shell", self.shell),
                ("--timeout", self.timeout.is_some()),
                ("--driver", self.driver),
                ("--metric", self.metric.is_some()),
                ("--metric-json", self.metric_json.is_some()),
                ("--metric-name", self.metric_name.is_some()),
                ("--higher-is-better", self.higher_is_better),
            ];
            if let Some((flag, _)) = orphan.iter().find(|(_, given)| *given) {
                bail!("{flag} belongs to the command workload, which needs --cmd");
            }
            return Ok(None);
        };
        let driver = self.driver || self.metric.is_some() || self.metric_json.is_some();
        if !driver && (self.metric_name.is_some() || self.higher_is_better) {
            bail!("--metric-name and --higher-is-better describe a driver's figure; add --metric, --metric-json or --driver");
        }
        let metric = driver
            .then(|| {
                Metric::new(
                    self.metric.as_deref(),
                    self.metric_json.as_deref(),
                    self.metric_name.as_deref(),
                    self.higher_is_better,
                )
            })
            .transpose()
            .map_err(anyhow::Error::msg)?;
        if self.timeout.is_some_and(|t| t.is_zero()) {
            bail!("--timeout must be longer than 0");
        }
        Ok(Some(CommandSpec {
            cmd: cmd.clone(),
            setup: self.setup.clone(),
            cleanup: self.cleanup.clone(),
            prepare: self.prepare.clone(),
            shell: self.shell,
            timeout: self.timeout,
            driver: metric,
        }))
    }
}

/// Where generated tarballs are cached: $FSSCALE_CACHE_DIR, else
/// $XDG_CACHE_HOME/fsscale, else ~/.cache/fsscale (HOME, or the password
/// database's home). Never a shared directory: the runner refuses one that
/// is not the user's own or that others can write.
fn cache_dir() -> PathBuf {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    from("FSSCALE_CACHE_DIR")
        .or_else(|| from("XDG_CACHE_HOME").map(|d| d.join("fsscale")))
        .or_else(|| from("HOME").or_else(fsscale::sys::home_from_passwd).map(|d| d.join(".cache").join("fsscale")))
        .unwrap_or_else(|| PathBuf::from(format!("/var/tmp/fsscale-cache-{}", fsscale::sys::euid())))
}

fn dedup<T: PartialEq + Copy>(items: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// `fsscale-results/2026-11-22T02-06-03Z.json`, with a suffix if that exists.
/// `fsscale-results/<time>.json`, created exclusively so that two runs
/// started in the same second never share it.
fn default_output() -> Result<PathBuf> {
    let stamp = rfc3339(std::time::SystemTime::now()).replace(':', "-");
    fsscale::atomic_file::create_unique(Path::new("fsscale-results"), &stamp, "json")
}

/// `--profile` and `--verify` as the core's config.
fn instruments(profile: &[String], verify: bool) -> fsscale::instruments::InstrumentConfig {
    fsscale::instruments::InstrumentConfig {
        locks: profile.iter().any(|p| p == "locks"),
        cpu: profile.iter().any(|p| p == "cpu"),
        verify,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn completions_and_man_pages_name_every_subcommand_and_option() {
        let command = Cli::command();
        let pages = manpages().unwrap();
        let page = |name: &str| {
            let found = pages.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no page {name}"));
            String::from_utf8_lossy(&found.1).replace("\\-", "-")
        };
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            let script = completions(shell);
            for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
                assert!(script.contains(sub.get_name()), "{shell}: {}", sub.get_name());
                for long in sub.get_arguments().filter_map(|a| a.get_long()) {
                    assert!(script.contains(long), "{shell}: {} --{long}", sub.get_name());
                }
            }
        }
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let text = page(&format!("fsscale-{}.1", sub.get_name()));
            for long in sub.get_arguments().filter_map(|a| a.get_long()) {
                assert!(text.contains(&format!("--{long}")), "fsscale-{}.1: --{long}", sub.get_name());
            }
            assert!(page("fsscale.1").contains(sub.get_name()), "fsscale.1 lists {}", sub.get_name());
        }
        // The enumerated options list their values for completion.
        assert!(completions(clap_complete::Shell::Fish).contains("process"), "--mode's values");
    }

    #[test]
    fn builds_a_config_from_arguments() {
        let cli = Cli::try_parse_from([
            "fsscale",
            "run",
            "stat",
            "all",
            "-j",
            "1,3",
            "--mode",
            "process,thread",
            "--share",
            "same",
            "-n",
            "2",
            "--duration",
            "200ms",
            "-o",
            "x.json",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        let config = args.into_config(vec!["fsscale".into()], None).unwrap();
        assert_eq!(config.workloads.len(), Workload::ALL.len() - 1, "all = every built-in workload");
        assert!(!config.workloads.contains(&Workload::Command));
        assert_eq!(config.workloads[0], Workload::Stat);
        assert_eq!(config.workers, [1, 3]);
        assert_eq!(config.modes, [Mode::Process, Mode::Thread]);
        assert_eq!(config.shares, [Share::Same]);
        assert_eq!(config.sample_interval, std::time::Duration::from_millis(20));
        assert_eq!(config.output, PathBuf::from("x.json"));
    }

    #[test]
    fn unknown_workload_names_the_choices() {
        let err = Cli::try_parse_from(["fsscale", "run", "stats"]).unwrap_err().to_string();
        assert!(err.contains("unknown workload; choose from stat, stat-deep,"), "{err}");
    }
}
