//! `--profile locks`: where the workers waited on kernel locks, from the
//! `lock:contention_begin`/`contention_end` tracepoints with the kernel
//! stack at each begin, summed per contention site. Collected by BPF
//! programs that pair and sum in the kernel ([`bpf::BpfLocks`]) where the
//! kernel allows it, else through a tracefs instance ([`tracefs::TracefsLocks`]).

pub mod bpf;
pub mod identity;
pub mod tracefs;

use std::collections::HashMap;

use crate::results::{Collector, LockHolder, LockObject, LockProfile, LockSite};

/// The tracepoints' flags (include/trace/events/lock.h, `LCB_F_*`).
pub(crate) use crate::instruments::bpf::shared::{
    LCB_F_MUTEX as MUTEX, LCB_F_PERCPU as PERCPU, LCB_F_READ as READ, LCB_F_RT as RT, LCB_F_SPIN as SPIN,
    LCB_F_WRITE as WRITE,
};

/// The lock's kind as the flags tell it.
pub(crate) fn lock_kind(flags: u32) -> &'static str {
    match flags {
        f if f & MUTEX != 0 && f & SPIN != 0 => "mutex (spinning)",
        f if f & MUTEX != 0 => "mutex",
        f if f & PERCPU != 0 && f & WRITE != 0 => "percpu rwsem write",
        f if f & PERCPU != 0 => "percpu rwsem read",
        f if f & RT != 0 => "rtmutex",
        f if f & SPIN != 0 && f & READ != 0 => "rwlock read",
        f if f & SPIN != 0 && f & WRITE != 0 => "rwlock write",
        f if f & SPIN != 0 => "spinlock",
        f if f & READ != 0 => "rwsem read",
        f if f & WRITE != 0 => "rwsem write",
        _ => "other",
    }
}

/// Frames of the tracer itself, on top of every stack it records.
pub(crate) fn is_tracing(name: &str) -> bool {
    ["trace_event_raw_event_", "perf_trace_", "__traceiter_", "__trace_", "trace_contention", "trace_call_bpf", "bpf_"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// A stack (innermost first) without the tracer's frames on top: through
/// the last tracing frame among the first few, and whatever is above it
/// (a BPF program's own frame, which kallsyms may not name).
pub(crate) fn below_tracer<'a, 'b>(frames: &'b [&'a str]) -> &'b [&'a str] {
    const TOP: usize = 8;
    match frames.iter().take(TOP).rposition(|f| is_tracing(f)) {
        Some(last) => &frames[last + 1..],
        None => frames,
    }
}

/// Frames inside a lock's implementation, below the call that took it.
pub(crate) fn is_lock_internal(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "_raw_",
        "__raw_",
        "raw_spin",
        "do_raw_",
        "queued_",
        "__pv_queued",
        "pv_queued",
        "native_queued",
        "down",
        "__down",
        "up_",
        "rwsem_",
        "__rwsem",
        "mutex_",
        "__mutex",
        "ww_mutex",
        "percpu_down",
        "__percpu_down",
        "percpu_rwsem",
        "__percpu_rwsem",
        "osq_",
        "rt_mutex",
        "__rt_mutex",
        "rt_spin",
        "rwbase_",
        "_down_",
        "spin_lock",
        "read_lock",
        "write_lock",
        "lock_timer",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The contention site of a stack (innermost first): the call that took
/// the lock and the two callers above it, `down_write ← filename_create ← do_mkdirat`.
pub(crate) fn site_of(frames: &[&str]) -> String {
    site_where(frames, is_lock_internal)
}

/// The site of a stack (innermost first) whose top frames are `internal`
/// (a lock's or the scheduler's own): the last of them, where the caller's
/// code asked for it, and the two callers above.
pub(crate) fn site_where(frames: &[&str], internal: impl Fn(&str) -> bool) -> String {
    let frames = below_tracer(frames);
    let outside = frames.iter().position(|f| !internal(f)).unwrap_or(frames.len());
    let from = outside.saturating_sub(1);
    let site: Vec<&str> = frames.iter().skip(from).take(3).copied().collect();
    if site.is_empty() {
        "[no stack]".to_string()
    } else {
        site.join(" ← ")
    }
}

#[derive(Default)]
struct SiteTotals {
    count: u64,
    wait_ns: u64,
    max_ns: u64,
    /// Per object, where known, with its count and wait.
    objects: Vec<LockObject>,
    /// Per holder, where known.
    holders: Vec<LockHolder>,
}

/// Where a wait was: its site, the lock's kind, the lock's name (a static
/// one's) and the object it belongs to, where known.
pub(crate) struct Where {
    pub site: String,
    pub kind: &'static str,
    pub lock: Option<String>,
    pub object: Option<LockObject>,
    /// Who held it as the waits began, and whether on a CPU (BPF, sleeping locks).
    pub holder: Option<(String, bool)>,
}

/// Waits summed by (site, kind, lock name), whichever way they were collected.
#[derive(Default)]
pub(crate) struct Sums {
    totals: HashMap<(String, &'static str, Option<String>), SiteTotals>,
    contentions: u64,
}

impl Sums {
    pub(crate) fn add(&mut self, at: Where, count: u64, wait_ns: u64, max_ns: u64) {
        let totals = self.totals.entry((at.site, at.kind, at.lock)).or_default();
        totals.count += count;
        totals.wait_ns += wait_ns;
        totals.max_ns = totals.max_ns.max(max_ns);
        if let Some(object) = at.object {
            totals.objects.push(LockObject { count, wait_s: wait_ns as f64 / 1e9, ..object });
        }
        if let Some((holder, on_cpu)) = at.holder {
            let on_cpu = if on_cpu { count } else { 0 };
            totals.holders.push(LockHolder { holder, count, wait_s: wait_ns as f64 / 1e9, on_cpu });
        }
        self.contentions += count;
    }

    pub(crate) fn profile(self, lost: u64, method: Collector) -> LockProfile {
        let sites = self
            .totals
            .into_iter()
            .map(|((site, kind, lock), t)| LockSite {
                site,
                kind: kind.to_string(),
                lock,
                count: t.count,
                wait_s: t.wait_ns as f64 / 1e9,
                max_wait_s: t.max_ns as f64 / 1e9,
                objects: LockObject::top(&t.objects),
                holders: LockHolder::top(&t.holders),
            })
            .collect();
        LockProfile { method, ..LockProfile::from_sites(self.contentions, lost, sites) }
    }
}

/// `--profile locks`' measuring half.
pub(crate) struct LocksRecorder;

impl super::Recorder for LocksRecorder {
    fn needs(&self, config: &super::InstrumentConfig) -> super::Needs {
        let tracepoints = &[("lock", "contention_begin"), ("lock", "contention_end")];
        super::traced_needs(config, tracepoints, " (it needs Linux 5.19 or later)")
    }

    fn bpf_refused(&self, config: &super::InstrumentConfig) -> Option<String> {
        bpf::BpfLocks::arm(&[], config.sampled_stacks).err().map(|e| format!("{e:#}"))
    }

    fn arm(&self, run: &super::ArmFor<'_>) -> anyhow::Result<Option<Box<dyn super::Armed>>> {
        let (config, tasks) = (run.config, run.tasks);
        super::armed_collector(
            config.via.unwrap_or_default(),
            || bpf::BpfLocks::arm(tasks, config.sampled_stacks),
            || tracefs::TracefsLocks::arm(tasks),
            |record, profile| record.sections.locks = Some(profile),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_flags() {
        assert_eq!(lock_kind(WRITE), "rwsem write");
        assert_eq!(lock_kind(READ), "rwsem read");
        assert_eq!(lock_kind(SPIN), "spinlock");
        assert_eq!(lock_kind(MUTEX), "mutex");
        assert_eq!(lock_kind(MUTEX | SPIN), "mutex (spinning)");
        assert_eq!(lock_kind(PERCPU | READ), "percpu rwsem read");
        assert_eq!(lock_kind(SPIN | WRITE), "rwlock write");
        assert_eq!(lock_kind(0), "other");
    }

    #[test]
    fn a_site_is_the_lock_call_and_two_callers() {
        let stack = [
            "trace_event_raw_event_contention_begin",
            "rwsem_down_write_slowpath",
            "down_write",
            "filename_create",
            "do_mkdirat",
            "__x64_sys_mkdirat",
        ];
        assert_eq!(site_of(&stack), "down_write ← filename_create ← do_mkdirat");
        let spin = ["__pv_queued_spin_lock_slowpath", "_raw_spin_lock", "d_alloc_parallel", "lookup_open"];
        assert_eq!(site_of(&spin), "_raw_spin_lock ← d_alloc_parallel ← lookup_open");
        // No lock frames at all: the top three.
        assert_eq!(site_of(&["a", "b", "c", "d"]), "a ← b ← c");
        // A BPF raw tracepoint's stack: the program (unnamed), its runner, then the kernel.
        let btf =
            ["[unknown]", "bpf_trace_run2", "__pv_queued_spin_lock_slowpath", "_raw_spin_lock", "d_alloc", "lookup"];
        assert_eq!(site_of(&btf), "_raw_spin_lock ← d_alloc ← lookup");
        assert_eq!(site_of(&[]), "[no stack]");
    }
}
