//! How numbers and text are written, shared by every renderer: a leaf, so
//! the renderers depend on it and not on each other.

/// A unicode sparkline of `values` against their maximum: ▁ (lowest) to █.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().fold(0.0, f64::max);
    values
        .iter()
        .map(|&v| if max > 0.0 { BARS[((v / max) * 7.0).round().clamp(0.0, 7.0) as usize] } else { BARS[0] })
        .collect()
}

/// Rates below 1000/s keep two decimals: collapsed points ("12.68 op/s")
/// are exactly the ones people quote.
pub fn format_rate(rate: f64) -> String {
    if rate.abs() >= 1000.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.2}")
    }
}

/// The runs' standard deviation relative to their mean, `-` for one run.
pub fn format_sd(summary: &crate::stats::Summary) -> String {
    match summary.n {
        1 => "-".to_string(),
        _ => format!("{:.1}%", summary.relative_stddev_pct()),
    }
}
