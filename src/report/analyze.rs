//! The text view of a scaling analysis.

use std::fmt::Write;

use super::table::{Align, Table};
use super::text::format_rate;
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

/// "λ = … , σ = …, κ = …; peak …": the fit in one line.
pub fn fit_line(fit: &UslFit) -> String {
    let mut line = format!(
        "USL: λ = {}/s, σ = {}, κ = {}",
        with_se(fit.lambda, fit.lambda_se),
        with_se(fit.sigma, fit.sigma_se),
        with_se(fit.kappa, fit.kappa_se)
    );
    match (fit.peak_workers, fit.peak_throughput, fit.amdahl_serial_fraction) {
        (Some(n), Some(x), _) => {
            let _ = write!(line, "; peak at N* = {} workers ({} ops/s)", sig(n), format_rate(x));
        }
        (_, _, Some(s)) if s > 0.0 => {
            let _ = write!(line, "; Amdahl: serial fraction {}, speedup limit {}×", sig(s), sig(1.0 / s));
        }
        _ => {}
    }
    let _ = write!(line, "; R² = {:.4}", fit.r_squared);
    line
}

/// A one-line verdict for a series, as `run` shows under each table.
pub fn verdict_line(a: &SeriesAnalysis) -> String {
    let mut line = match (&a.fit, &a.regime) {
        (Some(fit), Some(regime)) => {
            let peak = fit.peak_workers.map(|n| format!(", N* = {}", sig(n))).unwrap_or_default();
            format!("σ = {}, κ = {}{peak}: {}", sig(fit.sigma), sig(fit.kappa), regime.words())
        }
        _ => format!("no USL fit: {}", a.fit_refused.as_deref().unwrap_or("refused")),
    };
    if let Some(c) = &a.collapse {
        let _ = write!(
            line,
            "; COLLAPSE: {} ops/s at {} workers, {:.0}% of the peak at {}",
            format_rate(c.last_throughput),
            c.last_workers,
            100.0 * c.last_throughput / c.peak_throughput,
            c.peak_workers
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
            ("ops/s", Align::Right),
            ("speedup", Align::Right),
            ("efficiency", Align::Right),
            ("ops/s/worker", Align::Right),
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
        if let Some(fit) = &a.fit {
            let _ = writeln!(out, "  {}", fit_line(fit));
        }
        let _ = writeln!(out, "  {}\n", verdict_line(a));
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
  workers   ops/s  speedup  efficiency  ops/s/worker
        1   64.90    1.00x      100.0%         64.90
       18  995.90   15.35x       85.3%         55.33
       36    1652   25.46x       70.7%         45.90
       72    1853   28.55x       39.7%         25.74
      108    1829   28.18x       26.1%         16.93
      144    1775   27.35x       19.0%         12.33
      216    1702   26.23x       12.1%          7.88
  USL: λ = 90 ± 14.21/s, σ = 0.02773 ± 0.009122, κ = 0.0001044 ± 1.988e-05; peak at N* = 96.52 workers (1884 ops/s); R² = 0.9896
  σ = 0.02773, κ = 0.0001044, N* = 96.52: coherency-bound (retrograde)

";
        assert_eq!(text, expected);
    }
}
