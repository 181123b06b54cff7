//! `--profile offcpu` where BPF is unavailable: `sched_switch` (with the
//! kernel stack of each switch-out asleep, by the `stacktrace` trigger),
//! `sched_wakeup` and `sched_process_fork` of the workers in a tracefs
//! instance, paired per task in user space.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};

use super::{Sleeps, SLEEPING};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::ringbuf::RawEvent;
use crate::instruments::tracefs::{event_id, field, Recording};
use crate::instruments::Collect;
use crate::results::{Collector, OffCpuProfile};

/// The events' ids and their fields' offsets.
#[derive(Clone, Copy)]
struct Layout {
    switch: u16,
    wakeup: u16,
    fork: u16,
    stack: u16,
    prev_pid: usize,
    prev_state: usize,
    next_pid: usize,
    woken_pid: usize,
    parent_pid: usize,
    child_pid: usize,
}

impl Layout {
    fn read() -> Result<Layout> {
        // pids are 4 bytes, prev_state a long: as `Pairing::event` reads them.
        let at = |event: &str, name: &str| field("sched", event, name, if name == "prev_state" { 8 } else { 4 });
        Ok(Layout {
            switch: event_id("sched", "sched_switch")?,
            wakeup: event_id("sched", "sched_wakeup")?,
            fork: event_id("sched", "sched_process_fork")?,
            stack: event_id("ftrace", "kernel_stack")?,
            prev_pid: at("sched_switch", "prev_pid")?,
            prev_state: at("sched_switch", "prev_state")?,
            next_pid: at("sched_switch", "next_pid")?,
            woken_pid: at("sched_wakeup", "pid")?,
            parent_pid: at("sched_process_fork", "parent_pid")?,
            child_pid: at("sched_process_fork", "child_pid")?,
        })
    }
}

pub(crate) struct TracefsSleeps {
    recording: Recording,
    pairing: Pairing,
}

impl TracefsSleeps {
    /// Follows `tasks`' sleeps of at least `min_sleep_ns` (to their wakeup).
    pub(crate) fn arm(tasks: &[i32], min_sleep_ns: u64) -> Result<TracefsSleeps> {
        let layout = Layout::read()?;
        let recording = Recording::of_tasks(tasks, |instance| {
            // Only a switch-out asleep needs its stack (the filter runs after the pid filter).
            instance.write("events/sched/sched_switch/trigger", &format!("stacktrace if prev_state & {SLEEPING}"))?;
            for event in ["sched_switch", "sched_wakeup", "sched_process_fork"] {
                instance.write(&format!("events/sched/{event}/enable"), "1")?;
            }
            Ok(())
        })?;
        Ok(TracefsSleeps { recording, pairing: Pairing::new(layout, tasks, min_sleep_ns) })
    }
}

impl Collect<OffCpuProfile> for TracefsSleeps {
    fn switch(&mut self, on: bool) -> Result<()> {
        self.recording.switch(on)
    }

    fn drain(&mut self) -> Result<()> {
        let pairing = &mut self.pairing;
        self.recording.drain(false, |e| pairing.event(e))
    }

    fn finish(mut self: Box<Self>) -> Result<OffCpuProfile> {
        let pairing = &mut self.pairing;
        self.recording.drain(true, |e| pairing.event(e))?;
        let lost = self.recording.lost().context("reading the trace buffers' statistics")?;
        let min_sleep_s = self.pairing.min_sleep_ns as f64 / 1e9;
        let profile = self.pairing.sleeps.profile(&*KernelSymbols::now()?, lost, Collector::Tracefs);
        Ok(OffCpuProfile { min_sleep_s, ..profile })
    }
}

struct Asleep {
    since: u64,
    woken: Option<u64>,
    state: u64,
    stack: Option<Vec<u64>>,
}

/// Switch, wakeup, stack and fork events to sleeps.
struct Pairing {
    layout: Layout,
    /// The workers and what they started: the pid filter also passes a
    /// switch whose other side is a worker, and that side is not traced.
    tasks: HashSet<i32>,
    asleep: HashMap<i32, Asleep>,
    sleeps: Sleeps,
    /// Shorter sleeps are left out.
    min_sleep_ns: u64,
}

impl Pairing {
    fn new(layout: Layout, tasks: &[i32], min_sleep_ns: u64) -> Pairing {
        let tasks = tasks.iter().copied().collect();
        Pairing { layout, tasks, asleep: HashMap::new(), sleeps: Sleeps::default(), min_sleep_ns }
    }

    fn add(&mut self, sleep: Asleep, asleep: u64, wake_to_run: u64) {
        if asleep >= self.min_sleep_ns {
            self.sleeps.add(&sleep.stack.unwrap_or_default(), sleep.state, 1, asleep, wake_to_run, asleep);
        }
    }

    fn event(&mut self, e: RawEvent<'_>) {
        let l = self.layout;
        let kind = e.kind();
        if kind == l.switch {
            let prev = e.u32_at(l.prev_pid) as i32;
            let state = e.u64_at(l.prev_state) & SLEEPING;
            if self.tasks.contains(&prev) {
                // Running again, so its last sleep ended, though its switch-in may be missing:
                // the pid filter passes no switch from the idle task to a task a softirq in
                // the idle task woke (seen on 6.18). Its time asleep is known, its wait for a CPU is not.
                if let Some(sleep) = self.asleep.remove(&prev) {
                    if let Some(woken) = sleep.woken {
                        let asleep = woken.saturating_sub(sleep.since);
                        self.add(sleep, asleep, 0);
                    }
                }
                if state != 0 {
                    self.asleep.insert(prev, Asleep { since: e.timestamp, woken: None, state, stack: None });
                }
            }
            let next = e.u32_at(l.next_pid) as i32;
            if let Some(sleep) = self.asleep.remove(&next) {
                let woken = sleep.woken.unwrap_or(e.timestamp);
                let asleep = woken.saturating_sub(sleep.since);
                let wake_to_run = e.timestamp.saturating_sub(woken);
                self.add(sleep, asleep, wake_to_run);
            }
        } else if kind == l.stack {
            // Taken in the task going out, right after its switch event.
            if let Some(sleep) = self.asleep.get_mut(&e.pid()).filter(|s| s.stack.is_none()) {
                sleep.stack = Some(crate::instruments::locks::tracefs::stack_frames(&e));
            }
        } else if kind == l.wakeup {
            if let Some(sleep) = self.asleep.get_mut(&(e.u32_at(l.woken_pid) as i32)) {
                sleep.woken.get_or_insert(e.timestamp);
            }
        } else if kind == l.fork && self.tasks.contains(&(e.u32_at(l.parent_pid) as i32)) {
            self.tasks.insert(e.u32_at(l.child_pid) as i32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::ringbuf::page_events;
    use crate::instruments::ringbuf::tests::{payload, PageBuilder};

    fn layout() -> Layout {
        Layout {
            switch: 316,
            wakeup: 318,
            fork: 314,
            stack: 4,
            prev_pid: 24,
            prev_state: 32,
            next_pid: 56,
            woken_pid: 24,
            parent_pid: 24,
            child_pid: 44,
        }
    }

    /// A `sched_switch` record's fields after the common header (from offset 8).
    fn switch(prev: i32, state: u64, next: i32) -> Vec<u8> {
        let mut rest = vec![0u8; 56];
        rest[16..20].copy_from_slice(&prev.to_ne_bytes());
        rest[24..32].copy_from_slice(&state.to_ne_bytes());
        rest[48..52].copy_from_slice(&next.to_ne_bytes());
        rest
    }

    fn pid_at_24(pid: i32) -> Vec<u8> {
        let mut rest = vec![0u8; 40];
        rest[16..20].copy_from_slice(&pid.to_ne_bytes());
        rest
    }

    fn fork(parent: i32, child: i32) -> Vec<u8> {
        let mut rest = vec![0u8; 40];
        rest[16..20].copy_from_slice(&parent.to_ne_bytes());
        rest[36..40].copy_from_slice(&child.to_ne_bytes());
        rest
    }

    #[test]
    fn a_workers_sleep_runs_from_its_switch_out_to_its_wakeup() {
        let mut pairing = Pairing::new(layout(), &[7], 0);
        let mut stack = 2u32.to_ne_bytes().to_vec();
        stack.extend_from_slice(&[0; 4]);
        stack.extend_from_slice(&0xffffffff81000110u64.to_ne_bytes());
        stack.extend_from_slice(&0xffffffff81000210u64.to_ne_bytes());
        let mut page = PageBuilder::new(0);
        page.event(1_000, &payload(316, 7, &switch(7, 2, 0)))
            .event(1_010, &payload(4, 7, &stack))
            // Not a worker: its sleep is not counted, though the pid filter passed the switch.
            .event(1_100, &payload(316, 9, &switch(9, 1, 0)))
            .event(5_000, &payload(318, 0, &pid_at_24(7)))
            .event(5_100, &payload(318, 0, &pid_at_24(7)))
            .event(6_000, &payload(316, 0, &switch(0, 0, 7)))
            // A worker's child, then preempted (not a sleep), then asleep without a wakeup seen.
            .event(7_000, &payload(314, 7, &fork(7, 8)))
            .event(7_500, &payload(316, 8, &switch(8, 0x100, 0)))
            .event(8_000, &payload(316, 8, &switch(8, 1, 0)))
            .event(9_000, &payload(316, 0, &switch(0, 0, 8)))
            // Woken, its switch-in missing (the pid filter's gap): closed at its next switch-out, at the wakeup.
            .event(9_500, &payload(316, 7, &switch(7, 1, 0)))
            .event(9_800, &payload(318, 0, &pid_at_24(7)))
            .event(10_000, &payload(316, 7, &switch(7, 0x100, 0)));
        page_events(&page.build(false), |e| pairing.event(e));
        let totals: Vec<(usize, u64, u64, u64)> = {
            let mut v: Vec<_> = pairing
                .sleeps
                .by_stack
                .iter()
                .map(|((s, state), t)| (s.len(), *state, t.asleep_ns, t.wake_to_run_ns))
                .collect();
            v.sort();
            v
        };
        // The child's: 1,000 ns, all asleep; the worker's: 4,000 asleep, then 1,000 to run; then 300 asleep.
        assert_eq!(totals, vec![(0, 1, 1_300, 0), (2, 2, 4_000, 1_000)]);
    }
}
