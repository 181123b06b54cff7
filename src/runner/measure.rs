//! One run of one point: a fresh scratch directory, the workers, the timed
//! window, and the record of what happened.

use std::sync::atomic::Ordering;

use anyhow::{Context, Result};

use super::gate::Gate;
use super::latency::LatencyRegion;
use super::memory_limit::LimitSwitch;
use super::open_loop::{self, RatePlan};
use super::shared::SharedRegion;
use super::signals;
use super::spawn;
pub(super) use super::timing::Timing;
use super::worker::WorkerPlan;
use crate::exec::Placeholders;
use crate::plan::{Mode, PointSpec};
use crate::replay::OpIndex;
use crate::replay::{OpKind, Trace};
use crate::results::{fell_behind, OpenLoop, RunRecord};
use crate::scratch::Scratch;
use crate::workloads::{self, CommandSpec, Share, TreeSource, Workload, SHARED_DIR};

/// What the workloads of a run use besides the point itself, prepared once.
#[derive(Clone, Copy, Default)]
pub(super) struct Inputs<'a> {
    pub tree: Option<&'a TreeSource>,
    pub command: Option<&'a CommandSpec>,
    pub trace: Option<&'a Trace>,
    /// `--latency`: time every op of fixed-time loops.
    pub latency: bool,
    pub options: workloads::WorkloadOptions,
    /// Open loops (a point with a rate): how their arrivals are spaced, and
    /// the seed of Poisson ones.
    pub arrivals: crate::vocab::Arrivals,
    pub arrivals_seed: u64,
}

/// One run of one point, as the schedule asks for it.
#[derive(Clone, Copy)]
pub(super) struct RunJob<'a> {
    pub spec: &'a PointSpec,
    /// This run's timing (its cache state and device included).
    pub timing: &'a Timing,
    pub inputs: Inputs<'a>,
    /// Its index among the point's runs (or warm-up runs).
    pub run: usize,
    /// `--pin`: the CPUs workers are bound to, in the order they take them.
    pub cpus: Option<&'a [usize]>,
}

/// What measures the schedule's runs: this machine's workers
/// ([`LocalMachine`]), an MPI job's ranks, or a fake in the runner's tests.
pub(super) trait Measurer {
    /// Runs `job` once in a fresh scratch directory inside `dir`, removed afterwards.
    fn run_once(&self, dir: &std::path::Path, job: RunJob<'_>) -> Result<RunRecord>;

    /// The rank that serves each of a point's `workers` workers (`None` on one machine).
    fn ranks_for(&self, _workers: usize) -> Option<Vec<usize>> {
        None
    }
}

/// This machine's workers: forked processes or threads of this process.
pub(super) struct LocalMachine;

impl Measurer for LocalMachine {
    fn run_once(&self, dir: &std::path::Path, job: RunJob<'_>) -> Result<RunRecord> {
        // Worker i takes the (i mod n)th CPU of the pin order.
        let pinned: Option<Vec<usize>> = job.cpus.map(|c| (0..job.spec.workers).map(|i| c[i % c.len()]).collect());
        let job = RunJob { cpus: pinned.as_deref(), ..job };
        in_scratch(dir, |scratch| match job.inputs.command.filter(|c| c.driver.is_some()) {
            Some(command) => super::driver::run_driver(job.spec, scratch, job.timing, command, job.run),
            None => measure(scratch, job),
        })
    }
}

/// `body` in a fresh scratch directory inside `dir`, removed afterwards
/// whatever `body` did (its error first, then the removal's).
pub(super) fn in_scratch<T>(dir: &std::path::Path, body: impl FnOnce(&Scratch) -> Result<T>) -> Result<T> {
    super::cpu::find_kernel_threads();
    let scratch = Scratch::create(dir)?;
    let outcome = body(&scratch);
    let removal = scratch.remove();
    let value = outcome?;
    removal?;
    Ok(value)
}

/// The coordinator's part of `job`'s point in `scratch`, made once for all its workers.
pub(super) fn prepare_point(scratch: &Scratch, job: RunJob<'_>) -> Result<workloads::PointState> {
    let (spec, inputs) = (job.spec, job.inputs);
    workloads::prepare_point(spec.workload, spec.share, spec.workers, scratch.fd(), inputs.tree, &inputs.options)
}

fn measure(scratch: &Scratch, job: RunJob<'_>) -> Result<RunRecord> {
    let (spec, inputs) = (job.spec, job.inputs);
    let point = prepare_point(scratch, job)?;
    // At --share same the copies share one directory: its --setup and --cleanup run once, here.
    let shared_dir = scratch.path().join(SHARED_DIR);
    let values = Placeholders {
        dir: &shared_dir,
        worker: 0,
        workers: spec.workers,
        scratch: scratch.path(),
        tarball: None,
        variant: inputs.command.and_then(|c| c.variant.as_deref()),
    };
    let once = inputs.command.filter(|_| spec.share == Share::Same);
    let stop = || signals::check().is_err();
    if let Some(command) = once {
        command.run_untimed("--setup", command.setup.as_deref(), &values, &stop)?;
    }
    let place = Place { fd: scratch.fd(), path: scratch.path(), point: &point };
    let record = run_workers(job, place, Crew::everyone(spec))?;
    if let Some(command) = once {
        command.run_untimed("--cleanup", command.cleanup.as_deref(), &values, &stop)?;
    }
    Ok(record)
}

/// Where a run's workers work: the scratch directory and what the
/// coordinator prepared in it for the point.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub fd: std::os::fd::BorrowedFd<'a>,
    pub path: &'a std::path::Path,
    pub point: &'a workloads::PointState,
}

/// Which of a point's workers run in this process, and whom they start with.
#[derive(Clone, Copy)]
pub(super) struct Crew<'a> {
    /// The index of the first worker here; the others follow it.
    pub first: usize,
    pub count: usize,
    /// Forked processes (process mode on one machine) or threads.
    pub fork: bool,
    /// Workers elsewhere (other ranks of an MPI job) open and close their windows together with these.
    pub gate: Option<&'a dyn Gate>,
}

impl Crew<'_> {
    /// All of the point's workers, here, in its mode.
    fn everyone(spec: &PointSpec) -> Crew<'static> {
        Crew { first: 0, count: spec.workers, fork: spec.mode == Mode::Process, gate: None }
    }
}

/// Starts `crew`'s workers in `place` and measures them through the window.
pub(super) fn run_workers(job: RunJob<'_>, place: Place<'_>, crew: Crew<'_>) -> Result<RunRecord> {
    let RunJob { spec, timing, inputs, run, cpus } = job;
    timing.memory.as_ref().map_or(Ok(()), LimitSwitch::lift)?;
    let region = SharedRegion::new(crew.count).context("mapping shared counters")?;
    let rate = spec.rate.map(|rate| RatePlan {
        ops_per_s: rate.ops_per_s(),
        arrivals: inputs.arrivals,
        seed: inputs.arrivals_seed,
        spins: open_loop::spins(crew.count, crate::sys::usable_cpus()),
    });
    // An open loop's response, service and lag histograms come first, then a replay's kinds.
    let open = if rate.is_some() { open_loop::KINDS } else { 0 };
    let kinds = match spec.workload {
        Workload::Replay => open + OpKind::ALL.len(),
        _ if open > 0 => open,
        w if inputs.latency && !w.is_fixed_work() => 1,
        _ => 0,
    };
    let latency = match kinds {
        0 => None,
        k => Some(LatencyRegion::new(crew.count, k).context("mapping latency histograms")?),
    };
    let plan = WorkerPlan {
        workload: spec.workload,
        share: spec.share,
        workers: spec.workers,
        first: crew.first,
        scratch_fd: place.fd,
        scratch_path: place.path,
        tree: inputs.tree,
        command: inputs.command,
        trace: inputs.trace,
        options: inputs.options,
        latency: latency.as_ref(),
        rate,
        point: place.point,
        cpus,
        processes: spec.mode == Mode::Process,
        region: &region,
    };
    let mut window = match (crew.fork, crate::exec::memory_limited()) {
        (true, _) => spawn::run_processes(&plan, timing, crew.gate)?,
        (false, false) => spawn::run_threads(&plan, timing, crew.gate)?,
        (false, true) => spawn::run_threads_in_host(&plan, timing, crew.gate)?,
    };
    let instruments = std::mem::take(&mut window.instruments);
    let backlog = window.backlog;
    let mut record = window.into_record(&region, run, cpus);
    if let Some(latency) = &latency {
        if let Some(rate) = &rate {
            // This process's workers' share of the point's rate.
            let asked = rate.per_worker_ops_per_s(spec.workers) * crew.count as f64;
            let [at_start, at_end] = backlog.unwrap_or_default();
            record.open_loop = Some(OpenLoop {
                asked_ops_per_s: asked,
                arrivals: rate.arrivals,
                response: latency.merged(open_loop::RESPONSE),
                service: latency.merged(open_loop::SERVICE),
                lag: latency.merged(open_loop::LAG),
                backlog_at_start: at_start,
                backlog_at_end: at_end,
                behind: fell_behind(
                    asked,
                    record.ops_per_s,
                    [at_start, at_end],
                    (crew.count, record.elapsed_s),
                    rate.arrivals,
                ),
            });
        }
        if spec.workload == Workload::Replay {
            let per_kind: std::collections::BTreeMap<_, _> = OpKind::ALL
                .iter()
                .map(|k| (*k, latency.merged(open + k.index())))
                .filter(|(_, h)| h.count > 0)
                .collect();
            let mut all = crate::stats::histogram::Histogram::default();
            for h in per_kind.values() {
                all.merge(h);
            }
            record.bytes = Some((0..crew.count).map(|i| region.report(i).bytes.load(Ordering::Relaxed)).sum());
            record.replay_ops = Some(per_kind);
            record.latency = Some(all);
        } else if rate.is_none() {
            record.latency = Some(latency.merged(0));
        }
    }
    // After the replay's ops per kind are in: --verify expects calls from them.
    instruments.finish(&mut record).context("reading the instruments")?;
    super::objects::place_lock_objects(&mut record, place.path);
    Ok(record)
}
