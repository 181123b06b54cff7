//! `--profile locks` where BPF is unavailable: the
//! `lock:contention_begin`/`contention_end` tracepoints of the workers,
//! with the kernel stack at each begin (the `stacktrace` trigger), in a
//! private tracefs instance; paired per task into waits in user space.
//! Each stack costs the waiter tens of µs of unwinding and copying.

use std::collections::HashMap;

use anyhow::{Context, Result};

use super::{lock_kind, site_of, Sums, Where};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::ringbuf::RawEvent;
use crate::instruments::tracefs::{event_id, field, Recording};
use crate::instruments::Collect;
use crate::results::{Collector, LockProfile};

/// The ids of the events read, and where their fields sit.
#[derive(Clone, Copy)]
struct Ids {
    begin: u16,
    end: u16,
    stack: u16,
    /// `lock_addr` in both events, and `flags` in the begin.
    lock_at: usize,
    flags_at: usize,
}

/// One run's lock tracing: armed before the window, on in it, read after.
pub(crate) struct TracefsLocks {
    recording: Recording,
    pairing: Pairing,
}

impl TracefsLocks {
    /// A private instance that will record the contentions of `tasks` and
    /// of every task they start, once [`Collect::switch`] turns it on.
    pub(crate) fn arm(tasks: &[i32]) -> Result<TracefsLocks> {
        let lock_at = field("lock", "contention_begin", "lock_addr", 8)?;
        if field("lock", "contention_end", "lock_addr", 8)? != lock_at {
            anyhow::bail!(
                "lock:contention_begin and contention_end keep lock_addr at different offsets on this kernel"
            );
        }
        let ids = Ids {
            begin: event_id("lock", "contention_begin")?,
            end: event_id("lock", "contention_end")?,
            stack: event_id("ftrace", "kernel_stack")?,
            lock_at,
            flags_at: field("lock", "contention_begin", "flags", 4)?,
        };
        let recording = Recording::of_tasks(tasks, |instance| {
            // A condition makes the trigger run after the pid filter, not before it.
            instance.write("events/lock/contention_begin/trigger", "stacktrace if flags < 4096")?;
            instance.write("events/lock/contention_begin/enable", "1")?;
            instance.write("events/lock/contention_end/enable", "1")
        })?;
        Ok(TracefsLocks { recording, pairing: Pairing::new(ids) })
    }
}

impl Collect<LockProfile> for TracefsLocks {
    fn switch(&mut self, on: bool) -> Result<()> {
        self.recording.switch(on)
    }

    /// Reads what the buffers hold now (during the window, so that they do not fill).
    fn drain(&mut self) -> Result<()> {
        let pairing = &mut self.pairing;
        self.recording.drain(false, |e| pairing.event(e))
    }

    /// Reads the rest and sums the run's waits per site.
    fn finish(mut self: Box<Self>) -> Result<LockProfile> {
        let pairing = &mut self.pairing;
        self.recording.drain(true, |e| pairing.event(e))?;
        let lost = self.recording.lost().context("reading the trace buffers' statistics")?;
        // Named now, not before the run: a module loaded since (a filesystem's) has its names.
        Ok(self.pairing.profile(lost, &*KernelSymbols::now()?))
    }
}

/// A wait begun and not yet ended.
struct Pending {
    lock: u64,
    flags: u32,
    begin: u64,
    /// When the stack was taken: the wait is counted from there, as taking
    /// it delays the waiter (tens of µs of unwinding) before it waits.
    stack_at: Option<u64>,
    stack: Option<Vec<u64>>,
}

/// A (stack, lock, flags)'s waits: count, total and longest wait (ns).
type RawTotals = (u64, u64, u64);

/// Begin/stack/end events to waits, summed by (stack, lock, flags) and
/// named by site once read.
struct Pairing {
    ids: Ids,
    pending: HashMap<i32, Vec<Pending>>,
    totals: HashMap<(Vec<u64>, u64, u32), RawTotals>,
}

impl Pairing {
    fn new(ids: Ids) -> Pairing {
        Pairing { ids, pending: HashMap::new(), totals: HashMap::new() }
    }

    fn event(&mut self, e: RawEvent<'_>) {
        let kind = e.kind();
        let pid = e.pid();
        if kind == self.ids.begin {
            let (lock, flags) = (e.u64_at(self.ids.lock_at), e.u32_at(self.ids.flags_at));
            let waits = self.pending.entry(pid).or_default();
            match waits.last_mut() {
                // The same lock again (a mutex that spun, then sleeps): one wait, of the later kind.
                Some(top) if top.lock == lock => top.flags = flags,
                _ => waits.push(Pending { lock, flags, begin: e.timestamp, stack_at: None, stack: None }),
            }
        } else if kind == self.ids.stack {
            let Some(top) = self.pending.get_mut(&pid).and_then(|w| w.last_mut()) else { return };
            if top.stack.is_none() {
                top.stack_at = Some(e.timestamp);
                top.stack = Some(stack_frames(&e));
            }
        } else if kind == self.ids.end {
            let lock = e.u64_at(self.ids.lock_at);
            let Some(waits) = self.pending.get_mut(&pid) else { return };
            let Some(at) = waits.iter().rposition(|w| w.lock == lock) else { return };
            // Waits above it lost their end (a buffer was full): drop them too.
            let wait = waits.drain(at..).next().expect("position is in range");
            let from = wait.stack_at.unwrap_or(wait.begin);
            self.record(wait, e.timestamp.saturating_sub(from));
        }
    }

    fn record(&mut self, wait: Pending, ns: u64) {
        let t = self.totals.entry((wait.stack.unwrap_or_default(), wait.lock, wait.flags)).or_default();
        t.0 += 1;
        t.1 += ns;
        t.2 = t.2.max(ns);
    }

    fn profile(self, lost: u64, symbols: &KernelSymbols) -> LockProfile {
        let mut sites_of_stacks: HashMap<Vec<u64>, String> = HashMap::new();
        let mut sums = Sums::default();
        for ((stack, lock, flags), (count, ns, max_ns)) in self.totals {
            let site = sites_of_stacks
                .entry(stack)
                .or_insert_with_key(|stack| {
                    let names: Vec<&str> = stack.iter().map(|&a| symbols.function(a).unwrap_or("[unknown]")).collect();
                    site_of(&names)
                })
                .clone();
            let at = Where { site, kind: lock_kind(flags), lock: symbols.variable(lock), object: None, holder: None };
            sums.add(at, count, ns, max_ns);
        }
        sums.profile(lost, Collector::Tracefs)
    }
}

/// The `ftrace:kernel_stack` event's addresses: `int size` (entries) at 8,
/// the callers from 16.
pub(crate) fn stack_frames(e: &RawEvent<'_>) -> Vec<u64> {
    let room = e.data.len().saturating_sub(16) / 8;
    let size = e.u32_at(8) as usize;
    // Older kernels give the size in bytes.
    let entries = if size <= room { size } else { (size / 8).min(room) };
    (0..entries).map(|i| e.u64_at(16 + 8 * i)).take_while(|&a| a != 0 && a != u64::MAX).collect()
}

#[cfg(test)]
mod tests {
    use super::super::{MUTEX, SPIN, WRITE};
    use super::*;
    use crate::instruments::ringbuf::page_events;
    use crate::instruments::ringbuf::tests::{payload, PageBuilder};

    fn symbols() -> KernelSymbols {
        let text = "ffffffff81000000 T _stext\nffffffff81000100 t rwsem_down_write_slowpath\n\
                    ffffffff81000200 T down_write\nffffffff81000300 T filename_create\n\
                    ffffffff81000400 T do_mkdirat\nffffffff82000000 D rename_lock\n";
        KernelSymbols::parse(text).unwrap()
    }

    fn begin(lock: u64, flags: u32) -> Vec<u8> {
        let mut rest = lock.to_ne_bytes().to_vec();
        rest.extend_from_slice(&flags.to_ne_bytes());
        rest
    }

    fn stack(addresses: &[u64]) -> Vec<u8> {
        let mut rest = (addresses.len() as u32).to_ne_bytes().to_vec();
        rest.extend_from_slice(&[0; 4]);
        for a in addresses {
            rest.extend_from_slice(&a.to_ne_bytes());
        }
        rest
    }

    #[test]
    fn begin_stack_end_pair_into_waits_per_site() {
        let ids = Ids { begin: 408, end: 407, stack: 4, lock_at: 8, flags_at: 16 };
        let mut pairing = Pairing::new(ids);
        let frames = [0xffffffff81000110, 0xffffffff81000210, 0xffffffff81000310, 0xffffffff81000410];
        let inode_lock = 0xffff888100000000u64;
        let mut page = PageBuilder::new(0);
        page.event(1_000, &payload(408, 7, &begin(inode_lock, WRITE)))
            .event(1_500, &payload(4, 7, &stack(&frames)))
            // Task 8 waits on a static spinlock meanwhile, without a stack.
            .event(1_600, &payload(408, 8, &begin(0xffffffff82000000, SPIN)))
            .event(1_700, &payload(407, 8, &inode_lock.to_ne_bytes()))
            .event(1_800, &payload(407, 8, &0xffffffff82000000u64.to_ne_bytes()))
            .event(4_500, &payload(407, 7, &inode_lock.to_ne_bytes()))
            // An end without a begin (began before the window) is ignored.
            .event(5_000, &payload(407, 9, &inode_lock.to_ne_bytes()));
        page_events(&page.build(false), |e| pairing.event(e));
        let profile = pairing.profile(0, &symbols());
        assert_eq!(profile.contentions, 2);
        let top = &profile.sites[0];
        assert_eq!(top.site, "down_write ← filename_create ← do_mkdirat");
        assert_eq!((top.kind.as_str(), top.lock.as_deref(), top.count), ("rwsem write", None, 1));
        // From the stack (1,500), not the begin: 3,000 ns.
        assert!((top.wait_s - 3e-6).abs() < 1e-12, "{}", top.wait_s);
        let spin = &profile.sites[1];
        assert_eq!((spin.site.as_str(), spin.lock.as_deref()), ("[no stack]", Some("rename_lock")));
        assert!((spin.wait_s - 200e-9).abs() < 1e-15);
    }

    #[test]
    fn a_mutex_that_spins_then_sleeps_is_one_wait() {
        let ids = Ids { begin: 408, end: 407, stack: 4, lock_at: 8, flags_at: 16 };
        let mut pairing = Pairing::new(ids);
        let mut page = PageBuilder::new(0);
        page.event(10, &payload(408, 3, &begin(0x10, MUTEX | SPIN)))
            .event(20, &payload(408, 3, &begin(0x10, MUTEX)))
            .event(110, &payload(407, 3, &0x10u64.to_ne_bytes()));
        page_events(&page.build(false), |e| pairing.event(e));
        let profile = pairing.profile(0, &symbols());
        assert_eq!(profile.contentions, 1);
        assert_eq!(profile.sites[0].kind, "mutex");
        assert!((profile.sites[0].wait_s - 100e-9).abs() < 1e-15);
    }
}
