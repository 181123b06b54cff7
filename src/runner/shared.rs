//! The memory workers and the coordinator share: one control block, one
//! counter slot per worker, one report per worker.
//!
//! It is an anonymous `MAP_SHARED` mapping made before workers start, so the
//! same layout serves forked processes and threads alike. Each counter lives
//! alone in a 128-byte slot (two cache lines, because adjacent-line prefetch
//! on x86 pairs lines) so that a worker's increment never invalidates another
//! worker's line.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use crate::sys::{futex_wait, futex_wake_all, map_shared, ThreadSched};

/// Where a point is in its life; workers poll it from the hot loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Phase {
    /// Workers are creating their files; the barrier is closed.
    Setup = 0,
    /// The barrier is open; counting but not yet measured.
    Warmup = 1,
    /// The measured window.
    Window = 2,
    /// Normal end: workers leave the loop and exit.
    Stop = 3,
    /// Something failed or the user interrupted: leave at once.
    Abort = 4,
}

impl Phase {
    fn from_u32(v: u32) -> Phase {
        match v {
            0 => Phase::Setup,
            1 => Phase::Warmup,
            2 => Phase::Window,
            3 => Phase::Stop,
            _ => Phase::Abort,
        }
    }
}

#[repr(C, align(128))]
pub(crate) struct Control {
    phase: AtomicU32,
    ready: AtomicU32,
    failed: AtomicU32,
    /// The worker that failed first, plus one (0: none yet). Its error is
    /// the cause; later ones are mostly workers stopped by the abort.
    first_failed: AtomicU32,
    exited: AtomicU32,
    completed: AtomicU32,
    /// Bumped by every event the coordinator waits for (a worker ready,
    /// failed, completed or gone; a child changing state; a signal). The
    /// coordinator reads it before checking and sleeps only while it is
    /// unchanged, so a wake that lands before the sleep is never lost.
    events: AtomicU32,
    /// Open loops (`--rate`): when arrival 0 is due (CLOCK_MONOTONIC ns),
    /// set before the barrier opens.
    epoch_ns: AtomicU64,
}

/// Where a worker is, as the coordinator needs to know to tell a stuck
/// worker from one that waits for it, and a death from a normal exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Stage {
    /// Setting up (or, for fixed work, doing its job).
    Working = 0,
    /// Waiting at the start barrier.
    Ready = 1,
    /// Fixed work: job done, waiting for Stop.
    Completed = 2,
    /// Left the worker body (normally or after a failure it reported).
    Exited = 3,
}

/// One worker's operation counter, alone in its cache lines.
#[repr(C, align(128))]
pub(crate) struct CounterSlot {
    pub ops: AtomicU64,
    /// Open loops: when the worker's next op is (or its current op was)
    /// due; the coordinator reads how late the worker is from it.
    pub due_ns: AtomicU64,
}

const ERROR_CAPACITY: usize = 480;

/// What a worker tells the coordinator outside the hot loop: its CPU time at
/// the window's edges, the CPU it was bound to, and an error message.
#[repr(C, align(128))]
pub(crate) struct WorkerReport {
    /// The worker's [`crate::sys::thread_sched`] counters (CPU time, context
    /// switches, runqueue wait) at the start and end of the window.
    pub sched_at_window_start: [AtomicU64; ThreadSched::FIELDS],
    pub sched_at_window_end: [AtomicU64; ThreadSched::FIELDS],
    /// Worker processes doing fixed work: CPU of the commands they ran
    /// (`RUSAGE_CHILDREN`) at the window's edges.
    pub children_at_window_start: [AtomicU64; 2],
    pub children_at_window_end: [AtomicU64; 2],
    /// CPU the worker is bound to, or -1.
    pub pinned_cpu: AtomicI32,
    /// The worker's kernel task id (its pid as a process, its tid as a
    /// thread), set when it is ready: what the instruments follow.
    pub tid: AtomicI32,
    /// Fixed work: when the worker finished (CLOCK_MONOTONIC ns), and the bytes it wrote.
    pub completed_ns: AtomicU64,
    pub bytes: AtomicU64,
    /// A shared walk: 1, then the worker's [`crate::workloads::WalkTally`]
    /// (dirs, stolen, given, idle ns, lock waits); all zero for other work.
    pub walk: [AtomicU64; 6],
    /// Advanced by fixed work whenever it checks for a stop (per tar entry,
    /// per directory, every few ms while a command runs): progress the
    /// counter does not show. Single writer.
    pub heartbeat: AtomicU64,
    stage: AtomicU32,
    error_len: AtomicU32,
    error: [AtomicU32; ERROR_CAPACITY / 4],
}

impl WorkerReport {
    pub(crate) fn set_walk(&self, t: &crate::workloads::WalkTally) {
        for (slot, value) in self.walk.iter().zip([1, t.dirs, t.stolen, t.given, t.idle_ns, t.lock_waits]) {
            slot.store(value, Ordering::Relaxed);
        }
    }

    /// The walk's tally as the results keep it; `None` when the worker walked no shared tree.
    pub(crate) fn walk_record(&self) -> Option<crate::results::WalkRecord> {
        let [walked, dirs, stolen, given, idle_ns, lock_waits] =
            self.walk.each_ref().map(|v| v.load(Ordering::Relaxed));
        (walked == 1).then_some(crate::results::WalkRecord {
            dirs,
            stolen,
            given,
            idle_s: idle_ns as f64 / 1e9,
            lock_waits,
        })
    }

    pub(crate) fn stage(&self) -> Stage {
        match self.stage.load(Ordering::Acquire) {
            0 => Stage::Working,
            1 => Stage::Ready,
            2 => Stage::Completed,
            _ => Stage::Exited,
        }
    }

    /// Notes progress outside the counter (see `heartbeat`).
    #[inline]
    pub(crate) fn beat(&self) {
        self.heartbeat.store(self.heartbeat.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// Stores an error message; a longer one than the report holds is
    /// shortened in the middle, so its cause (the errno at the end) stays.
    pub(crate) fn set_error(&self, message: &str) {
        let message = crate::sys::shorten_middle(message, ERROR_CAPACITY);
        let bytes = message.as_bytes();
        let len = bytes.len().min(ERROR_CAPACITY);
        for (i, word) in self.error.iter().enumerate() {
            let mut chunk = [0u8; 4];
            for (j, b) in chunk.iter_mut().enumerate() {
                if let Some(&byte) = bytes[..len].get(i * 4 + j) {
                    *b = byte;
                }
            }
            word.store(u32::from_ne_bytes(chunk), Ordering::Relaxed);
        }
        self.error_len.store(len as u32, Ordering::Release);
    }

    pub fn error(&self) -> Option<String> {
        let len = self.error_len.load(Ordering::Acquire) as usize;
        if len == 0 {
            return None;
        }
        let mut bytes: Vec<u8> = self.error.iter().flat_map(|w| w.load(Ordering::Relaxed).to_ne_bytes()).collect();
        bytes.truncate(len);
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// The shared mapping. Dropping it unmaps the memory in the process that drops it.
pub(crate) struct SharedRegion {
    base: *mut u8,
    len: usize,
    workers: usize,
}

// SAFETY: everything inside is atomics; the raw pointer is only the mapping's address.
unsafe impl Send for SharedRegion {}
// SAFETY: as above, all access goes through atomics.
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    pub fn new(workers: usize) -> std::io::Result<SharedRegion> {
        let len = Self::counters_offset() + workers * (size_of::<CounterSlot>() + size_of::<WorkerReport>());
        let base = map_shared(len, false)?;
        // Zero is a valid value for every atomic in it (phase Setup, counters 0).
        let region = SharedRegion { base, len, workers };
        for i in 0..workers {
            region.report(i).pinned_cpu.store(-1, Ordering::Relaxed);
        }
        Ok(region)
    }

    fn counters_offset() -> usize {
        size_of::<Control>()
    }

    fn control(&self) -> &Control {
        // SAFETY: the mapping starts with a zero-initialised Control, aligned to the page.
        unsafe { &*(self.base as *const Control) }
    }

    pub fn counter(&self, worker: usize) -> &CounterSlot {
        assert!(worker < self.workers);
        // SAFETY: in bounds; slots follow the control block at 128-byte alignment.
        unsafe { &*(self.base.add(Self::counters_offset() + worker * size_of::<CounterSlot>()) as *const CounterSlot) }
    }

    pub fn report(&self, worker: usize) -> &WorkerReport {
        assert!(worker < self.workers);
        let offset =
            Self::counters_offset() + self.workers * size_of::<CounterSlot>() + worker * size_of::<WorkerReport>();
        // SAFETY: in bounds and 128-byte aligned (every preceding block is a multiple of 128).
        unsafe { &*(self.base.add(offset) as *const WorkerReport) }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    #[inline(always)]
    pub(crate) fn phase_word(&self) -> &AtomicU32 {
        &self.control().phase
    }

    pub fn phase(&self) -> Phase {
        Phase::from_u32(self.control().phase.load(Ordering::Acquire))
    }

    /// Moves every worker to `phase` and wakes those waiting at the barrier.
    pub(crate) fn set_phase(&self, phase: Phase) {
        self.control().phase.store(phase as u32, Ordering::Release);
        futex_wake_all(&self.control().phase);
    }

    /// Sets when an open loop's arrival 0 is due; before the barrier opens,
    /// which publishes it.
    pub(crate) fn set_epoch_ns(&self, ns: u64) {
        self.control().epoch_ns.store(ns, Ordering::Relaxed);
    }

    pub(crate) fn epoch_ns(&self) -> u64 {
        self.control().epoch_ns.load(Ordering::Relaxed)
    }

    /// Open loops: the ops due by `now_ns` and not done, all workers here
    /// together, each worker's lateness times its share of the rate.
    pub(crate) fn backlog(&self, now_ns: u64, per_worker_ops_per_s: f64) -> f64 {
        // A worker that has not yet taken its first op is late from the epoch.
        let due = |i: usize| match self.counter(i).due_ns.load(Ordering::Relaxed) {
            0 => self.epoch_ns(),
            due => due,
        };
        let late_ns: u64 = (0..self.workers).map(|i| now_ns.saturating_sub(due(i))).sum();
        late_ns as f64 / 1e9 * per_worker_ops_per_s
    }

    /// Blocks until the phase leaves `Setup` (the start barrier).
    pub(crate) fn wait_for_start(&self) -> Phase {
        self.wait_while(Phase::Setup)
    }

    /// Blocks while the phase is `phase`; returns the next one.
    pub(crate) fn wait_while(&self, phase: Phase) -> Phase {
        loop {
            let now = self.control().phase.load(Ordering::Acquire);
            if now != phase as u32 {
                return Phase::from_u32(now);
            }
            futex_wait(&self.control().phase, now, None);
        }
    }

    /// The event sequence word; read it before checking what to wait for,
    /// then pass it to [`SharedRegion::wait_for_event`].
    pub fn events(&self) -> u32 {
        self.control().events.load(Ordering::Acquire)
    }

    /// The word a signal handler bumps to wake the coordinator.
    pub(crate) fn events_word(&self) -> &AtomicU32 {
        &self.control().events
    }

    fn notify(&self) {
        self.control().events.fetch_add(1, Ordering::AcqRel);
        futex_wake_all(&self.control().events);
    }

    /// Sleeps up to `timeout` unless an event happened since `seen` was read.
    /// Sleeping rather than polling keeps the coordinator off the CPUs the
    /// workers measure on.
    pub(crate) fn wait_for_event(&self, seen: u32, timeout: std::time::Duration) {
        // Returns at once if the word is no longer `seen`.
        futex_wait(&self.control().events, seen, Some(timeout));
    }

    fn set_stage(&self, worker: usize, stage: Stage) {
        self.report(worker).stage.store(stage as u32, Ordering::Release);
    }

    /// Fixed work: counts a worker's job as done and wakes the coordinator.
    pub(crate) fn mark_completed(&self, worker: usize) {
        self.set_stage(worker, Stage::Completed);
        self.control().completed.fetch_add(1, Ordering::AcqRel);
        self.notify();
    }

    pub fn completed(&self) -> u32 {
        self.control().completed.load(Ordering::Acquire)
    }

    pub(crate) fn mark_ready(&self, worker: usize) {
        self.report(worker).tid.store(crate::sys::gettid(), Ordering::Relaxed);
        self.set_stage(worker, Stage::Ready);
        self.control().ready.fetch_add(1, Ordering::AcqRel);
        self.notify();
    }

    /// A worker that was ready is working again (it saw the barrier open).
    pub(crate) fn mark_working(&self, worker: usize) {
        self.set_stage(worker, Stage::Working);
    }

    /// The workers' task ids (all set once every worker is ready).
    pub(crate) fn tids(&self) -> Vec<i32> {
        (0..self.workers()).map(|i| self.report(i).tid.load(Ordering::Relaxed)).collect()
    }

    pub fn ready(&self) -> u32 {
        self.control().ready.load(Ordering::Acquire)
    }

    /// Records `worker`'s failure, tells every other worker to stop, and wakes the coordinator.
    pub(crate) fn mark_failed(&self, worker: usize) {
        let _ = self.control().first_failed.compare_exchange(0, worker as u32 + 1, Ordering::AcqRel, Ordering::Acquire);
        self.control().failed.fetch_add(1, Ordering::AcqRel);
        self.set_phase(Phase::Abort);
        self.notify();
    }

    pub fn failed(&self) -> u32 {
        self.control().failed.load(Ordering::Acquire)
    }

    /// The worker whose failure came first, once one has failed.
    pub(crate) fn first_failed(&self) -> Option<usize> {
        self.control().first_failed.load(Ordering::Acquire).checked_sub(1).map(|w| w as usize)
    }

    /// Counts a worker out, waking the coordinator.
    pub(crate) fn mark_exited(&self, worker: usize) {
        self.set_stage(worker, Stage::Exited);
        self.control().exited.fetch_add(1, Ordering::AcqRel);
        self.notify();
    }

    pub fn exited(&self) -> u32 {
        self.control().exited.load(Ordering::Acquire)
    }

    /// Every worker's counter, read once each.
    /// All workers' ops so far.
    pub(crate) fn total_ops(&self) -> u64 {
        (0..self.workers).map(|i| self.counter(i).ops.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn read_counters(&self, into: &mut Vec<u64>) {
        into.clear();
        into.extend((0..self.workers).map(|i| self.counter(i).ops.load(Ordering::Relaxed)));
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_is_each_workers_lateness_times_its_rate() {
        let region = SharedRegion::new(3).unwrap();
        region.set_epoch_ns(1_000_000);
        // Worker 0 is 2 ms late, worker 1 early, worker 2 has not begun (late from the epoch).
        region.counter(0).due_ns.store(8_000_000, Ordering::Relaxed);
        region.counter(1).due_ns.store(12_000_000, Ordering::Relaxed);
        let backlog = region.backlog(10_000_000, 1000.0);
        assert!((backlog - (0.002 + 0.009) * 1000.0).abs() < 1e-9, "{backlog}");
    }

    #[test]
    fn slots_are_cache_line_isolated() {
        assert_eq!(size_of::<CounterSlot>(), 128);
        assert_eq!(size_of::<WorkerReport>() % 128, 0);
        let region = SharedRegion::new(3).unwrap();
        let a = region.counter(0) as *const _ as usize;
        let b = region.counter(1) as *const _ as usize;
        assert_eq!(b - a, 128);
        assert_eq!(a % 128, 0);
        assert_eq!(region.report(2) as *const _ as usize % 128, 0);
    }

    #[test]
    fn error_messages_round_trip_and_truncate() {
        let region = SharedRegion::new(1).unwrap();
        assert_eq!(region.report(0).error(), None);
        region.report(0).set_error("openat(\"w0/f\") failed: ENOSPC");
        assert_eq!(region.report(0).error().unwrap(), "openat(\"w0/f\") failed: ENOSPC");
        let long = format!("openat(\"{}\") failed: ENAMETOOLONG", "d/".repeat(500));
        region.report(0).set_error(&long);
        let kept = region.report(0).error().unwrap();
        assert!(kept.len() <= ERROR_CAPACITY);
        assert!(kept.starts_with("openat(\"d/d/") && kept.ends_with("failed: ENAMETOOLONG"), "{kept}");
    }

    #[test]
    fn failure_aborts_the_phase() {
        let region = SharedRegion::new(2).unwrap();
        assert_eq!(region.phase(), Phase::Setup);
        let seen = region.events();
        region.mark_failed(1);
        region.mark_failed(0);
        assert_ne!(region.events(), seen);
        assert_eq!(region.failed(), 2);
        assert_eq!(region.first_failed(), Some(1), "the cause, not the worker the abort stopped next");
        assert_eq!(region.phase(), Phase::Abort);
        assert_eq!(region.wait_for_start(), Phase::Abort);
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_wake_before_the_wait_is_not_lost() {
        let region = SharedRegion::new(1).unwrap();
        let seen = region.events();
        // The event lands between reading the word and sleeping...
        region.mark_ready(0);
        let start = Instant::now();
        // ...so the sleep ends at once instead of after its timeout.
        region.wait_for_event(seen, Duration::from_secs(10));
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(region.report(0).stage(), Stage::Ready);
        region.mark_completed(0);
        assert_eq!(region.report(0).stage(), Stage::Completed);
        region.mark_exited(0);
        assert_eq!((region.report(0).stage(), region.exited()), (Stage::Exited, 1));
    }

    #[test]
    fn an_unchanged_word_sleeps_until_the_timeout() {
        let region = SharedRegion::new(1).unwrap();
        let start = Instant::now();
        region.wait_for_event(region.events(), Duration::from_millis(50));
        assert!(start.elapsed() >= Duration::from_millis(45));
    }
}
