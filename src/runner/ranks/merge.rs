//! The ranks' records of one run made into the run's record, as one
//! machine's coordinator would have written it for all workers.

use std::collections::BTreeMap;

use crate::results::{NodeOps, RunNoise, RunRecord, Timeline, Writeback};
use crate::stats::histogram::Histogram;
use crate::vocab::Choice;
use crate::vocab::OpKind;

/// `records[i]` is worker i's (its rank's) record of the run, `hosts[i]` its
/// node. Fixed work
/// (`completion_s` present) takes the slowest worker's time, as on one
/// machine; a fixed-time run's rate is the sum of each rank's rate over its
/// own window (the windows open together and last the same), its time the
/// longest window.
pub(crate) fn merge(mut records: Vec<RunRecord>, hosts: &[&str], clock_hz: f64) -> Option<RunRecord> {
    discount_neighbours(&mut records, hosts, clock_hz);
    let first = records.first()?.clone();
    let workers = records.len();
    let ops: u64 = records.iter().map(|r| r.ops).sum();
    let elapsed_s = records.iter().map(|r| r.elapsed_s).fold(0.0, f64::max);
    let fixed_work = records.iter().all(|r| r.completion_s.is_some());
    let ops_per_s = if fixed_work {
        ops as f64 / elapsed_s.max(1e-9)
    } else {
        records.iter().map(|r| r.ops as f64 / r.elapsed_s.max(1e-9)).sum()
    };
    let mut worker_cpu = crate::results::WorkerCpu::default();
    for r in &records {
        worker_cpu.user_s += r.worker_cpu.user_s;
        worker_cpu.sys_s += r.worker_cpu.sys_s;
    }
    let all = |f: &dyn Fn(&RunRecord) -> bool| records.iter().all(f);
    let nodes = per_node(&records, hosts, fixed_work, elapsed_s);
    let mut merged = RunRecord {
        run: first.run,
        position: None,
        started_at: None,
        setup_stderr: None,
        ops,
        elapsed_s,
        ops_per_s,
        ops_per_s_per_worker: ops_per_s / workers as f64,
        per_worker_ops: records.iter().flat_map(|r| r.per_worker_ops.iter().copied()).collect(),
        ops_made: records.iter().map(|r| r.ops_made).sum(),
        pinned_cpus: all(&|r| r.pinned_cpus.is_some())
            .then(|| records.iter().flat_map(|r| r.pinned_cpus.clone().unwrap_or_default()).collect()),
        worker_cpu,
        // The machine figures are rank 0's node's.
        system_cpu: first.system_cpu,
        system_stats: first.system_stats.clone(),
        timeline: merge_timelines(records.iter().map(|r| &r.timeline)),
        completion_s: fixed_work
            .then(|| records.iter().flat_map(|r| r.completion_s.clone().unwrap_or_default()).collect()),
        bytes: records.iter().any(|r| r.bytes.is_some()).then(|| records.iter().filter_map(|r| r.bytes).sum()),
        device_io: None,
        writeback: records
            .iter()
            .filter_map(|r| r.writeback)
            .reduce(|a, b| Writeback { sync_s: a.sync_s.max(b.sync_s), device_io: None }),
        // The busiest node's noise: a run is as disturbed as its most disturbed rank.
        noise: records.iter().filter_map(|r| r.noise).reduce(|a, b| RunNoise {
            others_cpu: a.others_cpu.max(b.others_cpu),
            kernel_threads_cpu: a.kernel_threads_cpu.max(b.kernel_threads_cpu),
            load_1m: a.load_1m.max(b.load_1m),
            ticks: a.ticks,
            // The most throttled rank's.
            throttled: [a.throttled, b.throttled]
                .into_iter()
                .flatten()
                .max_by(|x, y| x.throttled_s.total_cmp(&y.throttled_s)),
        }),
        sched: if all(&|r| !r.sched.is_empty()) {
            records.iter().flat_map(|r| r.sched.iter().copied()).collect()
        } else {
            Vec::new()
        },
        // The instruments' sections: each merged by its own rule, below.
        sections: Default::default(),
        latency: merge_latency(&records),
        // Every rank's share of the rate, or none: some ranks' would misstate the point.
        open_loop: all(&|r| r.open_loop.is_some())
            .then(|| crate::results::OpenLoop::merged(records.iter().filter_map(|r| r.open_loop.as_ref())))
            .flatten(),
        replay_ops: merge_replay_ops(&records),
        nodes: Some(nodes),
        walk_messages: records.iter().flat_map(|r| r.walk_messages.iter().copied()).collect(),
        walk: records.iter().flat_map(|r| r.walk.iter().copied()).collect(),
        steady: None,
    };
    for i in crate::instruments::Instrument::ALL {
        i.section().merge_ranks(&records, &mut merged);
    }
    Some(merged)
}

/// The work of each node's ranks, nodes in order of their lowest rank.
fn per_node(records: &[RunRecord], hosts: &[&str], fixed_work: bool, elapsed_s: f64) -> Vec<NodeOps> {
    let mut nodes: Vec<NodeOps> = Vec::new();
    for (record, host) in records.iter().zip(hosts) {
        let rate = match fixed_work {
            true => record.ops as f64 / elapsed_s.max(1e-9),
            false => record.ops as f64 / record.elapsed_s.max(1e-9),
        };
        match nodes.iter_mut().find(|n| n.host == *host) {
            Some(node) => {
                node.ranks += 1;
                node.ops += record.ops;
                node.ops_per_s += rate;
            }
            None => nodes.push(NodeOps { host: host.to_string(), ranks: 1, ops: record.ops, ops_per_s: rate }),
        }
    }
    nodes
}

/// Every rank's latency histogram merged, where any has one.
fn merge_latency(records: &[RunRecord]) -> Option<Histogram> {
    records.iter().filter_map(|r| r.latency.as_ref()).fold(None, |acc: Option<Histogram>, h| {
        let mut acc = acc.unwrap_or_default();
        acc.merge(h);
        Some(acc)
    })
}

/// `replay`: every rank's histograms per operation kind merged.
fn merge_replay_ops(records: &[RunRecord]) -> Option<BTreeMap<OpKind, Histogram>> {
    records.iter().filter_map(|r| r.replay_ops.as_ref()).fold(None, |acc, kinds| {
        let mut acc: BTreeMap<_, Histogram> = acc.unwrap_or_default();
        for (kind, h) in kinds {
            acc.entry(*kind).or_default().merge(h);
        }
        Some(acc)
    })
}

/// Each rank counted the workers of other ranks on its node as other work;
/// they are the run's own.
fn discount_neighbours(records: &mut [RunRecord], hosts: &[&str], clock_hz: f64) {
    let cpu: Vec<f64> = records.iter().map(|r| r.worker_cpu.user_s + r.worker_cpu.sys_s).collect();
    for (i, record) in records.iter_mut().enumerate() {
        let Some(noise) = record.noise.as_mut().filter(|n| n.ticks > 0) else { continue };
        let neighbours: f64 = (0..cpu.len()).filter(|&j| j != i && hosts.get(j) == hosts.get(i)).map(|j| cpu[j]).sum();
        let capacity_s = noise.ticks as f64 / clock_hz;
        noise.others_cpu = (noise.others_cpu - neighbours / capacity_s).max(0.0);
    }
}

/// Sample k of the sum is every rank's sample k, or its last one when its
/// run ended earlier (fixed work: its job was done). Ranks' interval
/// percentiles do not add up to the job's: the merged timeline has none
/// (each rank's run histogram merges exactly, in `latency`).
fn merge_timelines<'a>(timelines: impl Iterator<Item = &'a Timeline>) -> Timeline {
    let timelines: Vec<&Timeline> = timelines.collect();
    let Some(longest) = timelines.iter().max_by_key(|t| t.at_s.len()) else { return Timeline::default() };
    let cumulative_ops = (0..longest.at_s.len())
        .map(|k| timelines.iter().filter_map(|t| t.cumulative_ops.get(k).or(t.cumulative_ops.last())).sum())
        .collect();
    Timeline { interval_s: longest.interval_s, at_s: longest.at_s.clone(), cumulative_ops, latency: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::run;

    fn rank_record(ops: u64, elapsed_s: f64, samples: &[u64]) -> RunRecord {
        let mut r = run(0, &[ops], elapsed_s);
        r.timeline = Timeline {
            interval_s: 0.1,
            at_s: (1..=samples.len()).map(|k| k as f64 / 10.0).collect(),
            cumulative_ops: samples.to_vec(),
            latency: None,
        };
        r
    }

    #[test]
    fn fixed_time_rates_add_up_over_each_ranks_own_window() {
        let merged = merge(
            vec![rank_record(1000, 1.0, &[500, 1000]), rank_record(3000, 1.5, &[1000, 2000, 3000])],
            &["a", "b"],
            100.0,
        )
        .unwrap();
        assert_eq!(merged.ops, 4000);
        assert_eq!(merged.per_worker_ops, vec![1000, 3000]);
        assert!((merged.ops_per_s - 3000.0).abs() < 1e-9, "1000/1 + 3000/1.5");
        assert!((merged.ops_per_s_per_worker - 1500.0).abs() < 1e-9);
        assert_eq!(merged.elapsed_s, 1.5);
        // The shorter window holds its last count.
        assert_eq!(merged.timeline.cumulative_ops, vec![1500, 3000, 4000]);
        let nodes = merged.nodes.unwrap();
        assert_eq!((nodes[0].host.as_str(), nodes[0].ranks, nodes[0].ops), ("a", 1, 1000));
        assert!((nodes[1].ops_per_s - 2000.0).abs() < 1e-9);
        assert_eq!(merged.ops_made, None, "no rank's count, none merged");
    }

    #[test]
    fn every_op_made_adds_up_over_ranks_that_all_counted() {
        let ranks = |made: [Option<u64>; 2]| {
            let records = made.iter().map(|m| RunRecord { ops_made: *m, ..rank_record(1000, 1.0, &[1000]) }).collect();
            merge(records, &["a", "b"], 100.0).unwrap().ops_made
        };
        assert_eq!(ranks([Some(1100), Some(1040)]), Some(2140));
        assert_eq!(ranks([Some(1100), None]), None, "a sum of some ranks' counts is none");
    }

    #[test]
    fn fixed_work_takes_the_slowest_rank() {
        let mut a = rank_record(100, 2.0, &[100]);
        a.completion_s = Some(vec![2.0]);
        let mut b = rank_record(100, 4.0, &[100]);
        b.completion_s = Some(vec![4.0]);
        let merged = merge(vec![a, b], &["a", "b"], 100.0).unwrap();
        assert_eq!(merged.completion_s, Some(vec![2.0, 4.0]));
        assert_eq!((merged.elapsed_s, merged.ops_per_s), (4.0, 50.0));
    }

    #[test]
    fn workers_of_other_ranks_on_the_node_are_not_other_work() {
        let with = |cpu_s: f64, others: f64| {
            let mut r = rank_record(10, 1.0, &[10]);
            r.worker_cpu.user_s = cpu_s;
            r.noise = Some(RunNoise { others_cpu: others, ticks: 200, ..Default::default() });
            r
        };
        // Two ranks on one 2-CPU node (2 s of capacity), each 1 s busy: each saw the other as 50% others.
        let merged = merge(vec![with(1.0, 0.5), with(1.0, 0.5), with(1.0, 0.1)], &["a", "a", "b"], 100.0).unwrap();
        let noise = merged.noise.unwrap();
        assert!((noise.others_cpu - 0.1).abs() < 1e-9, "a's ranks discount each other, b's saw 10%: {noise:?}");
    }
}
