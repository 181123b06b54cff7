//! The history in the terminal: a series as a table with a sparkline
//! (`history show`), and its steps as the kernel test robot's mails read,
//! with their cause (`history changes`).

use super::format::{format_pct, format_rate};
use super::table::{Align, Table};
use crate::history::{Change, SeriesChanges, SeriesFigure};

/// Eight heights, the series' own minimum to its maximum: a 5% step shows.
pub fn sparkline_between(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
    values
        .iter()
        .map(|&v| match hi > lo {
            true => BARS[(((v - lo) / (hi - lo)) * 7.0).round().clamp(0.0, 7.0) as usize],
            false => BARS[3],
        })
        .collect()
}

fn heading(s: &SeriesChanges) -> String {
    let why = match s.figure {
        SeriesFigure::PerCpu => ", judged per CPU-second: the machine was busy in some results",
        SeriesFigure::Rate => "",
    };
    format!("{} on {} ({}, {} results{why})", s.point, s.host, s.unit, s.values.len())
}

/// `history show`: each series as a sparkline, then a row per result, the
/// first result after each step marked with it.
pub fn render_series(all: &[SeriesChanges]) -> String {
    if all.is_empty() {
        return "no series in the history matches; `fsscale history add FILE...` records results, `fsscale run --history` records a run\n".into();
    }
    let mut out = String::new();
    for s in all {
        out.push_str(&heading(s));
        out.push('\n');
        out.push_str(&format!("  {}\n", sparkline_between(&s.values)));
        let unit = &s.unit;
        // A label column only where some result has one.
        let labels = s.entries.iter().any(|e| e.label.is_some());
        let mut columns = vec![("#", Align::Right), ("started", Align::Left), ("rev", Align::Left)];
        if labels {
            columns.push(("label", Align::Left));
        }
        columns.extend([
            ("kernel", Align::Left),
            (unit.as_str(), Align::Right),
            ("runs", Align::Right),
            ("marks", Align::Left),
        ]);
        let mut table = Table::new(&columns).indented(2);
        let outlying = &s.outliers;
        for (i, (e, v)) in s.entries.iter().zip(&s.values).enumerate() {
            let mut marks: Vec<String> = Vec::new();
            if let Some(c) = s.changes.iter().find(|c| c.index == i) {
                marks.push(format!("step {} from here", format_pct(c.pct(), true)));
            }
            if outlying[i] {
                marks.push("~outlier (left out)".into());
            }
            marks.extend(e.figure.noise.iter().map(|n| format!("!{n}")));
            let mut cells = vec![(i + 1).to_string(), e.started_at.clone(), e.rev.clone().unwrap_or_default()];
            if labels {
                cells.push(e.label.clone().unwrap_or_default());
            }
            cells.extend([e.kernel.clone(), format_rate(*v), e.figure.runs.to_string(), marks.join(", ")]);
            table.row(cells);
        }
        out.push_str(&table.render());
        out.push('\n');
    }
    out
}

/// `history changes`: every step, as "−5.1% ops/s at REV", its levels,
/// ratio and interval, its noise, and why from the profiles.
pub fn render_changes(all: &[SeriesChanges], confidence: f64) -> String {
    let mut out = String::new();
    let found: usize = all.iter().map(|s| s.changes.len()).sum();
    for s in all.iter().filter(|s| !s.changes.is_empty()) {
        for (k, c) in s.changes.iter().enumerate() {
            out.push_str(&change_lines(s, k, c, confidence).join("\n"));
            out.push_str("\n\n");
        }
    }
    let worse = all.iter().flat_map(|s| &s.changes).filter(|c| !c.improved).count();
    out.push_str(&match found {
        0 => format!("no step found in {} series", all.len()),
        n => format!(
            "{n} step{} in {} series: {worse} worse, {} better",
            if n == 1 { "" } else { "s" },
            all.len(),
            n - worse
        ),
    });
    out.push_str(" (E-Divisive means, permutation test; `fsscale history show` lists each series)\n");
    out
}

pub(crate) fn change_lines(s: &SeriesChanges, k: usize, c: &Change, confidence: f64) -> Vec<String> {
    let first = &s.entries[c.index];
    let unit = &s.unit;
    let one_line = crate::escape::for_terminal;
    let mut where_ = vec![format!("rev {}", one_line(first.rev.as_deref().unwrap_or("(none)")))];
    if let Some(label) = &first.label {
        where_.push(format!("label {}", one_line(label)));
    }
    where_.push(format!("kernel {}", first.kernel));
    where_.push(first.started_at.clone());
    let mut lines = vec![
        format!(
            "{}: {} {unit} ({}) from result {} on: {}",
            s.point,
            format_pct(c.pct(), true),
            if c.improved { "better" } else { "worse" },
            c.index + 1,
            where_.join(", ")
        ),
        format!(
            "  host {}; step {} of the series{}",
            s.host,
            k + 1,
            match c.unplaced {
                0 => String::new(),
                1 => format!("; result {}, an outlier, may be on either side", c.index),
                n => format!("; results {}–{}, outliers, may be on either side", c.index + 1 - n, c.index),
            }
        ),
        format!(
            "  before: {} {unit} over {} results; after: {} {unit} over {} results",
            format_rate(c.before.mean),
            c.before.results,
            format_rate(c.after.mean),
            c.after.results
        ),
        format!(
            "  change: {} {}, p = {:.3} (permutations)",
            format_pct(c.pct(), true),
            match c.interval {
                Some((lo, hi)) => format!(
                    "[{}, {}] ({:.0}% interval of the ratio)",
                    format_pct((lo - 1.0) * 100.0, true),
                    format_pct((hi - 1.0) * 100.0, true),
                    confidence * 100.0
                ),
                None => "(no interval: a side has one result)".into(),
            },
            c.p_value
        ),
    ];
    if c.before.noisy + c.after.noisy > 0 {
        lines.push(format!(
            "  noise: {} of {} results before and {} of {} after are marked (drift, two modes or a busy machine)",
            c.before.noisy, c.before.results, c.after.noisy, c.after.results
        ));
    }
    match &c.attribution {
        Some(a) => {
            let heading = format!(
                "  why, from the profiles of {} and {} (before → after; change in points of percent):",
                a.before, a.after
            );
            lines.extend(super::attribution::attribution_lines(&a.attribution, heading).into_iter().map(|l| {
                if l.starts_with("  why") {
                    l
                } else {
                    format!("  {l}")
                }
            }));
            if a.attribution.stacks.is_some() || a.attribution.sleep_stacks.is_some() {
                lines.push(format!(
                    "  differential flame graphs: fsscale report --history -o history.html (step {} of {} on {})",
                    k + 1,
                    s.point,
                    s.host
                ));
            }
        }
        None => lines.push(
            "  why: no profile on both sides; runs with --profile locks,offcpu,cpu record where the workers wait and spend CPU"
                .into(),
        ),
    }
    lines
}

/// `history show --format json`: each series with its results, the steps marked on them.
pub fn series_json(all: &[SeriesChanges]) -> serde_json::Value {
    let series = all.iter().map(|s| {
        let outlying = &s.outliers;
        let results: Vec<serde_json::Value> = s
            .entries
            .iter()
            .zip(&s.values)
            .enumerate()
            .map(|(i, (e, v))| {
                serde_json::json!({
                    "run_id": e.run_id,
                    "rev": e.rev,
                    "label": e.label,
                    "kernel": e.kernel,
                    "started_at": e.started_at,
                    "value": v,
                    "runs": e.figure.runs,
                    "noise": e.figure.noise,
                    "outlier": outlying[i],
                    "step_pct": s.changes.iter().find(|c| c.index == i).map(|c| c.pct()),
                })
            })
            .collect();
        serde_json::json!({ "host": s.host, "point": s.point, "figure": s.figure, "unit": s.unit, "results": results })
    });
    serde_json::Value::Array(series.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_step_shows_in_the_sparkline() {
        assert_eq!(sparkline_between(&[100.0, 100.0, 95.0, 95.0]), "██▁▁");
        assert_eq!(sparkline_between(&[3.0, 3.0]), "▄▄");
        assert_eq!(sparkline_between(&[]), "");
    }
}
