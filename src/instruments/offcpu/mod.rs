//! `--profile offcpu`: where the workers sleep. Every switch-out of a
//! traced task in a sleeping state is kept with its kernel stack until the
//! task is woken (`sched:sched_wakeup`) and until it runs again
//! (`sched:sched_switch` in), and summed per (stack, state): by BPF
//! programs in the kernel ([`bpf::BpfSleeps`]) as bcc's `offcputime` does,
//! else from a tracefs instance ([`tracefs::TracefsSleeps`]).
//!
//! The time asleep is counted to the wakeup, not to the next run, so that
//! it agrees with the `asleep` share (neither on a CPU nor runnable) that
//! the scheduler's per-task statistics give; the wait for a CPU after the
//! wakeup is kept apart (`wake_to_run_s`).

pub mod bpf;
pub mod tracefs;

use std::collections::{BTreeMap, HashMap};

use super::bpf::shared;
use super::kallsyms::KernelSymbols;
use super::locks::{below_tracer, is_lock_internal, is_tracing, site_where};
use crate::results::{Collector, OffCpuProfile, SleepSite};

/// `prev_state` bits of `sched_switch` (`TASK_REPORT` states, each as a
/// bit; a preempted task reports `TASK_REPORT_MAX`, 0x100, which is no sleep).
const INTERRUPTIBLE: u64 = shared::STATE_INTERRUPTIBLE as u64;
const UNINTERRUPTIBLE: u64 = shared::STATE_UNINTERRUPTIBLE as u64;
const STOPPED: u64 = shared::STATE_STOPPED as u64;
const TRACED: u64 = shared::STATE_TRACED as u64;
const IDLE: u64 = shared::STATE_IDLE as u64;
/// The states that are sleeps: dead, zombie and parked tasks are not waiting for anything.
pub(crate) const SLEEPING: u64 = INTERRUPTIBLE | UNINTERRUPTIBLE | STOPPED | TRACED | IDLE;

fn state_name(state: u64) -> &'static str {
    match state {
        s if s & UNINTERRUPTIBLE != 0 => "uninterruptible",
        s if s & INTERRUPTIBLE != 0 => "interruptible",
        s if s & (STOPPED | TRACED) != 0 => "stopped",
        s if s & IDLE != 0 => "idle",
        _ => "other",
    }
}

/// Frames of the scheduler and of the generic ways to wait, above the
/// code that decided to sleep.
fn is_sleep_internal(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "__schedule",
        "schedule",
        "preempt_schedule",
        "io_schedule",
        "__switch_to",
        "finish_task_switch",
        "context_switch",
        "do_nanosleep",
        "hrtimer_nanosleep",
        "bit_wait",
        "__wait_on_bit",
        "out_of_line_wait_on_bit",
        "wait_for_completion",
        "__wait_for_common",
        "do_wait_for_common",
        "wait_woken",
        "folio_wait_bit",
        "__folio_lock",
        "__lock_page",
        "wait_on_page_bit",
    ];
    is_tracing(name) || is_lock_internal(name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Where a sleep began: the wait call and two callers, `schedule ← jbd2_log_wait_commit ← ext4_sync_file`.
fn sleep_site(frames: &[&str]) -> String {
    site_where(frames, is_sleep_internal)
}

#[derive(Default)]
struct Totals {
    count: u64,
    asleep_ns: u64,
    wake_to_run_ns: u64,
    max_ns: u64,
}

/// Sleeps summed by (kernel stack, state), whichever way they were collected.
#[derive(Default)]
pub(crate) struct Sleeps {
    by_stack: HashMap<(Vec<u64>, u64), Totals>,
}

impl Sleeps {
    pub(crate) fn add(
        &mut self,
        stack: &[u64],
        state: u64,
        count: u64,
        asleep_ns: u64,
        wake_to_run_ns: u64,
        max_ns: u64,
    ) {
        let t = self.by_stack.entry((stack.to_vec(), state & SLEEPING)).or_default();
        t.count += count;
        t.asleep_ns += asleep_ns;
        t.wake_to_run_ns += wake_to_run_ns;
        t.max_ns = t.max_ns.max(max_ns);
    }

    pub(crate) fn profile(self, symbols: &KernelSymbols, lost: u64, method: Collector) -> OffCpuProfile {
        let mut sites: BTreeMap<(String, &'static str), SleepSite> = BTreeMap::new();
        let mut folded: BTreeMap<String, u64> = BTreeMap::new();
        let (mut sleeps, mut asleep_ns, mut wake_ns) = (0u64, 0u64, 0u64);
        for ((stack, state), t) in self.by_stack {
            sleeps += t.count;
            asleep_ns += t.asleep_ns;
            wake_ns += t.wake_to_run_ns;
            let names: Vec<&str> = stack.iter().map(|&a| symbols.function(a).unwrap_or("[unknown]")).collect();
            let state = state_name(state);
            let site = sites.entry((sleep_site(&names), state)).or_insert_with_key(|(site, state)| SleepSite {
                site: site.clone(),
                state: state.to_string(),
                count: 0,
                asleep_s: 0.0,
                max_asleep_s: 0.0,
            });
            site.count += t.count;
            site.asleep_s += t.asleep_ns as f64 / 1e9;
            site.max_asleep_s = site.max_asleep_s.max(t.max_ns as f64 / 1e9);
            let mut root_first: Vec<&str> =
                below_tracer(&names).iter().copied().filter(|n| !is_tracing(n)).rev().collect();
            if root_first.is_empty() {
                root_first.push("[no stack]");
            }
            *folded.entry(root_first.join(";")).or_default() += t.asleep_ns.div_ceil(1000);
        }
        OffCpuProfile {
            method,
            programs: None,
            sleeps,
            asleep_s: asleep_ns as f64 / 1e9,
            wake_to_run_s: wake_ns as f64 / 1e9,
            lost_events: lost,
            min_sleep_s: 0.0,
            sites: OffCpuProfile::rank(sites.into_values().collect()),
            folded,
        }
    }
}

/// `--profile offcpu`'s measuring half.
pub(crate) struct SleepsRecorder;

impl super::Recorder for SleepsRecorder {
    fn needs(&self, config: &super::InstrumentConfig) -> super::Needs {
        super::traced_needs(config, &[("sched", "sched_switch"), ("sched", "sched_wakeup")], "")
    }

    fn bpf_refused(&self, config: &super::InstrumentConfig) -> Option<String> {
        bpf::BpfSleeps::arm(&[], 0, config.sampled_stacks).err().map(|e| format!("{e:#}"))
    }

    fn arm(&self, run: &super::ArmFor<'_>) -> anyhow::Result<Option<Box<dyn super::Armed>>> {
        let (config, tasks) = (run.config, run.tasks);
        let min_sleep_ns = config.min_sleep_us * 1000;
        super::armed_collector(
            config.via.unwrap_or_default(),
            || bpf::BpfSleeps::arm(tasks, min_sleep_ns, config.sampled_stacks),
            || tracefs::TracefsSleeps::arm(tasks, min_sleep_ns),
            |record, profile| record.sections.offcpu = Some(profile),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_is_named_by_its_wait_call_and_two_callers() {
        let fsync = [
            "__traceiter_sched_switch",
            "__schedule",
            "schedule",
            "jbd2_log_wait_commit",
            "ext4_sync_file",
            "vfs_fsync_range",
            "do_fsync",
        ];
        assert_eq!(sleep_site(&fsync), "schedule ← jbd2_log_wait_commit ← ext4_sync_file");
        let writeback = [
            "__schedule",
            "schedule",
            "io_schedule",
            "folio_wait_bit_common",
            "folio_wait_writeback",
            "__filemap_fdatawait_range",
        ];
        assert_eq!(sleep_site(&writeback), "folio_wait_bit_common ← folio_wait_writeback ← __filemap_fdatawait_range");
        let rwsem =
            ["__schedule", "schedule", "rwsem_down_write_slowpath", "down_write", "filename_create", "do_mkdirat"];
        assert_eq!(sleep_site(&rwsem), "down_write ← filename_create ← do_mkdirat");
    }

    #[test]
    fn states_are_named_as_ps_would_and_only_sleeps_count() {
        assert_eq!(state_name(UNINTERRUPTIBLE), "uninterruptible");
        assert_eq!(state_name(INTERRUPTIBLE), "interruptible");
        assert_eq!(state_name(STOPPED), "stopped");
        assert_eq!(state_name(IDLE), "idle");
        // Preempted (TASK_REPORT_MAX), dead, zombie, parked: not sleeps.
        for state in [0x100u64, 0x10, 0x20, 0x40, 0] {
            assert_eq!(state & SLEEPING, 0, "{state:#x}");
        }
    }

    #[test]
    fn sleeps_sum_per_site_with_folded_stacks_in_microseconds() {
        let text = "ffffffff81000000 T _stext\nffffffff81000100 T __schedule\nffffffff81000200 T schedule\n\
                    ffffffff81000300 T jbd2_log_wait_commit\nffffffff81000400 T ext4_sync_file\n";
        let symbols = KernelSymbols::parse(text).unwrap();
        let stack = [0xffffffff81000110, 0xffffffff81000210, 0xffffffff81000310, 0xffffffff81000410];
        let mut sleeps = Sleeps::default();
        sleeps.add(&stack, UNINTERRUPTIBLE, 3, 3_000_000, 30_000, 1_500_000);
        sleeps.add(&stack, UNINTERRUPTIBLE, 1, 500_000, 0, 500_000);
        sleeps.add(&[], INTERRUPTIBLE, 1, 1_000, 0, 1_000);
        let p = sleeps.profile(&symbols, 2, Collector::Bpf);
        assert_eq!((p.sleeps, p.lost_events), (5, 2));
        assert!((p.asleep_s - 3.501e-3).abs() < 1e-12, "{}", p.asleep_s);
        assert!((p.wake_to_run_s - 30e-6).abs() < 1e-12);
        let top = &p.sites[0];
        assert_eq!(
            (top.site.as_str(), top.state.as_str(), top.count),
            ("schedule ← jbd2_log_wait_commit ← ext4_sync_file", "uninterruptible", 4)
        );
        assert!((top.max_asleep_s - 1.5e-3).abs() < 1e-12);
        assert_eq!(p.folded["ext4_sync_file;jbd2_log_wait_commit;schedule;__schedule"], 3_500);
        assert_eq!(p.folded["[no stack]"], 1);
        assert_eq!(p.sites[1].site, "[no stack]");
    }
}
