//! Runs a [`RunConfig`]: every point, every repetition, each in a fresh
//! scratch directory, saving the results document after every run.
//!
//! The steps, each in its own module: the preflight checks here, the
//! workloads' [`sources`] prepared once, the results [`document`] made from
//! the plan, then the [`session`]'s schedule loop, which takes its
//! directories from the filesystem [`pool`] and measures each run through a
//! [`Measurer`]: this machine's workers, or an MPI job's [`ranks`].

mod coordinate;
mod cpu;
mod document;
mod driver;
mod eta;
mod gate;
mod latency;
mod measure;
mod memory_limit;
mod objects;
mod open_loop;
mod pool;
mod progress;
mod ranks;
mod schedule;
mod session;
mod shared;
mod signals;
mod sources;
mod space;
mod spawn;
mod system_stats;
mod timing;
mod variant;
mod watch;
mod window;
mod worker;

use anyhow::{Context, Result};

pub use eta::human_duration;
pub use progress::{PlanSummary, Progress, RunStart, Silent};
pub use signals::Interrupted;

use crate::cluster::Cluster;
use crate::exec::Containment;
use crate::fs::FsKind;
use crate::instruments::Preparing;
use crate::plan::{Mode, RunConfig};
use crate::results::{MemoryLimitSettings, ResultsFile, Saver};
use crate::scratch::{RunRegistration, Scratch};
use crate::sys;
use crate::workloads::{Share, Workload};
use measure::{LocalMachine, Measurer, Timing};
use memory_limit::{MemoryLimit, Unevictable};
use session::Session;
use sources::Sources;

/// Runs every point of `config` and returns the finished document, which is
/// also on disk at `config.output`. On failure or interruption the document
/// on disk still holds every finished run, with the status saying why it stopped.
pub fn run(config: &RunConfig, progress: &mut dyn Progress) -> Result<ResultsFile> {
    run_with(config, None, None, progress)
}

/// Continues the run `doc` records (interrupted or failed) with `config`,
/// its own plan: the same points in the same order, each given the runs it
/// still lacks, in the order the schedule would have given them, with every
/// finished run kept. The document on disk is `config.output`, as for [`run`].
pub fn resume(config: &RunConfig, doc: ResultsFile, progress: &mut dyn Progress) -> Result<ResultsFile> {
    if !config.objectives.is_empty() {
        anyhow::bail!(
            "--resume: a --slo search picks each rate from the last, so it cannot go on from another file's; \
             run the search again with another -o (the file keeps the probes it made)"
        );
    }
    run_with(config, None, Some(doc), progress)
}

/// Runs `config` as one rank of an MPI job, every rank one worker: rank 0
/// runs the plan and returns the document (it alone writes it and reports
/// progress); the other ranks serve it and return `None`. MPI is finalised
/// here, or left without its goodbye when a signal or a lost rank ended the job.
pub fn run_on_ranks(config: &RunConfig, cluster: Cluster, progress: &mut dyn Progress) -> Result<Option<ResultsFile>> {
    let (outcome, reachable) = if cluster.is_root() {
        let outcome =
            ranks::Root::new(&cluster, &config.output, plan_digest(config), config.stall_timeout).map(|root| {
                let outcome = run_with(config, Some(&root), None, progress);
                let reachable = root.close(outcome.as_ref().map(|_| ()));
                root.dismiss_warden();
                (outcome, reachable)
            });
        let (outcome, reachable) = match outcome {
            Ok(done) => done,
            Err(error) => (Err(error), false),
        };
        let outcome = outcome.map_err(|error| match error.downcast_ref::<Interrupted>() {
            Some(i) if i.signal == libc::SIGTERM => error.context(
                "the MPI job ended: mpirun sends every rank SIGTERM when a rank fails or is killed, or on Ctrl-C",
            ),
            _ => error,
        });
        (outcome.map(Some), reachable)
    } else {
        let outcome = follow(config, &cluster);
        (outcome.map(|()| None), signals::check().is_ok())
    };
    if reachable {
        cluster.finalize();
    } else {
        cluster.abandon();
    }
    outcome
}

/// What cannot run with ranks as workers is refused before anything runs, with the reason.
fn check_ranks(config: &RunConfig, cluster: &Cluster) -> Result<()> {
    crate::cluster::check_refusals(
        config.modes.contains(&Mode::Thread),
        config.filesystems.makes_filesystems(),
        cluster.size(),
        config.workers.iter().copied().max().unwrap_or(1),
    )?;
    if config.memory_limit.is_some() {
        anyhow::bail!(
            "--memory-limit limits this machine's processes: under MPI, limit each node's memory with the \
             job's scheduler (e.g. Slurm's --mem) instead"
        );
    }
    if config.workloads.contains(&Workload::DupClose) && config.shares.contains(&Share::Same) && config.strict_shares {
        anyhow::bail!(
            "dup-close --share same: its workers share one open file, which ranks (separate processes) cannot; \
             use --share private or shared"
        );
    }
    Ok(())
}

/// A rank other than 0: prepares what rank 0 prepares, then serves its runs.
fn follow(config: &RunConfig, cluster: &Cluster) -> Result<()> {
    // The plan as given is what every rank agrees on ...
    let digest = plan_digest(config);
    // ... and this node's instruments run as its kernel allows (BPF where it can).
    let resolved = config.instruments.prepare().map(|(instruments, _)| RunConfig { instruments, ..config.clone() });
    let config = resolved.as_ref().unwrap_or(config);
    let sources = config.validate().and_then(|()| check_ranks(config, cluster)).and_then(|()| {
        resolved.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        signals::install();
        sys::raise_fd_limit();
        Sources::prepare(config, &mut Silent)
    });
    let prepared = match &sources {
        Ok(sources) => {
            Ok((Timing::from_plan(config), sources.inputs(config), config.pin.then(sys::topology::pin_cpus)))
        }
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    ranks::follow(cluster, prepared, &digest, config.stall_timeout)
}

/// What every rank of a job must agree on before it runs anything: this
/// fsscale's version and the whole plan (every option but what may differ
/// per node: the results file, the command's own path, the tarball cache,
/// and the order's random seed, which only rank 0's scheduler uses).
/// Ranks of another version, or given other options, would run other
/// workloads or shapes than the results record.
fn plan_digest(config: &RunConfig) -> String {
    let mut plan = config.clone();
    plan.output = std::path::PathBuf::new();
    plan.command_line.clear();
    plan.macro_options.cache_dir = std::path::PathBuf::new();
    plan.order_seed = 0;
    format!("fsscale {} {plan:?}", env!("CARGO_PKG_VERSION"))
}

/// The plan, run on this machine's workers or (with `root`) on an MPI job's ranks.
fn run_with(
    config: &RunConfig,
    root: Option<&ranks::Root<'_>>,
    resumed: Option<ResultsFile>,
    progress: &mut dyn Progress,
) -> Result<ResultsFile> {
    let mut ready = preflight(config, root.map(|r| r.cluster()), progress)?;
    let config = &RunConfig { instruments: ready.instruments, ..config.clone() };
    let sources = Sources::prepare(config, progress)?;
    // A tree walked where it is (`traverse --tree`) is not written.
    let copied_tree = sources.tree.as_ref().filter(|_| !sources.walks_only_a_given_tree);
    space::check_room(config, copied_tree.map(|t| memory_limit::in_memory_bytes(&t.contents)))?;
    if let Some(limit) = &ready.memory {
        let in_memory = config.filesystems.specs.iter().map(|spec| match spec.kind {
            FsKind::Ramfs | FsKind::Tmpfs => true,
            FsKind::Dir => matches!(crate::results::Target::detect(&config.dir).fs_type.as_str(), "tmpfs" | "ramfs"),
            _ => false,
        });
        let tree_bytes = sources.inputs(config).tree.map_or(0, |t| memory_limit::in_memory_bytes(&t.contents));
        let swap = sys::total_swap().unwrap_or(0) > 0;
        Unevictable { swap, in_memory: in_memory.collect(), tree_bytes }.check(config, limit.bytes())?;
    }
    if let Some(root) = root {
        root.start(Ok(()))?;
    }
    let cpus = config.pin.then(sys::topology::pin_cpus);
    let doc = match resumed {
        Some(doc) => document::reopen(doc),
        None => {
            let mut doc = document::new_document(config, &sources, ready.containment.as_ref().map(|c| c.describe()));
            doc.settings.memory_limit =
                ready.memory.as_ref().map(|m| MemoryLimitSettings { bytes: m.bytes(), cgroup: m.describe() });
            doc.cluster = root.map(|r| r.cluster().info());
            doc.settings.pin_order = cpus.clone();
            doc
        }
    };
    let saver = Saver::create(&config.output, &doc)?;
    progress.saved();
    let measurer: &dyn Measurer = match root {
        Some(root) => root,
        None => &LocalMachine,
    };
    let session = Session {
        config,
        measurer,
        inputs: sources.inputs(config),
        cpus: cpus.as_deref(),
        containment: ready.containment.as_mut(),
        memory: ready.memory.as_ref(),
        progress,
    };
    session.run(doc, saver)
}

/// What the preflight set up, held until the run returns.
struct Ready {
    /// Lets `fsscale cleanup` tell where a killed run left scratch.
    _registration: Option<RunRegistration>,
    /// Where commands' processes are kept (`--cmd`, `--extract-cmd`).
    containment: Option<Containment>,
    /// `--memory-limit`'s cgroup, removed after the commands' containment
    /// has gone (which, in the v2 hierarchy, is inside it).
    memory: Option<MemoryLimit>,
    /// The instruments as they will run (how each profile is collected).
    instruments: crate::instruments::InstrumentConfig,
}

/// Everything checked and set up before the workloads' inputs are prepared:
/// the plan's validity, warnings of what killed runs left, the instruments,
/// signals, containment, and clear errors for `--dir` and the results directory.
fn preflight(config: &RunConfig, cluster: Option<&Cluster>, progress: &mut dyn Progress) -> Result<Ready> {
    config.validate()?;
    // Rank 0 alone writes the results, and checks what it would replace.
    config.check_not_replacing()?;
    if let Some(cluster) = cluster {
        check_ranks(config, cluster)?;
    }
    config.filesystems.validate()?;
    warn_of_leftovers(config, progress);
    let registration = RunRegistration::create(std::slice::from_ref(&config.dir), &config.output);
    let (instruments, notes) = config.instruments.prepare()?;
    for note in notes {
        progress.preparing(&note);
    }
    signals::install();
    sys::raise_fd_limit();
    // Made before anything forks, so that every worker and command starts inside.
    let memory = config.memory_limit.map(MemoryLimit::create).transpose()?;
    // Made while the process is single-threaded (it may fork its guardian).
    let runs_commands = config.command.is_some()
        || config.macro_options.extract_cmd.is_some()
        || config.variants.iter().any(|v| !v.setup.trim().is_empty() || v.teardown.is_some());
    let containment = runs_commands.then(|| Containment::start(memory.as_ref().and_then(|m| m.v2_dir())));
    if let Some(c) = containment.as_ref().filter(|c| !c.has_cgroup()) {
        progress.warning(&format!("commands are contained by the fallback: {}", c.describe()));
    }
    // A probe scratch directory gives the clear "--dir ..." errors before
    // anything else (only where --dir is used: made filesystems need none).
    if config.filesystems.specs.iter().any(|s| s.kind == FsKind::Dir) {
        Scratch::create(&config.dir)?.remove()?;
    }
    if let Some(parent) = config.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create the results directory {}", parent.display()))?;
    }
    Ok(Ready { _registration: registration, containment, memory, instruments })
}

/// What killed runs left that this run will not remove itself.
fn warn_of_leftovers(config: &RunConfig, progress: &mut dyn Progress) {
    if config.filesystems.makes_filesystems() {
        for leftover in crate::fs::leftovers() {
            progress.warning(&format!("a killed run left {leftover}; `fsscale cleanup` removes it"));
        }
    }
    if config.memory_limit.is_some() || config.command.is_some() || !config.variants.is_empty() {
        for cgroup in crate::exec::dead_cgroups() {
            progress
                .warning(&format!("a killed run left the cgroup {}; `fsscale cleanup` removes it", cgroup.display()));
        }
    }
    // One without a marker (pid unknown) may be a live run's, made or
    // removed this instant: only a marker nobody holds proves a killed run.
    for dead in crate::scratch::dead_scratches(&config.dir).unwrap_or_default().into_iter().filter(|d| d.pid.is_some())
    {
        progress.warning(&format!(
            "a killed run left the scratch directory {}; `fsscale cleanup --scratch {}` removes it",
            dead.path.display(),
            config.dir.display()
        ));
    }
}
