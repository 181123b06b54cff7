//! `--profile offcpu` in the tables: where the workers slept, under the
//! points whose workers slept a notable share of their time.

use super::latency::format_ns;
use super::profile::percent;
use super::table::{Align, Table};
use crate::results::{OffCpuProfile, Point};

/// Rows of the table.
const TOP: usize = 5;

/// Points whose workers slept at least this share of their time get the
/// off-CPU table under them, whatever their efficiency.
pub const NOTABLE_ASLEEP_SHARE: f64 = 0.02;

/// The off-CPU table: the share asleep (with the scheduler's own figure
/// beside it, which it should match), then the top sleep sites.
pub(super) fn slept(point: &Point, what: &str, profile: &OffCpuProfile, share: f64) -> String {
    let profiled: Vec<f64> =
        point.runs.iter().filter(|r| r.offcpu.is_some()).filter_map(|r| r.sched_shares()).map(|s| s.asleep).collect();
    let column = match profiled.len() {
        0 => String::new(),
        n => format!(" (the asleep column: {})", percent(profiled.iter().sum::<f64>() / n as f64)),
    };
    let worker_s: f64 = point.runs.iter().filter(|r| r.offcpu.is_some()).map(|r| r.worker_seconds()).sum();
    let waking = if worker_s > 0.0 { profile.wake_to_run_s / worker_s } else { 0.0 };
    let mut out = format!(
        "  where workers slept, {what}: {} of their time asleep{column}, {} sleeps; then {} waiting for a CPU once woken{}{}\n",
        percent(share),
        profile.sleeps,
        percent(waking),
        super::profile::lost(profile.lost_events, profile.method),
        super::profile::cost(profile.programs, point, |r| r.offcpu.is_some())
    );
    let mut table = Table::new(&[
        ("asleep", Align::Right),
        ("of all", Align::Right),
        ("count", Align::Right),
        ("mean", Align::Right),
        ("max", Align::Right),
        ("state", Align::Left),
        ("site", Align::Left),
    ])
    .indented(4);
    for site in profile.sites.iter().take(TOP) {
        table.row(vec![
            format_ns(site.asleep_s * 1e9),
            percent(if profile.asleep_s > 0.0 { site.asleep_s / profile.asleep_s } else { 0.0 }),
            site.count.to_string(),
            format_ns(site.mean_asleep_s() * 1e9),
            format_ns(site.max_asleep_s * 1e9),
            site.state.clone(),
            site.site.clone(),
        ]);
    }
    out.push_str(&table.render());
    out
}

/// What the off-CPU tables under [`super::profile::explain`] mean.
pub(super) const OFFCPU_LEGEND: &str = "where workers slept: each switch-out of a worker asleep in the runs' windows \
     (--profile offcpu), until it was woken, by site (the wait call ← its callers) and state; the share asleep \
     should match the asleep column, which the scheduler counts (it also holds the scheduler's own time \
     around each switch); shown where workers slept at least 2% of their time.\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{point, run};
    use crate::results::{Collector, ProgramCost};
    use crate::vocab::{Share, Workload};

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
        r.offcpu = Some(OffCpuProfile {
            method: Collector::Bpf,
            programs: Some(ProgramCost { runs: 1000, seconds: 0.002 }),
            sleeps: 400,
            asleep_s: asleep_s * 4.0 / 3.0,
            wake_to_run_s: 0.05,
            lost_events: 0,
            sites: vec![
                site("wait_for_completion_io_timeout ← submit_bio_wait ← blkdev_issue_flush", 300, asleep_s),
                site("folio_wait_bit ← folio_wait_writeback ← __filemap_fdatawait_range", 100, asleep_s / 3.0),
            ],
            folded: [("do_fsync;blkdev_issue_flush;__schedule".to_string(), 1000)].into(),
        });
        point(Workload::Fsync, Share::Private, 1, vec![r])
    }

    #[test]
    fn a_point_whose_workers_slept_gets_the_off_cpu_table_whatever_its_efficiency() {
        let slept = sleeping(0.3);
        assert_eq!(super::super::profile::points_to_explain(&[&slept], false).len(), 1, "asleep 40% of the time");
        assert_eq!(
            super::super::profile::explain(&slept),
            "  where workers slept, process private x1 (1 run): 40% of their time asleep, 400 sleeps; then 5.0% \
             waiting for a CPU once woken; its BPF programs ran 1000 times for 2.00ms (0.20% of the workers' time)\n\
             \x20    asleep  of all  count    mean      max  state            site\n\
             \x20     300ms     75%    300  1.00ms   30.0ms  uninterruptible  wait_for_completion_io_timeout ← submit_bio_wait ← blkdev_issue_flush\n\
             \x20   100.0ms     25%    100  1.00ms  10.00ms  uninterruptible  folio_wait_bit ← folio_wait_writeback ← __filemap_fdatawait_range\n"
        );
        assert_eq!(super::super::profile::explain_legend(&[&slept]), OFFCPU_LEGEND);
        // Asleep 1.3% of the time, at full efficiency: nothing to explain.
        let rested = sleeping(0.01);
        assert!(super::super::profile::points_to_explain(&[&rested], false).is_empty());
        assert_eq!(super::super::profile::explain(&rested), "");
        let html = super::super::profile::html_series(&[&slept], "fsync", 0.0).into_string();
        assert!(html.contains("fsync x1: where workers slept"), "{html}");
        assert!(html.contains("40% of their time asleep in 400 sleeps"), "{html}");
    }
}
