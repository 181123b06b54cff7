//! `fsscale run`'s arguments, in groups as `--help` shows them, and the
//! core's [`RunConfig`] they become.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;

use fsscale::cluster::Placement;
use fsscale::fs::{Backing, Fresh, FsOptions};
use fsscale::instruments::{Instrument, Instruments};
use fsscale::plan::{self, Arrivals, Mode, Order, RunConfig};
use fsscale::results::rfc3339;
use fsscale::sys;
use fsscale::workloads::{Share, Workload, WorkloadOptions};

use super::values::*;
use super::workload_args::*;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Workloads to run (see `fsscale list`), `mdtest` (its four file phases in order), `mdtest-dirs` (its directory phases), or `all` (every built-in one). Default: stat, open-close, creat-unlink, untar, traverse; `command` with --cmd, `replay` with --trace.
    #[arg(value_name = "WORKLOAD", value_parser = WorkloadNames, hide_possible_values = true)]
    pub workloads: Vec<WorkloadArg>,

    #[command(flatten)]
    pub sweep: SweepArgs,

    #[command(flatten)]
    pub timing: TimingArgs,

    #[command(flatten)]
    pub macros: MacroArgs,

    #[command(flatten)]
    pub mdtest: MdtestArgs,

    #[command(flatten)]
    pub lookup: LookupArgs,

    #[command(flatten)]
    pub command: CommandArgs,

    #[command(flatten)]
    pub instruments: InstrumentArgs,

    #[command(flatten)]
    pub filesystems: FsArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which points: where, how many workers, made how, sharing what.
#[derive(Args, Debug)]
#[command(next_help_heading = "Sweep")]
pub struct SweepArgs {
    /// Directory to run in; every run gets its own fresh scratch directory inside it (mode 0700), removed afterwards.
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub dir: PathBuf,

    /// Worker counts: e.g. `1,2,4`, `1..8`, `cores`, `2xcores`. Default: 1, powers of two up to the number of online CPUs, then twice that.
    #[arg(short = 'j', long, value_name = "LIST")]
    pub workers: Option<String>,

    /// Workers as forked processes (private fd tables) or threads of one process (one fd table); give both to run both.
    #[arg(long, value_name = "MODE", value_delimiter = ',', default_value = "process", value_parser = choice::<Mode>())]
    pub mode: Vec<Mode>,

    /// Sharing levels: private (own directory and files), shared (one directory or file, own entries or offsets), same (the very same entry). Default: private,shared where the workload allows them.
    #[arg(long, value_name = "LEVEL", value_delimiter = ',', value_parser = choice::<Share>())]
    pub share: Option<Vec<Share>>,

    /// An open loop: each point's ops are due at this many a second, all workers together, whether or not the last has returned, so a slow system builds a queue as real clients would; each op's response time (from when it was due) and service time (from when it began) are recorded, with how late the workers fell. A point per rate: e.g. 20k, 10k,20k,50k, or 10k..50k (steps of the first). Fixed-time loops and replay.
    #[arg(long, value_name = "LIST", conflicts_with = "rate_per_worker")]
    pub rate: Option<String>,

    /// --rate for each worker: a point of N workers asks N times each rate.
    #[arg(long, value_name = "LIST")]
    pub rate_per_worker: Option<String>,

    /// Search each point for the highest rate whose response times meet these objectives (p50, p99 or p99.9, e.g. p99=1ms or p50=200us,p99=2ms): a closed loop first, then open loops at rates found by bisection below its throughput, each with its runs, until the rates met and missed are within 5%; a rate is met when the response times of all its runs, merged, meet every objective and no run fell behind. Fixed-time loops and replay.
    #[arg(long, value_name = "OBJECTIVES", conflicts_with_all = ["rate", "rate_per_worker"])]
    pub slo: Option<String>,

    /// How an open loop's ops are spaced: even (fixed gaps, as wrk2 and fio's rate_iops), or poisson (exponential gaps, the arrivals of many independent clients; drawn from the order seed, recorded).
    #[arg(long, value_name = "HOW", default_value = "even", value_parser = choice::<Arrivals>())]
    pub arrivals: Arrivals,

    /// Bind worker i to the i-th of the CPUs this process may use (modulo their count), in topology order: one thread of every core first, socket by socket, then the cores' SMT siblings (as will-it-scale orders them); the order and each run's binding are recorded in the results. Under MPI a rank binds to its node's CPUs in rank order.
    #[arg(long)]
    pub pin: bool,

    /// Under MPI (mpirun -np R fsscale run ...): which ranks serve a point of N workers. spread: one rank per node before a second on any (N = nodes measures one client per node); pack: fill a node first.
    #[arg(long, value_name = "HOW", value_parser = choice::<Placement>())]
    pub placement: Option<fsscale::cluster::Placement>,

    /// A configuration to measure against the others in this run (repeatable, two or more): NAME=COMMAND, a shell command run before each of its runs, e.g. --variant off='sysctl -w vm.x=0' --variant on='sysctl -w vm.x=1' (an empty COMMAND is a baseline). Every point runs under each variant in every round, in an order rotated round by round and recorded; `{dir}` and $FSSCALE_DIR are the run's directory, $FSSCALE_VARIANT the name (the command workload sees it too). Compare with `fsscale compare FILE --between variant=off,on`.
    #[arg(long, value_name = "NAME=COMMAND")]
    pub variant: Vec<String>,

    /// NAME=COMMAND: a shell command run after each run of variant NAME, however the run ended (e.g. a remount back).
    #[arg(long, value_name = "NAME=COMMAND")]
    pub variant_teardown: Vec<String>,
}

/// How long each run is timed, how often a point repeats, in what order.
#[derive(Args, Debug)]
#[command(next_help_heading = "Timing and repetition")]
pub struct TimingArgs {
    /// Length of the timed window of every run (e.g. 500ms, 2s, 1m; a bare number is seconds); it
    /// stays open until every worker has made an op in it.
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

    /// Warm-up runs of fixed-time loops last until the rate is steady (two successive blocks of five 100 ms windows within 2%), never shorter than --duration, at most this long (or --duration, if longer); 0: exactly --duration. Fixed work warms for --warmup-runs whole runs.
    #[arg(long, value_name = "TIME", default_value = "5s", value_parser = parse_duration)]
    pub warmup_max: std::time::Duration,

    /// interleaved: run k of every point (and filesystem) before run k+1 of any, so drift spreads over all alike; sequential: every run of a point before the next; shuffled: rounds in a random order (seed recorded).
    #[arg(long, value_name = "ORDER", default_value = "interleaved", value_parser = choice::<Order>())]
    pub order: Order,

    /// shuffled: the seed of the rounds' order (default: random, recorded in the results).
    #[arg(long, value_name = "N")]
    pub order_seed: Option<u64>,

    /// Repeat each point, round by round, until its mean's 95% confidence interval is within ± PCT% (or --max-runs); -n is then the least. With --variant, until every variant's ratio to the first, paired by round, has a 95% interval within ± PCT% (default 2; for exactly -n rounds give --max-runs equal to -n).
    #[arg(long, value_name = "PCT")]
    pub until_ci: Option<f64>,

    /// --until-ci: the most runs a point gets (default 30; with --variant, 50 rounds).
    #[arg(long, value_name = "N")]
    pub max_runs: Option<usize>,

    /// Interval of the ops time series: `auto` (1 s for windows of 10 s or more, else a tenth of the window) or a time.
    #[arg(long, value_name = "TIME", default_value = "auto")]
    pub sample_interval: String,
}

/// What else each run records (the core's `InstrumentConfig`, and latency histograms).
#[derive(Args, Debug)]
#[command(next_help_heading = "Instruments")]
pub struct InstrumentArgs {
    /// Time every op of fixed-time loops into log-linear histograms: p50/p90/p99/p99.9/max in the results and tables (two clock reads per op; off by default).
    #[arg(long)]
    pub latency: bool,

    /// Explain every run with instruments, exactly over its window (each below); e.g. --profile locks,cpu,offcpu. Their cost is in the figures, which are marked.
    #[arg(long, value_name = "INSTRUMENT", value_delimiter = ',', value_parser = profile_names())]
    pub profile: Vec<Instrument>,

    /// --profile offcpu: leave out sleeps shorter than this (to their wakeup), as bcc's --min-block-time does; e.g. 100us. The results state it.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub min_sleep: Option<std::time::Duration>,

    /// --profile locks and offcpu: walk the kernel stack at every wait and sleep instead of one in N per task (the rest spread over the stacks walked on the same lock, or in the same sleep state); N adapts to the rate, at most 64. Exact sites, at the cost the sampling saves; counts, times, objects and holders are exact either way.
    #[arg(long)]
    pub profile_every_stack: bool,

    /// How --profile locks and offcpu collect: bpf (programs pair and sum events in the kernel, the least disturbance), tracefs (a trace buffer read by fsscale; each wait's stack costs the waiter tens of µs). Default: bpf where the kernel allows it, else tracefs; the results record which.
    #[arg(long, value_name = "bpf|tracefs", value_parser = choice::<Collector>())]
    pub profile_via: Option<Collector>,

    /// Count the workers' system calls in the window with the kernel's tracepoints and warn where they differ from ops × calls per op by more than 0.5% (root).
    #[arg(long)]
    pub verify: bool,

    /// Measure what the instruments cost: every point runs with them off (variant unprofiled) and on (profiled) in alternating, paired rounds, until the ratio's 95% interval is within ±2% (as --variant does); the run prints profiled against unprofiled.
    #[arg(long)]
    pub profile_cost: bool,

    /// Print the instruments' tables under every point, not only under those whose efficiency falls.
    #[arg(long)]
    pub explain_all: bool,
}

/// Filesystems made for the runs (the core's `FsOptions`).
#[derive(Args, Debug)]
#[command(next_help_heading = "Filesystems")]
pub struct FsArgs {
    /// Filesystems to run on, each made fresh: dir (--dir as it is, the default), tmpfs, ramfs (no size limit: refused unless the work fits in available memory), ext4, xfs, btrfs, f2fs, each with optional mount options: e.g. ext4,xfs or ext4:data=journal,ext4:data=ordered. Needs root.
    #[arg(long, value_name = "KIND[:OPTS],...", default_value = "dir", value_parser = parse_fs_list)]
    pub fs: FsList,

    /// What made filesystems live on: ram (an image in /dev/shm on a loop device), file:DIR (an image in DIR), or dev:/dev/NAME (a real device; needs --destroy-device-data).
    #[arg(long, value_name = "ram|file:DIR|dev:DEV", default_value = "ram", value_parser = parse_backing)]
    pub backing: Backing,

    /// Size of made filesystems (e.g. 512M, 4G); default: the largest of 1 GiB, 3x the data the workloads
    /// write, and 32 KiB per file, directory and link they make (ext4 makes an inode per 16 KiB), so
    /// untar --scale 1 makes filesystems of several GB: sparse images, which hold only what is written.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub fs_size: Option<u64>,

    /// Extra mkfs options, e.g. '-b 1024' or '-O ^has_journal'; they follow fsscale's own (ext4's
    /// '-E lazy_itable_init=0,lazy_journal_init=0', which an -E here replaces).
    #[arg(long, value_name = "OPTS", allow_hyphen_values = true)]
    pub mkfs_opts: Option<String>,

    /// Make the filesystem anew before every run, every point, or once per filesystem. With the interleaved order, point and once keep every point's (or every filesystem's) own mounted until its last run: that many mounts and images at once.
    #[arg(long, value_name = "run|point|once", default_value = "run", value_parser = choice::<Fresh>())]
    pub fresh: Fresh,

    /// Allow --backing dev: to erase the device (never a mounted one).
    #[arg(long)]
    pub destroy_device_data: bool,
}

/// Where the results go and how the tables are written.
#[derive(Args, Debug)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Results JSON file (default: fsscale-results/<timestamp>.json in the current directory). Rewritten after every run.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The end-of-run tables on stdout: text, markdown (a GitHub table per point, for pasting) or json (the results document).
    #[arg(long, default_value = "text", value_parser = choice::<Format>())]
    pub format: Format,

    /// Run again the plan RESULTS.json records, read as data: its workloads, sweep, timing and order seed, with its --tarball or --tree as they were then (compared by content hash). Its plan is printed first. Commands (--variant, --cmd, --extract-cmd, ...) and places (--dir, --backing, --fs mount options, --mkfs-opts, --destroy-device-data) it records are never taken unless given again here or accepted with --trust-recorded. Besides those, only -o, --label, --note, --rev, --history, --history-db, -q, --format and --force may be given. The other side of an A/B, after a reboot, in one command.
    #[arg(long, value_name = "RESULTS.json", conflicts_with = "resume")]
    pub like: Option<PathBuf>,

    /// Continue the interrupted or failed run RESULTS.json records, into that file: the same points, order seed and settings, keeping every finished run (the recorded plan is read as --like reads it).
    #[arg(long, value_name = "RESULTS.json", conflicts_with_all = ["output", "label", "note", "rev"])]
    pub resume: Option<PathBuf>,

    /// With --like or --resume: take the commands and places the file records (listed in the refusal without it).
    #[arg(long)]
    pub trust_recorded: bool,

    /// Replace an existing results file at -o (otherwise refused, so a finished baseline is never lost).
    #[arg(long)]
    pub force: bool,

    /// What this run is called in compare, report and plot (instead of the results file's path), e.g. --label pool-of-threads.
    #[arg(long, value_name = "NAME", value_parser = parse_label)]
    pub label: Option<String>,

    /// Free text kept in the results and shown by report and compare, e.g. what was changed for this run.
    #[arg(long, value_name = "TEXT", value_parser = parse_note)]
    pub note: Option<String>,

    /// The revision measured (a commit, a kernel version, a build): kept in the results, and what the history names the result by, e.g. --rev v6.12-rc3 or --rev $(git rev-parse --short HEAD).
    #[arg(long, value_name = "REV", value_parser = parse_rev)]
    pub rev: Option<String>,

    /// When the run ends (complete, interrupted or failed), add its results to the history store (see `fsscale history`).
    #[arg(long)]
    pub history: bool,

    /// The history store: an SQLite file, made if missing (default: $XDG_DATA_HOME/fsscale/history.sqlite, else ~/.local/share/fsscale/history.sqlite).
    #[arg(long, value_name = "PATH", requires = "history")]
    pub history_db: Option<PathBuf>,

    /// No progress: neither the plan's size and estimated time, nor the progress line (on a terminal) or a progress line every 30 s (otherwise, as in a log). Warnings and errors still show.
    #[arg(short, long)]
    pub quiet: bool,
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
        let RunArgs {
            workloads: asked,
            sweep,
            timing,
            macros,
            mdtest,
            lookup,
            command,
            instruments,
            filesystems,
            output,
        } = self;
        let cores = sys::usable_cpus();
        let workers = match (&sweep.workers, mpi) {
            (Some(spec), _) => plan::parse_workers(spec, cores)?,
            (None, Some(job)) => plan::default_rank_workers(job.ranks),
            (None, None) => plan::default_workers(cores),
        };
        let workloads = chosen_workloads(&asked, command.cmd.is_some(), macros.trace.is_some());
        let sample_interval = timing.sample_interval()?;
        let (label, note, rev, replace_output) = (output.label, output.note, output.rev, output.force);
        let output = match (output.output, mpi) {
            (Some(path), _) => path,
            // Rank 0 alone writes the results.
            (None, Some(job)) if job.rank != 0 => PathBuf::new(),
            (None, _) => default_output()?,
        };
        let (grow_bytes, map_bytes, walk_stat) = (macros.grow_size, macros.map_size, macros.stat);
        let memory_limit = macros.memory_limit;
        let variants = instruments.variants(plan::variant::from_flags(&sweep.variant, &sweep.variant_teardown)?)?;
        if mpi.is_some() && !variants.is_empty() {
            bail!("--variant runs its commands on this machine only: under MPI, run one job per variant and compare them with fsscale compare");
        }
        let no_variants = variants.is_empty();
        let paired_default = !no_variants && timing.until_ci.is_none() && timing.max_runs != Some(timing.runs);
        Ok(RunConfig {
            dir: sweep.dir,
            workloads,
            modes: dedup(sweep.mode),
            shares: dedup(sweep.share.clone().unwrap_or_else(|| vec![Share::Private, Share::Shared])),
            shares_given: sweep.share.is_some(),
            strict_shares: sweep.share.is_some()
                && !asked.is_empty()
                && !asked.iter().any(|w| matches!(w, WorkloadArg::All)),
            filesystems: filesystems.into_options()?,
            trace: macros.trace.clone(),
            macro_options: macros.into_options(),
            command: command.into_spec()?,
            latency: instruments.latency,
            rate_per_worker: sweep.rate_per_worker.is_some(),
            rates: match (&sweep.rate, &sweep.rate_per_worker) {
                (Some(spec), _) => plan::parse_rates(spec, "--rate")?,
                (None, Some(spec)) => plan::parse_rates(spec, "--rate-per-worker")?,
                (None, None) => Vec::new(),
            },
            arrivals: sweep.arrivals,
            objectives: sweep.slo.as_deref().map(plan::parse_objectives).transpose()?.unwrap_or_default(),
            instruments: instruments.config(),
            options: WorkloadOptions {
                lookup: lookup.shape(),
                mdtest: mdtest.options(),
                grow_bytes,
                map_bytes,
                walk_stat,
            },
            workers,
            pin: sweep.pin,
            duration: timing.duration,
            warmup: timing.warmup,
            runs: timing.runs,
            warmup_runs: timing.warmup_runs,
            steady: plan::SteadyWarmup::at_most(timing.warmup_max),
            variants,
            order: timing.order,
            order_seed: timing.order_seed.unwrap_or_else(|| {
                u64::from_str_radix(&sys::random_hex(8), 16).expect("random_hex gives 16 hex digits")
            }),
            // Variants are for their paired comparison: by default, rounds
            // go on until it is precise (a fixed count: --max-runs = -n).
            until_ci_pct: timing.until_ci.or(paired_default.then_some(plan::variant::DEFAULT_PAIRED_CI_PCT)),
            max_runs: match (timing.max_runs, no_variants) {
                (Some(max), _) => max,
                (None, true) => plan::DEFAULT_MAX_RUNS,
                (None, false) => plan::variant::DEFAULT_PAIRED_MAX_ROUNDS.max(timing.runs),
            },
            sample_interval,
            memory_limit,
            stall_timeout: timing.stall_timeout,
            output,
            // A history server's password is never recorded.
            command_line: argv.into_iter().map(|a| fsscale::history::without_password_in(&a)).collect(),
            label,
            note,
            rev,
            replace_output,
        })
    }
}

/// The workloads named (`all` and groups expanded, each once), or the
/// default suite, or what `--cmd` and `--trace` imply when none is named.
fn chosen_workloads(asked: &[WorkloadArg], cmd: bool, trace: bool) -> Vec<Workload> {
    let mut workloads = Vec::new();
    for arg in asked {
        match arg {
            WorkloadArg::All => workloads.extend(Workload::ALL.into_iter().filter(|w| w.is_builtin())),
            WorkloadArg::One(w) => workloads.push(*w),
            WorkloadArg::Group(phases) => workloads.extend(phases.iter().copied()),
        }
    }
    if workloads.is_empty() {
        match (cmd, trace) {
            (false, false) => workloads.extend(Workload::DEFAULT_SUITE),
            (cmd, trace) => {
                workloads.extend(cmd.then_some(Workload::Command));
                workloads.extend(trace.then_some(Workload::Replay));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    workloads.retain(|w| seen.insert(*w));
    workloads
}

impl TimingArgs {
    fn sample_interval(&self) -> Result<std::time::Duration> {
        Ok(match self.sample_interval.as_str() {
            "auto" => plan::auto_sample_interval(self.duration),
            text => {
                let interval = plan::parse_duration(text).map_err(|e| anyhow::anyhow!("--sample-interval {e}"))?;
                if interval < std::time::Duration::from_millis(1) {
                    bail!("--sample-interval must be at least 1ms");
                }
                interval
            }
        })
    }
}

impl FsArgs {
    fn into_options(self) -> Result<FsOptions> {
        Ok(FsOptions {
            specs: self.fs.0,
            backing: self.backing,
            size: self.fs_size,
            mkfs_options: fsscale::fs::parse_mkfs_options(self.mkfs_opts.as_deref().unwrap_or(""))?,
            fresh: self.fresh,
            destroy_device_data: self.destroy_device_data,
        })
    }
}

impl InstrumentArgs {
    /// The run's variants (`asked`), or `--profile-cost`'s own two; what
    /// the instrument flags ask checked against each other.
    fn variants(&self, asked: Vec<plan::variant::Variant>) -> Result<Vec<plan::variant::Variant>> {
        let traced = self.profile.iter().any(|i| i.collected());
        if self.profile_every_stack && !traced {
            bail!(
                "--profile-every-stack chooses how --profile locks and offcpu walk stacks; add one of them, or drop it"
            );
        }
        if !self.profile_cost {
            return Ok(asked);
        }
        if !self.config().any() {
            bail!("--profile-cost measures what --profile or --verify costs; add one of them");
        }
        if !asked.is_empty() {
            bail!("--profile-cost pairs runs with the instruments off and on as its own two variants; drop --variant, or run it separately");
        }
        Ok(plan::variant::profile_cost())
    }

    fn config(&self) -> fsscale::instruments::InstrumentConfig {
        let mut on = Instruments::of(self.profile.iter().copied());
        on.set(Instrument::Verify, self.verify);
        fsscale::instruments::InstrumentConfig {
            on,
            min_sleep_us: self.min_sleep.map_or(0, |d| d.as_micros() as u64),
            sampled_stacks: self.profile.iter().any(|i| i.collected()) && !self.profile_every_stack,
            via: self.profile_via.map(|c| match c {
                Collector::Bpf => fsscale::results::Collector::Bpf,
                Collector::Tracefs => fsscale::results::Collector::Tracefs,
            }),
        }
    }
}

/// `fsscale-results/2026-11-22T02-06-03Z.json`, with a suffix if that exists.
/// `fsscale-results/<time>.json`, created exclusively so that two runs
/// started in the same second never share it.
fn default_output() -> Result<PathBuf> {
    let stamp = rfc3339(std::time::SystemTime::now()).replace(':', "-");
    fsscale::atomic_file::create_unique(Path::new("fsscale-results"), &stamp, "json")
}
