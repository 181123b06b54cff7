//! `--profile offcpu` in the kernel: the programs of `bpf/offcpu.bpf.c` on
//! `sched_switch` and `sched_wakeup` sum each traced task's sleeps per
//! (stack, state), as libbpf-tools' `offcputime` does. Read here once the
//! window closes.

use anyhow::Result;

use super::Sleeps;
use crate::instruments::bpf::shared::{SleepKey, SleepSite};
use crate::instruments::bpf::{Global, Loaded, MapSizes};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::sampling::{spread_with_max, STACK_NOT_SAMPLED};
use crate::instruments::Collect;
use crate::results::{Collector, OffCpuProfile};

/// The compiled program (`bpf/build` makes it from its `bpf/*.bpf.c`).
pub(crate) const OBJECT: &[u8] = aya::include_bytes_aligned!("../../../bpf/out/offcpu.bpf.o");

pub(crate) struct BpfSleeps {
    loaded: Loaded,
    min_sleep_ns: u64,
}

impl BpfSleeps {
    /// Follows `tasks`' sleeps of at least `min_sleep_ns`, their stacks
    /// `sampled` (one walk in N per task and state, see `bpf/offcpu.bpf.c`).
    pub(crate) fn arm(tasks: &[i32], min_sleep_ns: u64, sampled: bool) -> Result<BpfSleeps> {
        let events = [("sched", "sched_switch"), ("sched", "sched_wakeup")];
        let max_every = if sampled { crate::instruments::MAX_EVERY } else { 1 };
        let globals = [("min_sleep_ns", Global::U64(min_sleep_ns)), ("max_every", Global::U64(max_every))];
        let loaded = Loaded::load(
            "--profile offcpu",
            OBJECT,
            &globals,
            &events,
            &MapSizes { classic_only: &["asleep"], ..Default::default() },
            tasks,
        )?;
        Ok(BpfSleeps { loaded, min_sleep_ns })
    }
}

impl Collect<OffCpuProfile> for BpfSleeps {
    fn switch(&mut self, on: bool) -> Result<()> {
        self.loaded.switch(on)
    }

    fn finish(mut self: Box<Self>) -> Result<OffCpuProfile> {
        self.loaded.switch(false)?;
        let entries: Vec<(SleepKey, SleepSite)> = self.loaded.entries("sites")?;
        let lost = self.loaded.lost()?;
        let mut sleeps = Sleeps::default();
        let (walked, unwalked): (Vec<_>, Vec<_>) = entries.into_iter().partition(|(k, _)| k.stack != STACK_NOT_SAMPLED);
        for (key, value) in &walked {
            let frames = self.loaded.frames(key.stack)?.to_vec();
            sleeps.add(&frames, key.state.into(), value.count, value.asleep_ns, value.wake_to_run_ns, value.max_ns);
        }
        // Each sleep whose stack was not walked counts at the stacks walked in its state, in their proportion.
        for (key, value) in &unwalked {
            let peers: Vec<&(SleepKey, SleepSite)> = walked.iter().filter(|(k, _)| k.state == key.state).collect();
            let figures = [value.count, value.asleep_ns, value.wake_to_run_ns];
            if peers.is_empty() {
                sleeps.add(&[], key.state.into(), figures[0], figures[1], figures[2], value.max_ns);
                continue;
            }
            let weights: Vec<[u64; 3]> = peers.iter().map(|(_, v)| [v.count, v.asleep_ns, v.wake_to_run_ns]).collect();
            for ((peer, _), ([count, asleep, to_run], max)) in
                peers.iter().zip(spread_with_max(figures, value.max_ns, &weights))
            {
                if count > 0 || asleep > 0 {
                    let frames = self.loaded.frames(peer.stack)?.to_vec();
                    sleeps.add(&frames, key.state.into(), count, asleep, to_run, max);
                }
            }
        }
        let profile = sleeps.profile(&*KernelSymbols::now()?, lost, Collector::Bpf);
        Ok(OffCpuProfile { programs: self.loaded.cost(), min_sleep_s: self.min_sleep_ns as f64 / 1e9, ..profile })
    }
}
