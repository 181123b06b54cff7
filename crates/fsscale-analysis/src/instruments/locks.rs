//! `--profile locks`: where the workers waited on kernel locks in the
//! window (the lock:contention_* tracepoints), by site, with the object
//! locked and who held it.

use std::collections::BTreeMap;

use super::attribution::{site_deltas, Attribution};
use super::{Explains, Section};
use crate::render::format::format_ns;
use crate::render::markup::Html;
use crate::render::phrases::{cost, lost, percent};
use crate::render::table::{Align, Table};
use crate::results::{LockProfile, LockSite, Point, RunRecord};
use crate::{html, html_of};

/// Rows of the table.
const TOP: usize = 5;

/// Waits below this share of worker time explain nothing about scaling:
/// no finding names them, and wait bars are drawn to at least this scale.
pub const NOTABLE_WAIT_SHARE: f64 = 0.01;

/// The site, with its static lock's name or the object whose lock it was
/// most (and that object's part of its waits), and who held it most (its
/// part of the waits, and how often it was on a CPU as they began).
fn site_with_object(site: &LockSite) -> String {
    let mut out = match &site.lock {
        Some(lock) => format!("{} on {lock}", site.site),
        None => site.site.clone(),
    };
    let part = |wait_s: f64| percent(if site.wait_s > 0.0 { wait_s / site.wait_s } else { 0.0 });
    if let Some(top) = site.objects.first() {
        out.push_str(&format!(": {}, {}", top.label(), part(top.wait_s)));
    }
    if let Some(holder) = site.holders.first() {
        out.push_str(&format!(
            "; held by {} {} (on a CPU at {} of them)",
            holder.holder,
            part(holder.wait_s),
            percent(holder.on_cpu as f64 / holder.count.max(1) as f64)
        ));
    }
    out
}

fn sites_table(sites: &[LockSite], total_s: f64) -> Table {
    let mut table = Table::new(&[
        ("wait", Align::Right),
        ("of all", Align::Right),
        ("count", Align::Right),
        ("mean", Align::Right),
        ("max", Align::Right),
        ("kind", Align::Left),
        ("site", Align::Left),
    ])
    .indented(4);
    for site in sites.iter().take(TOP) {
        table.row(vec![
            format_ns(site.wait_s * 1e9),
            percent(if total_s > 0.0 { site.wait_s / total_s } else { 0.0 }),
            site.count.to_string(),
            format_ns(site.mean_wait_s() * 1e9),
            format_ns(site.max_wait_s * 1e9),
            site.kind.clone(),
            site_with_object(site),
        ]);
    }
    table
}

/// Colours of the top sites in the stacked bars, then grey for the rest.
const SITE_COLOURS: [&str; 5] = ["#c0392b", "#2874a6", "#b9770e", "#239b56", "#7d3c98"];
const OTHER_COLOUR: &str = "#aab7b8";

fn lock_bars(locked: &[(&Point, LockProfile, f64)], title: &str, widest: f64) -> Html {
    // The series' top sites by total wait, coloured alike in every row.
    let mut totals: BTreeMap<String, f64> = BTreeMap::new();
    for (_, profile, _) in locked {
        for site in &profile.sites {
            *totals.entry(site.label()).or_default() += site.wait_s;
        }
    }
    let mut top: Vec<(String, f64)> = totals.into_iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    top.truncate(SITE_COLOURS.len());
    // A scale of at least 1%: a series that barely waits draws short bars, not full ones.
    let widest = locked.iter().map(|(_, _, s)| *s).fold(widest, f64::max).max(NOTABLE_WAIT_SHARE);
    let (left, width, row) = (70.0, 760.0, 22.0);
    let height = row * locked.len() as f64 + 30.0;
    let mut svg = html_of!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"locks\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">",
        left + width + 80.0,
        height
    );
    for (i, (point, profile, share)) in locked.iter().enumerate() {
        let y = 8.0 + row * i as f64;
        html!(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">x{}</text>", left - 8.0, y + 13.0, point.workers);
        let mut x = left;
        let scale = width * share / widest / profile.wait_s.max(1e-12);
        let mut rest = profile.wait_s;
        for (k, (label, _)) in top.iter().enumerate() {
            let wait: f64 = profile.sites.iter().filter(|s| &s.label() == label).map(|s| s.wait_s).sum();
            rest -= wait;
            svg.push(&segment(x, y, wait * scale, SITE_COLOURS[k], label, wait / profile.wait_s.max(1e-12)));
            x += wait * scale;
        }
        let rest = rest.max(0.0);
        svg.push(&segment(x, y, rest * scale, OTHER_COLOUR, "other sites", rest / profile.wait_s.max(1e-12)));
        let end = left + width * share.max(0.0) / widest;
        html!(svg, "<text x=\"{}\" y=\"{}\">{}</text>", end + 6.0, y + 13.0, percent(*share));
    }
    svg.push_static("</svg>");
    let legend: Html = top
        .iter()
        .enumerate()
        .map(|(k, (label, _))| {
            html_of!("<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>", SITE_COLOURS[k], label)
        })
        .chain(std::iter::once(html_of!(
            "<li><span class=\"swatch\" style=\"background:{}\"></span>other sites</li>",
            OTHER_COLOUR
        )))
        .collect();
    html_of!(
        "<figure class=\"locks\">{}<ul class=\"legend\">{}</ul><figcaption>{}: share of the workers' time spent \
         waiting on kernel locks (--profile locks), per worker count, split by contention site (the lock call ← its \
         callers); all measured runs together; bars of all series of the workload share one scale.</figcaption></figure>\n",
        svg,
        legend,
        title
    )
}

fn segment(x: f64, y: f64, width: f64, colour: &str, label: &str, share: f64) -> Html {
    if width <= 0.0 {
        return Html::new();
    }
    html_of!(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"16\" fill=\"{}\"><title>{} ({} of the waits)</title></rect>",
        format!("{x:.2}"),
        y,
        format!("{width:.2}"),
        colour,
        label,
        percent(share)
    )
}

pub(super) struct Locks;

impl Section for Locks {
    fn recorded(&self, run: &RunRecord) -> bool {
        run.sections.locks.is_some()
    }

    fn merge_ranks(&self, ranks: &[RunRecord], into: &mut RunRecord) {
        into.sections.locks = LockProfile::sum(ranks.iter().filter_map(|r| r.sections.locks.as_ref()));
    }

    fn explains(&self, point: &Point) -> Explains {
        match point.runs.iter().any(|r| r.sections.locks.is_some()) {
            true => Explains::IfFalling,
            false => Explains::No,
        }
    }

    fn explain(&self, point: &Point, what: &str) -> String {
        let Some((profile, share)) = point.lock_profile() else { return String::new() };
        let mut out = format!(
            "  where workers waited, {what}: {} of their time, {} contention{}{}{}\n",
            percent(share),
            profile.contentions,
            if profile.contentions == 1 { "" } else { "s" },
            lost(profile.lost_events, profile.method),
            cost(profile.programs, point, |r| r.sections.locks.is_some())
        );
        if !profile.sites.is_empty() {
            out.push_str(&sites_table(&profile.sites, profile.wait_s).render());
        }
        out
    }

    fn legend(&self) -> &'static str {
        "where workers waited: kernel lock contentions of the workers in the runs' windows \
         (--profile locks), by site (the lock call ← its callers); wait = total of all workers; of all = share of all \
         waits; a site's time over the workers' time is what they lost there. With BPF a wait's site is sampled: its \
         task's stack was walked for one wait in N, the rest spread over the sites walked on the same lock (counts, \
         times, objects and holders are every wait's; --profile-every-stack walks each); held by = who held a sleeping lock as the waits began.\n"
    }

    fn html_series(&self, points: &[&Point], title: &str, widest: f64) -> Html {
        let locked: Vec<(&Point, LockProfile, f64)> =
            points.iter().filter_map(|p| p.lock_profile().map(|(l, s)| (*p, l, s))).collect();
        match locked.is_empty() {
            true => Html::new(),
            false => lock_bars(&locked, title, widest),
        }
    }

    fn attribute(&self, base: &Point, new: &Point, why: &mut Attribution) -> bool {
        let Some(((b, bs), (n, ns))) = base.lock_profile().zip(new.lock_profile()) else { return false };
        why.waiting = Some((bs, ns));
        why.locks = site_deltas(&b, bs, &n, ns);
        true
    }

    fn attributes(&self) -> bool {
        true
    }
}
