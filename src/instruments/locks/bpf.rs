//! `--profile locks` in the kernel: the programs of `bpf/locks.bpf.c` on
//! `lock:contention_begin`/`contention_end` keep each traced task's open
//! wait and, at its end, add it to the totals of its (lock, stack, kind),
//! naming the object the lock belongs to, as `perf lock contention -b`
//! does. Read here once the window closes.

use std::collections::HashMap;

use anyhow::Result;

use super::{identity, lock_kind, site_of, Sums, Where};
use crate::instruments::bpf::shared::{LockSite, LockSiteKey, HOLDER_READERS};
use crate::instruments::bpf::{Global, Loaded, MapSizes};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::sampling::{spread_with_max, STACK_NOT_SAMPLED};
use crate::instruments::Collect;
use crate::results::{Collector, LockProfile};

/// The compiled program (`bpf/build` makes it from its `bpf/*.bpf.c`).
pub(crate) const OBJECT: &[u8] = aya::include_bytes_aligned!("../../../bpf/out/locks.bpf.o");

/// Where a lock's waits go when none of its waits had its stack walked.
const NOT_SAMPLED_SITE: &str = "(stack not sampled)";

/// One run's in-kernel lock profile.
pub(crate) struct BpfLocks {
    loaded: Loaded,
    /// The workers' task ids, by worker: a holder among them is named by its index.
    tasks: Vec<i32>,
}

impl BpfLocks {
    /// `sampled`: each wait's stack from a walk of one wait in N on its lock (see `bpf/locks.bpf.c`).
    pub(crate) fn arm(tasks: &[i32], sampled: bool) -> Result<BpfLocks> {
        let events = [("lock", "contention_begin"), ("lock", "contention_end")];
        let max_every = if sampled { crate::instruments::MAX_EVERY } else { 1 };
        let globals = [("identify_objects", Global::U8(1)), ("max_every", Global::U64(max_every))];
        Ok(BpfLocks {
            loaded: Loaded::load(
                "--profile locks",
                OBJECT,
                &globals,
                &events,
                &MapSizes { classic_only: &["waits"], ..Default::default() },
                tasks,
            )?,
            tasks: tasks.to_vec(),
        })
    }
}

impl Collect<LockProfile> for BpfLocks {
    fn switch(&mut self, on: bool) -> Result<()> {
        self.loaded.switch(on)
    }

    /// Reads the totals and names their sites.
    fn finish(mut self: Box<Self>) -> Result<LockProfile> {
        self.loaded.switch(false)?;
        let entries: Vec<(LockSiteKey, LockSite)> = self.loaded.entries("sites")?;
        let lost = self.loaded.lost()?;
        // Read now, not before the run: a module loaded since (a filesystem's) has its names.
        let symbols = KernelSymbols::now()?;
        let mut sums = Sums::default();
        let mut sites_of_stacks: HashMap<i32, String> = HashMap::new();
        let (walked, unwalked): (Vec<_>, Vec<_>) = entries.into_iter().partition(|(k, _)| k.stack != STACK_NOT_SAMPLED);
        // Each wait whose stack was not walked counts at the sites walked on its lock, in their proportion.
        let mut parts: Vec<(&LockSiteKey, &LockSite, LockSiteKey, [u64; 3])> = Vec::new();
        let mut walked_on: HashMap<u64, Vec<&(LockSiteKey, LockSite)>> = HashMap::new();
        for entry in &walked {
            walked_on.entry(entry.0.lock).or_default().push(entry);
        }
        for (key, value) in &unwalked {
            // The sites walked on its lock for waits of its kind, else of any kind
            // (the programs walk each lock's first wait, of whichever kind).
            let on_lock = walked_on.get(&key.lock).map_or(&[][..], Vec::as_slice);
            let mut peers: Vec<&(LockSiteKey, LockSite)> =
                on_lock.iter().copied().filter(|(k, _)| k.flags == key.flags).collect();
            if peers.is_empty() {
                peers = on_lock.to_vec();
            }
            if peers.is_empty() {
                parts.push((key, value, *key, [value.count, value.wait_ns, value.max_ns]));
                continue;
            }
            let weights: Vec<[u64; 2]> = peers.iter().map(|(_, v)| [v.count, v.wait_ns]).collect();
            for ((peer, _), ([count, wait_ns], max)) in
                peers.iter().zip(spread_with_max([value.count, value.wait_ns], value.max_ns, &weights))
            {
                parts.push((peer, value, *key, [count, wait_ns, max]));
            }
        }
        let walked_parts = walked.iter().map(|(k, v)| (k, v, *k, [v.count, v.wait_ns, v.max_ns]));
        for (site_key, value, wait_key, [count, wait_ns, max_ns]) in walked_parts.chain(parts) {
            if count == 0 && wait_ns == 0 {
                continue;
            }
            let site = match sites_of_stacks.get(&site_key.stack) {
                Some(site) => site.clone(),
                None => {
                    let site = if site_key.stack == STACK_NOT_SAMPLED {
                        NOT_SAMPLED_SITE.to_string()
                    } else {
                        let frames = self.loaded.frames(site_key.stack)?;
                        let names: Vec<&str> =
                            frames.iter().map(|&a| symbols.function(a).unwrap_or("[unknown]")).collect();
                        site_of(&names)
                    };
                    sites_of_stacks.insert(site_key.stack, site.clone());
                    site
                }
            };
            let object = identity::object(value.ino, value.dev, value.mode_kind);
            let holder = holder_name(wait_key.holder, &self.tasks).map(|name| (name, wait_key.holder_on_cpu != 0));
            let at =
                Where { site, kind: lock_kind(wait_key.flags), lock: symbols.variable(wait_key.lock), object, holder };
            sums.add(at, count, wait_ns, max_ns);
        }
        Ok(LockProfile { programs: self.loaded.cost(), ..sums.profile(lost, Collector::Bpf) })
    }
}

/// A holder as the programs noted it: one of the run's `workers` (task ids
/// by worker) by its index, `readers`, another task by its name now (or
/// its id, where it has gone); none where no holder was noted.
fn holder_name(holder: u32, workers: &[i32]) -> Option<String> {
    match holder {
        0 => None,
        HOLDER_READERS => Some("readers".to_string()),
        tid => Some(match workers.iter().position(|&w| w as u32 == tid) {
            Some(i) => format!("worker {i}"),
            None => std::fs::read_to_string(format!("/proc/{tid}/comm"))
                .map(|comm| comm.trim_end().to_string())
                .unwrap_or_else(|_| format!("task {tid}")),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_named_by_worker_readers_or_their_task() {
        let workers = [4000, 4001, 4002];
        assert_eq!(holder_name(0, &workers), None);
        assert_eq!(holder_name(HOLDER_READERS, &workers).as_deref(), Some("readers"));
        assert_eq!(holder_name(4002, &workers).as_deref(), Some("worker 2"));
        let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
        assert_eq!(holder_name(me, &workers).as_deref(), Some(comm.trim_end()));
        // A task gone by the time the profile is read: its id.
        assert_eq!(holder_name(u32::MAX - 1, &workers).as_deref(), Some("task 4294967294"));
    }
}
