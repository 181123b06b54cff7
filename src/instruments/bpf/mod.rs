//! In-kernel aggregation for the profiles: BPF programs on the lock and
//! scheduler tracepoints that pair events and sum them per stack in maps,
//! as `perf lock contention -b` and bcc's `offcputime` do, so no event or
//! stack is copied to user space while the workers run. Read once after
//! the window.
//!
//! The pieces every such profile shares live here: the set of traced tasks
//! (the workers, and every task they start), the switch that confines the
//! programs to the window, the stack map, and the counters of what could
//! not be recorded.

pub mod asm;
pub mod btf;
pub mod sys;

use std::collections::HashMap;

use anyhow::{anyhow, Context, Result};

use asm::{Asm, Cond, Helper, Size, FP, R0, R1, R2, R3, R4, R6};
use sys::{Map, MapKind, Program, RunStats};

use super::perf::PerfEvent;
use super::tracefs::{event_id, field};
use crate::results::ProgramCost;

/// Frames kept per stack: far more than the few a site names, and the
/// flame graphs' depth; bounded by `kernel.perf_event_max_stack` (127).
pub const STACK_DEPTH: usize = 64;
/// Distinct stacks a run can hold. Two stacks that hash alike lose the
/// later one's frames: its events count under `[no stack]`.
const STACKS: u32 = 16 * 1024;
/// The workers and the tasks they start: room for 1024 workers with many children each.
const TASKS: u32 = 64 * 1024;

/// Whether BPF programs can be loaded here (root, a kernel with BPF):
/// `None` if so, else why not.
pub fn unavailable() -> Option<String> {
    match Map::create(MapKind::Array, "fsscale_probe", 4, 4, 1) {
        Ok(_) => None,
        Err(e) => Some(format!("{e:#}")),
    }
}

/// A one-entry array of `u64`s the programs reach without a lookup call:
/// slot 0 is the switch (non-zero inside the window), the rest are counters.
pub struct Counters {
    map: Map,
}

impl Counters {
    /// Slot of the switch.
    pub const ON: i32 = 0;
    /// Events dropped because a map was full.
    pub const FULL: i32 = 1;
    /// Lock waits begun inside two others of the same task: not paired.
    pub const NESTED: i32 = 2;
    const SLOTS: usize = 3;

    pub fn new() -> Result<Counters> {
        Ok(Counters { map: Map::create(MapKind::Array, "fsscale_count", 4, 8 * Self::SLOTS, 1)? })
    }

    pub fn fd(&self) -> i32 {
        self.map.fd()
    }

    fn slots(&self) -> Result<Vec<u64>> {
        let value = self.map.get(&0u32.to_ne_bytes())?.unwrap_or_default();
        Ok(value.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes"))).collect())
    }

    /// Turns the programs on or off.
    pub fn switch(&self, on: bool) -> Result<()> {
        let mut slots = self.slots()?;
        slots[Self::ON as usize] = on as u64;
        let bytes: Vec<u8> = slots.iter().flat_map(|s| s.to_ne_bytes()).collect();
        self.map.set(&0u32.to_ne_bytes(), &bytes)
    }

    /// Events not recorded (a stack that could not be kept still counts its event, without frames).
    pub fn lost(&self) -> Result<u64> {
        Ok(self.get(Self::FULL)? + self.get(Self::NESTED)?)
    }

    pub fn get(&self, slot: i32) -> Result<u64> {
        Ok(self.slots()?.get(slot as usize).copied().unwrap_or(0))
    }
}

/// `if counters.ON == 0 return 0` (uses r1).
pub(crate) fn exit_unless_on(a: &mut Asm, counters: &Counters) {
    a.load_map_value(R1, counters.fd(), Counters::ON * 8).load(Size::U64, R1, R1, 0).jump_if(Cond::Eq, R1, 0, "out");
}

/// `counters[slot] += 1` (uses r1, r2).
pub fn count(a: &mut Asm, counters: &Counters, slot: i32) {
    a.load_map_value(R1, counters.fd(), slot * 8).mov_imm(R2, 1).atomic_add(R1, 0, R2);
}

/// Looks `key` (on the stack at `fp + key_at`) up in `map`, leaving the
/// value's address in r0; to `missing` if there is none (uses r1, r2).
pub fn lookup(a: &mut Asm, map: &Map, key_at: i16, missing: &'static str) {
    a.load_map(R1, map.fd()).mov(R2, FP).add_imm(R2, key_at.into()).call(Helper::MapLookup);
    a.jump_if(Cond::Eq, R0, 0, missing);
}

/// `map[fp + key_at] = fp + value_at` with `flags` (0: any, 1: only if new); r0 is the result.
pub fn update(a: &mut Asm, map: &Map, key_at: i16, value_at: i16, flags: i32) {
    a.load_map(R1, map.fd())
        .mov(R2, FP)
        .add_imm(R2, key_at.into())
        .mov(R3, FP)
        .add_imm(R3, value_at.into())
        .mov_imm(R4, flags)
        .call(Helper::MapUpdate);
}

/// The tasks traced: the workers, and (by a program on
/// `sched:sched_process_fork`) every task one of them starts, as the
/// tracefs path's `event-fork` option does.
pub struct Tasks {
    pub map: Map,
    _fork: PerfEvent,
    pub program: Program,
}

impl Tasks {
    pub fn new(tasks: &[i32]) -> Result<Tasks> {
        let map = Map::create(MapKind::Hash, "fsscale_tasks", 4, 4, TASKS)?;
        for &t in tasks {
            map.set(&(t as u32).to_ne_bytes(), &1u32.to_ne_bytes())?;
        }
        let parent = field("sched", "sched_process_fork", "parent_pid")?;
        let child = field("sched", "sched_process_fork", "child_pid")?;
        let mut program = Asm::new();
        program.mov(R6, R1);
        program.load(Size::U32, R1, R6, parent).store(Size::U32, FP, -4, R1);
        lookup(&mut program, &map, -4, "out");
        program.load(Size::U32, R1, R6, child).store(Size::U32, FP, -4, R1);
        program.mov_imm(R1, 1).store(Size::U32, FP, -8, R1);
        update(&mut program, &map, -4, -8, 0);
        program.label("out").pass_on();
        let program = Program::load("fsscale_fork", &program.finish())?;
        let fork = program.attach(event_id("sched", "sched_process_fork")?, "sched:sched_process_fork")?;
        Ok(Tasks { map, _fork: fork, program })
    }
}

/// What a profile's programs cost in the window, in the kernel's own count
/// of their runs and run time (none where the kernel cannot count them, before 5.8).
pub struct Meter {
    _stats: Option<RunStats>,
    at_start: Option<(u64, u64)>,
    during: Option<ProgramCost>,
}

impl Default for Meter {
    fn default() -> Meter {
        Meter { _stats: RunStats::enable().ok(), at_start: None, during: None }
    }
}

impl Meter {
    fn total(&self, programs: &[&Program]) -> Option<(u64, u64)> {
        self._stats.as_ref()?;
        programs.iter().try_fold((0, 0), |(runs, ns), p| p.runs().ok().map(|(r, n)| (runs + r, ns + n)))
    }

    /// The window opens (`on`) or closes.
    pub fn mark(&mut self, on: bool, programs: &[&Program]) {
        let now = self.total(programs);
        match (on, self.at_start, now) {
            (true, _, _) => self.at_start = now,
            (false, Some((runs0, ns0)), Some((runs, ns))) => {
                self.during = Some(ProgramCost { runs: runs - runs0, seconds: (ns - ns0) as f64 / 1e9 })
            }
            _ => {}
        }
    }

    pub fn cost(&self) -> Option<ProgramCost> {
        self.during
    }
}

/// The maps every in-kernel profile starts from: the tasks it follows,
/// its switch and counters, and the stack map.
pub struct Base {
    pub tasks: Tasks,
    pub counters: Counters,
    pub stacks: Stacks,
}

impl Base {
    pub fn new(tasks: &[i32]) -> Result<Base> {
        Ok(Base { tasks: Tasks::new(tasks)?, counters: Counters::new()?, stacks: Stacks::new()? })
    }
}

/// A program to load, and the tracepoint (`system`, `event`) it runs at.
pub struct Attachment {
    pub name: &'static str,
    pub insns: Vec<asm::Insn>,
    pub tracepoint: (&'static str, &'static str),
}

/// An in-kernel profile running: its programs attached, the maps they
/// fill, and the meter of their cost.
pub struct Collection {
    // The attachments go first, so nothing runs while the maps are read or closed.
    _events: Vec<PerfEvent>,
    programs: Vec<Program>,
    base: Base,
    meter: Meter,
    /// Each task's open wait or sleep.
    _open: Map,
    totals: Map,
}

/// What a collection's programs summed, once they stopped.
pub struct Totals {
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Events not recorded (full maps, waits nested too deep).
    pub lost: u64,
    pub cost: Option<ProgramCost>,
}

impl Collection {
    /// Loads and attaches `programs`, which fill `open` and `totals` from `base`'s maps.
    pub(crate) fn attach(base: Base, open: Map, totals: Map, programs: Vec<Attachment>) -> Result<Collection> {
        let mut loaded = Vec::new();
        let mut events = Vec::new();
        for p in programs {
            let program = Program::load(p.name, &p.insns)?;
            let (system, event) = p.tracepoint;
            events.push(program.attach(event_id(system, event)?, &format!("{system}:{event}"))?);
            loaded.push(program);
        }
        Ok(Collection { _events: events, programs: loaded, base, meter: Meter::default(), _open: open, totals })
    }

    /// Turns the programs on for the window, or off.
    pub fn switch(&mut self, on: bool) -> Result<()> {
        self.base.counters.switch(on)?;
        let programs: Vec<&Program> = self.programs.iter().chain([&self.base.tasks.program]).collect();
        self.meter.mark(on, &programs);
        Ok(())
    }

    /// Turns them off for good and reads what they summed.
    pub fn read(&mut self) -> Result<Totals> {
        self.base.counters.switch(false)?;
        Ok(Totals { entries: self.totals.entries()?, lost: self.base.counters.lost()?, cost: self.meter.cost() })
    }

    /// The stacks the totals refer to.
    pub fn stacks(&mut self) -> &mut Stacks {
        &mut self.base.stacks
    }
}

/// The stack map, and its stacks read back.
pub struct Stacks {
    pub map: Map,
    read: HashMap<u32, Vec<u64>>,
}

impl Stacks {
    pub fn new() -> Result<Stacks> {
        Ok(Stacks {
            map: Map::create(MapKind::StackTrace, "fsscale_stacks", 4, 8 * STACK_DEPTH, STACKS)?,
            read: HashMap::new(),
        })
    }

    /// The addresses of stack `id` (innermost first); none for a failed id (negative, as the helper returns them).
    pub fn frames(&mut self, id: u32) -> Result<&[u64]> {
        if !self.read.contains_key(&id) {
            let frames = if (id as i32) < 0 {
                Vec::new()
            } else {
                let value = self.map.get(&id.to_ne_bytes()).context("reading a stack")?.unwrap_or_default();
                value
                    .chunks_exact(8)
                    .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
                    .take_while(|&a| a != 0)
                    .collect()
            };
            self.read.insert(id, frames);
        }
        self.read.get(&id).map(Vec::as_slice).ok_or_else(|| anyhow!("stack {id} vanished"))
    }
}
