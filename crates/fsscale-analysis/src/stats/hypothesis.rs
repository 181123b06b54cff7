//! Two-sample tests: is `new` different from `base`?
//!
//! - Student's t with pooled variance (Student 1908), the test ministat uses;
//! - Welch's t with Welch–Satterthwaite degrees of freedom (Welch 1947),
//!   the safer default when the two variances may differ;
//! - the Mann–Whitney U test (Mann & Whitney 1947) for data that are not
//!   normal: exact for small samples without ties, otherwise the normal
//!   approximation with tie and continuity corrections;
//! - Fieller's interval for the ratio of two means (Fieller 1954), which
//!   gives the confidence interval of a relative change honestly, including
//!   the uncertainty of the base mean.

use serde::{Deserialize, Serialize};

use crate::vocab::choice;

use super::distributions::{normal_cdf, normal_quantile, t_quantile_two_sided, t_two_sided_p};
use super::{Sample, StatsError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    Student,
    Welch,
    MannWhitney,
    /// Runs paired by round (run i of one side with run i of the other): a
    /// t test on the rounds' log ratios ([`paired_log_ratio`] of [`Pairs`]).
    Paired,
    /// Runs nested in invocations (several results files per side): the
    /// ratio of the invocations' grand means, with Fieller's interval on the
    /// invocation means ([`super::hierarchical`]).
    Hierarchical,
}

choice!(TestKind {
    Welch => "welch",
    Student => "student",
    MannWhitney => "mann-whitney" | "mw",
    Paired => "paired",
    Hierarchical => "hierarchical"
});

/// A t test's result for `new − base`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TTest {
    /// mean(new) − mean(base).
    pub difference: f64,
    /// Half-width of the confidence interval of the difference.
    pub half_width: f64,
    pub t: f64,
    pub df: f64,
    pub p_value: f64,
    /// The pooled standard deviation (Student only).
    pub pooled_sd: Option<f64>,
}

fn need_two(base: &Sample, new: &Sample) -> Result<(), StatsError> {
    let n = base.len().min(new.len());
    if n < 2 {
        return Err(StatsError::TooFew { needed: 2, got: n });
    }
    Ok(())
}

/// Student's two-sample t test with pooled variance.
pub fn student(base: &Sample, new: &Sample, confidence: f64) -> Result<TTest, StatsError> {
    need_two(base, new)?;
    let (n1, n2) = (base.len() as f64, new.len() as f64);
    let df = n1 + n2 - 2.0;
    let pooled_var = ((n1 - 1.0) * base.variance() + (n2 - 1.0) * new.variance()) / df;
    let se = (pooled_var * (1.0 / n1 + 1.0 / n2)).sqrt();
    Ok(t_result(new.mean() - base.mean(), se, df, confidence, Some(pooled_var.sqrt())))
}

/// Benjamini and Hochberg (1995), "Controlling the false discovery rate":
/// each p-value adjusted for the `m` tested together, q(i) = min over
/// j ≥ i of m·p(j)/j in ascending order of p, in the order given. Calling
/// those with q below α keeps the expected share of false calls among all
/// calls at α, and where nothing differs, the chance of any call.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = p_values.len() as f64;
    let mut q = vec![1.0; p_values.len()];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p_values[i] * m / (rank + 1) as f64).min(1.0);
        q[i] = running;
    }
    q
}

/// Welch's unequal-variance t test.
pub fn welch(base: &Sample, new: &Sample, confidence: f64) -> Result<TTest, StatsError> {
    need_two(base, new)?;
    let (n1, n2) = (base.len() as f64, new.len() as f64);
    let (v1, v2) = (base.variance() / n1, new.variance() / n2);
    let se = (v1 + v2).sqrt();
    let df =
        if v1 + v2 == 0.0 { n1 + n2 - 2.0 } else { (v1 + v2).powi(2) / (v1 * v1 / (n1 - 1.0) + v2 * v2 / (n2 - 1.0)) };
    Ok(t_result(new.mean() - base.mean(), se, df, confidence, None))
}

fn t_result(difference: f64, se: f64, df: f64, confidence: f64, pooled_sd: Option<f64>) -> TTest {
    let critical = t_quantile_two_sided(confidence, df);
    let (t, p_value) = if se == 0.0 {
        // No spread at all: any difference is certain, none is no evidence.
        if difference == 0.0 {
            (0.0, 1.0)
        } else {
            (f64::INFINITY.copysign(difference), 0.0)
        }
    } else {
        let t = difference / se;
        (t, t_two_sided_p(t, df))
    };
    TTest { difference, half_width: critical * se, t, df, p_value, pooled_sd }
}

/// A paired comparison's result: the ratio new/base as the geometric mean
/// of the pairs' ratios, with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PairedRatio {
    /// exp(mean of ln(new_i / base_i)).
    pub ratio: f64,
    /// The ratio's confidence interval: exp of the mean log ratio's.
    pub interval: (f64, f64),
    pub p_value: f64,
    pub df: f64,
    /// Pairs used (the shorter side's runs).
    pub pairs: usize,
}

/// Two sides' figures paired by position, run k of one with run k of the
/// other, in the order they were measured. Unlike [`Sample`], which sorts,
/// this keeps the order: paired by rank instead of by round, two sides'
/// noise would line up and a chance difference look certain.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pairs {
    base: Vec<f64>,
    new: Vec<f64>,
}

impl Pairs {
    /// The first min(len) figures of each side, paired in order; at least 2
    /// pairs, every figure finite and positive (a ratio's logarithm needs it).
    pub fn new(base: &[f64], new: &[f64]) -> Result<Pairs, StatsError> {
        let n = base.len().min(new.len());
        if n < 2 {
            return Err(StatsError::TooFew { needed: 2, got: n });
        }
        let (base, new) = (&base[..n], &new[..n]);
        if let Some((index, &value)) = base.iter().chain(new).enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0)) {
            return Err(StatsError::NotFinite { index: index % n, value });
        }
        Ok(Pairs { base: base.to_vec(), new: new.to_vec() })
    }

    pub fn len(&self) -> usize {
        self.base.len()
    }

    /// ln(new_k / base_k), pair by pair.
    fn log_ratios(&self) -> Vec<f64> {
        self.base.iter().zip(&self.new).map(|(b, n)| (n / b).ln()).collect()
    }
}

/// Student's paired t test (Student 1908) on the log ratios ln(new_k / base_k)
/// of runs paired by round: whatever moves both runs of a pair alike (a
/// machine warming up over the rounds, an invocation's offset) cancels, as
/// a ratio's logarithm makes a multiplicative effect additive. The interval
/// is of the geometric mean ratio.
pub(crate) fn paired_log_ratio(pairs: &Pairs, confidence: f64) -> Result<PairedRatio, StatsError> {
    let diffs = Sample::new(&pairs.log_ratios())?;
    let n = pairs.len();
    let df = (n - 1) as f64;
    let se = (diffs.variance() / n as f64).sqrt();
    let t = t_result(diffs.mean(), se, df, confidence, None);
    Ok(PairedRatio {
        ratio: diffs.mean().exp(),
        interval: ((diffs.mean() - t.half_width).exp(), (diffs.mean() + t.half_width).exp()),
        p_value: t.p_value,
        df,
        pairs: n,
    })
}

/// The Mann–Whitney U test's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MannWhitney {
    /// U of `new`: the number of (base, new) pairs where new is larger (ties count ½).
    pub u: f64,
    pub p_value: f64,
    /// Whether the p-value comes from the exact distribution of U.
    pub exact: bool,
}

/// Largest sample size for which the exact distribution of U is computed.
const EXACT_LIMIT: usize = 50;

pub(crate) fn mann_whitney(base: &Sample, new: &Sample) -> Result<MannWhitney, StatsError> {
    need_two(base, new)?;
    let (n1, n2) = (base.len(), new.len());
    // Midranks of the pooled sample.
    let mut pooled: Vec<(f64, bool)> =
        base.values().iter().map(|&v| (v, false)).chain(new.values().iter().map(|&v| (v, true))).collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum_new = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let midrank = (i + j) as f64 / 2.0 + 1.0;
        let tied = (j - i + 1) as f64;
        tie_term += tied * tied * tied - tied;
        rank_sum_new += midrank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_new - (n2 * (n2 + 1)) as f64 / 2.0;
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    if tie_term == 0.0 && n1 <= EXACT_LIMIT && n2 <= EXACT_LIMIT {
        return Ok(MannWhitney { u, p_value: exact_u_p(u as usize, n1, n2), exact: true });
    }
    let mean = n1f * n2f / 2.0;
    let n = n1f + n2f;
    let var = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return Ok(MannWhitney { u, p_value: 1.0, exact: false });
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Ok(MannWhitney { u, p_value: (2.0 * (1.0 - normal_cdf(z))).min(1.0), exact: false })
}

/// Two-sided exact p-value of U = `u` for sample sizes n1, n2 (no ties), by
/// counting arrangements: c(u; m, n) = c(u − n; m − 1, n) + c(u; m, n − 1).
fn exact_u_p(u: usize, n1: usize, n2: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[m][u] for the current n, built up column by column.
    let mut counts: Vec<Vec<f64>> = (0..=n1).map(|_| vec![0.0; max_u + 1]).collect();
    for row in counts.iter_mut() {
        row[0] = 1.0; // n = 0: one arrangement, U = 0
    }
    for n in 1..=n2 {
        let mut next: Vec<Vec<f64>> = (0..=n1).map(|_| vec![0.0; max_u + 1]).collect();
        next[0][0] = 1.0;
        for m in 1..=n1 {
            for v in 0..=m * n {
                // The largest element is new (it beats all m base elements) or base.
                let a = if v >= m { counts[m][v - m] } else { 0.0 };
                let b = next[m - 1][v];
                next[m][v] = a + b;
            }
        }
        counts = next;
    }
    let dist = &counts[n1];
    let total: f64 = dist.iter().sum();
    let lower: f64 = dist[..=u].iter().sum::<f64>() / total;
    let upper: f64 = dist[u..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Fieller's confidence interval for mean(new) / mean(base), independent
/// samples; `None` when the base mean is not clearly away from zero (the
/// interval is then unbounded).
pub(crate) fn ratio_interval(base: &Sample, new: &Sample, critical_t: f64) -> Option<(f64, f64)> {
    let (mb, mn) = (base.mean(), new.mean());
    if mb == 0.0 {
        return None;
    }
    let vb = base.variance() / base.len() as f64;
    let vn = new.variance() / new.len() as f64;
    let g = critical_t * critical_t * vb / (mb * mb);
    if g >= 1.0 {
        return None;
    }
    let ratio = mn / mb;
    let spread = (critical_t / mb.abs()) * (vn * (1.0 - g) + ratio * ratio * vb).sqrt();
    let lo = (ratio - spread) / (1.0 - g);
    let hi = (ratio + spread) / (1.0 - g);
    Some((lo.min(hi), lo.max(hi)))
}

/// Where `new` lies against the midpoint of two references: a t test of
/// `mean(new) − (mean(low) + mean(high)) / 2`, its variance the weighted sum
/// of the three means' (`var(new)/n + (var(low)/n_low + var(high)/n_high)/4`),
/// its degrees of freedom Welch–Satterthwaite's for a linear combination
/// (Satterthwaite 1946). Positive: `new` is nearer `high`.
///
/// A bisection gate asks this of a revision between a good and a bad
/// reference: it is the one question whose answer neither reference's
/// noise alone decides.
pub(crate) fn midpoint_welch(low: &Sample, high: &Sample, new: &Sample, confidence: f64) -> Result<TTest, StatsError> {
    for side in [low, high, new] {
        if side.len() < 2 {
            return Err(StatsError::TooFew { needed: 2, got: side.len() });
        }
    }
    let term = |s: &Sample, weight: f64| (weight * weight * s.variance() / s.len() as f64, s.len() as f64 - 1.0);
    let terms = [term(new, 1.0), term(low, 0.5), term(high, 0.5)];
    let variance: f64 = terms.iter().map(|t| t.0).sum();
    let df = if variance == 0.0 {
        terms.iter().map(|t| t.1).sum()
    } else {
        variance * variance / terms.iter().map(|(v, dof)| v * v / dof).sum::<f64>()
    };
    let difference = new.mean() - (low.mean() + high.mean()) / 2.0;
    Ok(t_result(difference, variance.sqrt(), df, confidence, None))
}

/// [`midpoint_welch`] with invocations as the unit: each side is its
/// invocations' `(mean, variance of that mean)` (the variance from the
/// invocation's own runs). Two invocations of one system differ by more
/// than their runs show; that difference, σ_b², is estimated from the
/// sides with two invocations or more, pooled (Kalibera & Jones 2013: the
/// spread of the invocation means less what their runs explain, at least
/// 0). A side's mean is its invocations' mean, of variance
/// (σ_b² + mean within) / k; its degrees of freedom k − 1, or, for a side
/// measured once, the pooled estimate's. Needs a side with two invocations.
pub(crate) fn midpoint_invocations(
    low: &[(f64, f64)],
    high: &[(f64, f64)],
    new: &[(f64, f64)],
    confidence: f64,
) -> Result<TTest, StatsError> {
    let sides = [new, low, high];
    if sides.iter().any(|s| s.is_empty()) {
        return Err(StatsError::TooFew { needed: 1, got: 0 });
    }
    let mean = |s: &[(f64, f64)]| s.iter().map(|i| i.0).sum::<f64>() / s.len() as f64;
    let within = |s: &[(f64, f64)]| s.iter().map(|i| i.1).sum::<f64>() / s.len() as f64;
    let repeated: Vec<&[(f64, f64)]> = sides.iter().copied().filter(|s| s.len() >= 2).collect();
    let pooled_df: f64 = repeated.iter().map(|s| s.len() as f64 - 1.0).sum();
    if pooled_df == 0.0 {
        return Err(StatsError::TooFew { needed: 2, got: 1 });
    }
    let spread: f64 =
        repeated.iter().map(|s| s.iter().map(|i| (i.0 - mean(s)).powi(2)).sum::<f64>()).sum::<f64>() / pooled_df;
    let within_all: f64 = repeated.iter().map(|s| within(s) * (s.len() as f64 - 1.0)).sum::<f64>() / pooled_df;
    let between = (spread - within_all).max(0.0);
    if between == 0.0 {
        // Invocations differ no more than their runs say: the runs are the unit.
        return Err(StatsError::TooFew { needed: 2, got: 1 });
    }
    let variance: f64 =
        sides.iter().zip([1.0, 0.5, 0.5]).map(|(s, w)| w * w * (between + within(s)) / s.len() as f64).sum();
    // Every side's term rests on the pooled estimate of σ_b².
    let df = pooled_df;
    let difference = mean(new) - (mean(low) + mean(high)) / 2.0;
    Ok(t_result(difference, variance.sqrt(), df, confidence, None))
}

/// The log likelihood ratio of "`new` is at the high reference's level"
/// against "at the low one's", from a [`midpoint_welch`] or
/// [`midpoint_invocations`] test made at `confidence`: Wald's sequential
/// probability ratio test between two simple hypotheses (Wald 1945).
/// With `d` the distance from the midpoint and `h` half the references'
/// span, both in standard errors, the ratio is 2·d·h: where the revision
/// can only be at one reference's level or the other's, as in a bisection
/// of one step, it weighs which far more sharply than a test against the
/// midpoint, which must first be sure the revision is not at it.
///
/// The t statistic is taken to the normal deviate of the same tail
/// probability, and `h` is shrunk by z/t of the test's own confidence,
/// so few degrees of freedom (a spread estimated from a few invocations)
/// weigh less. Positive: nearer high. Stop when it passes
/// ±ln((1 − α)/α): the chance of the wrong call is then about α.
pub(crate) fn log_likelihood_ratio(test: &TTest, half_span: f64, confidence: f64) -> f64 {
    let quantile = t_quantile_two_sided(confidence, test.df);
    let se = test.half_width / quantile;
    if se.is_nan() || se <= 0.0 {
        // No spread at all: the side the revision lies on is certain.
        return if test.difference == 0.0 { 0.0 } else { f64::INFINITY.copysign(test.difference) };
    }
    let t = test.difference / se;
    if t.is_nan() {
        return 0.0;
    }
    let tail = (t_two_sided_p(t, test.df) / 2.0).max(f64::MIN_POSITIVE);
    let distance = -normal_quantile(tail) * t.signum();
    let shrink = normal_quantile(0.5 + confidence / 2.0) / quantile;
    2.0 * distance * (half_span.abs() / se) * shrink
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_log_ratio_is_the_geometric_mean_ratio_with_a_t_interval() {
        // Every pair 10% down, whatever its level: certain.
        let base = [100.0, 200.0, 400.0];
        let r = paired_log_ratio(&Pairs::new(&base, &[90.0, 180.0, 360.0]).unwrap(), 0.95).unwrap();
        assert!((r.ratio - 0.9).abs() < 1e-12 && r.p_value == 0.0 && r.pairs == 3 && r.df == 2.0, "{r:?}");
        // Ratios 0.9, 1.0, 1.1: logs -0.10536, 0, 0.09531 (mean -0.00335, sd 0.10038),
        // se 0.05795, t(0.975, 2) = 4.3027: interval exp(-0.00335 ± 0.24936).
        let r = paired_log_ratio(&Pairs::new(&base, &[90.0, 200.0, 440.0]).unwrap(), 0.95).unwrap();
        assert!((r.ratio - 0.996656).abs() < 1e-5, "{r:?}");
        assert!((r.interval.0 - 0.77670).abs() < 1e-4 && (r.interval.1 - 1.27890).abs() < 1e-4, "{r:?}");
        assert!((r.p_value - 0.9592).abs() < 1e-3, "{r:?}");
        // A run of 0 ops has no ratio to take the logarithm of.
        assert!(Pairs::new(&base, &[0.0, 1.0, 2.0]).is_err());
        assert!(Pairs::new(&base, &[1.0]).is_err());
    }

    #[test]
    fn the_likelihood_ratio_weighs_the_distance_by_the_span_in_standard_errors() {
        let test = |difference: f64, se: f64, df: f64| TTest {
            difference,
            half_width: se * t_quantile_two_sided(0.95, df),
            t: difference / se,
            df,
            p_value: t_two_sided_p(difference / se, df),
            pooled_sd: None,
        };
        // Two standard errors toward high, the references 8 apart: 2·2·4 = 16.
        let ratio = log_likelihood_ratio(&test(0.01, 0.005, 1e6), 0.02, 0.95);
        assert!((ratio - 16.0).abs() < 1e-3, "{ratio}");
        assert!((log_likelihood_ratio(&test(-0.01, 0.005, 1e6), 0.02, 0.95) + ratio).abs() < 1e-9);
        assert_eq!(log_likelihood_ratio(&test(0.0, 0.005, 1e6), 0.02, 0.95), 0.0);
        // A spread estimated on 2 degrees of freedom weighs less: the tail
        // of t = 2 (1 − 2/√6 two-sided) is a normal deviate of 1.3297, the span shrunk by 1.96/4.30.
        let few = log_likelihood_ratio(&test(0.01, 0.005, 2.0), 0.02, 0.95);
        assert!((few - 2.0 * 1.3297 * 4.0 * 1.95996 / 4.30265).abs() < 2e-3, "{few}");
        // No spread: certain.
        assert_eq!(log_likelihood_ratio(&test(0.01, 0.0, 5.0), 0.02, 0.95), f64::INFINITY);
    }

    #[test]
    fn pairs_keep_the_rounds_order() {
        // Round by round the new side is 1.5 and 0.667 of the base: no
        // consistent change. Sorted first, the pairs would be 100/100 and
        // 200/200, an exact 1.0 with no spread.
        let r = paired_log_ratio(&Pairs::new(&[100.0, 200.0], &[150.0, 133.3]).unwrap(), 0.95).unwrap();
        assert!(r.p_value > 0.9 && r.interval.0 < 0.2 && r.interval.1 > 5.0, "{r:?}");
    }

    use proptest::prelude::*;

    fn sample(v: &[f64]) -> Sample {
        Sample::new(v).unwrap()
    }

    #[test]
    fn student_matches_ministat_example() {
        // ministat on 1..5 versus 3..8: 2.5 +/- 2.39427 at 95% (t = 2.262, df = 9),
        // pooled s = 1.74801; with the exact t quantile 2.262157.
        let r = student(&sample(&[1.0, 2.0, 3.0, 4.0, 5.0]), &sample(&[3.0, 4.0, 5.0, 6.0, 7.0, 8.0]), 0.95).unwrap();
        assert_eq!(r.difference, 2.5);
        assert!((r.pooled_sd.unwrap() - 1.748_015_1).abs() < 1e-6);
        assert!((r.half_width - 2.394_44).abs() < 1e-4, "{}", r.half_width);
        assert_eq!(r.df, 9.0);
        assert!(r.p_value > 0.03 && r.p_value < 0.05, "{}", r.p_value);
    }

    #[test]
    fn midpoint_invocations_holds_a_side_to_how_much_invocations_differ() {
        // Good's two invocations 0.1 apart in logs, their runs tight: the
        // difference is the invocations', and a revision measured once has it too.
        let good = [(0.0, 1e-6), (0.1, 1e-6)];
        let bad = [(-1.0, 1e-6), (-0.9, 1e-6)];
        let r = midpoint_invocations(&good, &bad, &[(-0.2, 1e-6)], 0.95).unwrap();
        // Midpoint -0.45; spread of each side 0.005, less 1e-6 within.
        assert!((r.difference - 0.25).abs() < 1e-12, "{r:?}");
        let between: f64 = 0.005 - 1e-6;
        let variance = (between + 1e-6) + 0.25 * 2.0 * (between + 1e-6) / 2.0;
        assert!((r.t - 0.25 / variance.sqrt()).abs() < 1e-9, "{r:?}");
        assert_eq!(r.df, 2.0, "{r:?}");
        // Invocations that agree as their runs do: the runs decide instead.
        assert!(midpoint_invocations(&[(0.0, 0.01), (0.01, 0.01)], &bad, &[(0.0, 0.01)], 0.95).is_err());
        // The same means as runs alone would be certain; held to the invocations they are not.
        assert!(r.p_value > 0.05, "{r:?}");
        assert!(midpoint_invocations(&good[..1], &bad[..1], &[(0.0, 1e-6)], 0.95).is_err(), "one invocation a side");
    }

    #[test]
    fn midpoint_welch_matches_a_hand_computed_case() {
        // Means 1, 11 (midpoint 6) and 7; variances 1, 4, 9 over 3, 4, 5 values.
        let (low, high, new) =
            (sample(&[0.0, 1.0, 2.0]), sample(&[8.5, 10.0, 12.0, 13.5]), sample(&[2.0, 5.0, 7.0, 9.0, 12.0]));
        let (vl, vh, vn) = (1.0 / 3.0, high.variance() / 4.0, new.variance() / 5.0);
        let variance = vn + (vl + vh) / 4.0;
        let r = midpoint_welch(&low, &high, &new, 0.95).unwrap();
        assert!((r.difference - 1.0).abs() < 1e-12, "{r:?}");
        assert!((r.t - 1.0 / variance.sqrt()).abs() < 1e-12, "{r:?}");
        let df = variance * variance / (vn * vn / 4.0 + (vl / 4.0).powi(2) / 2.0 + (vh / 4.0).powi(2) / 3.0);
        assert!((r.df - df).abs() < 1e-9, "{r:?} {df}");
        // Exactly between two references with no spread: no evidence either way.
        let flat = |v: f64| sample(&[v, v]);
        assert_eq!(midpoint_welch(&flat(1.0), &flat(3.0), &flat(2.0), 0.95).unwrap().p_value, 1.0);
        assert!(midpoint_welch(&flat(1.0), &flat(3.0), &sample(&[2.0]), 0.95).is_err());
    }

    #[test]
    fn welch_matches_a_hand_computed_case() {
        // Variances 2.5 (n=5) and 3.5 (n=6): se² = 0.5 + 0.58333, df = 10.84 (Welch–Satterthwaite).
        let r = welch(&sample(&[1.0, 2.0, 3.0, 4.0, 5.0]), &sample(&[3.0, 4.0, 5.0, 6.0, 7.0, 8.0]), 0.95).unwrap();
        let se2: f64 = 0.5 + 3.5 / 6.0;
        assert!((r.t - 2.5 / se2.sqrt()).abs() < 1e-12);
        let df = se2 * se2 / (0.25 / 4.0 + (3.5f64 / 6.0).powi(2) / 5.0);
        assert!((r.df - df).abs() < 1e-12);
    }

    #[test]
    fn mann_whitney_exact_matches_tables() {
        // Complete separation of 4 vs 4: U = 16, two-sided p = 2/70.
        let r = mann_whitney(&sample(&[1.0, 2.0, 3.0, 4.0]), &sample(&[5.0, 6.0, 7.0, 8.0])).unwrap();
        assert_eq!(r.u, 16.0);
        assert!(r.exact);
        assert!((r.p_value - 2.0 / 70.0).abs() < 1e-12);
        // Interleaved: U = 8 of 16, p = 1.
        let r = mann_whitney(&sample(&[1.0, 4.0, 5.0, 8.0]), &sample(&[2.0, 3.0, 6.0, 7.0])).unwrap();
        assert_eq!(r.u, 8.0);
        assert!((r.p_value - 1.0).abs() < 1e-12);
    }

    #[test]
    fn mann_whitney_with_ties_uses_the_corrected_normal() {
        let r = mann_whitney(&sample(&[1.0, 1.0, 2.0, 2.0, 3.0]), &sample(&[2.0, 3.0, 3.0, 4.0, 4.0])).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 22.0); // 3 + 4.5 + 4.5 + 5 + 5
        assert!(r.p_value > 0.05 && r.p_value < 0.15, "{}", r.p_value);
    }

    #[test]
    fn too_few_points_are_refused() {
        assert_eq!(welch(&sample(&[1.0]), &sample(&[1.0, 2.0]), 0.95), Err(StatsError::TooFew { needed: 2, got: 1 }));
    }

    #[test]
    fn fieller_reduces_to_the_simple_interval_without_base_noise() {
        let base = sample(&[100.0, 100.0, 100.0]);
        let new = sample(&[108.0, 110.0, 112.0]);
        let (lo, hi) = ratio_interval(&base, &new, 2.0).unwrap();
        let half = 2.0 * (4.0f64 / 3.0).sqrt() / 100.0;
        assert!((lo - (1.1 - half)).abs() < 1e-12 && (hi - (1.1 + half)).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn welch_equals_student_for_equal_sizes_and_variances(
            base in prop::collection::vec(-100f64..100.0, 3..20), shift in -50f64..50.0
        ) {
            // The same spread shifted: equal sizes and equal variances.
            let new: Vec<f64> = base.iter().rev().map(|v| v + shift).collect();
            let (b, n) = (sample(&base), sample(&new));
            prop_assume!(b.variance() > 1e-9);
            let s = student(&b, &n, 0.95).unwrap();
            let w = welch(&b, &n, 0.95).unwrap();
            prop_assert!((s.t - w.t).abs() < 1e-9 * (1.0 + s.t.abs()));
            prop_assert!((s.df - w.df).abs() < 1e-6);
            prop_assert!((s.p_value - w.p_value).abs() < 1e-9);
        }

        #[test]
        fn interval_shrinks_with_more_data(values in prop::collection::vec(0f64..1000.0, 4..12)) {
            let small = sample(&values);
            prop_assume!(small.variance() > 1e-6);
            let doubled: Vec<f64> = values.iter().chain(values.iter()).copied().collect();
            let big = sample(&doubled);
            let a = welch(&small, &small, 0.95).unwrap();
            let b = welch(&big, &big, 0.95).unwrap();
            prop_assert!(b.half_width < a.half_width);
        }

        #[test]
        fn p_values_are_probabilities(
            a in prop::collection::vec(0f64..10.0, 2..15), b in prop::collection::vec(0f64..10.0, 2..15)
        ) {
            let (a, b) = (sample(&a), sample(&b));
            for p in [mann_whitney(&a, &b).unwrap().p_value, welch(&a, &b, 0.9).unwrap().p_value] {
                prop_assert!((0.0..=1.0).contains(&p) || p.is_nan());
            }
        }
    }
}
