//! `--profile offcpu` in the kernel: a BPF program on `sched_switch`
//! keeps each traced task's sleep (start, kernel stack id, state) in a map
//! at its switch-out; one on `sched_wakeup` stamps its wakeup; at its
//! switch-in the sleep is added to the totals of its (stack, state).

use anyhow::Result;

use super::{Sleeps, SLEEPING};
use crate::instruments::bpf::asm::{Asm, Cond, Helper, Insn, Size, FP, R0, R1, R2, R3, R6, R7, R8, R9};
use crate::instruments::bpf::sys::{Map, MapKind};
use crate::instruments::bpf::{count, exit_unless_on, lookup, update, Attachment, Base, Collection, Counters};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::tracefs::field;
use crate::instruments::{u32_at, u64_at, Collect};
use crate::results::{Collector, OffCpuProfile};

/// Distinct (stack, state) totals a run can hold.
const SITES: u32 = 16 * 1024;

pub struct BpfSleeps {
    collection: Collection,
}

impl BpfSleeps {
    pub(crate) fn arm(tasks: &[i32]) -> Result<BpfSleeps> {
        let base = Base::new(tasks)?;
        // Per task: switched out (ns), woken (ns, 0 until then), stack id, state.
        let sleeping = Map::create(MapKind::Hash, "fsscale_asleep", 4, 24, 64 * 1024)?;
        // Per (stack id, state): count, asleep (ns), wakeup to run (ns), longest asleep (ns).
        let sites = Map::create(MapKind::Hash, "fsscale_sleeps", 8, 32, SITES)?;
        let programs = vec![
            Attachment {
                name: "fsscale_switch",
                insns: switch_program(&base.tasks.map, &sleeping, &sites, &base.stacks.map, &base.counters)?,
                tracepoint: ("sched", "sched_switch"),
            },
            Attachment {
                name: "fsscale_wakeup",
                insns: wakeup_program(&sleeping, &base.counters)?,
                tracepoint: ("sched", "sched_wakeup"),
            },
        ];
        Ok(BpfSleeps { collection: Collection::attach(base, sleeping, sites, programs)? })
    }
}

impl Collect<OffCpuProfile> for BpfSleeps {
    fn switch(&mut self, on: bool) -> Result<()> {
        self.collection.switch(on)
    }

    fn finish(mut self: Box<Self>) -> Result<OffCpuProfile> {
        let totals = self.collection.read()?;
        let mut sleeps = Sleeps::default();
        for (key, value) in totals.entries {
            let (stack, state) = (u32_at(&key, 0), u32_at(&key, 4));
            let frames = self.collection.stacks().frames(stack)?.to_vec();
            let (count, asleep, wake_to_run, longest) =
                (u64_at(&value, 0), u64_at(&value, 8), u64_at(&value, 16), u64_at(&value, 24));
            sleeps.add(&frames, state.into(), count, asleep, wake_to_run, longest);
        }
        let profile = sleeps.profile(KernelSymbols::get()?, totals.lost, Collector::Bpf);
        Ok(OffCpuProfile { programs: totals.cost, ..profile })
    }
}

/// `sched_switch`: the task going out, if traced and asleep, into
/// `sleeping`; the task coming in, if it slept, out of it into the totals.
fn switch_program(tasks: &Map, sleeping: &Map, sites: &Map, stacks: &Map, counters: &Counters) -> Result<Vec<Insn>> {
    let prev_pid = field("sched", "sched_switch", "prev_pid")?;
    let prev_state = field("sched", "sched_switch", "prev_state")?;
    let next_pid = field("sched", "sched_switch", "next_pid")?;
    let mut a = Asm::new();
    a.mov(R6, R1);
    exit_unless_on(&mut a, counters);
    // Out: fp-4 task; fp-32.. its sleep: start, woken, stack id, state.
    a.load(Size::U32, R1, R6, prev_pid).store(Size::U32, FP, -4, R1);
    a.load(Size::U64, R7, R6, prev_state).and_imm(R7, SLEEPING as i32).jump_if(Cond::Eq, R7, 0, "in");
    lookup(&mut a, tasks, -4, "in");
    // Off the CPU from here: the stack walk below is the scheduler's time, not the task's.
    a.call(Helper::KtimeNs).store(Size::U64, FP, -32, R0);
    // The stack is the task's own: the program runs in it, before the switch.
    a.mov(R1, R6).load_map(R2, stacks.fd()).mov_imm(R3, 0).call(Helper::StackId);
    // A stack the map could not take (a negative id) is kept as `[no stack]`.
    a.store(Size::U32, FP, -16, R0);
    a.store(Size::U32, FP, -12, R7).store_imm(Size::U64, FP, -24, 0);
    update(&mut a, sleeping, -4, -32, 0);
    a.jump_if(Cond::Eq, R0, 0, "in");
    count(&mut a, counters, Counters::FULL);
    a.jump("in");
    // In: did it sleep?
    a.label("in");
    a.load(Size::U32, R1, R6, next_pid).store(Size::U32, FP, -4, R1);
    lookup(&mut a, sleeping, -4, "out");
    a.mov(R7, R0).call(Helper::KtimeNs);
    // r9 = asleep (to the wakeup), r8 = wakeup to now; unwoken (stopped, or woken before the window): all asleep.
    a.load(Size::U64, R1, R7, 0).load(Size::U64, R2, R7, 8).jump_if(Cond::Eq, R2, 0, "unwoken");
    a.mov(R9, R2).sub(R9, R1).mov(R8, R0).sub(R8, R2).jump("keyed");
    a.label("unwoken").mov(R9, R0).sub(R9, R1).mov_imm(R8, 0);
    a.label("keyed");
    // The totals' key at fp-48: stack id, state.
    a.load(Size::U32, R1, R7, 16).store(Size::U32, FP, -48, R1);
    a.load(Size::U32, R1, R7, 20).store(Size::U32, FP, -44, R1);
    a.load_map(R1, sleeping.fd()).mov(R2, FP).add_imm(R2, -4).call(Helper::MapDelete);
    lookup(&mut a, sites, -48, "new");
    a.label("add");
    a.mov(R7, R0).mov_imm(R1, 1).atomic_add(R7, 0, R1).atomic_add(R7, 8, R9).atomic_add(R7, 16, R8);
    a.load(Size::U64, R1, R7, 24).jump_if_reg(Cond::Ge, R1, R9, "out").store(Size::U64, R7, 24, R9);
    a.jump("out");
    a.label("new");
    for at in [-80, -72, -64, -56] {
        a.store_imm(Size::U64, FP, at, 0);
    }
    update(&mut a, sites, -48, -80, 1);
    lookup(&mut a, sites, -48, "full");
    a.jump("add");
    a.label("full");
    count(&mut a, counters, Counters::FULL);
    a.label("out").pass_on();
    Ok(a.finish())
}

/// `sched_wakeup`: stamps a sleeping traced task's first wakeup.
fn wakeup_program(sleeping: &Map, counters: &Counters) -> Result<Vec<Insn>> {
    let pid = field("sched", "sched_wakeup", "pid")?;
    let mut a = Asm::new();
    a.mov(R6, R1);
    exit_unless_on(&mut a, counters);
    a.load(Size::U32, R1, R6, pid).store(Size::U32, FP, -4, R1);
    lookup(&mut a, sleeping, -4, "out");
    a.mov(R7, R0).load(Size::U64, R1, R7, 8).jump_if(Cond::Ne, R1, 0, "out");
    a.call(Helper::KtimeNs).store(Size::U64, R7, 8, R0);
    a.label("out").pass_on();
    Ok(a.finish())
}
