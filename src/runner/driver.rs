//! `command` in driver form: one command per run whose own client count is
//! the swept `{workers}` (a database client, fio, sysbench), reporting the
//! figure its metric reads from the output.

use anyhow::{anyhow, bail, Result};

use super::cpu::CpuTicks;
use super::signals;
use super::timing::{device_io, load_average, Timing};
use crate::exec::Placeholders;
use crate::fs::DeviceSnapshot;
use crate::plan::PointSpec;
use crate::results::{RunNoise, RunRecord, Timeline, WorkerCpu};
use crate::scratch::Scratch;
use crate::sys;
use crate::workloads::CommandSpec;

/// Runs the driver once in `scratch` (its `{dir}` and working directory).
pub(super) fn run_driver(
    spec: &PointSpec,
    scratch: &Scratch,
    timing: &Timing,
    command: &CommandSpec,
    run: usize,
) -> Result<RunRecord> {
    let metric = command.driver.as_ref().ok_or_else(|| anyhow!("internal error: not a driver command"))?;
    let values = Placeholders {
        dir: scratch.path(),
        worker: 0,
        workers: spec.workers,
        scratch: scratch.path(),
        tarball: None,
        variant: command.variant.as_deref(),
    };
    let stop = || signals::check().is_err();
    let untimed = |flag: &str, template: &Option<String>| -> Result<()> {
        command.run_untimed(flag, template.as_deref(), &values, &stop)?;
        Ok(signals::check()?)
    };
    untimed("--setup", &command.setup)?;
    untimed("--prepare", &command.prepare)?;
    let load_1m = load_average();
    let system_start = super::system_stats::SystemSnapshot::read();
    let cpu_start = CpuTicks::read();
    let children_start = children_cpu();
    let tree_start = crate::exec::run_cgroup_cpu_s();
    let device_start = timing.device.as_deref().and_then(DeviceSnapshot::read);
    let outcome = command.run(&command.cmd, &values, true, &stop);
    let cpu_end = CpuTicks::read();
    let children_end = children_cpu();
    let tree_end = crate::exec::run_cgroup_cpu_s();
    let device_io = device_io(timing, device_start);
    let system_stats = system_start.changes(&super::system_stats::SystemSnapshot::read());
    signals::check()?;
    let finished = outcome?;
    let wall_s = finished.wall.as_secs_f64().max(1e-9);
    let value = metric.extract(&finished, wall_s)?;
    if !(value.is_finite() && value > 0.0) {
        bail!("the metric {} read {value}, which is not a positive number", metric.name);
    }
    untimed("--cleanup", &command.cleanup)?;
    let mut timeline = Timeline { interval_s: wall_s, ..Timeline::default() };
    timeline.record(finished.wall.as_nanos() as u64, 1);
    Ok(RunRecord {
        run,
        position: None,
        started_at: None,
        setup_stderr: None,
        ops: 1,
        elapsed_s: wall_s,
        ops_per_s: value,
        ops_per_s_per_worker: value / spec.workers as f64,
        per_worker_ops: Vec::new(),
        ops_made: None,
        pinned_cpus: None,
        worker_cpu: WorkerCpu { user_s: children_end.0 - children_start.0, sys_s: children_end.1 - children_start.1 },
        system_cpu: cpu_start.breakdown(&cpu_end),
        noise: Some(RunNoise {
            // The driver's own process tree is the run's work, not other work: what its waited-for
            // children used, or where its commands have a cgroup, everything in it (daemons too).
            others_cpu: cpu_start
                .others_share(&cpu_end, own_tree_cpu(children_start, children_end, tree_start, tree_end))
                .unwrap_or(0.0),
            kernel_threads_cpu: cpu_start.kernel_threads_share(&cpu_end).unwrap_or(0.0),
            load_1m,
            ticks: cpu_start.ticks(&cpu_end),
            throttled: cpu_start.throttled(&cpu_end),
        }),
        timeline,
        system_stats,
        completion_s: None,
        bytes: None,
        device_io,
        writeback: None,
        latency: None,
        open_loop: None,
        replay_ops: None,
        sched: Vec::new(),
        sections: Default::default(),
        nodes: None,
        walk_messages: Vec::new(),
        walk: Vec::new(),
        steady: None,
    })
}

/// CPU seconds of the driver's whole process tree between two readings:
/// its run cgroup's where there is one (daemonised descendants included),
/// never less than what the waited-for children reported.
fn own_tree_cpu(
    children_start: (f64, f64),
    children_end: (f64, f64),
    tree_start: Option<f64>,
    tree_end: Option<f64>,
) -> f64 {
    let children = (children_end.0 - children_start.0) + (children_end.1 - children_start.1);
    match (tree_start, tree_end) {
        (Some(a), Some(b)) => children.max(b - a),
        _ => children,
    }
}

/// User and system CPU seconds of all waited-for children so far.
fn children_cpu() -> (f64, f64) {
    let (user, system) = sys::children_cpu_micros();
    (user as f64 / 1e6, system as f64 / 1e6)
}
