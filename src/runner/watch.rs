//! Watching the workers while the coordinator waits for them: a worker
//! that reports a failure, a worker process that dies or is stopped, and a
//! worker that makes no progress for the stall timeout each end the run
//! with a message naming the worker and the phase, in seconds rather than
//! never.
//!
//! Deaths are seen through `waitid(WNOWAIT)` (the child stays a zombie for
//! the reaper), scanned only when a SIGCHLD arrived, which also wakes the
//! coordinator's sleep. Progress is a worker's op counter or its heartbeat
//! (fixed work beats whenever it checks for a stop); a worker waiting for
//! the coordinator (at the barrier, or done with its job) is never stalled.

use std::time::Duration;

use anyhow::{anyhow, Result};

use super::gate::Gate;
use super::shared::{Phase, SharedRegion, Stage};
use super::signals;
use crate::sys;

/// How often progress is compared at most: rarely enough not to disturb
/// the measured CPUs, often enough for a stall timeout of a second.
const STALL_CHECK: Duration = Duration::from_millis(250);

/// A worker process stopped (SIGSTOP, SIGTSTP) this long fails the run even
/// before the stall timeout: it is not slow, it would hold the run forever.
/// (Under Ctrl-Z the coordinator stops too and sees the stop only after `fg`.)
const STOPPED_LIMIT: Duration = Duration::from_secs(5);

pub(super) struct Watch<'a> {
    region: &'a SharedRegion,
    /// Worker processes by index; `None` for threads.
    pids: Option<&'a [libc::pid_t]>,
    fixed_work: bool,
    stall_timeout: Duration,
    child_events_seen: u64,
    last_progress: Vec<(u64, u64)>,
    last_change_ns: Vec<u64>,
    next_stall_check_ns: u64,
    /// Processes seen stopped at the last scan: by which signal, seen since when.
    stopped: Vec<Option<(i32, u64)>>,
    /// The first worker seen stopped (or continued after a stop) during the
    /// warm-up or the measured part, and how: its figures are not the system's.
    stopped_while_measuring: Option<String>,
    /// [`signals::continued`] when the watch began: fsscale itself stopped since.
    continued_at_start: u64,
    /// Told the coordinator is alive at every check (an MPI rank's pulse).
    gate: Option<&'a dyn Gate>,
    _wake: signals::WakeOnSignal,
}

impl<'a> Watch<'a> {
    pub(super) fn new(
        region: &'a SharedRegion,
        pids: Option<&'a [libc::pid_t]>,
        fixed_work: bool,
        stall_timeout: Duration,
        gate: Option<&'a dyn Gate>,
    ) -> Watch<'a> {
        let workers = region.workers();
        let now = sys::monotonic_ns();
        Watch {
            region,
            pids,
            fixed_work,
            stall_timeout,
            // Scan once at the first check: a worker may have died before the watch began.
            child_events_seen: signals::child_events().wrapping_sub(1),
            last_progress: vec![(0, 0); workers],
            last_change_ns: vec![now; workers],
            next_stall_check_ns: now,
            stopped: vec![None; workers],
            stopped_while_measuring: None,
            continued_at_start: signals::continued(),
            gate,
            _wake: signals::WakeOnSignal::new(region.events_word()),
        }
    }

    /// Whether the workers are threads (no processes to watch).
    pub(super) fn watches_threads(&self) -> bool {
        self.pids.is_none()
    }

    /// Fails on a signal, a worker's reported failure, a dead worker or a stalled one.
    pub(super) fn check(&mut self) -> Result<()> {
        signals::check()?;
        if let Some(gate) = self.gate {
            gate.alive();
        }
        if self.region.failed() > 0 {
            // The first failure is the cause; the others mostly stopped because of it.
            let message = self
                .region
                .first_failed()
                .into_iter()
                .chain(0..self.region.workers())
                .find_map(|i| self.region.report(i).error())
                .unwrap_or_else(|| "a worker failed without a message".to_string());
            return Err(anyhow!(message));
        }
        self.check_children()?;
        let now = sys::monotonic_ns();
        if now >= self.next_stall_check_ns {
            self.next_stall_check_ns = now + STALL_CHECK.as_nanos() as u64;
            self.check_stalls(now)?;
        }
        Ok(())
    }

    /// Sleeps until `deadline_ns`, checking whenever something happens.
    pub(super) fn sleep_until(&mut self, deadline_ns: u64) -> Result<()> {
        self.sleep_until_or(deadline_ns, |_| false)
    }

    /// Waits until `done` holds, checking whenever something happens.
    pub(super) fn wait_for(&mut self, done: impl Fn(&SharedRegion) -> bool) -> Result<()> {
        self.sleep_until_or(u64::MAX, done)
    }

    /// Sleeps until `deadline_ns` or until `done` holds, whichever comes
    /// first, checking whenever something happens.
    pub(super) fn sleep_until_or(&mut self, deadline_ns: u64, done: impl Fn(&SharedRegion) -> bool) -> Result<()> {
        loop {
            // Read the event word before checking, so an event between the
            // check and the sleep ends the sleep at once.
            let seen = self.region.events();
            self.check()?;
            let now = sys::monotonic_ns();
            if done(self.region) || now >= deadline_ns {
                return Ok(());
            }
            self.region.wait_for_event(seen, Duration::from_nanos(deadline_ns - now).min(STALL_CHECK));
        }
    }

    fn check_children(&mut self) -> Result<()> {
        let Some(pids) = self.pids else { return Ok(()) };
        let events = signals::child_events();
        if events == self.child_events_seen {
            return Ok(());
        }
        self.child_events_seen = events;
        for (index, &pid) in pids.iter().enumerate() {
            let state = child_state(pid);
            if matches!(state, ChildState::Stopped(_) | ChildState::Continued) && self.measuring() {
                let how = match state {
                    ChildState::Stopped(signal) => format!("by {}", signals::name(signal)),
                    _ => "and continued".to_string(),
                };
                let when = self.when(index);
                self.stopped_while_measuring.get_or_insert_with(|| format!("worker {index} was stopped {how} {when}"));
            }
            match state {
                ChildState::Running | ChildState::Continued => self.stopped[index] = None,
                ChildState::Stopped(signal) => {
                    let since = self.stopped[index].map_or_else(sys::monotonic_ns, |(_, since)| since);
                    self.stopped[index] = Some((signal, since));
                }
                ChildState::Exited(how) => {
                    let report = self.region.report(index);
                    if report.stage() != Stage::Exited {
                        return Err(anyhow!("worker {index} died ({how}) {}", self.when(index)));
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether what workers do now is measured (or warms up for it).
    fn measuring(&self) -> bool {
        matches!(self.region.phase(), Phase::Warmup | Phase::Window)
    }

    /// Marks the start of what is measured (the warm-up, or a fixed job):
    /// stops from here on fail the run, earlier ones (in setup) do not.
    pub(super) fn start_measuring(&mut self) {
        self.check_children().ok();
        self.stopped_while_measuring = None;
        self.continued_at_start = signals::continued();
    }

    /// Fails a run whose measurement a stop disturbed: a worker stopped
    /// (SIGSTOP, Ctrl-Z) even briefly, or fsscale itself stopped and
    /// continued, since [`Watch::start_measuring`]. Such a run's rate is not the
    /// system's (a 3 s stop in a 1.5 s window recorded 290k ops/s against
    /// 2.0M), so it is not recorded; the run says why.
    pub(super) fn check_not_stopped(&mut self) -> Result<()> {
        self.check_children()?;
        let what = match (&self.stopped_while_measuring, signals::continued() != self.continued_at_start) {
            (Some(worker), _) => worker.clone(),
            (None, true) => "fsscale was stopped (Ctrl-Z or SIGSTOP) and continued while it measured".to_string(),
            (None, false) => return Ok(()),
        };
        Err(anyhow!(
            "{what}: a stopped worker's rate is not the system's, so the run is not recorded; run it again without stopping it"
        ))
    }

    fn check_stalls(&mut self, now: u64) -> Result<()> {
        let barrier_closed = self.region.phase() == Phase::Setup;
        for index in 0..self.region.workers() {
            let report = self.region.report(index);
            let waiting = match report.stage() {
                Stage::Ready => barrier_closed,
                Stage::Completed | Stage::Exited => true,
                Stage::Working => false,
            };
            let progress = (
                self.region.counter(index).ops.load(std::sync::atomic::Ordering::Relaxed),
                report.heartbeat.load(std::sync::atomic::Ordering::Relaxed),
            );
            if waiting || progress != self.last_progress[index] {
                self.last_progress[index] = progress;
                self.last_change_ns[index] = now;
                continue;
            }
            if let Some((signal, since)) = self.stopped[index] {
                let stopped = Duration::from_nanos(now.saturating_sub(since));
                if stopped >= STOPPED_LIMIT.min(self.stall_timeout) {
                    return Err(anyhow!(
                        "worker {index} was stopped ({}) {} and stayed stopped for {:.1} s",
                        signals::name(signal),
                        self.when(index),
                        stopped.as_secs_f64()
                    ));
                }
                // Stopped, it makes no progress: the stop is what to name once
                // it lasts (a busy machine may have kept the worker off a CPU
                // for most of the stall timeout before the stop landed).
                continue;
            }
            let idle = Duration::from_nanos(now.saturating_sub(self.last_change_ns[index]));
            if idle >= self.stall_timeout {
                return Err(anyhow!(
                    "worker {index} made no progress for {:.1} s {}; raise --stall-timeout if it is only slow",
                    idle.as_secs_f64(),
                    self.when(index)
                ));
            }
        }
        Ok(())
    }

    /// The phase a worker was in, for messages.
    fn when(&self, index: usize) -> &'static str {
        let stage = self.region.report(index).stage();
        match (self.region.phase(), self.fixed_work) {
            (Phase::Setup, _) if stage == Stage::Ready => "at the start barrier",
            (Phase::Setup, _) => "while setting up",
            (Phase::Warmup, _) => "during the warm-up",
            (Phase::Window, false) => "during the timed window",
            (Phase::Window, true) if stage == Stage::Completed => "after finishing its job",
            (Phase::Window, true) => "during its timed job",
            (Phase::Stop, false) => "after the timed window",
            (Phase::Stop, true) => "during its untimed cleanup",
            (Phase::Abort, _) => "while stopping",
        }
    }
}

enum ChildState {
    Running,
    Stopped(i32),
    /// Continued after a stop (the event stays pending: `WNOWAIT`).
    Continued,
    Exited(String),
}

/// A child's state without reaping it (`WNOWAIT`).
fn child_state(pid: libc::pid_t) -> ChildState {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions as W};
    let Some(pid) = Pid::from_raw(pid) else { return ChildState::Running };
    let flags = W::EXITED | W::STOPPED | W::CONTINUED | W::NOHANG | W::NOWAIT;
    // ECHILD: already reaped, which only the reaper does after the watch;
    // `None`: nothing changed.
    let Ok(Some(info)) = waitid(WaitId::Pid(pid), flags) else { return ChildState::Running };
    if let Some(status) = info.exit_status() {
        ChildState::Exited(format!("exited with status {status}"))
    } else if let Some(signal) = info.terminating_signal() {
        ChildState::Exited(format!("killed by {}", signals::name(signal)))
    } else if let Some(signal) = info.stopping_signal().or(info.trapping_signal()) {
        ChildState::Stopped(signal)
    } else if info.continued() {
        ChildState::Continued
    } else {
        ChildState::Running
    }
}
