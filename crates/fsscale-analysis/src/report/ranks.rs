//! Under MPI: what each node's ranks did at a point, and how evenly the
//! ranks shared the work (the terminal's lines; the report's column).

use std::collections::BTreeMap;

use super::format::format_rate;
use crate::results::{Point, RunRecord};
use crate::vocab::Mode;
use crate::vocab::Share;

/// The run a point's per-node figures come from: its median by ops/s.
pub(super) fn median_run(point: &Point) -> Option<&RunRecord> {
    let mut runs: Vec<&RunRecord> = point.runs.iter().collect();
    runs.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    runs.get(runs.len() / 2).copied()
}

/// `vm: 4 ranks, 1147048 ops/s; b: ...` of one run of `point`.
pub(super) fn nodes_of(point: &Point, run: &RunRecord) -> Option<String> {
    let unit = if point.workload.is_fixed_work() { "entries/s" } else { "ops/s" };
    let nodes = run.nodes.as_ref()?;
    Some(
        nodes
            .iter()
            .map(|n| {
                let s = if n.ranks == 1 { "" } else { "s" };
                format!("{}: {} rank{s}, {} {unit}", n.host, n.ranks, format_rate(n.ops_per_s))
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// Per series (mode, share), the largest point's nodes and the spread of
/// its ranks' work: one line each, for points that ran on ranks.
pub(super) fn lines(points: &[&Point]) -> String {
    let mut largest: BTreeMap<(Mode, Share), &Point> = BTreeMap::new();
    for p in points.iter().filter(|p| p.ranks.is_some()) {
        let entry = largest.entry((p.mode, p.share)).or_insert(p);
        if p.workers > entry.workers {
            *entry = p;
        }
    }
    let mut out = String::new();
    for p in largest.values() {
        let Some(run) = median_run(p) else { continue };
        let Some(nodes) = nodes_of(p, run) else { continue };
        let mut work = run.per_worker_ops.clone();
        work.sort_unstable();
        let (min, median, max) = (work[0], work[work.len() / 2], work[work.len() - 1]);
        out.push_str(&format!(
            "  ranks at {} ({}): {nodes}; per rank {min} / {median} / {max} {} (min / median / max)\n",
            crate::vocab::workers(p.workers),
            p.share,
            if p.workload.is_fixed_work() { "entries" } else { "ops" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{point, run};
    use crate::results::NodeOps;
    use crate::vocab::Workload;

    #[test]
    fn the_largest_points_nodes_and_rank_spread() {
        let mut r = run(0, &[100, 300, 200, 400], 1.0);
        r.nodes = Some(vec![
            NodeOps { host: "a".into(), ranks: 2, ops: 300, ops_per_s: 300.0 },
            NodeOps { host: "b".into(), ranks: 2, ops: 700, ops_per_s: 700.0 },
        ]);
        let mut four = point(Workload::Stat, Share::Private, 4, vec![r]);
        four.ranks = Some(vec![0, 2, 1, 3]);
        let mut one = point(Workload::Stat, Share::Private, 1, vec![run(0, &[90], 1.0)]);
        one.ranks = Some(vec![0]);
        assert_eq!(
            lines(&[&one, &four]),
            "  ranks at 4 workers (private): a: 2 ranks, 300.00 ops/s; b: 2 ranks, 700.00 ops/s; \
             per rank 100 / 300 / 400 ops (min / median / max)\n"
        );
        // One machine: no such lines.
        let plain = point(Workload::Stat, Share::Private, 4, vec![run(0, &[1, 2, 3, 4], 1.0)]);
        assert_eq!(lines(&[&plain]), "");
    }
}
