//! Steps held to a false discovery rate across the series one query
//! searches.
//!
//! Each series is a family of hypotheses (a step at each of its splits, in
//! each of its figures), with one p-value for "no step anywhere in it": its
//! most different split's. The families are selected by Benjamini and
//! Hochberg's step-up rule at level q over those p-values ("Controlling
//! the false discovery rate", JRSS B 57(1), 1995), as compare selects
//! points; within each of the R selected out of m, steps are then tested
//! at q·R/m, which holds the expected share of false steps among those
//! reported at q on average over the selected series (Benjamini and
//! Bogomolov, "Selective inference on multiple families of hypotheses",
//! JRSS B 76(1), 2014). A query of one series is a search at q.

/// For each family p-value (`None`: a series too short to hold a step),
/// the level its steps are tested at when it is selected, `None` when not.
pub(crate) fn selected_levels(family: &[Option<f64>], q: f64) -> Vec<Option<f64>> {
    let mut ps: Vec<f64> = family.iter().flatten().copied().collect();
    let m = ps.len();
    ps.sort_by(f64::total_cmp);
    // Step-up: the largest k with p(k) ≤ q·k/m; the k smallest are selected.
    let selected = (1..=m).rev().find(|&k| ps[k - 1] <= q * k as f64 / m as f64).unwrap_or(0);
    if selected == 0 {
        return vec![None; family.len()];
    }
    let cut = ps[selected - 1];
    let level = q * selected as f64 / m as f64;
    family.iter().map(|p| p.filter(|&p| p <= cut).map(|_| level)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_up_rule_selects_by_rank_and_levels_shrink_with_the_share_selected() {
        // m = 4 searched, q = 0.05: thresholds 0.0125, 0.025, 0.0375, 0.05.
        let family = [Some(0.03), Some(0.001), None, Some(0.2), Some(0.02)];
        // 0.001 ≤ 0.0125, 0.02 ≤ 0.025, 0.03 ≤ 0.0375: three selected, at 0.05·3/4.
        let level = Some(0.05 * 3.0 / 4.0);
        assert_eq!(selected_levels(&family, 0.05), [level, level, None, None, level]);
        // A p-value above its own threshold is selected when a larger rank passes (step-up).
        let family = [Some(0.03), Some(0.04)];
        assert_eq!(selected_levels(&family, 0.05), [Some(0.05), Some(0.05)]);
        assert_eq!(selected_levels(&[Some(0.2), Some(0.5)], 0.05), [None, None]);
        assert_eq!(selected_levels(&[None, None], 0.05), [None, None]);
        // One series: its own test at q.
        assert_eq!(selected_levels(&[Some(0.01)], 0.01), [Some(0.01)]);
    }
}
