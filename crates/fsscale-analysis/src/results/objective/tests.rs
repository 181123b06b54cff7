use proptest::prelude::*;

use super::*;
use crate::results::fixtures;
use crate::vocab::{parse_objectives, Share, Workload};

/// A planted system: one server of capacity `capacity` ops/s whose ops
/// take `service_ns` alone, and whose response quantile at a rate is the
/// M/M/1 queue's (service / (1 - utilisation), to within the log of the
/// quantile, which a threshold on it only rescales): beyond the capacity
/// it falls behind.
fn planted(capacity: f64, service_ns: f64, limit_ns: f64) -> impl Fn(Rate) -> Verdict {
    move |rate| {
        let utilisation = rate.ops_per_s() / capacity;
        if utilisation >= 1.0 {
            Verdict::Behind
        } else if service_ns / (1.0 - utilisation) <= limit_ns {
            Verdict::Met
        } else {
            Verdict::Missed
        }
    }
}

/// Runs a search to its end against `verdict_of`: its last state.
fn run_search(capacity: f64, verdict_of: impl Fn(Rate) -> Verdict) -> Search {
    let mut probes = Vec::new();
    loop {
        let state = search(capacity, &probes);
        let Some(rate) = state.next else { return state };
        assert!(!probes.iter().any(|(r, _)| *r == rate), "{rate} probed twice");
        probes.push((rate, verdict_of(rate)));
        assert!(probes.len() <= MAX_PROBES, "the search never ends");
    }
}

#[test]
fn the_search_converges_on_a_planted_capacity() {
    // 200k ops/s of 10 us ops: p99 <= 100 us holds up to 180k ops/s.
    let found = run_search(200_000.0, planted(200_000.0, 10_000.0, 100_000.0));
    let (met, missed) = (found.met.unwrap().ops_per_s(), found.missed.unwrap().ops_per_s());
    assert!(met <= 180_000.0 && 180_000.0 < missed, "{met} .. {missed}");
    assert!(missed - met <= RESOLUTION * missed, "{met} .. {missed}");
    assert_eq!(found.missed.unwrap().to_string(), "182k");
    assert_eq!(found.met.unwrap().to_string(), "175k");
    // The closed loop's rate first (behind), then halves: 100k, 150k, 175k, 188k, 182k.
    assert_eq!(found.probes, 6);
    assert!(!found.unordered);
}

#[test]
fn a_capacity_that_meets_the_objective_ends_the_search_at_once() {
    let found = run_search(50_000.0, |_| Verdict::Met);
    assert_eq!((found.met, found.missed, found.probes), (Rate::new(50_000.0), None, 1));
}

#[test]
fn an_objective_no_rate_meets_ends_after_the_most_probes() {
    let found = run_search(100_000.0, |_| Verdict::Missed);
    assert_eq!((found.met, found.probes), (None, MAX_PROBES));
    // Halved eleven times below the closed loop's rate.
    assert!(found.missed.unwrap().ops_per_s() < 100_000.0 / 1000.0, "{:?}", found.missed);
}

#[test]
fn a_rate_met_above_one_missed_is_noise_and_the_answer_stays_below_the_miss() {
    let probes =
        [(rate(100_000.0), Verdict::Missed), (rate(50_000.0), Verdict::Missed), (rate(75_000.0), Verdict::Met)];
    let state = search(100_000.0, &probes);
    assert!(state.unordered);
    assert_eq!((state.met, state.missed), (None, Some(rate(50_000.0))));
    assert_eq!(state.next, Some(rate(25_000.0)));
}

#[test]
fn a_search_needs_a_closed_loop_rate_to_start() {
    assert_eq!(search(0.0, &[]).next, None);
    assert_eq!(search(f64::NAN, &[]).next, None);
    assert_eq!(search(1234.5, &[]).next, Some(rate(1230.0)));
}

fn rate(ops_per_s: f64) -> Rate {
    Rate::new(ops_per_s).unwrap()
}

proptest! {
    /// Wherever the planted system's threshold lies, the search brackets
    /// it to the resolution, or says no rate probed met it.
    #[test]
    fn every_planted_threshold_is_bracketed(
        capacity in 1_000.0f64..10_000_000.0,
        service_ns in 1_000.0f64..100_000.0,
        limit_factor in 1.05f64..100.0,
    ) {
        let limit_ns = service_ns * limit_factor;
        let threshold = capacity * (1.0 - service_ns / limit_ns);
        let found = run_search(capacity, planted(capacity, service_ns, limit_ns));
        prop_assert!(found.met.is_none_or(|m| m.ops_per_s() <= threshold * (1.0 + 1e-9)));
        let missed = found.missed.unwrap();
        prop_assert!(missed.ops_per_s() >= threshold * (1.0 - 1e-9) - 0.001);
        if threshold > capacity / 16.0 {
            let met = found.met.unwrap().ops_per_s();
            prop_assert!(missed.ops_per_s() - met <= RESOLUTION * missed.ops_per_s(), "{met} .. {missed}");
        }
    }
}

/// A results file's points: a closed loop of 2 workers at 100k ops/s, and
/// probes at 100k (behind), 50k (p99 2 ms) and 25k (p99 300 us).
fn probed_points() -> Vec<Point> {
    let closed =
        fixtures::point(Workload::CreatUnlink, Share::Shared, 2, vec![fixtures::run(0, &[50_000, 50_000], 1.0)]);
    let probe = |asked: f64, us: u64, behind: bool| {
        let mut p = fixtures::point(
            Workload::CreatUnlink,
            Share::Shared,
            2,
            (0..3).map(|run| fixtures::open_run(run, asked, &[us * 1000; 200], behind && run == 1)).collect(),
        );
        p.rate = Rate::new(asked);
        p
    };
    let mut other = probe(40_000.0, 10, false);
    other.workers = 4;
    vec![closed, probe(100_000.0, 5000, true), probe(25_000.0, 300, false), probe(50_000.0, 2000, false), other]
}

#[test]
fn a_files_searches_gather_each_closed_loops_probes_and_judge_them() {
    let owned = probed_points();
    let points: Vec<&Point> = owned.iter().collect();
    let objectives = parse_objectives("p99=1ms").unwrap();
    assert_eq!(verdict(&objectives, points[1]), Some(Verdict::Behind), "one run of three behind");
    assert_eq!(verdict(&objectives, points[2]), Some(Verdict::Met));
    assert_eq!(verdict(&objectives, points[3]), Some(Verdict::Missed));
    assert_eq!(verdict(&objectives, points[0]), None, "a closed loop");
    let found = searches(&points, &objectives);
    assert_eq!(found.len(), 1, "the 4-worker probe has no closed loop of its own");
    assert_eq!((found[0].closed, &found[0].probes), (0, &vec![2, 3, 1]));
    let search = &found[0].search;
    assert_eq!((search.capacity, search.met, search.missed), (100_000.0, Some(rate(25_000.0)), Some(rate(50_000.0))));
    assert_eq!(search.next, Some(rate(37_500.0)));
    assert_eq!(found[0].response(&points, rate(25_000.0)).unwrap().count, 600);
    // Two objectives must both hold: p50 under 250 us fails the 25k probe too.
    let both = parse_objectives("p50=250us,p99=1ms").unwrap();
    assert_eq!(verdict(&both, points[2]), Some(Verdict::Missed));
}
