//! The search for the highest rate that meets response-time objectives
//! (`--slo p99=1ms`): a bisection on the rate, below the closed loop's
//! throughput. Each probe is an open-loop point of its own, run as many
//! times as any other; it meets the objectives when its runs' response
//! times, merged, do and none of its runs fell behind. Where the search
//! stands is a pure function of the points, so the runner picks its next
//! rate from it, and a report says what it found from the same points.

use std::collections::HashMap;

use super::Point;
use crate::stats::histogram::Histogram;
use crate::vocab::{Cache, Mode, Objective, Rate, Share, Workload};

/// A search ends when the highest rate met and the lowest missed are
/// within this share of the missed one: the answer is known to 5%.
pub const RESOLUTION: f64 = 0.05;

/// The most rates one search probes. From the closed loop's throughput C,
/// twelve probes reach C/2048 if every one misses (a service time over
/// the limit even with no queue), and 5% of an answer anywhere above
/// C/16 (each probe halves the bracket).
pub const MAX_PROBES: usize = 12;

/// How one probe fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every objective held, on the response times of all its runs merged.
    Met,
    /// An objective did not.
    Missed,
    /// A run fell behind the rate (`!behind`): whatever its times, not met.
    Behind,
}

/// How `point` (an open-loop point) fared against `objectives`; `None`
/// before it has an open-loop run.
pub fn verdict(objectives: &[Objective], point: &Point) -> Option<Verdict> {
    let (behind, _) = point.behind_runs()?;
    if behind > 0 {
        return Some(Verdict::Behind);
    }
    let response = point.open_loop_times(|o| &o.response)?;
    let met = objectives.iter().all(|o| o.met_by(response.quantile(o.quantile.fraction())));
    Some(if met { Verdict::Met } else { Verdict::Missed })
}

/// Where one search stands, from the rates probed so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    /// The closed loop's throughput (mean ops/s of its runs): the search's first rate.
    pub capacity: f64,
    /// The highest rate probed that met the objectives, below every rate that did not.
    pub met: Option<Rate>,
    /// The lowest rate probed that missed them or fell behind.
    pub missed: Option<Rate>,
    pub probes: usize,
    /// The rate to probe next; `None` once the search has ended.
    pub next: Option<Rate>,
    /// A rate met above one missed: run-to-run noise as large as the
    /// steps. The answer stays below the lowest rate missed.
    pub unordered: bool,
}

/// Where a search that started below `capacity` stands after `probes`
/// (each rate probed and its verdict, in any order).
///
/// A bisection (the textbook root search, here on the rate at which the
/// verdict turns) starting from the closed loop's throughput: an open
/// loop asked more than a closed one achieves only builds a queue. If that
/// rate meets the objectives, nothing higher is sustained and the search
/// ends; else each probe takes the middle of the bracket (rounded to three
/// figures), until [`RESOLUTION`] or [`MAX_PROBES`].
pub fn search(capacity: f64, probes: &[(Rate, Verdict)]) -> Search {
    let missed = probes.iter().filter(|(_, v)| *v != Verdict::Met).map(|(r, _)| *r).min();
    let below_missed = |r: &Rate| missed.is_none_or(|m| *r < m);
    let met_rates = || probes.iter().filter(|(_, v)| *v == Verdict::Met).map(|(r, _)| r);
    let met = met_rates().filter(|r| below_missed(r)).max().copied();
    let unordered = met_rates().any(|r| !below_missed(r));
    let mut search = Search { capacity, met, missed, probes: probes.len(), next: None, unordered };
    search.next = next_rate(&search);
    search
}

fn next_rate(search: &Search) -> Option<Rate> {
    if search.probes == 0 {
        return Rate::rounded(search.capacity);
    }
    // Nothing missed: the highest rate probed, the closed loop's, met them.
    let missed = search.missed?;
    if search.probes >= MAX_PROBES {
        return None;
    }
    let (low, high) = (search.met.map_or(0.0, Rate::ops_per_s), missed.ops_per_s());
    if high - low <= RESOLUTION * high {
        return None;
    }
    let middle = (low + high) / 2.0;
    [Rate::rounded(middle), Rate::new(middle)].into_iter().flatten().find(|r| r.ops_per_s() > low && *r < missed)
}

/// One search of a results file: its closed-loop point, the open-loop
/// points probed below it, and where it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct PointSearch {
    /// Index of the closed-loop point in the points searched.
    pub closed: usize,
    /// Indices of its probes, in rate order.
    pub probes: Vec<usize>,
    pub search: Search,
}

impl PointSearch {
    /// The probe of `rate`, if there is one.
    pub fn probe<'a>(&self, points: &[&'a Point], rate: Rate) -> Option<&'a Point> {
        self.probes.iter().map(|&i| points[i]).find(|p| p.rate == Some(rate))
    }

    /// The response times of the probe of `rate`, merged over its runs.
    pub fn response(&self, points: &[&Point], rate: Rate) -> Option<Histogram> {
        self.probe(points, rate)?.open_loop_times(|o| &o.response)
    }
}

/// Every search in `points`: one per complete closed-loop point, with the
/// complete open-loop points of the same workload, mode, sharing level,
/// workers, filesystem, cache state and variant as its probes. In one
/// pass over the points, however many a received file holds.
pub fn searches(points: &[&Point], objectives: &[Objective]) -> Vec<PointSearch> {
    let mut by_key: HashMap<SearchKey<'_>, PointSearch> = HashMap::new();
    for (index, point) in points.iter().enumerate().filter(|(_, p)| p.rate.is_none() && p.complete) {
        let Some(summary) = &point.summary else { continue };
        let empty = search(summary.ops_per_s.mean, &[]);
        by_key.entry(key(point)).or_insert(PointSearch { closed: index, probes: Vec::new(), search: empty });
    }
    for (index, point) in points.iter().enumerate().filter(|(_, p)| p.rate.is_some() && p.complete) {
        if let Some(found) = by_key.get_mut(&key(point)) {
            found.probes.push(index);
        }
    }
    let mut found: Vec<PointSearch> = by_key.into_values().collect();
    found.sort_by_key(|s| s.closed);
    for one in &mut found {
        one.probes.sort_by_key(|&i| points[i].rate);
        let verdicts: Vec<(Rate, Verdict)> =
            one.probes.iter().filter_map(|&i| Some((points[i].rate?, verdict(objectives, points[i])?))).collect();
        one.search = search(one.search.capacity, &verdicts);
    }
    found
}

/// What a search's points share: all but their rate.
type SearchKey<'a> = (Workload, &'a str, Mode, Share, usize, Option<&'a str>, Option<Cache>, Option<&'a str>);

fn key(p: &Point) -> SearchKey<'_> {
    (p.workload, &p.op, p.mode, p.share, p.workers, p.fs.as_deref(), p.cache, p.variant.as_deref())
}

#[cfg(test)]
mod tests;
