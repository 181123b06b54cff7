//! A validated sample of measurements and its summary statistics.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::distributions::{ln_gamma, t_quantile_two_sided};

#[derive(Debug, Clone, PartialEq)]
pub enum StatsError {
    Empty,
    TooFew { needed: usize, got: usize },
    NotFinite { index: usize, value: f64 },
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::Empty => f.write_str("no measurements"),
            StatsError::TooFew { needed, got } => write!(f, "needs at least {needed} measurements, has {got}"),
            StatsError::NotFinite { index, value } => {
                write!(f, "measurement {index} is not a finite number ({value})")
            }
        }
    }
}

impl std::error::Error for StatsError {}

/// At least one measurement, all finite, kept sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
}

impl Sample {
    pub fn new(values: &[f64]) -> Result<Sample, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NotFinite { index, value });
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Ok(Sample { sorted })
    }

    /// The measurements, sorted ascending.
    pub fn values(&self) -> &[f64] {
        &self.sorted
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// The middle value; for an even count the mean of the two middle values.
    pub fn median(&self) -> f64 {
        let n = self.sorted.len();
        if n % 2 == 1 {
            self.sorted[n / 2]
        } else {
            (self.sorted[n / 2 - 1] + self.sorted[n / 2]) / 2.0
        }
    }

    /// A distribution-free confidence interval for the population median:
    /// the order statistics x(k) and x(n+1−k), k the largest rank with
    /// P(B ≤ k−1) ≤ (1 − confidence)/2 for B ~ Binomial(n, ½), so that the
    /// coverage is at least `confidence` whatever the distribution (Conover,
    /// *Practical Nonparametric Statistics*, 3rd ed., §3.2; Hollander & Wolfe,
    /// *Nonparametric Statistical Methods*, §3.6). `None` when even the range
    /// of the sample covers less: below 6 measurements for 95%.
    pub(crate) fn median_interval(&self, confidence: f64) -> Option<(f64, f64)> {
        let n = self.sorted.len();
        let tail = (1.0 - confidence) / 2.0;
        let k = median_rank(n, tail)?;
        Some((self.sorted[k - 1], self.sorted[n - k]))
    }

    /// Half the width of the mean's Student's t confidence interval,
    /// relative to the mean, in percent (`--until-ci`'s criterion);
    /// `None` below 2 measurements or for a mean of 0.
    pub(crate) fn mean_interval_pct(&self, confidence: f64) -> Option<f64> {
        let n = self.sorted.len();
        let mean = self.mean();
        if n < 2 || mean == 0.0 {
            return None;
        }
        let half = t_quantile_two_sided(confidence, (n - 1) as f64) * self.stddev() / (n as f64).sqrt();
        Some(100.0 * half / mean.abs())
    }

    /// Mean and sum of squared deviations by Welford's online algorithm
    /// (Welford 1962; Knuth, TAOCP vol. 2, 4.2.2), which stays accurate when
    /// the values are large and close together, as ops/s figures are.
    fn mean_and_m2(&self) -> (f64, f64) {
        let mut mean = 0.0;
        let mut m2 = 0.0;
        for (i, &x) in self.sorted.iter().enumerate() {
            let delta = x - mean;
            mean += delta / (i + 1) as f64;
            m2 += delta * (x - mean);
        }
        (mean, m2)
    }

    pub fn mean(&self) -> f64 {
        self.mean_and_m2().0
    }

    /// Unbiased sample variance (n − 1 denominator); 0 for a single value.
    pub fn variance(&self) -> f64 {
        let n = self.sorted.len();
        if n < 2 {
            return 0.0;
        }
        self.mean_and_m2().1 / (n - 1) as f64
    }

    pub(crate) fn stddev(&self) -> f64 {
        self.variance().sqrt()
    }
}

/// The rank k of [`Sample::median_interval`]: the largest k ≤ n/2 whose
/// lower tail P(B ≤ k − 1), B ~ Binomial(n, ½), is at most `tail`.
fn median_rank(n: usize, tail: f64) -> Option<usize> {
    // ln C(n, j) − n ln 2 summed upwards; ln-gamma keeps large n exact enough.
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut cumulative = 0.0;
    let mut best = None;
    for j in 0..n.div_ceil(2) {
        let ln_choose = ln_gamma(n as f64 + 1.0) - ln_gamma(j as f64 + 1.0) - ln_gamma((n - j) as f64 + 1.0);
        cumulative += (ln_choose - ln_half_n).exp();
        if cumulative > tail {
            break;
        }
        best = Some(j + 1);
    }
    best
}

/// The figures stored with every point.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 when n = 1.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Result<Summary, StatsError> {
        let s = Sample::new(values)?;
        Ok(Summary { n: s.len(), median: s.median(), mean: s.mean(), stddev: s.stddev(), min: s.min(), max: s.max() })
    }

    /// Standard deviation relative to the mean, in percent (0 when the mean is 0).
    pub(crate) fn relative_stddev_pct(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            100.0 * self.stddev / self.mean.abs()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.n, s.median, s.mean, s.min, s.max), (8, 4.5, 5.0, 2.0, 9.0));
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(Summary::of(&[3.0]).unwrap().stddev, 0.0);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(Sample::new(&[]), Err(StatsError::Empty));
        assert!(matches!(Sample::new(&[1.0, f64::NAN]), Err(StatsError::NotFinite { index: 1, .. })));
        assert!(matches!(Sample::new(&[f64::INFINITY]), Err(StatsError::NotFinite { index: 0, .. })));
    }

    #[test]
    fn variance_is_stable_for_large_close_values() {
        // The naive sum-of-squares formula loses every digit here.
        let base = 1e9;
        let s = Sample::new(&[base + 4.0, base + 7.0, base + 13.0, base + 16.0]).unwrap();
        assert!((s.variance() - 30.0).abs() < 1e-6, "{}", s.variance());
    }

    #[test]
    fn mean_interval_is_students() {
        // n = 4, mean 10, sd 2: t(0.975, 3) = 3.182446, half-width 3.182446 · 2 / 2.
        let s = Sample::new(&[8.0, 9.0, 11.0, 12.0]).unwrap();
        let sd = s.stddev();
        let expected = 100.0 * 3.182_446_305 * sd / 2.0 / 10.0;
        assert!((s.mean_interval_pct(0.95).unwrap() - expected).abs() < 1e-6);
        assert_eq!(Sample::new(&[5.0]).unwrap().mean_interval_pct(0.95), None);
    }

    #[test]
    fn median_interval_uses_the_tabled_ranks() {
        let sample = |n: usize| Sample::new(&(1..=n).map(|i| i as f64).collect::<Vec<_>>()).unwrap();
        // Conover's table A3 (95%, two-sided): n = 6..8 the extremes, 10 the 2nd, 20 the 6th.
        assert_eq!(sample(5).median_interval(0.95), None, "2 × 1/32 > 5%: no order statistics reach 95%");
        assert_eq!(sample(6).median_interval(0.95), Some((1.0, 6.0)));
        assert_eq!(sample(10).median_interval(0.95), Some((2.0, 9.0)));
        assert_eq!(sample(20).median_interval(0.95), Some((6.0, 15.0)));
        assert_eq!(sample(100).median_interval(0.95), Some((40.0, 61.0)));
    }

    proptest! {
        #[test]
        fn median_interval_covers_at_least_its_confidence(n in 1usize..400, confidence in 0.5f64..0.999) {
            let tail = (1.0 - confidence) / 2.0;
            if let Some(k) = median_rank(n, tail) {
                // Exact coverage of [x(k), x(n+1-k)]: 1 − 2·P(B ≤ k−1).
                let p = |j: usize| (ln_gamma(n as f64 + 1.0) - ln_gamma(j as f64 + 1.0)
                    - ln_gamma((n - j) as f64 + 1.0) - n as f64 * std::f64::consts::LN_2).exp();
                let below: f64 = (0..k).map(p).sum();
                prop_assert!(1.0 - 2.0 * below >= confidence - 1e-9);
                // And k is the largest such rank: one more would fall short.
                if k < n.div_ceil(2) {
                    prop_assert!(1.0 - 2.0 * (below + p(k)) < confidence + 1e-9);
                }
            } else {
                prop_assert!(2.0 * 0.5f64.powi(n as i32) > 1.0 - confidence);
            }
        }

        #[test]
        fn median_interval_holds_the_median(values in prop::collection::vec(-1e6f64..1e6, 6..60)) {
            let s = Sample::new(&values).unwrap();
            let (lo, hi) = s.median_interval(0.95).unwrap();
            prop_assert!(lo <= s.median() && s.median() <= hi);
        }

        #[test]
        fn summary_is_ordered(values in prop::collection::vec(-1e12f64..1e12, 1..50)) {
            let s = Summary::of(&values).unwrap();
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean + 1e-3 && s.mean <= s.max + 1e-3);
            prop_assert!(s.stddev >= 0.0);
        }

        #[test]
        fn shifting_moves_location_not_spread(values in prop::collection::vec(0f64..1e6, 2..40), shift in -1e6f64..1e6) {
            let a = Summary::of(&values).unwrap();
            let shifted: Vec<f64> = values.iter().map(|v| v + shift).collect();
            let b = Summary::of(&shifted).unwrap();
            prop_assert!((b.median - a.median - shift).abs() < 1e-6);
            prop_assert!((b.stddev - a.stddev).abs() < 1e-6 * (1.0 + a.stddev));
        }

        #[test]
        fn order_does_not_matter(mut values in prop::collection::vec(-1e6f64..1e6, 1..30)) {
            let a = Summary::of(&values).unwrap();
            values.reverse();
            let b = Summary::of(&values).unwrap();
            prop_assert_eq!(a.median, b.median);
            prop_assert!((a.mean - b.mean).abs() < 1e-6);
        }
    }
}
