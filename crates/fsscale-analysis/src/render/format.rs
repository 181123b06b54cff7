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

/// The runs' standard deviation relative to their mean, `-` for one run
/// or a mean of 0 (runs that did no op), where it is not defined.
pub(crate) fn format_sd(summary: &crate::stats::Summary) -> String {
    match summary.n {
        1 => "-".to_string(),
        _ => format_pct(summary.relative_stddev_pct(), false),
    }
}

/// A percentage (`+4.2%` with `signed`), or `-` where it is not defined:
/// a change against a base of 0 (infinite), a spread of runs whose mean is 0.
pub(crate) fn format_pct(pct: f64, signed: bool) -> String {
    match (pct.is_finite(), signed) {
        (false, _) => "-".to_string(),
        (true, true) => format!("{pct:+.1}%"),
        (true, false) => format!("{pct:.1}%"),
    }
}

/// 1429 → "1,429": a count as people write it.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `850ns`, `3.3µs`, `27.6µs`, `344µs`, `4.99ms`, `1.20s`: three significant digits.
pub fn format_ns(ns: f64) -> String {
    let (value, unit) = match ns {
        n if n < 1e3 => return format!("{n:.0}ns"),
        n if n < 1e6 => (n / 1e3, "µs"),
        n if n < 1e9 => (n / 1e6, "ms"),
        n => (n / 1e9, "s"),
    };
    match value {
        v if v < 10.0 => format!("{v:.2}{unit}"),
        v if v < 100.0 => format!("{v:.1}{unit}"),
        v => format!("{v:.0}{unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1429), "1,429");
        assert_eq!(thousands(94131), "94,131");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn undefined_percentages_are_a_dash() {
        assert_eq!(format_pct(4.25, true), "+4.2%");
        assert_eq!(format_pct(-100.0, true), "-100.0%");
        assert_eq!(format_pct(12.0, false), "12.0%");
        assert_eq!(format_pct(f64::INFINITY, true), "-");
        assert_eq!(format_pct(f64::NAN, false), "-");
    }
}
