//! CPU quotas (CFS bandwidth control) on this process's cgroups: the
//! limit, in CPUs, and how long it held the cgroup off the CPUs. A
//! throttled worker waits on its runqueue while the CPU is idle: its wait
//! is the quota's doing, not other work's, and a run must say which.

use std::path::{Path, PathBuf};

use super::mounts;

/// A cgroup of this process (or an ancestor) with a CPU quota set.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaCgroup {
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// cgroup v2 (`cpu.max`, `throttled_usec`) or v1 (`cpu.cfs_quota_us`, `throttled_time`).
    pub v2: bool,
    /// Its quota over its period, in CPUs.
    pub cpus: f64,
}

/// Every cgroup of this process, and every ancestor of one, whose CPU
/// quota is set (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` /
/// `cpu.cfs_period_us`), innermost first.
pub fn quota_cgroups() -> Vec<QuotaCgroup> {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else { return Vec::new() };
    let mounts = mounts();
    let mut found = Vec::new();
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else { continue };
        let v2 = id == "0" && controllers.is_empty();
        let v1 = controllers.split(',').any(|c| c == "cpu");
        let Some(mount) = mounts.iter().find(|m| {
            (v2 && m.fs_type == "cgroup2")
                || (v1 && m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "cpu"))
        }) else {
            continue;
        };
        let mut dir = Path::new(&mount.mount_point).join(path.trim_start_matches('/'));
        loop {
            if let Some(cpus) = quota_of(&dir, v2) {
                found.push(QuotaCgroup { dir: dir.clone(), v2, cpus });
            }
            if dir == Path::new(&mount.mount_point) || !dir.pop() {
                break;
            }
        }
    }
    found
}

/// A cgroup's quota in CPUs, where one is set ("max" and -1 are none).
fn quota_of(dir: &Path, v2: bool) -> Option<f64> {
    let (quota, period) = if v2 {
        let text = std::fs::read_to_string(dir.join("cpu.max")).ok()?;
        let mut parts = text.split_whitespace();
        (parts.next()?.parse::<f64>().ok()?, parts.next()?.parse::<f64>().ok()?)
    } else {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok()?.trim().parse::<f64>().ok();
        (read("cpu.cfs_quota_us")?, read("cpu.cfs_period_us")?)
    };
    let cpus = quota / period;
    (cpus > 0.0 && cpus.is_finite()).then_some(cpus)
}

/// The CPU bandwidth limit of this process's cgroup and its ancestors, in
/// CPUs: the tightest quota.
pub(crate) fn cgroup_cpu_limit() -> Option<f64> {
    quota_cgroups().iter().map(|q| q.cpus).reduce(f64::min)
}

/// A cgroup's throttling counters, from its `cpu.stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Throttling {
    /// Enforcement periods that had runnable work (`nr_periods`).
    pub periods: u64,
    /// Periods in which the quota ran out (`nr_throttled`).
    pub throttled_periods: u64,
    /// Time its runqueues were held off the CPUs, summed over CPUs.
    pub throttled_s: f64,
}

impl Throttling {
    /// Parses `cpu.stat`: v2 counts the throttled time in µs
    /// (`throttled_usec`), v1 in ns (`throttled_time`). `None` without the
    /// counters (a cgroup without the cpu controller).
    pub fn parse(text: &str) -> Option<Throttling> {
        let field =
            |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<u64>().ok());
        let throttled_s = match (field("throttled_usec"), field("throttled_time")) {
            (Some(us), _) => us as f64 / 1e6,
            (None, Some(ns)) => ns as f64 / 1e9,
            (None, None) => return None,
        };
        Some(Throttling { periods: field("nr_periods")?, throttled_periods: field("nr_throttled")?, throttled_s })
    }

    /// What happened between `start` and `self` (counters only grow; a
    /// reset reads as nothing).
    pub fn since(&self, start: &Throttling) -> Throttling {
        Throttling {
            periods: self.periods.saturating_sub(start.periods),
            throttled_periods: self.throttled_periods.saturating_sub(start.throttled_periods),
            throttled_s: (self.throttled_s - start.throttled_s).max(0.0),
        }
    }
}

/// The quota cgroups' counters now, in the order of `cgroups`.
pub fn read_throttling(cgroups: &[QuotaCgroup]) -> Vec<Option<Throttling>> {
    cgroups
        .iter()
        .map(|q| std::fs::read_to_string(q.dir.join("cpu.stat")).ok().as_deref().and_then(Throttling::parse))
        .collect()
}

/// Over a window read at `start` and `end`: the throttling of the cgroup
/// held back longest (nested quotas each count the same wait), `None`
/// where no quota cgroup could be read at both ends.
pub fn throttled_between(start: &[Option<Throttling>], end: &[Option<Throttling>]) -> Option<Throttling> {
    start
        .iter()
        .zip(end)
        .filter_map(|(s, e)| Some(e.as_ref()?.since(s.as_ref()?)))
        .max_by(|a, b| a.throttled_s.total_cmp(&b.throttled_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_of_both_versions_parses_to_seconds() {
        let v2 = "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 12\nthrottled_usec 250000\nnr_bursts 0\nburst_usec 0\n";
        assert_eq!(Throttling::parse(v2), Some(Throttling { periods: 40, throttled_periods: 12, throttled_s: 0.25 }));
        let v1 = "nr_periods 10\nnr_throttled 3\nthrottled_time 45000000\nnr_bursts 0\nburst_time 0\n";
        assert_eq!(Throttling::parse(v1), Some(Throttling { periods: 10, throttled_periods: 3, throttled_s: 0.045 }));
        // v2 without the cpu controller: usage only.
        assert_eq!(Throttling::parse("usage_usec 10\nuser_usec 5\nsystem_usec 5\n"), None);
        // A field's name is matched whole: nr_throttled is not nr_throttled_extra.
        assert_eq!(Throttling::parse("nr_periods 1\nnr_throttled_x 9\nthrottled_usec 1\n"), None);
    }

    #[test]
    fn a_window_takes_the_cgroup_held_back_longest() {
        let at = |periods, throttled, s| Some(Throttling { periods, throttled_periods: throttled, throttled_s: s });
        let start = [at(10, 2, 0.1), at(100, 0, 0.0), None];
        let end = [at(20, 7, 0.4), at(110, 1, 0.05), at(1, 1, 1.0)];
        let longest = throttled_between(&start, &end).unwrap();
        assert_eq!((longest.periods, longest.throttled_periods), (10, 5));
        assert!((longest.throttled_s - 0.3).abs() < 1e-12, "{longest:?}");
        let reset = Throttling::default().since(&Throttling { periods: 5, throttled_periods: 1, throttled_s: 1.0 });
        assert_eq!(reset, Throttling::default());
        assert_eq!(throttled_between(&[None], &[at(1, 1, 1.0)]), None);
    }
}
