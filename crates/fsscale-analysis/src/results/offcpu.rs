//! `--profile offcpu`: where the run's workers slept, from the scheduler's
//! tracepoints: each switch-out in a sleeping state, with its kernel
//! stack, until the task was woken and until it ran again.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::profile::{Collector, ProgramCost};
use super::Point;

/// Runs keep at most this many sleep sites; the rest are summed as one.
pub(crate) const MAX_SLEEP_SITES: usize = 40;

/// Where the workers slept in the window.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct OffCpuProfile {
    /// How it was collected.
    #[serde(default)]
    pub method: Collector,
    /// What collecting it cost, where the kernel counts it (BPF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs: Option<ProgramCost>,
    /// Sleeps that began and ended inside the window.
    pub sleeps: u64,
    /// Their time asleep, switch-out until woken, all workers, seconds: what
    /// the `asleep` column counts (it also holds sleeps cut by the window's edges).
    pub asleep_s: f64,
    /// From their wakeup until they ran again (waiting for a CPU), seconds.
    pub wake_to_run_s: f64,
    /// Events not recorded (full buffers or maps): the figures are then low.
    #[serde(default)]
    pub lost_events: u64,
    /// Sleeps shorter than this (to their wakeup) were left out (`--min-sleep`), seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_sleep_s: f64,
    /// Sites ranked by time asleep.
    pub sites: Vec<SleepSite>,
    /// Folded kernel stacks (root first, frames joined by `;`): microseconds
    /// asleep on each. The off-CPU flame graph's input.
    pub folded: BTreeMap<String, u64>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Where a sleep began: the wait call and the two callers above it, as a lock site is named.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SleepSite {
    /// `schedule ← jbd2_log_wait_commit ← ext4_sync_file`: innermost first.
    pub site: String,
    /// `uninterruptible` (D: I/O, a mutex, an rwsem), `interruptible` (S:
    /// a futex, a pipe, a timer), `stopped`, `idle`.
    pub state: String,
    pub count: u64,
    pub asleep_s: f64,
    pub max_asleep_s: f64,
}

impl SleepSite {
    pub(crate) fn mean_asleep_s(&self) -> f64 {
        self.asleep_s / self.count.max(1) as f64
    }
}

impl OffCpuProfile {
    /// Ranks `sites` by time asleep and keeps the top [`MAX_SLEEP_SITES`], summing the rest.
    pub fn rank(mut sites: Vec<SleepSite>) -> Vec<SleepSite> {
        sites.sort_by(|a, b| b.asleep_s.total_cmp(&a.asleep_s).then_with(|| a.site.cmp(&b.site)));
        if sites.len() > MAX_SLEEP_SITES {
            let tail = sites.split_off(MAX_SLEEP_SITES - 1);
            sites.push(SleepSite {
                site: super::profile::OTHER_SITES.to_string(),
                state: "mixed".to_string(),
                count: tail.iter().map(|s| s.count).sum(),
                asleep_s: tail.iter().map(|s| s.asleep_s).sum(),
                max_asleep_s: tail.iter().map(|s| s.max_asleep_s).fold(0.0, f64::max),
            });
        }
        sites
    }

    /// The runs' profiles summed: a point's view.
    pub fn sum<'a>(profiles: impl IntoIterator<Item = &'a OffCpuProfile>) -> Option<OffCpuProfile> {
        let mut total: Option<OffCpuProfile> = None;
        let mut sites: BTreeMap<(String, String), SleepSite> = BTreeMap::new();
        for p in profiles {
            let t = total.get_or_insert_with(|| OffCpuProfile { method: p.method, ..OffCpuProfile::default() });
            // Through BPF only if every part was (see `LockProfile::sum`).
            if p.method == Collector::Tracefs {
                t.method = Collector::Tracefs;
            }
            t.sleeps += p.sleeps;
            t.asleep_s += p.asleep_s;
            t.wake_to_run_s += p.wake_to_run_s;
            t.lost_events += p.lost_events;
            t.min_sleep_s = t.min_sleep_s.max(p.min_sleep_s);
            t.programs = ProgramCost::add(t.programs, p.programs);
            for (stack, us) in &p.folded {
                *t.folded.entry(stack.clone()).or_default() += us;
            }
            for s in &p.sites {
                let entry = sites.entry((s.site.clone(), s.state.clone())).or_insert_with(|| SleepSite {
                    count: 0,
                    asleep_s: 0.0,
                    max_asleep_s: 0.0,
                    ..s.clone()
                });
                entry.count += s.count;
                entry.asleep_s += s.asleep_s;
                entry.max_asleep_s = entry.max_asleep_s.max(s.max_asleep_s);
            }
        }
        total.map(|mut t| {
            // Many runs' stacks together stay within what one profile may hold.
            super::stacks::bound_stacks(&mut t.folded, &mut super::stacks::Uncounted);
            OffCpuProfile { sites: Self::rank(sites.into_values().collect()), ..t }
        })
    }
}

impl Point {
    /// The off-CPU profile over the point's runs, with the share of the
    /// workers' time it accounts for asleep.
    pub fn offcpu_profile(&self) -> Option<(OffCpuProfile, f64)> {
        let profile = OffCpuProfile::sum(self.runs.iter().filter_map(|r| r.sections.offcpu.as_ref()))?;
        let seconds: f64 = self.runs.iter().filter(|r| r.sections.offcpu.is_some()).map(|r| r.worker_seconds()).sum();
        let share = if seconds > 0.0 { profile.asleep_s / seconds } else { 0.0 };
        Some((profile, share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(name: &str, state: &str, asleep_s: f64, count: u64) -> SleepSite {
        SleepSite { site: name.into(), state: state.into(), count, asleep_s, max_asleep_s: asleep_s / count as f64 }
    }

    #[test]
    fn runs_sum_into_a_points_profile_by_site_and_state() {
        let a = OffCpuProfile {
            method: Collector::Bpf,
            programs: Some(ProgramCost { runs: 10, seconds: 0.5, attached: None }),
            sleeps: 3,
            asleep_s: 0.3,
            wake_to_run_s: 0.01,
            lost_events: 1,
            min_sleep_s: 0.0,
            sites: vec![site("x", "uninterruptible", 0.2, 2), site("y", "interruptible", 0.1, 1)],
            folded: [("a;b".to_string(), 200_000u64), ("a;c".to_string(), 100_000)].into(),
        };
        let b = OffCpuProfile {
            sleeps: 1,
            asleep_s: 0.5,
            sites: vec![site("y", "interruptible", 0.5, 1)],
            folded: [("a;c".to_string(), 500_000u64)].into(),
            ..a.clone()
        };
        let sum = OffCpuProfile::sum([&a, &b]).unwrap();
        assert_eq!((sum.sleeps, sum.lost_events, sum.method), (4, 2, Collector::Bpf));
        let traced = OffCpuProfile { method: Collector::Tracefs, ..b.clone() };
        assert_eq!(OffCpuProfile::sum([&a, &traced]).unwrap().method, Collector::Tracefs, "BPF only if every run was");
        assert_eq!(sum.programs, Some(ProgramCost { runs: 20, seconds: 1.0, attached: None }));
        assert!((sum.asleep_s - 0.8).abs() < 1e-12);
        assert_eq!(sum.sites[0].site, "y");
        assert_eq!(sum.sites[0].count, 2);
        assert!((sum.sites[0].asleep_s - 0.6).abs() < 1e-12);
        assert_eq!(sum.folded["a;c"], 600_000);
        assert!(OffCpuProfile::sum([]).is_none());
    }

    #[test]
    fn the_sites_beyond_the_limit_are_summed_as_one() {
        let sites: Vec<SleepSite> = (0..50).map(|i| site(&format!("s{i}"), "interruptible", i as f64, 1)).collect();
        let ranked = OffCpuProfile::rank(sites);
        assert_eq!(ranked.len(), MAX_SLEEP_SITES);
        assert_eq!(ranked[0].site, "s49");
        let other = ranked.last().unwrap();
        assert_eq!((other.site.as_str(), other.count), (super::super::profile::OTHER_SITES, 11));
    }
}
