//! ministat's text output, byte for byte: names, dot plot, summary table and
//! Student's t verdicts.

use std::fmt::Write;

use super::cformat::{f, g, g_width};
use super::dataset::Dataset;
use super::Confidence;

/// Plot symbols: a cell holding points of data sets i and j shows symbol[i | j].
pub const SYMBOLS: [char; 8] = [' ', 'x', '+', '*', '%', '#', '@', 'O'];

/// What to print, from the command-line flags.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub width: usize,
    /// `-s`: one bar row per data set.
    pub separate_bars: bool,
    /// `-n`: summary only, no plot and no test.
    pub summary_only: bool,
    /// `-A`: no plot.
    pub suppress_plot: bool,
    /// `-q`: no names and no table header.
    pub quiet: bool,
}

pub fn render(sets: &[Dataset], layout: &Layout, confidence: &Confidence) -> String {
    let mut out = String::new();
    if !layout.quiet {
        for (i, ds) in sets.iter().enumerate() {
            let _ = writeln!(out, "{} {}", SYMBOLS[i + 1], ds.name);
        }
    }
    if !layout.summary_only && !layout.suppress_plot {
        out.push_str(&plot(sets, layout.width, layout.separate_bars));
    }
    if !layout.quiet {
        out.push_str("    N           Min           Max        Median           Avg        Stddev\n");
    }
    vitals(&mut out, &sets[0], 1);
    for (i, ds) in sets.iter().enumerate().skip(1) {
        vitals(&mut out, ds, i + 1);
        if !layout.summary_only {
            relative(&mut out, ds, &sets[0], confidence);
        }
    }
    out
}

fn vitals(out: &mut String, ds: &Dataset, flag: usize) {
    let _ = writeln!(
        out,
        "{} {:>3} {} {} {} {} {}",
        SYMBOLS[flag],
        ds.n(),
        g_width(ds.min(), 13, 8),
        g_width(ds.max(), 13, 8),
        g_width(ds.median(), 13, 8),
        g_width(ds.avg(), 13, 8),
        g_width(ds.stddev(), 13, 8)
    );
}

/// Student's t with pooled variance of `ds` against the first set `rs`.
fn relative(out: &mut String, ds: &Dataset, rs: &Dataset, confidence: &Confidence) {
    let (n1, n2) = (ds.n() as f64, rs.n() as f64);
    let t = confidence.t_value(ds.n() + rs.n() - 2);
    let pooled = (((n1 - 1.0) * ds.var() + (n2 - 1.0) * rs.var()) / (n1 + n2 - 2.0)).sqrt();
    let s = pooled * (1.0 / n1 + 1.0 / n2).sqrt();
    let d = ds.avg() - rs.avg();
    let e = t * s;
    let level = f(confidence.percent(), 1);
    if d.abs() > e {
        let _ = writeln!(out, "Difference at {level}% confidence");
        let _ = writeln!(out, "\t{} +/- {}", g(d, 6), g(e, 6));
        let _ = writeln!(out, "\t{}% +/- {}%", g(d * 100.0 / rs.avg(), 6), g(e * 100.0 / rs.avg(), 6));
        let _ = writeln!(out, "\t(Student's t, pooled s = {})", g(pooled, 6));
    } else {
        let _ = writeln!(out, "No difference proven at {level}% confidence");
    }
}

/// The dot plot. Unlike the reference, whose height follows only the last
/// data set (so earlier sets' stacked points can vanish), the height here
/// holds the tallest stack of any set.
pub fn plot(sets: &[Dataset], width: usize, separate_bars: bool) -> String {
    let (mut min, mut max) = (999e99f64, -999e99f64);
    for ds in sets {
        for a in [ds.min(), ds.max(), ds.avg() - ds.stddev(), ds.avg() + ds.stddev()] {
            if a < min {
                min = a;
            }
            if a > max {
                max = a;
            }
        }
    }
    let span = max - min;
    if span == 0.0 {
        return "[no plot, span is zero width]\n".to_string();
    }
    let dx = span / (width as f64 - 1.0);
    let x0 = min - 0.5 * dx;
    // C converts with truncation toward zero; clamp only to stay in bounds.
    let column = |v: f64| -> usize { (((v - x0) / dx) as i64).clamp(0, width as i64 - 1) as usize };

    let mut rows: Vec<Vec<u8>> = Vec::new(); // rows[j][x]: bits of the sets with a j-th point in column x
    let mut bars: Vec<Option<Vec<u8>>> = vec![None; sets.len()];
    for (index, ds) in sets.iter().enumerate() {
        let val = (index + 1) as u8;
        let bar = if separate_bars { index } else { 0 };
        let bar = bars[bar].get_or_insert_with(|| vec![0u8; width]);
        let mut previous = None;
        let mut height = 0;
        for &p in &ds.points {
            let x = column(p);
            height = if previous == Some(x) { height + 1 } else { 1 };
            previous = Some(x);
            if rows.len() <= height {
                rows.resize(height + 1, vec![0u8; width]);
            }
            rows[height][x] |= val;
        }
        let (av, sd) = (ds.avg(), ds.stddev());
        if !sd.is_nan() {
            let (lo, hi) = (column(av - sd), column(av + sd));
            bar[hi] = b'|';
            bar[lo] = b'|';
            for cell in bar.iter_mut().take(hi).skip(lo + 1) {
                if *cell == 0 {
                    *cell = b'_';
                }
            }
        }
        bar[column(ds.median())] = b'M';
        bar[column(av)] = b'A';
    }

    let border = format!("+{}+\n", "-".repeat(width));
    let mut out = border.clone();
    for row in rows.iter().skip(1).rev() {
        out.push('|');
        for &k in row {
            match SYMBOLS.get(k as usize) {
                Some(&c) => out.push(c),
                None => {
                    let _ = write!(out, "[{k:02x}]");
                }
            }
        }
        out.push_str("|\n");
    }
    for bar in bars.iter().flatten() {
        out.push('|');
        out.extend(bar.iter().map(|&k| if k == 0 { ' ' } else { k as char }));
        out.push_str("|\n");
    }
    out.push_str(&border);
    out
}
