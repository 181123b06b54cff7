//! `--profile latency`: each system call's time in the kernel, measured
//! from `raw_syscalls:sys_enter` to `sys_exit` for the run's workers and
//! kept as log-linear histograms of nanoseconds (16 buckets per power of
//! two, the user-space [`Histogram`]'s layout), so that every percentile
//! printed is within 1/16 of the true one. Files written before kept log2
//! slots (`log2_ns`), as bcc's `syscount -L` does; they are still read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::profile::ProgramCost;
use super::{IntervalLatency, Point};
use crate::stats::histogram::Histogram;

/// Histogram slots kept: `2^0` to `2^63` ns and beyond.
pub(crate) const MAX_SLOTS: usize = 64;
/// System calls a profile keeps (a workload makes a handful).
pub(crate) const MAX_CALLS: usize = 512;

/// The workers' system calls in the window, with their time in the kernel.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct KernelLatency {
    /// What collecting it cost, in the kernel's own count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs: Option<ProgramCost>,
    /// Calls not recorded (full maps): the counts are then low.
    #[serde(default)]
    pub lost_events: u64,
    /// All workers' ops surely inside the span the programs counted, and
    /// those possibly inside it: a call each op makes once is counted
    /// between the two (give or take an op per worker at each edge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_counted: Option<[u64; 2]>,
    /// Per call, most made first.
    pub calls: Vec<CallLatency>,
    /// The most made calls' time in the kernel over the window: each
    /// sample interval's calls, p50 and p99, aligned with the run's
    /// timeline samples. A run's own: a point's sum has none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, IntervalLatency>,
}

/// Calls whose intervals a run keeps.
pub const INTERVAL_CALLS: usize = 8;

/// One system call's calls and their time in the kernel.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct CallLatency {
    /// `openat`, or `syscall 457` for a number fsscale has no name for.
    pub call: String,
    pub count: u64,
    /// Their time in the kernel, all together, seconds.
    pub total_s: f64,
    /// Their times, log-linear, with the exact extremes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<Histogram>,
    /// Files of earlier versions: `log2_ns[i]` calls took `2^i` to
    /// `2^(i+1) - 1` ns (slot 0 also holds 0 ns); the last slot kept holds
    /// every longer one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log2_ns: Vec<u64>,
}

impl CallLatency {
    pub(crate) fn mean_s(&self) -> f64 {
        self.total_s / self.count.max(1) as f64
    }

    /// The `q` quantile (0 < q < 1), seconds: the histogram's (the upper
    /// bound of the bucket of rank ⌈q·n⌉, clamped to the exact extremes, so
    /// within 1/16 above the true one; a call made once, its own time). In
    /// an earlier version's file, linearly inside its log2 slot by rank (a
    /// log2 histogram says no more). `None` without calls.
    pub fn quantile_s(&self, q: f64) -> Option<f64> {
        if let Some(h) = &self.ns {
            return (h.count > 0).then(|| h.quantile(q) as f64 / 1e9);
        }
        let total: u64 = self.log2_ns.iter().sum();
        if total == 0 {
            return None;
        }
        if total == 1 && self.count == 1 {
            return Some(self.total_s);
        }
        let rank = (q.clamp(0.0, 1.0) * total as f64).max(1.0);
        let mut below = 0u64;
        for (i, &n) in self.log2_ns.iter().enumerate() {
            if n > 0 && (below + n) as f64 >= rank {
                let (low, high) = slot_bounds_ns(i);
                let within = (rank - below as f64) / n as f64;
                return Some((low + within * (high - low)) / 1e9);
            }
            below += n;
        }
        let last = self.log2_ns.len() - 1;
        Some(slot_bounds_ns(last).1 / 1e9)
    }
}

/// Slot `i`'s range of nanoseconds, `[2^i, 2^(i+1))` (slot 0 from 0).
fn slot_bounds_ns(i: usize) -> (f64, f64) {
    let low = if i == 0 { 0.0 } else { (1u64 << i.min(63)) as f64 };
    (low, 2f64.powi(i as i32 + 1))
}

impl KernelLatency {
    /// Orders calls most made first (then by name) and keeps [`MAX_CALLS`].
    pub fn ranked(mut calls: Vec<CallLatency>) -> Vec<CallLatency> {
        calls.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.call.cmp(&b.call)));
        calls.truncate(MAX_CALLS);
        calls
    }

    /// The runs' profiles summed, call by call: a point's view.
    pub fn sum<'a>(profiles: impl IntoIterator<Item = &'a KernelLatency>) -> Option<KernelLatency> {
        let mut total: Option<KernelLatency> = None;
        let mut calls: BTreeMap<String, CallLatency> = BTreeMap::new();
        for p in profiles {
            // Every run's bracket, or none: a sum of some runs' would bracket nothing.
            let bracket = match &total {
                None => p.ops_counted,
                Some(t) => t.ops_counted.zip(p.ops_counted).map(|(a, b)| [a[0] + b[0], a[1] + b[1]]),
            };
            let t = total.get_or_insert_with(KernelLatency::default);
            t.ops_counted = bracket;
            t.lost_events += p.lost_events;
            t.programs = ProgramCost::add(t.programs, p.programs);
            for c in &p.calls {
                let sum = calls
                    .entry(c.call.clone())
                    .or_insert_with(|| CallLatency { call: c.call.clone(), ..Default::default() });
                sum.count += c.count;
                sum.total_s += c.total_s;
                if let Some(h) = &c.ns {
                    sum.ns.get_or_insert_with(Histogram::default).merge(h);
                }
                if sum.log2_ns.len() < c.log2_ns.len() {
                    sum.log2_ns.resize(c.log2_ns.len(), 0);
                }
                for (s, n) in sum.log2_ns.iter_mut().zip(&c.log2_ns) {
                    *s += n;
                }
            }
        }
        total.map(|t| KernelLatency {
            calls: Self::ranked(calls.into_values().collect()),
            intervals: BTreeMap::new(),
            ..t
        })
    }

    /// Caps what a received file holds (see `bounds`): returns how many calls were cut.
    pub(crate) fn bound(&mut self) -> usize {
        let cut = self.calls.len().saturating_sub(MAX_CALLS) + self.intervals.len().saturating_sub(INTERVAL_CALLS);
        self.calls.truncate(MAX_CALLS);
        while self.intervals.len() > INTERVAL_CALLS {
            self.intervals.pop_last();
        }
        for c in &mut self.calls {
            c.log2_ns.truncate(MAX_SLOTS);
        }
        cut
    }
}

impl Point {
    /// The kernel latency profile over the point's runs.
    pub fn kernel_latency(&self) -> Option<KernelLatency> {
        KernelLatency::sum(self.runs.iter().filter_map(|r| r.sections.kernel_latency.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, slots: &[(usize, u64)]) -> CallLatency {
        let mut log2_ns = vec![0; 40];
        for &(i, n) in slots {
            log2_ns[i] = n;
        }
        let count = slots.iter().map(|s| s.1).sum();
        CallLatency { call: name.into(), count, total_s: 0.0, ns: None, log2_ns }
    }

    #[test]
    fn quantiles_fall_inside_their_slot_by_rank() {
        // 100 calls of 1024–2047 ns: the median is half way through the slot.
        let c = call("openat", &[(10, 100)]);
        let p50 = c.quantile_s(0.5).unwrap() * 1e9;
        assert!((p50 - 1536.0).abs() < 1e-6, "{p50}");
        // 99 fast and 1 slow: p99 is the fast slot's top, p99.9 in the slow one.
        let c = call("fsync", &[(10, 99), (20, 1)]);
        assert!((c.quantile_s(0.99).unwrap() * 1e9 - 2048.0).abs() < 1e-6);
        let slow = c.quantile_s(0.999).unwrap() * 1e9;
        assert!(((1 << 20) as f64..(1 << 21) as f64).contains(&slow), "{slow}");
        assert_eq!(CallLatency::default().quantile_s(0.5), None);
    }

    #[test]
    fn a_call_made_once_has_its_own_time_as_every_quantile() {
        // 4.89 µs, in the slot [4096, 8192) ns: not the slot's middle or top.
        let once = CallLatency { total_s: 4.89e-6, ..call("fsync", &[(12, 1)]) };
        for q in [0.5, 0.99] {
            assert_eq!(once.quantile_s(q), Some(4.89e-6));
        }
    }

    /// Calls of known times, kept as the programs keep them.
    fn timed(name: &str, ns: &[u64]) -> CallLatency {
        let h = Histogram::of(ns);
        CallLatency { call: name.into(), count: h.count, total_s: h.sum_ns as f64 / 1e9, ns: Some(h), log2_ns: vec![] }
    }

    #[test]
    fn every_percentile_is_within_a_sixteenth_of_the_true_one() {
        // newfstatat's shape that log2 slots misplaced: 99.9% of the calls in
        // [1.02, 2.05) µs, most near 1.05 µs, a few slow ones. Log2 printed
        // p50 1.54 µs beside a mean of 1.09 µs.
        let mut ns: Vec<u64> =
            (0..100_000u64).map(|i| 1_020 + (i * 7919) % 60 + (i % 97) * (i % 5 == 0) as u64 * 9).collect();
        ns.extend((0..100).map(|i| 40_000 + i * 1_000));
        let call = timed("newfstatat", &ns);
        let mut sorted = ns.clone();
        sorted.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let exact = sorted[((q * sorted.len() as f64).ceil() as usize).max(1) - 1] as f64;
            let printed = call.quantile_s(q).unwrap() * 1e9;
            assert!(printed >= exact && printed <= exact * (1.0 + 1.0 / 16.0), "p{q}: {printed} against {exact}");
        }
        assert!(call.quantile_s(0.5).unwrap() < 1.15e-6, "the median cannot exceed about 1.15 µs");
        // A call made once: its own time, whatever the bucket.
        let once = timed("fsync", &[4_890]);
        assert_eq!(once.quantile_s(0.5), Some(4.89e-6));
        // Summed over runs, the histograms merge exactly.
        let sum = KernelLatency::sum([
            &KernelLatency { calls: vec![timed("openat", &sorted[..50_000])], ..Default::default() },
            &KernelLatency { calls: vec![timed("openat", &sorted[50_000..])], ..Default::default() },
        ])
        .unwrap();
        assert_eq!(sum.calls[0].ns.as_ref(), Some(&Histogram::of(&ns)));
    }

    #[test]
    fn runs_sum_call_by_call_most_made_first() {
        let a = KernelLatency {
            programs: Some(ProgramCost { runs: 4, seconds: 0.1, attached: None }),
            lost_events: 1,
            ops_counted: Some([10, 12]),
            calls: vec![call("close", &[(8, 5)]), call("openat", &[(10, 3)])],
            intervals: BTreeMap::new(),
        };
        let b = KernelLatency {
            programs: None,
            lost_events: 2,
            ops_counted: Some([5, 5]),
            calls: vec![call("openat", &[(10, 4), (11, 1)])],
            intervals: BTreeMap::new(),
        };
        let sum = KernelLatency::sum([&a, &b]).unwrap();
        assert_eq!(sum.lost_events, 3);
        assert_eq!(sum.ops_counted, Some([15, 17]));
        let unbracketed = KernelLatency { ops_counted: None, ..b.clone() };
        assert_eq!(KernelLatency::sum([&a, &unbracketed]).unwrap().ops_counted, None, "a bracket of some runs is none");
        assert_eq!(sum.programs.unwrap().runs, 4);
        let names: Vec<(&str, u64)> = sum.calls.iter().map(|c| (c.call.as_str(), c.count)).collect();
        assert_eq!(names, [("openat", 8), ("close", 5)]);
        assert_eq!(sum.calls[0].log2_ns[10], 7);
        assert_eq!(sum.calls[0].log2_ns[11], 1);
        assert!(KernelLatency::sum([]).is_none());
    }
}
