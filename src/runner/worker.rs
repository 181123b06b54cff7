//! What one worker does: set up its files, wait at the barrier, run the hot
//! loop until told to stop. The same body runs in a forked process or a thread.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

use super::shared::{Phase, SharedRegion};
use crate::sys;
use crate::workloads::{
    self, JobContext, Op, OpDriver, PointState, Share, TreeSource, WorkerEnv, Workload, SHARED_DIR,
};

/// Everything a worker needs, prepared by the coordinator before any worker starts.
pub(super) struct WorkerPlan<'a> {
    pub workload: Workload,
    pub share: Share,
    pub workers: usize,
    pub scratch_fd: i32,
    pub scratch_path: &'a std::path::Path,
    pub tree: Option<&'a TreeSource>,
    pub point: &'a PointState,
    /// CPU per worker index, with `--pin`.
    pub cpus: Option<&'a [usize]>,
    pub region: &'a SharedRegion,
}

/// The body of worker `index`. Never panics across this boundary: every
/// failure ends up as a message in the worker's report.
pub(super) fn worker_main(plan: &WorkerPlan<'_>, index: usize) {
    let region = plan.region;
    if let Err(error) = run_worker(plan, index) {
        region.report(index).set_error(&format!("worker {index}: {error:#}"));
        region.mark_failed();
    }
    region.mark_exited();
}

fn run_worker(plan: &WorkerPlan<'_>, index: usize) -> Result<()> {
    if let Some(cpus) = plan.cpus {
        let cpu = cpus[index];
        sys::pin_to_cpu(cpu).map_err(|e| anyhow::anyhow!("binding to CPU {cpu}: {}", sys::errno_text(e)))?;
        plan.region.report(index).pinned_cpu.store(cpu as i32, Ordering::Relaxed);
    }
    let label = match plan.share {
        Share::Private => format!("w{index}"),
        Share::Shared | Share::Same => SHARED_DIR.to_string(),
    };
    let label_c = sys::cname(&label);
    if plan.share == Share::Private {
        sys::mkdirat(plan.scratch_fd, &label_c, 0o700)
            .map_err(|e| anyhow::anyhow!("mkdirat(\"{label}\") failed: {}", sys::errno_text(e)))?;
    }
    let dir = sys::openat(plan.scratch_fd, &label_c, libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow::anyhow!("openat(\"{label}\") failed: {}", sys::errno_text(e)))?;
    let env = WorkerEnv {
        workload: plan.workload,
        index,
        workers: plan.workers,
        share: plan.share,
        dir,
        dir_label: &label,
        scratch_path: plan.scratch_path,
        point: plan.point,
        tree: plan.tree,
    };
    let outcome = if plan.workload.is_fixed_work() {
        run_job(&env, plan.region, index)
    } else {
        workloads::with_op(&env, Driver { region: plan.region, index, label: &label })
            .and_then(|r| r.map_err(anyhow::Error::msg))
    };
    let _ = sys::close(dir);
    outcome
}

/// Fixed work: set up, wait for the start, do the job once, note when it finished.
fn run_job(env: &WorkerEnv<'_>, region: &SharedRegion, index: usize) -> Result<()> {
    let mut job = workloads::job(env)?;
    region.mark_ready();
    if region.wait_for_start() != Phase::Window {
        return Ok(()); // abandoned before the start
    }
    let report = region.report(index);
    let counter = &region.counter(index).ops;
    record_cpu(&report.cpu_at_window_start);
    let stop = || region.phase() == Phase::Abort;
    let progress = |done: u64| counter.store(done, Ordering::Relaxed);
    let output = job.run(&JobContext { stop: &stop, progress: &progress }).map_err(anyhow::Error::msg)?;
    report.completed_ns.store(sys::monotonic_ns(), Ordering::Release);
    counter.store(output.entries, Ordering::Relaxed);
    report.bytes.store(output.bytes, Ordering::Relaxed);
    record_cpu(&report.cpu_at_window_end);
    Ok(())
}

/// Runs the hot loop of whatever op `with_op` built; errors come back as text.
struct Driver<'a> {
    region: &'a SharedRegion,
    index: usize,
    label: &'a str,
}

impl OpDriver<Result<(), String>> for Driver<'_> {
    fn drive<O: Op>(self, mut op: O) -> Result<(), String> {
        self.region.mark_ready();
        hot_loop(&mut op, self.region, self.index).map_err(|e| {
            let what = match e.errno {
                0 => "transferred fewer bytes than asked".to_string(),
                errno => format!("failed: {}", sys::errno_text(errno)),
            };
            format!("{}(\"{}/{}\") {what}", e.call, self.label, op.arg_name(e.arg).to_string_lossy())
        })
    }
}

/// The measured loop: one op, one counter store, one look at the phase word.
///
/// The counter slot has a single writer, so a plain store of a local count
/// suffices (no locked read-modify-write). The phase word is written three
/// times per run, so reading it each iteration hits a shared, clean line.
#[inline(never)]
fn hot_loop<O: Op>(op: &mut O, region: &SharedRegion, index: usize) -> Result<(), workloads::SysError> {
    let counter = &region.counter(index).ops;
    let phase_word = region.phase_word();
    let report = region.report(index);
    let mut done: u64 = 0;
    let mut window_started = false;
    let mut phase = region.wait_for_start();
    loop {
        match phase {
            Phase::Warmup => {}
            Phase::Window => {
                record_cpu(&report.cpu_at_window_start);
                window_started = true;
            }
            Phase::Stop => {
                record_cpu(&report.cpu_at_window_end);
                if !window_started {
                    // Never saw the window open (descheduled through all of it).
                    record_cpu(&report.cpu_at_window_start);
                }
                return Ok(());
            }
            Phase::Setup | Phase::Abort => return Ok(()),
        }
        let seen = phase as u32;
        loop {
            op.once()?;
            done += 1;
            counter.store(done, Ordering::Relaxed);
            if phase_word.load(Ordering::Relaxed) != seen {
                break;
            }
        }
        phase = region.phase();
    }
}

fn record_cpu(into: &[AtomicU64; 2]) {
    let (user, system) = sys::thread_cpu_micros();
    into[0].store(user, Ordering::Relaxed);
    into[1].store(system, Ordering::Relaxed);
}
