//! Results in the formats people paste: CSV (loads in pandas and R without
//! options), a GitHub Markdown table, JSON lines; a row per point or per run.

use std::fmt::Write;

use serde_json::{Map, Value};

use super::view::{self, Column, Layout};
use crate::results::ResultsFile;

/// How [`export`] writes its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Markdown,
    JsonLines,
}

/// One row: column names and values, in column order.
type Row = Vec<(&'static str, Value)>;

/// Every point of `doc` with runs (or, with `runs`, every measured run) as rows.
pub fn export(doc: &ResultsFile, format: ExportFormat, runs: bool) -> String {
    let rows = if runs { run_rows(doc) } else { point_rows(doc) };
    match format {
        ExportFormat::Csv => csv(&rows),
        ExportFormat::Markdown => markdown(&rows),
        ExportFormat::JsonLines => json_lines(&rows),
    }
}

fn number(x: Option<f64>) -> Value {
    x.filter(|v| v.is_finite()).map_or(Value::Null, Value::from)
}

/// A row per point with runs: the export layout of its view.
fn point_rows(doc: &ResultsFile) -> Vec<Row> {
    let views = view::views(doc);
    let columns = Layout::Export.shown(&views);
    views.iter().map(|v| columns.iter().map(|c| (c.key(), c.cell(v).value())).collect()).collect()
}

/// A row per measured run: its point's identity, then the run's figures.
fn run_rows(doc: &ResultsFile) -> Vec<Row> {
    let mut rows = Vec::new();
    for v in view::views(doc) {
        for run in &v.point.runs {
            let mut row: Row = Column::IDENTITY.iter().map(|c| (c.key(), c.cell(&v).value())).collect();
            row.extend([
                ("run", Value::from(run.run)),
                ("ops", Value::from(run.ops)),
                ("elapsed_s", number(Some(run.elapsed_s))),
                ("rate", number(Some(run.ops_per_s))),
                ("rate_per_worker", number(Some(run.ops_per_s_per_worker))),
                ("ops_per_cpu_s", number(run.ops_per_cpu_s())),
                ("busy_share", number(run.noise.map(|n| n.others_cpu))),
                ("worker_ops", Value::from(run.per_worker_ops.clone())),
                (
                    "worker_done_s",
                    run.completion_s.as_ref().map_or(Value::Null, |c| list(c.iter().map(|t| number(Some(*t))))),
                ),
            ]);
            rows.push(row);
        }
    }
    rows
}

fn list(values: impl Iterator<Item = Value>) -> Value {
    Value::Array(values.collect())
}

/// A value as text: numbers as serde writes them (shortest round trip),
/// empty for null, a list's items separated by spaces (one cell per run, so
/// `str.split()` gives one figure per worker, in worker order).
fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

/// A text cell as a spreadsheet may read it: one beginning with `=`, `+`,
/// `-`, `@`, a tab or a carriage return would be evaluated as a formula
/// (a crafted metric name or label could run one), so it gets a leading
/// `'`, which spreadsheets show as text (OWASP, "CSV Injection"). Numbers
/// are written as they are.
fn neutralised(value: &Value) -> String {
    match value {
        Value::String(s) if s.starts_with(['=', '+', '-', '@', '\t', '\r']) => format!("'{s}"),
        other => text(other),
    }
}

/// RFC 4180: a header line; fields with a comma or quote quoted (a line
/// break is written as an escape); text cells neutralised against formula injection.
fn csv(rows: &[Row]) -> String {
    let mut out = String::new();
    let Some(first) = rows.first() else { return out };
    // Control characters (a label's ESC or CR) are written as escapes: a
    // CSV is read on terminals too, and no reader needs them raw.
    let field = |s: &str| {
        let s = &*crate::escape::for_terminal(s);
        if s.contains([',', '"']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    out.push_str(&first.iter().map(|(name, _)| field(name)).collect::<Vec<_>>().join(","));
    out.push('\n');
    for row in rows {
        out.push_str(&row.iter().map(|(_, v)| field(&neutralised(v))).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// A GitHub table: numbers right-aligned, `|` escaped, empty cells for null.
fn markdown(rows: &[Row]) -> String {
    let mut out = String::new();
    let Some(first) = rows.first() else { return out };
    let _ = writeln!(
        out,
        "| {} |",
        first.iter().map(|(n, _)| crate::escape::markdown_text(n)).collect::<Vec<_>>().join(" | ")
    );
    let align: Vec<&str> = first.iter().map(|(_, v)| if v.is_number() { "---:" } else { "---" }).collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .map(|(_, v)| match v {
                Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), short),
                v => crate::escape::markdown_text(&text(v)),
            })
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// A number for people: integers as they are, others to 4 significant digits.
fn short(x: f64) -> String {
    if (x.fract() == 0.0 && x.abs() < 1e15) || x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else {
        let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
        format!("{x:.digits$}")
    }
}

fn json_lines(rows: &[Row]) -> String {
    let mut out = String::new();
    for row in rows {
        let object: Map<String, Value> = row.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        out.push_str(&crate::escape::json_compact(&Value::Object(object)).expect("values serialize"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{doc, point, run};
    use crate::vocab::{Share, Workload};

    fn sample() -> ResultsFile {
        let mut d = doc(
            2,
            1.0,
            vec![
                point(Workload::Stat, Share::Private, 1, vec![run(0, &[100], 1.0), run(1, &[120], 1.0)]),
                point(Workload::Stat, Share::Private, 2, vec![run(0, &[90, 90], 1.0), run(1, &[110, 110], 1.0)]),
            ],
        );
        d.target.fs_type = "tmpfs, \"test\"".into();
        d
    }

    /// A minimal RFC 4180 reader: what pandas and R do with quotes.
    fn parse_csv(text: &str) -> Vec<Vec<String>> {
        let mut rows = vec![vec![String::new()]];
        let (mut quoted, mut chars) = (false, text.chars().peekable());
        while let Some(c) = chars.next() {
            let row = rows.last_mut().unwrap();
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    row.last_mut().unwrap().push('"');
                }
                ('"', _) => quoted = !quoted,
                (',', false) => row.push(String::new()),
                ('\n', false) => rows.push(vec![String::new()]),
                (c, _) => row.last_mut().unwrap().push(c),
            }
        }
        rows.pop();
        rows
    }

    #[test]
    fn csv_parses_back_to_the_figures() {
        let rows = parse_csv(&export(&sample(), ExportFormat::Csv, false));
        assert_eq!(rows.len(), 3);
        let header = &rows[0];
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(rows[1][col("filesystem")], "tmpfs, \"test\"", "quoted and unquoted exactly");
        assert_eq!(rows[2][col("workers")], "2");
        assert_eq!(rows[1][col("median")].parse::<f64>().unwrap(), 110.0);
        assert_eq!(rows[2][col("median")].parse::<f64>().unwrap(), 200.0);
        assert!((rows[2][col("efficiency")].parse::<f64>().unwrap() - 200.0 / 2.0 / 110.0).abs() < 1e-12);
        assert_eq!(rows[1][col("p50_ns")], "", "no latency recorded: empty");
        assert!(rows.iter().all(|r| r.len() == header.len()));
    }

    #[test]
    fn csv_text_cells_cannot_be_formulas() {
        let mut d = sample();
        d.target.fs_type = "=HYPERLINK(\"http://x\",\"y\")".into();
        let rows = parse_csv(&export(&d, ExportFormat::Csv, false));
        let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
        assert_eq!(rows[1][col("filesystem")], "'=HYPERLINK(\"http://x\",\"y\")");
        for bad in ["+1", "-1+1", "@SUM(A1)", "\tx", "\rx"] {
            assert_eq!(neutralised(&Value::from(bad)), format!("'{bad}"));
        }
        // Numbers, negative ones too, stay numbers.
        assert_eq!(neutralised(&Value::from(-1.5)), "-1.5");
        assert_eq!(neutralised(&Value::from("ext4")), "ext4");
    }

    #[test]
    fn markdown_is_a_github_table() {
        assert_eq!(
            export(&sample(), ExportFormat::Markdown, false),
            "| workload | mode | share | filesystem | cache | variant | workers | unit | runs | asked_ops_per_s | median | mean | sd | efficiency | ops_per_cpu_s | p50_ns | p99_ns | p999_ns | response_p50_ns | response_p99_ns | response_p999_ns | service_p99_ns | runq_share | asleep_share | notes |\n\
             |---|---|---|---|---|---|---:|---|---:|---|---:|---:|---:|---:|---|---|---|---|---|---|---|---|---|---|---|\n\
             | stat | process | private | tmpfs, \"test\" |  |  | 1 | ops/s | 2 |  | 110 | 110 | 14.14 | 1 |  |  |  |  |  |  |  |  |  |  |  |\n\
             | stat | process | private | tmpfs, \"test\" |  |  | 2 | ops/s | 2 |  | 200 | 200 | 28.28 | 0.9091 |  |  |  |  |  |  |  |  |  |  |  |\n"
        );
    }

    #[test]
    fn json_lines_per_run() {
        let text = export(&sample(), ExportFormat::JsonLines, true);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[3]["workers"], 2);
        assert_eq!(lines[3]["ops"], 220);
        assert_eq!(lines[3]["rate"], 220.0);
        assert_eq!(lines[3]["worker_ops"], serde_json::json!([110, 110]));
        assert_eq!(lines[3]["worker_done_s"], Value::Null, "a fixed-time loop's workers all stop with the window");
    }

    #[test]
    fn runs_list_every_workers_figures_in_one_cell() {
        let mut d = sample();
        d.points[1].runs[0].completion_s = Some(vec![0.5, 0.75]);
        let rows = parse_csv(&export(&d, ExportFormat::Csv, true));
        let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
        assert_eq!(rows[3][col("worker_ops")], "90 90");
        assert_eq!(rows[3][col("worker_done_s")], "0.5 0.75");
        assert_eq!(rows[4][col("worker_done_s")], "", "none recorded: empty, not NaN");
        let md = export(&d, ExportFormat::Markdown, true);
        assert!(md.contains("| 90 90 | 0.5 0.75 |"), "{md}");
    }
}
