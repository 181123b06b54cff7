//! `--profile locks` in the kernel: the programs of `bpf/locks.bpf.c` on
//! `lock:contention_begin`/`contention_end` keep each traced task's open
//! wait and, at its end, add it to the totals of its (lock, stack, kind),
//! naming the object the lock belongs to, as `perf lock contention -b`
//! does. Read here once the window closes.

use std::collections::HashMap;

use anyhow::Result;

use super::{identity, lock_kind, site_of, Sums, Where};
use crate::instruments::bpf::shared::{LockSite, LockSiteKey};
use crate::instruments::bpf::{objects, Global, Loaded, MapSizes};
use crate::instruments::kallsyms::KernelSymbols;
use crate::instruments::Collect;
use crate::results::{Collector, LockProfile};

/// One run's in-kernel lock profile.
pub(crate) struct BpfLocks {
    loaded: Loaded,
}

impl BpfLocks {
    pub(crate) fn arm(tasks: &[i32]) -> Result<BpfLocks> {
        let events = [("lock", "contention_begin"), ("lock", "contention_end")];
        let globals = [("identify_objects", Global::U8(1))];
        Ok(BpfLocks {
            loaded: Loaded::load(
                "--profile locks",
                objects::LOCKS,
                &globals,
                &events,
                &MapSizes { classic_only: &["waits"], ..Default::default() },
                tasks,
            )?,
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
        for (key, value) in entries {
            let site = match sites_of_stacks.get(&key.stack) {
                Some(site) => site.clone(),
                None => {
                    let frames = self.loaded.frames(key.stack)?;
                    let names: Vec<&str> = frames.iter().map(|&a| symbols.function(a).unwrap_or("[unknown]")).collect();
                    let site = site_of(&names);
                    sites_of_stacks.insert(key.stack, site.clone());
                    site
                }
            };
            let object = identity::object(value.ino, value.dev, value.mode_kind);
            let at = Where { site, kind: lock_kind(key.flags), lock: symbols.variable(key.lock), object };
            sums.add(at, value.count, value.wait_ns, value.max_ns);
        }
        Ok(LockProfile { programs: self.loaded.cost(), ..sums.profile(lost, Collector::Bpf) })
    }
}
