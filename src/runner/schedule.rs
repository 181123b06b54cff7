//! The order runs happen in. Drift (a machine that warms up, throttles or is
//! shared) lands on whatever runs at the same time; run back to back, a
//! point's runs all share one stretch of it and two points differ by it. In
//! rounds, run 1 of every point comes before run 2 of any, so drift spreads
//! over every point alike and shows up as spread within each point instead.
//! Pure: it decides from what each point has done, the runner does the runs.

use crate::plan::{variant, Order};
use crate::tree::Rng;

/// One run to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Index into the run's points (filesystem-major, in plan order).
    pub point: usize,
    /// A warm-up run: measured and kept, left out of every statistic.
    pub warmup: bool,
}

/// What one point has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PointState {
    pub warmups: usize,
    pub runs: usize,
    /// `--until-ci`: the runs' confidence interval is already tight enough.
    pub precise: bool,
    /// `--until-ci`: the runs it will likely take, from its scatter so far
    /// (an interval narrows as 1/√n), for the time left; not a decision.
    pub projected: Option<usize>,
}

impl PointState {
    /// Counts one more run of the point (a warm-up one when `warmup`).
    pub fn ran(&mut self, warmup: bool) {
        match warmup {
            true => self.warmups += 1,
            false => self.runs += 1,
        }
    }
}

/// How many runs each point gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Repetition {
    /// Warm-up runs of every point, before its measured runs.
    pub warmups: usize,
    /// Measured runs of every point (`-n`).
    pub runs: usize,
    /// `--until-ci`: more runs, up to this many, until the point is precise.
    pub max_runs: Option<usize>,
}

impl Repetition {
    /// Whether `point` needs another measured run.
    fn needs_run(&self, point: &PointState) -> bool {
        point.runs < self.runs || self.max_runs.is_some_and(|max| !point.precise && point.runs < max)
    }

    fn needs_warmup(&self, point: &PointState) -> bool {
        point.warmups < self.warmups
    }

    /// Whether `point` is done: no warm-up and no measured run left.
    pub(crate) fn is_done(&self, point: &PointState) -> bool {
        !self.needs_warmup(point) && !self.needs_run(point)
    }
}

/// Hands out runs one at a time in the chosen order.
pub(crate) struct Scheduler {
    order: Order,
    repetition: Repetition,
    rng: Rng,
    /// The rest of the current round (interleaved and shuffled orders).
    round: std::collections::VecDeque<Slot>,
    /// Rounds planned so far.
    rounds: usize,
    layout: Layout,
}

/// How the plan's points nest: filesystem-major, then the points, then each
/// point's `--variant`s as neighbours. Points of one filesystem, and
/// variants of one point, take turns within a round in an order rotated
/// round by round, so that none always runs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub filesystems: usize,
    pub variants: usize,
}

impl Layout {
    /// The sort key of `point` in round `round`: its filesystem's turn, its
    /// place in the plan, its variant's turn.
    fn turn(&self, points: usize, round: usize, point: usize) -> (usize, usize, usize) {
        let (f, v) = (self.filesystems.max(1), self.variants.max(1));
        let per_fs = points.div_ceil(f).max(1);
        let (fs, within) = (point / per_fs, point % per_fs);
        (variant::rotation(f, round, fs), within / v, variant::rotation(v, round, within % v))
    }
}

impl Scheduler {
    /// `seed` orders the rounds of `Order::Shuffled`; it is recorded so the order can be repeated.
    pub fn new(order: Order, repetition: Repetition, seed: u64, layout: Layout) -> Scheduler {
        Scheduler { order, repetition, rng: Rng::new(seed), round: Default::default(), rounds: 0, layout }
    }

    /// Replays the schedule up to what `done` says every point has done
    /// (a resumed run's), so that the next slot is the one the first
    /// invocation would have run next: rounds, rotations and the shuffled
    /// order's random draws all go on where they stopped.
    pub(crate) fn fast_forward(&mut self, done: &[PointState]) {
        let mut replayed = vec![PointState::default(); done.len()];
        loop {
            let Some(slot) = self.next(&replayed) else { return };
            let (now, then) = (&mut replayed[slot.point], &done[slot.point]);
            let ran = match slot.warmup {
                true => now.warmups < then.warmups,
                false => now.runs < then.runs,
            };
            if !ran {
                // The first slot not run yet: it leads the rest of its round.
                self.round.push_front(slot);
                return;
            }
            now.ran(slot.warmup);
            // Precise as the resumed point is, once it has its runs.
            now.precise = then.precise && now.runs >= then.runs;
        }
    }

    /// From now on, rounds take the points in plan order (shuffled ones
    /// still shuffled): for points appended after the plan's, whose
    /// filesystems and variants are not laid out as [`Layout`] says.
    pub(crate) fn plain_order(&mut self) {
        self.layout = Layout { filesystems: 1, variants: 1 };
    }

    /// The next run, given what every point has done; `None` when all are done.
    pub fn next(&mut self, points: &[PointState]) -> Option<Slot> {
        let r = self.repetition;
        if self.order == Order::Sequential {
            // Every run of a point, warm-ups first, before the next point.
            let (point, state) = points.iter().enumerate().find(|(_, p)| !r.is_done(p))?;
            return Some(Slot { point, warmup: r.needs_warmup(state) });
        }
        // A round that was planned may hold points that have become done
        // since (none do today, but the check is cheap and keeps it right).
        while let Some(slot) = self.round.pop_front() {
            let state = &points[slot.point];
            if (slot.warmup && r.needs_warmup(state)) || (!slot.warmup && r.needs_run(state)) {
                return Some(slot);
            }
        }
        // A new round: warm-ups while any point lacks one, then measured runs.
        let warmup = points.iter().any(|p| r.needs_warmup(p));
        let mut round: Vec<Slot> = points
            .iter()
            .enumerate()
            .filter(|(_, p)| if warmup { r.needs_warmup(p) } else { r.needs_run(p) })
            .map(|(point, _)| Slot { point, warmup })
            .collect();
        match self.order {
            Order::Shuffled => self.rng.shuffle(&mut round),
            // Filesystems and each point's variants take turns (see `Layout`).
            _ => {
                let (layout, r, n) = (self.layout, self.rounds, points.len());
                round.sort_by_key(|s| layout.turn(n, r, s.point));
            }
        }
        self.rounds += 1;
        self.round = round.into();
        self.round.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn play(order: Order, repetition: Repetition, points: usize, precise_after: &[usize]) -> Vec<Slot> {
        play_layout(order, repetition, points, precise_after, Layout { filesystems: 1, variants: 1 })
    }

    /// Plays a schedule to its end; `precise_after` marks a point precise after that many runs.
    fn play_layout(
        order: Order,
        repetition: Repetition,
        points: usize,
        precise_after: &[usize],
        layout: Layout,
    ) -> Vec<Slot> {
        let mut states = vec![PointState::default(); points];
        let mut scheduler = Scheduler::new(order, repetition, 7, layout);
        let mut done = Vec::new();
        while let Some(slot) = scheduler.next(&states) {
            let s = &mut states[slot.point];
            s.ran(slot.warmup);
            if !slot.warmup {
                s.precise = precise_after.get(slot.point).is_some_and(|&n| s.runs >= n);
            }
            done.push(slot);
            assert!(done.len() < 10_000, "the schedule never ends");
        }
        done
    }

    fn labels(slots: &[Slot]) -> Vec<String> {
        slots.iter().map(|s| format!("{}{}", if s.warmup { "w" } else { "" }, s.point)).collect()
    }

    const FIXED: Repetition = Repetition { warmups: 1, runs: 2, max_runs: None };

    #[test]
    fn interleaved_runs_every_point_once_per_round_after_a_warmup_round() {
        assert_eq!(labels(&play(Order::Interleaved, FIXED, 3, &[])), ["w0", "w1", "w2", "0", "1", "2", "0", "1", "2"]);
    }

    #[test]
    fn interleaved_rotates_each_points_variants_round_by_round() {
        // Two points of two variants each (0,1 and 2,3): AB BA AB within each point.
        let rep = Repetition { warmups: 0, runs: 3, max_runs: None };
        let slots = labels(&play_layout(Order::Interleaved, rep, 4, &[], Layout { filesystems: 1, variants: 2 }));
        assert_eq!(slots, ["0", "1", "2", "3", "1", "0", "3", "2", "0", "1", "2", "3"]);
        // Three variants: each takes every place once in three rounds.
        let slots = labels(&play_layout(Order::Interleaved, rep, 3, &[], Layout { filesystems: 1, variants: 3 }));
        assert_eq!(slots, ["0", "1", "2", "1", "2", "0", "2", "0", "1"]);
    }

    #[test]
    fn filesystems_take_turns_round_by_round_and_variants_within_them() {
        // Two filesystems of one point with two variants (0,1 on the first, 2,3 on the second).
        let rep = Repetition { warmups: 0, runs: 2, max_runs: None };
        let layout = Layout { filesystems: 2, variants: 2 };
        let mut states = vec![PointState::default(); 4];
        let mut scheduler = Scheduler::new(Order::Interleaved, rep, 7, layout);
        let mut slots = Vec::new();
        while let Some(slot) = scheduler.next(&states) {
            states[slot.point].runs += 1;
            slots.push(slot);
        }
        assert_eq!(labels(&slots), ["0", "1", "2", "3", "3", "2", "1", "0"]);
    }

    #[test]
    fn sequential_runs_each_point_to_its_end() {
        assert_eq!(labels(&play(Order::Sequential, FIXED, 3, &[])), ["w0", "0", "0", "w1", "1", "1", "w2", "2", "2"]);
    }

    #[test]
    fn shuffled_permutes_each_round_and_repeats_with_its_seed() {
        let rep = Repetition { warmups: 0, runs: 4, max_runs: None };
        let a = play(Order::Shuffled, rep, 6, &[]);
        assert_eq!(a, play(Order::Shuffled, rep, 6, &[]), "the same seed, the same order");
        for round in a.chunks(6) {
            let mut points: Vec<usize> = round.iter().map(|s| s.point).collect();
            points.sort_unstable();
            assert_eq!(points, [0, 1, 2, 3, 4, 5], "every round holds every point once");
        }
        let rounds: Vec<Vec<usize>> = a.chunks(6).map(|r| r.iter().map(|s| s.point).collect()).collect();
        assert!(rounds.iter().any(|r| r != &rounds[0]), "rounds differ: {rounds:?}");
    }

    #[test]
    fn until_precise_keeps_only_imprecise_points_going_up_to_the_cap() {
        let rep = Repetition { warmups: 0, runs: 2, max_runs: Some(5) };
        // Point 0 is precise after 2 runs, point 1 after 3, point 2 never.
        let slots = play(Order::Interleaved, rep, 3, &[2, 3, usize::MAX]);
        assert_eq!(labels(&slots), ["0", "1", "2", "0", "1", "2", "1", "2", "2", "2"]);
    }

    #[test]
    fn a_schedule_fast_forwarded_to_where_it_stopped_goes_on_as_it_would_have() {
        let rep = Repetition { warmups: 1, runs: 3, max_runs: None };
        for order in [Order::Interleaved, Order::Shuffled, Order::Sequential] {
            let layout = Layout { filesystems: 1, variants: 2 };
            let whole = play_layout(order, rep, 4, &[], layout);
            for stop in 0..whole.len() {
                let mut states = vec![PointState::default(); 4];
                for slot in &whole[..stop] {
                    states[slot.point].ran(slot.warmup);
                }
                let mut scheduler = Scheduler::new(order, rep, 7, layout);
                scheduler.fast_forward(&states);
                let mut rest = Vec::new();
                while let Some(slot) = scheduler.next(&states) {
                    states[slot.point].ran(slot.warmup);
                    rest.push(slot);
                }
                assert_eq!(rest, whole[stop..], "{order:?} stopped after {stop} runs");
            }
        }
    }

    proptest! {
        #[test]
        fn every_order_gives_every_point_exactly_its_runs(
            bases in 1usize..12, warmups in 0usize..3, runs in 1usize..6, order in 0u8..3, variants in 1usize..4,
            filesystems in 1usize..4,
        ) {
            let order = [Order::Interleaved, Order::Sequential, Order::Shuffled][order as usize];
            let points = filesystems * bases * variants;
            let layout = Layout { filesystems, variants };
            let slots = play_layout(order, Repetition { warmups, runs, max_runs: None }, points, &[], layout);
            for p in 0..points {
                let mine: Vec<&Slot> = slots.iter().filter(|s| s.point == p).collect();
                prop_assert_eq!(mine.iter().filter(|s| s.warmup).count(), warmups);
                prop_assert_eq!(mine.iter().filter(|s| !s.warmup).count(), runs);
                // A point's warm-ups come before its measured runs.
                let last_warmup = mine.iter().rposition(|s| s.warmup);
                let first_run = mine.iter().position(|s| !s.warmup);
                if let (Some(w), Some(r)) = (last_warmup, first_run) {
                    prop_assert!(w < r);
                }
            }
            if order != Order::Sequential {
                // Run k of any point comes after run k-1 of every point.
                let mut seen = vec![0usize; points];
                for s in slots.iter().filter(|s| !s.warmup) {
                    seen[s.point] += 1;
                    prop_assert!(seen.iter().all(|&n| n + 1 >= seen[s.point]));
                }
            }
        }
    }
}
