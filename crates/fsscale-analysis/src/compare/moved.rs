//! Every stat that moved between two sides of a point, as the kernel test
//! robot (LKP) reports a regression: `base ±%stddev  %change  new
//! ±%stddev  stat`, for the machine's counters of each run
//! ([`crate::results::RunRecord::system_stats`]) and the workers' own
//! (switches, migrations, faults). Each stat is tested as the figure is
//! (Welch's t over the runs), and the stats of a point are one family: a
//! stat is listed when its Benjamini–Hochberg q is below α, so that among
//! the stats listed the expected share that did not really move is α,
//! however many stats the kernel shows.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::results::{Point, RunRecord};
use crate::stats::hypothesis::{benjamini_hochberg, welch};
use crate::stats::{Sample, Summary};

/// One stat that moved, per op or per second of the window.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MovedStat {
    /// `vmstat.pgfault`, `softirqs.TIMER`, `workers.involuntary_switches`.
    pub stat: String,
    /// What each value is divided by: `op` (the workers' own page faults)
    /// or `s` (the rest: the machine's counters, the workers' switches and
    /// migrations).
    pub per: String,
    pub base_mean: f64,
    /// The runs' standard deviation, in percent of their mean (LKP's `±%stddev`).
    pub base_sd_pct: f64,
    pub new_mean: f64,
    pub new_sd_pct: f64,
    /// None where a percentage means nothing: the base is 0 (a stat that
    /// appeared), of the other sign (a level that fell where it rose), or
    /// so near 0 that the change is over a thousandfold.
    pub change_pct: Option<f64>,
    /// Benjamini–Hochberg over the point's stats.
    pub q_value: f64,
}

/// Stats a point's list keeps, largest change first.
pub const MAX_MOVED: usize = 40;

/// Stats counted per op: the workers' own page faults, which only their
/// ops make. The rest are per second of the window, as LKP's are per run
/// of a fixed length: the machine's counters hold other processes' work
/// too, and per op every such counter would move whenever the rate did.
fn per_second(stat: &str) -> bool {
    !matches!(stat, "workers.minor_faults" | "workers.major_faults")
}

/// A run's stats by name: the machine's changes and its workers' sums; None
/// for a run that recorded neither (a file from before they were kept).
fn stats_of(run: &RunRecord) -> Option<BTreeMap<String, f64>> {
    if run.system_stats.is_empty() && run.sched.is_empty() {
        return None;
    }
    let mut stats: BTreeMap<String, f64> = run.system_stats.iter().map(|(k, &v)| (k.clone(), v as f64)).collect();
    if !run.sched.is_empty() {
        let sum = |f: fn(&crate::results::WorkerSched) -> u64| run.sched.iter().map(f).sum::<u64>() as f64;
        stats.insert("workers.voluntary_switches".into(), sum(|w| w.voluntary_switches));
        stats.insert("workers.involuntary_switches".into(), sum(|w| w.involuntary_switches));
        stats.insert("workers.migrations".into(), sum(|w| w.migrations));
        stats.insert("workers.minor_faults".into(), sum(|w| w.minor_faults));
        stats.insert("workers.major_faults".into(), sum(|w| w.major_faults));
    }
    Some(stats)
}

/// A side's runs that can be divided (ops and a window), with their stats.
fn runs_with_stats(point: &Point) -> Vec<(&RunRecord, BTreeMap<String, f64>)> {
    point.runs.iter().filter(|r| r.ops > 0 && r.elapsed_s > 0.0).filter_map(|r| Some((r, stats_of(r)?))).collect()
}

/// Each stat's values over a side's runs, per op or per second. A name a
/// run lacks did not change in it (changes of 0 are left out of the file).
fn side(runs: &[(&RunRecord, BTreeMap<String, f64>)], names: &BTreeSet<String>) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (run, stats) in runs {
        for name in names {
            let value = stats.get(name).copied().unwrap_or(0.0);
            let by = if per_second(name) { run.elapsed_s } else { run.ops as f64 };
            out.entry(name.clone()).or_default().push(value / by);
        }
    }
    out
}

/// The stats that moved from `base` to `new` at false discovery rate
/// `alpha`, largest change first, at most [`MAX_MOVED`]; empty where
/// either side has fewer than two runs with stats.
pub fn moved(base: &Point, new: &Point, alpha: f64) -> Vec<MovedStat> {
    let (base_runs, new_runs) = (runs_with_stats(base), runs_with_stats(new));
    let names: BTreeSet<String> = base_runs.iter().chain(&new_runs).flat_map(|(_, s)| s.keys().cloned()).collect();
    let (b, n) = (side(&base_runs, &names), side(&new_runs, &names));
    let mut tested = Vec::new();
    for name in &names {
        let (Some(bv), Some(nv)) = (b.get(name), n.get(name)) else { continue };
        let (Ok(bs), Ok(ns)) = (Sample::new(bv), Sample::new(nv)) else { continue };
        if bs.mean() == 0.0 && ns.mean() == 0.0 {
            continue;
        }
        let Ok(test) = welch(&bs, &ns, 1.0 - alpha) else { continue };
        tested.push((name, bs, ns, test.p_value));
    }
    let q = benjamini_hochberg(&tested.iter().map(|t| t.3).collect::<Vec<_>>());
    let sd_pct = |s: &Sample| Summary::of(s.values()).map_or(0.0, |s| s.relative_stddev_pct());
    let mut out: Vec<MovedStat> = tested
        .iter()
        .zip(q)
        .filter(|(_, q)| *q < alpha)
        .map(|((name, bs, ns, _), q)| MovedStat {
            stat: name.to_string(),
            per: if per_second(name) { "s" } else { "op" }.to_string(),
            base_mean: bs.mean(),
            base_sd_pct: sd_pct(bs),
            new_mean: ns.mean(),
            new_sd_pct: sd_pct(ns),
            change_pct: percent_change(bs, ns),
            q_value: q,
        })
        .collect();
    // Appeared first, then by the size of the change.
    out.sort_by(|x, y| {
        let size = |m: &MovedStat| m.change_pct.map_or(f64::INFINITY, f64::abs);
        size(y).total_cmp(&size(x)).then_with(|| x.stat.cmp(&y.stat))
    });
    out.truncate(MAX_MOVED);
    out
}

/// The change from `base` to `new` in percent of the base, where that
/// means something (see [`MovedStat::change_pct`]).
fn percent_change(base: &Sample, new: &Sample) -> Option<f64> {
    let (b, n) = (base.mean(), new.mean());
    let pct = 100.0 * (n - b) / b.abs();
    let meaningful = b != 0.0 && (n == 0.0 || b.signum() == n.signum()) && pct.abs() <= 100_000.0;
    meaningful.then_some(pct)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{point, run};
    use crate::results::WorkerSched;
    use crate::stats::random::SplitMix64 as Rng;
    use crate::vocab::{Share, Workload};

    type Stats = Vec<(String, Vec<i64>)>;

    /// Runs of 1 s, `ops` each, with `stats` (name → per-run values) and 2
    /// workers with `involuntary` switches each.
    fn side(ops: u64, stats: &Stats, involuntary: &[u64]) -> Point {
        let runs = (0..involuntary.len())
            .map(|i| {
                let mut r = run(i, &[ops / 2, ops / 2], 1.0);
                r.system_stats = stats.iter().filter(|(_, v)| v[i] != 0).map(|(k, v)| (k.clone(), v[i])).collect();
                let worker = WorkerSched { involuntary_switches: involuntary[i], window_s: 1.0, ..Default::default() };
                r.sched = vec![worker; 2];
                r
            })
            .collect();
        point(Workload::Stat, Share::Private, 2, runs)
    }

    /// `count` stats named `vmstat.c<i>`, each `runs` values within ±`spread` of `mean`.
    fn unmoved(rng: &mut Rng, count: usize, runs: usize, mean: f64, spread: f64) -> Stats {
        (0..count)
            .map(|i| {
                (
                    format!("vmstat.c{i}"),
                    (0..runs).map(|_| (mean * (1.0 + spread * (2.0 * rng.unit() - 1.0))) as i64).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn what_hogs_change_is_listed_and_what_they_do_not_is_not() {
        let mut rng = Rng::new(3);
        let timer =
            |rng: &mut Rng| ("softirqs.TIMER".to_string(), (0..5).map(|_| 490 + rng.below(20) as i64).collect());
        let mut quiet_stats = unmoved(&mut rng, 40, 5, 1e5, 0.03);
        quiet_stats.push(timer(&mut rng));
        let mut busy_stats = unmoved(&mut rng, 40, 5, 1e5, 0.03);
        busy_stats.push(timer(&mut rng));
        let quiet = side(1_000_000, &quiet_stats, &[5, 6, 4, 5, 7]);
        // Beside two hogs: preempted 200 times a second instead of 5, and 40% fewer ops.
        let busy = side(600_000, &busy_stats, &[210, 190, 205, 200, 195]);
        let moved = moved(&quiet, &busy, 0.05);
        let names: Vec<&str> = moved.iter().map(|m| m.stat.as_str()).collect();
        assert_eq!(names[0], "workers.involuntary_switches", "{names:?}");
        let switches = &moved[0];
        assert_eq!(switches.per, "s");
        assert!((switches.base_mean - 2.0 * 5.4).abs() < 1e-9, "{switches:?}");
        assert!(switches.change_pct.unwrap() > 3000.0 && switches.q_value < 0.05, "{switches:?}");
        // Per second, the machine's counters and the timer's softirqs did not
        // move, though the ops fell by 40%: not listed.
        assert_eq!(names, ["workers.involuntary_switches"], "{moved:?}");
        assert!(moved.len() <= MAX_MOVED);
    }

    #[test]
    fn an_a_a_comparison_lists_almost_nothing_and_old_files_nothing() {
        let mut rng = Rng::new(11);
        let mut calls = 0;
        for _ in 0..20 {
            let (a, b) = (unmoved(&mut rng, 60, 5, 1e4, 0.1), unmoved(&mut rng, 60, 5, 1e4, 0.1));
            calls += moved(&side(1000, &a, &[1; 5]), &side(1000, &b, &[1; 5]), 0.05).len();
        }
        // 20 comparisons of 61 stats that never moved: with no true change,
        // Benjamini–Hochberg holds the chance of any call to about 5% each.
        assert!(calls <= 3, "{calls} stats called moved in 20 A/A comparisons");
        // Files from before the stats were kept have none to compare.
        let old = |ops| point(Workload::Stat, Share::Private, 1, (0..3).map(|i| run(i, &[ops], 1.0)).collect());
        assert!(moved(&old(100), &old(200), 0.05).is_empty());
    }

    #[test]
    fn a_stat_that_appears_is_listed_first_with_no_percentage() {
        let stats = |major: [i64; 3], faults: [i64; 3]| -> Stats {
            vec![("vmstat.pgmajfault".into(), major.to_vec()), ("vmstat.pgfault".into(), faults.to_vec())]
        };
        let base = side(1000, &stats([0, 0, 0], [100, 101, 99]), &[1; 3]);
        let new = side(1000, &stats([50, 52, 48], [200, 202, 198]), &[1; 3]);
        let moved = moved(&base, &new, 0.05);
        assert_eq!(moved[0].stat, "vmstat.pgmajfault");
        assert_eq!(moved[0].change_pct, None);
        assert_eq!(moved[1].stat, "vmstat.pgfault");
        assert!((moved[1].change_pct.unwrap() - 100.0).abs() < 1e-9, "{:?}", moved[1]);
    }

    #[test]
    fn a_base_near_zero_or_of_the_other_sign_has_no_percentage() {
        let sample = |v: &[f64]| Sample::new(v).unwrap();
        // A level that barely moved in the base (mean 0.0001) and by thousands in the new side.
        assert_eq!(percent_change(&sample(&[0.0, 0.0003, 0.0]), &sample(&[9000.0, 9300.0, 9600.0])), None);
        // Fell where it rose.
        assert_eq!(percent_change(&sample(&[-5.0, -5.2, -5.4]), &sample(&[8000.0, 8600.0, 9000.0])), None);
        // To 0 is a change of its whole size; a noisy base still has its percentage.
        assert_eq!(percent_change(&sample(&[-2.0, -2.0, -2.0]), &sample(&[0.0, 0.0, 0.0])), Some(100.0));
        assert_eq!(percent_change(&sample(&[100.0, 101.0, 99.0]), &sample(&[150.0, 151.0, 149.0])), Some(50.0));
        let noisy = percent_change(&sample(&[0.0, 0.0, 40_000.0]), &sample(&[200_000.0, 210_000.0, 220_000.0]));
        assert!((noisy.unwrap() - 1475.0).abs() < 1e-9, "{noisy:?}");
    }
}
