//! Change points in a series of results: where its level stepped.
//!
//! E-Divisive means (Matteson and James, "A nonparametric approach for
//! multiple change point analysis of multivariate data", JASA 109(505),
//! 2014), with each candidate tested by permutation, as MongoDB's CI
//! (Daly et al., "The use of change point detection to identify software
//! performance regressions in a continuous integration system", ICPE 2020)
//! and Apache Otava do:
//!
//! - the divergence of a split of a segment into X (m values) and Y (k) is
//!   the energy statistic with exponent 1,
//!   Ê = 2/(mk) Σ|xᵢ−yⱼ| − C(m,2)⁻¹ Σ|xᵢ−xⱼ| − C(k,2)⁻¹ Σ|yᵢ−yⱼ|,
//!   weighted q̂ = mk/(m+k) · Ê; a segment's candidate is its split of
//!   largest q̂ (every split computed in O(n²) from running sums);
//! - the best candidate over the current segments is significant when
//!   permuting the values within each segment gives a q̂ as large in at most
//!   a share `significance` of the permutations ((count + 1)/(R + 1));
//! - a significant candidate splits its segment and the search repeats, so
//!   several steps are found, largest first, until one is not significant.
//!
//! Nothing is assumed of the noise's distribution: an outlier moves the
//! energy statistic by its rank-like distance only, and a step near either
//! end needs `min_segment` results on its short side.
//!
//! The values should be on a scale where a step is a difference: the
//! history passes logarithms of rates, so a 5% step is the same step at
//! any level.

use super::random::SplitMix64;

/// How change points are searched and tested.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePointConfig {
    /// A candidate is a change point when its permutation p-value is at most this.
    pub significance: f64,
    /// Permutations per candidate (R): p-values are multiples of 1/(R + 1).
    pub permutations: usize,
    /// The fewest results on either side of a change point.
    pub min_segment: usize,
    /// The permutations' seed: the same series gives the same answer.
    pub seed: u64,
}

impl ChangePointConfig {
    /// α = 0.01 with 199 permutations: a step-free series is called changed
    /// about once in a hundred; a change needs at most one permutation in
    /// a hundred as divergent.
    pub const DEFAULT: ChangePointConfig =
        ChangePointConfig { significance: 0.01, permutations: 199, min_segment: 3, seed: 0x5eed_c4a9 };
}

/// A step: the values from `index` on are at another level than those before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    /// The first value after the step.
    pub index: usize,
    /// The weighted divergence q̂ of the split that found it.
    pub divergence: f64,
    /// Its permutation p-value.
    pub p_value: f64,
}

/// The change points of `values` (finite), by index.
pub fn e_divisive(values: &[f64], config: &ChangePointConfig) -> Vec<ChangePoint> {
    e_divisive_search(values, config).0
}

/// [`e_divisive`], and the p-value of the first candidate, significant or
/// not (`None` when there is none: too few values). Above `significance`
/// it is only an upper bound's worth: the permutations stop once it cannot
/// be significant.
pub fn e_divisive_search(values: &[f64], config: &ChangePointConfig) -> (Vec<ChangePoint>, Option<f64>) {
    let n = values.len();
    let min = config.min_segment.max(2);
    if n < 2 * min || values.iter().any(|v| !v.is_finite()) {
        return (Vec::new(), None);
    }
    let mut first_p = None;
    let mut rng = SplitMix64::new(config.seed);
    // Segment boundaries, sorted: segments are [bounds[i], bounds[i+1]).
    let mut bounds = vec![0, n];
    let mut found = Vec::new();
    let mut scratch = values.to_vec();
    loop {
        // The best candidate over the current segments.
        let best = segments(&bounds)
            .filter_map(|(s, e)| best_split(&values[s..e], min).map(|(at, q)| (s + at, q)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((index, divergence)) = best else { break };
        if divergence <= 0.0 {
            first_p.get_or_insert(1.0);
            break;
        }
        // How often values shuffled within their segments diverge as much;
        // stopping as soon as the candidate can no longer be significant.
        let allowed = (config.significance * (config.permutations + 1) as f64).floor() as usize;
        let mut as_large = 0;
        let mut done = 0;
        while done < config.permutations && as_large < allowed {
            scratch.copy_from_slice(values);
            let mut largest = f64::NEG_INFINITY;
            for (s, e) in segments(&bounds) {
                shuffle(&mut scratch[s..e], &mut rng);
                if let Some((_, q)) = best_split(&scratch[s..e], min) {
                    largest = largest.max(q);
                }
            }
            as_large += usize::from(largest >= divergence);
            done += 1;
        }
        let p_value = (as_large + 1) as f64 / (done + 1) as f64;
        first_p.get_or_insert(if as_large >= allowed { p_value.max(config.significance.next_up()) } else { p_value });
        if as_large >= allowed || p_value > config.significance {
            break;
        }
        found.push(ChangePoint { index, divergence, p_value });
        let at = bounds.partition_point(|&b| b < index);
        bounds.insert(at, index);
    }
    found.sort_by_key(|c| c.index);
    (found, first_p)
}

fn segments(bounds: &[usize]) -> impl Iterator<Item = (usize, usize)> + '_ {
    bounds.windows(2).map(|w| (w[0], w[1]))
}

/// Fisher–Yates.
fn shuffle(values: &mut [f64], rng: &mut SplitMix64) {
    for i in (1..values.len()).rev() {
        values.swap(i, rng.below(i + 1));
    }
}

/// The split of `x` with the largest weighted divergence q̂ that leaves at
/// least `min` values on each side: (first index of the right side, q̂).
fn best_split(x: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = x.len();
    if n < 2 * min {
        return None;
    }
    let d = |i: usize, j: usize| (x[i] - x[j]).abs();
    // Left = x[..tau], right = x[tau..]; start with the left empty.
    let mut within_left = 0.0;
    let mut within_right: f64 = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).map(|(i, j)| d(i, j)).sum();
    let mut between = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n {
        // Move x[tau - 1] from the right to the left.
        let moved = tau - 1;
        let to_left: f64 = (0..moved).map(|i| d(i, moved)).sum();
        let to_right: f64 = (tau..n).map(|j| d(moved, j)).sum();
        within_left += to_left;
        within_right -= to_right;
        between += to_right - to_left;
        let (m, k) = (tau as f64, (n - tau) as f64);
        if tau < min || n - tau < min {
            continue;
        }
        let pairs = |c: f64| c * (c - 1.0) / 2.0;
        let energy = 2.0 * between / (m * k) - within_left / pairs(m) - within_right / pairs(k);
        let q = m * k / (m + k) * energy;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// q̂ of one split, straight from the definition.
    fn divergence(x: &[f64], tau: usize) -> f64 {
        let (l, r) = x.split_at(tau);
        let (m, k) = (l.len() as f64, r.len() as f64);
        let between: f64 = l.iter().flat_map(|a| r.iter().map(move |b| (a - b).abs())).sum();
        let within = |s: &[f64]| -> f64 {
            let sum: f64 = (0..s.len())
                .flat_map(|i| (i + 1..s.len()).map(move |j| (i, j)))
                .map(|(i, j)| (s[i] - s[j]).abs())
                .sum();
            sum / (s.len() as f64 * (s.len() as f64 - 1.0) / 2.0)
        };
        m * k / (m + k) * (2.0 * between / (m * k) - within(l) - within(r))
    }

    #[test]
    fn the_running_sums_give_the_definitions_divergence() {
        let x = [1.0, 3.0, 2.0, 7.0, 8.0, 6.5, 9.0, 1.5];
        let (tau, q) = best_split(&x, 2).unwrap();
        let direct = (2..=6).map(|t| (t, divergence(&x, t))).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        assert_eq!(tau, direct.0);
        assert!((q - direct.1).abs() < 1e-9, "{q} {}", direct.1);
        // By hand at tau = 3 (left 1, 3, 2; right 7, 8, 6.5, 9, 1.5): between
        // 70, within the left 4 over 3 pairs, within the right 33 over 10.
        assert!((divergence(&x, 3) - 15.0 / 8.0 * (2.0 * 70.0 / 15.0 - 4.0 / 3.0 - 33.0 / 10.0)).abs() < 1e-9);
    }

    #[test]
    fn finds_one_step_and_two_steps_where_they_are() {
        let mut rng = SplitMix64::new(7);
        let noisy = |level: f64, rng: &mut SplitMix64| level + 0.01 * rng.normal();
        let one: Vec<f64> = (0..30).map(|i| noisy(if i < 17 { 0.0 } else { -0.05 }, &mut rng)).collect();
        let found = e_divisive(&one, &ChangePointConfig::DEFAULT);
        assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [17], "{found:?}");
        assert!(found[0].p_value <= 0.01);
        let two: Vec<f64> = (0..45).map(|i| noisy([0.0, 0.08, 0.03][i / 15], &mut rng)).collect();
        let found: Vec<usize> = e_divisive(&two, &ChangePointConfig::DEFAULT).iter().map(|c| c.index).collect();
        assert_eq!(found, [15, 30]);
    }

    #[test]
    fn a_flat_series_a_short_one_and_one_outlier_have_no_change() {
        assert!(e_divisive(&[1.0; 40], &ChangePointConfig::DEFAULT).is_empty());
        assert!(e_divisive(&[1.0, 2.0, 1.0, 2.0, 9.0], &ChangePointConfig::DEFAULT).is_empty());
        let mut rng = SplitMix64::new(3);
        let mut x: Vec<f64> = (0..30).map(|_| 0.01 * rng.normal()).collect();
        x[12] = -0.3;
        assert!(e_divisive(&x, &ChangePointConfig::DEFAULT).is_empty());
        assert!(e_divisive(&[0.0, f64::NAN, 1.0, 1.0, 1.0, 1.0, 1.0], &ChangePointConfig::DEFAULT).is_empty());
    }

    proptest! {
        #[test]
        fn found_points_leave_min_segments_and_ignore_the_scale(
            x in proptest::collection::vec(-1.0f64..1.0, 0..40),
            power in -6i32..6,
        ) {
            let config = ChangePointConfig { permutations: 49, significance: 0.05, ..ChangePointConfig::DEFAULT };
            let found = e_divisive(&x, &config);
            let mut last = 0;
            for c in &found {
                prop_assert!(c.index >= last + config.min_segment && x.len() - c.index >= config.min_segment);
                prop_assert!(c.p_value <= config.significance);
                last = c.index;
            }
            // Divergences scale, splits and permutations do not: the same
            // points (a power of two scales every sum exactly).
            let moved: Vec<f64> = x.iter().map(|v| v * 2f64.powi(power)).collect();
            let again: Vec<usize> = e_divisive(&moved, &config).iter().map(|c| c.index).collect();
            prop_assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), again);
        }
    }
}
