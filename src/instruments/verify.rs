//! `--verify`: the workers' system calls in the window, counted by the
//! kernel (the `raw_syscalls:sys_enter` and `syscalls:sys_enter_<name>`
//! tracepoints as perf counters on each worker, inherited by what it
//! starts), against what the workers' op counters imply.

use anyhow::{Context, Result};
use perf_event_open_sys::bindings as b;

use super::perf::{attr, PerfEvent};
use super::tracefs::event_id;
use crate::results::{SyscallCheck, SyscallCount};

/// Beyond this relative difference a count is a mismatch.
pub const TOLERANCE: f64 = 0.005;

/// Counters on every worker: all system calls, and each one the op makes.
pub struct SyscallCounter {
    total: Vec<PerfEvent>,
    /// Per expected call: its name, calls per op, one counter per worker.
    calls: Vec<(&'static str, f64, Vec<PerfEvent>)>,
}

impl SyscallCounter {
    pub fn arm(tasks: &[i32], per_op: &[(&'static str, f64)]) -> Result<SyscallCounter> {
        raise_open_files_limit(tasks.len() * (1 + per_op.len()) + 64);
        let open = |system: &str, name: &str| -> Result<Vec<PerfEvent>> {
            let id = event_id(system, name)?;
            tasks
                .iter()
                .map(|&task| {
                    let mut attr = attr(b::PERF_TYPE_TRACEPOINT, u64::from(id));
                    attr.set_inherit(1);
                    PerfEvent::open(&mut attr, task, -1, &format!("{system}:{name} on task {task}"))
                })
                .collect()
        };
        let total = open("raw_syscalls", "sys_enter")?;
        let calls = per_op
            .iter()
            .map(|&(name, per)| Ok((name, per, open("syscalls", &format!("sys_enter_{name}"))?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(SyscallCounter { total, calls })
    }

    fn events(&self) -> impl Iterator<Item = &PerfEvent> {
        self.total.iter().chain(self.calls.iter().flat_map(|c| c.2.iter()))
    }

    pub fn start(&self) -> Result<()> {
        self.events().try_for_each(PerfEvent::enable)
    }

    pub fn stop(&self) -> Result<()> {
        self.events().try_for_each(PerfEvent::disable)
    }

    /// The counts, against `ops` (all workers' ops in the window).
    pub fn finish(self, ops: u64) -> Result<SyscallCheck> {
        let sum = |events: &[PerfEvent]| -> Result<u64> {
            events.iter().map(PerfEvent::count).sum::<Result<u64>>().context("reading system call counters")
        };
        let total = sum(&self.total)?;
        let calls = self
            .calls
            .iter()
            .map(|(name, per, events)| {
                Ok(SyscallCount { syscall: name.to_string(), expected: ops as f64 * per, counted: sum(events)? })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SyscallCheck { total, calls })
    }
}

/// The counts that differ from the ops by more than [`TOLERANCE`], beyond
/// the two calls per worker an op straddling each edge of the window may add.
pub fn mismatches(check: &SyscallCheck, workers: usize) -> Vec<&SyscallCount> {
    check
        .calls
        .iter()
        .filter(|c| {
            let slack = (c.expected * TOLERANCE).max(2.0 * workers as f64);
            (c.counted as f64 - c.expected).abs() > slack
        })
        .collect()
}

/// One counter per worker per call: lift the soft limit on descriptors
/// towards the hard one when that many are needed.
fn raise_open_files_limit(needed: usize) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit on this process with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && (limit.rlim_cur as usize) < needed {
            limit.rlim_cur = limit.rlim_max.min(needed as libc::rlim_t * 2);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: &str, expected: f64, counted: u64) -> SyscallCount {
        SyscallCount { syscall: name.into(), expected, counted }
    }

    #[test]
    fn mismatches_beyond_half_a_percent_or_the_edges() {
        let check = SyscallCheck {
            total: 0,
            calls: vec![
                count("openat", 100_000.0, 100_400), // 0.4%: fine
                count("close", 100_000.0, 100_600),  // 0.6%: a mismatch
                count("fsync", 100.0, 103),          // 3%, but within 2 per worker at 2 workers
                count("unlinkat", 100.0, 105),       // beyond both
            ],
        };
        let names: Vec<&str> = mismatches(&check, 2).iter().map(|c| c.syscall.as_str()).collect();
        assert_eq!(names, ["close", "unlinkat"]);
    }
}
