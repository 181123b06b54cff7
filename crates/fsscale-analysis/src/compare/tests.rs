//! `compare`'s verdicts on hand-made runs.
use super::*;
use crate::results::{fixtures, RunNoise, WorkerCpu};

/// Points of the given workloads and worker counts whose runs had these ops/s (1 s each).
pub(crate) fn doc(points: &[(Workload, usize, &[f64])]) -> ResultsFile {
    let points = points
        .iter()
        .map(|&(workload, workers, rates)| {
            let runs = rates
                .iter()
                .enumerate()
                .map(|(run, &r)| {
                    let mut record = fixtures::run(run, &[], 1.0);
                    record.ops = r as u64;
                    record.ops_per_s = r;
                    record.ops_per_s_per_worker = r / workers as f64;
                    record
                })
                .collect();
            fixtures::point(workload, Share::Private, workers, runs)
        })
        .collect();
    fixtures::doc(5, 1.0, points)
}

const CONFIG: CompareConfig = CompareConfig::DEFAULT;

#[test]
fn one_summary_per_table_and_the_veto_can_be_turned_off() {
    // Two filesystems, each a table: stat 10% slower on one, 30% on the other.
    let on = |fs: &str, rates: [&[f64]; 2]| {
        let mut d = doc(&[(Workload::Stat, 1, rates[0]), (Workload::Stat, 2, rates[1])]);
        for p in &mut d.points {
            p.fs = Some(fs.to_string());
        }
        d
    };
    let mut base = on("ext4", [&[100.0, 101.0, 99.0], &[200.0, 202.0, 198.0]]);
    base.points.extend(on("xfs", [&[100.0, 101.0, 99.0], &[200.0, 202.0, 198.0]]).points);
    let mut new = on("ext4", [&[90.0, 91.0, 89.0], &[180.0, 182.0, 178.0]]);
    new.points.extend(on("xfs", [&[70.0, 71.0, 69.0], &[140.0, 142.0, 138.0]]).points);
    let c = compare(&base, &new, "a", "b", &CONFIG);
    let tables: Vec<(Option<&str>, usize, i64)> =
        c.summaries.iter().map(|s| (s.condition.as_deref(), s.points, s.geomean_change_pct.round() as i64)).collect();
    assert_eq!(tables, [(Some("on ext4"), 2, -10), (Some("on xfs"), 2, -30)]);
    // A drifting base: too noisy with the veto, worse without it.
    let base = doc(&[(Workload::Stat, 1, &[100.0, 102.0, 104.0, 106.0, 108.0])]);
    let new = doc(&[(Workload::Stat, 1, &[60.0, 63.0, 59.0, 64.0, 61.0])]);
    assert_eq!(compare(&base, &new, "a", "b", &CONFIG).rows[0].verdict, Verdict::TooNoisy);
    let no_veto = CompareConfig { noise_veto: false, ..CONFIG };
    let c = compare(&base, &new, "a", "b", &no_veto);
    assert_eq!((c.rows[0].verdict, c.noise_veto), (Verdict::Worse, false));
}

#[test]
fn per_cpu_compares_ops_per_worker_cpu_second_and_lists_points_without_them() {
    // Same ops per CPU-second on both sides, though the new side's runs got half the CPU and ops/s.
    let mut base = doc(&[(Workload::Stat, 1, &[100.0, 101.0, 99.0, 100.0]), (Workload::Read, 1, &[5.0, 5.0])]);
    let mut new = doc(&[(Workload::Stat, 1, &[50.0, 51.0, 49.0, 50.0]), (Workload::Read, 1, &[5.0, 5.0])]);
    for (doc, cpu) in [(&mut base, 1.0), (&mut new, 0.5)] {
        for run in &mut doc.points[0].runs {
            run.worker_cpu = WorkerCpu { user_s: cpu * 0.2, sys_s: cpu * 0.8 };
            run.noise = Some(RunNoise { others_cpu: 0.5, ticks: 10_000, ..Default::default() });
        }
        doc.points[0].summarize();
    }
    let per_cpu = CompareConfig { figure: Figure::OpsPerCpuSecond, ..CONFIG };
    let c = compare(&base, &new, "a", "b", &per_cpu);
    assert_eq!(c.rows.len(), 1);
    let row = &c.rows[0];
    assert_eq!(row.unit, "ops/cpu-s");
    assert_eq!((row.base.median, row.new.median), (100.0, 100.0));
    assert_eq!(row.verdict, Verdict::NoDifferenceProven, "the busy machine does not make it too noisy");
    assert_eq!(c.unmatched, ["read process private x1 (no worker CPU time recorded)"]);
    // On ops/s the same pair is a significant change on a busy machine.
    assert_eq!(compare(&base, &new, "a", "b", &CONFIG).rows[0].verdict, Verdict::TooNoisy);
}

#[test]
fn finds_better_worse_and_no_difference() {
    let base = doc(&[
        (Workload::Stat, 1, &[100.0, 101.0, 99.0, 100.0, 100.0]),
        (Workload::Stat, 2, &[200.0, 202.0, 198.0, 200.0, 200.0]),
        (Workload::OpenClose, 1, &[50.0, 60.0, 40.0]),
    ]);
    let new = doc(&[
        (Workload::Stat, 1, &[110.0, 111.0, 109.0, 110.0, 110.0]),
        (Workload::Stat, 2, &[180.0, 181.0, 179.0, 180.0, 180.0]),
        (Workload::OpenClose, 1, &[52.0, 58.0, 45.0]),
        (Workload::Read, 1, &[1.0, 2.0, 3.0]),
    ]);
    let c = compare(&base, &new, "a", "b", &CONFIG);
    let verdicts: Vec<Verdict> = c.rows.iter().map(|r| r.verdict).collect();
    assert_eq!(verdicts, [Verdict::Better, Verdict::Worse, Verdict::NoDifferenceProven]);
    assert!((c.rows[0].change_pct - 10.0).abs() < 1e-9);
    let (lo, hi) = c.rows[0].change_ci_pct.unwrap();
    assert!(lo < 10.0 && 10.0 < hi && lo > 8.0 && hi < 12.0, "{lo} {hi}");
    assert_eq!(c.unmatched, ["read process private x1 (new only)"]);
    let stat = &c.summaries[0];
    // √(1.1 × 0.9) − 1 = −0.501%.
    assert!((stat.geomean_change_pct - ((1.1f64 * 0.9).sqrt() - 1.0) * 100.0).abs() < 1e-9);
    assert_eq!((stat.better, stat.worse), (1, 1));
    assert_eq!(regressions(&c, 5.0).len(), 1);
    assert_eq!(regressions(&c, 15.0).len(), 0);
}

#[test]
fn a_significant_change_inside_the_noise_threshold_is_within_noise() {
    // Runs that agree to 0.1% make a 1% change highly significant; two
    // invocations of one system differ by that much, so it is not called.
    let base = doc(&[(Workload::Stat, 1, &[1000.0, 1001.0, 999.0, 1000.0, 1000.5])]);
    let small = doc(&[(Workload::Stat, 1, &[1010.0, 1011.0, 1009.0, 1010.0, 1010.5])]);
    let c = compare(&base, &small, "a", "b", &CONFIG);
    assert!(c.rows[0].p_value.unwrap() < 1e-6);
    assert_eq!(c.rows[0].verdict, Verdict::WithinNoise);
    assert_eq!(c.noise_threshold_pct, 2.0);
    assert_eq!(c.summaries[0].better, 0);
    // Without a threshold it is the significance test's call alone.
    let exact = CompareConfig { noise_threshold_pct: 0.0, ..CONFIG };
    assert_eq!(compare(&base, &small, "a", "b", &exact).rows[0].verdict, Verdict::Better);
    // A 3% change whose interval reaches below 2% is not called either;
    // with runs tight enough to put all of it above 2%, it is.
    let wide = doc(&[(Workload::Stat, 1, &[1000.0, 1015.0, 985.0, 1000.0, 1005.0])]);
    let three = doc(&[(Workload::Stat, 1, &[1030.0, 1045.0, 1015.0, 1030.0, 1035.0])]);
    let row = &compare(&wide, &three, "a", "b", &CONFIG).rows[0];
    let (lo, _) = row.change_ci_pct.unwrap();
    assert!(row.p_value.unwrap() < 0.05 && lo < 2.0, "{row:?}");
    assert_eq!(row.verdict, Verdict::WithinNoise);
    let three_tight = doc(&[(Workload::Stat, 1, &[1030.0, 1031.0, 1029.0, 1030.0, 1030.5])]);
    assert_eq!(compare(&base, &three_tight, "a", "b", &CONFIG).rows[0].verdict, Verdict::Better);
}

#[test]
fn drift_makes_a_significant_difference_too_noisy_to_call() {
    // The new side climbs with every run: a machine warming up, not a faster system.
    let base = doc(&[(Workload::Stat, 1, &[100.0, 101.0, 99.0, 100.0, 100.5])]);
    let new = doc(&[(Workload::Stat, 1, &[104.0, 106.0, 108.0, 110.0, 112.0])]);
    let c = compare(&base, &new, "a", "b", &CONFIG);
    assert!(c.rows[0].p_value.unwrap() < 0.01);
    assert_eq!(c.rows[0].verdict, Verdict::TooNoisy);
    assert_eq!(c.rows[0].noise.as_deref(), Some("new: drifts with run order (Spearman ρ = +1.00, p = 0.017)"));
    assert_eq!(c.summaries[0].better, 0);
}

#[test]
fn a_collapse_against_a_busy_base_is_worse_however_busy() {
    let mut base = doc(&[(Workload::Stat, 1, &[1000.0, 700.0, 980.0, 1010.0, 650.0])]);
    for run in &mut base.points[0].runs {
        run.noise = Some(RunNoise { others_cpu: 0.6, ticks: 10_000, ..Default::default() });
    }
    base.points[0].summarize();
    assert!(base.points[0].noise_problem().is_some(), "the base is busy");
    let collapsed = doc(&[(Workload::Stat, 1, &[2.0, 1.0, 0.0, 1.0, 2.0])]);
    let row = &compare(&base, &collapsed, "a", "b", &CONFIG).rows[0];
    assert_eq!(row.verdict, Verdict::Worse, "{row:?}");
    assert!(row.noise.is_some(), "the noise is still reported");
    // Halved on a machine 60% busy: the busy share explains it.
    let halved = doc(&[(Workload::Stat, 1, &[300.0, 301.0, 299.0, 300.0, 300.0])]);
    assert_eq!(compare(&base, &halved, "a", "b", &CONFIG).rows[0].verdict, Verdict::TooNoisy);
    // Cut by four fifths, its runs far apart from the busy base's: still not a collapse.
    let cut = doc(&[(Workload::Stat, 1, &[150.0, 151.0, 149.0, 150.0, 150.0])]);
    let mut quiet_spread = base.clone();
    for (run, v) in quiet_spread.points[0].runs.iter_mut().zip([1000.0, 990.0, 1010.0, 1000.0, 1005.0]) {
        run.ops_per_s = v;
        run.ops_per_s_per_worker = v;
    }
    quiet_spread.points[0].summarize();
    assert_eq!(compare(&quiet_spread, &cut, "a", "b", &CONFIG).rows[0].verdict, Verdict::TooNoisy);
}

#[test]
fn single_runs_cannot_be_tested() {
    let c = compare(&doc(&[(Workload::Stat, 1, &[100.0])]), &doc(&[(Workload::Stat, 1, &[50.0])]), "a", "b", &CONFIG);
    assert_eq!(c.rows[0].verdict, Verdict::TooFewRuns);
    assert_eq!(c.rows[0].change_pct, -50.0);
}

#[test]
fn tables_and_summaries_follow_the_order_the_base_ran_them_in() {
    let runs: &[f64] = &[100.0, 101.0, 99.0];
    let base = doc(&[(Workload::Untar, 1, runs), (Workload::Stat, 2, runs), (Workload::Stat, 1, runs)]);
    let c = compare(&base, &base.clone(), "a", "b", &CONFIG);
    let rows: Vec<(Workload, usize)> = c.rows.iter().map(|r| (r.workload, r.workers)).collect();
    assert_eq!(rows, [(Workload::Untar, 1), (Workload::Stat, 1), (Workload::Stat, 2)]);
    let summaries: Vec<Workload> = c.summaries.iter().map(|s| s.workload).collect();
    assert_eq!(summaries, [Workload::Untar, Workload::Stat]);
}

#[test]
fn a_change_is_explained_by_both_sides_profiles_or_the_command_that_records_them() {
    use crate::results::LockProfile;
    let site = |wait_s: f64| fixtures::rwsem_site("down_write ← filename_create ← do_mkdirat", 100, wait_s);
    let mut base = doc(&[(Workload::CreatUnlink, 1, &[100.0, 101.0, 99.0])]);
    let mut new = doc(&[(Workload::CreatUnlink, 1, &[80.0, 81.0, 79.0])]);
    base.command_line = ["fsscale", "run", "creat-unlink", "-o", "a.json"].map(String::from).to_vec();
    new.command_line = ["fsscale", "run", "creat-unlink", "--share", "shared"].map(String::from).to_vec();
    // Without profiles: the commands that would record them.
    let c = compare(&base, &new, "a", "b", &CONFIG);
    assert_eq!(c.rows[0].verdict, Verdict::Worse);
    assert_eq!(
        c.profile_hint,
        Some((
            "fsscale run creat-unlink --profile locks,cpu,offcpu".into(),
            "fsscale run creat-unlink --share shared --profile locks,cpu,offcpu".into()
        ))
    );
    // With them: the site that grew (its rendering: the report module's tests).
    for (d, wait) in [(&mut base, 0.01), (&mut new, 0.2)] {
        for r in &mut d.points[0].runs {
            r.per_worker_ops = vec![r.ops];
            r.sections.locks = Some(LockProfile::from_sites(100, 0, vec![site(wait)]));
        }
    }
    let c = compare(&base, &new, "a", "b", &CONFIG);
    assert_eq!(c.profile_hint, None);
    let why = c.rows[0].attribution.as_ref().unwrap();
    assert_eq!(why.locks[0].site, "down_write ← filename_create ← do_mkdirat (rwsem write)");
    assert_eq!((why.locks[0].base.waits, why.locks[0].new.waits), (300, 300));
}

/// An open-loop point at 1,000 ops/s whose runs' response p99s are `p99_us`
/// (each run's ops all took that long), the rate kept whatever the p99.
fn open_loop_doc(p99_us: &[u64]) -> ResultsFile {
    let runs = p99_us
        .iter()
        .enumerate()
        .map(|(run, &us)| fixtures::open_run(run, 1000.0, &vec![us * 1000; 1000], false))
        .collect();
    let mut point = fixtures::point(Workload::CreatUnlink, Share::Shared, 2, runs);
    point.rate = crate::vocab::Rate::new(1000.0);
    point.summarize();
    fixtures::doc(p99_us.len(), 1.0, vec![point])
}

#[test]
fn open_loops_are_judged_by_their_response_p99_where_smaller_is_better() {
    let base = open_loop_doc(&[100, 102, 98, 101, 99]);
    let slower = open_loop_doc(&[200, 204, 196, 202, 198]);
    let c = compare(&base, &slower, "a", "b", &CONFIG);
    let row = &c.rows[0];
    assert_eq!((row.unit.as_str(), row.higher_is_better, row.rate), ("µs p99 response", false, base.points[0].rate));
    // Each run's p99 is the upper bound of its bucket: about twice, within the buckets' 6.25%.
    assert!((row.change_pct - 100.0).abs() < 13.0, "{}", row.change_pct);
    assert_eq!(row.verdict, Verdict::Worse, "a doubled p99 at the same rate");
    assert_eq!(compare(&slower, &base, "b", "a", &CONFIG).rows[0].verdict, Verdict::Better);
    // At another rate, it is another point.
    let mut other = open_loop_doc(&[100, 102, 98, 101, 99]);
    other.points[0].rate = crate::vocab::Rate::new(2000.0);
    let c = compare(&base, &other, "a", "b", &CONFIG);
    assert!(c.rows.is_empty());
    assert_eq!(c.unmatched.len(), 2, "{:?}", c.unmatched);
    assert!(c.unmatched[0].contains("at 1k ops/s (base only)"), "{:?}", c.unmatched);
}

#[test]
fn open_loops_are_judged_at_the_response_quantile_asked() {
    // 980 ops of 10 us and 20 slow ones a run: the slow ones double, the median holds.
    let doc = |slow_us: &[u64]| {
        let runs = slow_us
            .iter()
            .enumerate()
            .map(|(run, &slow)| {
                let times: Vec<u64> = (0..1000).map(|i| if i < 980 { 10_000 + i % 7 } else { slow * 1000 }).collect();
                fixtures::open_run(run, 1000.0, &times, false)
            })
            .collect();
        let mut point = fixtures::point(Workload::CreatUnlink, Share::Shared, 2, runs);
        point.rate = crate::vocab::Rate::new(1000.0);
        point.summarize();
        fixtures::doc(slow_us.len(), 1.0, vec![point])
    };
    let (base, new) = (doc(&[100, 102, 98, 101, 99]), doc(&[200, 204, 196, 202, 198]));
    let at = |quantile| compare(&base, &new, "a", "b", &CompareConfig { response: quantile, ..CONFIG }).rows[0].clone();
    let p99 = at(crate::vocab::Quantile::P99);
    assert_eq!((p99.unit.as_str(), p99.verdict), ("µs p99 response", Verdict::Worse));
    let p50 = at(crate::vocab::Quantile::P50);
    assert_eq!(p50.unit, "µs p50 response");
    assert_eq!(p50.change_pct, 0.0, "the median did not move");
    assert_ne!(p50.verdict, Verdict::Worse);
    assert_eq!(at(crate::vocab::Quantile::P999).verdict, Verdict::Worse);
}
