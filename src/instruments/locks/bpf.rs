//! `--profile locks` in the kernel: BPF programs on
//! `lock:contention_begin`/`contention_end` keep each traced task's open
//! wait (its lock, kind, stack id, start) in a map and, at its end, add it
//! to the totals of its (lock, stack, kind), as `perf lock contention -b`
//! does. The waiter pays a stack walk into a map, not a copy to user space.

use std::collections::HashMap;

use anyhow::Result;

use super::identity::{self, Layout};
use super::{lock_kind, site_of, Sums, Where};
use crate::instruments::bpf::asm::{Asm, Cond, Helper, Insn, Size, FP, R0, R1, R2, R3, R6, R7, R8, R9};
use crate::instruments::bpf::sys::{Map, MapKind};
use crate::instruments::bpf::{count, exit_unless_on, lookup, update, Attachment, Base, Collection, Counters};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::tracefs::field;
use crate::instruments::{u32_at, u64_at, Collect};
use crate::results::{Collector, LockProfile};

/// Distinct (lock, stack, kind) totals a run can hold.
const SITES: u32 = 16 * 1024;

/// One run's in-kernel lock profile.
pub struct BpfLocks {
    collection: Collection,
}

impl BpfLocks {
    pub(crate) fn arm(tasks: &[i32]) -> Result<BpfLocks> {
        let base = Base::new(tasks)?;
        // Per (task, level): start (ns), lock, stack id, flags.
        let pending = Map::create(MapKind::Hash, "fsscale_waits", 8, 24, 64 * 1024)?;
        // Per (lock, stack id, flags): count, wait (ns), longest (ns), and the lock's object: inode number, device, mode and kind.
        let sites = Map::create(MapKind::Hash, "fsscale_sites", 16, 40, SITES)?;
        // Without the kernel's type information, locks are known by their sites only.
        let layout = Layout::read().ok();
        let programs = vec![
            Attachment {
                name: "fsscale_lock_in",
                insns: begin_program(&base.tasks.map, &pending, &base.stacks.map, &base.counters)?,
                tracepoint: ("lock", "contention_begin"),
            },
            Attachment {
                name: "fsscale_lock_out",
                insns: end_program(&pending, &sites, &base.counters, layout.as_ref())?,
                tracepoint: ("lock", "contention_end"),
            },
        ];
        Ok(BpfLocks { collection: Collection::attach(base, pending, sites, programs)? })
    }
}

impl Collect<LockProfile> for BpfLocks {
    fn switch(&mut self, on: bool) -> Result<()> {
        self.collection.switch(on)
    }

    /// Reads the totals and names their sites.
    fn finish(mut self: Box<Self>) -> Result<LockProfile> {
        let totals = self.collection.read()?;
        let symbols = KernelSymbols::get()?;
        let mut sums = Sums::default();
        let mut sites_of_stacks: HashMap<u32, String> = HashMap::new();
        for (key, value) in totals.entries {
            let (lock, stack, flags) = (u64_at(&key, 0), u32_at(&key, 8), u32_at(&key, 12));
            let site = match sites_of_stacks.get(&stack) {
                Some(site) => site.clone(),
                None => {
                    let names: Vec<&str> = self
                        .collection
                        .stacks()
                        .frames(stack)?
                        .iter()
                        .map(|&a| symbols.function(a).unwrap_or("[unknown]"))
                        .collect();
                    let site = site_of(&names);
                    sites_of_stacks.insert(stack, site.clone());
                    site
                }
            };
            let (n, wait_ns, max_ns) = (u64_at(&value, 0), u64_at(&value, 8), u64_at(&value, 16));
            let object = identity::object(u64_at(&value, 24), u32_at(&value, 32), u32_at(&value, 36));
            let at = Where { site, kind: lock_kind(flags), lock: symbols.variable(lock), object };
            sums.add(at, n, wait_ns, max_ns);
        }
        Ok(LockProfile { programs: totals.cost, ..sums.profile(totals.lost, Collector::Bpf) })
    }
}

/// Waits a task can have open at once: its own, and one begun inside it
/// (an interrupt's spinlock while it spins for a mutex). Deeper ones are counted as lost.
const LEVELS: usize = 2;
const FRESH: [&str; LEVELS] = ["fresh0", "fresh1"];
const DEEPER: [&str; LEVELS] = ["deeper0", "deeper1"];
const OUTER: [&str; LEVELS] = ["outer0", "outer1"];

/// `contention_begin`: a traced task's new wait, with its stack, into
/// `pending` at key (task, level).
fn begin_program(tasks: &Map, pending: &Map, stacks: &Map, counters: &Counters) -> Result<Vec<Insn>> {
    let lock_at = field("lock", "contention_begin", "lock_addr")?;
    let flags_at = field("lock", "contention_begin", "flags")?;
    let mut a = Asm::new();
    a.mov(R6, R1);
    exit_unless_on(&mut a, counters);
    a.call(Helper::CurrentPidTgid).store(Size::U32, FP, -8, R0);
    lookup(&mut a, tasks, -8, "out");
    a.load(Size::U64, R8, R6, lock_at).load(Size::U32, R9, R6, flags_at);
    for level in 0..LEVELS {
        a.store_imm(Size::U32, FP, -4, level as i32);
        lookup(&mut a, pending, -8, FRESH[level]);
        // The same lock again (a mutex that spun, now sleeps) is one wait, of the later kind.
        a.load(Size::U64, R1, R0, 8).jump_if_reg(Cond::Ne, R1, R8, DEEPER[level]);
        a.store(Size::U32, R0, 20, R9).jump("out");
        a.label(DEEPER[level]);
    }
    count(&mut a, counters, Counters::NESTED);
    a.jump("out");
    for (level, fresh) in FRESH.iter().enumerate() {
        a.label(fresh).store_imm(Size::U32, FP, -4, level as i32).jump("take");
    }
    a.label("take");
    a.mov(R1, R6).load_map(R2, stacks.fd()).mov_imm(R3, 0).call(Helper::StackId);
    // A stack the map could not take (a negative id) is kept as `[no stack]`.
    a.store(Size::U32, FP, -16, R0);
    a.store(Size::U64, FP, -24, R8).store(Size::U32, FP, -12, R9);
    // Started after the stack walk, so that the walk's cost is not counted as waiting.
    a.call(Helper::KtimeNs).store(Size::U64, FP, -32, R0);
    update(&mut a, pending, -8, -32, 0);
    a.jump_if(Cond::Eq, R0, 0, "out");
    count(&mut a, counters, Counters::FULL);
    a.jump("out");
    a.label("out").pass_on();
    Ok(a.finish())
}

/// `contention_end`: the task's innermost wait on that lock, ended, added
/// to its (lock, stack, kind)'s totals.
fn end_program(pending: &Map, sites: &Map, counters: &Counters, layout: Option<&Layout>) -> Result<Vec<Insn>> {
    let lock_at = field("lock", "contention_end", "lock_addr")?;
    let mut a = Asm::new();
    a.mov(R6, R1);
    exit_unless_on(&mut a, counters);
    a.call(Helper::CurrentPidTgid).store(Size::U32, FP, -8, R0);
    a.load(Size::U64, R8, R6, lock_at);
    for level in (0..LEVELS).rev() {
        let next = if level == 0 { "out" } else { OUTER[level - 1] };
        a.store_imm(Size::U32, FP, -4, level as i32);
        lookup(&mut a, pending, -8, next);
        // Another lock's end (one whose begin was not recorded) leaves the wait open.
        a.load(Size::U64, R2, R0, 8).jump_if_reg(Cond::Eq, R2, R8, "found");
        if level > 0 {
            a.label(OUTER[level - 1]);
        }
    }
    a.jump("out");
    a.label("found").mov(R7, R0);
    a.call(Helper::KtimeNs).mov(R8, R0).load(Size::U64, R1, R7, 0).sub(R8, R1);
    // The totals' key: lock, stack id, flags.
    a.load(Size::U64, R1, R7, 8).store(Size::U64, FP, -24, R1);
    a.load(Size::U32, R1, R7, 16).store(Size::U32, FP, -16, R1);
    a.load(Size::U32, R1, R7, 20).store(Size::U32, FP, -12, R1);
    a.load_map(R1, pending.fd()).mov(R2, FP).add_imm(R2, -8).call(Helper::MapDelete);
    lookup(&mut a, sites, -24, "new");
    a.label("add");
    a.mov(R9, R0).mov_imm(R1, 1).atomic_add(R9, 0, R1).atomic_add(R9, 8, R8);
    a.load(Size::U64, R1, R9, 16).jump_if_reg(Cond::Ge, R1, R8, "out").store(Size::U64, R9, 16, R8);
    a.jump("out");
    a.label("new");
    for at in [-64, -56, -48, -40, -32] {
        a.store_imm(Size::U64, FP, at, 0);
    }
    // Once per (lock, stack): what the lock belongs to.
    if let Some(layout) = layout {
        identity::emit(&mut a, layout, -24, -64, -72);
    }
    // Only if still new: another CPU may have added the same key meanwhile.
    update(&mut a, sites, -24, -64, 1);
    lookup(&mut a, sites, -24, "full");
    a.jump("add");
    a.label("full");
    count(&mut a, counters, Counters::FULL);
    a.label("out").pass_on();
    Ok(a.finish())
}
