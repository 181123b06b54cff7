//! An open-loop run (`--rate`): the rate asked, what the workers achieved,
//! and each op's time two ways (see [`OpenLoop`]).

use serde::{Deserialize, Serialize};

use crate::stats::histogram::Histogram;
use crate::vocab::Arrivals;

/// What an open-loop run asked and got. Its ops were due at set times,
/// whether or not the last had returned, so a slow system built a queue:
/// `response` holds it (Gil Tene's coordinated omission: a closed loop's
/// latency is `service` alone).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct OpenLoop {
    /// Ops a second asked of all workers together (under MPI, all ranks').
    pub asked_ops_per_s: f64,
    pub arrivals: Arrivals,
    /// Each op of the window, from when it was due to when it ended: its
    /// queueing included.
    pub response: Histogram,
    /// Each op of the window, from when its worker began it to when it ended.
    pub service: Histogram,
    /// How late each op of the window began (its start less its due time).
    pub lag: Histogram,
    /// Ops due and not yet done, all workers, as the window opened and as
    /// it closed (each worker's lateness times its share of the rate).
    pub backlog_at_start: f64,
    pub backlog_at_end: f64,
    /// It could not keep up: see [`fell_behind`].
    pub behind: bool,
}

/// A run that achieves less than this share of the asked rate fell behind.
pub const KEEPS_UP: f64 = 0.99;

/// Whether a run fell behind its schedule: it did less than [`KEEPS_UP`]
/// of the ops asked over its window, give or take an op per worker (where
/// each worker's ops fall against the window's edges) and, for Poisson
/// arrivals, three standard deviations of how many fell due in it (√n);
/// or its backlog grew through the window by more than an op per worker
/// and ended above 1% of the window's asked ops (a short window's rate may
/// pass while its queue grows).
pub fn fell_behind(
    asked_ops_per_s: f64,
    achieved_ops_per_s: f64,
    backlog: [f64; 2],
    (workers, window_s): (usize, f64),
    arrivals: Arrivals,
) -> bool {
    let [at_start, at_end] = backlog;
    let (asked_ops, workers) = (asked_ops_per_s * window_s, workers as f64);
    let chance = match arrivals {
        Arrivals::Even => 0.0,
        Arrivals::Poisson => 3.0 * asked_ops.sqrt(),
    };
    achieved_ops_per_s * window_s + workers + chance < KEEPS_UP * asked_ops
        || (at_end - at_start > workers && at_end > 0.01 * asked_ops)
}

impl OpenLoop {
    /// Ranks' or runs' records of one point merged: histograms added, the
    /// asked rates and backlogs summed, behind where any was.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a OpenLoop>) -> Option<OpenLoop> {
        parts.into_iter().fold(None, |sum: Option<OpenLoop>, part| {
            Some(match sum {
                None => part.clone(),
                Some(mut sum) => {
                    sum.asked_ops_per_s += part.asked_ops_per_s;
                    sum.response.merge(&part.response);
                    sum.service.merge(&part.service);
                    sum.lag.merge(&part.lag);
                    sum.backlog_at_start += part.backlog_at_start;
                    sum.backlog_at_end += part.backlog_at_end;
                    sum.behind |= part.behind;
                    sum
                }
            })
        })
    }

    /// Caps what a received file may make a reader hold: its histograms'
    /// buckets (see [`Histogram::bound`]).
    pub(crate) fn bound(&mut self) -> usize {
        self.response.bound() + self.service.bound() + self.lag.bound()
    }
}

impl super::Point {
    /// Of its open-loop runs, how many fell behind, and how many there are;
    /// `None` for a closed loop or before a run has finished.
    pub fn behind_runs(&self) -> Option<(usize, usize)> {
        let records = self.runs.iter().filter_map(|r| r.open_loop.as_ref());
        let (behind, runs) = records.fold((0, 0), |(behind, runs), o| (behind + usize::from(o.behind), runs + 1));
        (runs > 0).then_some((behind, runs))
    }

    /// One of its runs' open-loop histograms (`times` picks which), merged
    /// over the runs; `None` for a closed loop or before a run has finished.
    pub fn open_loop_times(&self, times: impl Fn(&OpenLoop) -> &Histogram) -> Option<Histogram> {
        let mut records = self.runs.iter().filter_map(|r| r.open_loop.as_ref()).peekable();
        records.peek()?;
        let mut merged = Histogram::default();
        for o in records {
            merged.merge(times(o));
        }
        Some(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_below_the_asked_rate_or_with_a_growing_queue_fell_behind() {
        // 10 000 ops/s asked over a 1 s window, 2 workers.
        assert!(!fell_behind(10_000.0, 9_950.0, [0.0, 1.0], (2, 1.0), Arrivals::Even), "within 1%, no queue");
        assert!(fell_behind(10_000.0, 9_850.0, [0.0, 1.0], (2, 1.0), Arrivals::Even), "1.5% short");
        // At the rate, but a queue of 500 ops built up in it (5% of the window's).
        assert!(fell_behind(10_000.0, 10_000.0, [20.0, 520.0], (2, 1.0), Arrivals::Even));
        // A queue left from the warm-up that did not grow is no fall.
        assert!(!fell_behind(10_000.0, 10_000.0, [520.0, 521.5], (2, 1.0), Arrivals::Even));
        // Grown by a few ops but small beside the window's ops: noise.
        assert!(!fell_behind(10_000.0, 10_000.0, [0.0, 50.0], (2, 1.0), Arrivals::Even));
        // A short window at a low rate: 38 of 40 ops is where 2 workers' ops fell against its edges.
        assert!(!fell_behind(400.0, 380.0, [0.0, 0.0], (2, 0.1), Arrivals::Even));
        assert!(fell_behind(400.0, 370.0, [0.0, 0.0], (2, 0.1), Arrivals::Even));
        // Poisson arrivals: 8 of 15 asked is within chance (√15 ≈ 3.9 ops a standard deviation), 2 is not.
        assert!(!fell_behind(300.0, 160.0, [0.0, 0.0], (1, 0.05), Arrivals::Poisson));
        assert!(fell_behind(300.0, 40.0, [0.0, 0.0], (1, 0.05), Arrivals::Poisson));
    }

    #[test]
    fn merging_adds_the_rates_histograms_and_backlogs() {
        let part = |asked: f64, ns: &[u64], behind: bool| OpenLoop {
            asked_ops_per_s: asked,
            arrivals: Arrivals::Even,
            response: Histogram::of(ns),
            service: Histogram::of(&ns.iter().map(|n| n / 2).collect::<Vec<_>>()),
            lag: Histogram::of(&[0]),
            backlog_at_start: 1.0,
            backlog_at_end: 2.0,
            behind,
        };
        let merged = OpenLoop::merged([&part(500.0, &[10, 20], false), &part(700.0, &[30], true)]).unwrap();
        assert_eq!(merged.asked_ops_per_s, 1200.0);
        assert_eq!(merged.response, Histogram::of(&[10, 20, 30]));
        assert_eq!(merged.service, Histogram::of(&[5, 10, 15]));
        assert_eq!((merged.backlog_at_start, merged.backlog_at_end), (2.0, 4.0));
        assert!(merged.behind, "one rank behind is the point's");
        assert_eq!(OpenLoop::merged([]), None);
    }
}
