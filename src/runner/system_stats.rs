//! The machine's own counters, read at a run's window edges: every
//! `/proc/vmstat` counter, softirqs by type, interrupts, the VFS's dentry,
//! inode and file counts, and the slab caches a filesystem workload grows.
//! What changed between the two reads is the run's `system_stats`, as the
//! kernel test robot's monitors give it: a change that shows up in page
//! faults, slab growth or softirqs, not in the op's own time. Where the
//! kernel keeps lock statistics (`/proc/lock_stat`, CONFIG_LOCK_STAT, with
//! `kernel.lock_stat` on: fsscale reads it and never turns it on), each
//! lock class's contentions and wait time too.

use std::collections::BTreeMap;

/// The counters at one instant, by name (`vmstat.pgfault`, `softirqs.TIMER`, ...).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct SystemSnapshot {
    values: BTreeMap<String, i64>,
}

/// Lock classes a run keeps: the most contended in its window.
const LOCK_CLASSES: usize = 40;
const LOCK_STAT: &str = "lock_stat.";
const CONTENTIONS: &str = ".contentions";
const WAIT_NS: &str = ".wait_ns";

/// Slab caches kept, by a part of their name: the VFS's own and the
/// filesystems' (each filesystem's inode cache and its journal's).
const SLAB_CACHES: [&str; 10] =
    ["dentry", "inode", "filp", "names_cache", "buffer_head", "ext4", "jbd2", "xfs", "btrfs", "shmem"];

impl SystemSnapshot {
    /// Reads what this kernel shows; a file it lacks (`/proc/slabinfo`
    /// without root) leaves its counters out of both edges alike.
    pub fn read() -> SystemSnapshot {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let mut snapshot = SystemSnapshot::default();
        snapshot.vmstat(&read("/proc/vmstat"));
        snapshot.softirqs(&read("/proc/softirqs"));
        snapshot.interrupts(&read("/proc/stat"));
        snapshot.vfs(&read("/proc/sys/fs/dentry-state"), &read("/proc/sys/fs/inode-nr"), &read("/proc/sys/fs/file-nr"));
        snapshot.slabs(&read("/proc/slabinfo"));
        snapshot.lock_stat(&read("/proc/lock_stat"));
        snapshot
    }

    /// What changed from `self` to `end`, by name; unchanged counters are
    /// left out, and of the lock classes only the [`LOCK_CLASSES`] most
    /// contended in the window (a lockdep kernel has thousands).
    pub fn changes(&self, end: &SystemSnapshot) -> BTreeMap<String, i64> {
        let mut changes: BTreeMap<String, i64> = end
            .values
            .iter()
            .filter_map(|(name, &now)| {
                let then = *self.values.get(name)?;
                let change = now.wrapping_sub(then);
                (change != 0).then(|| (name.clone(), change))
            })
            .collect();
        let mut contended: Vec<(i64, String)> = changes
            .iter()
            .filter_map(|(name, &n)| Some((n, name.strip_prefix(LOCK_STAT)?.strip_suffix(CONTENTIONS)?.to_string())))
            .collect();
        if contended.len() > LOCK_CLASSES {
            contended.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let kept: std::collections::BTreeSet<&str> =
                contended[..LOCK_CLASSES].iter().map(|(_, class)| class.as_str()).collect();
            changes.retain(|name, _| {
                let Some(rest) = name.strip_prefix(LOCK_STAT) else { return true };
                let class = rest.strip_suffix(CONTENTIONS).or_else(|| rest.strip_suffix(WAIT_NS)).unwrap_or(rest);
                kept.contains(class)
            });
        }
        changes
    }

    fn put(&mut self, name: String, value: i64) {
        self.values.insert(name, value);
    }

    /// `/proc/vmstat`: `name value` lines.
    fn vmstat(&mut self, text: &str) {
        for line in text.lines() {
            if let Some((name, Ok(value))) = line.split_once(' ').map(|(n, v)| (n, v.trim().parse::<i64>())) {
                self.put(format!("vmstat.{name}"), value);
            }
        }
    }

    /// `/proc/softirqs`: a header of CPUs, then `TYPE: n n ...` per type, summed over CPUs.
    fn softirqs(&mut self, text: &str) {
        for line in text.lines().skip(1) {
            let Some((name, counts)) = line.split_once(':') else { continue };
            let total = counts.split_whitespace().filter_map(|n| n.parse::<i64>().ok()).sum();
            self.put(format!("softirqs.{}", name.trim()), total);
        }
    }

    /// `/proc/stat`'s `intr` line: its first number is every interrupt since boot.
    fn interrupts(&mut self, text: &str) {
        let total = text.lines().find_map(|l| l.strip_prefix("intr ")?.split_whitespace().next()?.parse().ok());
        if let Some(total) = total {
            self.put("interrupts".into(), total);
        }
    }

    /// `dentry-state` (dentries, unused ones), `inode-nr` (inodes, free
    /// ones) and `file-nr` (open files): levels, whose change is what the
    /// run left behind or freed.
    fn vfs(&mut self, dentries: &str, inodes: &str, files: &str) {
        let fields = |text: &str| -> Vec<i64> { text.split_whitespace().filter_map(|f| f.parse().ok()).collect() };
        let named = [
            (fields(dentries), ["fs.dentries", "fs.unused_dentries"]),
            (fields(inodes), ["fs.inodes", "fs.free_inodes"]),
        ];
        for (values, names) in named {
            for (name, value) in names.iter().zip(values) {
                self.put(name.to_string(), value);
            }
        }
        if let Some(&open) = fields(files).first() {
            self.put("fs.open_files".into(), open);
        }
    }

    /// `/proc/lock_stat` (versions 0.3 and 0.4): a class's line is its name,
    /// a colon and its figures, of which the second is its contentions and
    /// the fifth its total wait in microseconds (two decimals); the lines
    /// of the call sites under it have other forms and are passed over.
    fn lock_stat(&mut self, text: &str) {
        if !text.starts_with("lock_stat version 0.") {
            return;
        }
        for line in text.lines() {
            let Some((class, figures)) = line.rsplit_once(':') else { continue };
            let figures: Vec<f64> = figures.split_whitespace().map_while(|f| f.parse().ok()).collect();
            let class = class.trim();
            if figures.len() < 10 || class.is_empty() || class.contains(char::is_whitespace) {
                continue;
            }
            self.put(format!("{LOCK_STAT}{class}{CONTENTIONS}"), figures[1] as i64);
            self.put(format!("{LOCK_STAT}{class}{WAIT_NS}"), (figures[4] * 1000.0).round() as i64);
        }
    }

    /// `/proc/slabinfo` (version 2.1): `name active_objs num_objs ...`;
    /// the caches of [`SLAB_CACHES`], by their objects in use.
    fn slabs(&mut self, text: &str) {
        for line in text.lines().filter(|l| !l.starts_with("slabinfo") && !l.starts_with('#')) {
            let mut fields = line.split_whitespace();
            let (Some(name), Some(Ok(active))) = (fields.next(), fields.next().map(str::parse::<i64>)) else {
                continue;
            };
            if SLAB_CACHES.iter().any(|part| name.contains(part)) {
                self.put(format!("slab.{name}"), active);
            }
        }
    }
}

/// Each task's moves to another CPU so far (`se.nr_migrations` of
/// `/proc/<tid>/sched`), by task; 0 where the kernel keeps no scheduler
/// debug file or the task is gone.
pub(crate) fn migrations(tids: &[i32]) -> Vec<u64> {
    tids.iter()
        .map(|tid| {
            std::fs::read_to_string(format!("/proc/{tid}/sched"))
                .ok()
                .and_then(|text| parse_migrations(&text))
                .unwrap_or(0)
        })
        .collect()
}

/// `se.nr_migrations` of `/proc/<tid>/sched` (`name : value` lines).
fn parse_migrations(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim() == "se.nr_migrations").then(|| value.trim().parse().ok()).flatten()
    })
}

/// What changed from `start` to `end`, task by task.
pub(crate) fn changes_by_task(start: &[u64], end: &[u64]) -> Vec<u64> {
    start.iter().zip(end).map(|(a, b)| b.saturating_sub(*a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(vmstat: &str, softirqs: &str, stat: &str, vfs: [&str; 3], slabinfo: &str) -> SystemSnapshot {
        let mut s = SystemSnapshot::default();
        s.vmstat(vmstat);
        s.softirqs(softirqs);
        s.interrupts(stat);
        s.vfs(vfs[0], vfs[1], vfs[2]);
        s.slabs(slabinfo);
        s
    }

    const SLABINFO: &str = "slabinfo - version: 2.1\n\
        # name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables ...\n\
        dentry             20970  21000    192   21    1 : tunables    0    0    0 : slabdata   1000   1000      0\n\
        kmalloc-64          5000   5100     64   64    1 : tunables    0    0    0 : slabdata     80     80      0\n\
        ext4_inode_cache     300    320   1168   28    8 : tunables    0    0    0 : slabdata     12     12      0\n";

    #[test]
    fn the_kernels_files_are_read_by_name() {
        let s = snapshot(
            "nr_free_pages 5000\npgfault 123456\n",
            "                    CPU0       CPU1\n          HI:          0          0\n       TIMER:      97778      93391\n",
            "cpu  1 2 3 4\nintr 4242 0 9 0\nctxt 77\n",
            ["20970\t18188\t45\t0\t5547\t0\n", "14670\t12\n", "976\t0\t2466290\n"],
            SLABINFO,
        );
        let expected: BTreeMap<String, i64> = [
            ("vmstat.nr_free_pages", 5000),
            ("vmstat.pgfault", 123456),
            ("softirqs.HI", 0),
            ("softirqs.TIMER", 97778 + 93391),
            ("interrupts", 4242),
            ("fs.dentries", 20970),
            ("fs.unused_dentries", 18188),
            ("fs.inodes", 14670),
            ("fs.free_inodes", 12),
            ("fs.open_files", 976),
            ("slab.dentry", 20970),
            ("slab.ext4_inode_cache", 300),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
        assert_eq!(s.values, expected, "kmalloc-64 is no filesystem's cache");
    }

    /// A lockdep kernel's `/proc/lock_stat`: two classes, a call site under one.
    const LOCK_STAT_TEXT: &str = "lock_stat version 0.4\n\
        --------------------------------------------------------------------\n\
        \x20                             class name    con-bounces    contentions   waittime-min   waittime-max waittime-total   waittime-avg    acq-bounces   acquisitions   holdtime-min   holdtime-max holdtime-total   holdtime-avg\n\
        --------------------------------------------------------------------\n\
        \n\
        \x20                &sb->s_type->i_mutex_key#3-W:           205            205           0.26        1004.63       20540.88         100.20           4062           9498           0.16          35.26       10012.53           1.05\n\
        \x20                &sb->s_type->i_mutex_key#3-R:             0              0           0.00           0.00           0.00           0.00             10             40           0.10           1.00          10.00           0.25\n\
        \x20                ---------------------------\n\
        \x20                &sb->s_type->i_mutex_key#3            205          [<ffffffff8123d0c4>] lookup_slow+0x34/0x60\n\
        \n\
        \x20                           &dentry->d_lock:            12             13           0.05           2.00           7.25           0.56            900           5000           0.05           3.00         400.00           0.08\n";

    #[test]
    fn lock_classes_are_read_where_the_kernel_keeps_them_and_only_the_most_contended_kept() {
        let mut s = SystemSnapshot::default();
        s.lock_stat(LOCK_STAT_TEXT);
        let expected: BTreeMap<String, i64> = [
            ("lock_stat.&sb->s_type->i_mutex_key#3-W.contentions", 205),
            ("lock_stat.&sb->s_type->i_mutex_key#3-W.wait_ns", 20_540_880),
            ("lock_stat.&sb->s_type->i_mutex_key#3-R.contentions", 0),
            ("lock_stat.&sb->s_type->i_mutex_key#3-R.wait_ns", 0),
            ("lock_stat.&dentry->d_lock.contentions", 13),
            ("lock_stat.&dentry->d_lock.wait_ns", 7_250),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
        assert_eq!(s.values, expected, "the call site's line is not a class");
        // Without lock statistics: nothing, and nothing else is read as them.
        let mut none = SystemSnapshot::default();
        none.lock_stat("");
        none.lock_stat("pgfault 100\n");
        assert!(none.values.is_empty());
        // A thousand classes contended: the 40 most contended stay, both figures each.
        let (mut start, mut end) = (SystemSnapshot::default(), SystemSnapshot::default());
        for class in 0..1000i64 {
            start.put(format!("lock_stat.c{class}.contentions"), 0);
            start.put(format!("lock_stat.c{class}.wait_ns"), 0);
            end.put(format!("lock_stat.c{class}.contentions"), class + 1);
            end.put(format!("lock_stat.c{class}.wait_ns"), 10 * (class + 1));
        }
        start.put("vmstat.pgfault".into(), 1);
        end.put("vmstat.pgfault".into(), 2);
        let changes = start.changes(&end);
        assert_eq!(changes.len(), 2 * LOCK_CLASSES + 1);
        assert_eq!(changes["lock_stat.c999.wait_ns"], 10_000);
        assert!(
            changes.contains_key("lock_stat.c960.contentions") && !changes.contains_key("lock_stat.c959.contentions")
        );
    }

    #[test]
    fn changes_leave_out_what_did_not_change_and_levels_may_fall() {
        let start = snapshot("pgfault 100\nnr_dirty 50\n", "", "intr 10 0\n", ["", "", ""], SLABINFO);
        let end = snapshot(
            "pgfault 160\nnr_dirty 20\n",
            "",
            "intr 10 0\n",
            ["", "", ""],
            &SLABINFO.replace("dentry             20970", "dentry             21970"),
        );
        let changes = start.changes(&end);
        let expected: BTreeMap<String, i64> = [("vmstat.pgfault", 60), ("vmstat.nr_dirty", -30), ("slab.dentry", 1000)]
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        assert_eq!(changes, expected);
        // A counter seen at one edge only (a file unreadable at the other) is no change.
        let without_slabs = snapshot("pgfault 160\nnr_dirty 20\n", "", "intr 10 0\n", ["", "", ""], "");
        assert!(!start.changes(&without_slabs).keys().any(|k| k.starts_with("slab.")));
    }

    #[test]
    fn a_tasks_migrations_are_read_from_outside_it() {
        // A thread of its own, read by its task id as the coordinator reads
        // a worker, moved between two CPUs by its affinity: each move is a
        // migration the kernel counts.
        let cpus = crate::sys::allowed_cpus();
        let has_sched = std::path::Path::new("/proc/thread-self/sched").exists();
        if cpus.len() >= 2 && has_sched {
            let moved = std::thread::spawn(move || {
                let tid = rustix::thread::gettid().as_raw_nonzero().get();
                crate::sys::pin_to_cpu(cpus[0]).unwrap();
                let before = migrations(&[tid]);
                for _ in 0..3 {
                    crate::sys::pin_to_cpu(cpus[1]).unwrap();
                    crate::sys::pin_to_cpu(cpus[0]).unwrap();
                }
                changes_by_task(&before, &migrations(&[tid]))[0]
            })
            .join()
            .unwrap();
            assert!(moved >= 6, "6 moves, {moved} migrations counted");
        }
        assert_eq!(migrations(&[i32::MAX]), [0], "a task that is gone has none");
        assert_eq!(changes_by_task(&[3, 5], &[4, 5]), [1, 0]);
        let sched = "fsscale (1234, #threads: 3)\n---------\nse.exec_start   :   1.5\n\
                     se.nr_migrations                             :                   17\nnr_switches : 40\n";
        assert_eq!(parse_migrations(sched), Some(17));
        assert_eq!(parse_migrations("nr_switches : 40\n"), None);
    }

    #[test]
    fn this_machines_counters_are_read() {
        let s = SystemSnapshot::read();
        assert!(s.values.contains_key("vmstat.pgfault"), "{:?}", s.values.keys().take(5).collect::<Vec<_>>());
        assert!(s.values.get("interrupts").is_some_and(|&n| n > 0));
        assert!(s.values.get("fs.dentries").is_some_and(|&n| n > 0));
    }
}
