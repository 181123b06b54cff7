//! The report's tables of a workload's points: their figures, as the
//! terminal's tables have them (from the one view of a point), and the
//! details behind them (fairness, scheduler shares, CPU, device I/O).

use super::super::markup::Html;
use super::super::table::Align;
use super::super::view::{self, Column, Layout, PointView};
use crate::results::{Point, ResultsFile, RunRecord, SchedShares};
use crate::vocab::Workload;
use crate::{html, html_of};

/// The figures of `workload`'s points in every file: the columns of the
/// terminal's table (loops or fixed work), a row per point.
pub(super) fn figures_table(out: &mut Html, files: &[(String, ResultsFile)], workload: Workload) {
    let mut labels: Vec<&str> = Vec::new();
    let mut views: Vec<PointView<'_>> = Vec::new();
    for (label, doc) in files {
        // A driver's figure has a table of its own in the terminal; the charts show it here.
        let points: Vec<&Point> =
            doc.points.iter().filter(|p| p.workload == workload && p.summary.is_some() && p.metric.is_none()).collect();
        let mut these = view::views_of(&points, doc);
        these.sort_by_key(|v| (v.point.condition(), v.point.mode, v.point.share, v.point.workers, v.point.rate));
        labels.extend(std::iter::repeat_n(label.as_str(), these.len()));
        views.extend(these);
    }
    if views.is_empty() {
        return;
    }
    let layout = match workload.is_fixed_work() {
        true => Layout::FixedWork,
        false if views.iter().any(|v| v.point.rate.is_some()) => Layout::OpenLoop,
        false => Layout::Loops,
    };
    let columns = layout.shown(&views);
    out.push_static("<h3>Figures</h3>\n<table class=\"figures\"><tr>");
    if files.len() > 1 {
        out.push_static("<th>file</th>");
    }
    for column in &columns {
        html!(out, "<th>{}</th>", column.title(&views));
    }
    out.push_static("</tr>\n");
    for (label, v) in labels.iter().zip(&views) {
        out.push_static("<tr>");
        if files.len() > 1 {
            html!(out, "<td>{}</td>", *label);
        }
        for column in &columns {
            let mut text = column.cell(v).shown();
            if let (Column::Share, Some(on)) = (column, v.point.condition()) {
                text = format!("{text} {on}");
            }
            match column.align() {
                Align::Right => html!(out, "<td class=\"num\">{}</td>", text),
                Align::Left => html!(out, "<td>{}</td>", text),
            }
        }
        out.push_static("</tr>\n");
    }
    out.push_static("</table>\n");
}

/// Fairness, CPU breakdown and device I/O per point; a column shows only
/// where the workload has it (a driver has no per-worker figures, a
/// directory no device of its own).
pub(super) fn detail_table(out: &mut Html, files: &[(String, ResultsFile)], workload: Workload) {
    let points = || {
        files.iter().flat_map(|(label, doc)| {
            doc.points.iter().filter(|p| p.workload == workload && !p.runs.is_empty()).map(move |p| (label, p))
        })
    };
    let has = Details {
        files: files.len(),
        fair: points().any(|(_, p)| p.metric.is_none()),
        device: points().any(|(_, p)| p.runs.iter().any(|r| r.device_io.is_some())),
        sched: points().any(|(_, p)| p.runs.iter().any(|r| !r.sched.is_empty())),
        nodes: points().any(|(_, p)| p.runs.iter().any(|r| r.nodes.is_some())),
        per_cpu: points().any(|(_, p)| p.summary.as_ref().is_some_and(|s| s.ops_per_cpu_s.is_some())),
    };
    let Details { fair, device, sched, nodes, per_cpu, .. } = has;
    let heading = match (fair, device) {
        (true, true) => "Fairness, CPU and device I/O",
        (true, false) => "Fairness and CPU",
        (false, true) => "CPU and device I/O",
        (false, false) => "CPU",
    };
    html!(
        out,
        "<h3>{}</h3>\n<p class=\"legend\">CPU (whole machine, during the window):\
         <span class=\"user\"></span>user<span class=\"sys\"></span>system<span class=\"iowait\"></span>iowait\
         <span class=\"irq\"></span>irq+softirq<span class=\"idle\"></span>idle</p>\n<table class=\"details\"><tr>",
        heading
    );
    if has.files > 1 {
        out.push_static("<th>file</th>");
    }
    out.push_static("<th>workers</th><th>mode</th><th>share</th>");
    if fair {
        out.push_static("<th>per worker, middle run: ops, or completion (min / median / max)</th>");
    }
    if sched {
        out.push_static("<th>per worker, middle run: runnable but waiting / asleep (min / median / max)</th>");
    }
    if nodes {
        out.push_static("<th>per node (MPI), median run</th>");
    }
    if per_cpu {
        out.push_static("<th>ops per worker CPU-second (median of runs)</th>");
    }
    out.push_static("<th>CPU</th>");
    if device {
        out.push_static("<th>device written</th><th>device busy</th>");
    }
    out.push_static("</tr>\n");
    for (label, p) in points() {
        detail_row(out, has, label, p);
    }
    out.push_static("</table>\n");
}

/// Which of the details any point of the table has.
#[derive(Clone, Copy)]
struct Details {
    files: usize,
    fair: bool,
    device: bool,
    sched: bool,
    nodes: bool,
    per_cpu: bool,
}

/// A point's row of the details table: its middle run's fairness,
/// scheduler shares, nodes, CPU and device I/O.
fn detail_row(out: &mut Html, has: Details, label: &str, p: &Point) {
    let Details { fair, device, sched, nodes, per_cpu, .. } = has;
    let run = &p.runs[p.runs.len() / 2];
    // Fixed work: every worker does the same job, so fairness is in the completion times.
    let fairness = match &run.completion_s {
        Some(times) => min_median_max(times.clone())
            .map_or_else(|| "-".into(), |(a, m, b)| format!("done after {a:.3} / {m:.3} / {b:.3} s")),
        None => min_median_max(run.per_worker_ops.clone())
            .map_or_else(|| "-".into(), |(a, m, b)| format!("{a} / {m} / {b}")),
    };
    let c = run.system_cpu;
    let pct = |x: f64| format!("{:.1}", 100.0 * x);
    let bar = html_of!(
        "<div class=\"bar\" title=\"user {}%, system {}%, iowait {}%, idle {}%\"><span class=\"user\" style=\"width:{}%\"></span>\
         <span class=\"sys\" style=\"width:{}%\"></span><span class=\"iowait\" style=\"width:{}%\"></span>\
         <span class=\"irq\" style=\"width:{}%\"></span><span class=\"idle\" style=\"width:{}%\"></span></div>",
        pct(c.user + c.nice),
        pct(c.system),
        pct(c.iowait),
        pct(c.idle),
        pct(c.user + c.nice),
        pct(c.system),
        pct(c.iowait),
        pct(c.irq + c.softirq),
        pct(c.idle + c.steal)
    );
    let (written, busy) = match run.device_io {
        Some(io) => {
            (format!("{:.1} MB in {} writes", io.write_bytes as f64 / 1e6, io.write_ios), format!("{} ms", io.io_ms))
        }
        None => ("-".into(), "-".into()),
    };
    out.push_static("<tr>");
    if has.files > 1 {
        html!(out, "<td>{}</td>", label);
    }
    let on = p.condition().map(|c| format!(" {c}")).unwrap_or_default();
    html!(out, "<td class=\"num\">{}</td><td>{}</td><td>{}{}</td>", p.workers, p.mode, p.share, on);
    if fair {
        html!(out, "<td class=\"num\">{}</td>", fairness);
    }
    if sched {
        html!(out, "<td class=\"num\">{}</td>", worker_sched(run));
    }
    if nodes {
        let text = super::super::ranks::median_run(p).and_then(|r| super::super::ranks::nodes_of(p, r));
        html!(out, "<td>{}</td>", text.as_deref().unwrap_or("-"));
    }
    if per_cpu {
        let median = p.summary.as_ref().and_then(|s| s.ops_per_cpu_s.as_ref()).map(|s| s.median);
        html!(out, "<td class=\"num\">{}</td>", median.map_or("-".into(), crate::report::format::format_rate));
    }
    html!(out, "<td>{}</td>", bar);
    if device {
        html!(out, "<td class=\"num\">{}</td><td class=\"num\">{}</td>", written, busy);
    }
    out.push_static("</tr>\n");
}

/// Each worker's share of its window runnable but not running, and asleep,
/// as min / median / max over the workers of one run.
fn worker_sched(run: &RunRecord) -> String {
    let shares = run.worker_sched_shares();
    let spread = |share: fn(&SchedShares) -> f64| {
        min_median_max(shares.iter().map(share).collect())
            .map_or_else(|| "-".into(), |(a, m, b)| format!("{:.0} / {:.0} / {:.0}%", 100.0 * a, 100.0 * m, 100.0 * b))
    };
    format!("{} waiting; {} asleep", spread(|s| s.runqueue), spread(|s| s.asleep))
}

/// The smallest, middle and largest of `values` (the workers of one run); `None` when empty.
fn min_median_max<T: Copy + PartialOrd>(mut values: Vec<T>) -> Option<(T, T, T)> {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    Some((*values.first()?, *values.get(values.len() / 2)?, *values.last()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{doc, point, run};
    use crate::vocab::Share;

    #[test]
    fn the_figures_table_has_the_terminal_tables_columns_and_a_file_column_for_several() {
        let a = doc(
            2,
            1.0,
            vec![
                point(Workload::Stat, Share::Private, 1, vec![run(0, &[100], 1.0), run(1, &[120], 1.0)]),
                point(Workload::Stat, Share::Private, 2, vec![run(0, &[90, 90], 1.0), run(1, &[110, 110], 1.0)]),
            ],
        );
        let mut out = Html::new();
        figures_table(&mut out, &[("a".into(), a.clone())], Workload::Stat);
        let html = out.into_string();
        assert!(html.contains("<tr><th>workers</th><th>mode</th><th>share</th><th>ops/s</th><th>sd</th>"), "{html}");
        assert!(html.contains("<td class=\"num\">200.00</td>"), "{html}");
        assert!(html.contains("<td class=\"num\">90.9%</td>"), "{html}");
        assert_eq!(html.matches("<tr>").count(), 3, "a heading and a row per point");
        let mut out = Html::new();
        figures_table(&mut out, &[("a".into(), a.clone()), ("<b>".into(), a)], Workload::Stat);
        let html = out.into_string();
        assert!(html.contains("<tr><th>file</th><th>workers</th>") && html.contains("<td>&lt;b&gt;</td>"), "{html}");
        let mut out = Html::new();
        figures_table(&mut out, &[], Workload::Stat);
        assert_eq!(out.into_string(), "");
    }
}
