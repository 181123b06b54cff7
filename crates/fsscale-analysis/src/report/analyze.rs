//! The text view of a scaling analysis.

use std::fmt::Write;

use super::format::format_rate;
use super::table::{Align, Table};
use crate::analyze::SeriesAnalysis;
use crate::ministat::format_g;
use crate::stats::usl::UslFit;

/// Four significant digits, `%g` style.
fn sig(x: f64) -> String {
    format_g(x, 4)
}

fn with_se(value: f64, se: Option<f64>) -> String {
    match se {
        Some(se) => format!("{} ± {}", sig(value), sig(se)),
        None => sig(value),
    }
}

/// N* with its 95% confidence interval (t quantile over the fit's residual
/// degrees of freedom), when the fit has a standard error for it.
fn peak_with_ci(fit: &UslFit) -> Option<String> {
    let n = fit.peak_workers?;
    Some(match (fit.peak_workers_se, fit.residual_df) {
        (Some(se), df) if df > 0 => {
            let t = crate::stats::distributions::t_quantile_two_sided(0.95, df as f64);
            format!("{} (95% CI {} to {})", sig(n), sig((n - t * se).max(1.0)), sig(n + t * se))
        }
        _ => sig(n),
    })
}

/// "λ = … , σ = …, κ = …; peak …": the fit in one line, with standard
/// errors, N*'s confidence interval and R²; `unit` is the throughput's.
pub fn fit_line(fit: &UslFit, unit: &str) -> String {
    let mut line = format!(
        "USL: λ = {} {unit}, σ = {}, κ = {}",
        with_se(fit.lambda, fit.lambda_se),
        with_se(fit.sigma, fit.sigma_se),
        with_se(fit.kappa, fit.kappa_se)
    );
    match (fit.peak_workers, fit.peak_throughput, fit.amdahl_serial_fraction) {
        (Some(_), Some(x), _) => {
            let n = peak_with_ci(fit).unwrap_or_default();
            let _ = write!(line, "; peak at N* = {n} workers ({} {unit})", format_rate(x));
        }
        // A fraction: 0 < s < 1, else the fit is not Amdahl's law and says nothing of one.
        (_, _, Some(s)) if s > 0.0 && s < 1.0 => {
            let _ = write!(line, "; Amdahl: serial fraction {}, speedup limit {}×", sig(s), sig(1.0 / s));
        }
        _ => {}
    }
    let _ = write!(line, "; R² = {:.4}", fit.r_squared);
    line
}

/// A one-line verdict for a series, as `run`, `analyze` and the report
/// show it: the regime only when the fit supports one (else why not), and
/// what the data themselves show: where they peak and how far they fall.
pub fn verdict_line(a: &SeriesAnalysis) -> String {
    match (&a.fit, &a.regime) {
        (Some(fit), Some(_)) => {
            let peak = peak_with_ci(fit).map(|n| format!(", N* = {n}")).unwrap_or_default();
            format!(
                "σ = {}, κ = {}{peak}, R² = {:.2}: {}",
                with_se(fit.sigma, fit.sigma_se),
                with_se(fit.kappa, fit.kappa_se),
                fit.r_squared,
                verdict_words(a)
            )
        }
        _ => verdict_words(a),
    }
}

/// The verdict without the fit's figures (for where the fit line stands above it).
fn verdict_words(a: &SeriesAnalysis) -> String {
    let mut line = match (&a.fit, &a.regime) {
        (Some(_), Some(regime)) => regime.words().to_string(),
        (Some(_), None) => {
            format!("no reliable USL fit: {}", a.regime_refused.as_deref().unwrap_or("the fit names no regime"))
        }
        _ => format!("no USL fit: {}", a.fit_refused.as_deref().unwrap_or("refused")),
    };
    if let Some(c) = a.collapse.as_ref().filter(|c| c.noisy_sd.is_some()) {
        let _ = write!(
            line,
            "; falls to {:.0}% of its peak at {}, but its runs are too noisy to call a collapse (sd up to {:.0}%: \
             run more)",
            100.0 * c.last_throughput / c.peak_throughput,
            crate::vocab::workers(c.last_workers),
            100.0 * c.noisy_sd.unwrap_or(0.0)
        );
    } else if let Some(c) = &a.collapse {
        let _ = write!(
            line,
            "; COLLAPSE: {} {} at {}, {:.0}% of the peak at {}",
            format_rate(c.last_throughput),
            a.unit,
            crate::vocab::workers(c.last_workers),
            100.0 * c.last_throughput / c.peak_throughput,
            c.peak_workers
        );
    } else if let Some(o) = a.observed.as_ref().filter(|o| o.falls()) {
        let _ = write!(
            line,
            "; measured: peaks at {} ({} {}), falls to {:.0}% of that at {}",
            crate::vocab::workers(o.peak_workers),
            format_rate(o.peak_throughput),
            a.unit,
            100.0 * o.last_of_peak(),
            o.last_workers
        );
    }
    line
}

pub fn render_analysis(series: &[SeriesAnalysis]) -> String {
    let mut out = String::new();
    for a in series {
        let _ = writeln!(out, "{}", a.label);
        let mut table = Table::new(&[
            ("workers", Align::Right),
            (a.unit.as_str(), Align::Right),
            ("speedup", Align::Right),
            ("efficiency", Align::Right),
            ("per worker", Align::Right),
        ]);
        for p in &a.points {
            table.row(vec![
                p.workers.to_string(),
                format_rate(p.throughput),
                p.speedup.map(|s| format!("{s:.2}x")).unwrap_or_else(|| "-".into()),
                p.efficiency.map(|e| format!("{:.1}%", 100.0 * e)).unwrap_or_else(|| "-".into()),
                format_rate(p.per_worker),
            ]);
        }
        out.push_str(&table.render());
        // A fit that supports no regime is refused: its parameters are not figures to read.
        if let (Some(fit), Some(_)) = (&a.fit, &a.regime) {
            let _ = writeln!(out, "  {}", fit_line(fit, &a.unit));
        }
        let _ = writeln!(out, "  {}\n", verdict_words(a));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze_pairs;

    #[test]
    fn renders_specsdm91() {
        let pairs = [(1, 64.9), (18, 995.9), (36, 1652.4), (72, 1853.2), (108, 1828.9), (144, 1775.0), (216, 1702.2)];
        let text = render_analysis(&[analyze_pairs("specsdm91.csv", &pairs)]);
        let expected = "\
specsdm91.csv
  workers   ops/s  speedup  efficiency  per worker
        1   64.90    1.00x      100.0%       64.90
       18  995.90   15.35x       85.3%       55.33
       36    1652   25.46x       70.7%       45.90
       72    1853   28.55x       39.7%       25.74
      108    1829   28.18x       26.1%       16.93
      144    1775   27.35x       19.0%       12.33
      216    1702   26.23x       12.1%        7.88
  USL: λ = 90 ± 14.21 ops/s, σ = 0.02773 ± 0.009122, κ = 0.0001044 ± 1.988e-05; peak at N* = 96.52 (95% CI 71.57 to 121.5) workers (1884 ops/s); R² = 0.9896
  coherency-bound (retrograde)

";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_poor_fit_names_no_regime_and_the_data_speak_for_themselves() {
        // A database sweep that peaks at 2 threads and falls to about 70%:
        // five noisy runs a point, which the law fits poorly.
        let means = [(1usize, 1000.0), (2, 1320.0), (4, 1130.0), (8, 980.0), (16, 1010.0), (32, 930.0)];
        let wobble = [-0.12, 0.09, -0.05, 0.11, -0.03];
        let runs: Vec<(f64, f64)> =
            means.iter().flat_map(|&(n, x)| wobble.iter().map(move |w| (n as f64, x * (1.0 + w)))).collect();
        let a = crate::analyze::analyze_series("tps", &means, &runs);
        assert_eq!(a.regime, None);
        let line = verdict_line(&a);
        assert!(line.starts_with("no reliable USL fit: "), "{line}");
        assert!(line.ends_with("; measured: peaks at 2 workers (1320 ops/s), falls to 70% of that at 32"), "{line}");
    }
}
