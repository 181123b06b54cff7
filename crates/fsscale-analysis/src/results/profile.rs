//! What the instruments (`--profile locks`, `--profile cpu`, `--verify`)
//! recorded of one run, and the point's sums of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::vocab::Collector;

/// Runs keep at most this many lock sites; the rest are summed as one.
pub(crate) const MAX_LOCK_SITES: usize = 40;
/// The name of the row that sums the sites beyond [`MAX_LOCK_SITES`].
pub(crate) const OTHER_SITES: &str = "(other sites)";

/// Where the run's workers waited on kernel locks (`--profile locks`), from
/// the `lock:contention_begin`/`contention_end` tracepoints.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct LockProfile {
    /// Contentions that ended inside the window (begin and end both seen).
    pub contentions: u64,
    /// Their wait, all workers together, seconds.
    pub wait_s: f64,
    /// Events the trace buffers could not hold: the figures are then low.
    #[serde(default)]
    pub lost_events: u64,
    /// How it was collected.
    #[serde(default)]
    pub method: Collector,
    /// What collecting it cost, where the kernel counts it (BPF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs: Option<ProgramCost>,
    /// Sites ranked by total wait.
    pub sites: Vec<LockSite>,
}

/// What the BPF programs that collected a profile cost in the window:
/// they run at every hit of their tracepoints (anyone's: those of tasks not
/// traced return at once), in the kernel's own count (`BPF_ENABLE_STATS`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq)]
pub struct ProgramCost {
    pub runs: u64,
    pub seconds: f64,
    /// How the programs were attached: `tp_btf` (BTF raw tracepoints, no
    /// trace record built per event) or `tracepoint` (classic ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<Attach>,
}

/// How BPF programs were attached to their tracepoints.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    #[serde(rename = "tp_btf")]
    BtfRaw,
    #[serde(rename = "tracepoint")]
    Classic,
}

impl ProgramCost {
    /// Two runs' costs together; none where neither counted.
    pub fn add(a: Option<ProgramCost>, b: Option<ProgramCost>) -> Option<ProgramCost> {
        match (a, b) {
            (Some(a), Some(b)) => Some(ProgramCost {
                runs: a.runs + b.runs,
                seconds: a.seconds + b.seconds,
                attached: if a.attached == b.attached { a.attached } else { None },
            }),
            (a, b) => a.or(b),
        }
    }
}

/// One contention site: the lock's entry point and the two callers above it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LockSite {
    /// `down_write ← filename_create ← do_mkdirat`: innermost first.
    pub site: String,
    /// `rwsem write`, `spinlock`, `mutex`, ... (from the tracepoint's flags).
    pub kind: String,
    /// The lock's variable, for a static lock kallsyms names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    pub count: u64,
    pub wait_s: f64,
    pub max_wait_s: f64,
    /// The objects whose lock it was, where known (BPF only): the
    /// [`MAX_LOCK_OBJECTS`] with most wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<LockObject>,
    /// Who held a sleeping lock (mutex, rwsem) as its waits began, where
    /// known (BPF only): the [`MAX_LOCK_OBJECTS`] holders with most wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holders: Vec<LockHolder>,
}

/// Sites keep at most this many objects, and holders.
pub(crate) const MAX_LOCK_OBJECTS: usize = 3;

/// A task that held a site's lock as waits on it began, and those waits.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LockHolder {
    /// `worker 3` (one of the run's workers, by index), `readers` (a rwsem
    /// held for reading), or another task's name (`kworker/u8:1`).
    pub holder: String,
    pub count: u64,
    pub wait_s: f64,
    /// Of those waits, how many began with the holder on a CPU (it was
    /// working, or spinning; otherwise it slept holding the lock).
    pub on_cpu: u64,
}

impl LockHolder {
    /// Merges `holders` by name, keeping the [`MAX_LOCK_OBJECTS`] with most wait.
    pub fn top<'a>(holders: impl IntoIterator<Item = &'a LockHolder>) -> Vec<LockHolder> {
        let mut merged: BTreeMap<&str, LockHolder> = BTreeMap::new();
        for h in holders {
            let m =
                merged.entry(&h.holder).or_insert_with(|| LockHolder { count: 0, wait_s: 0.0, on_cpu: 0, ..h.clone() });
            m.count += h.count;
            m.wait_s += h.wait_s;
            m.on_cpu += h.on_cpu;
        }
        let mut top: Vec<LockHolder> = merged.into_values().collect();
        top.sort_by(|a, b| b.wait_s.total_cmp(&a.wait_s).then_with(|| a.holder.cmp(&b.holder)));
        top.truncate(MAX_LOCK_OBJECTS);
        top
    }
}

/// An object a site's lock belonged to, and its part of the site's waits.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LockObject {
    /// `directory inode 1234 on 7:0`, `dentry of directory inode 1234 on 7:0`.
    pub object: String,
    /// Its inode's number and device (`7:0`), to find it by.
    #[serde(default)]
    pub ino: u64,
    #[serde(default)]
    pub dev: String,
    /// Where it was in the run's scratch directory (`shared`, `w3`), when it was there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub count: u64,
    pub wait_s: f64,
}

impl LockObject {
    /// Merges `objects` by name (by place, for those fsscale made: each
    /// run's shared directory is a new one), keeping the [`MAX_LOCK_OBJECTS`] with most wait.
    pub fn top<'a>(objects: impl IntoIterator<Item = &'a LockObject>) -> Vec<LockObject> {
        let mut merged: BTreeMap<&str, LockObject> = BTreeMap::new();
        for o in objects {
            let key = o.path.as_deref().unwrap_or(&o.object);
            let m = merged.entry(key).or_insert_with(|| LockObject { count: 0, wait_s: 0.0, ..o.clone() });
            if m.ino != o.ino {
                // Several inodes in one place: no one number stands for them.
                m.ino = 0;
            }
            m.count += o.count;
            m.wait_s += o.wait_s;
        }
        let mut top: Vec<LockObject> = merged.into_values().collect();
        top.sort_by(|a, b| b.wait_s.total_cmp(&a.wait_s).then_with(|| a.object.cmp(&b.object)));
        top.truncate(MAX_LOCK_OBJECTS);
        top
    }

    /// `directory inode 1234 on 7:0 (shared)`: with its place in the
    /// scratch directory where known; `directory (shared, one per run)` for several.
    pub fn label(&self) -> String {
        match (&self.path, self.ino) {
            (Some(path), 0) => {
                let kind = self.object.split(" inode ").next().unwrap_or(&self.object);
                format!("{kind} ({path}, one per run)")
            }
            (Some(path), _) => format!("{} ({path})", self.object),
            (None, _) => self.object.clone(),
        }
    }
}

impl LockSite {
    /// What a reader calls it: the site, with the lock's name where known.
    pub fn label(&self) -> String {
        match &self.lock {
            Some(lock) => format!("{} on {lock} ({})", self.site, self.kind),
            None => format!("{} ({})", self.site, self.kind),
        }
    }

    pub(crate) fn mean_wait_s(&self) -> f64 {
        self.wait_s / self.count.max(1) as f64
    }
}

impl LockProfile {
    /// Ranks `sites` by wait and keeps the top [`MAX_LOCK_SITES`], summing the rest.
    pub fn from_sites(contentions: u64, lost_events: u64, mut sites: Vec<LockSite>) -> LockProfile {
        sites.sort_by(|a, b| b.wait_s.total_cmp(&a.wait_s).then_with(|| a.site.cmp(&b.site)));
        // A fold from +0: an empty sum is -0.0, which would print as "-0.00".
        let wait_s = sites.iter().map(|s| s.wait_s).fold(0.0, |a, b| a + b);
        if sites.len() > MAX_LOCK_SITES {
            let tail = sites.split_off(MAX_LOCK_SITES - 1);
            sites.push(LockSite {
                site: OTHER_SITES.to_string(),
                kind: "mixed".to_string(),
                lock: None,
                count: tail.iter().map(|s| s.count).sum(),
                wait_s: tail.iter().map(|s| s.wait_s).sum(),
                max_wait_s: tail.iter().map(|s| s.max_wait_s).fold(0.0, f64::max),
                objects: Vec::new(),
                holders: Vec::new(),
            });
        }
        LockProfile { contentions, wait_s, lost_events, method: Collector::default(), programs: None, sites }
    }

    /// The runs' profiles summed: a point's view.
    pub fn sum<'a>(profiles: impl IntoIterator<Item = &'a LockProfile>) -> Option<LockProfile> {
        let mut merged: BTreeMap<(String, String, Option<String>), LockSite> = BTreeMap::new();
        let (mut contentions, mut lost, mut method, mut programs) = (0, 0, None, None);
        for profile in profiles {
            // Through BPF only if every part was: a part through tracefs disturbed its run more.
            method = Some(match (method, profile.method) {
                (Some(Collector::Tracefs), _) | (_, Collector::Tracefs) => Collector::Tracefs,
                _ => Collector::Bpf,
            });
            programs = ProgramCost::add(programs, profile.programs);
            contentions += profile.contentions;
            lost += profile.lost_events;
            for site in &profile.sites {
                let key = (site.site.clone(), site.kind.clone(), site.lock.clone());
                let entry = merged.entry(key).or_insert_with(|| LockSite {
                    count: 0,
                    wait_s: 0.0,
                    max_wait_s: 0.0,
                    objects: Vec::new(),
                    holders: Vec::new(),
                    ..site.clone()
                });
                entry.count += site.count;
                entry.wait_s += site.wait_s;
                entry.max_wait_s = entry.max_wait_s.max(site.max_wait_s);
                // All of them first, cut to the top once every run is in (see below).
                entry.objects.extend(site.objects.iter().cloned());
                entry.holders.extend(site.holders.iter().cloned());
            }
        }
        for site in merged.values_mut() {
            site.objects = LockObject::top(&site.objects);
            site.holders = LockHolder::top(&site.holders);
        }
        method.map(|method| LockProfile {
            method,
            programs,
            ..LockProfile::from_sites(contentions, lost, merged.into_values().collect())
        })
    }
}

/// Where the run's CPU time went (`--profile cpu`): cpu-clock samples of the
/// workers (and their children) with kernel and user call chains.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct CpuProfile {
    /// The sampled event: `cycles`, or `cpu-clock` without hardware counters.
    pub event: String,
    /// Sampling frequency per CPU, Hz.
    pub frequency_hz: u64,
    /// The workers' samples.
    pub samples: u64,
    /// Of them, in the kernel.
    pub kernel_samples: u64,
    /// Samples the buffers could not hold.
    #[serde(default)]
    pub lost_samples: u64,
    /// Folded stacks, root first, frames joined by `;` (user frames, then
    /// kernel frames): samples of each. The flame graph's input.
    pub folded: BTreeMap<String, u64>,
}

/// A function's share of a profile's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionShare {
    pub name: String,
    /// Samples with the function as the leaf.
    pub self_samples: u64,
    /// Samples with the function anywhere in the stack.
    pub inclusive_samples: u64,
    /// The caller most of those samples came through (`d_alloc_parallel`
    /// for a `_raw_spin_lock`), if any.
    pub caller: Option<String>,
}

impl super::RunRecord {
    /// The seconds the run's workers spent in its window, all together: each
    /// worker's own time for fixed work, the window times the workers otherwise.
    pub(crate) fn worker_seconds(&self) -> f64 {
        match &self.completion_s {
            Some(times) => times.iter().sum(),
            None => self.elapsed_s * self.per_worker_ops.len() as f64,
        }
    }
}

impl super::Point {
    /// The lock profile over the point's runs, and the share of its workers' time spent waiting.
    pub(crate) fn lock_profile(&self) -> Option<(LockProfile, f64)> {
        let profile = LockProfile::sum(self.runs.iter().filter_map(|r| r.sections.locks.as_ref()))?;
        let seconds: f64 = self.runs.iter().filter(|r| r.sections.locks.is_some()).map(|r| r.worker_seconds()).sum();
        let share = if seconds > 0.0 { profile.wait_s / seconds } else { 0.0 };
        Some((profile, share))
    }

    /// The CPU profile over the point's runs.
    pub fn cpu_profile(&self) -> Option<CpuProfile> {
        CpuProfile::sum(self.runs.iter().filter_map(|r| r.sections.cpu_profile.as_ref()))
    }
}

impl SyscallCheck {
    /// The checks of MPI ranks' parts of one run, summed call by call.
    pub fn sum<'a>(checks: impl Iterator<Item = &'a SyscallCheck>) -> Option<SyscallCheck> {
        checks.fold(None, |acc, check| {
            let Some(mut acc) = acc else { return Some(check.clone()) };
            acc.total += check.total;
            acc.ops_counted = [acc.ops_counted[0] + check.ops_counted[0], acc.ops_counted[1] + check.ops_counted[1]];
            for call in &check.calls {
                match acc.calls.iter_mut().find(|c| c.syscall == call.syscall) {
                    Some(c) => {
                        c.expected += call.expected;
                        c.counted += call.counted;
                    }
                    None => acc.calls.push(call.clone()),
                }
            }
            Some(acc)
        })
    }
}

impl CpuProfile {
    /// The runs' profiles summed.
    pub fn sum<'a>(profiles: impl IntoIterator<Item = &'a CpuProfile>) -> Option<CpuProfile> {
        let mut total: Option<CpuProfile> = None;
        for p in profiles {
            let t = total.get_or_insert_with(|| CpuProfile {
                event: p.event.clone(),
                frequency_hz: p.frequency_hz,
                ..CpuProfile::default()
            });
            t.samples += p.samples;
            t.kernel_samples += p.kernel_samples;
            t.lost_samples += p.lost_samples;
            for (stack, n) in &p.folded {
                *t.folded.entry(stack.clone()).or_default() += n;
            }
        }
        // Many runs' stacks together stay within what one profile may hold.
        if let Some(t) = &mut total {
            super::stacks::bound_stacks(&mut t.folded, &mut super::stacks::Uncounted);
        }
        total
    }

    pub fn kernel_share(&self) -> f64 {
        self.kernel_samples as f64 / self.samples.max(1) as f64
    }

    /// Functions by self samples (ties: inclusive), all of them.
    pub fn functions(&self) -> Vec<FunctionShare> {
        #[derive(Default)]
        struct Tally<'a> {
            own: u64,
            total: u64,
            callers: BTreeMap<&'a str, u64>,
        }
        let mut by_name: BTreeMap<&str, Tally> = BTreeMap::new();
        for (stack, &n) in &self.folded {
            let frames: Vec<&str> = stack.split(';').collect();
            if let Some(leaf) = frames.last() {
                by_name.entry(leaf).or_default().own += n;
            }
            let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
            for (i, &frame) in frames.iter().enumerate() {
                if !seen.contains(&frame) {
                    seen.push(frame);
                    let tally = by_name.entry(frame).or_default();
                    tally.total += n;
                    if let Some(caller) = i.checked_sub(1).map(|c| frames[c]) {
                        *tally.callers.entry(caller).or_default() += n;
                    }
                }
            }
        }
        let mut shares: Vec<FunctionShare> = by_name
            .into_iter()
            .map(|(name, t)| FunctionShare {
                name: name.to_string(),
                self_samples: t.own,
                inclusive_samples: t.total,
                caller: t.callers.iter().max_by_key(|(c, n)| (**n, std::cmp::Reverse(**c))).map(|(c, _)| c.to_string()),
            })
            .collect();
        shares.sort_by(|a, b| {
            (b.self_samples, b.inclusive_samples).cmp(&(a.self_samples, a.inclusive_samples)).then(a.name.cmp(&b.name))
        });
        shares
    }
}

/// `--verify`: the workers' system calls in the window as the kernel counted
/// them, against the ops the workers counted.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct SyscallCheck {
    /// Every system call the workers entered (`raw_syscalls:sys_enter`).
    pub total: u64,
    /// All workers' ops surely inside the span the kernel counted (done
    /// after the counters were all on and before any went off), and those
    /// possibly inside it: the bracket of what the counts may be.
    #[serde(default)]
    pub ops_counted: [u64; 2],
    /// Per system call the workload's op makes: expected and counted.
    pub calls: Vec<SyscallCount>,
    /// `replay`: all workers' ops in the window. Its ops are of kinds that
    /// mix unevenly over time, so a call's count follows the ops of its kind
    /// in the window (`expected`), give or take every op between the
    /// window's edges and the counted span's, which may all be of that kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed_window_ops: Option<u64>,
}

/// Beyond this relative difference a count is a mismatch.
pub(crate) const TOLERANCE: f64 = 0.005;

impl SyscallCheck {
    /// The counts beyond [`TOLERANCE`] of what the ops allow: at least the ops
    /// surely inside the counted span, at most those possibly inside it (see
    /// [`SyscallCheck::ops_counted`]), give or take an op per worker at each edge.
    pub fn mismatches(&self, workers: usize) -> Vec<&SyscallCount> {
        self.calls.iter().filter(|c| !self.allows(c, workers)).collect()
    }

    /// Whether `c`'s count is within what the ops allow (see [`SyscallCheck::mismatches`]).
    pub fn allows(&self, c: &SyscallCount, workers: usize) -> bool {
        let [low, high] = self.ops_counted.map(|n| n as f64);
        let edges = 2.0 * workers as f64 * c.per_op.max(1.0);
        let (least, most) = match self.mixed_window_ops.map(|n| n as f64) {
            Some(window) => (
                c.expected * (1.0 - TOLERANCE) - (window - low).max(0.0) - edges,
                c.expected * (1.0 + TOLERANCE) + (high - window).max(0.0) + edges,
            ),
            None => (low * c.per_op * (1.0 - TOLERANCE) - edges, high * c.per_op * (1.0 + TOLERANCE) + edges),
        };
        (least..=most).contains(&(c.counted as f64))
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SyscallCount {
    pub syscall: String,
    /// Calls of it one op makes.
    pub per_op: f64,
    /// Ops × calls per op.
    pub expected: f64,
    pub counted: u64,
}

impl SyscallCount {
    /// counted / expected (1 is exact).
    pub fn ratio(&self) -> f64 {
        if self.expected == 0.0 {
            if self.counted == 0 {
                1.0
            } else {
                f64::INFINITY
            }
        } else {
            self.counted as f64 / self.expected
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: &str, expected: f64, counted: u64) -> SyscallCount {
        SyscallCount { syscall: name.into(), per_op: 1.0, expected, counted }
    }

    #[test]
    fn mismatches_beyond_half_a_percent_of_the_bracket() {
        let check = SyscallCheck {
            total: 0,
            ops_counted: [100_000, 100_000],
            calls: vec![
                count("openat", 100_000.0, 100_400),  // 0.4%: fine
                count("close", 100_000.0, 100_600),   // 0.6%: a mismatch
                count("unlinkat", 100_000.0, 99_000), // -1%: a mismatch
            ],
            mixed_window_ops: None,
        };
        let names: Vec<&str> = check.mismatches(2).iter().map(|c| c.syscall.as_str()).collect();
        assert_eq!(names, ["close", "unlinkat"]);
        // Few ops: an op per worker at each edge is allowed.
        let few = SyscallCheck {
            total: 0,
            ops_counted: [100, 100],
            calls: vec![count("fsync", 100.0, 103)],
            mixed_window_ops: None,
        };
        assert!(few.mismatches(2).is_empty());
        // The coordinator waited 3 ms to turn the counters on: the bracket is wide, and 1.5% more is within it.
        let late = SyscallCheck {
            total: 0,
            ops_counted: [33_000, 33_600],
            calls: vec![count("renameat", 33_038.0, 33_523), count("x", 33_038.0, 34_000)],
            mixed_window_ops: None,
        };
        let names: Vec<&str> = late.mismatches(2).iter().map(|c| c.syscall.as_str()).collect();
        assert_eq!(names, ["x"]);
    }

    #[test]
    fn a_mixed_ops_count_may_take_every_op_at_the_edges() {
        // replay: 10,000 ops in the window, 2,422 of them writes; the
        // counters went on late and off late, spanning 9,900 to 10,300 ops.
        // The 300 ops after the window may all have been writes: 2,596 is
        // allowed; 2,800 is not, and neither is 2,000 (100 ops missed at most).
        let writes = |counted| SyscallCount { syscall: "pwrite64".into(), per_op: 0.2422, expected: 2422.0, counted };
        let check = SyscallCheck {
            total: 0,
            ops_counted: [9_900, 10_300],
            calls: vec![writes(2_596), writes(2_800), writes(2_000)],
            mixed_window_ops: Some(10_000),
        };
        let counted: Vec<u64> = check.mismatches(2).iter().map(|c| c.counted).collect();
        assert_eq!(counted, [2_800, 2_000]);
        // Proportional, as a loop's op, 2,596 would have been a mismatch.
        let proportional = SyscallCheck { mixed_window_ops: None, ..check.clone() };
        assert!(proportional.mismatches(2).iter().any(|c| c.counted == 2_596));
    }

    fn site(name: &str, wait_s: f64, count: u64) -> LockSite {
        LockSite {
            site: name.into(),
            kind: "spinlock".into(),
            lock: None,
            count,
            wait_s,
            max_wait_s: wait_s / 2.0,
            objects: Vec::new(),
            holders: Vec::new(),
        }
    }

    #[test]
    fn sites_are_ranked_by_wait_and_the_tail_is_summed() {
        let sites: Vec<LockSite> = (0..50).map(|i| site(&format!("s{i:02}"), i as f64, 1)).collect();
        let p = LockProfile::from_sites(50, 0, sites);
        assert_eq!(p.sites.len(), MAX_LOCK_SITES);
        assert_eq!(p.sites[0].site, "s49");
        let other = p.sites.last().unwrap();
        assert_eq!(other.site, OTHER_SITES);
        // s00..s10 (11 sites) are summed: 0+1+...+10.
        assert_eq!(other.count, 11);
        assert_eq!(other.wait_s, 55.0);
        assert_eq!(p.wait_s, (0..50).sum::<i32>() as f64);
    }

    #[test]
    fn each_runs_own_directory_sums_as_one_place() {
        let object = |ino: u64, path: Option<&str>, wait_s: f64| LockObject {
            object: format!("directory inode {ino} on 0:39"),
            ino,
            dev: "0:39".into(),
            path: path.map(str::to_string),
            count: 1,
            wait_s,
        };
        let top =
            LockObject::top(&[object(4, Some("shared"), 1.0), object(9, Some("shared"), 2.0), object(7, None, 0.5)]);
        assert_eq!(top.len(), 2);
        assert_eq!((top[0].label(), top[0].count), ("directory (shared, one per run)".to_string(), 2));
        assert!((top[0].wait_s - 3.0).abs() < 1e-12);
        assert_eq!(top[1].label(), "directory inode 7 on 0:39");
        let one = LockObject::top(&[object(4, Some("shared"), 1.0), object(4, Some("shared"), 1.0)]);
        assert_eq!(one[0].label(), "directory inode 4 on 0:39 (shared)");
    }

    #[test]
    fn runs_sum_per_site() {
        let mut a = LockProfile::from_sites(3, 1, vec![site("x", 1.0, 2), site("y", 0.5, 1)]);
        let mut b = LockProfile::from_sites(1, 0, vec![site("x", 2.0, 1)]);
        a.programs = Some(ProgramCost { runs: 10, seconds: 0.25, attached: None });
        b.programs = Some(ProgramCost { runs: 30, seconds: 0.5, attached: None });
        let s = LockProfile::sum([&a, &b]).unwrap();
        assert_eq!((s.contentions, s.lost_events), (4, 1));
        assert_eq!(s.programs, Some(ProgramCost { runs: 40, seconds: 0.75, attached: None }));
        assert_eq!(s.sites[0].site, "x");
        assert_eq!((s.sites[0].count, s.sites[0].wait_s, s.sites[0].max_wait_s), (3, 3.0, 1.0));
        assert!(LockProfile::sum([]).is_none());
    }

    #[test]
    fn self_and_inclusive_samples() {
        let mut folded = BTreeMap::new();
        folded.insert("main;do_syscall_64;vfs_statx;_raw_spin_lock".to_string(), 3);
        folded.insert("main;do_syscall_64;vfs_statx".to_string(), 1);
        folded.insert("main;recurse;recurse".to_string(), 2);
        let p = CpuProfile {
            event: "cpu-clock".into(),
            frequency_hz: 1000,
            samples: 6,
            kernel_samples: 4,
            lost_samples: 0,
            folded,
        };
        let f = p.functions();
        assert_eq!(f[0].name, "_raw_spin_lock");
        assert_eq!((f[0].self_samples, f[0].inclusive_samples), (3, 3));
        assert_eq!(f[0].caller.as_deref(), Some("vfs_statx"));
        let statx = f.iter().find(|s| s.name == "vfs_statx").unwrap();
        assert_eq!((statx.self_samples, statx.inclusive_samples), (1, 4));
        // A recursive function counts once per sample.
        let recurse = f.iter().find(|s| s.name == "recurse").unwrap();
        assert_eq!((recurse.self_samples, recurse.inclusive_samples), (2, 2));
        let main = f.iter().find(|s| s.name == "main").unwrap();
        assert_eq!((main.inclusive_samples, main.caller.as_deref()), (6, None));
        assert!((p.kernel_share() - 4.0 / 6.0).abs() < 1e-12);
    }
}
