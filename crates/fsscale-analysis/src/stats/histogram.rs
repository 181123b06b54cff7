//! Log-linear latency histograms: cheap to record into, exact to merge.
//!
//! The bucketing is the one HdrHistogram and the kernel's BPF `hist()` helpers
//! use (Gil Tene, "HdrHistogram: A High Dynamic Range Histogram"): values
//! below 2^[`SUB_BITS`]+1 ns have a bucket each; above, every power of two is
//! split into 2^[`SUB_BITS`] equal buckets, so a bucket's width is at most
//! 1/16 of its lower bound and a quantile read from it is within 6.25% of the
//! true value. Recording is a leading-zero count, a shift and an increment.
//! Histograms with the same layout merge by adding counts, so workers record
//! on their own and the coordinator (or a later analysis) adds them up.

use serde::{Deserialize, Serialize};

/// Bits of linear resolution inside each power of two.
pub const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// The largest exponent with buckets of its own; longer latencies (over
/// 2^40 ns, about 18 minutes) share the last bucket, and `max_ns` stays exact.
pub const MAX_EXPONENT: u32 = 39;
/// Number of buckets.
pub const BUCKETS: usize = ((MAX_EXPONENT - SUB_BITS + 2) as usize) << SUB_BITS;

/// The bucket of a value in nanoseconds.
#[inline(always)]
pub fn bucket_of(ns: u64) -> usize {
    if ns < 2 * SUB {
        return ns as usize;
    }
    let exponent = (63 - ns.leading_zeros()).min(MAX_EXPONENT);
    if exponent == MAX_EXPONENT && ns >> MAX_EXPONENT > 1 {
        return BUCKETS - 1;
    }
    let shift = exponent - SUB_BITS;
    (((exponent - SUB_BITS + 1) as usize) << SUB_BITS) + ((ns >> shift) & (SUB - 1)) as usize
}

/// The smallest and largest value (ns) that fall into `bucket`.
fn bucket_bounds(bucket: usize) -> (u64, u64) {
    let b = bucket as u64;
    if b < 2 * SUB {
        return (b, b);
    }
    let group = (b >> SUB_BITS) as u32; // 2.. ; exponent = group + SUB_BITS - 1
    let shift = group - 1;
    let low = (SUB + (b & (SUB - 1))) << shift;
    if bucket == BUCKETS - 1 {
        return (low, u64::MAX);
    }
    (low, low + (1u64 << shift) - 1)
}

/// The value at quantile `q` (0..=1) of dense bucket counts: the upper
/// bound of the bucket holding rank ⌈q·n⌉, as [`Histogram::quantile`]
/// without the exact extremes. `None` without values; buckets past the
/// last are not read.
pub fn dense_quantile(counts: &[u64], q: f64) -> Option<u64> {
    let counts = &counts[..counts.len().min(BUCKETS)];
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    let bucket = counts.iter().position(|&n| {
        seen += n;
        seen >= rank
    })?;
    Some(bucket_bounds(bucket).1)
}

/// A histogram of latencies in nanoseconds, stored sparsely.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Histogram {
    /// Number of recorded values.
    pub count: u64,
    /// Sum of the values (for the mean).
    pub sum_ns: u64,
    /// Exact extremes (0 when empty).
    pub min_ns: u64,
    pub max_ns: u64,
    /// `[bucket, count]` for every non-empty bucket, in bucket order.
    pub buckets: Vec<(u32, u64)>,
}

/// The percentiles the tables and results show.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl Histogram {
    /// Builds a histogram from dense bucket counts (as workers record them).
    pub fn from_dense(counts: &[u64], sum_ns: u64, min_ns: u64, max_ns: u64) -> Histogram {
        let buckets: Vec<(u32, u64)> =
            counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (i as u32, c)).collect();
        let count = buckets.iter().map(|b| b.1).sum();
        if count == 0 {
            return Histogram::default();
        }
        Histogram { count, sum_ns, min_ns, max_ns, buckets }
    }

    /// Builds a histogram of `values` (ns); for tests and offline use.
    pub fn of(values: &[u64]) -> Histogram {
        let mut dense = vec![0u64; BUCKETS];
        for &v in values {
            dense[bucket_of(v)] += 1;
        }
        let min = values.iter().copied().min().unwrap_or(0);
        let max = values.iter().copied().max().unwrap_or(0);
        Histogram::from_dense(&dense, values.iter().sum(), min, max)
    }

    /// Makes a received histogram one that recording could have made:
    /// buckets in order, each once, none past the last, the count their sum
    /// and the extremes ordered. Returns how many buckets were dropped.
    pub fn bound(&mut self) -> usize {
        let before = self.buckets.len();
        self.buckets.retain(|&(bucket, count)| (bucket as usize) < BUCKETS && count > 0);
        let dropped = before - self.buckets.len();
        self.buckets.sort_unstable_by_key(|b| b.0);
        self.buckets.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = kept.1.saturating_add(later.1);
            }
            same
        });
        self.count = self.buckets.iter().fold(0u64, |sum, b| sum.saturating_add(b.1));
        if self.min_ns > self.max_ns {
            std::mem::swap(&mut self.min_ns, &mut self.max_ns);
        }
        dropped
    }

    /// Adds `other`'s values to this histogram.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        self.min_ns = if self.count == 0 { other.min_ns } else { self.min_ns.min(other.min_ns) };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.count += other.count;
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        let mut merged = Vec::with_capacity(self.buckets.len() + other.buckets.len());
        let (mut a, mut b) = (self.buckets.iter().peekable(), other.buckets.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&(i, x)), Some(&&(j, y))) if i == j => {
                    merged.push((i, x + y));
                    a.next();
                    b.next();
                }
                (Some(&&(i, x)), Some(&&(j, _))) if i < j => {
                    merged.push((i, x));
                    a.next();
                }
                (_, Some(&&(j, y))) => {
                    merged.push((j, y));
                    b.next();
                }
                (Some(&&(i, x)), None) => {
                    merged.push((i, x));
                    a.next();
                }
                (None, None) => break,
            }
        }
        self.buckets = merged;
    }

    pub(crate) fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The value at quantile `q` (0..=1): the upper bound of the bucket that
    /// holds the value of rank ⌈q·count⌉, clamped to the exact min and max
    /// (HdrHistogram's "highest equivalent value"). 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for &(bucket, count) in &self.buckets {
            seen += count;
            if seen >= rank {
                return bucket_bounds(bucket as usize).1.clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    pub(crate) fn percentiles(&self) -> Percentiles {
        Percentiles {
            count: self.count,
            mean_ns: self.mean_ns(),
            p50_ns: self.quantile(0.50),
            p90_ns: self.quantile(0.90),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_are_exact_and_buckets_tile_the_range() {
        for v in 0..32 {
            assert_eq!(bucket_of(v), v as usize);
            assert_eq!(bucket_bounds(v as usize), (v, v));
        }
        assert_eq!(bucket_of(32), 32);
        assert_eq!(bucket_bounds(32), (32, 33));
        // Consecutive buckets meet without gaps or overlaps.
        for b in 0..BUCKETS - 1 {
            assert_eq!(bucket_bounds(b).1 + 1, bucket_bounds(b + 1).0, "bucket {b}");
        }
        assert_eq!(bucket_bounds(BUCKETS - 1).1, u64::MAX);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(1 << 41), BUCKETS - 1);
    }

    #[test]
    fn quantiles_of_a_known_sample() {
        let values: Vec<u64> = (1..=1000).collect();
        let h = Histogram::of(&values);
        assert_eq!(h.count, 1000);
        assert_eq!(h.min_ns, 1);
        assert_eq!(h.max_ns, 1000);
        assert_eq!(h.mean_ns(), 500.5);
        // 500 lies in [496, 511]; the upper bound is reported.
        assert_eq!(h.quantile(0.5), 511);
        assert_eq!(h.quantile(1.0), 1000);
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }

    #[test]
    fn a_received_histogram_is_bounded_to_what_recording_makes() {
        let mut h = Histogram {
            count: 1,
            sum_ns: 10,
            min_ns: 900,
            max_ns: 5,
            buckets: vec![(4_000_000_000, 3), (40, 2), (7, 1), (40, 5), (9, 0)],
        };
        assert_eq!(h.bound(), 2, "the bucket past the last, and the empty one");
        assert_eq!(h.buckets, [(7, 1), (40, 7)]);
        assert_eq!((h.count, h.min_ns, h.max_ns), (8, 5, 900));
        // Every quantile of it is then a bucket's bound: nothing shifts past a word.
        for q in [0.0, 0.5, 1.0] {
            assert!(h.quantile(q) <= 900);
        }
    }

    proptest! {
        #[test]
        fn every_value_lies_in_its_bucket(v in any::<u64>()) {
            let (lo, hi) = bucket_bounds(bucket_of(v));
            prop_assert!(lo <= v && v <= hi);
            if bucket_of(v) < BUCKETS - 1 {
                prop_assert!((hi - lo) as f64 <= lo as f64 / 16.0 + 1.0);
            }
        }

        #[test]
        fn quantiles_are_within_one_sixteenth(values in prop::collection::vec(1u64..10_000_000_000, 1..300), q in 0.0f64..=1.0) {
            let h = Histogram::of(&values);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
            let exact = sorted[rank - 1];
            let got = h.quantile(q);
            prop_assert!(got >= exact, "{got} < {exact}");
            prop_assert!(got as f64 <= exact as f64 * (1.0 + 1.0 / 16.0) + 1.0, "{got} vs {exact}");
        }

        #[test]
        fn dense_quantiles_are_the_histograms_before_its_extremes(values in prop::collection::vec(0u64..1 << 42, 1..200), q in 0.0f64..=1.0) {
            let mut dense = vec![0u64; BUCKETS];
            for &v in &values {
                dense[bucket_of(v)] += 1;
            }
            let h = Histogram::of(&values);
            let got = dense_quantile(&dense, q).unwrap();
            prop_assert_eq!(got.clamp(h.min_ns, h.max_ns), h.quantile(q));
        }

        #[test]
        fn merging_equals_recording_everything(a in prop::collection::vec(0u64..1 << 42, 0..100), b in prop::collection::vec(0u64..1 << 42, 0..100)) {
            let mut merged = Histogram::of(&a);
            merged.merge(&Histogram::of(&b));
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(merged, Histogram::of(&all));
        }
    }
}
