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
use crate::workloads::Catalogue;
use crate::workloads::{Workload, WorkloadOptions};

/// The calls `--verify` counts for `workload`, with calls per op: fixed for
/// the op loops; for `replay`, the calls one kind alone makes (per op 0:
/// the expectation comes from the run's ops of each kind).
pub(crate) fn verified_calls(workload: Workload, options: &WorkloadOptions) -> Option<Vec<(&'static str, f64)>> {
    if workload != Workload::Replay {
        return workload.syscalls_per_op(options);
    }
    let mut calls: Vec<(&'static str, f64)> = Vec::new();
    for name in OpKind::ALL.iter().filter_map(|k| k.exact_syscall()) {
        if !calls.iter().any(|(n, _)| *n == name) {
            calls.push((name, 0.0));
        }
    }
    Some(calls)
}

/// Counters on every worker: all system calls, and each one the op makes;
/// per worker one group, so that all its counters go on and off together.
pub(crate) struct SyscallCounter {
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
    pub(crate) fn arm(tasks: &[i32], per_op: &[(&'static str, f64)]) -> Result<SyscallCounter> {
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
        Ok(SyscallCheck { total, ops_counted, calls, mixed_window_ops: per_kind.is_some().then_some(ops) })
    }
}

/// `--verify`'s measuring half.
pub(crate) struct VerifyRecorder;

impl super::Recorder for VerifyRecorder {
    fn needs(&self, _config: &super::InstrumentConfig) -> super::Needs {
        use crate::sys::cap;
        super::Needs {
            caps: vec![(cap::SYS_ADMIN, "tracefs"), (cap::DAC_OVERRIDE, "tracefs's files")],
            tracepoints: &[("raw_syscalls", "sys_enter")],
            global_pids: true,
            tracefs: true,
            ..super::Needs::default()
        }
    }

    /// Nothing to arm for a workload without a fixed set of calls per op.
    fn arm(&self, run: &super::ArmFor<'_>) -> Result<Option<Box<dyn super::Armed>>> {
        let Some(calls) = verified_calls(run.workload, run.options) else { return Ok(None) };
        Ok(Some(Box::new(SyscallCounter::arm(run.tasks, &calls)?)))
    }
}

impl super::Armed for SyscallCounter {
    fn start(&mut self, ops: &dyn Fn() -> u64) -> Result<()> {
        SyscallCounter::start(self, ops)
    }
    fn stop(&mut self, ops: &dyn Fn() -> u64) -> Result<()> {
        SyscallCounter::stop(self, ops)
    }
    fn finish(self: Box<Self>, record: &mut crate::results::RunRecord) -> Result<()> {
        let per_kind = record.replay_ops.as_ref().map(|kinds| kinds.iter().map(|(k, h)| (*k, h.count)).collect());
        record.sections.syscalls = Some(SyscallCounter::finish(*self, record.ops, per_kind)?);
        Ok(())
    }
}
