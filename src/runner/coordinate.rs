//! The coordinator's side of one run: the start barrier, the warm-up and
//! the timed window (or fixed work until every worker is done), sampled
//! and watched, with the machine's figures read at its edges.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::cpu::CpuTicks;
use super::gate::{Gate, TEND_INTERVAL};
use super::latency::IntervalSampler;
use super::memory_limit::LimitSwitch;
use super::shared::{Phase, SharedRegion};
use super::signals;
use super::system_stats::{self, SystemSnapshot};
use super::timing::{device_io, load_average, Timing};
use super::watch::Watch;
use super::window::Window;
use super::worker::WorkerPlan;
use crate::exec::Placeholders;
use crate::fs::DeviceSnapshot;
use crate::instruments::RunInstruments;
use crate::plan::SteadyWarmup;
use crate::results::{SteadyOutcome, Timeline, Writeback};
use crate::stats::steady;
use crate::sys;

/// `--memory-limit`, lifted for the workers' setup, set again before they
/// are measured. The caller has written what setup wrote back (`syncfs`),
/// so that reclaim can evict it; on a filesystem fsscale made (`made`) a
/// freeze and thaw also checkpoint the journal, which otherwise pins the
/// metadata setup wrote (the tree's directories and inodes) until it wraps.
fn set_memory_limit(scratch_fd: std::os::fd::BorrowedFd<'_>, limit: &LimitSwitch, made: bool) -> Result<()> {
    if made {
        sys::freeze_and_thaw(scratch_fd);
    }
    limit.set()
}

/// Waits until every worker has set up (the start barrier is then full).
fn wait_ready(watch: &mut Watch<'_>, workers: usize) -> Result<()> {
    watch.wait_for(|region| region.ready() as usize == workers)
}

/// Fixed work: opens the barrier and waits for every worker to finish,
/// sampling progress; the run's time is the slowest worker's.
fn coordinate_fixed_work(
    plan: &WorkerPlan<'_>,
    watch: &mut Watch<'_>,
    workers: usize,
    timing: &Timing,
    gate: Option<&dyn Gate>,
) -> Result<Window> {
    let region = plan.region;
    wait_ready(watch, workers)?;
    if timing.drop_caches {
        drop_caches()?;
    }
    run_prepare(plan)?;
    let mut instruments = RunInstruments::arm(&plan.arm_for(&timing.instruments, &region.tids()))?;
    // What setup wrote (traverse's copy of the tree, --setup, --prepare) is
    // written back now, untimed, so that neither the job nor the sync after
    // it pays for it: both then account for the job's own writes only.
    sys::syncfs(plan.scratch_fd);
    if let Some(limit) = &timing.memory {
        set_memory_limit(plan.scratch_fd, limit, timing.device.is_some())?;
    }
    let system_start = SystemSnapshot::read();
    let migrations_start = system_stats::migrations(&region.tids());
    let cpu_start = CpuTicks::read();
    let load_1m = load_average();
    let device_start = timing.device.as_deref().and_then(DeviceSnapshot::read);
    // Thread workers' commands are this process's children.
    let threads = watch.watches_threads();
    let children_start = threads.then(sys::children_cpu_micros);
    if let Some(gate) = gate {
        gate.start()?;
    }
    instruments.start(|| 0)?;
    let start = sys::monotonic_ns();
    watch.start_measuring();
    region.set_phase(Phase::Window);
    let mut timeline = sample_until_done(region, watch, workers, timing, gate, start, &mut instruments)?;
    let completed: Vec<u64> =
        (0..workers).map(|i| region.report(i).completed_ns.load(Ordering::Acquire).max(start)).collect();
    let stop = completed.iter().copied().max().unwrap_or(start);
    watch.check_not_stopped()?;
    instruments.stop(|| 0)?;
    let cpu_end = CpuTicks::read();
    let device_end = timing.device.as_deref().and_then(DeviceSnapshot::read);
    let system_stats = system_start.changes(&SystemSnapshot::read());
    let migrations = system_stats::changes_by_task(&migrations_start, &system_stats::migrations(&region.tids()));
    let device_io = device_start.zip(device_end).map(|(a, b)| a.delta(&b));
    let writeback = writeback(plan.scratch_fd, timing, device_end);
    let children_cpu = children_start.map(|(u0, s0)| {
        let (u1, s1) = sys::children_cpu_micros();
        (u1.saturating_sub(u0), s1.saturating_sub(s0))
    });
    let mut end_counts = Vec::with_capacity(workers);
    region.read_counters(&mut end_counts);
    timeline.record(stop - start, end_counts.iter().sum());
    if let Some(gate) = gate {
        gate.end()?;
    }
    // Every job is done: workers run their untimed cleanup and leave.
    region.set_phase(Phase::Stop);
    watch.wait_for(|region| region.exited() as usize == workers)?;
    Ok(Window {
        load_1m,
        system_stats,
        migrations,
        start_counts: vec![0; workers],
        end_counts,
        ops_made: None,
        backlog: None,
        elapsed: Duration::from_nanos((stop - start).max(1)),
        timeline,
        cpu_start,
        cpu_end,
        // The same conversion as `elapsed`, so the slowest worker's time equals the run's exactly.
        device_io,
        completion_s: Some(completed.iter().map(|&c| Duration::from_nanos((c - start).max(1)).as_secs_f64()).collect()),
        children_cpu,
        writeback: Some(writeback),
        instruments,
        steady: None,
    })
}

/// Fixed work: samples the entries done until every worker completed,
/// tending the gate (a walk shared with other ranks) between samples.
fn sample_until_done(
    region: &SharedRegion,
    watch: &mut Watch<'_>,
    workers: usize,
    timing: &Timing,
    gate: Option<&dyn Gate>,
    start: u64,
    instruments: &mut RunInstruments,
) -> Result<Timeline> {
    let interval = timing.sample_interval.as_nanos().max(1) as u64;
    let mut timeline = Timeline { interval_s: timing.sample_interval.as_secs_f64(), ..Timeline::default() };
    let mut counts = Vec::with_capacity(workers);
    let mut next_sample = start + interval;
    let tend_ns = gate.filter(|g| g.tends()).map(|_| TEND_INTERVAL.as_nanos() as u64);
    loop {
        watch.check()?;
        if let Some(gate) = gate {
            gate.tend()?;
        }
        if region.completed() as usize == workers {
            break;
        }
        if sys::monotonic_ns() >= next_sample {
            region.read_counters(&mut counts);
            timeline.record(sys::monotonic_ns() - start, counts.iter().sum());
            next_sample += interval;
            instruments.drain()?;
            continue;
        }
        let until = tend_ns.map_or(next_sample, |t| next_sample.min(sys::monotonic_ns() + t));
        watch.sleep_until_or(until, |region| region.completed() as usize == workers)?;
    }
    Ok(timeline)
}

/// Waits for the workers at the barrier, gets the run ready (`--prepare`,
/// the memory limit, the instruments armed) and opens it: the warm-up begins.
fn open_barrier(
    plan: &WorkerPlan<'_>,
    watch: &mut Watch<'_>,
    workers: usize,
    timing: &Timing,
    gate: Option<&dyn Gate>,
) -> Result<RunInstruments> {
    let region = plan.region;
    wait_ready(watch, workers)?;
    run_prepare(plan)?;
    if let Some(limit) = &timing.memory {
        sys::syncfs(plan.scratch_fd);
        set_memory_limit(plan.scratch_fd, limit, timing.device.is_some())?;
    }
    let instruments = RunInstruments::arm(&plan.arm_for(&timing.instruments, &region.tids()))?;
    if let Some(gate) = gate {
        gate.start()?;
    }
    watch.start_measuring();
    if plan.rate.is_some() {
        // Arrival 0 is due as the barrier opens.
        region.set_epoch_ns(sys::monotonic_ns());
    }
    region.set_phase(Phase::Warmup);
    Ok(instruments)
}

/// Opens the barrier, runs warm-up and window, samples the counters; all
/// the while watching the workers (`pids` for processes).
/// With a `gate`, the windows open and close together with other processes' workers.
pub(super) fn coordinate(
    plan: &WorkerPlan<'_>,
    workers: usize,
    pids: Option<&[libc::pid_t]>,
    timing: &Timing,
    gate: Option<&dyn Gate>,
) -> Result<Window> {
    let fixed_work = plan.workload.is_fixed_work();
    let mut watch = Watch::new(plan.region, pids, fixed_work, timing.stall_timeout, gate);
    if fixed_work {
        return coordinate_fixed_work(plan, &mut watch, workers, timing, gate);
    }
    let region = plan.region;
    let mut instruments = open_barrier(plan, &mut watch, workers, timing, gate)?;
    let warmup_end = sys::monotonic_ns() + timing.warmup.as_nanos() as u64;
    watch.sleep_until(warmup_end)?;

    let mut start_counts = Vec::with_capacity(workers);
    let system_start = SystemSnapshot::read();
    let migrations_start = system_stats::migrations(&region.tids());
    let cpu_start = CpuTicks::read();
    let load_1m = load_average();
    let device_start = timing.device.as_deref().and_then(DeviceSnapshot::read);
    instruments.start(|| region.total_ops())?;
    // An open loop's intervals are of its response times.
    let interval_kind = plan.rate.map(|_| super::open_loop::RESPONSE);
    let mut latency = plan.latency.map(|l| IntervalSampler::new(l, interval_kind));
    // The phase first, then the counts: every op counted in the window is
    // then one its worker made with the window open (and its CPU time in
    // the worker's own window figures). Counted first, a coordinator
    // descheduled before the phase changed counted warm-up ops of a worker
    // that then never saw the window open: ops on no CPU.
    region.set_phase(Phase::Window);
    let start = sys::monotonic_ns();
    // An open loop's lateness before its counts: every op counted in the
    // window is then due at or after the due time read, so the window's
    // ops are at most the rate's over the window, this backlog and an op
    // per worker (which a test holds every run to).
    let per_worker_rate = plan.rate.map(|r| r.per_worker_ops_per_s(plan.workers));
    let backlog_at_start = per_worker_rate.map(|rate| region.backlog(start, rate));
    region.read_counters(&mut start_counts);
    let base: u64 = start_counts.iter().sum();
    // Ranks open and close their windows together: they cannot each decide when to stop.
    let until_steady = timing.until_steady.filter(|_| gate.is_none());
    let mut samplers = Samplers { instruments: &mut instruments, latency: latency.as_mut() };
    let (mut timeline, steady) =
        sample_window(region, &mut watch, workers, timing, until_steady, start, base, &mut samplers)?;
    if gate.is_none() {
        until_every_worker_made_an_op(region, &mut watch, &start_counts)?;
    }
    instruments.stop(|| region.total_ops())?;
    let mut end_counts = Vec::with_capacity(workers);
    region.read_counters(&mut end_counts);
    let stop = sys::monotonic_ns();
    let backlog = backlog_at_start.zip(per_worker_rate).map(|(at_start, rate)| [at_start, region.backlog(stop, rate)]);
    watch.check_not_stopped()?;
    region.set_phase(Phase::Stop);
    let cpu_end = CpuTicks::read();
    let device_io = device_io(timing, device_start);
    let system_stats = system_start.changes(&SystemSnapshot::read());
    let migrations = system_stats::changes_by_task(&migrations_start, &system_stats::migrations(&region.tids()));
    timeline.record(stop - start, end_counts.iter().sum::<u64>() - base);
    timeline.latency = latency.map(|mut l| {
        l.sample();
        l.finish()
    });
    // Workers record their CPU time when they see Stop; wait for them to
    // leave (one that does not is stalled, and named).
    watch.wait_for(|region| region.exited() as usize == workers)?;
    // Each worker's count holds every op it made, and it has stopped.
    let ops_made = Some(region.total_ops());
    if let Some(gate) = gate {
        gate.end()?;
    }
    Ok(Window {
        load_1m,
        system_stats,
        migrations,
        start_counts,
        end_counts,
        ops_made,
        backlog,
        elapsed: Duration::from_nanos(stop - start),
        timeline,
        cpu_start,
        cpu_end,
        completion_s: None,
        device_io,
        children_cpu: None,
        writeback: None,
        instruments,
        steady,
    })
}

/// How often a window past its length looks for a worker's first op.
const FIRST_OP_POLL: Duration = Duration::from_millis(1);

/// Holds a window open past its length until every worker has made an op
/// in it. A window shorter than a worker's op, or one in which a busy
/// machine never ran the worker, measures nothing of that worker: its
/// rate would be 0 and its share of the figures noise. The window's real
/// length is what every rate divides by; a worker that makes no op at all
/// is the stall watch's to fail. (Ranks close their windows together, and
/// do not wait here.)
fn until_every_worker_made_an_op(region: &SharedRegion, watch: &mut Watch<'_>, start_counts: &[u64]) -> Result<()> {
    let mut counts = Vec::with_capacity(start_counts.len());
    loop {
        region.read_counters(&mut counts);
        if counts.iter().zip(start_counts).all(|(now, then)| now > then) {
            return Ok(());
        }
        watch.sleep_until(sys::monotonic_ns() + FIRST_OP_POLL.as_nanos() as u64)?;
    }
}

/// What is read at every sample of a window besides the op counters.
struct Samplers<'i, 'l> {
    instruments: &'i mut RunInstruments,
    latency: Option<&'i mut IntervalSampler<'l>>,
}

/// Samples a fixed-time window that opened at `start` with `base` ops
/// counted, and returns at its end: `--duration` after `start`, or with
/// `until_steady` (a warm-up run), once its windows' rate is steady (but
/// not before `--duration`) or at the rule's most.
#[allow(clippy::too_many_arguments)]
fn sample_window(
    region: &SharedRegion,
    watch: &mut Watch<'_>,
    workers: usize,
    timing: &Timing,
    until_steady: Option<SteadyWarmup>,
    start: u64,
    base: u64,
    samplers: &mut Samplers<'_, '_>,
) -> Result<(Timeline, Option<SteadyOutcome>)> {
    let least = start + timing.duration.as_nanos() as u64;
    let (interval, end) = match until_steady {
        // The rule's windows are the timeline's samples; the least length stays `--duration`.
        Some(s) => {
            (Duration::from_secs_f64(s.rule.window_s), start + Duration::from_secs_f64(s.max_s).as_nanos() as u64)
        }
        None => (timing.sample_interval, least),
    };
    let end = end.max(least);
    let step = interval.as_nanos().max(1) as u64;
    let mut timeline = Timeline { interval_s: interval.as_secs_f64(), ..Timeline::default() };
    let mut counts = Vec::with_capacity(workers);
    let mut next_sample = start + step;
    let mut outcome = until_steady.map(|_| SteadyOutcome { reached: false, change_pct: None });
    // The rule judges a sample at the very end too; a fixed window's last sample is the caller's.
    let last = if until_steady.is_some() { end } else { end - 1 };
    while next_sample <= last {
        watch.sleep_until(next_sample)?;
        let now = sys::monotonic_ns();
        region.read_counters(&mut counts);
        timeline.record(now - start, counts.iter().sum::<u64>() - base);
        if let Some(latency) = samplers.latency.as_mut() {
            latency.sample();
        }
        next_sample += step;
        samplers.instruments.drain()?;
        if let (Some(s), Some(outcome)) = (until_steady, outcome.as_mut()) {
            let rates = steady::window_rates(&timeline.at_s, &timeline.cumulative_ops);
            outcome.change_pct = s.rule.change(&rates).map(|c| 100.0 * c);
            outcome.reached = s.rule.is_steady(&rates);
            if (outcome.reached && now >= least) || next_sample > end {
                // The window's end is the caller's sample, an instant after this one.
                timeline.at_s.pop();
                timeline.cumulative_ops.pop();
                if let Some(latency) = samplers.latency.as_mut() {
                    latency.pop();
                }
                samplers.instruments.forget_last_sample();
                return Ok((timeline, Some(*outcome)));
            }
        }
    }
    watch.sleep_until(end)?;
    Ok((timeline, outcome))
}

/// Fixed work is done, but what it wrote may still be in the page cache:
/// `syncfs` on the run's filesystem, timed, with the device's I/O from the
/// end of the window (`window_end`) until it returned.
fn writeback(
    scratch_fd: std::os::fd::BorrowedFd<'_>,
    timing: &Timing,
    window_end: Option<DeviceSnapshot>,
) -> Writeback {
    let start = sys::monotonic_ns();
    sys::syncfs(scratch_fd);
    let sync_s = (sys::monotonic_ns() - start) as f64 / 1e9;
    let after = timing.device.as_deref().and_then(DeviceSnapshot::read);
    Writeback { sync_s, device_io: window_end.zip(after).map(|(a, b)| a.delta(&b)) }
}

/// `sync`, then drop the page cache, dentries and inodes (needs root).
pub(super) fn drop_caches() -> Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n")
        .map_err(|e| anyhow!("--cache cold: cannot write /proc/sys/vm/drop_caches ({e}); dropping caches needs root"))
}

/// `--prepare`, between the workers' setup and the start.
fn run_prepare(plan: &WorkerPlan<'_>) -> Result<()> {
    let Some(command) = plan.command else { return Ok(()) };
    let scratch = plan.scratch_path;
    let variant = command.variant.as_deref();
    let values = Placeholders { dir: scratch, worker: 0, workers: plan.workers, scratch, tarball: None, variant };
    let stop = || signals::check().is_err();
    command.run_untimed("--prepare", command.prepare.as_deref(), &values, &stop)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_window_past_its_length_waits_for_every_workers_first_op_and_no_longer() {
        let region = SharedRegion::new(3).unwrap();
        let start_counts = [7, 0, 2];
        region.counter(0).ops.store(9, Ordering::Relaxed);
        region.counter(2).ops.store(3, Ordering::Relaxed);
        let released = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| {
                let mut watch = Watch::new(&region, None, false, Duration::from_secs(600), None);
                until_every_worker_made_an_op(&region, &mut watch, &start_counts).unwrap();
                // Worker 1 had made no op: the wait could only end once it did.
                assert!(released.load(Ordering::SeqCst), "ended before worker 1's first op");
            });
            // Still waiting, whenever this runs.
            assert!(!waiting.is_finished());
            released.store(true, Ordering::SeqCst);
            region.counter(1).ops.store(1, Ordering::Relaxed);
            waiting.join().unwrap();
        });
        // Every worker past its start count already: no wait at all.
        let mut watch = Watch::new(&region, None, false, Duration::from_secs(600), None);
        until_every_worker_made_an_op(&region, &mut watch, &[0, 0, 0]).unwrap();
    }
}
