//! Outliers in a series that may hold steps: results far from the level
//! on their own side of any step, which a search should neither take for
//! a level nor let widen the spread it judges a step by.
//!
//! Two detectors, by length:
//!
//! - a short series (fewer than [`SHORT_SERIES`] results) is fitted with
//!   one step and one result left out at a time ([`fitted_outliers`]):
//!   its few successive differences cannot estimate the spread that a
//!   windowed filter needs (8 results give 7, a step and an outlier three
//!   of them), and a fit knows which side of a step each result is on;
//! - a longer one is filtered by its neighbours ([`neighbour_outliers`]),
//!   which holds any number of steps.
//!
//! Values should be logarithms, so that a drop of 10% is one size at any level.

use super::distributions::t_quantile_two_sided;

/// Below this many results a series is fitted, at or above it filtered by neighbours.
pub(crate) const SHORT_SERIES: usize = 16;

/// How far from its neighbours a result is an outlier, in robust standard deviations.
pub(crate) const OUTLIER_SIGMAS: f64 = 4.0;

/// The chance, over a step-free or one-step series of normal results, that
/// a short series has any result called an outlier (Bonferroni over its
/// results): where the fit leaves out a result that is not one, the
/// search loses a result, not its verdict.
pub(crate) const FITTED_ALPHA: f64 = 0.05;

/// Which of `values` (finite) are outliers; a result left out holds its
/// place in a side of at least `min_segment`.
pub(crate) fn series_outliers(values: &[f64], min_segment: usize) -> Vec<bool> {
    match values.len() < SHORT_SERIES {
        true => fitted_outliers(values, min_segment),
        false => neighbour_outliers(values),
    }
}

/// Outliers of a short series: it is fitted with one step (at any split
/// leaving `min` places a side, or none) and each result left out in
/// turn, and the result whose leaving out fits best is left out; this is
/// repeated up to one result in eight (none in fewer than 8), each side
/// keeping two. The first i left out are outliers for the largest i whose
/// externally studentized residual (Cook and Weisberg, "Residuals and
/// Influence in Regression", 1982, §2.2.2) is significant at
/// [`FITTED_ALPHA`] (Bonferroni over the results and the fits chosen
/// among): Rosner's generalized ESD ("Percentage points for a generalized
/// ESD many-outlier procedure", Technometrics 25(2), 1983),
/// whose backward count finds two outliers where the second would hide
/// the first from a test that stops at the first it cannot call. A result
/// beside the step is held to the nearer level. One in eight, not more:
/// leaving out two of 8 found the step 2% more often and called
/// step-free series changed nearly twice as often (docs/STATISTICS.md).
pub(crate) fn fitted_outliers(values: &[f64], min: usize) -> Vec<bool> {
    let (n, min) = (values.len(), min.max(2));
    // Bonferroni over the results, and over the fits chosen among.
    let fits = (n + 1).saturating_sub(2 * min) + 1;
    let confidence = 1.0 - FITTED_ALPHA / (n * fits).max(1) as f64;
    let mut out = vec![false; n];
    let mut left_out = Vec::new();
    let mut called = 0;
    for _ in 0..n / 8 {
        let Some(worst) = worst_fit(values, &out, min) else { break };
        let df = (n - count(&out) - 1).saturating_sub(worst.parameters);
        if df < 1 {
            break;
        }
        let t = match worst.sum_of_squares > 0.0 {
            true => worst.residual / (worst.sum_of_squares / df as f64 * (1.0 + 1.0 / worst.side as f64)).sqrt(),
            false if worst.residual != 0.0 => f64::INFINITY,
            false => 0.0,
        };
        out[worst.index] = true;
        left_out.push(worst.index);
        if t.abs() > t_quantile_two_sided(confidence, df as f64) {
            called = left_out.len();
        }
    }
    let mut out = vec![false; n];
    left_out[..called].iter().for_each(|&i| out[i] = true);
    out
}

/// The best fit with one more result left out.
struct Worst {
    index: usize,
    /// The result less its side's mean without it.
    residual: f64,
    /// Its side's results without it.
    side: usize,
    /// Of the fit without it.
    sum_of_squares: f64,
    /// Levels fitted: 1, or 2 with a step.
    parameters: usize,
}

fn count(out: &[bool]) -> usize {
    out.iter().filter(|o| **o).count()
}

/// Over every split (or none) and every result not yet `out`: the one
/// whose leaving out leaves the smallest sum of squares about the levels.
fn worst_fit(values: &[f64], out: &[bool], min: usize) -> Option<Worst> {
    let n = values.len();
    let mut best: Option<Worst> = None;
    // Splits at `at` (first index on the right); `n` is no step.
    let splits = (min..=n.saturating_sub(min)).chain(std::iter::once(n));
    for at in splits {
        let sides = [0..at, at..n];
        let sums = sides.clone().map(|r| side_sums(values, out, r));
        for j in (0..n).filter(|&j| !out[j]) {
            let s = usize::from(j >= at);
            let (count, sum, squares) = sums[s];
            let (count, sum, squares) = (count - 1, sum - values[j], squares - values[j] * values[j]);
            if count < 2 || (at < n && sums[1 - s].0 < 2) {
                continue;
            }
            let mean = sum / count as f64;
            let other = match at < n {
                true => sums[1 - s],
                false => (0, 0.0, 0.0),
            };
            let sum_of_squares = about_mean((count, sum, squares)) + about_mean(other);
            // A result beside the step, left out, could be on either side
            // of it (the fit is the same): it is as far as the nearer level.
            let (mut residual, mut side) = (values[j] - mean, count);
            let beside = at < n && (j == at || j + 1 == at);
            if beside && (values[j] - other.1 / other.0 as f64).abs() < residual.abs() {
                (residual, side) = (values[j] - other.1 / other.0 as f64, other.0);
            }
            if best.as_ref().is_none_or(|b| sum_of_squares < b.sum_of_squares) {
                let parameters = if at < n { 2 } else { 1 };
                best = Some(Worst { index: j, residual, side, sum_of_squares, parameters });
            }
        }
    }
    best
}

/// Σ(x − m)² of a side from its count, sum and sum of squares (0 for an
/// empty side, never below 0 for rounding's sake).
fn about_mean((count, sum, squares): (usize, f64, f64)) -> f64 {
    match count {
        0 => 0.0,
        _ => (squares - sum * sum / count as f64).max(0.0),
    }
}

/// The count, sum and sum of squares of the results of `range` not `out`.
fn side_sums(values: &[f64], out: &[bool], range: std::ops::Range<usize>) -> (usize, f64, f64) {
    range.filter(|&i| !out[i]).fold((0, 0.0, 0.0), |(c, s, q), i| (c + 1, s + values[i], q + values[i] * values[i]))
}

/// Results far from their neighbours on both sides: more than
/// [`OUTLIER_SIGMAS`] robust standard deviations from the median of the
/// three results before them and from that of the three after (at either
/// end, the side there is, when it holds two or more). A Hampel filter (Pearson, "Outliers in process
/// modeling and identification", IEEE TCST 10(1), 2002) with its window
/// split in two, so that a result beside a step, which is close to the
/// results on its own side, is never taken for an outlier. The deviation is
/// estimated from successive differences (their MAD / √2), which a step
/// moves only once.
pub(crate) fn neighbour_outliers(values: &[f64]) -> Vec<bool> {
    let n = values.len();
    let mut out = vec![false; n];
    if n < 7 {
        return out;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        }
    };
    let mut diffs: Vec<f64> = values.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let sigma = 1.4826 * median(&mut diffs) / std::f64::consts::SQRT_2;
    if sigma <= 0.0 {
        return out;
    }
    let far = |i: usize, side: &[f64]| (values[i] - median(&mut side.to_vec())).abs() > OUTLIER_SIGMAS * sigma;
    for (i, flag) in out.iter_mut().enumerate() {
        let before = &values[i.saturating_sub(3)..i];
        let after = &values[i + 1..(i + 4).min(n)];
        // Far from every side that has a result; at either end, from the
        // side there is, when it has two or more. A result with one
        // neighbour after it is held to that one too: judged on the side
        // before alone, the second result after a step near the end would
        // be taken for an outlier.
        *flag = match (before.len(), after.len()) {
            (0, 0..2) | (0..2, 0) => false,
            (0, _) => far(i, after),
            (_, 0) => far(i, before),
            _ => far(i, before) && far(i, after),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::random::SplitMix64;
    use proptest::prelude::*;

    fn series(rng: &mut SplitMix64, n: usize, at: usize, step: f64) -> Vec<f64> {
        (0..n).map(|i| if i >= at { step.ln() } else { 0.0 } + 0.015 * rng.normal()).collect()
    }

    #[test]
    fn a_disturbed_result_beside_a_step_in_a_short_series_is_found_and_the_new_level_is_not() {
        // 5 before, 3 after a 10% step; the last result fell 20% more
        // (12% more is found in two thirds: the fit's three splits and
        // eight results share FITTED_ALPHA).
        let mut rng = SplitMix64::new(1);
        let mut hits = 0;
        for _ in 0..200 {
            let mut x = series(&mut rng, 8, 5, 0.9);
            x[7] += 0.8f64.ln();
            let out = fitted_outliers(&x, 3);
            hits += usize::from(out == [false, false, false, false, false, false, false, true]);
        }
        assert!(hits >= 180, "{hits} of 200");
    }

    #[test]
    fn a_short_series_of_normal_results_rarely_has_an_outlier() {
        // About FITTED_ALPHA of series, with or without a step (the fit
        // chooses its split too: 7.0% of step-free series of 8, seed 2).
        let mut rng = SplitMix64::new(2);
        for (n, at) in [(8, 5), (8, 8), (12, 6), (15, 15)] {
            let called =
                (0..1000).filter(|_| fitted_outliers(&series(&mut rng, n, at, 0.9), 3).contains(&true)).count();
            assert!(called <= 80, "{n} results, step at {at}: {called} of 1000");
        }
    }

    #[test]
    fn a_long_series_is_filtered_by_neighbours_and_a_short_one_fitted() {
        let mut rng = SplitMix64::new(3);
        let mut x = series(&mut rng, 20, 10, 0.9);
        x[4] -= 0.3;
        assert_eq!(series_outliers(&x, 3), neighbour_outliers(&x));
        assert!(series_outliers(&x, 3)[4]);
        let short = &x[..12];
        assert_eq!(series_outliers(short, 3), fitted_outliers(short, 3));
        assert!(series_outliers(short, 3)[4]);
    }

    proptest! {
        #[test]
        fn every_side_keeps_two_results_and_at_most_one_in_eight_is_left_out(
            values in prop::collection::vec(-1.0f64..1.0, 0..16),
        ) {
            let out = fitted_outliers(&values, 3);
            prop_assert_eq!(out.len(), values.len());
            prop_assert!(count(&out) <= values.len() / 8);
            prop_assert!(values.len() - count(&out) >= 2 || count(&out) == 0);
        }
    }
}
