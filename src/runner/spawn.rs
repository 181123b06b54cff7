//! Starting a run's workers: forked processes, threads of this process,
//! or (under `--memory-limit`) threads of one forked process inside the
//! limit's cgroup; and reaping them.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use super::coordinate::coordinate;
use super::gate::Gate;
use super::shared::Phase;
use super::signals;
use super::timing::Timing;
use super::window::Window;
use super::worker::{self, worker_main, WorkerPlan};
use crate::sys;

/// After a failure, how long workers get to leave before they are killed.
const ABORT_GRACE: Duration = Duration::from_secs(2);

/// Thread workers of this process.
pub(super) fn run_threads(plan: &WorkerPlan<'_>, timing: &Timing, gate: Option<&dyn Gate>) -> Result<Window> {
    with_threads(plan, |started| coordinate(plan, started?, None, timing, gate))
}

/// Starts a thread per worker slot, runs `during` with how many started (or
/// why one did not), then joins them all; an error of `during` aborts them first.
fn with_threads<T>(plan: &WorkerPlan<'_>, during: impl FnOnce(Result<usize>) -> Result<T>) -> Result<T> {
    std::thread::scope(|scope| {
        let slots = plan.region.workers();
        let mut handles = Vec::with_capacity(slots);
        let mut spawn_error = None;
        for slot in 0..slots {
            let index = plan.first + slot;
            let spawned = std::thread::Builder::new()
                .name(format!("fsscale-w{index}"))
                .stack_size(256 * 1024)
                .spawn_scoped(scope, move || {
                    signals::block_in_worker_thread();
                    worker_main(plan, slot)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    spawn_error = Some(anyhow!("starting worker thread {index} of {}: {e}", plan.workers));
                    break;
                }
            }
        }
        let outcome = during(match spawn_error {
            Some(e) => Err(e),
            None => Ok(handles.len()),
        });
        if outcome.is_err() {
            plan.region.set_phase(Phase::Abort);
        }
        // Join explicitly: the scope's implicit join only waits for the
        // closures to return, not for the threads to be gone, and the next
        // point may fork, which needs a single-threaded process.
        for handle in handles {
            let _ = handle.join();
        }
        outcome
    })
}

/// Forked worker processes.
pub(super) fn run_processes(plan: &WorkerPlan<'_>, timing: &Timing, gate: Option<&dyn Gate>) -> Result<Window> {
    ensure_single_threaded()?;
    let parent = std::process::id() as libc::pid_t;
    let slots = plan.region.workers();
    let mut children = Vec::with_capacity(slots);
    let mut outcome = Ok(());
    for index in 0..slots {
        // SAFETY: this process is single-threaded (checked above), so the child
        // may run ordinary Rust code; it leaves only through `_exit`, so no
        // destructor of the parent's state (the scratch directory!) runs in it.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            signals::detach_worker(parent);
            sys::name_worker(plan.first + index);
            worker::in_memory_cgroup(plan, index..index + 1, || worker_main(plan, index));
            // No destructor of the parent's state runs in the child.
            sys::exit_now(0);
        }
        if pid < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            outcome = Err(anyhow!("fork of worker {index} of {} failed: {}", plan.workers, sys::errno_text(errno)));
            break;
        }
        children.push(pid);
    }
    coordinate_children(plan, &children, children.len(), outcome, timing, gate)
}

/// Coordinates `workers` workers in the forked `children` once forking
/// them (`forked`) succeeded; aborts them on any failure; then reaps them,
/// killing those that do not leave.
fn coordinate_children(
    plan: &WorkerPlan<'_>,
    children: &[libc::pid_t],
    workers: usize,
    forked: Result<()>,
    timing: &Timing,
    gate: Option<&dyn Gate>,
) -> Result<Window> {
    let window = forked.and_then(|()| coordinate(plan, workers, Some(children), timing, gate));
    if window.is_err() {
        plan.region.set_phase(Phase::Abort);
    }
    let reaped = reap(children, if window.is_ok() { timing.stall_timeout } else { ABORT_GRACE });
    let window = window?;
    reaped?;
    Ok(window)
}

/// Forking a multi-threaded process leaves locks held in the child; refuse.
fn ensure_single_threaded() -> Result<()> {
    match sys::thread_count() {
        Some(1) | None => Ok(()),
        Some(n) => bail!("internal error: cannot fork workers while {n} threads run"),
    }
}

/// Waits for every child; kills those that do not leave within `grace`.
fn reap(children: &[libc::pid_t], grace: Duration) -> Result<()> {
    let deadline = sys::monotonic_ns() + grace.as_nanos() as u64;
    let mut problem = None;
    for (index, &pid) in children.iter().enumerate() {
        let waited = loop {
            match sys::wait_child(pid, false) {
                Ok(None) => {}
                done => break done,
            }
            if sys::monotonic_ns() >= deadline {
                // Still there after the grace period (stuck in a system call, or stopped): kill it.
                let _ = sys::send_signal(pid, libc::SIGKILL);
                problem.get_or_insert_with(|| format!("worker {index} did not stop within {grace:?} and was killed"));
                break sys::wait_child(pid, true);
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        let Ok(Some(status)) = waited else { continue };
        if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) != libc::SIGKILL {
            problem.get_or_insert_with(|| format!("worker {index} died ({})", signals::name(libc::WTERMSIG(status))));
        }
    }
    match problem {
        Some(p) => bail!(p),
        None => Ok(()),
    }
}

/// Thread workers under `--memory-limit`: in one forked process inside the
/// limit's cgroup, so that fsscale itself stays outside it (threads share
/// their process's memory, and so its cgroup). The threads are the same
/// workers as [`run_threads`]'s, coordinated through the same shared region.
pub(super) fn run_threads_in_host(plan: &WorkerPlan<'_>, timing: &Timing, gate: Option<&dyn Gate>) -> Result<Window> {
    ensure_single_threaded()?;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: single-threaded (checked above); the child leaves only through `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        signals::detach_worker(parent);
        let mut spawned = Ok(());
        worker::in_memory_cgroup(plan, 0..plan.region.workers(), || {
            spawned = with_threads(plan, |started| started.map(drop));
        });
        // No destructor of the parent's state runs in the child.
        sys::exit_now(if spawned.is_ok() { 0 } else { 1 });
    }
    if pid < 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        bail!("fork of the process hosting {} worker threads failed: {}", plan.workers, sys::errno_text(errno));
    }
    coordinate_children(plan, &[pid], plan.region.workers(), Ok(()), timing, gate)
        .map_err(|e| e.context("the process hosting the worker threads, inside --memory-limit's cgroup"))
}
