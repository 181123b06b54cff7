//! Latency over a run's window (`--latency`, `replay`): each interval's p50
//! and p99, so a latency that grows through the window (a queue, a journal
//! filling, writeback starting) is seen, not averaged away.

use super::{series_of, Html};
use crate::html;
use crate::report::chart::{time_chart, TimeSeries};
use crate::results::{Point, ResultsFile, RunRecord};
use crate::vocab::Workload;

/// Points drawn in one chart: the largest worker counts of a series.
const POINTS_DRAWN: usize = 5;

/// One chart per file and series of `workload` whose runs carry interval latencies.
pub(super) fn latency_over_time(out: &mut Html, files: &[(String, ResultsFile)], workload: Workload) {
    let mut charts = Html::new();
    for (label, doc) in files {
        for ((condition, mode, share), points) in series_of(doc, workload) {
            let drawn: Vec<(&Point, &RunRecord)> = points.iter().filter_map(|p| Some((*p, median_run(p)?))).collect();
            let drawn = &drawn[drawn.len().saturating_sub(POINTS_DRAWN)..];
            if drawn.is_empty() {
                continue;
            }
            let mut series = Vec::new();
            for (point, run) in drawn {
                let Some(latency) = &run.timeline.latency else { continue };
                let intervals: Vec<(f64, u64, u64)> = latency.intervals(&run.timeline.at_s).collect();
                let at = crate::vocab::workers(point.workers);
                for (figure, dashed) in [("p50", false), ("p99", true)] {
                    series.push(TimeSeries {
                        label: format!("{figure}, {at} (run {})", run.run + 1),
                        points: intervals
                            .iter()
                            .map(|&(s, p50, p99)| (s, if dashed { p99 } else { p50 } as f64 / 1e3))
                            .collect(),
                        dashed,
                    });
                }
            }
            let on = condition.map(|c| format!(" {c}")).unwrap_or_default();
            let file = if files.len() > 1 { format!("{label}: ") } else { String::new() };
            let title = format!("{file}{workload} {mode}/{share}{on}: latency over the window");
            charts.push(&Html::from_plotters_svg(time_chart(&title, "latency (µs)", &series)));
        }
    }
    if !charts.is_empty() {
        html!(
            out,
            "<h3>Latency over the window</h3>\n<figure class=\"timeline\">{}<figcaption>Each sample interval's \
             p50 (solid) and p99 (dashed) of the ops that finished in it, for the run of median ops/s at each of \
             the {} largest worker counts; an interval without a finished op is left out. A line that climbs \
             through the window is a queue or a cache filling, which the run's one histogram averages \
             away.</figcaption></figure>\n",
            charts,
            POINTS_DRAWN
        );
    }
}

/// The run of median ops/s among those with interval latencies (the lower of two middles).
fn median_run(point: &Point) -> Option<&RunRecord> {
    let mut runs: Vec<&RunRecord> = point
        .runs
        .iter()
        .filter(|r| r.timeline.latency.as_ref().is_some_and(|l| l.ops.iter().any(|&n| n > 0)))
        .collect();
    runs.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    runs.get(runs.len().saturating_sub(1) / 2).copied()
}

#[cfg(test)]
mod tests {
    use crate::report::html::render_html;
    use crate::results::fixtures::{doc, point, run};
    use crate::results::IntervalLatency;
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
        let file = doc(3, 1.0, vec![point(Workload::Stat, Share::Private, 2, runs)]);
        let html = render_html(&[("a".to_string(), file.clone())], &[]);
        let section = &html[html.find("<h3>Latency over the window</h3>").expect("the section")..];
        let section = &section[..section.find("</figure>").unwrap()];
        assert!(section.contains("p50, 2 workers (run 2)") && section.contains("p99, 2 workers (run 2)"), "{section}");
        assert!(section.contains("stat process/private: latency over the window"), "{section}");
        // The p50 line: the three intervals with ops (the empty one left
        // out), rising (SVG's y grows downwards); the p99 line is dashed.
        let lines: Vec<Vec<i64>> = section
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
        plain.points[0].runs.iter_mut().for_each(|r| r.timeline.latency = None);
        assert!(!render_html(&[("a".to_string(), plain)], &[]).contains("Latency over the window"));
    }
}
