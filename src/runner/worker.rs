//! What one worker does: set up its files, wait at the barrier, run the hot
//! loop until told to stop. The same body runs in a forked process or a thread.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

use super::latency::{LatencyRegion, Recorder};
use super::open_loop::{self, Monotonic, Pacer, RatePlan, Schedule, Wait};
use super::shared::{Phase, SharedRegion};
use crate::panics;
use crate::replay::OpIndex;
use crate::replay::{OpKind, Player, ReplayError, Trace};
use crate::sys::{self, ThreadSched};
use crate::workloads::{
    self, CommandSpec, Job, JobContext, Op, OpDriver, PointState, Share, Started, TreeSource, WorkerEnv, Workload,
    WorkloadOptions, SHARED_DIR,
};

/// Everything a worker needs, prepared by the coordinator before any worker starts.
pub(super) struct WorkerPlan<'a> {
    pub workload: Workload,
    pub share: Share,
    /// The point's workers, in every process together.
    pub workers: usize,
    /// The worker index of this process's first slot in `region`: 0 on one
    /// machine, where all workers are here; a rank's worker under MPI.
    pub first: usize,
    pub scratch_fd: std::os::fd::BorrowedFd<'a>,
    pub scratch_path: &'a std::path::Path,
    pub tree: Option<&'a TreeSource>,
    pub command: Option<&'a CommandSpec>,
    /// The trace `replay` plays.
    pub trace: Option<&'a Trace>,
    pub options: WorkloadOptions,
    /// Latency histograms (`--latency`, `replay`'s per-op ones, an open loop's).
    pub latency: Option<&'a LatencyRegion>,
    /// `--rate`: an open loop at this rate.
    pub rate: Option<RatePlan>,
    pub point: &'a PointState,
    /// CPU per slot, with `--pin`.
    pub cpus: Option<&'a [usize]>,
    /// Workers are processes (each accounts for its own children's CPU).
    pub processes: bool,
    pub region: &'a SharedRegion,
}

impl WorkerPlan<'_> {
    /// What the run's instruments are armed for: `tasks`, doing this plan's work.
    pub(super) fn arm_for<'a>(
        &'a self,
        config: &'a crate::instruments::InstrumentConfig,
        tasks: &'a [i32],
    ) -> crate::instruments::ArmFor<'a> {
        crate::instruments::ArmFor { config, tasks, workload: self.workload, options: &self.options }
    }
}

/// The body of the worker in `slot` of the region. Never panics across this boundary:
/// every failure, a panic included, ends up as a message in the worker's report.
pub(super) fn worker_main(plan: &WorkerPlan<'_>, slot: usize) {
    guarded(plan.region, slot, plan.first + slot, || run_worker(plan, slot));
}

/// [`worker_main`] in a forked process that works under `--memory-limit`
/// (a worker, or the host of thread workers, whose `slots` then all fail
/// with it): first into the limit's cgroup, or no work at all.
pub(super) fn in_memory_cgroup(plan: &WorkerPlan<'_>, slots: std::ops::Range<usize>, work: impl FnOnce()) {
    match crate::exec::enter_memory_cgroup() {
        Ok(()) => work(),
        Err(errno) => {
            for slot in slots {
                let failed = || anyhow::bail!("could not join --memory-limit's cgroup: {}", sys::errno_text(errno));
                guarded(plan.region, slot, plan.first + slot, failed);
            }
        }
    }
}

/// Runs a worker body, turning an error or a panic into a failure the
/// coordinator sees, and always counting the worker out.
fn guarded(region: &SharedRegion, slot: usize, worker: usize, body: impl FnOnce() -> Result<()>) {
    let outcome = panics::catch(body);
    let message = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(format!("worker {worker}: {error:#}")),
        Err(panic) => Some(format!("worker {worker} panicked: {panic}")),
    };
    if let Some(message) = message {
        region.report(slot).set_error(&message);
        region.mark_failed(slot);
    }
    region.mark_exited(slot);
}

/// Slots index the region, the latency histograms and `--pin`'s CPUs; the
/// worker's index (`first + slot`) names its files and directories.
fn run_worker(plan: &WorkerPlan<'_>, slot: usize) -> Result<()> {
    let index = plan.first + slot;
    if let Some(cpus) = plan.cpus {
        let cpu = cpus[slot];
        sys::pin_to_cpu(cpu).map_err(|e| anyhow::anyhow!("binding to CPU {cpu}: {}", sys::errno_text(e)))?;
        plan.region.report(slot).pinned_cpu.store(cpu as i32, Ordering::Relaxed);
    }
    let label = match plan.share {
        Share::Private => format!("w{index}"),
        Share::Shared | Share::Same => SHARED_DIR.to_string(),
    };
    let label_c = sys::cname(&label);
    if plan.share == Share::Private {
        sys::mkdirat(plan.scratch_fd, &label_c, 0o700)
            .map_err(|e| anyhow::anyhow!("mkdirat(\"{label}\") failed: {}", sys::errno_text(e)))?;
    }
    let dir = sys::open(plan.scratch_fd, &label_c, libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow::anyhow!("openat(\"{label}\") failed: {}", sys::errno_text(e)))?;
    let env = WorkerEnv {
        workload: plan.workload,
        index,
        workers: plan.workers,
        share: plan.share,
        dir: dir.as_fd(),
        dir_label: &label,
        scratch_path: plan.scratch_path,
        point: plan.point,
        tree: plan.tree,
        command: plan.command,
        options: plan.options,
    };
    let recorder = plan.latency.map(|l| l.recorder(slot));
    let paced = plan.rate.map(|rate| Paced { rate, index, workers: plan.workers });
    let driver = Driver { region: plan.region, slot, label: &label, recorder, paced };
    let outcome = match workloads::start(&env, driver) {
        Ok(Started::Drove(outcome)) => outcome,
        Ok(Started::Job(job)) => run_job(job, plan.region, slot, plan.processes),
        Ok(Started::Replay) => match plan.trace {
            Some(trace) => run_replay(trace, &env, plan.region, slot, recorder, paced),
            None => Err(anyhow::anyhow!("replay needs its trace (internal error)")),
        },
        Err(error) => Err(error),
    };
    outcome
}

/// Fixed work: set up, wait for the start, do the job once, note when it finished.
fn run_job(mut job: Box<dyn Job + '_>, region: &SharedRegion, slot: usize, processes: bool) -> Result<()> {
    let report = region.report(slot);
    let counter = &region.counter(slot).ops;
    let stop = || {
        report.beat();
        region.phase() == Phase::Abort
    };
    let progress = |done: u64| counter.store(done, Ordering::Relaxed);
    let ctx = JobContext { stop: &stop, progress: &progress };
    job.prepare(&ctx)?;
    region.mark_ready(slot);
    if region.wait_for_start() != Phase::Window {
        return Ok(()); // abandoned before the start
    }
    region.mark_working(slot);
    record_sched(&report.sched_at_window_start);
    if processes {
        record(&report.children_at_window_start, <[u64; 2]>::from(sys::children_cpu_micros()));
    }
    let output = job.run(&ctx)?;
    let completed = sys::monotonic_ns();
    counter.store(output.entries, Ordering::Relaxed);
    report.bytes.store(output.bytes, Ordering::Relaxed);
    if let Some(walk) = &output.walk {
        report.set_walk(walk);
    }
    record_sched(&report.sched_at_window_end);
    if processes {
        record(&report.children_at_window_end, <[u64; 2]>::from(sys::children_cpu_micros()));
    }
    report.completed_ns.store(completed, Ordering::Release);
    region.mark_completed(slot);
    // Untimed cleanup once everybody is done, so it never overlaps a timed job.
    if region.wait_while(Phase::Window) == Phase::Stop {
        job.finish(&ctx)?;
    }
    Ok(())
}

/// `replay`: the trace in a loop, every op timed into its kind's histogram.
fn run_replay(
    trace: &Trace,
    env: &WorkerEnv<'_>,
    region: &SharedRegion,
    slot: usize,
    recorder: Option<Recorder<'_>>,
    paced: Option<Paced>,
) -> Result<()> {
    let recorder = recorder.ok_or_else(|| anyhow::anyhow!("replay needs latency histograms (internal error)"))?;
    let mut player = Player::new(trace, env.dir);
    region.mark_ready(slot);
    let bytes = match paced {
        None => replay_loop(&mut player, region, slot, recorder),
        Some(paced) => paced_replay_loop(&mut player, region, slot, recorder, paced),
    }
    .map_err(|e| anyhow::anyhow!("{}, line {}: {:#}", trace.name, e.line, e.error))?;
    region.report(slot).bytes.store(bytes, Ordering::Relaxed);
    Ok(())
}

/// Runs the hot loop of whatever op `workloads::start` built; errors come back as text.
struct Driver<'a> {
    region: &'a SharedRegion,
    slot: usize,
    label: &'a str,
    /// With `--latency`: time every op (a loop of its own, so the plain one stays as it is).
    recorder: Option<Recorder<'a>>,
    /// With `--rate`: an open loop (the recorder holds its histograms).
    paced: Option<Paced>,
}

/// An open-loop worker's part of the schedule: worker `index` of `workers`.
#[derive(Clone, Copy)]
struct Paced {
    rate: RatePlan,
    index: usize,
    workers: usize,
}

impl OpDriver<Result<()>> for Driver<'_> {
    fn drive<O: Op>(self, mut op: O) -> Result<()> {
        self.region.mark_ready(self.slot);
        let outcome = match (self.recorder, self.paced) {
            (Some(recorder), Some(paced)) => paced_loop(&mut op, self.region, self.slot, recorder, paced),
            (Some(recorder), None) => timed_loop(&mut op, self.region, self.slot, recorder),
            (None, _) => hot_loop(&mut op, self.region, self.slot),
        };
        outcome.map_err(|e| {
            let what = match e.errno {
                0 => "transferred fewer bytes than asked".to_string(),
                errno => format!("failed: {}", sys::errno_text(errno)),
            };
            anyhow::anyhow!("{}(\"{}/{}\") {what}", e.call, self.label, op.arg_name(e.arg).to_string_lossy())
        })
    }
}

/// The measured loop: one op, one counter store, one look at the phase word.
///
/// The counter slot has a single writer, so a plain store of a local count
/// suffices (no locked read-modify-write). The phase word is written three
/// times per run, so reading it each iteration hits a shared, clean line.
#[inline(never)]
fn hot_loop<O: Op>(op: &mut O, region: &SharedRegion, slot: usize) -> Result<(), workloads::SysError> {
    let counter = &region.counter(slot).ops;
    let phase_word = region.phase_word();
    let mut done: u64 = 0;
    through_phases(region, slot, |_, seen| loop {
        op.once()?;
        done += 1;
        counter.store(done, Ordering::Relaxed);
        if phase_word.load(Ordering::Relaxed) != seen {
            return Ok(());
        }
    })
}

/// [`hot_loop`] with every op timed (two vDSO clock reads) and recorded
/// into the worker's histogram while the window is open.
#[inline(never)]
fn timed_loop<O: Op>(
    op: &mut O,
    region: &SharedRegion,
    slot: usize,
    recorder: Recorder<'_>,
) -> Result<(), workloads::SysError> {
    let counter = &region.counter(slot).ops;
    let phase_word = region.phase_word();
    let mut done: u64 = 0;
    through_phases(region, slot, |in_window, seen| loop {
        let start = sys::monotonic_ns();
        op.once()?;
        let took = sys::monotonic_ns().saturating_sub(start);
        if in_window {
            recorder.record(0, took);
        }
        done += 1;
        counter.store(done, Ordering::Relaxed);
        if phase_word.load(Ordering::Relaxed) != seen {
            return Ok(());
        }
    })
}

/// The open loop (`--rate`): each op when it is due, not when the last
/// returned (see [`open_loop::pace`]); while the window is open, each op's
/// response, service and lag times go into the worker's histograms.
#[inline(never)]
fn paced_loop<O: Op>(
    op: &mut O,
    region: &SharedRegion,
    slot: usize,
    recorder: Recorder<'_>,
    paced: Paced,
) -> Result<(), workloads::SysError> {
    paced_phases(region, slot, recorder, paced, || op.once(), |_| {})
}

/// An open loop through the phases: `op` makes one op; each op's times go
/// into the worker's histograms while the window is open, and to `also`.
#[inline(always)]
fn paced_phases<E>(
    region: &SharedRegion,
    slot: usize,
    recorder: Recorder<'_>,
    paced: Paced,
    mut op: impl FnMut() -> Result<(), E>,
    mut also: impl FnMut(open_loop::Timed),
) -> Result<(), E> {
    let counter = region.counter(slot);
    let phase_word = region.phase_word();
    let mut done: u64 = 0;
    let mut schedule: Option<Schedule> = None;
    let mut pacer = Pacer::new(paced.rate.spins);
    sys::tighten_timer_slack();
    through_phases(region, slot, |in_window, seen| {
        // Arrival 0 is due when the barrier opened: the epoch is set by then.
        let schedule =
            schedule.get_or_insert_with(|| Schedule::new(&paced.rate, paced.index, paced.workers, region.epoch_ns()));
        let wait = Wait { phase: phase_word, seen, due: &counter.due_ns };
        open_loop::pace(&Monotonic, schedule, &mut pacer, &wait, &mut op, |t| {
            if in_window {
                recorder.record(open_loop::RESPONSE, t.response_ns());
                recorder.record(open_loop::SERVICE, t.service_ns());
                recorder.record(open_loop::LAG, t.lag_ns());
                also(t);
            }
            done += 1;
            counter.ops.store(done, Ordering::Relaxed);
        })
    })
}

/// `replay`'s loop: one trace op per iteration, timed into its kind's
/// histogram; returns the bytes read and written inside the window.
#[inline(never)]
fn replay_loop(
    player: &mut Player<'_>,
    region: &SharedRegion,
    slot: usize,
    recorder: Recorder<'_>,
) -> Result<u64, ReplayError> {
    let counter = &region.counter(slot).ops;
    let phase_word = region.phase_word();
    let mut done: u64 = 0;
    let mut bytes: u64 = 0;
    through_phases(region, slot, |in_window, seen| loop {
        let start = sys::monotonic_ns();
        let (kind, moved) = player.step()?;
        let took = sys::monotonic_ns().saturating_sub(start);
        if in_window {
            recorder.record(kind.index(), took);
            bytes += moved;
        }
        done += 1;
        counter.store(done, Ordering::Relaxed);
        if phase_word.load(Ordering::Relaxed) != seen {
            return Ok(());
        }
    })?;
    Ok(bytes)
}

/// `replay` as an open loop (`--rate`): each trace op when it is due; in
/// the window its response, service and lag times, and its service time
/// in its kind's histogram (after the open loop's three).
#[inline(never)]
fn paced_replay_loop(
    player: &mut Player<'_>,
    region: &SharedRegion,
    slot: usize,
    recorder: Recorder<'_>,
    paced: Paced,
) -> Result<u64, ReplayError> {
    let mut bytes: u64 = 0;
    // The op's kind and bytes, from the op to its record.
    let last = std::cell::Cell::new((OpKind::ALL[0], 0));
    let op = || {
        last.set(player.step()?);
        Ok(())
    };
    paced_phases(region, slot, recorder, paced, op, |t| {
        let (kind, moved) = last.get();
        recorder.record(open_loop::KINDS + kind.index(), t.service_ns());
        bytes += moved;
    })?;
    Ok(bytes)
}

/// Waits at the start barrier, then runs `until_change` (the tight loop,
/// told whether the window is open and which phase it runs in) once per
/// phase, recording CPU time at the window's edges, until Stop or Abort.
#[inline(always)]
fn through_phases<E>(
    region: &SharedRegion,
    slot: usize,
    mut until_change: impl FnMut(bool, u32) -> Result<(), E>,
) -> Result<(), E> {
    let report = region.report(slot);
    let mut window_started = false;
    let mut phase = region.wait_for_start();
    loop {
        match phase {
            Phase::Warmup => {}
            Phase::Window => {
                record_sched(&report.sched_at_window_start);
                window_started = true;
            }
            Phase::Stop => {
                record_sched(&report.sched_at_window_end);
                if !window_started {
                    // Never saw the window open (descheduled through all of it).
                    record_sched(&report.sched_at_window_start);
                }
                return Ok(());
            }
            Phase::Setup | Phase::Abort => return Ok(()),
        }
        until_change(phase == Phase::Window, phase as u32)?;
        phase = region.phase();
    }
}

fn record_sched(into: &[AtomicU64; ThreadSched::FIELDS]) {
    record(into, sys::thread_sched());
}

fn record(into: &[AtomicU64], values: impl IntoIterator<Item = u64>) {
    for (slot, value) in into.iter().zip(values) {
        slot.store(value, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_worker_is_a_failure_with_its_message() {
        let region = SharedRegion::new(2).unwrap();
        guarded(&region, 1, 1, || panic!("index out of range"));
        assert_eq!(region.failed(), 1);
        assert_eq!(region.phase(), Phase::Abort);
        let message = region.report(1).error().unwrap();
        assert!(message.starts_with("worker 1 panicked: index out of range"), "{message}");
        assert_eq!(region.exited(), 1);
    }

    #[test]
    fn an_error_is_a_failure_and_success_is_not() {
        let region = SharedRegion::new(2).unwrap();
        guarded(&region, 0, 0, || Ok(()));
        assert_eq!((region.failed(), region.exited()), (0, 1));
        guarded(&region, 1, 5, || Err(anyhow::anyhow!("openat failed")));
        assert_eq!(region.report(1).error().unwrap(), "worker 5: openat failed", "named by index, kept in its slot");
        assert_eq!((region.failed(), region.exited()), (1, 2));
    }
}
