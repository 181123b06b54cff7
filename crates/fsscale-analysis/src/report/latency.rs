//! Terminal pieces for latency and external workloads: latency columns,
//! `replay`'s per-operation table, and the table of `command` drivers.

use std::collections::BTreeMap;

use crate::render::format::{format_ns, format_rate, format_sd};
use crate::render::table::{Align, Table};
use crate::results::Point;
use crate::stats::Summary;
use crate::vocab::Mode;
use crate::vocab::Share;

/// `replay`: every operation kind of `point`, all runs merged: count, share
/// of the ops, mean and p50/p99/max latency (dbench's per-op table).
pub(crate) fn replay_ops_table(point: &Point) -> Table {
    let mut table = Table::new(&[
        ("operation", Align::Left),
        ("count", Align::Right),
        ("share", Align::Right),
        ("mean", Align::Right),
        ("p50", Align::Right),
        ("p99", Align::Right),
        ("max", Align::Right),
    ]);
    let ops = point.merged_replay_ops();
    let total: u64 = ops.values().map(|h| h.count).sum();
    for (kind, h) in &ops {
        table.row(vec![
            kind.name().to_string(),
            h.count.to_string(),
            format!("{:.1}%", 100.0 * h.count as f64 / total.max(1) as f64),
            format_ns(h.mean_ns()),
            format_ns(h.quantile(0.5) as f64),
            format_ns(h.quantile(0.99) as f64),
            format_ns(h.max_ns as f64),
        ]);
    }
    table
}

/// `command` drivers: the figure at each worker count, its spread, and how it
/// compares with the fewest workers (direction-aware: for a smaller-is-better
/// figure the speedup is first / this).
pub(crate) fn driver_table(points: &[&Point], missing: impl Fn(&Point) -> String) -> Table {
    let name = points[0].metric.as_ref().map_or("value", |m| m.name.as_str());
    let mut table = Table::new(&[
        ("workers", Align::Right),
        (name, Align::Right),
        ("sd", Align::Right),
        ("speedup", Align::Right),
        ("efficiency", Align::Right),
        ("wall s", Align::Right),
        ("", Align::Left),
    ]);
    let mut series: BTreeMap<(Mode, Share), Vec<&Point>> = BTreeMap::new();
    for p in points.iter().filter(|p| p.summary.is_some()) {
        series.entry((p.mode, p.share)).or_default().push(p);
    }
    for mut list in series.into_values() {
        list.sort_by_key(|p| p.workers);
        let first = list[0];
        let base = first.summary.as_ref().map_or(f64::NAN, |s| s.ops_per_s.median);
        for point in list {
            let summary = point.summary.as_ref().expect("filtered");
            let value = summary.ops_per_s.median;
            let speedup = if point.higher_is_better() { value / base } else { base / value };
            let relative = speedup / (point.workers as f64 / first.workers as f64);
            let walls: Vec<f64> = point.runs.iter().map(|r| r.elapsed_s).collect();
            let wall = Summary::of(&walls).map_or(f64::NAN, |s| s.median);
            table.row(vec![
                point.workers.to_string(),
                format_rate(value),
                format_sd(&summary.ops_per_s),
                format!("{speedup:.2}"),
                format!("{:.1}%", 100.0 * relative),
                format!("{wall:.3}"),
                missing(point),
            ]);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::results::fixtures;
    use crate::results::MetricInfo;
    use crate::stats::histogram::Histogram;
    use crate::vocab::Workload;

    fn driver_point(workers: usize, values: &[f64], higher_is_better: bool) -> Point {
        let runs = values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut r = fixtures::run(i, &[1], 2.0);
                r.ops_per_s = v;
                r.ops_per_s_per_worker = v / workers as f64;
                r
            })
            .collect();
        let mut p = fixtures::point(Workload::Command, Share::Private, workers, runs);
        p.workers = workers;
        p.metric = Some(MetricInfo { name: if higher_is_better { "tps" } else { "time s" }.into(), higher_is_better });
        p
    }

    #[test]
    fn driver_tables_follow_the_metric_direction() {
        let tps = [driver_point(1, &[100.0, 102.0], true), driver_point(4, &[300.0, 306.0], true)];
        let refs: Vec<&Point> = tps.iter().collect();
        let expected = "  workers     tps    sd  speedup  efficiency  wall s
        1  101.00  1.4%     1.00      100.0%   2.000
        4  303.00  1.4%     3.00       75.0%   2.000
";
        assert_eq!(driver_table(&refs, |_| String::new()).render(), expected);
        let time = [driver_point(1, &[8.0], false), driver_point(2, &[5.0], false)];
        let refs: Vec<&Point> = time.iter().collect();
        let expected = "  workers  time s  sd  speedup  efficiency  wall s
        1    8.00   -     1.00      100.0%   2.000
        2    5.00   -     1.60       80.0%   2.000
";
        assert_eq!(driver_table(&refs, |_| String::new()).render(), expected);
    }

    #[test]
    fn replay_table_lists_each_kind_with_its_share() {
        let mut run = fixtures::run(0, &[4], 1.0);
        let mut ops = BTreeMap::new();
        ops.insert(crate::vocab::OpKind::NTCreateX, Histogram::of(&[1000, 3000]));
        ops.insert(crate::vocab::OpKind::ReadX, Histogram::of(&[500, 40_000]));
        run.replay_ops = Some(ops);
        let point = fixtures::point(Workload::Replay, Share::Private, 1, vec![run]);
        // 500 ns lies in the bucket [496, 511]: its upper bound is reported.
        let expected = "  operation  count  share    mean     p50     p99     max
  NTCreateX      2  50.0%  2.00µs  1.02µs  3.00µs  3.00µs
  ReadX          2  50.0%  20.2µs   511ns  40.0µs  40.0µs
";
        assert_eq!(replay_ops_table(&point).render(), expected);
    }

    #[test]
    fn latencies_read_naturally() {
        assert_eq!(format_ns(850.0), "850ns");
        assert_eq!(format_ns(3327.0), "3.33µs");
        assert_eq!(format_ns(27_647.0), "27.6µs");
        assert_eq!(format_ns(344_063.0), "344µs");
        assert_eq!(format_ns(4_990_068.0), "4.99ms");
        assert_eq!(format_ns(1.2e9), "1.20s");
    }
}
