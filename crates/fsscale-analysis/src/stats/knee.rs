//! The knee of a latency–throughput curve: the highest rate before the
//! response time turns sharply upward.
//!
//! Kneedle (Satopää, Albrecht, Irwin and Raghavan, "Finding a 'Kneedle'
//! in a Haystack: Detecting Knee Points in System Behavior", ICDCS
//! workshops 2011): both axes are scaled to [0, 1]; for a curve that rises
//! ever faster (convex, increasing: latency against load), the knee is
//! the point farthest below the diagonal, where `x - y` is largest. The
//! paper's online threshold and smoothing are for long, noisy curves; a
//! sweep has a handful of rates, each a point of repeated runs, and the
//! knee is one of them.

/// The index of the knee of the curve through `(x, y)`, sorted by `x`,
/// among the points `eligible` allows (all are scaled): `None` with fewer
/// than three points, `x` or `y` not finite, not increasing in `x`, or a
/// curve that never bends upward (no eligible point lies below the line
/// from the first point to the last).
pub fn kneedle(points: &[(f64, f64)], eligible: impl Fn(usize) -> bool) -> Option<usize> {
    if points.len() < 3 || points.iter().any(|(x, y)| !(x.is_finite() && y.is_finite())) {
        return None;
    }
    if points.windows(2).any(|w| w[1].0 <= w[0].0) {
        return None;
    }
    let (x0, x1) = (points[0].0, points[points.len() - 1].0);
    let (y_min, y_max) =
        points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    if y_max <= y_min {
        return None;
    }
    let scaled = |(x, y): (f64, f64)| ((x - x0) / (x1 - x0), (y - y_min) / (y_max - y_min));
    // The difference curve, as the paper's for a convex increasing curve.
    let differences = points.iter().map(|&p| scaled(p)).map(|(x, y)| x - y).enumerate();
    let (index, largest) =
        differences.filter(|(i, _)| eligible(*i)).fold(
            (0, f64::NEG_INFINITY),
            |best, (i, d)| {
                if d > best.1 {
                    (i, d)
                } else {
                    best
                }
            },
        );
    (largest > 1e-9).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_open_loops_hockey_stick_bends_at_its_last_flat_rate() {
        // Response p99 (us) at 50k..300k ops/s: flat, then queueing past 250k.
        let curve = [(50e3, 12.0), (100e3, 13.0), (150e3, 15.0), (200e3, 19.0), (250e3, 40.0), (300e3, 2400.0)];
        assert_eq!(kneedle(&curve, |_| true), Some(4));
        // Its last flat rate fell behind: the one before it is the highest that kept up.
        assert_eq!(kneedle(&curve, |i| i != 4), Some(3));
        // A gentler bend: M/M/1's 1/(1-u) at u = 0.1..0.9.
        let mm1: Vec<(f64, f64)> = (1..=9).map(|k| (k as f64 / 10.0, 1.0 / (1.0 - k as f64 / 10.0))).collect();
        assert_eq!(kneedle(&mm1, |_| true), Some(6), "u = 0.7 is where 1/(1-u) leaves the diagonal furthest");
    }

    #[test]
    fn curves_without_a_knee_have_none() {
        assert_eq!(kneedle(&[(1.0, 1.0), (2.0, 2.0)], |_| true), None, "two points");
        assert_eq!(kneedle(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)], |_| true), None, "a straight line");
        assert_eq!(kneedle(&[(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)], |_| true), None, "flat");
        assert_eq!(kneedle(&[(1.0, 1.0), (2.0, 4.0), (3.0, 5.0)], |_| true), None, "concave: it bends down");
        assert_eq!(kneedle(&[(1.0, 1.0), (1.0, 4.0), (3.0, 5.0)], |_| true), None, "x repeats");
        assert_eq!(kneedle(&[(1.0, 1.0), (2.0, f64::NAN), (3.0, 5.0)], |_| true), None);
    }

    proptest! {
        /// The knee is a point of the curve, never its first or last, and
        /// scaling either axis does not move it.
        #[test]
        fn the_knee_is_inside_and_does_not_depend_on_units(
            ys in proptest::collection::vec(0.0f64..1e6, 3..20),
            x_power in -10i32..20,
            y_power in -10i32..20,
        ) {
            // Powers of two scale exactly, so ties stay ties.
            let (x_scale, y_scale) = (2f64.powi(x_power), 2f64.powi(y_power));
            let mut ys = ys;
            ys.sort_by(f64::total_cmp);
            let curve: Vec<(f64, f64)> = ys.iter().enumerate().map(|(i, y)| (i as f64 + 1.0, *y)).collect();
            let scaled: Vec<(f64, f64)> = curve.iter().map(|(x, y)| (x * x_scale, y * y_scale)).collect();
            let knee = kneedle(&curve, |_| true);
            if let Some(k) = knee {
                prop_assert!(k > 0 && k < curve.len() - 1);
            }
            prop_assert_eq!(knee, kneedle(&scaled, |_| true));
        }
    }
}
