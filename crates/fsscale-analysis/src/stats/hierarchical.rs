//! Several invocations per side: runs nested in invocations (kernels,
//! boots, machines, or just separate `fsscale run`s), the invocation the
//! experimental unit.
//!
//! The model and the interval are Kalibera and Jones's: "Rigorous
//! benchmarking in reasonable time" (ISMM 2013) for the two-level random
//! effects model and its variance components, and "Quantifying performance
//! changes with effect size confidence intervals" (2020 technical report)
//! for the confidence interval of the ratio of means by a hierarchical
//! bootstrap: resample invocations with replacement, then runs within each
//! resampled invocation with replacement. With few invocations that
//! interval is far too narrow (three invocations resample into only ten
//! multisets), so `compare` takes Fieller's interval on the invocation means
//! for its verdicts; the bootstrap (`bootstrap_ratio`, built for the tests)
//! stays here for the simulation that measures the difference
//! (docs/STATISTICS.md).

use super::distributions::t_quantile_two_sided;
#[cfg(test)]
use super::random::SplitMix64;
use serde::{Deserialize, Serialize};

/// The runs of one side, invocation by invocation. Every invocation has at
/// least one run and every run a finite figure of 0 or more.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocations(Vec<Vec<f64>>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvocationsError {
    Empty,
    EmptyInvocation(usize),
    Negative(usize),
}

impl std::fmt::Display for InvocationsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvocationsError::Empty => f.write_str("no invocation"),
            InvocationsError::EmptyInvocation(i) => write!(f, "invocation {} has no run", i + 1),
            InvocationsError::Negative(i) => {
                write!(f, "invocation {} has a run that is not a number of 0 or more", i + 1)
            }
        }
    }
}

impl std::error::Error for InvocationsError {}

impl Invocations {
    pub fn new(runs: Vec<Vec<f64>>) -> Result<Invocations, InvocationsError> {
        if runs.is_empty() {
            return Err(InvocationsError::Empty);
        }
        for (i, inv) in runs.iter().enumerate() {
            if inv.is_empty() {
                return Err(InvocationsError::EmptyInvocation(i));
            }
            if inv.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(InvocationsError::Negative(i));
            }
        }
        Ok(Invocations(runs))
    }

    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// Each invocation's mean.
    pub fn means(&self) -> Vec<f64> {
        self.0.iter().map(|runs| mean(runs)).collect()
    }

    /// The mean of the invocations' means: each invocation weighs the same,
    /// however many runs it had (the top level is the unit).
    #[cfg(test)]
    fn grand_mean(&self) -> f64 {
        mean(&self.means())
    }

    /// The variance components, relative to the grand mean (Kalibera and
    /// Jones 2013, §3: T1 and T2 by the method of moments).
    pub fn components(&self) -> VarianceComponents {
        let means = self.means();
        let grand = mean(&means);
        let with_spread: Vec<&Vec<f64>> = self.0.iter().filter(|r| r.len() > 1).collect();
        // S1²: the runs' variance within an invocation, pooled over those with two runs or more.
        let within = match with_spread.len() {
            0 => None,
            k => Some(with_spread.iter().map(|r| sample_variance(r)).sum::<f64>() / k as f64),
        };
        let between = (means.len() > 1).then(|| {
            // S2², the invocation means' variance, less what the runs' own spread puts in it.
            let s2 = sample_variance(&means);
            let runs = self.0.iter().map(Vec::len).sum::<usize>() as f64 / self.0.len() as f64;
            (s2 - within.unwrap_or(0.0) / runs).max(0.0)
        });
        // Relative to a grand mean of 0 (every run stalled) there is nothing to say.
        let relative = |v: Option<f64>| v.filter(|_| grand > 0.0).map(|v| v.sqrt() / grand);
        VarianceComponents {
            invocations: self.0.len(),
            runs_per_invocation: self.0.iter().map(Vec::len).sum::<usize>() as f64 / self.0.len() as f64,
            within_rel_sd: relative(within),
            between_rel_sd: relative(between),
        }
    }

    /// One hierarchical resample's grand mean.
    #[cfg(test)]
    fn resampled_mean(&self, rng: &mut SplitMix64) -> f64 {
        let n = self.0.len();
        let mut sum = 0.0;
        for _ in 0..n {
            let runs = &self.0[rng.below(n)];
            let r = runs.len();
            let total: f64 = (0..r).map(|_| runs[rng.below(r)]).sum();
            sum += total / r as f64;
        }
        sum / n as f64
    }
}

/// How a side's figures vary, as relative standard deviations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VarianceComponents {
    pub invocations: usize,
    pub runs_per_invocation: f64,
    /// Between runs of one invocation; `None` when no invocation had two runs.
    pub within_rel_sd: Option<f64>,
    /// Between invocations, beyond what the runs' spread explains; `None`
    /// with a single invocation: it cannot be measured from one.
    pub between_rel_sd: Option<f64>,
}

/// The ratio of grand means new/base with its bootstrap interval.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RatioInterval {
    pub ratio: f64,
    pub interval: (f64, f64),
    /// Twice the share of resampled ratios on the far side of 1 (at least one resample's share).
    pub p_value: f64,
}

/// The ratio of `new`'s grand mean to `base`'s, with the percentile
/// interval of `resamples` hierarchical bootstrap resamples (seeded: the
/// same data give the same interval). The simulation's, in the tests:
/// `compare` judges by Fieller's interval on the invocation means.
#[cfg(test)]
pub(crate) fn bootstrap_ratio(
    base: &Invocations,
    new: &Invocations,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> RatioInterval {
    let mut rng = SplitMix64::new(seed);
    let resamples = resamples.max(100);
    let mut ratios: Vec<f64> =
        (0..resamples).map(|_| new.resampled_mean(&mut rng) / base.resampled_mean(&mut rng)).collect();
    ratios.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    let at = |q: f64| ratios[((q * resamples as f64).floor() as usize).min(resamples - 1)];
    let below = ratios.iter().filter(|&&r| r <= 1.0).count();
    let above = resamples - ratios.iter().filter(|&&r| r < 1.0).count();
    let p_value = (2.0 * below.min(above).max(1) as f64 / resamples as f64).min(1.0);
    RatioInterval {
        ratio: new.grand_mean() / base.grand_mean(),
        interval: (at(alpha / 2.0), at(1.0 - alpha / 2.0)),
        p_value,
    }
}

/// Invocations per side for a change of `change` (relative, e.g. -0.04) to
/// stand out at `confidence`, when invocations spread by `between_rel_sd`
/// and `runs` runs of each by `within_rel_sd`: the least n with
/// t(2n−2) · √(2 (σb² + σw²/r) / n) < |change| (the interval of the log
/// ratio of two sides of n invocations each). `None` beyond 1000 or for no change.
pub(crate) fn invocations_needed(
    change: f64,
    between_rel_sd: f64,
    within_rel_sd: f64,
    runs: usize,
    confidence: f64,
) -> Option<usize> {
    let per_invocation = per_invocation(between_rel_sd, within_rel_sd, runs);
    let effect = (1.0 + change).ln().abs();
    if effect.is_nan() || effect <= 0.0 {
        return None;
    }
    (2..=1000).find(|&n| {
        let t = t_quantile_two_sided(confidence, (2 * n - 2) as f64);
        t * (2.0 * per_invocation / n as f64).sqrt() < effect
    })
}

/// The variance of one invocation's mean, relative: σb² + σw²/r.
fn per_invocation(between_rel_sd: f64, within_rel_sd: f64, runs: usize) -> f64 {
    between_rel_sd.powi(2) + within_rel_sd.powi(2) / runs.max(1) as f64
}

/// The smallest relative change (e.g. 0.072 for 7.2%) that `n` invocations
/// a side find at `confidence` with probability `power`, when invocations
/// spread by `between_rel_sd` and `runs` runs of each by `within_rel_sd`:
/// (t(1−α/2) + t(power)) · √(2 (σb² + σw²/r) / n) on the log scale, with
/// 2n−2 degrees of freedom (the two-sample t test's power, Cohen 1988, ch. 2,
/// with t quantiles for the small n invocations have). `None` below 2.
pub(crate) fn detectable_change(
    between_rel_sd: f64,
    within_rel_sd: f64,
    runs: usize,
    n: usize,
    confidence: f64,
    power: f64,
) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let df = (2 * n - 2) as f64;
    // t at the one-sided probability `power` is the two-sided quantile at 2·power − 1.
    let z = t_quantile_two_sided(confidence, df) + t_quantile_two_sided(2.0 * power - 1.0, df);
    let effect = z * (2.0 * per_invocation(between_rel_sd, within_rel_sd, runs) / n as f64).sqrt();
    Some(effect.exp() - 1.0)
}

/// Invocations per side for `change` (relative) to be found at
/// `confidence` with probability `power` (see [`detectable_change`]):
/// the least n whose detectable change is at most |change|. `None` beyond 1000.
pub(crate) fn invocations_to_detect(
    change: f64,
    between_rel_sd: f64,
    within_rel_sd: f64,
    runs: usize,
    confidence: f64,
    power: f64,
) -> Option<usize> {
    let wanted = (1.0 + change.abs()).ln();
    if wanted.is_nan() || wanted <= 0.0 {
        return None;
    }
    (2..=1000).find(|&n| {
        detectable_change(between_rel_sd, within_rel_sd, runs, n, confidence, power)
            .is_some_and(|d| (1.0 + d).ln() <= wanted)
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn sample_variance(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn inv(runs: &[&[f64]]) -> Invocations {
        Invocations::new(runs.iter().map(|r| r.to_vec()).collect()).unwrap()
    }

    #[test]
    fn what_invocations_can_detect_and_how_many_a_change_needs() {
        // Invocations 5% apart, runs 1% within them, 5 runs each: three a side
        // find only a change of about 16% four times in five.
        let three = detectable_change(0.05, 0.01, 5, 3, 0.95, 0.8).unwrap();
        assert!((0.14..0.19).contains(&three), "{three}");
        // More invocations, a smaller change; the same change needs what it says.
        let ten = detectable_change(0.05, 0.01, 5, 10, 0.95, 0.8).unwrap();
        assert!(ten < three && ten > 0.05, "{ten}");
        let n = invocations_to_detect(0.10, 0.05, 0.01, 5, 0.95, 0.8).unwrap();
        assert!(detectable_change(0.05, 0.01, 5, n, 0.95, 0.8).unwrap() <= 0.10);
        assert!(detectable_change(0.05, 0.01, 5, n - 1, 0.95, 0.8).unwrap() > 0.10);
        // With the normal approximation, n ≈ 2 (1.96 + 0.84)² σ² / δ²: about 8 for 10% at σ 5%.
        assert!((6..=10).contains(&n), "{n}");
        assert_eq!(detectable_change(0.05, 0.01, 5, 1, 0.95, 0.8), None);
        assert_eq!(invocations_to_detect(0.0, 0.05, 0.01, 5, 0.95, 0.8), None);
    }

    #[test]
    fn components_separate_the_invocations_spread_from_the_runs() {
        // Three invocations at 98, 100, 102, each with runs ±1 around its mean.
        let side = inv(&[&[97.0, 99.0], &[99.0, 101.0], &[101.0, 103.0]]);
        let c = side.components();
        assert_eq!((c.invocations, c.runs_per_invocation), (3, 2.0));
        // Within: each invocation's variance is 2; between: var(98,100,102) = 4, less 2/2.
        assert!((c.within_rel_sd.unwrap() - 2f64.sqrt() / 100.0).abs() < 1e-12);
        assert!((c.between_rel_sd.unwrap() - 3f64.sqrt() / 100.0).abs() < 1e-12);
        // One invocation: the between component is unknown, not zero.
        assert_eq!(inv(&[&[1.0, 2.0]]).components().between_rel_sd, None);
        // Means closer than the runs' spread explains: no detectable between component.
        assert_eq!(inv(&[&[90.0, 110.0], &[91.0, 109.0]]).components().between_rel_sd, Some(0.0));
    }

    #[test]
    fn bad_sides_are_refused_by_name() {
        assert_eq!(Invocations::new(vec![]), Err(InvocationsError::Empty));
        assert_eq!(Invocations::new(vec![vec![1.0], vec![]]), Err(InvocationsError::EmptyInvocation(1)));
        assert_eq!(Invocations::new(vec![vec![1.0, f64::NAN]]), Err(InvocationsError::Negative(0)));
        assert_eq!(
            InvocationsError::Negative(0).to_string(),
            "invocation 1 has a run that is not a number of 0 or more"
        );
    }

    #[test]
    fn the_interval_holds_a_clear_change_and_repeats_with_its_seed() {
        let base = inv(&[&[100.0, 101.0, 99.0], &[102.0, 103.0, 101.0], &[98.0, 99.0, 97.0]]);
        let new = inv(&[&[90.0, 91.0, 89.0], &[92.0, 91.5, 90.5], &[88.0, 89.0, 88.5]]);
        let r = bootstrap_ratio(&base, &new, 0.95, 10_000, 1);
        assert!((r.ratio - 0.8994).abs() < 1e-3, "{r:?}");
        assert!(r.interval.0 < r.ratio && r.ratio < r.interval.1 && r.interval.1 < 0.95, "{r:?}");
        assert_eq!(r.p_value, 2.0 / 10_000.0, "no resample reaches 1");
        assert_eq!(r, bootstrap_ratio(&base, &new, 0.95, 10_000, 1));
        // The same runs against themselves: 1 inside, p = 1.
        let same = bootstrap_ratio(&base, &base, 0.95, 10_000, 1);
        assert!(same.interval.0 < 1.0 && same.interval.1 > 1.0 && same.p_value > 0.5, "{same:?}");
    }

    #[test]
    fn invocations_needed_grow_with_the_spread_and_shrink_with_the_change() {
        let n = |change, between| invocations_needed(change, between, 0.01, 5, 0.95).unwrap();
        assert!(n(-0.05, 0.02) < n(-0.02, 0.02));
        assert!(n(-0.05, 0.01) <= n(-0.05, 0.02));
        // 5% against invocations spread by 2%: t(4)·√(2·(0.0004+0.00002)/3) = 0.0465 < 0.0513 at n = 3.
        assert_eq!(n(-0.05, 0.02), 3);
        assert_eq!(invocations_needed(0.0, 0.02, 0.01, 5, 0.95), None);
    }

    proptest! {
        #[test]
        fn scaling_a_side_scales_the_ratio_and_its_interval(k in 0.1f64..10.0, seed in 0u64..1000) {
            let base = inv(&[&[100.0, 101.0, 99.0], &[102.0, 103.0, 101.0]]);
            let scaled = Invocations::new(base.0.iter().map(|r| r.iter().map(|v| v * k).collect()).collect()).unwrap();
            let r = bootstrap_ratio(&base, &scaled, 0.95, 500, seed);
            prop_assert!((r.ratio - k).abs() < 1e-9 * k);
            prop_assert!(r.interval.0 <= k * 1.0000001 && r.interval.1 >= k * 0.9999999);
            let c = scaled.components();
            let c0 = base.components();
            prop_assert!((c.within_rel_sd.unwrap() - c0.within_rel_sd.unwrap()).abs() < 1e-9);
        }
    }
}
