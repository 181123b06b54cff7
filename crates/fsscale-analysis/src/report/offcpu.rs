//! `--profile offcpu` in the tables: where the workers slept, under the
//! points whose workers slept a notable share of their time.

use super::latency::format_ns;
use super::phrases::{cost, lost, percent};
use super::table::{Align, Table};
use crate::results::{OffCpuProfile, Point};

/// Rows of the table.
const TOP: usize = 5;

/// Points whose workers slept at least this share of their time get the
/// off-CPU table under them, whatever their efficiency.
pub(crate) const NOTABLE_ASLEEP_SHARE: f64 = 0.02;

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
        lost(profile.lost_events, profile.method),
        cost(profile.programs, point, |r| r.offcpu.is_some())
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

/// What the off-CPU tables under the points mean.
pub(super) const OFFCPU_LEGEND: &str = "where workers slept: each switch-out of a worker asleep in the runs' windows \
     (--profile offcpu), until it was woken, by site (the wait call ← its callers) and state; the share asleep \
     should match the asleep column, which the scheduler counts (it also holds the scheduler's own time \
     around each switch); shown where workers slept at least 2% of their time. With BPF a sleep's site is \
     sampled: its task's stack was walked for one sleep in N, the rest spread over the sites walked in the same \
     state (counts and times are every sleep's; --profile-every-stack walks each).\n";
