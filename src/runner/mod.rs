//! Runs a [`RunConfig`]: every point, every repetition, each in a fresh
//! scratch directory, saving the results document after every run.

mod cpu;
mod driver;
mod gate;
mod latency;
mod measure;
mod progress;
mod ranks;
mod schedule;
mod shared;
mod signals;
mod timing;
mod watch;
mod worker;

use std::time::SystemTime;

use anyhow::{Context, Result};

pub use progress::{Progress, Silent};
use schedule::{PointState, Repetition, Scheduler};
pub use signals::Interrupted;

use crate::archive;
use crate::cluster::Cluster;
use crate::fs::{Fresh, FsInstance, FsKind, FsRecord, FsSpec};
use crate::plan::{Cache, MacroOptions, Mode, Order, PointSpec, RunConfig};
use crate::replay::{self, OpKind, Trace};
use crate::results::{
    self, CommandSettings, Host, MdtestSettings, MetricInfo, Point, ReplaySettings, ResultsFile, RunRecord, Saver,
    Settings, Status, Target, Tool, UntarSettings, WalkedTree, SCHEMA_VERSION,
};
use crate::scratch::Scratch;
use crate::sys;
use crate::tree::{write_tar_file, TreeSpec};
use crate::workloads::{Share, TreeSource, Workload};

/// Runs every point of `config` and returns the finished document, which is
/// also on disk at `config.output`. On failure or interruption the document
/// on disk still holds every finished run, with the status saying why it stopped.
pub fn run(config: &RunConfig, progress: &mut dyn Progress) -> Result<ResultsFile> {
    run_with(config, None, progress)
}

/// Runs `config` as one rank of an MPI job, every rank one worker: rank 0
/// runs the plan and returns the document (it alone writes it and reports
/// progress); the other ranks serve it and return `None`. MPI is finalised
/// here, or left without its goodbye when a signal or a lost rank ended the job.
pub fn run_on_ranks(config: &RunConfig, cluster: Cluster, progress: &mut dyn Progress) -> Result<Option<ResultsFile>> {
    let (outcome, reachable) = if cluster.is_root() {
        let outcome =
            ranks::Root::new(&cluster, &config.output, plan_digest(config), config.stall_timeout).map(|root| {
                let outcome = run_with(config, Some(&root), progress);
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
    let sources = config.validate().and_then(|()| check_ranks(config, cluster)).and_then(|()| {
        signals::install();
        sys::raise_fd_limit();
        prepare_sources(config, &mut Silent)
    });
    let prepared = match &sources {
        Ok(sources) => Ok((timing(config), inputs(config, sources), config.pin.then(sys::topology::pin_cpus))),
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    ranks::follow(cluster, prepared, &plan_digest(config), config.stall_timeout)
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

/// The timing every run starts from.
fn timing(config: &RunConfig) -> measure::Timing {
    measure::Timing {
        warmup: config.warmup,
        duration: config.duration,
        sample_interval: config.sample_interval,
        drop_caches: false,
        device: None,
        stall_timeout: config.stall_timeout,
        instruments: config.instruments,
    }
}

/// What the workloads read, prepared once per invocation (per rank under MPI).
struct Sources {
    tree: Option<TreeSource>,
    trace: Option<Trace>,
    /// `traverse --tree` without `untar`: no tarball is made.
    walks_only_a_given_tree: bool,
}

fn prepare_sources(config: &RunConfig, progress: &mut dyn Progress) -> Result<Sources> {
    // A tarball only when something extracts it: `traverse --tree` walks a tree as it is.
    let walks_only_a_given_tree = config.macro_options.tree.is_some() && !config.workloads.contains(&Workload::Untar);
    let tree = if config.workloads.iter().any(|w| w.needs_tree()) {
        Some(prepare_tree(&config.macro_options, !walks_only_a_given_tree, progress)?)
    } else {
        None
    };
    let trace =
        if config.workloads.contains(&Workload::Replay) { Some(replay::load(config.trace.as_deref())?) } else { None };
    Ok(Sources { tree, trace, walks_only_a_given_tree })
}

fn inputs<'a>(config: &'a RunConfig, sources: &'a Sources) -> measure::Inputs<'a> {
    measure::Inputs {
        tree: sources.tree.as_ref(),
        command: config.command.as_ref(),
        trace: sources.trace.as_ref(),
        latency: config.latency,
        mdtest: config.mdtest,
        lookup: config.lookup,
        grow_bytes: config.macro_options.grow_bytes,
    }
}

/// The plan, run on this machine's workers or (with `root`) on an MPI job's ranks.
fn run_with(config: &RunConfig, root: Option<&ranks::Root<'_>>, progress: &mut dyn Progress) -> Result<ResultsFile> {
    config.validate()?;
    if let Some(root) = root {
        check_ranks(config, root.cluster())?;
    }
    config.filesystems.validate()?;
    if config.filesystems.makes_filesystems() {
        for leftover in crate::fs::leftovers() {
            progress.warning(&format!("a killed run left {leftover}; `fsscale cleanup` removes it"));
        }
    }
    for dead in crate::scratch::dead_scratches(&config.dir).unwrap_or_default() {
        progress.warning(&format!(
            "a killed run left the scratch directory {}; `fsscale cleanup --scratch {}` removes it",
            dead.path.display(),
            config.dir.display()
        ));
    }
    // Held until the run returns, so `fsscale cleanup` can tell where a killed one left scratch.
    let _registration = crate::scratch::RunRegistration::create(std::slice::from_ref(&config.dir));
    for note in config.instruments.prepare()? {
        progress.preparing(&note);
    }
    signals::install();
    sys::raise_fd_limit();
    // Made while the process is single-threaded (it may fork its guardian).
    let runs_commands = config.command.is_some() || config.macro_options.extract_cmd.is_some();
    let mut containment = runs_commands.then(crate::exec::Containment::start);
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
    let sources = prepare_sources(config, progress)?;
    if let Some(root) = root {
        root.start(Ok(()))?;
    }
    let Sources { tree, trace, walks_only_a_given_tree } = &sources;
    let (tree, trace, walks_only_a_given_tree) = (tree.as_ref(), trace.as_ref(), *walks_only_a_given_tree);
    let mut doc = new_document(config);
    doc.cluster = root.map(|r| r.cluster().info());
    doc.settings.replay = trace.as_ref().map(|t| {
        let mix = t.mix();
        ReplaySettings {
            trace: t.name.clone(),
            ops_per_pass: OpKind::ALL.iter().filter(|k| mix[k.index()] > 0).map(|k| (*k, mix[k.index()])).collect(),
            bytes_per_pass: t.bytes_per_pass(),
        }
    });
    doc.settings.command = config.command.as_ref().map(|c| CommandSettings {
        cmd: c.cmd.clone(),
        setup: c.setup.clone(),
        cleanup: c.cleanup.clone(),
        prepare: c.prepare.clone(),
        shell: c.shell,
        timeout_s: c.timeout.map(|t| t.as_secs_f64()),
        metric: c.driver.as_ref().map(|m| m.describe()),
    });
    let inputs = inputs(config, &sources);
    doc.settings.walked_tree = tree.and_then(|t| {
        t.walk_tree.as_ref().map(|path| WalkedTree {
            path: path.display().to_string(),
            entries: t.walk_contents.entries(),
            bytes: t.walk_contents.bytes,
        })
    });
    doc.settings.untar = tree.filter(|_| !walks_only_a_given_tree).map(|u| UntarSettings {
        tarball: u.tarball.display().to_string(),
        scale: config.macro_options.tarball.is_none().then_some(config.macro_options.scale),
        seed: config.macro_options.tarball.is_none().then_some(config.macro_options.seed),
        extract_cmd: u.command.clone(),
        entries: u.contents.entries(),
        bytes: u.contents.bytes,
    });
    doc.settings.containment = containment.as_ref().map(|c| c.describe());
    let cpus = config.pin.then(sys::topology::pin_cpus);
    doc.settings.pin_order = cpus.clone();
    let mut saver = Saver::create(&config.output, &doc)?;
    progress.saved();

    // Whatever ends the schedule (a run's error, a full disk, a journal that
    // cannot be written, a signal), the document records how it ended.
    let outcome = (|| -> Result<()> {
        let timing = timing(config);
        let points = config.points();
        if points.iter().any(|p| p.cache == Some(Cache::Cold)) {
            // Fail before anything runs rather than at the first point.
            measure::drop_caches()?;
        }
        let filesystems = &config.filesystems;
        let max_workers = config.workers.iter().copied().max().unwrap_or(1) as u64;
        let grown = if config.workloads.contains(&Workload::AppendGrow) { config.macro_options.grow_bytes } else { 0 };
        let data_bytes = tree.map_or(0, |u| u.contents.bytes).max(grown) * max_workers;
        // Every worker's copy of the tree, plus the shared one.
        let data_entries = tree.map_or(0, |u| u.contents.entries() * (max_workers + 1));
        let sizes: Vec<u64> =
            filesystems.specs.iter().map(|s| filesystems.size_for(s, data_bytes, data_entries)).collect();
        // Every point of every filesystem, filesystem-major, in the document from the start.
        let plan: Vec<(usize, PointSpec)> =
            (0..filesystems.specs.len()).flat_map(|f| points.iter().map(move |p| (f, *p))).collect();
        for (fs_index, spec) in &plan {
            let mut point = new_point(config, &filesystems.specs[*fs_index], spec);
            point.ranks = root.map(|r| r.cluster().ranks_for(spec.workers));
            doc.points.push(point);
            saver.point_started(&doc, doc.points.len() - 1)?;
        }
        progress.plan(plan.len(), config.runs);
        let repetition = Repetition {
            warmups: config.warmup_runs,
            runs: config.runs,
            max_runs: config.until_ci_pct.map(|_| config.max_runs),
        };
        let mut scheduler = Scheduler::new(config.order, repetition, config.order_seed);
        let mut states = vec![PointState::default(); plan.len()];
        // Filesystems kept across runs: one per point (`--fresh point`), one per filesystem (`--fresh once`).
        let mut kept_for_point: Vec<Option<FsInstance>> = plan.iter().map(|_| None).collect();
        let mut kept_once: Vec<Option<FsInstance>> = filesystems.specs.iter().map(|_| None).collect();
        // A filesystem that could not be taken down is recorded, and the rest of the matrix still runs.
        let mut teardown_failures: Vec<String> = Vec::new();
        let mut position = 0;
        let mut warned_busy = false;
        while let Some(slot) = scheduler.next(&states) {
            let (fs_index, spec) = &plan[slot.point];
            let fs_spec = &filesystems.specs[*fs_index];
            let state = &states[slot.point];
            let run = if slot.warmup { state.warmups } else { state.runs };
            progress.run_started(spec, slot.point, run, slot.warmup);
            let pinned: Option<Vec<usize>> = cpus.as_ref().map(|c| (0..spec.workers).map(|i| c[i % c.len()]).collect());
            let slots = FsSlots {
                once: &mut kept_once[*fs_index],
                point: &mut kept_for_point[slot.point],
                failures: &mut teardown_failures,
            };
            let started_at = results::rfc3339_millis(SystemTime::now());
            let cgroup = containment.as_mut().map(|c| c.start_run());
            let outcome = signals::check().map_err(anyhow::Error::from).and_then(|()| {
                run_on_fs(config, fs_spec, sizes[*fs_index], slots, |dir, device| {
                    let drop_caches = spec.cache == Some(Cache::Cold);
                    let timing = measure::Timing { device, drop_caches, ..timing.clone() };
                    match root {
                        Some(root) => root.run_once(spec, dir, &timing, cpus.as_deref(), inputs, run),
                        None => measure::run_once(spec, dir, &timing, pinned.as_deref(), inputs, run),
                    }
                })
            });
            if let (Some(c), Some(cgroup)) = (containment.as_mut(), cgroup) {
                let killed = c.end_run(cgroup);
                if killed > 0 {
                    progress.warning(&format!(
                        "run {} of {}: killed {killed} process(es) the commands left running",
                        run + 1,
                        spec.workload
                    ));
                }
            }
            let (mut record, fs_record) = match outcome {
                Ok(done) => done,
                Err(error) => {
                    // A signal that reached a tool first (mkfs, mount) makes it fail; the cause is the signal.
                    let error = match signals::check() {
                        Err(signal) if error.downcast_ref::<Interrupted>().is_none() => anyhow::Error::new(signal),
                        _ => error,
                    };
                    let on = doc.points[slot.point].condition().map(|c| format!(" {c}")).unwrap_or_default();
                    let which = if slot.warmup {
                        format!("warm-up run {} of {}", run + 1, config.warmup_runs)
                    } else {
                        format!("run {} of {}", run + 1, config.runs.max(run + 1))
                    };
                    return Err(error.context(format!(
                        "{} ({}, {}, {} workers){on}, {which}",
                        spec.workload, spec.mode, spec.share, spec.workers
                    )));
                }
            };
            if let Some(check) = &record.syscalls {
                for mismatch in check.mismatches(spec.workers) {
                    progress.warning(&format!(
                        "--verify: {} x{} run {}: the kernel counted {} {} calls where the ops imply {:.0} ({:+.2}%)",
                        spec.workload,
                        spec.workers,
                        run + 1,
                        mismatch.counted,
                        mismatch.syscall,
                        mismatch.expected,
                        100.0 * (mismatch.ratio() - 1.0)
                    ));
                }
            }
            record.position = Some(position);
            record.started_at = Some(started_at);
            position += 1;
            let point = &mut doc.points[slot.point];
            point.filesystem = point.filesystem.take().or(fs_record);
            let state = &mut states[slot.point];
            if slot.warmup {
                point.warmup_runs.push(record);
                state.warmups += 1;
            } else {
                point.runs.push(record);
                point.summarize();
                state.runs += 1;
                let busy = point.summary.as_ref().is_some_and(|s| s.busy_runs.contains(&(point.runs.len() - 1)));
                if busy && !warned_busy {
                    warned_busy = true;
                    let share = point.runs.last().and_then(|r| r.noise).map_or(0.0, |n| n.others_cpu);
                    progress.warning(&format!(
                        "other work took {:.0}% of the machine during run {} of {} x{}; such runs are marked !busy, \
                     and compare calls differences on points busy in more than a fifth of their runs too noisy",
                        100.0 * share,
                        point.runs.len(),
                        spec.workload,
                        spec.workers
                    ));
                }
                state.precise = config.until_ci_pct.is_some_and(|pct| point.is_precise(pct));
            }
            progress.run_finished(point, slot.warmup);
            saver.run_finished(&doc, slot.point, slot.warmup)?;
            progress.saved();
            if repetition.is_done(&states[slot.point]) {
                if let Some(made) = kept_for_point[slot.point].take() {
                    tear_down(made, fs_spec, &mut teardown_failures);
                }
                let point = &mut doc.points[slot.point];
                point.complete = true;
                progress.point_finished(point);
                saver.point_complete(&doc, slot.point)?;
                let all_done =
                    plan.iter().zip(&states).filter(|((f, _), _)| f == fs_index).all(|(_, s)| repetition.is_done(s));
                if all_done {
                    if let Some(made) = kept_once[*fs_index].take() {
                        tear_down(made, fs_spec, &mut teardown_failures);
                    }
                }
            }
        }
        if !teardown_failures.is_empty() {
            return Err(anyhow::anyhow!("{}; `fsscale cleanup` removes what is left", teardown_failures.join("; ")));
        }
        Ok(())
    })();
    let status = match &outcome {
        Ok(()) => Status::Complete,
        Err(error) if error.downcast_ref::<Interrupted>().is_some() => Status::Interrupted,
        Err(_) => Status::Failed,
    };
    finish(&mut doc, status, outcome.as_ref().err());
    let saved = saver.finish(&doc);
    progress.saved();
    match (outcome, saved) {
        (Ok(()), Ok(())) => Ok(doc),
        (Err(error), Ok(())) => Err(error),
        (Ok(()), Err(not_saved)) => Err(not_saved),
        (Err(error), Err(not_saved)) => Err(error.context(format!("the results could not be saved ({not_saved:#})"))),
    }
}

/// A point of `spec` on `fs_spec`, with no runs yet.
fn new_point(config: &RunConfig, fs_spec: &FsSpec, spec: &PointSpec) -> Point {
    Point {
        workload: spec.workload,
        op: match spec.workload {
            // The op's words say the shape of its lookups when it is not the one hot name.
            Workload::Stat | Workload::OpenClose if !config.lookup.is_default() => {
                format!("{} ({})", spec.workload.describe().op, config.lookup.describe())
            }
            w => match config.lookup.describe_placement().filter(|_| w.is_mdtest()) {
                Some(placement) => format!("{} ({placement})", w.describe().op),
                None => w.describe().op.to_string(),
            },
        },
        mode: spec.mode,
        share: spec.share,
        workers: spec.workers,
        complete: false,
        runs: Vec::new(),
        warmup_runs: Vec::new(),
        summary: None,
        fs: (fs_spec.kind != FsKind::Dir).then(|| fs_spec.label()),
        cache: spec.cache,
        filesystem: None,
        metric: (spec.workload == Workload::Command)
            .then(|| config.command.as_ref().and_then(|c| c.driver.as_ref()))
            .flatten()
            .map(|m| MetricInfo { name: m.name.clone(), higher_is_better: m.higher_is_better }),
        ranks: None,
    }
}

/// Filesystems kept across runs (`--fresh once` and `--fresh point`).
struct FsSlots<'a> {
    once: &'a mut Option<FsInstance>,
    point: &'a mut Option<FsInstance>,
    /// Where a failed teardown is recorded.
    failures: &'a mut Vec<String>,
}

/// Takes a made filesystem down; a failure is recorded, not fatal: every
/// step is still tried, what is left stays registered for `fsscale cleanup`.
fn tear_down(made: FsInstance, fs_spec: &FsSpec, failures: &mut Vec<String>) {
    if let Err(e) = made.destroy() {
        failures.push(format!("cleaning up {}: {e:#}", fs_spec.label()));
    }
}

/// Runs `measure` in the directory the filesystem policy gives: `--dir`, or
/// a filesystem made now (`--fresh run`, taken down right after) or kept in
/// a slot. Any error drops, and so takes down, a filesystem made here.
fn run_on_fs(
    config: &RunConfig,
    fs_spec: &FsSpec,
    size: u64,
    slots: FsSlots<'_>,
    measure: impl FnOnce(&std::path::Path, Option<String>) -> Result<RunRecord>,
) -> Result<(RunRecord, Option<FsRecord>)> {
    if fs_spec.kind == FsKind::Dir {
        return Ok((measure(&config.dir, None)?, None));
    }
    let make = || FsInstance::create(fs_spec, &config.filesystems, size);
    let mut made_now = None;
    let instance = match config.filesystems.fresh {
        Fresh::Run => made_now.insert(make()?),
        Fresh::Point => match slots.point {
            Some(i) => i,
            empty => empty.insert(make()?),
        },
        Fresh::Once => match slots.once {
            Some(i) => i,
            empty => empty.insert(make()?),
        },
    };
    let record = measure(instance.mountpoint(), instance.block_name())?;
    let fs_record = instance.record.clone();
    if let Some(made) = made_now {
        tear_down(made, fs_spec, slots.failures);
    }
    Ok((record, Some(fs_record)))
}

fn new_document(config: &RunConfig) -> ResultsFile {
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool { name: "fsscale".into(), version: env!("CARGO_PKG_VERSION").into() },
        command_line: config.command_line.clone(),
        started_at: results::rfc3339(SystemTime::now()),
        finished_at: None,
        status: Status::Running,
        error: None,
        read_notes: Vec::new(),
        host: Host::detect(),
        target: Target::detect(&config.dir),
        settings: Settings {
            duration_s: config.duration.as_secs_f64(),
            warmup_s: config.warmup.as_secs_f64(),
            runs: config.runs,
            warmup_runs: config.warmup_runs,
            order: Some(config.order),
            order_seed: (config.order == Order::Shuffled).then_some(config.order_seed),
            until_ci_pct: config.until_ci_pct,
            max_runs: config.until_ci_pct.map(|_| config.max_runs),
            sample_interval_s: config.sample_interval.as_secs_f64(),
            pin: config.pin,
            pin_order: None,
            untar: None,
            latency: config.latency,
            instruments: config.instruments,
            command: None,
            replay: None,
            containment: None,
            fresh: config.filesystems.specs.iter().any(|s| s.kind != FsKind::Dir).then_some(config.filesystems.fresh),
            walked_tree: None,
            lookup: (!config.lookup.is_default()).then_some(config.lookup),
            grow_bytes: config.workloads.contains(&Workload::AppendGrow).then_some(config.macro_options.grow_bytes),
            mdtest: config.workloads.iter().any(|w| w.is_mdtest()).then(|| MdtestSettings {
                items: config.mdtest.items,
                write_bytes: config.mdtest.write_bytes,
                stonewall_s: config.mdtest.stonewall.map(|s| s.as_secs_f64()),
            }),
        },
        points: Vec::new(),
        run_id: Some(sys::random_hex(8)),
        cluster: None,
    }
}

/// The tarball `untar` extracts and `traverse` walks: `--tarball`, or the generated tree at
/// `--scale`, made once and kept in the cache directory. Scanning it counts
/// its entries and reads it into the page cache before anything is timed.
fn prepare_tree(options: &MacroOptions, with_tarball: bool, progress: &mut dyn Progress) -> Result<TreeSource> {
    // What `--tree` holds, counted as a tarball's entries are (and read into the cache).
    let walk_contents = match &options.tree {
        Some(tree) => {
            let dir = std::fs::File::open(tree).with_context(|| format!("--tree {}", tree.display()))?;
            archive::tally(std::os::fd::AsRawFd::as_raw_fd(&dir))
                .with_context(|| format!("--tree {}", tree.display()))?
        }
        None => archive::ExtractStats::default(),
    };
    if !with_tarball {
        return Ok(TreeSource {
            tarball: std::path::PathBuf::new(),
            contents: walk_contents,
            command: None,
            walk_tree: options.tree.clone(),
            walk_contents,
            stat: options.stat,
        });
    }
    let tarball = match &options.tarball {
        Some(path) => path.clone(),
        None => {
            let spec = TreeSpec { scale: options.scale, seed: options.seed };
            // Checked before the cached tarball is trusted, not only before one is made.
            sys::ensure_private_dir(&options.cache_dir, "cache directory (FSSCALE_CACHE_DIR)")?;
            let path = options.cache_dir.join(format!("tree-v1-scale{}-seed{}.tar", options.scale, options.seed));
            if !path.is_file() {
                progress.preparing(&format!(
                    "generating the scale-{} tree tarball in {}",
                    options.scale,
                    path.display()
                ));
                if let Err(error) = write_tar_file(&spec, &path) {
                    // A concurrent run may have made the same tarball first; theirs is as good.
                    if !path.is_file() {
                        return Err(error);
                    }
                }
            }
            path
        }
    };
    let mut file =
        sys::open_input(&tarball, u64::MAX).with_context(|| format!("cannot open tarball {}", tarball.display()))?;
    let contents = archive::scan(&mut file).with_context(|| format!("tarball {}", tarball.display()))?;
    Ok(TreeSource {
        tarball,
        contents,
        command: options.extract_cmd.clone(),
        walk_tree: options.tree.clone(),
        walk_contents,
        stat: options.stat,
    })
}

fn finish(doc: &mut ResultsFile, status: Status, error: Option<&anyhow::Error>) {
    doc.status = status;
    doc.error = error.map(|e| format!("{e:#}"));
    doc.finished_at = Some(results::rfc3339(SystemTime::now()));
}
