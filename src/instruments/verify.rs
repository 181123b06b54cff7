//! `--verify`: the workers' system calls in the window, counted by the
//! kernel (the `raw_syscalls:sys_enter` and `syscalls:sys_enter_<name>`
//! tracepoints as perf counters on each worker, inherited by what it
//! starts), against what the workers' op counters imply.

use anyhow::{Context, Result};
use perf_event_open_sys::bindings as b;

use super::perf::{attr, PerfEvent};
use super::tracefs::event_id;
use crate::replay::OpKind;
use crate::results::{SyscallCheck, SyscallCount};
use crate::workloads::Workload;

/// The calls `--verify` counts for `workload`, with calls per op: fixed for
/// the op loops; for `replay`, the calls one kind alone makes (per op 0:
/// the expectation comes from the run's ops of each kind).
pub fn verified_calls(workload: Workload) -> Option<Vec<(&'static str, f64)>> {
    if workload != Workload::Replay {
        return workload.syscalls_per_op();
    }
    let mut calls: Vec<(&'static str, f64)> = Vec::new();
    for name in OpKind::ALL.iter().filter_map(|k| k.exact_syscall()) {
        if !calls.iter().any(|(n, _)| *n == name) {
            calls.push((name, 0.0));
        }
    }
    Some(calls)
}

/// Beyond this relative difference a count is a mismatch.
pub const TOLERANCE: f64 = 0.005;

/// Counters on every worker: all system calls, and each one the op makes;
/// per worker one group, so that all its counters go on and off together.
pub struct SyscallCounter {
    /// Per worker: the group leader counting all calls, then one counter
    /// per expected call, in the order of `calls`.
    groups: Vec<Vec<PerfEvent>>,
    /// Per expected call: its name and calls per op.
    calls: Vec<(&'static str, f64)>,
    /// All workers' ops just before and after the counters went on, and
    /// just before and after they went off.
    ops_at: [u64; 4],
}

impl SyscallCounter {
    pub fn arm(tasks: &[i32], per_op: &[(&'static str, f64)]) -> Result<SyscallCounter> {
        let mut ids = vec![("raw_syscalls:sys_enter".to_string(), event_id("raw_syscalls", "sys_enter")?)];
        for (name, _) in per_op {
            ids.push((format!("syscalls:sys_enter_{name}"), event_id("syscalls", &format!("sys_enter_{name}"))?));
        }
        let mut groups = Vec::with_capacity(tasks.len());
        for &task in tasks {
            let mut group: Vec<PerfEvent> = Vec::with_capacity(ids.len());
            for (what, id) in &ids {
                let mut attr = attr(b::PERF_TYPE_TRACEPOINT, u64::from(*id));
                attr.set_inherit(1);
                // Members count whenever the leader does.
                attr.set_disabled(u64::from(group.is_empty()));
                let what = format!("{what} on task {task}");
                group.push(PerfEvent::open_in_group(&mut attr, task, -1, group.first(), &what)?);
            }
            groups.push(group);
        }
        Ok(SyscallCounter { groups, calls: per_op.to_vec(), ops_at: [0; 4] })
    }

    fn leaders(&self) -> impl Iterator<Item = &PerfEvent> {
        self.groups.iter().filter_map(|g| g.first())
    }

    /// Turning a few counters per worker on or off takes the coordinator
    /// microseconds, or milliseconds when the workers hold every CPU and it
    /// waits for one: the ops around each edge bracket what was counted.
    pub fn start(&mut self, ops: impl Fn() -> u64) -> Result<()> {
        self.ops_at[0] = ops();
        self.leaders().try_for_each(PerfEvent::enable_group)?;
        self.ops_at[1] = ops();
        Ok(())
    }

    pub fn stop(&mut self, ops: impl Fn() -> u64) -> Result<()> {
        self.ops_at[2] = ops();
        self.leaders().try_for_each(PerfEvent::disable_group)?;
        self.ops_at[3] = ops();
        Ok(())
    }

    /// The counts, against `ops` (all workers' ops in the window) or, for
    /// replay, against `per_kind` (the window's ops of each kind).
    pub fn finish(self, ops: u64, per_kind: Option<Vec<(OpKind, u64)>>) -> Result<SyscallCheck> {
        let column = |k: usize| -> Result<u64> {
            self.groups.iter().map(|g| g[k].count()).sum::<Result<u64>>().context("reading system call counters")
        };
        let total = column(0)?;
        let calls = self
            .calls
            .iter()
            .enumerate()
            .map(|(k, &(name, per))| {
                let expected = match &per_kind {
                    Some(kinds) => kinds
                        .iter()
                        .filter(|(kind, _)| kind.exact_syscall() == Some(name))
                        .map(|(_, n)| *n as f64)
                        .sum(),
                    None => ops as f64 * per,
                };
                let per_op = if per_kind.is_some() { expected / ops.max(1) as f64 } else { per };
                Ok(SyscallCount { syscall: name.to_string(), per_op, expected, counted: column(k + 1)? })
            })
            .collect::<Result<Vec<_>>>()?;
        let [on_before, on_after, off_before, off_after] = self.ops_at;
        let ops_counted = [off_before.saturating_sub(on_after), off_after.saturating_sub(on_before)];
        Ok(SyscallCheck { total, ops_counted, calls })
    }
}

/// The counts beyond [`TOLERANCE`] of what the ops allow: at least the ops
/// surely inside the counted span, at most those possibly inside it (see
/// [`SyscallCheck::ops_counted`]), give or take an op per worker at each edge.
pub fn mismatches(check: &SyscallCheck, workers: usize) -> Vec<&SyscallCount> {
    check
        .calls
        .iter()
        .filter(|c| {
            let per_op = c.per_op;
            let [low, high] = check.ops_counted;
            let edges = 2.0 * workers as f64 * per_op.max(1.0);
            let least = low as f64 * per_op * (1.0 - TOLERANCE) - edges;
            let most = high as f64 * per_op * (1.0 + TOLERANCE) + edges;
            (c.counted as f64) < least || (c.counted as f64) > most
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: &str, expected: f64, counted: u64) -> SyscallCount {
        SyscallCount { syscall: name.into(), per_op: 1.0, expected, counted }
    }

    #[test]
    fn mismatches_beyond_half_a_percent_of_the_bracket() {
        let check = SyscallCheck {
            total: 0,
            ops_counted: [100_000, 100_000],
            calls: vec![
                count("openat", 100_000.0, 100_400),  // 0.4%: fine
                count("close", 100_000.0, 100_600),   // 0.6%: a mismatch
                count("unlinkat", 100_000.0, 99_000), // -1%: a mismatch
            ],
        };
        let names: Vec<&str> = mismatches(&check, 2).iter().map(|c| c.syscall.as_str()).collect();
        assert_eq!(names, ["close", "unlinkat"]);
        // Few ops: an op per worker at each edge is allowed.
        let few = SyscallCheck { total: 0, ops_counted: [100, 100], calls: vec![count("fsync", 100.0, 103)] };
        assert!(mismatches(&few, 2).is_empty());
        // The coordinator waited 3 ms to turn the counters on: the bracket is wide, and 1.5% more is within it.
        let late = SyscallCheck {
            total: 0,
            ops_counted: [33_000, 33_600],
            calls: vec![count("renameat", 33_038.0, 33_523), count("x", 33_038.0, 34_000)],
        };
        let names: Vec<&str> = mismatches(&late, 2).iter().map(|c| c.syscall.as_str()).collect();
        assert_eq!(names, ["x"]);
    }
}
