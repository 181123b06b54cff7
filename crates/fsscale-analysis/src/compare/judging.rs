//! How a comparison's rows are judged beyond each point's own test: which
//! figure a paired point on a busy machine is compared in, and the
//! adjustment of all rows' p-values for being tested together.

use super::{CompareConfig, Row, Verdict};
use crate::results::Point;
use crate::stats::hypothesis::{paired_log_ratio, Pairs};

/// The most a CPU-bound worker sleeps: a share of its window.
const CPU_BOUND_ASLEEP: f64 = 0.10;

/// Whether a paired point is better compared in ops per CPU-second: other
/// work took the machine in more than a fifth of either side's runs, both
/// sides' workers were CPU-bound (asleep for at most [`CPU_BOUND_ASLEEP`]
/// of their windows, the median run), and the CPU time the workers got does
/// not differ between the sides, round by round. There an op's cost is what
/// a change moves, and ops per CPU-second measure it without the share of
/// the CPUs other work took in each slot of a round, which pairing by round
/// does not cancel. Workers that sleep (on locks, on I/O) would hide a
/// change in their sleep from it, and a side that got less CPU time (a CPU
/// limit as the variant) changed what ops/s measure, not what an op costs.
/// Whether a point's workers were CPU-bound: asleep for at most
/// [`CPU_BOUND_ASLEEP`] of their windows in the median run (every run
/// with its scheduler figures).
pub(crate) fn cpu_bound(p: &Point) -> bool {
    let mut asleep: Vec<f64> = p.runs.iter().filter_map(|r| r.sched_shares().map(|s| s.asleep)).collect();
    asleep.sort_by(f64::total_cmp);
    !asleep.is_empty() && asleep.len() == p.runs.len() && asleep[asleep.len() / 2] <= CPU_BOUND_ASLEEP
}

pub(super) fn per_cpu_fits(b: &Point, n: &Point) -> bool {
    (b.mostly_busy() || n.mostly_busy())
        && cpu_bound(b)
        && cpu_bound(n)
        && b.ops_per_cpu_s().is_some()
        && n.ops_per_cpu_s().is_some()
        && !cpu_time_differs(b, n)
}

/// Below this p, the sides' workers got different CPU time: a variant that
/// limits CPU shows at p far below it, while two identical sides beside
/// other work reach it by chance once in a thousand points. At 0.05 one A/A
/// point in twenty fell back to ops/s, where the CPU time its slots got by
/// chance moved it too, and was called (`bench/power.sh --design variants`).
const CPU_TIME_DIFFERS_P: f64 = 0.001;

/// Whether the workers' share of their windows on a CPU differs between the
/// sides, paired by round (a paired t test on its log ratios).
fn cpu_time_differs(b: &Point, n: &Point) -> bool {
    let share = |p: &Point| -> Vec<(usize, f64)> {
        p.runs
            .iter()
            .map(|r| {
                let window = r.elapsed_s * r.per_worker_ops.len().max(1) as f64;
                (r.run, (r.worker_cpu.user_s + r.worker_cpu.sys_s) / window)
            })
            .collect()
    };
    let (base, new) = super::change::by_round(&share(b), &share(n));
    Pairs::new(&base, &new).and_then(|p| paired_log_ratio(&p, 0.95)).is_ok_and(|r| r.p_value < CPU_TIME_DIFFERS_P)
}

/// Each tested row's p-value adjusted for the rows tested together
/// ([`crate::stats::hypothesis::benjamini_hochberg`]); with `config.fdr`,
/// a row whose q is not below α is no longer called.
pub(super) fn adjust_for_fdr(rows: &mut [Row], config: &CompareConfig) {
    let tested: Vec<(usize, f64)> = rows.iter().enumerate().filter_map(|(i, r)| Some((i, r.p_value?))).collect();
    let q = crate::stats::hypothesis::benjamini_hochberg(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
    for (&(i, _), q) in tested.iter().zip(q) {
        rows[i].q_value = Some(q);
    }
    if !config.fdr {
        return;
    }
    let alpha = 1.0 - config.confidence;
    for row in rows.iter_mut() {
        let called = matches!(row.verdict, Verdict::Better | Verdict::Worse | Verdict::WithinNoise | Verdict::TooNoisy);
        if called && row.q_value.is_some_and(|q| q >= alpha) {
            row.verdict = Verdict::NoDifferenceProven;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::results::fixtures::{doc, point, run};
    use crate::results::{RunNoise, WorkerCpu, WorkerSched};
    use crate::stats::hypothesis::TestKind;
    use crate::stats::random::SplitMix64 as Rng;
    use crate::vocab::{Share, Workload};

    /// One worker's runs of 1 s: round k's share of a CPU is `cpu[k]`, an op
    /// costs `cost` CPU-seconds, asleep for `asleep` of the window, with other
    /// work on the machine in every run when `busy`.
    fn side(cpu: &[f64], cost: f64, asleep: f64, busy: bool) -> crate::results::Point {
        let runs = cpu
            .iter()
            .enumerate()
            .map(|(k, &share)| {
                let mut r = run(k, &[(share / cost) as u64], 1.0);
                r.worker_cpu = WorkerCpu { user_s: share * 0.2, sys_s: share * 0.8 };
                r.sched = vec![WorkerSched {
                    window_s: 1.0,
                    on_cpu_s: share,
                    runqueue_s: 1.0 - share - asleep,
                    ..Default::default()
                }];
                r.noise = busy.then(|| RunNoise { others_cpu: 0.5, ticks: 10_000, ..Default::default() });
                r
            })
            .collect();
        let mut p = point(Workload::Stat, Share::Private, 1, runs);
        p.summarize();
        p
    }

    /// Each round's share of a CPU, as beside CPU hogs: 30–70%, `scale` of it.
    fn shares(rng: &mut Rng, rounds: usize, scale: f64) -> Vec<f64> {
        (0..rounds).map(|_| scale * (0.5 + 0.2 * (2.0 * rng.unit() - 1.0))).collect()
    }

    #[test]
    fn a_busy_cpu_bound_pair_is_compared_per_cpu_second_unless_one_side_got_less_cpu() {
        let mut rng = Rng::new(3);
        let (a, b) = (shares(&mut rng, 20, 1.0), shares(&mut rng, 20, 1.0));
        // Identical op costs, the CPU each slot got all over the place: per CPU-second.
        assert!(per_cpu_fits(&side(&a, 1e-6, 0.0, true), &side(&b, 1e-6, 0.0, true)));
        // Not busy, or workers that sleep: ops/s.
        assert!(!per_cpu_fits(&side(&a, 1e-6, 0.0, false), &side(&b, 1e-6, 0.0, false)));
        assert!(!per_cpu_fits(&side(&a, 1e-6, 0.3, true), &side(&b, 1e-6, 0.3, true)));
        // The new side limited to 70% of the CPU it would get (a CPU limit as
        // the variant): its ops/s fall, its ops per CPU-second do not; the
        // row stays in ops/s and calls it worse.
        let limited = side(&a.iter().map(|s| s * 0.7).collect::<Vec<_>>(), 1e-6, 0.0, true);
        let base = side(&a, 1e-6, 0.0, true);
        assert!(!per_cpu_fits(&base, &limited));
        let config = CompareConfig { test: TestKind::Paired, noise_threshold_pct: 0.0, ..CompareConfig::DEFAULT };
        let c = compare(&doc(20, 1.0, vec![base]), &doc(20, 1.0, vec![limited]), "a", "b", &config);
        let row = &c.rows[0];
        assert!(!row.per_cpu_when_busy && row.unit == "ops/s", "{row:?}");
        assert_eq!(row.verdict, Verdict::Worse);
        assert!((row.change_pct + 30.0).abs() < 1.0, "{}", row.change_pct);
        // An op 10% dearer, on slots other work shared unevenly: per CPU-second, worse by 10%.
        let dearer = |config: &CompareConfig| {
            let (base, new) = (side(&a, 1e-6, 0.0, true), side(&b, 1.1e-6, 0.0, true));
            compare(&doc(20, 1.0, vec![base]), &doc(20, 1.0, vec![new]), "a", "b", config).rows[0].clone()
        };
        let row = dearer(&config);
        assert!(row.per_cpu_when_busy && row.unit.ends_with("/cpu-s"), "{row:?}");
        assert_eq!(row.verdict, Verdict::Worse);
        assert!((row.change_pct + 100.0 / 11.0).abs() < 0.5, "{}", row.change_pct);
        // Asked for ops/s, it is ops/s.
        let c = [dearer(&CompareConfig { auto_per_cpu: false, ..config })];
        assert!(!c[0].per_cpu_when_busy && c[0].unit == "ops/s");
    }

    #[test]
    fn q_values_are_benjamini_hochbergs_and_only_they_call() {
        let one = crate::compare::tests::doc(&[(Workload::Stat, 1, &[100.0, 101.0, 99.0])]);
        let any_row = compare(&one, &one, "a", "b", &CompareConfig::DEFAULT).rows[0].clone();
        let rows = |ps: &[f64]| -> Vec<Row> {
            ps.iter()
                .map(|&p| {
                    let mut r = any_row.clone();
                    r.p_value = Some(p);
                    r.verdict = if p < 0.05 { Verdict::Worse } else { Verdict::NoDifferenceProven };
                    r
                })
                .collect()
        };
        // m = 4: q = (0.04·4/2, 0.01·4/1, 0.03·4/2 → min with the next, 0.5) in p order.
        let mut r = rows(&[0.04, 0.01, 0.03, 0.5]);
        adjust_for_fdr(&mut r, &CompareConfig::DEFAULT);
        let q: Vec<f64> = r.iter().map(|r| (r.q_value.unwrap() * 1e6).round() / 1e6).collect();
        assert_eq!(q, [0.053333, 0.04, 0.053333, 0.5]);
        let verdicts: Vec<Verdict> = r.iter().map(|r| r.verdict).collect();
        assert_eq!(
            verdicts,
            [Verdict::NoDifferenceProven, Verdict::Worse, Verdict::NoDifferenceProven, Verdict::NoDifferenceProven]
        );
        // --no-fdr: the q-values are still given, the verdicts the tests'.
        let mut r = rows(&[0.04, 0.01, 0.03, 0.5]);
        adjust_for_fdr(&mut r, &CompareConfig { fdr: false, ..CompareConfig::DEFAULT });
        assert_eq!(r.iter().filter(|r| r.verdict == Verdict::Worse).count(), 3);
    }
}
