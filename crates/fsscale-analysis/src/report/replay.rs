//! `replay` across its points: each operation's p99 at every client count
//! of a series (which operation's tail grows with the clients), and
//! whether the runs' windows covered a whole pass of the loadfile.

use std::collections::BTreeMap;

use super::markup::Html;
use super::table::{Align, Table};
use crate::html;
use crate::render::format::format_ns;
use crate::results::{Point, ReplaySettings, ResultsFile};
use crate::vocab::{OpKind, Workload};

/// Under replay's table: the per-operation table of each series' largest
/// point (the JSON has every point's), each series' p99 by clients, and
/// the warning of a window shorter than a pass.
pub(crate) fn text(points: &[&Point], replay: Option<&ReplaySettings>, duration_s: f64) -> String {
    let mut out = String::new();
    for (_, mut series) in crate::results::grouped(points.iter().map(|p| ((p.mode, p.share), *p))) {
        series.sort_by_key(|p| p.workers);
        let Some(largest) = series.last() else { continue };
        out.push_str(&format!(
            "  operations at {} ({}, {}), all runs:\n",
            crate::vocab::workers(largest.workers),
            largest.mode,
            largest.share
        ));
        out.push_str(&super::latency::replay_ops_table(largest).render());
        if let Some(table) = p99_by_clients(&series) {
            out.push_str(&format!(
                "  p99 of each operation by clients ({}, {}), all runs:\n",
                largest.mode, largest.share
            ));
            out.push_str(&table.render());
        }
    }
    if let Some(warning) = replay.and_then(|r| coverage_warning(points, r, duration_s)) {
        out.push_str(&format!("  note: {warning}\n"));
    }
    out
}

/// Each operation's p99 (all runs merged) at each point of one series,
/// fewest clients first: the columns' titles, and a row per operation.
fn p99_grid(series: &[&Point]) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let mut points: Vec<&Point> = series.to_vec();
    points.sort_by_key(|p| p.workers);
    let merged: Vec<BTreeMap<OpKind, crate::stats::histogram::Histogram>> =
        points.iter().map(|p| p.merged_replay_ops()).collect();
    let kinds: std::collections::BTreeSet<OpKind> = merged.iter().flat_map(|m| m.keys().copied()).collect();
    if kinds.is_empty() {
        return None;
    }
    let titles = points.iter().map(|p| format!("x{} p99", p.workers)).collect();
    let rows = kinds
        .into_iter()
        .map(|kind| {
            let mut row = vec![kind.name().to_string()];
            row.extend(
                merged.iter().map(|m| m.get(&kind).map_or("-".to_string(), |h| format_ns(h.quantile(0.99) as f64))),
            );
            row
        })
        .collect();
    Some((titles, rows))
}

/// [`p99_grid`] as a terminal table; `None` for a series of one point (its
/// per-op table says it all).
pub(crate) fn p99_by_clients(series: &[&Point]) -> Option<Table> {
    if series.len() < 2 {
        return None;
    }
    let (titles, rows) = p99_grid(series)?;
    let mut columns = vec![("operation", Align::Left)];
    columns.extend(titles.iter().map(|t| (t.as_str(), Align::Right)));
    let mut table = Table::new(&columns);
    for row in rows {
        table.row(row);
    }
    Some(table)
}

/// The report's replay section of one file: each series' p99 by clients,
/// and the warning of a window shorter than a pass.
pub(crate) fn html_section(out: &mut Html, label: &str, doc: &ResultsFile) {
    let points: Vec<&Point> = doc.points.iter().filter(|p| p.workload == Workload::Replay).collect();
    for (_, mut series) in crate::results::grouped(points.iter().map(|p| ((p.condition(), p.mode, p.share), *p))) {
        series.sort_by_key(|p| p.workers);
        let Some((titles, rows)) = p99_grid(&series) else { continue };
        let on = series[0].condition().map(|c| format!(" {c}")).unwrap_or_default();
        html!(
            out,
            "<p>{}replay {}/{}{}: each operation's p99, all runs, by clients.</p>\n<table class=\"replay\"><tr><th>operation</th>",
            label,
            series[0].mode,
            series[0].share,
            on
        );
        for title in &titles {
            html!(out, "<th>{}</th>", title);
        }
        out.push_static("</tr>\n");
        for row in &rows {
            html!(out, "<tr><td>{}</td>", row[0]);
            for cell in &row[1..] {
                html!(out, "<td class=\"num\">{}</td>", cell);
            }
            out.push_static("</tr>\n");
        }
        out.push_static("</table>\n");
    }
    if let Some(warning) =
        doc.settings.replay.as_ref().and_then(|r| coverage_warning(&points, r, doc.settings.duration_s))
    {
        html!(out, "<p class=\"legend\">{}Note: {}.</p>\n", label, warning);
    }
}

/// How much of one pass of the loadfile each client's window covered,
/// over every run of `points` (least, most), as fractions: a client plays
/// the trace from its start, so a window shorter than a pass measures the
/// trace's first part, not its mix.
fn coverage(points: &[&Point], replay: &ReplaySettings) -> Option<(f64, f64)> {
    let per_pass: u64 = replay.ops_per_pass.values().sum();
    if per_pass == 0 {
        return None;
    }
    let covered: Vec<f64> = points
        .iter()
        .flat_map(|p| p.runs.iter().map(move |r| r.ops as f64 / p.workers.max(1) as f64 / per_pass as f64))
        .collect();
    let least = covered.iter().copied().fold(f64::INFINITY, f64::min);
    let most = covered.iter().copied().fold(0.0, f64::max);
    covered.first().map(|_| (least, most))
}

/// A warning where some run's window covered less than one pass, with the
/// `--duration` that would cover one at the slowest point's rate.
pub(crate) fn coverage_warning(points: &[&Point], replay: &ReplaySettings, duration_s: f64) -> Option<String> {
    let (least, most) = coverage(points, replay)?;
    if least >= 1.0 {
        return None;
    }
    // The longest a pass took any client, at its run's rate.
    let per_pass: u64 = replay.ops_per_pass.values().sum();
    let pass_s = points
        .iter()
        .flat_map(|p| p.runs.iter().map(move |r| (p.workers, r)))
        .filter(|(_, r)| r.ops > 0 && r.elapsed_s > 0.0)
        .map(|(workers, r)| per_pass as f64 * workers.max(1) as f64 * r.elapsed_s / r.ops as f64)
        .fold(0.0, f64::max);
    let range = if (most - least).abs() < 0.005 {
        format!("{:.0}%", 100.0 * least)
    } else {
        format!("{:.0}–{:.0}%", 100.0 * least, 100.0 * most)
    };
    Some(format!(
        "a client's window covered {range} of one pass of the loadfile ({per_pass} operations), so runs below one pass \
         measured the trace's first part, not its mix; a pass took up to {pass_s:.1} s here (this run: --duration \
         {duration_s} s)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use crate::stats::histogram::Histogram;
    use crate::vocab::{Share, Workload};

    fn point(workers: usize, ops: u64, latencies: &[(OpKind, &[u64])]) -> Point {
        let mut run = fixtures::run(0, &vec![ops / workers as u64; workers], 0.5);
        run.replay_ops = Some(latencies.iter().map(|(k, ns)| (*k, Histogram::of(ns))).collect());
        fixtures::point(Workload::Replay, Share::Private, workers, vec![run])
    }

    #[test]
    fn each_operations_p99_is_shown_at_every_client_count() {
        let one = point(1, 100, &[(OpKind::NTCreateX, &[1000; 10]), (OpKind::ReadX, &[500; 10])]);
        let four = point(4, 400, &[(OpKind::NTCreateX, &[8000; 10])]);
        // Given out of order: columns by clients.
        let table = p99_by_clients(&[&four, &one]).unwrap().render();
        let expected = "  operation  x1 p99  x4 p99
  NTCreateX  1.00µs  8.00µs
  ReadX       500ns       -
";
        assert_eq!(table, expected);
        assert!(p99_by_clients(&[&one]).is_none(), "one point: its own table says it");
    }

    #[test]
    fn a_window_shorter_than_a_pass_is_said_with_the_duration_a_pass_needs() {
        let replay = |per_pass: u64| ReplaySettings {
            trace: "fileserver (built in)".into(),
            ops_per_pass: BTreeMap::from([(OpKind::NTCreateX, per_pass)]),
            bytes_per_pass: 0,
            sha256: None,
        };
        // 1 client made 100 ops and 4 clients 400 in 0.5 s: 100 ops each, of a pass of 1,000.
        let (one, four) = (point(1, 100, &[]), point(4, 400, &[]));
        let warning = coverage_warning(&[&one, &four], &replay(1000), 0.5).unwrap();
        assert!(
            warning.starts_with("a client's window covered 10% of one pass of the loadfile (1000 operations)"),
            "{warning}"
        );
        assert!(warning.contains("a pass took up to 5.0 s here (this run: --duration 0.5 s)"), "{warning}");
        // A pass of 100 ops: each client covered it once.
        assert_eq!(coverage_warning(&[&one, &four], &replay(100), 0.5), None);
        assert_eq!(coverage_warning(&[&one], &replay(0), 0.5), None);
    }
}
