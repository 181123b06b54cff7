//! Per-worker latency histograms in shared memory (`--latency`, and always
//! for `replay`, one histogram per operation kind).
//!
//! Like the counters, this is an anonymous `MAP_SHARED` mapping made before
//! the workers start, so forked processes and threads record the same way.
//! Each worker's histograms start on a page of their own and only that
//! worker writes them (plain relaxed loads and stores, no locked
//! instructions); the coordinator reads them after the workers have left.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::results::IntervalLatency;
use crate::stats::histogram::{bucket_of, Histogram, BUCKETS};

/// Words per histogram: the buckets, then the sum, the inverted minimum
/// (`!min`, so the zero-filled mapping means "no minimum yet") and the maximum.
const STRIDE: usize = BUCKETS + 3;
const SUM: usize = BUCKETS;
const MIN_INVERTED: usize = BUCKETS + 1;
const MAX: usize = BUCKETS + 2;
const PAGE: usize = 4096;

pub(super) struct LatencyRegion {
    base: *mut AtomicU64,
    len: usize,
    workers: usize,
    kinds: usize,
    /// Words from one worker's histograms to the next's (page-rounded).
    worker_words: usize,
}

// SAFETY: all access goes through atomics; the pointer is only the mapping's address.
unsafe impl Send for LatencyRegion {}
// SAFETY: as above.
unsafe impl Sync for LatencyRegion {}

impl LatencyRegion {
    /// Room for `kinds` histograms for each of `workers`.
    pub fn new(workers: usize, kinds: usize) -> std::io::Result<LatencyRegion> {
        let bytes_per_worker = (kinds * STRIDE * 8).div_ceil(PAGE) * PAGE;
        let len = bytes_per_worker * workers.max(1);
        // Zero-filled: zero is a valid AtomicU64 and an empty histogram.
        let base = crate::sys::map_shared(len, false)?.cast::<AtomicU64>();
        Ok(LatencyRegion { base: base.cast(), len, workers, kinds, worker_words: bytes_per_worker / 8 })
    }

    /// Worker `worker`'s recorder.
    pub(crate) fn recorder(&self, worker: usize) -> Recorder<'_> {
        assert!(worker < self.workers);
        // SAFETY: in bounds of the mapping; AtomicU64 has the alignment of the page-aligned mapping.
        let words =
            unsafe { std::slice::from_raw_parts(self.base.add(worker * self.worker_words), self.kinds * STRIDE) };
        Recorder { words }
    }

    /// Histogram `kind`, all workers merged.
    pub fn merged(&self, kind: usize) -> Histogram {
        let mut total = Histogram::default();
        for worker in 0..self.workers {
            let words = &self.recorder(worker).words[kind * STRIDE..(kind + 1) * STRIDE];
            let counts: Vec<u64> = words[..BUCKETS].iter().map(|w| w.load(Ordering::Relaxed)).collect();
            let h = Histogram::from_dense(
                &counts,
                words[SUM].load(Ordering::Relaxed),
                !words[MIN_INVERTED].load(Ordering::Relaxed),
                words[MAX].load(Ordering::Relaxed),
            );
            total.merge(&h);
        }
        total
    }
}

/// The coordinator's view of the histograms over the window: at each
/// sample, all workers' and kinds' buckets summed, less the last sample's,
/// make the interval's percentiles. The buffers are made once, before the
/// window; a sample costs a load of each worker's buckets (592 words).
/// A worker's bucket read between its increment and its sum's is as good as
/// read a moment later: each word is loaded whole.
pub(super) struct IntervalSampler<'a> {
    region: &'a LatencyRegion,
    /// The one kind sampled (an open loop's response times), or all.
    kind: Option<usize>,
    last: Vec<u64>,
    now: Vec<u64>,
    intervals: IntervalLatency,
}

impl<'a> IntervalSampler<'a> {
    /// Starts at what the workers have recorded so far (their warm-up's
    /// ops), of histogram `kind` or of all.
    pub fn new(region: &'a LatencyRegion, kind: Option<usize>) -> IntervalSampler<'a> {
        let mut sampler = IntervalSampler {
            region,
            kind,
            last: vec![0; BUCKETS],
            now: vec![0; BUCKETS],
            intervals: Default::default(),
        };
        sampler.region.sum_buckets(&mut sampler.last, kind);
        sampler
    }

    /// Ends an interval now.
    pub fn sample(&mut self) {
        self.region.sum_buckets(&mut self.now, self.kind);
        for (now, last) in self.now.iter_mut().zip(&mut self.last) {
            let total = *now;
            *now = total.saturating_sub(*last);
            *last = total;
        }
        self.intervals.record(&self.now);
    }

    /// Forgets the last interval (a sample the window's end replaces).
    pub fn pop(&mut self) {
        self.intervals.pop();
    }

    pub fn finish(self) -> IntervalLatency {
        self.intervals
    }
}

impl LatencyRegion {
    /// Every worker's buckets of `kind` (or of every kind), summed into
    /// `into` (BUCKETS long).
    fn sum_buckets(&self, into: &mut [u64], kind: Option<usize>) {
        into.fill(0);
        for worker in 0..self.workers {
            let words = self.recorder(worker).words;
            let kinds = match kind {
                Some(k) => &words[k * STRIDE..(k + 1) * STRIDE],
                None => words,
            };
            for histogram in kinds.chunks_exact(STRIDE) {
                for (sum, w) in into.iter_mut().zip(&histogram[..BUCKETS]) {
                    *sum += w.load(Ordering::Relaxed);
                }
            }
        }
    }
}

impl Drop for LatencyRegion {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// One worker's histograms; single writer.
#[derive(Clone, Copy)]
pub(super) struct Recorder<'a> {
    words: &'a [AtomicU64],
}

impl Recorder<'_> {
    /// Adds one latency of `ns` to histogram `kind`.
    #[inline(always)]
    pub fn record(&self, kind: usize, ns: u64) {
        let h = &self.words[kind * STRIDE..(kind + 1) * STRIDE];
        let bump = |w: &AtomicU64, by: u64| w.store(w.load(Ordering::Relaxed).wrapping_add(by), Ordering::Relaxed);
        bump(&h[bucket_of(ns)], 1);
        bump(&h[SUM], ns);
        if ns > h[MAX].load(Ordering::Relaxed) {
            h[MAX].store(ns, Ordering::Relaxed);
        }
        if !ns > h[MIN_INVERTED].load(Ordering::Relaxed) {
            h[MIN_INVERTED].store(!ns, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recordings_of_all_workers_merge() {
        let region = LatencyRegion::new(3, 2).unwrap();
        for (worker, values) in [(0, vec![10u64, 20, 30]), (2, vec![5, 1_000_000])] {
            for v in values {
                region.recorder(worker).record(1, v);
            }
        }
        region.recorder(1).record(0, 7);
        let merged = region.merged(1);
        assert_eq!(merged, Histogram::of(&[10, 20, 30, 5, 1_000_000]));
        assert_eq!(merged.min_ns, 5);
        assert_eq!(region.merged(0), Histogram::of(&[7]));
        assert_eq!(LatencyRegion::new(2, 1).unwrap().merged(0), Histogram::default());
    }

    #[test]
    fn each_interval_has_the_percentiles_of_the_ops_finished_in_it() {
        let region = LatencyRegion::new(2, 2).unwrap();
        // Before the window: not in any interval.
        region.recorder(0).record(0, 1_000_000);
        let mut sampler = IntervalSampler::new(&region, None);
        // Interval 1: 99 fast ops on one worker and kind, one slow on another.
        for _ in 0..99 {
            region.recorder(0).record(0, 1_000);
        }
        region.recorder(1).record(1, 500_000);
        sampler.sample();
        // Interval 2: nothing finished. Interval 3: a queue built up.
        sampler.sample();
        for v in [50_000u64, 60_000, 70_000, 80_000] {
            region.recorder(1).record(0, v);
        }
        sampler.sample();
        sampler.sample();
        sampler.pop();
        let intervals = sampler.finish();
        assert_eq!(intervals.ops, [100, 0, 4]);
        // A bucket's upper bound: the extremes of one value's histogram opened wide.
        let bound = |v: u64| {
            let h = Histogram { min_ns: 0, max_ns: u64::MAX, ..Histogram::of(&[v]) };
            h.quantile(1.0)
        };
        assert_eq!(intervals.p50_ns[0], bound(1_000));
        assert_eq!(intervals.p99_ns[0], bound(1_000), "the 99th of 100 is a fast one");
        assert_eq!((intervals.p50_ns[1], intervals.p99_ns[1]), (0, 0));
        assert_eq!((intervals.p50_ns[2], intervals.p99_ns[2]), (bound(60_000), bound(80_000)));
        let shown: Vec<f64> = intervals.intervals(&[0.1, 0.2, 0.3]).map(|(at, _, _)| at).collect();
        assert_eq!(shown, [0.1, 0.3], "intervals without ops are not drawn");
    }

    #[test]
    fn a_sampler_of_one_kind_sees_only_its_ops() {
        let region = LatencyRegion::new(2, 3).unwrap();
        let mut sampler = IntervalSampler::new(&region, Some(1));
        region.recorder(0).record(0, 5_000);
        region.recorder(1).record(1, 7_000);
        region.recorder(1).record(2, 9_000);
        sampler.sample();
        assert_eq!(sampler.finish().ops, [1]);
    }
}
