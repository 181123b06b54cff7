//! When a warming rate is steady: the rule a warm-up run applies to its own
//! windows before the point's measured runs begin.
//!
//! The rule is the window-based steady-state test of Georges, Buytaert and
//! Eeckhout ("Statistically rigorous Java performance evaluation",
//! OOPSLA 2007, §4.2), which waits until the last k measurements agree. They
//! ask the coefficient of variation of the last k iterations to fall below a
//! threshold; here the windows are short (100 ms) and their own jitter on a
//! shared machine is a few percent whatever the trend, so the test compares
//! the means of two successive blocks of windows instead: white noise
//! averages out of a block's mean, a ramp does not. It cannot see a ramp
//! that has not started yet (a rate that sits flat and then jumps), which no
//! rule can; a run's drift diagnostic covers what it misses.

use serde::{Deserialize, Serialize};

/// Steady when the mean rate of the last `block` windows is within
/// `tolerance` of the mean of the `block` windows before them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyRule {
    /// Length of one window, seconds.
    pub window_s: f64,
    /// Windows in a block.
    pub block: usize,
    /// Largest relative change between the two blocks' means (0.02 = 2%).
    pub tolerance: f64,
}

impl SteadyRule {
    /// The default: blocks of five 100 ms windows agreeing within 2%. Half a
    /// second per block keeps a steady point's warm-up at one second, and a
    /// block mean's jitter on this project's reference VM (about 0.7% for a
    /// window jitter of 1.5%) well inside the tolerance.
    pub const DEFAULT: SteadyRule = SteadyRule { window_s: 0.1, block: 5, tolerance: 0.02 };

    /// The relative change between the last two blocks' mean rates, once
    /// there are two blocks of `rates` (ops/s, one per window, oldest first);
    /// `None` before that.
    pub fn change(&self, rates: &[f64]) -> Option<f64> {
        let block = self.block.max(1);
        if rates.len() < 2 * block {
            return None;
        }
        let mean = |w: &[f64]| w.iter().sum::<f64>() / w.len() as f64;
        let last = mean(&rates[rates.len() - block..]);
        let before = mean(&rates[rates.len() - 2 * block..rates.len() - block]);
        match before > 0.0 {
            true => Some(last / before - 1.0),
            // Nothing before and nothing now is steady; something from nothing is not.
            false => Some(if last > 0.0 { f64::INFINITY } else { 0.0 }),
        }
    }

    /// Whether `rates` end in a steady state.
    pub fn is_steady(&self, rates: &[f64]) -> bool {
        self.change(rates).is_some_and(|c| c.abs() <= self.tolerance)
    }

    /// The least time the rule needs: two blocks of windows.
    pub fn least_s(&self) -> f64 {
        2.0 * self.block.max(1) as f64 * self.window_s
    }
}

/// A warm-up run of a fixed-time loop lasts until its rate is steady by
/// `rule`: at least `--duration`, at most `max_s` seconds (`--warmup-max`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyWarmup {
    pub rule: SteadyRule,
    pub max_s: f64,
}

impl SteadyWarmup {
    /// `--warmup-max`: the default rule, at most `max`; none for zero.
    pub fn at_most(max: std::time::Duration) -> Option<SteadyWarmup> {
        (!max.is_zero()).then_some(SteadyWarmup { rule: SteadyRule::DEFAULT, max_s: max.as_secs_f64() })
    }
}

/// Rates (ops/s) of the windows between successive samples of a cumulative
/// count: `at_s` seconds since the start, `ops` counted by then.
pub fn window_rates(at_s: &[f64], ops: &[u64]) -> Vec<f64> {
    let mut rates = Vec::with_capacity(at_s.len());
    let (mut t0, mut n0) = (0.0, 0u64);
    for (&t, &n) in at_s.iter().zip(ops) {
        if t > t0 {
            rates.push(n.saturating_sub(n0) as f64 / (t - t0));
        }
        (t0, n0) = (t, n);
    }
    rates
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RULE: SteadyRule = SteadyRule::DEFAULT;

    #[test]
    fn needs_two_whole_blocks() {
        assert_eq!(RULE.change(&[100.0; 9]), None);
        assert_eq!(RULE.change(&[100.0; 10]), Some(0.0));
        assert!(!RULE.is_steady(&[100.0; 9]));
        assert!((RULE.least_s() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_ramp_is_not_steady_until_it_flattens() {
        // 600k rising 40k per window to 800k, then flat.
        let mut rates: Vec<f64> = (0..6).map(|i| 600e3 + 40e3 * i as f64).collect();
        rates.extend([800e3; 10]);
        let first_steady = (1..=rates.len()).find(|&n| RULE.is_steady(&rates[..n])).unwrap();
        // The blocks agree within 2% once the older one has nearly left the
        // ramp: 800k against windows 3..8 (mean 776k) is 3.1%, against 4..9 (792k) 1.0%.
        assert_eq!(first_steady, 14);
        assert!(RULE.change(&rates[..10]).unwrap() > 0.02);
    }

    #[test]
    fn jitter_within_blocks_averages_out() {
        // ±3% window jitter, no trend: each block's mean is the same.
        let rates = [97.0, 103.0, 100.0, 103.0, 97.0, 103.0, 97.0, 100.0, 97.0, 103.0];
        assert_eq!(RULE.change(&rates), Some(0.0));
    }

    #[test]
    fn a_drop_counts_like_a_rise() {
        let mut rates = vec![100.0; 5];
        rates.extend([95.0; 5]);
        let change = RULE.change(&rates).unwrap();
        assert!((change + 0.05).abs() < 1e-12, "{change}");
        assert!(!RULE.is_steady(&rates));
    }

    #[test]
    fn nothing_then_something_is_not_steady() {
        let mut rates = vec![0.0; 5];
        assert!(RULE.is_steady(&[0.0; 10]));
        rates.extend([5.0; 5]);
        assert!(!RULE.is_steady(&rates));
    }

    #[test]
    fn window_rates_divide_each_step_by_its_length() {
        let rates = window_rates(&[0.1, 0.2, 0.4], &[10, 30, 30]);
        assert_eq!(rates.len(), 3);
        assert!((rates[0] - 100.0).abs() < 1e-9 && (rates[1] - 200.0).abs() < 1e-9 && rates[2] == 0.0);
        // A repeated instant adds no window.
        assert_eq!(window_rates(&[0.1, 0.1], &[10, 10]).len(), 1);
    }

    proptest! {
        #[test]
        fn a_constant_rate_scaled_by_anything_is_steady(rate in 1.0f64..1e9, n in 10usize..40) {
            prop_assert!(RULE.is_steady(&vec![rate; n]));
        }

        #[test]
        fn a_step_beyond_the_tolerance_is_never_steady_across_it(
            rate in 1.0f64..1e9, step in 0.021f64..1.0, up in any::<bool>(),
        ) {
            let after = if up { rate * (1.0 + step) } else { rate / (1.0 + step) };
            let mut rates = vec![rate; 5];
            rates.extend(vec![after; 5]);
            prop_assert!(!RULE.is_steady(&rates));
        }
    }
}
