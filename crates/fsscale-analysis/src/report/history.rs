//! The history in the terminal: a series as a table with a sparkline
//! (`history show`), and its steps as the kernel test robot's mails read,
//! with their cause (`history changes`).

use super::format::{format_pct, format_rate};
use super::table::{Align, Table};
use crate::history::{Change, ChangesFound, SeriesChanges, SeriesFigure, Since};

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
    let other = match s.other_figure {
        Some(SeriesFigure::PerCpu) => ", ops/cpu-s searched too",
        Some(SeriesFigure::Rate) => ", its ops/s searched too",
        None => "",
    };
    format!("{} on {} ({}, {} results{other})", s.point, s.host, s.unit, s.values.len())
}

/// Where a series is too short for a step to be called: "5 results
/// searched: a step needs at least 3 on each side (6 in all)".
fn floor(s: &SeriesChanges) -> Option<String> {
    (s.searched < 2 * s.min_segment).then(|| {
        format!(
            "{} result{} searched: a step needs at least {} on each side ({} in all)",
            s.searched,
            if s.searched == 1 { "" } else { "s" },
            s.min_segment,
            2 * s.min_segment
        )
    })
}

/// The unit of a figure of `s`.
fn unit_of(s: &SeriesChanges, figure: SeriesFigure) -> String {
    match figure == s.figure {
        true => s.unit.clone(),
        false => crate::history::changes_unit(&s.entries, figure),
    }
}

/// `history show`: each series as a sparkline, then a row per result, the
/// first result after each step marked with it.
pub fn render_series(found: &ChangesFound) -> String {
    let all = &found.series;
    if all.is_empty() {
        return "no series in the history matches; `fsscale history add FILE...` records results, `fsscale run --history` records a run\n".into();
    }
    let mut out = String::new();
    for s in all {
        out.push_str(&heading(s));
        out.push('\n');
        if let Some(floor) = floor(s) {
            out.push_str(&format!("  {floor}\n"));
        }
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
            for c in s.changes.iter().filter(|c| c.index == i) {
                let figure = if c.figure == s.figure { String::new() } else { format!("{} ", unit_of(s, c.figure)) };
                marks.push(format!("{figure}step {} from here", format_pct(c.pct(), true)));
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
/// ratio and interval, what the other figure did, its noise, and why from
/// the profiles; with `since`, which steps are new.
pub fn render_changes(found: &ChangesFound, confidence: f64, since: Option<&Since>) -> String {
    let all = &found.series;
    let mut out = String::new();
    for s in all.iter().filter(|s| !s.changes.is_empty()) {
        for (k, c) in s.changes.iter().enumerate() {
            let mut lines = change_lines(s, k, c, confidence);
            if since.is_some_and(|since| since.is_new(s, c)) {
                lines[0].push_str(" [new]");
            }
            out.push_str(&lines.join("\n"));
            out.push_str("\n\n");
        }
    }
    let steps: usize = all.iter().map(|s| s.changes.len()).sum();
    let worse = all.iter().flat_map(|s| &s.changes).filter(|c| !c.improved).count();
    let series = |n: usize| format!("{n} series");
    out.push_str(&match steps {
        0 => format!("no step found in {}", series(all.len())),
        n => format!(
            "{n} step{} in {}: {worse} worse, {} better",
            if n == 1 { "" } else { "s" },
            series(all.len()),
            n - worse
        ),
    });
    let rate = (found.significance * 100.0 * 1e6).round() / 1e6;
    if found.searched > 0 {
        let searched = series(found.searched);
        out.push_str(&format!("; held to a false discovery rate of {rate}% across the {searched} searched"));
    }
    let short: Vec<&SeriesChanges> = all.iter().filter(|s| floor(s).is_some()).collect();
    if let Some(first) = short.first() {
        out.push_str(&format!(
            "; {} too short to hold a step (a step needs at least {} results on each side)",
            series(short.len()),
            first.min_segment
        ));
    }
    out.push('\n');
    if let Some(since) = since {
        let new = since.worse_steps(found);
        out.push_str(&match new.len() {
            0 => format!("no step to worse since {}\n", crate::escape::for_terminal(&since.asked)),
            n => format!(
                "{n} step{} to worse since {}\n",
                if n == 1 { "" } else { "s" },
                crate::escape::for_terminal(&since.asked)
            ),
        });
    }
    out.push_str("(`fsscale history show` lists each series)\n");
    out
}

/// `history changes --format json`: what was found, in the documented form
/// (docs/HISTORY-JSON.md), with the steps new since `since`.
pub fn changes_json(found: &ChangesFound, since: Option<&Since>) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(found)?;
    if let (Some(since), Some(object)) = (since, value.as_object_mut()) {
        object.insert("since".into(), serde_json::to_value(since)?);
        let new: Vec<serde_json::Value> = since
            .worse(found)
            .map(|(s, c)| {
                let first = &s.entries[c.index];
                serde_json::json!({
                    "host": s.host, "point": s.point, "index": c.index, "figure": c.figure,
                    "pct": c.pct(), "rev": first.rev, "started_at": first.started_at,
                })
            })
            .collect();
        object.insert("worse_since".into(), serde_json::Value::Array(new));
    }
    Ok(crate::escape::json_pretty(&value)?)
}

pub(crate) fn change_lines(s: &SeriesChanges, k: usize, c: &Change, confidence: f64) -> Vec<String> {
    let first = &s.entries[c.index];
    let unit = &unit_of(s, c.figure);
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
            "  change: {} {}, p = {:.4} (t on the results, held to their runs' spread)",
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
    if let Some(o) = &c.other {
        let other_unit = unit_of(s, o.figure);
        let moved = format_pct((o.ratio - 1.0) * 100.0, true);
        lines.push(match (o.stepped, o.figure) {
            (true, _) => format!("  {other_unit} stepped there too ({moved})"),
            (false, SeriesFigure::PerCpu) => format!(
                "  {other_unit} held ({moved}): the time the workers got changed, not what an op costs; other work on the machine? ({} of {} results after it were busy)",
                c.after.busy, c.after.results
            ),
            (false, SeriesFigure::Rate) => format!(
                "  {other_unit} held ({moved}): an op costs {} CPU, and idle CPU made up for it",
                if c.improved { "less" } else { "more" }
            ),
        });
    }
    if c.before.noisy + c.after.noisy > 0 {
        lines.push(format!(
            "  noise: {} of {} results before and {} of {} after are marked (drift, two modes or a busy machine)",
            c.before.noisy, c.before.results, c.after.noisy, c.after.results
        ));
    }
    lines.extend(moved_lines(c));
    lines.extend(why_lines(s, k, c));
    lines
}

/// The stats that stepped with `c`, as an indented table under a heading; none where none did.
fn moved_lines(c: &Change) -> Vec<String> {
    if c.moved.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["  stats that stepped with it (the runs of up to 3 results on each side, tested as compare \
                          tests a point's, the false discovery rate held over the stats at the search's):"
        .to_string()];
    lines.extend(super::moved::table_lines(&c.moved, "    "));
    lines
}

/// Why step `k` (`c`) of `s` happened, from the profiles both sides recorded, or what to record.
fn why_lines(s: &SeriesChanges, k: usize, c: &Change) -> Vec<String> {
    let mut lines = Vec::new();
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
pub fn series_json(found: &ChangesFound) -> serde_json::Value {
    let series = found.series.iter().map(|s| {
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
                    "step_pct": s.changes.iter().find(|c| c.index == i && c.figure == s.figure).map(|c| c.pct()),
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
    fn a_step_lists_the_stats_that_stepped_under_it() {
        use crate::history::Level;
        let level = Level { mean: 100.0, results: 4, noisy: 0, busy: 0 };
        let moved = crate::compare::MovedStat {
            stat: "vmstat.pgfault".into(),
            per: "s".into(),
            base_mean: 1000.0,
            base_sd_pct: 1.0,
            new_mean: 5000.0,
            new_sd_pct: 1.0,
            change_pct: Some(400.0),
            q_value: 0.001,
        };
        let mut change = Change {
            index: 4,
            before: level.clone(),
            after: Level { mean: 80.0, ..level },
            ratio: 0.8,
            interval: None,
            p_value: 0.001,
            figure: SeriesFigure::Rate,
            other: None,
            unplaced: 0,
            improved: false,
            attribution: None,
            moved: vec![moved],
        };
        let lines = moved_lines(&change);
        assert!(lines[0].starts_with("  stats that stepped with it (the runs of up to 3 results"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("+400.0%") && l.ends_with("vmstat.pgfault per s")), "{lines:?}");
        change.moved.clear();
        assert!(moved_lines(&change).is_empty());
    }

    #[test]
    fn a_small_step_shows_in_the_sparkline() {
        assert_eq!(sparkline_between(&[100.0, 100.0, 95.0, 95.0]), "██▁▁");
        assert_eq!(sparkline_between(&[3.0, 3.0]), "▄▄");
        assert_eq!(sparkline_between(&[]), "");
    }
}
