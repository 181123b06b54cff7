//! A compared point's stats that moved, as LKP lists them: `base ±sd
//! change new ±sd stat`, largest change first. Shared by the text and
//! Markdown dialects (as lines) and the HTML report (as cells).

use crate::compare::{MovedStat, Row};

use super::format::format_pct;
use super::table::{Align, Table};

/// A value to four significant figures, as a table of stats of any size reads.
pub(crate) fn four_figures(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 1e4 {
        return format!("{v:.0}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

/// The cells of one stat: base, its spread, the change, new, its spread, the stat per op or s.
pub(crate) fn cells(m: &MovedStat) -> [String; 6] {
    [
        four_figures(m.base_mean),
        format!("±{}", format_pct(m.base_sd_pct, false)),
        match (m.change_pct, m.base_mean == 0.0) {
            (Some(c), _) => format_pct(c, true),
            (None, true) => "new".to_string(),
            // Near 0, or of the other sign: no percentage means anything.
            (None, false) => "no %".to_string(),
        },
        four_figures(m.new_mean),
        format!("±{}", format_pct(m.new_sd_pct, false)),
        format!("{} per {}", m.stat, m.per),
    ]
}

pub(crate) const HEADINGS: [&str; 6] = ["base", "±sd", "change", "new", "±sd", "stat"];

/// The heading that says what the list is, at false discovery rate `alpha`.
pub(crate) fn heading(row: &Row, alpha: f64) -> String {
    format!(
        "stats that moved at {} {} x{} (means of the runs; of those listed, {}% are expected to have moved by chance):",
        row.mode_text(),
        row.share_text(),
        row.workers,
        (100.0 * alpha * 100.0).round() / 100.0
    )
}

/// The heading and an aligned table, or nothing where no stat moved.
pub fn lines(row: &Row, alpha: f64) -> Vec<String> {
    if row.moved.is_empty() {
        return Vec::new();
    }
    let mut out = vec![heading(row, alpha)];
    out.extend(table_lines(&row.moved, "  "));
    out
}

/// `moved` as an aligned table, each line after `indent`.
pub(crate) fn table_lines(moved: &[MovedStat], indent: &str) -> Vec<String> {
    let aligns = [Align::Right, Align::Left, Align::Right, Align::Right, Align::Left, Align::Left];
    let columns: Vec<(&str, Align)> = HEADINGS.iter().copied().zip(aligns).collect();
    let mut table = Table::new(&columns);
    for m in moved {
        table.row(cells(m).to_vec());
    }
    table.render().lines().map(|l| format!("{indent}{}", l.trim_end())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_four_significant_figures() {
        assert_eq!(four_figures(10.8), "10.80");
        assert_eq!(four_figures(400.0), "400.0");
        assert_eq!(four_figures(0.000_123_46), "0.0001235");
        assert_eq!(four_figures(123_456.0), "123456");
        assert_eq!(four_figures(-2.5), "-2.500");
        assert_eq!(four_figures(0.0), "0");
    }

    #[test]
    fn a_moved_stat_reads_as_lkp_writes_it() {
        let m = MovedStat {
            stat: "workers.involuntary_switches".into(),
            per: "s".into(),
            base_mean: 10.8,
            base_sd_pct: 18.2,
            new_mean: 400.0,
            new_sd_pct: 3.9,
            change_pct: Some(3603.7),
            q_value: 1e-4,
        };
        assert_eq!(cells(&m), ["10.80", "±18.2%", "+3603.7%", "400.0", "±3.9%", "workers.involuntary_switches per s"]);
        let appeared = MovedStat { change_pct: None, base_mean: 0.0, base_sd_pct: 0.0, ..m.clone() };
        assert_eq!(cells(&appeared)[2], "new");
        let near_zero = MovedStat { change_pct: None, base_mean: 0.0001, ..m };
        assert_eq!(cells(&near_zero)[2], "no %");
    }
}
