//! The Universal Scalability Law (Gunther, *Guerrilla Capacity Planning*,
//! Springer 2007, ch. 4–5):
//!
//! X(N) = λN / (1 + σ(N − 1) + κN(N − 1))
//!
//! λ is the throughput of one worker, σ the contention (serialized fraction),
//! κ the coherency cost (pairwise crosstalk). κ > 0 makes throughput peak at
//! N* = √((1 − σ)/κ) and fall after it; with κ = 0 the law is Amdahl's with
//! serial fraction σ.
//!
//! The fit minimizes the squared throughput residuals with σ, κ ≥ 0
//! (nonlinear least squares, as the R package `usl` does), by a projected
//! Levenberg–Marquardt iteration (Marquardt 1963) started from Gunther's
//! linearization N·λ/X − 1 = σ(N − 1) + κN(N − 1). Standard errors come from
//! the Jacobian at the optimum: cov = s²(JᵀJ)⁻¹ with s² = RSS/(n − p).

use serde::{Deserialize, Serialize};

/// Fewer distinct worker counts than this leave the three parameters undetermined.
pub(crate) const MIN_DISTINCT_N: usize = 4;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    /// Standard errors; `None` where undetermined (a parameter at its bound of
    /// 0, or no residual degrees of freedom).
    pub lambda_se: Option<f64>,
    pub sigma_se: Option<f64>,
    pub kappa_se: Option<f64>,
    /// N* = √((1 − σ)/κ), when κ > 0.
    pub peak_workers: Option<f64>,
    /// Standard error of N*, by the delta method over the covariance of σ
    /// and κ (Casella & Berger, *Statistical Inference*, 5.5.4).
    #[serde(default)]
    pub peak_workers_se: Option<f64>,
    /// Residual degrees of freedom (observations less free parameters), for t quantiles.
    #[serde(default)]
    pub residual_df: usize,
    /// X(N*), when κ > 0.
    pub peak_throughput: Option<f64>,
    /// With κ = 0 the law is Amdahl's: the serial fraction (= σ) and the limit 1/σ of the speedup.
    pub amdahl_serial_fraction: Option<f64>,
    pub r_squared: f64,
    pub points: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum UslError {
    TooFewDistinct { got: Vec<f64> },
    BadPoint { n: f64, x: f64 },
}

impl std::fmt::Display for UslError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UslError::TooFewDistinct { got } => {
                let list: Vec<String> = got.iter().map(|n| format!("{n}")).collect();
                write!(
                    f,
                    "needs at least {MIN_DISTINCT_N} distinct worker counts to fit λ, σ and κ, got {} ({})",
                    got.len(),
                    list.join(", ")
                )
            }
            UslError::BadPoint { n, x } => {
                write!(f, "point N = {n}, X = {x}: N must be ≥ 1 and X a positive finite throughput")
            }
        }
    }
}

impl std::error::Error for UslError {}

/// Throughput predicted by the law.
pub(crate) fn predict(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the law to (N, X) points (repeated N are fine: each run counts).
pub fn fit(points: &[(f64, f64)]) -> Result<UslFit, UslError> {
    for &(n, x) in points {
        if !(n.is_finite() && n >= 1.0 && x.is_finite() && x > 0.0) {
            return Err(UslError::BadPoint { n, x });
        }
    }
    let mut distinct: Vec<f64> = points.iter().map(|p| p.0).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() < MIN_DISTINCT_N {
        return Err(UslError::TooFewDistinct { got: distinct });
    }
    let start = initial_guess(points);
    let params = levenberg_marquardt(points, start);
    Ok(finish(points, params))
}

fn initial_guess(points: &[(f64, f64)]) -> [f64; 3] {
    let ones: Vec<f64> = points.iter().filter(|p| p.0 == 1.0).map(|p| p.1).collect();
    let lambda = if ones.is_empty() {
        points.iter().map(|&(n, x)| x / n).fold(f64::MIN, f64::max)
    } else {
        ones.iter().sum::<f64>() / ones.len() as f64
    };
    // Least squares without intercept on y = σ·a + κ·b, a = N − 1, b = N(N − 1).
    let (mut saa, mut sab, mut sbb, mut say, mut sby) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x) in points {
        let (a, b, y) = (n - 1.0, n * (n - 1.0), n * lambda / x - 1.0);
        saa += a * a;
        sab += a * b;
        sbb += b * b;
        say += a * y;
        sby += b * y;
    }
    let det = saa * sbb - sab * sab;
    let (sigma, kappa) =
        if det.abs() > 0.0 { ((say * sbb - sby * sab) / det, (saa * sby - sab * say) / det) } else { (0.0, 0.0) };
    [lambda, sigma.clamp(0.0, 1.0), kappa.max(0.0)]
}

fn residuals_and_jacobian(points: &[(f64, f64)], p: [f64; 3]) -> (Vec<f64>, Vec<[f64; 3]>) {
    let [lambda, sigma, kappa] = p;
    let mut r = Vec::with_capacity(points.len());
    let mut j = Vec::with_capacity(points.len());
    for &(n, x) in points {
        let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
        r.push(x - lambda * n / d);
        let dd = lambda * n / (d * d);
        // Derivatives of the model (not of the residual).
        j.push([n / d, -dd * (n - 1.0), -dd * n * (n - 1.0)]);
    }
    (r, j)
}

fn rss(points: &[(f64, f64)], p: [f64; 3]) -> f64 {
    points.iter().map(|&(n, x)| (x - predict(p[0], p[1], p[2], n)).powi(2)).sum()
}

fn levenberg_marquardt(points: &[(f64, f64)], start: [f64; 3]) -> [f64; 3] {
    let mut p = start;
    let mut cost = rss(points, p);
    let mut mu = 1e-3;
    for _ in 0..5000 {
        let (r, j) = residuals_and_jacobian(points, p);
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        for (row, ri) in j.iter().zip(&r) {
            for a in 0..3 {
                jtr[a] += row[a] * ri;
                for b in 0..3 {
                    jtj[a][b] += row[a] * row[b];
                }
            }
        }
        // Parameters at their bound whose gradient pushes them below it stay put.
        let free: Vec<usize> = (0..3).filter(|&k| k == 0 || p[k] > 0.0 || jtr[k] > 0.0).collect();
        let mut improved = false;
        while mu < 1e20 {
            let mut a: Vec<Vec<f64>> = free
                .iter()
                .map(|&x| {
                    free.iter().map(|&y| jtj[x][y] + if x == y { mu * jtj[x][x].max(1e-300) } else { 0.0 }).collect()
                })
                .collect();
            let mut rhs: Vec<f64> = free.iter().map(|&k| jtr[k]).collect();
            let Some(step) = solve(&mut a, &mut rhs) else {
                mu *= 10.0;
                continue;
            };
            let mut trial = p;
            for (&k, s) in free.iter().zip(step) {
                trial[k] += s;
            }
            trial[1] = trial[1].max(0.0);
            trial[2] = trial[2].max(0.0);
            trial[0] = trial[0].max(f64::MIN_POSITIVE);
            let trial_cost = rss(points, trial);
            if trial_cost < cost {
                let relative = (cost - trial_cost) / cost.max(f64::MIN_POSITIVE);
                p = trial;
                cost = trial_cost;
                mu = (mu / 10.0).max(1e-12);
                improved = relative > 1e-15;
                break;
            }
            mu *= 10.0;
        }
        if !improved {
            break;
        }
    }
    p
}

/// Gaussian elimination with partial pivoting; `None` for a singular system.
fn solve(a: &mut [Vec<f64>], b: &mut [f64]) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &k| a[i][col].abs().total_cmp(&a[k][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 || !a[pivot][col].is_finite() {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (offset, row) in lower.iter_mut().enumerate() {
            let factor = row[col] / pivot_row[col];
            for (cell, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *cell -= factor * p;
            }
            b[col + 1 + offset] -= factor * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let sum: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - sum) / a[row][row];
    }
    Some(x)
}

fn finish(points: &[(f64, f64)], p: [f64; 3]) -> UslFit {
    let [lambda, sigma, kappa] = p;
    let n = points.len();
    let cost = rss(points, p);
    let mean = points.iter().map(|q| q.1).sum::<f64>() / n as f64;
    let total: f64 = points.iter().map(|q| (q.1 - mean).powi(2)).sum();
    let r_squared = if total > 0.0 { 1.0 - cost / total } else { 1.0 };
    // Standard errors over the parameters not stuck at a bound.
    let free: Vec<usize> = (0..3).filter(|&k| k == 0 || p[k] > 0.0).collect();
    let mut se = [None; 3];
    // cov[a][b] over all three parameters; None where not free or not determined.
    let mut cov = [[None; 3]; 3];
    if n > free.len() {
        let (_, j) = residuals_and_jacobian(points, p);
        let s2 = cost / (n - free.len()) as f64;
        for (idx, &k) in free.iter().enumerate() {
            // Column idx of the inverse of JᵀJ restricted to the free parameters.
            let mut a: Vec<Vec<f64>> = free
                .iter()
                .map(|&x| free.iter().map(|&y| j.iter().map(|row| row[x] * row[y]).sum()).collect())
                .collect();
            let mut unit = vec![0.0; free.len()];
            unit[idx] = 1.0;
            if let Some(col) = solve(&mut a, &mut unit) {
                for (other, &m) in free.iter().enumerate() {
                    cov[m][k] = Some(s2 * col[other]);
                }
                if col[idx] >= 0.0 {
                    se[k] = Some((s2 * col[idx]).sqrt());
                }
            }
        }
    }
    let (peak_workers, peak_throughput) = if kappa > 0.0 && sigma < 1.0 {
        let peak = ((1.0 - sigma) / kappa).sqrt();
        (Some(peak), Some(predict(lambda, sigma, kappa, peak)))
    } else {
        (None, None)
    };
    // N* = √((1 − σ)/κ): ∂N*/∂σ = −1/(2κN*), ∂N*/∂κ = −N*/(2κ). With σ at its
    // bound of 0 only κ's variance counts.
    let peak_workers_se = peak_workers.and_then(|peak| {
        let (ds, dk) = (-1.0 / (2.0 * kappa * peak), -peak / (2.0 * kappa));
        let var_k = cov[2][2]?;
        let (var_s, cov_sk) = match (cov[1][1], cov[1][2]) {
            (Some(vs), Some(c)) => (vs, c),
            _ => (0.0, 0.0),
        };
        let var = ds * ds * var_s + 2.0 * ds * dk * cov_sk + dk * dk * var_k;
        (var >= 0.0).then(|| var.sqrt())
    });
    UslFit {
        lambda,
        sigma,
        kappa,
        lambda_se: se[0],
        sigma_se: se[1],
        kappa_se: se[2],
        peak_workers,
        peak_workers_se,
        residual_df: n.saturating_sub(free.len()),
        peak_throughput,
        amdahl_serial_fraction: (kappa == 0.0).then_some(sigma),
        r_squared,
        points: n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SPEC SDM91 benchmark on a 16-CPU Sun SPARCcenter 2000 (October
    /// 1994), the data set of Gunther's book and the R package `usl`
    /// (`data(specsdm91)`): simulated users and scripts per hour.
    const SPECSDM91: [(f64, f64); 7] =
        [(1.0, 64.9), (18.0, 995.9), (36.0, 1652.4), (72.0, 1853.2), (108.0, 1828.9), (144.0, 1775.0), (216.0, 1702.2)];

    fn sig3(x: f64) -> String {
        format!("{x:.2e}")
    }

    #[test]
    fn reproduces_the_r_usl_package_on_specsdm91() {
        // `usl(throughput ~ load, specsdm91)` in R: alpha (σ) 0.0277285,
        // beta (κ) 0.0001044, gamma (λ) 89.9952382.
        let fit = fit(&SPECSDM91).unwrap();
        assert_eq!(sig3(fit.sigma), sig3(0.0277285), "σ = {}", fit.sigma);
        assert_eq!(sig3(fit.kappa), sig3(0.0001044), "κ = {}", fit.kappa);
        assert_eq!(sig3(fit.lambda), sig3(89.9952382), "λ = {}", fit.lambda);
        // R's fitted(u), to 3 significant digits: 90 1078 1541 1850 1879 1822 1646.
        let fitted: Vec<f64> =
            SPECSDM91.iter().map(|&(n, _)| predict(fit.lambda, fit.sigma, fit.kappa, n).round()).collect();
        assert_eq!(fitted, [90.0, 1078.0, 1541.0, 1850.0, 1879.0, 1822.0, 1646.0]);
        // Peak: √((1 − σ)/κ) ≈ 96.5 users.
        assert_eq!(fit.peak_workers.unwrap().round(), 97.0);
        assert!(fit.sigma_se.is_some() && fit.kappa_se.is_some() && fit.lambda_se.is_some());
    }

    #[test]
    fn recovers_exact_parameters_from_noise_free_data() {
        let points: Vec<(f64, f64)> =
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0].iter().map(|&n| (n, predict(1e6, 0.05, 0.002, n))).collect();
        let fit = fit(&points).unwrap();
        assert!((fit.lambda / 1e6 - 1.0).abs() < 1e-8);
        assert!((fit.sigma - 0.05).abs() < 1e-9);
        assert!((fit.kappa - 0.002).abs() < 1e-10);
    }

    #[test]
    fn linear_data_fits_with_zero_contention() {
        let points: Vec<(f64, f64)> = [1.0, 2.0, 3.0, 4.0].iter().map(|&n| (n, 100.0 * n)).collect();
        let fit = fit(&points).unwrap();
        assert!(fit.sigma < 1e-9 && fit.kappa < 1e-12, "{fit:?}");
        assert_eq!(fit.peak_workers, None);
    }

    #[test]
    fn amdahl_data_gives_kappa_zero_and_the_serial_fraction() {
        let points: Vec<(f64, f64)> =
            [1.0, 2.0, 4.0, 8.0, 16.0].iter().map(|&n| (n, predict(500.0, 0.1, 0.0, n))).collect();
        let fit = fit(&points).unwrap();
        assert_eq!(fit.kappa, 0.0);
        assert!((fit.amdahl_serial_fraction.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(fit.kappa_se, None);
    }

    #[test]
    fn refuses_too_few_distinct_counts_and_says_why() {
        let err = fit(&[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0), (4.0, 31.0)]).unwrap_err();
        assert_eq!(err.to_string(), "needs at least 4 distinct worker counts to fit λ, σ and κ, got 3 (1, 2, 4)");
        assert!(matches!(fit(&[(0.0, 1.0)]), Err(UslError::BadPoint { .. })));
    }
}
