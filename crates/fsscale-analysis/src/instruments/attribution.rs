//! Why a compared point changed: the lock-wait sites, the sleep sites and
//! the CPU functions whose share of the workers' time moved most between
//! the two sides, from the profiles both recorded (`--profile locks`,
//! `--profile offcpu`, `--profile cpu`).
//!
//! A differential profile, as `perf diff` gives for one pair of perf files
//! and Gregg's differential flame graphs draw: each side's figures are
//! normalised first (a site's wait over the workers' time in the window; a
//! function's samples over all samples), so a side that ran longer or did
//! more ops does not look worse for it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::{CpuProfile, LockProfile, OffCpuProfile, Point};
use crate::vocab::{Choice, Instrument};

/// Sites and functions shown per point: the largest changes.
pub(crate) const ATTRIBUTION_TOP: usize = 5;

/// Changes smaller than this (a hundredth of a point of percent) are left
/// out: they print as 0 and explain nothing.
const NEGLIGIBLE: f64 = 1e-4;

/// What the two sides' profiles say changed at one point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// With lock profiles on both sides: the share of worker time spent
    /// waiting, base and new, and the sites whose share changed most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<SiteDelta>,
    /// With off-CPU profiles on both sides: the share of worker time
    /// asleep, base and new, and the sleep sites whose share changed most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asleep: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sleeps: Vec<SiteDelta>,
    /// With CPU profiles on both sides: the functions whose share of samples changed most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu: Vec<FunctionDelta>,
    /// The two sides' folded CPU stacks, base and new, for a differential
    /// flame graph; not written with the comparison (each results file has them).
    #[serde(skip)]
    pub stacks: Option<(BTreeMap<String, u64>, BTreeMap<String, u64>)>,
    /// The two sides' folded off-CPU stacks (µs asleep), as `stacks`.
    #[serde(skip)]
    pub sleep_stacks: Option<(BTreeMap<String, u64>, BTreeMap<String, u64>)>,
}

impl Attribution {
    /// The change that says most: the lock or sleep site whose share of
    /// worker time grew or shrank most, else the CPU function, as "+9.1
    /// points of worker time waiting in SITE" / "... asleep in SITE" /
    /// "+3.2 points of CPU samples in FUNCTION".
    pub(crate) fn headline(&self) -> Option<String> {
        let pts = |c: f64| format!("{:+.1} points", 100.0 * c);
        let lock = self.locks.first().map(|s| (s, "waiting in"));
        let sleep = self.sleeps.first().map(|s| (s, "asleep in"));
        let site = match (lock, sleep) {
            (Some(l), Some(s)) if s.0.change().abs() > l.0.change().abs() => Some(s),
            (Some(l), _) => Some(l),
            (None, s) => s,
        };
        match (site, self.cpu.first()) {
            (Some((site, how)), _) => Some(format!("{} of worker time {how} {}", pts(site.change()), site.site)),
            (None, Some(f)) => Some(format!("{} of CPU samples in {}", pts(f.change()), f.name)),
            (None, None) => None,
        }
    }
}

/// A lock-wait or sleep site on both sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteDelta {
    /// The site as reports name it: `down_write ← filename_create ←
    /// do_mkdirat (rwsem write)`, with the lock where known; a sleep's with its state.
    pub site: String,
    pub base: SiteSide,
    pub new: SiteSide,
}

/// One side's figures of a site: zero where that side never waited there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteSide {
    /// Its wait (or sleep) over the workers' time in the window.
    pub share: f64,
    /// Waits (or sleeps).
    pub waits: u64,
    pub mean_wait_s: f64,
}

impl SiteDelta {
    /// The change in share of worker time, in points (0.05 = 5 points).
    pub fn change(&self) -> f64 {
        self.new.share - self.base.share
    }
}

/// A function's shares of the CPU samples on both sides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionDelta {
    pub name: String,
    /// Samples in the function itself, over all samples: base, new.
    pub self_share: (f64, f64),
    /// Samples with it on the stack, over all samples: base, new.
    pub inclusive_share: (f64, f64),
}

impl FunctionDelta {
    /// The change in its self share, in points.
    pub fn change(&self) -> f64 {
        self.self_share.1 - self.self_share.0
    }
}

/// What changed between `base` and `new`, where both carry a profile of a kind; `None` when neither kind is on both.
pub fn attribute(base: &Point, new: &Point) -> Option<Attribution> {
    let mut why = Attribution::default();
    let mut any = false;
    for i in Instrument::ALL {
        any |= i.section().attribute(base, new, &mut why);
    }
    any.then_some(why)
}

/// Sites' figures on one side, by label, from (label, count, seconds):
/// each one's share of the workers' time is the side's whole share
/// (`share_of_all`, over `total_s`) split by its part of the seconds.
fn sides<'a>(
    sites: impl Iterator<Item = (String, u64, f64)> + 'a,
    total_s: f64,
    share_of_all: f64,
) -> BTreeMap<String, SiteSide> {
    // Per label: waits, seconds waited, share of worker time.
    let mut sums: BTreeMap<String, (u64, f64, f64)> = BTreeMap::new();
    for (label, count, seconds) in sites {
        let sum = sums.entry(label).or_default();
        sum.0 += count;
        sum.1 += seconds;
        if total_s > 0.0 {
            sum.2 += share_of_all * seconds / total_s;
        }
    }
    sums.into_iter()
        .map(|(label, (waits, wait_s, share))| {
            let mean_wait_s = if waits > 0 { wait_s / waits as f64 } else { 0.0 };
            (label, SiteSide { share, waits, mean_wait_s })
        })
        .collect()
}

fn lock_sides(profile: &LockProfile, waiting: f64) -> BTreeMap<String, SiteSide> {
    sides(profile.sites.iter().map(|s| (s.label(), s.count, s.wait_s)), profile.wait_s, waiting)
}

pub(crate) fn sleep_deltas(
    base: &OffCpuProfile,
    base_asleep: f64,
    new: &OffCpuProfile,
    new_asleep: f64,
) -> Vec<SiteDelta> {
    let side = |p: &OffCpuProfile, share: f64| {
        sides(p.sites.iter().map(|s| (format!("{} ({})", s.site, s.state), s.count, s.asleep_s)), p.asleep_s, share)
    };
    let (b, n) = (side(base, base_asleep), side(new, new_asleep));
    largest_changes(&b, &n, |site, base, new| SiteDelta { site: site.to_string(), base, new }, SiteDelta::change)
}

pub(crate) fn site_deltas(
    base: &LockProfile,
    base_waiting: f64,
    new: &LockProfile,
    new_waiting: f64,
) -> Vec<SiteDelta> {
    let (b, n) = (lock_sides(base, base_waiting), lock_sides(new, new_waiting));
    largest_changes(&b, &n, |site, base, new| SiteDelta { site: site.to_string(), base, new }, SiteDelta::change)
}

pub(crate) fn function_deltas(base: &CpuProfile, new: &CpuProfile) -> Vec<FunctionDelta> {
    let shares = |p: &CpuProfile| -> BTreeMap<String, (f64, f64)> {
        let all = p.samples.max(1) as f64;
        p.functions()
            .into_iter()
            .map(|f| (f.name, (f.self_samples as f64 / all, f.inclusive_samples as f64 / all)))
            .collect()
    };
    let delta = |name: &str, (bs, bi): (f64, f64), (ns, ni): (f64, f64)| FunctionDelta {
        name: name.to_string(),
        self_share: (bs, ns),
        inclusive_share: (bi, ni),
    };
    largest_changes(&shares(base), &shares(new), delta, FunctionDelta::change)
}

/// Every name of `base` or `new`, with both sides' figures (the default
/// where a side lacks it) made into a delta: those whose `change` is at
/// least [`NEGLIGIBLE`], largest first (ties by name, so the order is the
/// same on every machine), at most [`ATTRIBUTION_TOP`].
fn largest_changes<V: Copy + Default, D>(
    base: &BTreeMap<String, V>,
    new: &BTreeMap<String, V>,
    delta: impl Fn(&str, V, V) -> D,
    change: impl Fn(&D) -> f64,
) -> Vec<D> {
    let figures = |side: &BTreeMap<String, V>, name: &str| side.get(name).copied().unwrap_or_default();
    let mut deltas: Vec<(&String, D)> = base
        .keys()
        .chain(new.keys().filter(|k| !base.contains_key(*k)))
        .map(|name| (name, delta(name, figures(base, name), figures(new, name))))
        .filter(|(_, d)| change(d).abs() >= NEGLIGIBLE)
        .collect();
    deltas.sort_by(|(x, dx), (y, dy)| change(dy).abs().total_cmp(&change(dx).abs()).then_with(|| x.cmp(y)));
    deltas.into_iter().take(ATTRIBUTION_TOP).map(|(_, d)| d).collect()
}

/// The command that would record what explains a change: `command_line`
/// (a results file's) with `--profile locks,cpu,offcpu` in place of any `--profile`
/// and without its output file, so the rerun writes a file of its own.
pub fn profiling_command(command_line: &[String]) -> Option<String> {
    let mut args = command_line.iter().skip(1).peekable();
    let mut out = vec!["fsscale".to_string()];
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--profile" | "-o" | "--output" | "--like" => {
                args.next();
            }
            a if a.starts_with("--profile=") || a.starts_with("--output=") || a.starts_with("--like=") => {}
            _ => out.push(arg.clone()),
        }
    }
    if out.get(1).map(String::as_str) != Some("run") {
        return None;
    }
    out.push("--profile".into());
    out.push("locks,cpu,offcpu".into());
    Some(out.iter().map(|a| crate::vocab::shell_word(a)).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{point, run};
    use crate::vocab::{Share, Workload};

    use crate::results::fixtures::{cpu_profile, rwsem_site as site};
    use crate::results::LockSite;

    /// One 1-second run of 2 workers (2 worker-seconds) that waited at `sites`.
    fn waited(sites: Vec<LockSite>) -> Point {
        let mut r = run(0, &[1000, 1000], 1.0);
        r.sections.locks = Some(LockProfile::from_sites(sites.iter().map(|s| s.count).sum(), 0, sites));
        point(Workload::CreatUnlink, Share::Shared, 2, vec![r])
    }

    fn profiled(folded: &[(&str, u64)]) -> Point {
        let mut r = run(0, &[1000], 1.0);
        r.sections.cpu_profile = Some(cpu_profile(folded));
        point(Workload::CreatUnlink, Share::Shared, 1, vec![r])
    }

    #[test]
    fn the_site_that_grew_most_comes_first_in_points_of_worker_time() {
        let base = waited(vec![site("down_write ← filename_create", 10, 0.02), site("mutex_lock ← x", 5, 0.1)]);
        let new = waited(vec![site("down_write ← filename_create", 400, 0.4), site("mutex_lock ← x", 5, 0.1)]);
        let a = attribute(&base, &new).unwrap();
        // 0.12 s of 2 worker-seconds waiting, then 0.5 s.
        let (b, n) = a.waiting.unwrap();
        assert!((b - 0.06).abs() < 1e-12 && (n - 0.25).abs() < 1e-12, "{:?}", a.waiting);
        assert_eq!(a.locks.len(), 1, "the unchanged site is left out: {:?}", a.locks);
        let grew = &a.locks[0];
        assert_eq!(grew.site, "down_write ← filename_create (rwsem write)");
        assert!((grew.base.share - 0.01).abs() < 1e-12 && (grew.new.share - 0.2).abs() < 1e-12, "{grew:?}");
        assert_eq!((grew.base.waits, grew.new.waits), (10, 400));
        assert!((grew.new.mean_wait_s - 0.001).abs() < 1e-12);
        assert!((grew.change() - 0.19).abs() < 1e-12);
        assert!(a.cpu.is_empty(), "no CPU profiles");
        assert_eq!(
            a.headline().unwrap(),
            "+19.0 points of worker time waiting in down_write ← filename_create (rwsem write)"
        );
    }

    /// One 1-second run of 2 workers that slept `(site, seconds)` each.
    fn slept(sites: &[(&str, f64)]) -> Point {
        let mut r = run(0, &[1000, 1000], 1.0);
        let sites: Vec<crate::results::SleepSite> = sites
            .iter()
            .map(|(site, s)| crate::results::SleepSite {
                site: site.to_string(),
                state: "uninterruptible".into(),
                count: 100,
                asleep_s: *s,
                max_asleep_s: *s / 50.0,
            })
            .collect();
        r.sections.offcpu = Some(OffCpuProfile {
            sleeps: 100 * sites.len() as u64,
            asleep_s: sites.iter().map(|s| s.asleep_s).sum(),
            sites,
            ..OffCpuProfile::default()
        });
        point(Workload::Fsync, Share::Private, 2, vec![r])
    }

    #[test]
    fn a_sleep_site_that_grew_more_than_any_lock_site_heads_the_explanation() {
        let mut base = slept(&[("schedule ← jbd2_log_wait_commit ← ext4_sync_file", 0.2), ("io ← x", 0.1)]);
        let mut new = slept(&[("schedule ← jbd2_log_wait_commit ← ext4_sync_file", 1.0), ("io ← x", 0.1)]);
        base.runs[0].sections.locks = waited(vec![site("down_write ← a", 10, 0.02)]).runs[0].sections.locks.clone();
        new.runs[0].sections.locks = waited(vec![site("down_write ← a", 10, 0.1)]).runs[0].sections.locks.clone();
        let a = attribute(&base, &new).unwrap();
        let (b, n) = a.asleep.unwrap();
        assert!((b - 0.15).abs() < 1e-12 && (n - 0.55).abs() < 1e-12, "{:?}", a.asleep);
        assert_eq!(a.sleeps.len(), 1, "{:?}", a.sleeps);
        assert_eq!(a.sleeps[0].site, "schedule ← jbd2_log_wait_commit ← ext4_sync_file (uninterruptible)");
        assert!((a.sleeps[0].change() - 0.4).abs() < 1e-12);
        // The lock site grew by 4 points, the sleep site by 40.
        assert_eq!(
            a.headline().unwrap(),
            "+40.0 points of worker time asleep in schedule ← jbd2_log_wait_commit ← ext4_sync_file (uninterruptible)"
        );
    }

    #[test]
    fn a_site_on_one_side_only_counts_as_zero_on_the_other() {
        let base = waited(vec![site("a", 1, 0.1)]);
        let new = waited(vec![site("b", 1, 0.3)]);
        let a = attribute(&base, &new).unwrap();
        let found: Vec<(&str, f64, f64)> =
            a.locks.iter().map(|d| (d.site.as_str(), d.base.share, d.new.share)).collect();
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].0, found[0].1), ("b (rwsem write)", 0.0));
        assert!((found[0].2 - 0.15).abs() < 1e-12);
        assert_eq!((found[1].0, found[1].2), ("a (rwsem write)", 0.0));
        assert!((found[1].1 - 0.05).abs() < 1e-12);
    }

    #[test]
    fn functions_are_compared_by_their_share_of_samples() {
        // Base: 100 samples, 10 in the spin lock; new: 200, 100 in it.
        let base = profiled(&[("entry;do_sys_open;_raw_spin_lock", 10), ("entry;do_sys_open", 90)]);
        let new = profiled(&[("entry;do_sys_open;_raw_spin_lock", 100), ("entry;do_sys_open", 100)]);
        let a = attribute(&base, &new).unwrap();
        assert_eq!(a.waiting, None);
        let names: Vec<&str> = a.cpu.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["_raw_spin_lock", "do_sys_open"], "entry's share did not change");
        assert_eq!(a.cpu[0].self_share, (0.1, 0.5));
        assert_eq!(a.cpu[1].inclusive_share, (1.0, 1.0));
        assert_eq!(a.cpu[1].self_share, (0.9, 0.5));
        assert_eq!(a.headline().unwrap(), "+40.0 points of CPU samples in _raw_spin_lock");
        assert_eq!(a.stacks.as_ref().unwrap().1.get("entry;do_sys_open;_raw_spin_lock"), Some(&100));
    }

    #[test]
    fn nothing_to_attribute_without_a_profile_on_both_sides() {
        let base = waited(vec![site("a", 1, 0.1)]);
        assert_eq!(attribute(&base, &profiled(&[("f", 1)])), None);
        assert_eq!(attribute(&point(Workload::Stat, Share::Private, 1, vec![run(0, &[1], 1.0)]), &base), None);
    }

    #[test]
    fn the_profiling_command_reruns_the_plan_with_both_profiles_and_its_own_output() {
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            profiling_command(&argv("/usr/bin/fsscale run creat-unlink -j 1,2 --profile cpu -o a.json --label a b")),
            Some("fsscale run creat-unlink -j 1,2 --label a b --profile locks,cpu,offcpu".into())
        );
        assert_eq!(
            profiling_command(&argv("fsscale run stat --output=x.json --profile=locks")),
            Some("fsscale run stat --profile locks,cpu,offcpu".into())
        );
        assert_eq!(profiling_command(&argv("fsscale compare a b")), None);
        let spaced = ["fsscale", "run", "--label", "pool of threads"].map(String::from);
        assert_eq!(
            profiling_command(&spaced),
            Some("fsscale run --label 'pool of threads' --profile locks,cpu,offcpu".into())
        );
        assert_eq!(profiling_command(&[]), None);
    }
}
