//! Latency over a run's window (`--latency`, `replay`, `--profile
//! latency`): each interval's p50 and p99, so a latency that grows through
//! the window (a queue, a journal filling, writeback starting) is seen, not
//! averaged away.

use super::{series_of, Html};
use crate::html;
use crate::report::chart::{time_chart, TimeSeries};
use crate::results::{IntervalLatency, Point, ResultsFile, RunRecord};
use crate::vocab::Workload;

/// Points drawn in one chart: the largest worker counts of a series.
const POINTS_DRAWN: usize = 5;

/// One chart per file and series of `workload` whose runs carry interval
/// latencies: the ops' own (`--latency`, `replay`), and the most made
/// system call's time in the kernel (`--profile latency`).
pub(super) fn latency_over_time(out: &mut Html, files: &[(String, ResultsFile)], workload: Workload) {
    let ops = charts(files, workload, "latency", |run| Some((String::new(), run.timeline.latency.as_ref()?)));
    let kernel = charts(files, workload, "time in the kernel", |run| {
        let profile = run.sections.kernel_latency.as_ref()?;
        let call = profile.calls.iter().find(|c| profile.intervals.contains_key(&c.call))?;
        Some((format!("{} ", call.call), &profile.intervals[&call.call]))
    });
    if ops.is_empty() && kernel.is_empty() {
        return;
    }
    html!(
        out,
        "<h3>Latency over the window</h3>\n<figure class=\"timeline\">{}{}<figcaption>Each sample interval's \
         p50 (solid) and p99 (dashed) of the ops that finished in it (and, with --profile latency, of the most \
         made system call's time in the kernel), for the run of median ops/s at each of the {} largest worker \
         counts; an interval without a finished op is left out. A line that climbs through the window is a queue \
         or a cache filling, which the run's one histogram averages away.</figcaption></figure>\n",
        ops,
        kernel,
        POINTS_DRAWN
    );
}

/// The charts of one figure over the window: `of` gives a run's intervals
/// and what to call them.
fn charts<'a>(
    files: &'a [(String, ResultsFile)],
    workload: Workload,
    figure: &str,
    of: impl Fn(&'a RunRecord) -> Option<(String, &'a IntervalLatency)>,
) -> Html {
    let mut charts = Html::new();
    for (label, doc) in files {
        for ((condition, mode, share), points) in series_of(doc, workload) {
            let mut series = Vec::new();
            let drawn: Vec<(&Point, &RunRecord)> =
                points.iter().filter_map(|p| Some((*p, median_run(p, |r| of(r).is_some())?))).collect();
            for (point, run) in &drawn[drawn.len().saturating_sub(POINTS_DRAWN)..] {
                let Some((name, latency)) = of(run) else { continue };
                let intervals: Vec<(f64, u64, u64)> = latency.intervals(&run.timeline.at_s).collect();
                let at = crate::vocab::workers(point.workers);
                for (quantile, dashed) in [("p50", false), ("p99", true)] {
                    series.push(TimeSeries {
                        label: format!("{name}{quantile}, {at} (run {})", run.run + 1),
                        points: intervals
                            .iter()
                            .map(|&(s, p50, p99)| (s, if dashed { p99 } else { p50 } as f64 / 1e3))
                            .collect(),
                        dashed,
                    });
                }
            }
            if series.is_empty() {
                continue;
            }
            let on = condition.map(|c| format!(" {c}")).unwrap_or_default();
            let file = if files.len() > 1 { format!("{label}: ") } else { String::new() };
            let title = format!("{file}{workload} {mode}/{share}{on}: {figure} over the window");
            charts.push(&Html::from_plotters_svg(time_chart(&title, &format!("{figure} (µs)"), &series)));
        }
    }
    charts
}

/// The run of median ops/s among those `has` intervals with ops (the lower of two middles).
fn median_run<'a>(point: &'a Point, has: impl Fn(&'a RunRecord) -> bool) -> Option<&'a RunRecord> {
    let mut runs: Vec<&RunRecord> = point.runs.iter().filter(|r| has(r)).collect();
    runs.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    runs.get(runs.len().saturating_sub(1) / 2).copied()
}

#[cfg(test)]
mod tests {
    use crate::report::html::render_html;
    use crate::results::fixtures::{doc, point, run};
    use crate::results::{CallLatency, IntervalLatency, KernelLatency};
    use crate::vocab::{Share, Workload};

    #[test]
    fn a_latency_that_climbs_through_the_window_is_drawn_for_the_median_run() {
        let mut runs: Vec<_> = (0..3).map(|i| run(i, &[1000 + 100 * i as u64], 1.0)).collect();
        for (i, r) in runs.iter_mut().enumerate() {
            r.timeline.at_s = vec![0.25, 0.5, 0.75, 1.0];
            // The median run (1,100 ops/s) climbs from 1 µs to 8 µs; one interval without ops.
            let p99 = if i == 1 { vec![2_000, 0, 8_000, 16_000] } else { vec![3_000; 4] };
            r.timeline.latency =
                Some(IntervalLatency { ops: vec![10, 0, 10, 10], p50_ns: vec![1_000, 0, 4_000, 8_000], p99_ns: p99 });
        }
        // The kernel's view of one run: its most made call's intervals.
        let intervals = IntervalLatency { ops: vec![5, 5, 5, 5], p50_ns: vec![300; 4], p99_ns: vec![900; 4] };
        runs[1].sections.kernel_latency = Some(KernelLatency {
            calls: vec![CallLatency { call: "newfstatat".into(), count: 20, ..Default::default() }],
            intervals: [("newfstatat".to_string(), intervals)].into(),
            ..Default::default()
        });
        let file = doc(3, 1.0, vec![point(Workload::Stat, Share::Private, 2, runs)]);
        let html = render_html(&[("a".to_string(), file.clone())], &[]);
        let section = &html[html.find("<h3>Latency over the window</h3>").expect("the section")..];
        let section = &section[..section.find("</figure>").unwrap()];
        assert!(section.contains("p50, 2 workers (run 2)") && section.contains("p99, 2 workers (run 2)"), "{section}");
        assert!(section.contains("stat process/private: latency over the window"), "{section}");
        assert!(section.contains("stat process/private: time in the kernel over the window"), "{section}");
        assert!(section.contains("newfstatat p99, 2 workers (run 2)"), "{section}");
        // The p50 line: the three intervals with ops (the empty one left
        // out), rising (SVG's y grows downwards); the p99 line is dashed.
        let ops_chart = &section[..section.find("</svg>").unwrap()];
        let lines: Vec<Vec<i64>> = ops_chart
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains("stroke=\"#1F77B4\" stroke-width=\"2\""))
            .map(|l| {
                let points = &l[l.find("points=\"").unwrap() + 8..];
                let points = &points[..points.find('"').unwrap()];
                points.split_whitespace().map(|xy| xy.split(',').nth(1).unwrap().parse().unwrap()).collect()
            })
            .collect();
        let solid: Vec<&Vec<i64>> = lines.iter().filter(|ys| ys.len() == 3).collect();
        assert_eq!(solid.len(), 1, "{lines:?}");
        assert!(solid[0][0] > solid[0][1] && solid[0][1] > solid[0][2], "{lines:?}");
        assert!(lines.iter().filter(|ys| ys.len() == 2).count() > 10, "dashes: {lines:?}");
        // Runs without interval latencies: no section.
        let mut plain = file;
        plain.points[0].runs.iter_mut().for_each(|r| {
            r.timeline.latency = None;
            r.sections.kernel_latency = None;
        });
        assert!(!render_html(&[("a".to_string(), plain)], &[]).contains("Latency over the window"));
    }
}
