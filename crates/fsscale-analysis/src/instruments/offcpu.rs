//! `--profile offcpu`: where the workers slept in the window (each
//! switch-out asleep, with its kernel stack, until woken).

use super::attribution::{sleep_deltas, Attribution};
use super::{Explains, Section};
use crate::render::format::format_ns;
use crate::render::markup::Html;
use crate::render::phrases::{cost, lost, percent};
use crate::render::table::{Align, Table};
use crate::results::{OffCpuProfile, Point, RunRecord};

/// Rows of the table.
const TOP: usize = 5;

/// Points whose workers slept at least this share of their time get the
/// off-CPU table under them, whatever their efficiency.
pub const NOTABLE_ASLEEP_SHARE: f64 = 0.02;

/// The off-CPU table: the share asleep (with the scheduler's own figure
/// beside it, which it should match), then the top sleep sites.
fn slept(point: &Point, what: &str, profile: &OffCpuProfile, share: f64) -> String {
    let profiled: Vec<f64> = point
        .runs
        .iter()
        .filter(|r| r.sections.offcpu.is_some())
        .filter_map(|r| r.sched_shares())
        .map(|s| s.asleep)
        .collect();
    let column = match profiled.len() {
        0 => String::new(),
        n => format!(" (the asleep column: {})", percent(profiled.iter().sum::<f64>() / n as f64)),
    };
    let worker_s: f64 = point.runs.iter().filter(|r| r.sections.offcpu.is_some()).map(|r| r.worker_seconds()).sum();
    let waking = if worker_s > 0.0 { profile.wake_to_run_s / worker_s } else { 0.0 };
    let mut out = format!(
        "  where workers slept, {what}: {} of their time asleep{column}, {} sleeps; then {} waiting for a CPU once woken{}{}\n",
        percent(share),
        profile.sleeps,
        percent(waking),
        lost(profile.lost_events, profile.method),
        cost(profile.programs, point, |r| r.sections.offcpu.is_some())
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
const OFFCPU_LEGEND: &str = "where workers slept: each switch-out of a worker asleep in the runs' windows \
     (--profile offcpu), until it was woken, by site (the wait call ← its callers) and state; the share asleep \
     should match the asleep column, which the scheduler counts (it also holds the scheduler's own time \
     around each switch); shown where workers slept at least 2% of their time. With BPF a sleep's site is \
     sampled: its task's stack was walked for one sleep in N, the rest spread over the sites walked in the same \
     state (counts and times are every sleep's; --profile-every-stack walks each).\n";

/// The flame graph of the largest of `points` whose workers slept enough
/// to say anything: no graph of an empty or negligible profile.
fn sleep_flame(points: &[&Point], title: &str) -> Html {
    let mut out = Html::new();
    let slept =
        |p: &&Point| p.offcpu_profile().filter(|(s, share)| !s.folded.is_empty() && *share >= NOTABLE_ASLEEP_SHARE);
    if let Some((point, (sleeps, share))) = points.iter().rev().find_map(|p| Some((*p, slept(p)?))) {
        let caption = format!(
            "{title}, {}: {} of their time asleep in {} sleeps (kernel stacks at each switch-out, until woken); \
             width = share of the time asleep, root at the bottom; hover a frame for its name and share.",
            crate::vocab::workers(point.workers),
            percent(share),
            sleeps.sleeps
        );
        let graph_title = format!("{title} x{}: where workers slept", point.workers);
        crate::render::flame::figure(&mut out, &sleeps.folded, &graph_title, crate::render::flame::OFF_CPU, &caption);
    }
    out
}

pub(super) struct Offcpu;

impl Section for Offcpu {
    fn recorded(&self, run: &RunRecord) -> bool {
        run.sections.offcpu.is_some()
    }

    fn merge_ranks(&self, ranks: &[RunRecord], into: &mut RunRecord) {
        into.sections.offcpu = OffCpuProfile::sum(ranks.iter().filter_map(|r| r.sections.offcpu.as_ref()));
    }

    fn explains(&self, point: &Point) -> Explains {
        match point.offcpu_profile() {
            Some((_, share)) if share >= NOTABLE_ASLEEP_SHARE => Explains::Always,
            Some(_) => Explains::IfFalling,
            None => Explains::No,
        }
    }

    fn explain(&self, point: &Point, what: &str) -> String {
        match point.offcpu_profile().filter(|(_, share)| *share >= NOTABLE_ASLEEP_SHARE) {
            Some((profile, share)) => slept(point, what, &profile, share),
            None => String::new(),
        }
    }

    fn legend(&self) -> &'static str {
        OFFCPU_LEGEND
    }

    fn html_series(&self, points: &[&Point], title: &str, _widest: f64) -> Html {
        sleep_flame(points, title)
    }

    fn attribute(&self, base: &Point, new: &Point, why: &mut Attribution) -> bool {
        let Some(((b, bs), (n, ns))) = base.offcpu_profile().zip(new.offcpu_profile()) else { return false };
        why.asleep = Some((bs, ns));
        why.sleeps = sleep_deltas(&b, bs, &n, ns);
        why.sleep_stacks = Some((b.folded, n.folded));
        true
    }

    fn attributes(&self) -> bool {
        true
    }
}
