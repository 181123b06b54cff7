//! What the coordinator saw during a run's window, and the record made of it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::cpu::CpuTicks;
use super::shared::SharedRegion;
use crate::fs::DeviceIo;
use crate::instruments::RunInstruments;
use crate::results::{RunNoise, RunRecord, SteadyOutcome, Timeline, WorkerCpu, WorkerSched, Writeback};
use crate::sys::ThreadSched;

/// What the coordinator saw during the window.
pub(super) struct Window {
    pub start_counts: Vec<u64>,
    pub end_counts: Vec<u64>,
    pub elapsed: Duration,
    pub timeline: Timeline,
    pub cpu_start: CpuTicks,
    pub cpu_end: CpuTicks,
    /// Fixed work: each worker's completion time since the common start.
    pub completion_s: Option<Vec<f64>>,
    pub device_io: Option<DeviceIo>,
    /// Thread workers doing fixed work: the CPU (user, system µs) of the
    /// commands this process waited for in the window, all workers together.
    pub children_cpu: Option<(u64, u64)>,
    pub writeback: Option<Writeback>,
    /// The load average as the run started.
    pub load_1m: f64,
    /// Turned off at the window's end, read into the record after it.
    pub instruments: RunInstruments,
    /// A warm-up run until steady: how it ended.
    pub steady: Option<SteadyOutcome>,
}

impl Window {
    pub(super) fn into_record(self, region: &SharedRegion, run: usize, cpus: Option<&[usize]>) -> RunRecord {
        let per_worker_ops: Vec<u64> =
            self.end_counts.iter().zip(&self.start_counts).map(|(end, start)| end - start).collect();
        let ops: u64 = per_worker_ops.iter().sum();
        let elapsed_s = self.elapsed.as_secs_f64();
        let ops_per_s = ops as f64 / elapsed_s;
        let mut worker_cpu = WorkerCpu::default();
        let mut sched = Vec::with_capacity(region.workers());
        for i in 0..region.workers() {
            let report = region.report(i);
            let delta = |k: usize| {
                let end = report.sched_at_window_end[k].load(Ordering::Relaxed);
                end.saturating_sub(report.sched_at_window_start[k].load(Ordering::Relaxed))
            };
            worker_cpu.user_s += delta(ThreadSched::USER_US) as f64 / 1e6;
            worker_cpu.sys_s += delta(ThreadSched::SYSTEM_US) as f64 / 1e6;
            sched.push(WorkerSched {
                window_s: delta(ThreadSched::WALL_NS) as f64 / 1e9,
                on_cpu_s: delta(ThreadSched::ON_CPU_NS) as f64 / 1e9,
                runqueue_s: delta(ThreadSched::RUNQUEUE_NS) as f64 / 1e9,
                voluntary_switches: delta(ThreadSched::VOLUNTARY),
                involuntary_switches: delta(ThreadSched::INVOLUNTARY),
            });
            // Commands run by worker processes (zero unless fixed work in process mode).
            let children = |k: usize| {
                let end = report.children_at_window_end[k].load(Ordering::Relaxed);
                end.saturating_sub(report.children_at_window_start[k].load(Ordering::Relaxed)) as f64 / 1e6
            };
            worker_cpu.user_s += children(0);
            worker_cpu.sys_s += children(1);
        }
        if let Some((user, system)) = self.children_cpu {
            worker_cpu.user_s += user as f64 / 1e6;
            worker_cpu.sys_s += system as f64 / 1e6;
        }
        let bytes = self
            .completion_s
            .as_ref()
            .map(|_| (0..region.workers()).map(|i| region.report(i).bytes.load(Ordering::Relaxed)).sum());
        RunRecord {
            device_io: self.device_io,
            writeback: self.writeback,
            completion_s: self.completion_s,
            bytes,
            run,
            position: None,
            started_at: None,
            setup_stderr: None,
            ops,
            elapsed_s,
            ops_per_s,
            ops_per_s_per_worker: ops_per_s / per_worker_ops.len() as f64,
            per_worker_ops,
            pinned_cpus: cpus.map(|c| c.to_vec()),
            worker_cpu,
            system_cpu: self.cpu_start.breakdown(&self.cpu_end),
            noise: Some(RunNoise {
                others_cpu: self
                    .cpu_start
                    .others_share(&self.cpu_end, worker_cpu.user_s + worker_cpu.sys_s)
                    .unwrap_or(0.0),
                kernel_threads_cpu: self.cpu_start.kernel_threads_share(&self.cpu_end).unwrap_or(0.0),
                load_1m: self.load_1m,
                ticks: self.cpu_start.ticks(&self.cpu_end),
                throttled: self.cpu_start.throttled(&self.cpu_end),
            }),
            timeline: self.timeline,
            latency: None,
            replay_ops: None,
            // No schedstat (a kernel without it): no figures rather than zeros.
            sched: if sched.iter().all(|w| w.on_cpu_s == 0.0) { Vec::new() } else { sched },
            locks: None,
            offcpu: None,
            kernel_latency: None,
            cpu_profile: None,
            syscalls: None,
            nodes: None,
            walk_messages: Vec::new(),
            walk: (0..region.workers())
                .map(|i| region.report(i).walk_record())
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
            steady: self.steady,
        }
    }
}
