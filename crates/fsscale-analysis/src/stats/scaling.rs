//! Scaling figures of one series (throughput against worker count): speedup,
//! efficiency, per-worker rate, effective concurrency, collapse, and the USL
//! regime in words.

use serde::{Deserialize, Serialize};

use super::usl::UslFit;

/// One worker count of a series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    pub workers: usize,
    /// Throughput (median over runs), ops/s.
    pub throughput: f64,
    pub per_worker: f64,
    /// S(N) = X(N) / X(1); `None` without a 1-worker point.
    pub speedup: Option<f64>,
    /// S(N) / N.
    pub efficiency: Option<f64>,
}

/// Speedup and efficiency against the 1-worker point, sorted by worker count.
pub(crate) fn scaling_points(series: &[(usize, f64)]) -> Vec<ScalingPoint> {
    let mut sorted = series.to_vec();
    sorted.sort_by_key(|p| p.0);
    let single = sorted.iter().find(|p| p.0 == 1).map(|p| p.1).filter(|&x| x > 0.0);
    sorted
        .iter()
        .map(|&(workers, throughput)| {
            let speedup = single.map(|x1| throughput / x1);
            ScalingPoint {
                workers,
                throughput,
                per_worker: throughput / workers as f64,
                speedup,
                efficiency: speedup.map(|s| s / workers as f64),
            }
        })
        .collect()
}

/// Where the series stops scaling, from its fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Regime {
    /// σ below 2% and no peak in reach: keeps scaling.
    NearLinear,
    /// Serialization (σ) limits the speedup; throughput still rises or levels off.
    ContentionBound,
    /// Coherency cost (κ) makes throughput fall beyond a peak inside the measured range.
    CoherencyBound,
}

impl Regime {
    pub fn words(self) -> &'static str {
        match self {
            Regime::NearLinear => "near-linear",
            Regime::ContentionBound => "contention-bound",
            Regime::CoherencyBound => "coherency-bound (retrograde)",
        }
    }
}

/// σ below this (2% serialized) counts as near-linear.
const NEAR_LINEAR_SIGMA: f64 = 0.02;

/// A fit explains the data well enough to name a regime only with R² at
/// least this: below it the curve's shape is mostly noise or a shape the
/// law does not have.
pub(crate) const MIN_R_SQUARED: f64 = 0.9;

/// A parameter that names the regime (κ for coherency-bound, σ for
/// contention-bound) must exceed this many standard errors: about the
/// two-sided 95% level of a normal estimate (a Wald test).
pub(crate) const MIN_T: f64 = 2.0;

/// Why a fit supports no regime verdict.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NoVerdict {
    #[error("R² = {r_squared:.2} (below {MIN_R_SQUARED:.2})")]
    PoorFit { r_squared: f64 },
    /// The parameter that names the regime is within `MIN_T` standard errors of 0.
    #[error("{name} = {value:.3e} ± {se:.1e} is not distinguishable from 0")]
    Indistinct { name: &'static str, value: f64, se: f64 },
    #[error("{name} has no standard error (too few runs for the fit)")]
    NoStandardError { name: &'static str },
}

/// Classifies a fit over a series whose largest worker count is
/// `max_workers`, or says why the fit cannot support a verdict: a poor R²,
/// or the deciding parameter not distinguishable from zero.
pub fn regime(fit: &UslFit, max_workers: f64) -> Result<Regime, NoVerdict> {
    if fit.r_squared < MIN_R_SQUARED {
        return Err(NoVerdict::PoorFit { r_squared: fit.r_squared });
    }
    let significant = |name: &'static str, value: f64, se: Option<f64>| match se {
        Some(se) if value > MIN_T * se => Ok(()),
        Some(se) => Err(NoVerdict::Indistinct { name, value, se }),
        None => Err(NoVerdict::NoStandardError { name }),
    };
    let regime = match fit.peak_workers {
        Some(peak) if peak <= max_workers => Regime::CoherencyBound,
        _ if fit.sigma >= NEAR_LINEAR_SIGMA => Regime::ContentionBound,
        // Far-away peak but a noticeable κ still bends the curve inside the range.
        Some(peak) if peak <= 4.0 * max_workers => Regime::ContentionBound,
        _ => Regime::NearLinear,
    };
    match regime {
        Regime::CoherencyBound => significant("κ", fit.kappa, fit.kappa_se)?,
        Regime::ContentionBound if fit.sigma >= NEAR_LINEAR_SIGMA => significant("σ", fit.sigma, fit.sigma_se)?,
        Regime::ContentionBound => significant("κ", fit.kappa, fit.kappa_se)?,
        Regime::NearLinear => {}
    }
    Ok(regime)
}

/// Where a series peaks and where it ends, from the data alone (no fit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservedPeak {
    pub peak_workers: usize,
    pub peak_throughput: f64,
    pub last_workers: usize,
    pub last_throughput: f64,
}

impl ObservedPeak {
    /// The largest worker count's throughput as a fraction of the peak's.
    pub(crate) fn last_of_peak(&self) -> f64 {
        self.last_throughput / self.peak_throughput
    }

    /// Whether the series falls after its peak: the largest worker count
    /// does at least [`FALL`] less than the peak.
    pub fn falls(&self) -> bool {
        self.last_workers != self.peak_workers && self.last_of_peak() < 1.0 - FALL
    }
}

/// A fall smaller than this (10%) is within what run-to-run noise and a
/// plateau show, and is not reported.
pub(crate) const FALL: f64 = 0.10;

pub(crate) fn observed_peak(points: &[ScalingPoint]) -> Option<ObservedPeak> {
    let peak = points.iter().max_by(|a, b| a.throughput.total_cmp(&b.throughput))?;
    let last = points.iter().max_by_key(|p| p.workers)?;
    Some(ObservedPeak {
        peak_workers: peak.workers,
        peak_throughput: peak.throughput,
        last_workers: last.workers,
        last_throughput: last.throughput,
    })
}

/// A collapse: the throughput at the largest worker count is below half the peak.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collapse {
    pub peak_workers: usize,
    pub peak_throughput: f64,
    pub last_workers: usize,
    pub last_throughput: f64,
    /// The larger relative standard deviation of the runs at the peak and
    /// at the end, when it exceeds [`NOISY_COLLAPSE_SD`]: a halving within
    /// two standard deviations of the runs' noise is not a collapse shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noisy_sd: Option<f64>,
}

/// Above this relative standard deviation of the runs (25%), a point's
/// median may lie half off its true value by two standard deviations, so a
/// fall to below half the peak is too noisy to call.
pub(crate) const NOISY_COLLAPSE_SD: f64 = 0.25;

impl Collapse {
    /// Marks the collapse noisy when the runs at its two ends spread more
    /// than [`NOISY_COLLAPSE_SD`]; `sd_at(workers)` is a point's relative sd.
    pub(crate) fn judged_by(mut self, sd_at: impl Fn(usize) -> Option<f64>) -> Collapse {
        let worst = [self.peak_workers, self.last_workers].into_iter().filter_map(sd_at).fold(0.0f64, f64::max);
        self.noisy_sd = (worst > NOISY_COLLAPSE_SD).then_some(worst);
        self
    }
}

pub fn collapse(points: &[ScalingPoint]) -> Option<Collapse> {
    let peak = points.iter().max_by(|a, b| a.throughput.total_cmp(&b.throughput))?;
    let last = points.iter().max_by_key(|p| p.workers)?;
    (last.throughput < 0.5 * peak.throughput).then_some(Collapse {
        peak_workers: peak.workers,
        peak_throughput: peak.throughput,
        last_workers: last.workers,
        last_throughput: last.throughput,
        noisy_sd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::usl::{fit, predict};

    #[test]
    fn speedup_and_efficiency() {
        let points = scaling_points(&[(4, 300.0), (1, 100.0), (2, 190.0)]);
        assert_eq!(points.iter().map(|p| p.workers).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(points[1].speedup, Some(1.9));
        assert_eq!(points[2].efficiency, Some(0.75));
        assert_eq!(points[2].per_worker, 75.0);
        assert_eq!(scaling_points(&[(2, 10.0)])[0].speedup, None);
    }

    #[test]
    fn detects_collapse() {
        let points = scaling_points(&[(1, 100.0), (2, 180.0), (4, 120.0), (8, 60.0)]);
        let c = collapse(&points).unwrap();
        assert_eq!((c.peak_workers, c.last_workers), (2, 8));
        assert_eq!(collapse(&scaling_points(&[(1, 100.0), (2, 180.0), (4, 120.0)])), None);
    }

    #[test]
    fn names_the_regime() {
        let series = |sigma, kappa| -> Vec<(f64, f64)> {
            [1.0, 2.0, 4.0, 8.0, 16.0].iter().map(|&n| (n, predict(100.0, sigma, kappa, n))).collect()
        };
        assert_eq!(regime(&fit(&series(0.001, 0.0)).unwrap(), 16.0), Ok(Regime::NearLinear));
        assert_eq!(regime(&fit(&series(0.2, 0.0)).unwrap(), 16.0), Ok(Regime::ContentionBound));
        assert_eq!(regime(&fit(&series(0.05, 0.02)).unwrap(), 16.0), Ok(Regime::CoherencyBound));
    }
}
