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
    /// Fixed-time loops: the workers' counts once all had left.
    pub ops_made: Option<u64>,
    /// Open loops: the ops due and not done as the window opened and as it closed.
    pub backlog: Option<[f64; 2]>,
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
    /// The machine's counters that changed between the window's edges.
    pub system_stats: std::collections::BTreeMap<String, i64>,
    /// Each worker's moves to another CPU between the window's edges, read
    /// by the coordinator (a read in the worker would be a system call in
    /// its window, which `--verify` and `--profile latency` count).
    pub migrations: Vec<u64>,
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
                minor_faults: delta(ThreadSched::MINOR_FAULTS),
                major_faults: delta(ThreadSched::MAJOR_FAULTS),
                migrations: self.migrations.get(i).copied().unwrap_or(0),
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
            ops_made: self.ops_made,
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
            system_stats: self.system_stats,
            latency: None,
            open_loop: None,
            replay_ops: None,
            // No schedstat (a kernel without it): no figures rather than zeros.
            // (Not judged by zeros: a worker a busy machine kept off the CPUs
            // through a whole window, an MPI rank's, has zeros of its own.)
            sched: if crate::sys::has_schedstat() { sched } else { Vec::new() },
            sections: Default::default(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, CompareConfig, Figure, Verdict};
    use crate::results::fixtures;
    use crate::workloads::{Share, Workload};

    /// One worker's 1 s window on a 2-CPU machine: it ran `on_cpu_s` of it
    /// at `rate` ops per CPU-second, and a hog on its CPU ran the rest of
    /// that CPU's second (none when `on_cpu_s` is 1); the other CPU idled.
    fn window(region: &SharedRegion, rate: f64, on_cpu_s: f64) -> RunRecord {
        let hz = super::super::cpu::clock_hz();
        let report = region.report(0);
        report.sched_at_window_end[ThreadSched::USER_US].store((on_cpu_s * 0.2 * 1e6) as u64, Ordering::Relaxed);
        report.sched_at_window_end[ThreadSched::SYSTEM_US].store((on_cpu_s * 0.8 * 1e6) as u64, Ordering::Relaxed);
        // The CPU the worker and the hog shared was busy all second; the other idled.
        let (user, system) = ((0.2 * on_cpu_s + (1.0 - on_cpu_s)) * hz, 0.8 * on_cpu_s * hz);
        let window = Window {
            start_counts: vec![0],
            end_counts: vec![(rate * on_cpu_s) as u64],
            ops_made: None,
            backlog: None,
            elapsed: Duration::from_secs(1),
            timeline: Timeline::default(),
            cpu_start: CpuTicks::planted([0; 8]),
            cpu_end: CpuTicks::planted([user.round() as u64, 0, system.round() as u64, hz as u64, 0, 0, 0, 0]),
            completion_s: None,
            device_io: None,
            children_cpu: None,
            writeback: None,
            load_1m: 0.0,
            system_stats: Default::default(),
            migrations: Vec::new(),
            instruments: RunInstruments::default(),
            steady: None,
        };
        window.into_record(region, 0, None)
    }

    /// The measurement seam with a simulated hog: a hog that takes half the
    /// worker's CPU halves its ops/s, leaves its ops per CPU-second where
    /// they were, and marks the run busy; compare then never blames the
    /// slowdown on the change in ops/s, and judges ops per CPU-second.
    #[test]
    fn ops_per_cpu_second_hold_where_a_hog_halves_ops_per_second() {
        let region = SharedRegion::new(1).unwrap();
        // Runs that differ by a little, as real ones do.
        let rates = [1.00e6, 1.01e6, 0.99e6, 1.02e6, 0.98e6];
        let quiet: Vec<RunRecord> = rates.iter().map(|&r| window(&region, r, 1.0)).collect();
        let busy: Vec<RunRecord> = rates.iter().rev().map(|&r| window(&region, r, 0.5)).collect();
        for (q, b) in quiet.iter().zip(busy.iter().rev()) {
            assert!(
                (b.ops_per_s / q.ops_per_s - 0.5).abs() < 1e-6,
                "ops/s halve: {} against {}",
                b.ops_per_s,
                q.ops_per_s
            );
            let (qc, bc) = (q.ops_per_cpu_s().unwrap(), b.ops_per_cpu_s().unwrap());
            assert!((bc / qc - 1.0).abs() < 1e-6, "ops per CPU-second hold: {bc} against {qc}");
            assert!(q.noise.unwrap().others_cpu < 0.01, "{:?}", q.noise);
            assert!(
                (b.noise.unwrap().others_cpu - 0.25).abs() < 0.01,
                "the hog's half of one CPU of two: {:?}",
                b.noise
            );
        }
        let file = |runs: Vec<RunRecord>| {
            let n = runs.len();
            fixtures::doc(n, 1.0, vec![fixtures::point(Workload::Stat, Share::Private, 1, runs)])
        };
        let (quiet, busy) = (file(quiet), file(busy));
        assert_eq!(busy.points[0].summary.as_ref().unwrap().busy_runs, [0, 1, 2, 3, 4]);
        let on_ops = compare(&quiet, &busy, "quiet", "busy", &CompareConfig::DEFAULT);
        assert_eq!(on_ops.rows[0].verdict, Verdict::TooNoisy, "{:?}", on_ops.rows[0]);
        assert!(on_ops.rows[0].change_pct < -49.0, "{}", on_ops.rows[0].change_pct);
        let per_cpu = CompareConfig { figure: Figure::OpsPerCpuSecond, ..CompareConfig::DEFAULT };
        let on_cpu = compare(&quiet, &busy, "quiet", "busy", &per_cpu);
        assert_eq!(on_cpu.rows[0].verdict, Verdict::NoDifferenceProven, "{:?}", on_cpu.rows[0]);
        assert!(on_cpu.rows[0].change_pct.abs() < 1e-6, "{}", on_cpu.rows[0].change_pct);
    }
}
