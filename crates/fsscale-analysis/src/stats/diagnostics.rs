//! What the runs of one point say about the measurement itself: how much
//! they scatter, which lie far out, whether they fall into two groups, and
//! whether they trend with the order they ran in (drift). Pure: values in
//! run order in, findings out.

use serde::{Deserialize, Serialize};

use super::distributions::t_two_sided_p;
use super::Sample;

/// The level at which drift is called.
pub(crate) const DRIFT_ALPHA: f64 = 0.05;
/// Sarle's threshold: a uniform distribution has exactly 5/9.
pub(crate) const BIMODALITY_THRESHOLD: f64 = 5.0 / 9.0;
/// Below this many runs, the bimodality coefficient is too noisy to say anything.
pub(crate) const BIMODALITY_MIN_RUNS: usize = 10;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// Standard deviation over mean, in percent.
    pub cv_pct: f64,
    /// Runs (indices in run order) outside Tukey's fences; at least 4 runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<usize>,
    /// Sarle's bimodality coefficient, from 10 runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bimodality: Option<f64>,
    /// Spearman's rank correlation of the values with their run order, from 4 runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub rho: f64,
    /// Two-sided: exact (all orders) up to 8 runs, Student's t approximation beyond.
    pub p_value: f64,
}

impl Diagnostics {
    pub(crate) fn is_bimodal(&self) -> bool {
        self.bimodality.is_some_and(|b| b > BIMODALITY_THRESHOLD)
    }

    pub(crate) fn is_drifting(&self) -> bool {
        self.drift.is_some_and(|d| d.p_value < DRIFT_ALPHA)
    }
}

/// Diagnoses `values`, given in the order the runs ran; `None` when empty or not finite.
pub(crate) fn diagnose(values: &[f64]) -> Option<Diagnostics> {
    let sample = Sample::new(values).ok()?;
    let mean = sample.mean();
    Some(Diagnostics {
        cv_pct: if mean == 0.0 { 0.0 } else { 100.0 * sample.stddev() / mean.abs() },
        outliers: tukey_outliers(values, &sample),
        bimodality: (values.len() >= BIMODALITY_MIN_RUNS).then(|| bimodality_coefficient(&sample)).flatten(),
        drift: (values.len() >= 4).then(|| spearman_drift(values)).flatten(),
    })
}

/// The `q` quantile by linear interpolation between order statistics
/// (Hyndman and Fan 1996, definition 7; R's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Indices of values outside [Q1 − 1.5·IQR, Q3 + 1.5·IQR] (Tukey,
/// *Exploratory Data Analysis*, 1977).
fn tukey_outliers(values: &[f64], sample: &Sample) -> Vec<usize> {
    if values.len() < 4 {
        return Vec::new();
    }
    let sorted = sample.values();
    let (q1, q3) = (quantile(sorted, 0.25), quantile(sorted, 0.75));
    let fence = 1.5 * (q3 - q1);
    values.iter().enumerate().filter(|(_, &v)| v < q1 - fence || v > q3 + fence).map(|(i, _)| i).collect()
}

/// Sarle's bimodality coefficient (g² + 1) / (k + 3(n−1)²/((n−2)(n−3))),
/// g and k the sample skewness and excess kurtosis with the usual
/// small-sample corrections (SAS/STAT, PROC CLUSTER; Pfister et al., "Good
/// things peak in pairs", Frontiers in Psychology 4, 2013). Above 5/9 (a
/// uniform's value) suggests two modes. `None` for constant values.
fn bimodality_coefficient(sample: &Sample) -> Option<f64> {
    let n = sample.len() as f64;
    let mean = sample.mean();
    let m = |k: i32| sample.values().iter().map(|v| (v - mean).powi(k)).sum::<f64>() / n;
    let (m2, m3, m4) = (m(2), m(3), m(4));
    if m2 == 0.0 {
        return None;
    }
    let g1 = m3 / m2.powf(1.5);
    let g2 = m4 / (m2 * m2) - 3.0;
    let skew = g1 * (n * (n - 1.0)).sqrt() / (n - 2.0);
    let kurt = (n - 1.0) / ((n - 2.0) * (n - 3.0)) * ((n + 1.0) * g2 + 6.0);
    Some((skew * skew + 1.0) / (kurt + 3.0 * (n - 1.0).powi(2) / ((n - 2.0) * (n - 3.0))))
}

/// Ranks from 1, ties given their average rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        for &k in &order[i..=j] {
            ranks[k] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    ranks
}

fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Spearman's ρ of the values with their order, and its two-sided p-value:
/// exact over all n! orders for n ≤ 8, else from t = ρ√((n−2)/(1−ρ²)) with
/// n − 2 degrees of freedom (Kendall and Gibbons, *Rank Correlation
/// Methods*, 5th ed., ch. 4). `None` when the values are all equal.
fn spearman_drift(values: &[f64]) -> Option<Drift> {
    let value_ranks = ranks(values);
    let order: Vec<f64> = (1..=values.len()).map(|i| i as f64).collect();
    let rho = pearson(&order, &value_ranks)?;
    let n = values.len();
    let p_value = if n <= 8 {
        // Every order of the runs is equally likely when nothing drifts.
        let mut permutation = order.clone();
        let (mut extreme, mut total) = (0u64, 0u64);
        heap_permutations(&mut permutation, n, &mut |p| {
            total += 1;
            if pearson(p, &value_ranks).is_some_and(|r| r.abs() >= rho.abs() - 1e-12) {
                extreme += 1;
            }
        });
        extreme as f64 / total as f64
    } else if rho.abs() >= 1.0 {
        0.0
    } else {
        t_two_sided_p(rho * ((n as f64 - 2.0) / (1.0 - rho * rho)).sqrt(), n as f64 - 2.0)
    };
    Some(Drift { rho, p_value })
}

/// Heap's algorithm (Heap 1963): calls `visit` with every order of `items[..k]`.
fn heap_permutations(items: &mut [f64], k: usize, visit: &mut impl FnMut(&[f64])) {
    if k <= 1 {
        visit(items);
        return;
    }
    for i in 0..k - 1 {
        heap_permutations(items, k - 1, visit);
        let j = if k.is_multiple_of(2) { i } else { 0 };
        items.swap(j, k - 1);
    }
    heap_permutations(items, k - 1, visit);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_steady_series_is_clean() {
        let d = diagnose(&[100.0, 102.0, 99.0, 101.0, 100.5]).unwrap();
        assert!(d.cv_pct < 2.0);
        assert!(d.outliers.is_empty() && !d.is_drifting() && !d.is_bimodal() && d.bimodality.is_none());
    }

    #[test]
    fn tukey_fences_name_the_far_run() {
        let d = diagnose(&[100.0, 101.0, 99.0, 100.0, 160.0, 100.5]).unwrap();
        assert_eq!(d.outliers, [4]);
        assert!(diagnose(&[1.0, 100.0, 1000.0]).unwrap().outliers.is_empty(), "too few runs to say");
    }

    #[test]
    fn drift_is_a_trend_with_run_order() {
        // Strictly falling five runs: ρ = −1, exact p = 2/120.
        let d = diagnose(&[105.0, 104.0, 103.0, 102.0, 101.0]).unwrap();
        let drift = d.drift.unwrap();
        assert_eq!(drift.rho, -1.0);
        assert!((drift.p_value - 2.0 / 120.0).abs() < 1e-12);
        assert!(d.is_drifting());
        // One swap at five runs (ρ = 0.9): 10 of 120 orders are as extreme; not called.
        let d = diagnose(&[101.0, 103.0, 102.0, 104.0, 105.0]).unwrap();
        assert!((d.drift.unwrap().rho - 0.9).abs() < 1e-12);
        assert!((d.drift.unwrap().p_value - 10.0 / 120.0).abs() < 1e-12);
        assert!(!d.is_drifting());
        // Twenty runs climbing 1% each with noise: the t approximation calls it.
        let climbing: Vec<f64> = (0..20).map(|i| 100.0 * (1.0 + 0.01 * i as f64) + [0.3, -0.4][i % 2]).collect();
        assert!(diagnose(&climbing).unwrap().drift.unwrap().p_value < 1e-6);
    }

    #[test]
    fn two_groups_are_bimodal_and_one_is_not() {
        // Two equal clusters: the coefficient's population value is 1; with
        // the small-sample corrections at 12 runs, (0 + 1) / (−2.444 + 4.033) = 0.629.
        let jitter = [0.2, -0.1, 0.0, 0.1, -0.2, 0.15];
        let two: Vec<f64> = (0..12).map(|i| if i % 2 == 0 { 100.0 } else { 150.0 } + jitter[i / 2]).collect();
        let d = diagnose(&two).unwrap();
        assert!((d.bimodality.unwrap() - 0.629).abs() < 0.01 && d.is_bimodal(), "{d:?}");
        let one: Vec<f64> =
            [-1.5, -1.0, -0.6, -0.3, -0.1, 0.0, 0.1, 0.3, 0.6, 1.0, 1.5, 0.05].iter().map(|z| 100.0 + z).collect();
        assert!(!diagnose(&one).unwrap().is_bimodal());
        assert!(diagnose(&two[..9]).unwrap().bimodality.is_none(), "too few runs to say");
    }

    #[test]
    fn ties_get_average_ranks() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
        assert!(diagnose(&[5.0, 5.0, 5.0, 5.0]).unwrap().drift.is_none(), "constant runs have no trend");
    }

    proptest! {
        /// Under no drift every order is equally likely, so P(p ≤ α) ≤ α:
        /// the exact p-value of a random order is uniform over its support.
        #[test]
        fn exact_p_values_are_between_0_and_1_and_symmetric(values in prop::collection::vec(0f64..1e6, 4..8)) {
            if let Some(d) = spearman_drift(&values) {
                prop_assert!(d.p_value > 0.0 && d.p_value <= 1.0);
                let reversed: Vec<f64> = values.iter().rev().copied().collect();
                let r = spearman_drift(&reversed).unwrap();
                prop_assert!((r.rho + d.rho).abs() < 1e-9);
                prop_assert!((r.p_value - d.p_value).abs() < 1e-12);
            }
        }

        #[test]
        fn outliers_lie_outside_the_fences(values in prop::collection::vec(-1e3f64..1e3, 4..40)) {
            let d = diagnose(&values).unwrap();
            let sample = Sample::new(&values).unwrap();
            let (q1, q3) = (quantile(sample.values(), 0.25), quantile(sample.values(), 0.75));
            for (i, v) in values.iter().enumerate() {
                let out = *v < q1 - 1.5 * (q3 - q1) || *v > q3 + 1.5 * (q3 - q1);
                prop_assert_eq!(out, d.outliers.contains(&i));
            }
        }
    }
}
