//! `--profile latency`: each system call's time in the kernel, as
//! log-linear histograms, over the window and per sample interval.

use std::collections::BTreeMap;

use super::attribution::Attribution;
use super::{Explains, Section};
use crate::render::format::format_ns;
use crate::render::markup::Html;
use crate::render::phrases::{cost, lost};
use crate::render::table::{Align, Table};
use crate::results::{Collector, KernelLatency, Point, RunRecord};

/// System calls a point's latency table shows: a workload makes a handful.
const CALLS_SHOWN: usize = 8;

/// `--profile latency`: each system call of `point` (all runs) with its
/// time in the kernel (mean, p50, p99 from its histogram) and, for
/// `replay`, the user-space latency of the operation that makes exactly
/// that call, measured around it by the worker.
fn kernel_latency_table(point: &Point, profile: &KernelLatency) -> Table {
    let replay = point.merged_replay_ops();
    let user_side: BTreeMap<&str, &crate::stats::histogram::Histogram> =
        replay.iter().filter_map(|(kind, h)| Some((kind.exact_syscall()?, h))).collect();
    let mut columns = vec![
        ("call", Align::Left),
        ("calls", Align::Right),
        ("mean", Align::Right),
        ("p50", Align::Right),
        ("p99", Align::Right),
    ];
    if !user_side.is_empty() {
        columns.extend([("op p50", Align::Right), ("op p99", Align::Right)]);
    }
    let mut table = Table::new(&columns).indented(4);
    let in_ns = |s: Option<f64>| s.map_or_else(|| "-".to_string(), |s| format_ns(s * 1e9));
    for call in profile.calls.iter().take(CALLS_SHOWN) {
        let mut row = vec![
            call.call.clone(),
            call.count.to_string(),
            format_ns(call.mean_s() * 1e9),
            in_ns(call.quantile_s(0.5)),
            in_ns(call.quantile_s(0.99)),
        ];
        if !user_side.is_empty() {
            match user_side.get(call.call.as_str()) {
                Some(h) => row.extend([format_ns(h.quantile(0.5) as f64), format_ns(h.quantile(0.99) as f64)]),
                None => row.extend(["".to_string(), "".to_string()]),
            }
        }
        table.row(row);
    }
    table
}

pub(super) struct Latency;

impl Section for Latency {
    fn recorded(&self, run: &RunRecord) -> bool {
        run.sections.kernel_latency.is_some()
    }

    fn merge_ranks(&self, ranks: &[RunRecord], into: &mut RunRecord) {
        into.sections.kernel_latency =
            KernelLatency::sum(ranks.iter().filter_map(|r| r.sections.kernel_latency.as_ref()));
    }

    /// A measurement, not an explanation: every point that has it shows it.
    fn explains(&self, point: &Point) -> Explains {
        match point.runs.iter().any(|r| r.sections.kernel_latency.is_some()) {
            true => Explains::Always,
            false => Explains::No,
        }
    }

    fn explain(&self, point: &Point, what: &str) -> String {
        let Some(latency) = point.kernel_latency() else { return String::new() };
        let calls: u64 = latency.calls.iter().map(|c| c.count).sum();
        let mut out = format!(
            "  time in the kernel per system call, {what}: {} call{}{}{}\n",
            calls,
            if calls == 1 { "" } else { "s" },
            lost(latency.lost_events, Collector::Bpf),
            cost(latency.programs, point, |r| r.sections.kernel_latency.is_some())
        );
        if !latency.calls.is_empty() {
            out.push_str(&kernel_latency_table(point, &latency).render());
        }
        out
    }

    fn legend(&self) -> &'static str {
        "time in the kernel per system call: each call of the workers in the runs' windows, \
         from entry to exit (--profile latency); p50, p99 from log-linear histograms (16 buckets a power of two: \
         within 1/16 above the true value; a call made once, its own time); op p50, op p99 = replay's own timing of the operation that makes that call, from user space.\n"
    }

    /// Its intervals are drawn with the run's timeline, which has the report's own section.
    fn html_series(&self, _points: &[&Point], _title: &str, _widest: f64) -> Html {
        Html::new()
    }

    /// Per-call latency has no attribution of its own yet: compare judges the figures.
    fn attribute(&self, _base: &Point, _new: &Point, _why: &mut Attribution) -> bool {
        false
    }

    fn attributes(&self) -> bool {
        false
    }
}
