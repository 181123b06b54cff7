//! `fsscale run`'s options that shape the workloads themselves: inputs and
//! sizes of the macro workloads, mdtest phases, lookups, and `command`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use fsscale::exec::Metric;
use fsscale::plan::{Cache, MacroOptions};
use fsscale::workloads::CommandSpec;

use super::values::*;

/// untar, traverse and replay: what they extract, walk or replay (the core's `MacroOptions`), and the cache state of fixed work.
#[derive(Args, Debug)]
#[command(next_help_heading = "Workload inputs, sizes and cache")]
pub struct MacroArgs {
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

    /// append-grow: bytes each worker appends (e.g. 16M, 1G).
    #[arg(long, value_name = "SIZE", default_value = "16M", value_parser = parse_size)]
    pub grow_size: u64,

    /// fault-shared, fault-private: bytes each worker maps at once (a multiple of 4 KiB, e.g. 4M): the working set its faults walk. 128M is will-it-scale's page_fault2/3; a mapping that fits in the CPU's caches faults faster.
    #[arg(long, value_name = "SIZE", default_value = "128M", value_parser = parse_map_size)]
    pub map_size: u64,

    /// traverse: fstatat() every entry, as find -ls or ls -lR would.
    #[arg(long)]
    pub stat: bool,

    /// Fixed work (untar, traverse, command): warm, or cold: sync and drop page, dentry and inode caches before every run (root only); warm,cold measures both, as separate points in one file.
    #[arg(long, value_name = "warm|cold", value_delimiter = ',', default_value = "warm", value_parser = choice::<Cache>())]
    pub cache: Vec<Cache>,

    /// Run the workers and the commands they start (not fsscale itself) in a memory cgroup of this size (e.g. 256M; at least 16M), nested in fsscale's own, so that the cache they fill cannot hold more: a walk's metadata beyond it is evicted and read from the device again. The limit holds from the start barrier on; the workers' setup runs without it and is then trimmed to it. What was cached before the run stays: pair it with --cache cold or a made --fs. Needs root and a cgroup memory controller (v2 memory.max or v1).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,

    /// replay: a dbench loadfile (NTCreateX, ReadX, ... lines) instead of the built-in fileserver trace.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// The mdtest phases' options (the core's `MdtestOptions`).
#[derive(Args, Debug)]
#[command(next_help_heading = "mdtest phases")]
pub struct MdtestArgs {
    /// Files (or directories) each worker creates, stats, reads, removes (mdtest -n); the default makes even the stat phase last the 50 ms fixed work needs to be timed here.
    #[arg(long, value_name = "N", default_value_t = fsscale::workloads::DEFAULT_MDTEST_ITEMS)]
    pub items: u64,

    /// Bytes written to each file as it is created, and read back by mdtest-read (mdtest -w/-e).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub write_bytes: u64,

    /// End each phase for every worker this long after the common start; the items done by then count (mdtest -W).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub stonewall: Option<std::time::Duration>,
}

/// The shape of the lookups of `stat`, `open-close` and the mdtest phases (the core's `LookupShape`).
#[derive(Args, Debug)]
#[command(next_help_heading = "Lookup shape (stat, open-close, mdtest phases)")]
pub struct LookupArgs {
    /// stat, open-close: distinct files each worker looks up, one after another (or at random with --random), as mdtest's -n files and fxmark's MRPM do; at --share same, files all workers visit. (The mdtest phases take --items.)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub files: usize,

    /// Path components from the worker's directory to a file (an mdtest item), the file included: D-1 directories s1/.../s<D-1> above it.
    #[arg(long, value_name = "D", default_value_t = 1)]
    pub depth: usize,

    /// relative: from the worker's directory (an *at call); absolute: from /, through every mount point above --dir, as mdtest's paths are.
    #[arg(long, value_name = "KIND", default_value = "relative", value_parser = choice::<PathKind>())]
    pub path: PathKind,

    /// Visit the --files (the mdtest phases' items) in a random order, fixed per worker, rather than one after another.
    #[arg(long)]
    pub random: bool,
}

/// The command workload (the core's `CommandSpec`): every option but --cmd needs --cmd.
#[derive(Args, Debug)]
#[command(next_help_heading = "Command workload")]
#[command(group = clap::ArgGroup::new("driver_figure").args(["driver", "metric", "metric_json"]).multiple(true))]
pub struct CommandArgs {
    /// What to measure. {dir} (the worker's own directory, also the working directory), {worker}, {workers} and {scratch} are replaced. Run as N concurrent copies timed to completion, or, with --metric, --metric-json or --driver, as one driver per point.
    #[arg(long, value_name = "CMD")]
    pub cmd: Option<String>,

    /// Untimed, before the start: per copy in its {dir} (once at --share same), or once before a driver.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub setup: Option<String>,

    /// Untimed, after every copy finished: per copy in its {dir} (once at --share same), or once after a driver.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub cleanup: Option<String>,

    /// Untimed, once before every run, e.g. 'sh -c "echo 3 > /proc/sys/vm/drop_caches"'.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub prepare: Option<String>,

    /// Run --cmd, --setup, --cleanup and --prepare with sh -c (placeholders are quoted); otherwise they are split into words and run directly.
    #[arg(long, requires = "cmd")]
    pub shell: bool,

    /// Kill any of the commands, with its whole process group, after this long (e.g. 30s); the point then fails.
    #[arg(long, value_name = "TIME", value_parser = parse_duration, requires = "cmd")]
    pub timeout: Option<std::time::Duration>,

    /// One driver command per point (its client count is {workers}) instead of N copies; implied by --metric and --metric-json; without them its wall time is the figure.
    #[arg(long, requires = "cmd")]
    pub driver: bool,

    /// Driver: the figure is the number this regular expression captures (first group, else the whole match) in the last match in stdout, else stderr.
    #[arg(long, value_name = "REGEX", requires = "cmd")]
    pub metric: Option<String>,

    /// Driver: the figure is the number at this dotted path in stdout parsed as JSON, e.g. jobs.0.read.iops.
    #[arg(long, value_name = "PATH", conflicts_with = "metric", requires = "cmd")]
    pub metric_json: Option<String>,

    /// Driver: the figure's name in tables and charts (e.g. tps).
    #[arg(long, value_name = "NAME", requires = "cmd", requires = "driver_figure")]
    pub metric_name: Option<String>,

    /// Driver: a larger figure is better (transactions/s); without it a smaller one is (latency, time).
    #[arg(long, requires = "cmd", requires = "driver_figure")]
    pub higher_is_better: bool,
}

impl LookupArgs {
    pub(super) fn shape(&self) -> fsscale::vocab::LookupShape {
        fsscale::vocab::LookupShape {
            files: self.files,
            depth: self.depth,
            absolute: self.path == PathKind::Absolute,
            random: self.random,
        }
    }
}

impl MdtestArgs {
    pub(super) fn options(&self) -> fsscale::workloads::MdtestOptions {
        fsscale::workloads::MdtestOptions {
            items: self.items,
            write_bytes: self.write_bytes,
            stonewall: self.stonewall,
        }
    }
}

impl MacroArgs {
    pub(super) fn into_options(self) -> MacroOptions {
        MacroOptions {
            scale: self.scale,
            seed: self.seed,
            tarball: self.tarball,
            extract_cmd: self.extract_cmd,
            cache_dir: cache_dir(),
            tree: self.tree,
            stat: self.stat,
            caches: dedup(self.cache),
        }
    }
}

impl CommandArgs {
    /// The `command` workload's settings (clap has checked that its other
    /// options came with --cmd, and a figure's name with a driver).
    pub(super) fn into_spec(self) -> Result<Option<CommandSpec>> {
        let Some(cmd) = self.cmd else { return Ok(None) };
        let driver = self.driver || self.metric.is_some() || self.metric_json.is_some();
        let metric = driver
            .then(|| {
                Metric::new(
                    self.metric.as_deref(),
                    self.metric_json.as_deref(),
                    self.metric_name.as_deref(),
                    self.higher_is_better,
                )
            })
            .transpose()?;
        if self.timeout.is_some_and(|t| t.is_zero()) {
            bail!("--timeout must be longer than 0");
        }
        Ok(Some(CommandSpec {
            cmd,
            setup: self.setup,
            cleanup: self.cleanup,
            prepare: self.prepare,
            shell: self.shell,
            timeout: self.timeout,
            driver: metric,
            variant: None,
        }))
    }
}

/// Where generated tarballs are cached: $FSSCALE_CACHE_DIR, else
/// $XDG_CACHE_HOME/fsscale, else ~/.cache/fsscale (HOME, or the password
/// database's home). Never a shared directory: the runner refuses one that
/// is not the user's own or that others can write.
pub fn cache_dir() -> PathBuf {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    from("FSSCALE_CACHE_DIR")
        .or_else(|| from("XDG_CACHE_HOME").map(|d| d.join("fsscale")))
        .or_else(|| from("HOME").or_else(fsscale::sys::home_from_passwd).map(|d| d.join(".cache").join("fsscale")))
        .unwrap_or_else(|| PathBuf::from(format!("/var/tmp/fsscale-cache-{}", fsscale::sys::euid())))
}

pub(super) fn dedup<T: PartialEq + Copy>(items: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
