//! What the instruments say about a point: where its workers waited on
//! kernel locks, where they slept and where their CPU time went, over its
//! measured runs.

use std::collections::BTreeMap;

use super::markup::Html;
pub use super::phrases::percent;
use crate::instruments::{Explains, NOTABLE_WAIT_SHARE};
use crate::results::Point;
use crate::vocab::Choice;
use crate::vocab::Instrument;
use crate::vocab::Mode;
use crate::vocab::Share;

/// Below this efficiency (ops/s per worker against 1 worker) a point is
/// explained without being asked to.
pub(crate) const FALLING_EFFICIENCY: f64 = 0.9;

/// Efficiency of each point with a 1-worker point of the same mode and
/// share (and condition) to compare with, by its index in `points`.
/// Open loops have none: their rate is the one asked.
fn efficiencies(points: &[&Point]) -> Vec<Option<f64>> {
    let single: BTreeMap<(Option<String>, Mode, Share), f64> = points
        .iter()
        .filter(|p| p.workers == 1 && p.rate.is_none())
        .filter_map(|p| Some(((p.condition(), p.mode, p.share), p.summary.as_ref()?.ops_per_s.median)))
        .collect();
    points
        .iter()
        .map(|p| {
            p.rate.is_none().then_some(())?;
            let base = *single.get(&(p.condition(), p.mode, p.share))?;
            let per_worker = p.summary.as_ref()?.ops_per_s_per_worker_median;
            (base > 0.0).then(|| per_worker / base)
        })
        .collect()
}

/// "at 4 workers, 58% of worker time waiting on an rwsem write in
/// down_write ← filename_create ← do_mkdirat": the point's dominant site,
/// when it took at least [`NOTABLE_WAIT_SHARE`] of the workers' time.
pub fn dominant_site(point: &Point) -> Option<String> {
    let (profile, all_sites) = point.lock_profile()?;
    let top = profile.sites.first()?;
    // The top site's part of the share all sites take.
    let share = if profile.wait_s > 0.0 { all_sites * top.wait_s / profile.wait_s } else { 0.0 };
    if share < NOTABLE_WAIT_SHARE {
        return None;
    }
    let lock = match (&top.lock, top.objects.first()) {
        (Some(name), _) => format!(" ({name})"),
        (None, Some(object)) => format!(" of {}", object.label()),
        (None, None) => String::new(),
    };
    Some(format!(
        "at {} worker{}, {} of worker time waiting on {} {}{lock} in {}",
        point.workers,
        if point.workers == 1 { "" } else { "s" },
        percent(share),
        // Said "an r-w-sem".
        if top.kind.starts_with("rw") || top.kind.starts_with("rt") { "an" } else { "a" },
        top.kind,
        top.site
    ))
}

/// Below this share of their window waiting for a CPU, workers were not short of CPUs.
const NOTABLE_RUNQ_SHARE: f64 = 0.10;

/// "the machine ran out of CPUs ...", when `point`'s workers waited for a
/// CPU (runnable, not running) longer than on kernel locks or asleep: then
/// that, not a lock, is the first reason it stopped scaling. Medians of the
/// runs' shares of the workers' windows; `usable_cpus` of the host.
pub fn out_of_cpus(point: &Point, usable_cpus: usize) -> Option<String> {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let shares: Vec<crate::results::SchedShares> = point.runs.iter().filter_map(|r| r.sched_shares()).collect();
    let runq = median(shares.iter().map(|s| s.runqueue).collect())?;
    let asleep = median(shares.iter().map(|s| s.asleep).collect()).unwrap_or(0.0);
    let locked = point.lock_profile().map(|(_, share)| share);
    if runq < NOTABLE_RUNQ_SHARE || runq <= asleep || locked.is_some_and(|l| runq <= l) {
        return None;
    }
    let on_locks = locked.map(|l| format!("on kernel locks ({})", percent(l))).unwrap_or_default();
    let than = match on_locks.is_empty() {
        true => format!("more than asleep ({})", percent(asleep)),
        false => format!("more than {on_locks} or asleep ({})", percent(asleep)),
    };
    Some(format!(
        "the machine ran out of CPUs first: at {} on {} usable CPU{}, the workers waited {} of their window for a \
         CPU, {than}",
        crate::vocab::workers(point.workers),
        usable_cpus,
        if usable_cpus == 1 { "" } else { "s" },
        percent(runq),
    ))
}

/// [`out_of_cpus`] at the largest point of a series with profiles (`points`
/// by worker count): said before what the profiles show of it.
pub(crate) fn series_out_of_cpus(points: &[&Point], usable_cpus: usize) -> Option<String> {
    let profiled =
        points.iter().any(|p| p.runs.iter().any(|r| r.sections.locks.is_some() || r.sections.cpu_profile.is_some()));
    out_of_cpus(points.last().filter(|_| profiled)?, usable_cpus)
}

/// Across a series (`points` of one workload, mode and share, fewest
/// workers first), the lock site whose share of worker time grew most from
/// the fewest workers with a lock profile to the most: "down_write ←
/// filename_create (rwsem write) grows most: 0.30% of worker time at 1
/// worker, 25% at 4". `None` without two such points or a site that grew
/// by at least [`NOTABLE_WAIT_SHARE`].
pub(crate) fn fastest_growing_site(points: &[&Point]) -> Option<String> {
    let mut profiled = points.iter().filter(|p| p.runs.iter().any(|r| r.sections.locks.is_some()));
    let (fewest, most) = (profiled.next()?, profiled.next_back()?);
    let why = crate::compare::attribute(fewest, most)?;
    let site = why
        .locks
        .iter()
        .filter(|d| d.change() >= NOTABLE_WAIT_SHARE)
        .max_by(|a, b| a.change().total_cmp(&b.change()))?;
    let workers = |n: usize| format!("{n} worker{}", if n == 1 { "" } else { "s" });
    Some(format!(
        "{} grows most: {} of worker time at {}, {} at {}",
        site.site,
        percent(site.base.share),
        workers(fewest.workers),
        percent(site.new.share),
        most.workers
    ))
}

/// The instruments' tables for `point`, or nothing when it has none.
pub fn explain(point: &Point) -> String {
    let what = format!(
        "{} {} x{} ({} run{})",
        point.mode,
        point.share,
        point.workers,
        point.runs.len(),
        if point.runs.len() == 1 { "" } else { "s" }
    );
    Instrument::ALL.iter().map(|i| i.section().explain(point, &what)).collect()
}

/// Which points of a workload's table get [`explain`]ed: all with `all`,
/// else those whose efficiency falls below [`FALLING_EFFICIENCY`] (and
/// all where no 1-worker point tells), and those whose workers slept at
/// least [`crate::instruments::NOTABLE_ASLEEP_SHARE`] of their time; and every
/// point with `--profile latency`, which is a measurement, not an explanation.
pub(crate) fn points_to_explain<'a>(points: &[&'a Point], all: bool) -> Vec<&'a Point> {
    let efficiency = efficiencies(points);
    let explains = |p: &Point| Instrument::ALL.iter().map(|i| i.section().explains(p)).max().unwrap_or(Explains::No);
    points
        .iter()
        .zip(efficiency)
        .filter(|(p, e)| match explains(p) {
            Explains::No => false,
            Explains::IfFalling => all || e.is_none_or(|e| e < FALLING_EFFICIENCY),
            Explains::Always => true,
        })
        .map(|(p, _)| *p)
        .collect()
}

/// The legends of the tables [`explain`] printed for `explained`: each
/// instrument's only where a point has its table.
pub(crate) fn explain_legend(explained: &[&Point]) -> String {
    let printed = |i: &Instrument| explained.iter().any(|p| !i.section().explain(p, "").is_empty());
    Instrument::ALL.iter().filter(|i| printed(i)).map(|i| i.section().legend()).collect()
}

/// The largest share of worker time spent waiting among `points`: the
/// common scale of a workload's wait bars, so that series compare by eye.
pub fn widest_wait_share<'a>(points: impl IntoIterator<Item = &'a Point>) -> f64 {
    points.into_iter().filter_map(|p| p.lock_profile()).map(|(_, share)| share).fold(0.0, f64::max)
}

/// The report's view of one series (a file, mode, share and condition) of
/// a workload: per worker count, the share of worker time spent waiting,
/// stacked by the series' top sites, as an SVG drawn to `widest` (see
/// [`widest_wait_share`]); and flame graphs of the largest point with a
/// CPU profile and of the largest with an off-CPU profile.
pub(crate) fn html_series(points: &[&Point], title: &str, widest: f64) -> Html {
    let mut out = Html::new();
    for i in Instrument::ALL {
        out.push(&i.section().html_series(points, title, widest));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{cpu_profile, point, run, rwsem_site};
    use crate::results::{Collector, LockProfile, OffCpuProfile, ProgramCost};
    use crate::vocab::{Share, Workload};

    #[test]
    fn each_instruments_legend_only_where_its_tables_are() {
        let locked = waiting(0.25);
        let locks_legend = Instrument::Locks.section().legend();
        assert_eq!(explain_legend(&[&locked]), locks_legend);
        let mut sampled = point(Workload::Stat, Share::Private, 1, vec![run(0, &[1000], 1.0)]);
        sampled.runs[0].sections.cpu_profile = Some(cpu_profile(&[("f;g", 1)]));
        let cpu_legend = Instrument::Cpu.section().legend();
        assert_eq!(explain_legend(&[&sampled]), cpu_legend);
        assert_eq!(explain_legend(&[&locked, &sampled]), format!("{locks_legend}{cpu_legend}"));
        assert_eq!(explain_legend(&[]), "");
    }

    #[test]
    fn the_site_that_grows_most_with_the_workers_is_named() {
        let at = |workers: usize, wait_s: f64| {
            let mut p = waiting(wait_s);
            p.workers = workers;
            p
        };
        let (one, two, four) = (at(1, 0.003), at(2, 0.05), at(4, 0.25));
        assert_eq!(
            fastest_growing_site(&[&one, &two, &four]).unwrap(),
            "down_write ← filename_create ← do_mkdirat (rwsem write) grows most: 0.30% of worker time at 1 worker, 25% at 4"
        );
        // Under a point of growth: nothing to say; one profiled point: nothing to compare.
        assert_eq!(fastest_growing_site(&[&one, &at(4, 0.008)]), None);
        assert_eq!(fastest_growing_site(&[&four]), None);
    }

    /// A 1-worker point of one 1-second run that slept `asleep_s` in fsync's flush, then `asleep_s / 3` in writeback.
    fn sleeping(asleep_s: f64) -> Point {
        let mut r = run(0, &[1000], 1.0);
        let site = |name: &str, count: u64, s: f64| crate::results::SleepSite {
            site: name.into(),
            state: "uninterruptible".into(),
            count,
            asleep_s: s,
            max_asleep_s: s / 10.0,
        };
        r.sections.offcpu = Some(OffCpuProfile {
            method: Collector::Bpf,
            programs: Some(ProgramCost { runs: 1000, seconds: 0.002, attached: None }),
            sleeps: 400,
            asleep_s: asleep_s * 4.0 / 3.0,
            wake_to_run_s: 0.05,
            lost_events: 0,
            min_sleep_s: 0.0,
            sites: vec![
                site("wait_for_completion_io_timeout ← submit_bio_wait ← blkdev_issue_flush", 300, asleep_s),
                site("folio_wait_bit ← folio_wait_writeback ← __filemap_fdatawait_range", 100, asleep_s / 3.0),
            ],
            folded: [("do_fsync;blkdev_issue_flush;__schedule".to_string(), 1000)].into(),
        });
        point(Workload::Fsync, Share::Private, 1, vec![r])
    }

    #[test]
    fn the_report_draws_an_off_cpu_graph_only_where_workers_slept() {
        let slept = sleeping(0.3);
        assert!(html_series(&[&slept], "fsync", 0.0).into_string().contains("where workers slept"));
        // A profile with nothing asleep: no graph of nothing.
        let mut idle = sleeping(0.0);
        if let Some(o) = idle.runs[0].sections.offcpu.as_mut() {
            o.folded.clear();
            o.sites.clear();
            o.sleeps = 0;
        }
        assert!(!html_series(&[&idle], "fsync", 0.0).into_string().contains("where workers slept"));
    }

    #[test]
    fn a_point_whose_workers_slept_gets_the_off_cpu_table_whatever_its_efficiency() {
        let slept = sleeping(0.3);
        assert_eq!(points_to_explain(&[&slept], false).len(), 1, "asleep 40% of the time");
        assert_eq!(
            explain(&slept),
            "  where workers slept, process private x1 (1 run): 40% of their time asleep, 400 sleeps; then 5.0% \
             waiting for a CPU once woken; its BPF programs ran 1000 times for 2.00ms (0.20% of the workers' time)\n\
             \x20    asleep  of all  count    mean      max  state            site\n\
             \x20     300ms     75%    300  1.00ms   30.0ms  uninterruptible  wait_for_completion_io_timeout ← submit_bio_wait ← blkdev_issue_flush\n\
             \x20   100.0ms     25%    100  1.00ms  10.00ms  uninterruptible  folio_wait_bit ← folio_wait_writeback ← __filemap_fdatawait_range\n"
        );
        assert_eq!(explain_legend(&[&slept]), Instrument::Offcpu.section().legend());
        // Asleep 1.3% of the time, at full efficiency: nothing to explain.
        let rested = sleeping(0.01);
        assert!(points_to_explain(&[&rested], false).is_empty());
        assert_eq!(explain(&rested), "");
        let html = html_series(&[&slept], "fsync", 0.0).into_string();
        assert!(html.contains("fsync x1: where workers slept"), "{html}");
        assert!(html.contains("40% of their time asleep in 400 sleeps"), "{html}");
    }
    #[test]
    fn out_of_cpus_comes_before_the_locks_when_workers_waited_longer_for_a_cpu() {
        // The README's example: 2.9% on the directory's rwsem, 60% of the window on a runqueue.
        let mut p = waiting(0.029);
        p.workers = 4;
        let sched = |runqueue_s: f64| crate::results::WorkerSched {
            window_s: 1.0,
            on_cpu_s: 1.0 - runqueue_s - 0.01,
            runqueue_s,
            ..Default::default()
        };
        p.runs[0].sched = vec![sched(0.6); 4];
        assert_eq!(
            out_of_cpus(&p, 2).unwrap(),
            "the machine ran out of CPUs first: at 4 workers on 2 usable CPUs, the workers waited 60% of their \
             window for a CPU, more than on kernel locks (2.9%) or asleep (1.0%)"
        );
        // Waiting on the lock longer than for a CPU: the lock is the reason, said as before.
        p.runs[0].sched = vec![sched(0.02); 4];
        assert_eq!(out_of_cpus(&p, 2), None);
        // And the terminal says it first, above the lock tables.
        p.runs[0].sched = vec![sched(0.6); 4];
        let mut doc = crate::results::fixtures::doc(1, 1.0, vec![p]);
        doc.host.usable_cpus = 2;
        let text = super::super::text::render_results_with(
            &doc,
            super::super::TextOptions { explain_all: true, legend: false },
        );
        let cpus = text.find("the machine ran out of CPUs first").expect("said");
        assert_eq!(text.matches("ran out of CPUs").count(), 1, "said once: {text}");
        let locks = text.find("where workers waited").expect("the lock table");
        assert!(cpus < locks, "{text}");
        // So do the report's findings.
        let html = super::super::render_html(&[("a".to_string(), doc)], &[]);
        let finding = html.lines().find(|l| l.contains("ran out of CPUs")).expect("a finding");
        assert!(finding.contains("ran out of CPUs first: at 4 workers on 2 usable CPUs"), "{finding}");
        assert!(finding.contains("; then at 4 workers, 2.9% of worker time waiting on an rwsem write"), "{finding}");
    }

    #[test]
    fn percentages_never_print_minus_zero() {
        assert_eq!(percent(0.58), "58%");
        assert_eq!(percent(0.012), "1.2%");
        assert_eq!(percent(0.0003), "0.03%");
        assert_eq!(percent(1e-7), "<0.01%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(-1e-12), "0%");
        assert_eq!(percent(-0.5), "-50.00%");
    }

    /// A point of one 1-second run of one worker that waited `wait_s` at one site.
    fn waiting(wait_s: f64) -> Point {
        let mut r = run(0, &[1000], 1.0);
        let site = rwsem_site("down_write ← filename_create ← do_mkdirat", 10, wait_s);
        r.sections.locks = Some(LockProfile::from_sites(10, 0, vec![site]));
        point(Workload::Stat, Share::Private, 1, vec![r])
    }

    #[test]
    fn a_wait_too_small_to_matter_makes_no_finding_and_a_short_bar() {
        assert_eq!(dominant_site(&waiting(0.0001)), None, "0.01% of the time is no finding");
        let found = dominant_site(&waiting(0.25)).unwrap();
        assert!(
            found.starts_with("at 1 worker, 25% of worker time waiting on an rwsem write in down_write"),
            "{found}"
        );
        // Drawn alone, a 0.01% wait is a hundredth of the 1% scale, not the full width.
        let p = waiting(0.0001);
        let html = html_series(&[&p], "stat", 0.0).into_string();
        let width: f64 = html
            .split("<rect")
            .nth(1)
            .unwrap()
            .split("width=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((width - 7.6).abs() < 0.01, "a hundredth of the 760 px scale: {width}");
        assert!(html.contains(">0.01%</text>"), "{html}");
    }
}
