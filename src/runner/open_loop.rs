//! Open-loop load (`--rate`): each op is due at a time the schedule sets,
//! not when the worker's last op returned, so a slow system builds a
//! queue, as real clients would, instead of slowing the load down.
//!
//! Each op is timed two ways (Gil Tene, "How NOT to measure latency", on
//! coordinated omission; wrk2's corrected latency): its *response time*
//! runs from when it was due, queueing included, and its *service time*
//! from when the worker began it. The worker's *lag* is how late it began.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::stats::random::SplitMix64;
use crate::vocab::Arrivals;

/// The histograms an open-loop worker records into, by kind.
pub(super) const RESPONSE: usize = 0;
pub(super) const SERVICE: usize = 1;
pub(super) const LAG: usize = 2;
/// Kinds an open-loop worker records (a replay's op kinds come after them).
pub(super) const KINDS: usize = 3;

/// The longest a waiting worker sleeps before it looks at the phase again:
/// a low rate must not hold a worker past the window's end for a whole gap.
const MAX_SLEEP_NS: u64 = 10_000_000;

/// How a run's arrivals are set: `ops_per_s` for all workers together
/// (under MPI, all ranks'), spaced by `arrivals`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RatePlan {
    pub ops_per_s: f64,
    pub arrivals: Arrivals,
    /// Poisson arrivals: each worker's gaps come from this seed and its index.
    pub seed: u64,
    /// Whether a worker may spin for the last stretch before an op is due
    /// (each worker has a CPU of its own), or only sleeps.
    pub spins: bool,
}

impl RatePlan {
    /// Each of `workers` workers' share (every process's and rank's together).
    pub fn per_worker_ops_per_s(&self, workers: usize) -> f64 {
        self.ops_per_s / workers.max(1) as f64
    }
}

/// When one worker's ops are due, on CLOCK_MONOTONIC.
pub(super) struct Schedule {
    next_ns: u64,
    spacing: Spacing,
}

enum Spacing {
    /// Arrival n of the run (all workers) is due `n / rate` after the
    /// epoch, and worker w takes arrivals w, w + W, w + 2W, ...: each step
    /// of W arrivals is `whole` ns and `part / denominator` of one, the
    /// fractions carried in integers, so no rounding accumulates.
    Even { whole: u64, part: u64, carried: u64, denominator: u64 },
    /// The worker's own Poisson process at rate / W (together, the
    /// workers' are one at the rate): exponential gaps of mean `mean_ns`,
    /// summed exactly in `offset_ns` after the epoch.
    Poisson { epoch_ns: u64, offset_ns: f64, mean_ns: f64, rng: SplitMix64 },
}

/// Rates are held in thousandths of an op per second: 0.001 ops/s to
/// 18 billion, exactly.
const MILLI: u128 = 1000;
const NS_PER_S: u128 = 1_000_000_000;

impl Schedule {
    /// Worker `index` of `workers` (every process's and rank's together),
    /// its arrivals counted from `epoch_ns`.
    pub fn new(plan: &RatePlan, index: usize, workers: usize, epoch_ns: u64) -> Schedule {
        let workers = workers.max(1) as u128;
        match plan.arrivals {
            Arrivals::Even => {
                let denominator = ((plan.ops_per_s * MILLI as f64).round() as u128).max(1);
                let first = index as u128 * NS_PER_S * MILLI;
                let step = workers * NS_PER_S * MILLI;
                Schedule {
                    next_ns: epoch_ns.saturating_add((first / denominator) as u64),
                    spacing: Spacing::Even {
                        whole: (step / denominator) as u64,
                        part: (step % denominator) as u64,
                        carried: (first % denominator) as u64,
                        denominator: denominator as u64,
                    },
                }
            }
            Arrivals::Poisson => {
                // Each worker's stream starts from its own hash of the seed,
                // not at a shifted place in one stream.
                let mut rng = SplitMix64::new(SplitMix64::new(plan.seed ^ index as u64).next_u64());
                let mean_ns = workers as f64 * NS_PER_S as f64 / plan.ops_per_s.max(1e-3);
                let offset_ns = -rng.unit().ln() * mean_ns;
                Schedule {
                    next_ns: epoch_ns.saturating_add(offset_ns as u64),
                    spacing: Spacing::Poisson { epoch_ns, offset_ns, mean_ns, rng },
                }
            }
        }
    }

    /// When the next op is due.
    #[inline(always)]
    pub fn due_ns(&self) -> u64 {
        self.next_ns
    }

    /// Moves to the op after it.
    #[inline(always)]
    pub fn advance(&mut self) {
        match &mut self.spacing {
            Spacing::Even { whole, part, carried, denominator } => {
                let mut next = self.next_ns.saturating_add(*whole);
                *carried += *part;
                if *carried >= *denominator {
                    *carried -= *denominator;
                    next = next.saturating_add(1);
                }
                self.next_ns = next;
            }
            Spacing::Poisson { epoch_ns, offset_ns, mean_ns, rng } => {
                *offset_ns += -rng.unit().ln() * *mean_ns;
                self.next_ns = epoch_ns.saturating_add(*offset_ns as u64);
            }
        }
    }
}

/// The time an open loop reads and waits on: the real monotonic clock, or
/// a driven one in tests.
pub(super) trait Clock {
    fn now_ns(&self) -> u64;
    /// Sleeps until about `ns` (a real clock may wake a little late).
    fn sleep_until(&self, ns: u64);
}

/// CLOCK_MONOTONIC, the clock every other figure of a run is on.
pub(super) struct Monotonic;

impl Clock for Monotonic {
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        crate::sys::monotonic_ns()
    }

    fn sleep_until(&self, ns: u64) {
        crate::sys::sleep_until_monotonic(ns);
    }
}

/// One op's three times, on the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Timed {
    pub due_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Timed {
    /// From when it was due to when it ended: queueing included.
    #[inline(always)]
    pub fn response_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.due_ns)
    }

    /// From when it began to when it ended.
    #[inline(always)]
    pub fn service_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// How late it began.
    #[inline(always)]
    pub fn lag_ns(&self) -> u64 {
        self.start_ns.saturating_sub(self.due_ns)
    }
}

/// How a worker waits for an op's due time: it sleeps until `margin_ns`
/// before it, then spins. A sleep ends late by the timer's and the
/// scheduler's wake-up latency (tens of µs in a VM), so the margin follows
/// how late this worker's wake-ups have lately been: up at once to half
/// again the latest lateness, down slowly, between [`MIN_MARGIN_NS`] and
/// [`MAX_MARGIN_NS`]. A worker that may not spin sleeps to the due time.
pub(super) struct Pacer {
    margin_ns: u64,
    spins: bool,
}

/// The least and most a spinning worker spins before an op.
const MIN_MARGIN_NS: u64 = 20_000;
const MAX_MARGIN_NS: u64 = 1_000_000;

impl Pacer {
    pub fn new(spins: bool) -> Pacer {
        Pacer { margin_ns: if spins { MIN_MARGIN_NS } else { 0 }, spins }
    }

    /// A sleep meant to end at some time ended `late_ns` after it.
    fn woke(&mut self, late_ns: u64) {
        if !self.spins {
            return;
        }
        let wanted = (late_ns + late_ns / 2).clamp(MIN_MARGIN_NS, MAX_MARGIN_NS);
        if wanted > self.margin_ns {
            self.margin_ns = wanted;
        } else {
            self.margin_ns -= (self.margin_ns - wanted) / 64;
        }
    }
}

/// What an open loop's wait looks at besides the clock.
pub(super) struct Wait<'a> {
    /// The phase word, and the phase this loop runs in.
    pub phase: &'a AtomicU32,
    pub seen: u32,
    /// Where the worker publishes the due time of the op it waits for.
    pub due: &'a AtomicU64,
}

/// One phase of an open loop: waits for each op's due time, does the op,
/// hands its times to `done`, and returns once the phase word leaves
/// `seen` (looked at after each op, and at least every [`MAX_SLEEP_NS`]
/// while waiting). An op not yet begun stays due: the next phase's loop
/// begins with it. No allocation, no lock: the schedule's step, the clock
/// reads, a store of the due time, and the op.
#[inline(always)]
pub(super) fn pace<C: Clock, E>(
    clock: &C,
    schedule: &mut Schedule,
    pacer: &mut Pacer,
    wait: &Wait<'_>,
    mut op: impl FnMut() -> Result<(), E>,
    mut done: impl FnMut(Timed),
) -> Result<(), E> {
    loop {
        let due_ns = schedule.due_ns();
        wait.due.store(due_ns, Ordering::Relaxed);
        let start_ns = loop {
            let now = clock.now_ns();
            if now >= due_ns {
                break now;
            }
            if wait.phase.load(Ordering::Relaxed) != wait.seen {
                return Ok(());
            }
            let ahead = due_ns - now;
            if ahead > pacer.margin_ns {
                let until = (due_ns - pacer.margin_ns).min(now + MAX_SLEEP_NS);
                clock.sleep_until(until);
                pacer.woke(clock.now_ns().saturating_sub(until));
            } else {
                std::hint::spin_loop();
            }
        };
        schedule.advance();
        op()?;
        done(Timed { due_ns, start_ns, end_ns: clock.now_ns() });
        if wait.phase.load(Ordering::Relaxed) != wait.seen {
            return Ok(());
        }
    }
}

/// Whether workers may spin before their ops: not where they outnumber
/// the CPUs, where a spinning worker would take a CPU another needs for
/// its op.
pub(crate) fn spins(workers_here: usize, cpus: usize) -> bool {
    workers_here <= cpus
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A clock the test drives: sleeping jumps to the time asked, an op
    /// takes what the test says.
    struct Driven {
        now: Cell<u64>,
        sleeps: Cell<u64>,
    }

    impl Clock for Driven {
        fn now_ns(&self) -> u64 {
            self.now.get()
        }

        fn sleep_until(&self, ns: u64) {
            self.sleeps.set(self.sleeps.get() + 1);
            self.now.set(self.now.get().max(ns));
        }
    }

    fn even(ops_per_s: f64) -> RatePlan {
        RatePlan { ops_per_s, arrivals: Arrivals::Even, seed: 1, spins: false }
    }

    fn dues(schedule: &mut Schedule, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let due = schedule.due_ns();
                schedule.advance();
                due
            })
            .collect()
    }

    #[test]
    fn even_arrivals_interleave_the_workers_exactly() {
        // 3 ops/s over 2 workers: arrivals every 333 333 333⅓ ns, worker 0
        // takes the even ones, worker 1 the odd ones.
        let plan = even(3.0);
        let w0 = dues(&mut Schedule::new(&plan, 0, 2, 100), 4);
        let w1 = dues(&mut Schedule::new(&plan, 1, 2, 100), 4);
        assert_eq!(w0, [100, 100 + 666_666_666, 100 + 1_333_333_333, 100 + 2_000_000_000]);
        assert_eq!(w1, [100 + 333_333_333, 100 + 1_000_000_000, 100 + 1_666_666_666, 100 + 2_333_333_333]);
        // A million steps later, no drift: arrival n is floor(n / rate).
        let mut long = Schedule::new(&even(7.0), 0, 1, 0);
        for _ in 0..1_000_000 {
            long.advance();
        }
        assert_eq!(long.due_ns(), (1_000_000u128 * 1_000_000_000 / 7) as u64);
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_differ_by_worker_and_seed() {
        let plan = RatePlan { ops_per_s: 1000.0, arrivals: Arrivals::Poisson, seed: 42, spins: false };
        let n = 200_000;
        let a = dues(&mut Schedule::new(&plan, 0, 4, 0), n);
        // Each of 4 workers at 250/s: the n-th arrival near n / 250 s.
        let mean_gap = *a.last().unwrap() as f64 / n as f64;
        assert!((mean_gap / 4e6 - 1.0).abs() < 0.01, "mean gap {mean_gap} ns");
        // Exponential gaps: as many above the mean as e^-1 of them.
        let above = a.windows(2).filter(|w| (w[1] - w[0]) as f64 > 4e6).count() as f64 / n as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.01, "{above}");
        assert_eq!(a, dues(&mut Schedule::new(&plan, 0, 4, 0), n), "the seed repeats it");
        assert_ne!(a[..10], dues(&mut Schedule::new(&plan, 1, 4, 0), 10)[..], "another worker's");
        let other = RatePlan { seed: 43, ..plan };
        assert_ne!(a[..10], dues(&mut Schedule::new(&other, 0, 4, 0), 10)[..], "another seed's");
    }

    /// `ops` ops at 10 000 ops/s, each taking `service(k)` on the driven clock.
    fn run(ops: usize, service: impl Fn(usize) -> u64) -> (Vec<Timed>, u64) {
        let clock = Driven { now: Cell::new(0), sleeps: Cell::new(0) };
        let mut schedule = Schedule::new(&even(10_000.0), 0, 1, 0);
        let (phase, due) = (AtomicU32::new(1), AtomicU64::new(0));
        let wait = Wait { phase: &phase, seen: 1, due: &due };
        let mut timed = Vec::new();
        let mut k = 0;
        pace(
            &clock,
            &mut schedule,
            &mut Pacer::new(false),
            &wait,
            || {
                clock.now.set(clock.now.get() + service(k));
                k += 1;
                if k == ops {
                    phase.store(2, Ordering::Relaxed);
                }
                Ok::<(), ()>(())
            },
            |t| timed.push(t),
        )
        .unwrap();
        (timed, clock.sleeps.get())
    }

    #[test]
    fn a_stall_delays_the_ops_due_during_it_in_response_time_and_one_in_service_time() {
        // Ops due every 100 µs take 10 µs; op 1000 stalls for 10 ms. The
        // 100 ops due during the stall wait for it, and the queue drains
        // at 90 µs an op: op 1000 + i waits 10 ms − 90 µs·i.
        let (timed, _) = run(3000, |k| if k == 1000 { 10_000_000 } else { 10_000 });
        let slow = |f: fn(&Timed) -> u64| timed.iter().filter(|t| f(t) >= 1_000_000).count();
        assert_eq!(slow(Timed::service_ns), 1, "one op took long");
        // Response ≥ 1 ms: the stalled op, and those after it while the
        // wait was ≥ 990 µs: 10 ms − 90 µs·i ≥ 0.99 ms for i ≤ 100.
        assert_eq!(slow(Timed::response_ns), 101);
        let waited: Vec<u64> = timed[1001..1004].iter().map(Timed::lag_ns).collect();
        assert_eq!(waited, [9_900_000, 9_810_000, 9_720_000]);
        // The queue drained: the last ops began when due.
        assert!(timed[2000..].iter().all(|t| t.lag_ns() == 0 && t.response_ns() == 10_000));
        // The closed loop's view of the same ops, service time alone, hides all of it.
        assert_eq!(timed.iter().map(Timed::service_ns).max(), Some(10_000_000));
    }

    #[test]
    fn a_worker_that_keeps_up_sleeps_between_ops_and_begins_each_on_time() {
        let (timed, sleeps) = run(50, |_| 30_000);
        assert!(timed.iter().all(|t| t.lag_ns() == 0 && t.service_ns() == 30_000));
        assert_eq!(
            timed.iter().map(|t| t.start_ns).collect::<Vec<_>>(),
            (0..50).map(|k| k * 100_000).collect::<Vec<_>>()
        );
        assert_eq!(sleeps, 49, "one sleep before each op but the first");
    }

    #[test]
    fn a_worker_that_cannot_keep_up_falls_further_behind_each_op() {
        // 150 µs ops due every 100 µs: op k begins 50 µs·k late.
        let (timed, sleeps) = run(100, |_| 150_000);
        assert_eq!(sleeps, 0);
        assert!(timed.iter().enumerate().all(|(k, t)| t.lag_ns() == 50_000 * k as u64));
    }

    #[test]
    fn a_waiting_worker_sees_the_phase_change_and_leaves_the_op_due() {
        // 1 op/s: the second op is due a second later; the phase changes
        // while the worker waits for it, which it notices within a sleep.
        let clock = Driven { now: Cell::new(0), sleeps: Cell::new(0) };
        let mut schedule = Schedule::new(&even(1.0), 0, 1, 0);
        let (phase, due) = (AtomicU32::new(1), AtomicU64::new(0));
        let mut ops = 0;
        let slept = |now: u64| {
            if now >= 30_000_000 {
                phase.store(2, Ordering::Relaxed);
            }
        };
        let sleepy = SleepHook { inner: &clock, hook: &slept };
        let wait = Wait { phase: &phase, seen: 1, due: &due };
        let op = || {
            ops += 1;
            Ok::<(), ()>(())
        };
        pace(&sleepy, &mut schedule, &mut Pacer::new(false), &wait, op, |_| {}).unwrap();
        assert_eq!(ops, 1);
        assert_eq!(due.load(Ordering::Relaxed), 1_000_000_000, "published for the coordinator");
        assert_eq!(clock.sleeps.get(), 3, "10 ms at a time, then the phase had changed");
        assert_eq!(schedule.due_ns(), 1_000_000_000, "the second op still due");
    }

    struct SleepHook<'a> {
        inner: &'a Driven,
        hook: &'a dyn Fn(u64),
    }

    impl Clock for SleepHook<'_> {
        fn now_ns(&self) -> u64 {
            self.inner.now_ns()
        }

        fn sleep_until(&self, ns: u64) {
            self.inner.sleep_until(ns);
            (self.hook)(self.inner.now_ns());
        }
    }

    #[test]
    fn spinning_is_for_workers_with_a_cpu_each() {
        assert!(spins(2, 2));
        assert!(!spins(3, 2));
    }

    /// A clock whose sleeps end `late` after the time asked, as a VM's do,
    /// and that moves 100 ns each time it is read (a spin's look at it).
    struct LateWaker {
        now: Cell<u64>,
        late: u64,
    }

    const READ_NS: u64 = 100;

    impl Clock for LateWaker {
        fn now_ns(&self) -> u64 {
            self.now.set(self.now.get() + READ_NS);
            self.now.get()
        }

        fn sleep_until(&self, ns: u64) {
            self.now.set(self.now.get().max(ns + self.late));
        }
    }

    /// Ops due every 100 µs, each taking 10 µs, for 100 ms of `clock`.
    fn lags_of(clock: &LateWaker, pacer: &mut Pacer) -> Vec<u64> {
        let mut schedule = Schedule::new(&even(10_000.0), 0, 1, clock.now.get());
        let (phase, due) = (AtomicU32::new(1), AtomicU64::new(0));
        let wait = Wait { phase: &phase, seen: 1, due: &due };
        let end = clock.now.get() + 100_000_000;
        let mut lags = Vec::new();
        let op = || {
            clock.now.set(clock.now.get() + 10_000);
            if clock.now.get() > end {
                phase.store(2, Ordering::Relaxed);
            }
            Ok::<(), ()>(())
        };
        pace(clock, &mut schedule, pacer, &wait, op, |t| lags.push(t.lag_ns())).unwrap();
        lags
    }

    #[test]
    fn a_spinning_worker_learns_how_late_its_sleeps_end_and_begins_its_ops_on_time() {
        // Every sleep ends 40 µs late.
        let clock = LateWaker { now: Cell::new(0), late: 40_000 };
        let mut pacer = Pacer::new(true);
        let lags = lags_of(&clock, &mut pacer);
        assert!(lags.len() > 990, "{}", lags.len());
        // The first sleep (to 20 µs ahead) ends 20 µs past the due time;
        // from then on the worker wakes 60 µs ahead, 20 µs before the op is
        // due, and spins to it: it begins within a read of the clock.
        assert!(lags[1] >= 20_000, "{:?}", &lags[..4]);
        assert!(lags[2..].iter().all(|&l| l <= READ_NS), "{:?}", &lags[..10]);
        assert!(pacer.margin_ns >= 60_000 && pacer.margin_ns < 61_000, "{}", pacer.margin_ns);
        // One that may not spin sleeps to the due time, and is as late as its sleeps.
        let lags = lags_of(&clock, &mut Pacer::new(false));
        assert!(lags[1..].iter().all(|&l| (40_000..=40_000 + 2 * READ_NS).contains(&l)), "{:?}", &lags[..10]);
    }
}
