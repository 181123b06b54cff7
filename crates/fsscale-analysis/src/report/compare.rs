//! Text and Markdown views of a [`Comparison`].

use std::fmt::Write;

use super::format::{format_pct, format_rate, sparkline};
use super::table::{Align, Table};
use crate::compare::{Comparison, Row};
use crate::ministat::{plot, Dataset};
use crate::vocab::{choice, Workload};

/// How `compare` writes its comparisons (`--format`): a new format is a
/// word here and its arm in [`render_comparisons`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    Text,
    Markdown,
    /// The comparisons as data.
    Json,
}

choice!(CompareFormat { Text => "text", Markdown => "markdown" | "md", Json => "json" });

fn p_text(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

fn ci_text(ci: Option<(f64, f64)>) -> String {
    ci.map(|(lo, hi)| format!("[{lo:+.1}%, {hi:+.1}%]")).unwrap_or_else(|| "-".into())
}

fn cells(row: &Row) -> Vec<String> {
    vec![
        row.workers_text(),
        row.mode_text(),
        row.share_text(),
        format_rate(row.base_figure),
        format_rate(row.new_figure),
        format_pct(row.change_pct, true),
        ci_text(row.change_ci_pct),
        p_text(row.p_value),
        row.verdict.words().to_string(),
    ]
}

/// The comparison table's columns: every dialect writes these, in this
/// order; the figures are named as what the change divides (`base mean ops/s`).
fn columns(confidence: f64, (kind, unit): (&str, &str)) -> [(String, Align); 9] {
    [
        ("workers".to_string(), Align::Right),
        ("mode".into(), Align::Left),
        ("share".into(), Align::Left),
        (format!("base {kind} {unit}"), Align::Right),
        (format!("new {kind} {unit}"), Align::Right),
        ("change".into(), Align::Right),
        (format!("{}% CI", trim(confidence * 100.0)), Align::Left),
        ("p".into(), Align::Right),
        ("verdict".into(), Align::Left),
    ]
}

/// What a workload group's figures are (`mean`, `geomean`) and their unit
/// (`figure` where its rows differ: see [`per_cpu_lines`]).
fn unit_of(c: &Comparison, condition: &Option<String>, workload: Workload) -> (String, String) {
    let mut rows = c.rows.iter().filter(|r| r.workload == workload && &r.condition == condition);
    let Some(first) = rows.next() else { return ("mean".into(), "ops/s".into()) };
    let unit = match rows.all(|r| r.unit == first.unit) {
        true => first.unit.clone(),
        false => "figure".to_string(),
    };
    (first.figure_kind.word().into(), unit)
}

/// Which paired rows were compared in ops per CPU-second, and why.
fn per_cpu_lines(rows: &[&Row]) -> Vec<String> {
    let at: Vec<String> = rows
        .iter()
        .filter(|r| r.per_cpu_when_busy)
        .map(|r| format!("{} {} x{}", r.mode_text(), r.share_text(), r.workers))
        .collect();
    match at.is_empty() {
        true => Vec::new(),
        false => vec![format!(
            "  in ops per CPU-second at {}: the machine was busy and the workers CPU-bound, so each round's ratio is \
             of what an op cost, not of the share of the CPUs other work left that slot (--no-auto-per-cpu: ops/s)",
            at.join(", ")
        )],
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Renders comparisons; `plots` adds a ministat dot plot of every point's
/// runs. No colour: the binary paints the verdicts of text already escaped
/// for the terminal ([`crate::escape::paint_verdicts`]).
pub fn render_comparisons(comparisons: &[Comparison], format: CompareFormat, plots: bool) -> String {
    match format {
        CompareFormat::Text => each(comparisons, |out, c| text(out, c, plots)),
        CompareFormat::Markdown => each(comparisons, markdown),
        CompareFormat::Json => crate::escape::json_pretty(comparisons).expect("comparisons serialize") + "\n",
    }
}

/// Every comparison written by `write`, a blank line between them.
fn each(comparisons: &[Comparison], write: impl Fn(&mut String, &Comparison)) -> String {
    let mut out = String::new();
    for (i, c) in comparisons.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write(&mut out, c);
    }
    out
}

/// The (condition, workload) groups, in row order.
fn workloads(c: &Comparison) -> Vec<(Option<String>, Workload)> {
    let mut list: Vec<(Option<String>, Workload)> = c.rows.iter().map(|r| (r.condition.clone(), r.workload)).collect();
    list.dedup();
    list
}

fn heading(condition: &Option<String>, workload: Workload) -> String {
    match condition {
        Some(condition) => format!("{workload} {condition}"),
        None => workload.to_string(),
    }
}

fn summary_line(c: &Comparison, condition: &Option<String>, workload: Workload) -> String {
    let s =
        c.summaries.iter().find(|s| s.workload == workload && &s.condition == condition).expect("a summary per table");
    let on = condition.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
    format!(
        "{workload}{on}: geometric mean of the rows' changes {} over {} point{} ({} better, {} worse)",
        format_pct(s.geomean_change_pct, true),
        s.points,
        if s.points == 1 { "" } else { "s" },
        s.better,
        s.worse
    )
}

/// What the flags to ministat's verdicts still lack, in words.
fn ministat_hint(c: &Comparison, test: &str) -> String {
    let missing: Vec<&str> = [
        (test != "student", "--test student"),
        (c.noise_threshold_pct > 0.0, "--noise-threshold 0"),
        (c.noise_veto, "--no-noise-veto"),
        (c.fdr, "--no-fdr"),
    ]
    .into_iter()
    .filter_map(|(lacking, flag)| lacking.then_some(flag))
    .collect();
    match (test, missing.is_empty()) {
        ("student", true) => " (ministat's verdicts)".to_string(),
        ("welch" | "student", false) => format!(" (ministat's verdicts: {})", missing.join(" ")),
        _ => String::new(),
    }
}

/// How many rounds the rows paired: `10 rounds at each point`, `5 to 50 rounds a point`.
fn rounds_paired(c: &Comparison) -> String {
    let counts: Vec<usize> = c.rows.iter().filter_map(|r| r.pairs).collect();
    match (counts.iter().min(), counts.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{lo} rounds at each point"),
        (Some(lo), Some(hi)) => format!("{lo} to {hi} rounds a point"),
        _ => "no rounds".to_string(),
    }
}

/// When a row is called better or worse: what this comparison promises.
fn verdict_rule(c: &Comparison, test: &str) -> String {
    let threshold = match c.noise_threshold_pct > 0.0 {
        true => format!(" and the interval lies beyond ±{}% (--noise-threshold)", trim(c.noise_threshold_pct)),
        false => String::new(),
    };
    let veto = match (c.noise_veto, test) {
        // Paired sides share the machine's noise, which cancels: there is no veto to turn off.
        (_, "paired") => "",
        (true, _) => "; too noisy where a side's runs drift, fall into two groups or ran busy",
        (false, _) => "; noise marks are shown but veto nothing (--no-noise-veto)",
    };
    let alpha = ((1.0 - c.confidence) * 1e6).round() / 1e6;
    let tested = c.rows.iter().filter(|r| r.p_value.is_some()).count();
    let p = match (c.fdr, tested) {
        (true, 2..) => format!(
            "q < {alpha} (p adjusted over the {tested} points, Benjamini–Hochberg: where none differs, chance calls \
             none of them {}% of the time; --no-fdr judges each alone)",
            trim(100.0 - 100.0 * alpha)
        ),
        _ => format!("p < {alpha}"),
    };
    format!("verdict: better or worse when {p}{threshold}{veto}")
}

fn text(out: &mut String, c: &Comparison, plots: bool) {
    let one_line = crate::escape::for_terminal;
    let _ = writeln!(out, "base: {}\nnew:  {}", one_line(&c.base), one_line(&c.new));
    let test = c.rows.first().map(|r| r.test.name()).unwrap_or("-");
    let confidence = trim(c.confidence * 100.0);
    let _ = match test {
        "paired" if c.rows.iter().any(|r| r.invocations.is_some()) => writeln!(
            out,
            "change: the geometric mean of the ratios of paired invocations' means new/base - 1, with its \
             {confidence}% t interval; p: paired t test on their log ratios (invocation k of each side paired: \
             what moved the machine between invocations cancels)"
        ),
        "paired" => writeln!(
            out,
            "change: the geometric mean of the rounds' ratios new/base - 1, with its {confidence}% t interval; \
             p: paired t test on the rounds' log ratios (the runs of round k of each side paired, {}: drift \
             between rounds cancels){}",
            rounds_paired(c),
            if c.noise_threshold_pct > 0.0 {
                ""
            } else {
                "; both sides ran in one invocation, so no noise threshold applies"
            }
        ),
        "hierarchical" => writeln!(
            out,
            "change: the ratio of the sides' means of invocation means - 1, with Fieller's {confidence}% interval on \
             those means; p: Welch's t test on the invocation means (the invocation is the unit: Kalibera and Jones)"
        ),
        _ => writeln!(
            out,
            "change: mean(new)/mean(base) - 1, with Fieller's {confidence}% confidence interval; p: {test} test on the runs' figures{}",
            ministat_hint(c, test)
        ),
    };
    let _ = writeln!(out, "{}", verdict_rule(c, test));
    for line in difference_lines(c) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = c.within_noise_note(&c.rows) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(note) = &c.invocations_note {
        let _ = writeln!(out, "{note}");
    }
    out.push('\n');
    for (fs, workload) in workloads(c) {
        let _ = writeln!(out, "{}", heading(&fs, workload));
        let (kind, unit) = unit_of(c, &fs, workload);
        let head = columns(c.confidence, (&kind, &unit));
        let head: Vec<(&str, Align)> = head.iter().map(|(h, a)| (h.as_str(), *a)).collect();
        let mut table = Table::new(&head);
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.workload == workload && r.condition == fs).collect();
        for row in &rows {
            table.row(cells(row));
        }
        let rendered = table.render();
        out.push_str(&rendered);
        for line in trend_lines(&rows).into_iter().chain(per_cpu_lines(&rows)) {
            let _ = writeln!(out, "{line}");
        }
        for line in noise_lines(&rows) {
            let _ = writeln!(out, "{line}");
        }
        for line in spread_lines(&rows).into_iter().chain(detect_lines(&rows, c.confidence)) {
            let _ = writeln!(out, "{line}");
        }
        for line in rows.iter().flat_map(|r| super::attribution::lines(r)) {
            let _ = writeln!(out, "  {line}");
        }
        for line in rows.iter().flat_map(|r| super::moved::lines(r, 1.0 - c.confidence)) {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(out, "{}\n", summary_line(c, &fs, workload));
        if plots {
            for row in rows {
                let _ = writeln!(out, "{}: x = base, + = new", row.point_words());
                let sets = [Dataset::from_values("base", &row.base_runs), Dataset::from_values("new", &row.new_runs)];
                out.push_str(&plot(&sets, 72, false));
                out.push('\n');
            }
        }
    }
    for line in super::attribution::hint_lines(c) {
        let _ = writeln!(out, "{line}");
    }
    if !c.unmatched.is_empty() {
        let _ = writeln!(out, "not compared: {}", c.unmatched.join(", "));
    }
}

/// What invocations could have found: the smallest change each point's
/// would find, and how many a side the change `--detect` asks about needs.
fn detect_lines(rows: &[&Row], confidence: f64) -> Vec<String> {
    let found: Vec<(&Row, &crate::compare::Detectable)> =
        rows.iter().filter_map(|r| Some((*r, r.detectable.as_ref()?))).collect();
    let Some((_, first)) = found.first() else { return Vec::new() };
    let each: Vec<String> = found
        .iter()
        .map(|(r, d)| format!("{} {} x{} ±{:.1}%", r.mode_text(), r.share_text(), r.workers, d.change_pct))
        .collect();
    let mut lines = vec![format!(
        "  could detect with {} invocations a side ({}% confidence, {:.0}% power, from their spread): {}",
        first.invocations,
        trim(confidence * 100.0),
        100.0 * crate::compare::DETECT_POWER,
        each.join(", ")
    )];
    if let Some((pct, _)) = first.wanted {
        let needs: Vec<String> = found
            .iter()
            .map(|(r, d)| {
                let n = d.wanted.and_then(|w| w.1).map_or_else(|| "over 1000".to_string(), |n| n.to_string());
                format!("{} {} x{} {n}", r.mode_text(), r.share_text(), r.workers)
            })
            .collect();
        lines.push(format!("  --detect {}%: invocations a side needed: {}", trim(pct), needs.join(", ")));
    }
    lines
}

/// Why a row is "too noisy", and noise on rows that are not called anyway.
fn noise_lines(rows: &[&Row]) -> Vec<String> {
    let noisy = rows.iter().filter_map(|r| {
        let why = r.noise.as_ref()?;
        Some(format!("  noise at {} {} x{}: {why}", r.mode_text(), r.share_text(), r.workers))
    });
    // A CPU quota is what a user may be comparing: said, and not taken for other work.
    let quota = rows.iter().filter_map(|r| {
        let words = r.throttled.as_ref()?;
        Some(format!(
            "  quota at {} {} x{}: {words}: the wait is the quota's, not other work's; its ops/s are judged as measured",
            r.mode_text(),
            r.share_text(),
            r.workers
        ))
    });
    // A workload defined differently: said once a table, as every row of it is.
    let defined = rows.iter().find_map(|r| r.defined_differently.as_ref());
    let defined = defined.map(|why| format!("  not comparable (--force): the sides defined it differently: {why}"));
    let threshold = rows.iter().filter_map(|r| {
        let t = r.threshold.as_ref()?;
        Some(format!("  threshold at {} {} x{}: {}", r.mode_text(), r.share_text(), r.workers, t.why))
    });
    defined.into_iter().chain(noisy).chain(quota).chain(threshold).collect()
}

/// What differs between the sides besides what was compared, a line each.
fn difference_lines(c: &Comparison) -> Vec<String> {
    c.differences
        .iter()
        .map(|d| {
            let defines: Vec<String> = d.defines.iter().map(|w| w.to_string()).collect();
            let note = match defines.is_empty() {
                true => String::new(),
                false => format!(" (defines {}: not comparable)", defines.join(", ")),
            };
            format!("differs: {}{note}", d.describe())
        })
        .collect()
}

/// Several invocations per side: each side's spread between invocations and
/// between the runs of one, as relative standard deviations.
fn spread_lines(rows: &[&Row]) -> Vec<String> {
    let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{:.1}%", 100.0 * v));
    rows.iter()
        .filter_map(|r| {
            let s = r.invocations?;
            Some(format!(
                "  spread at {} {} x{}: between invocations {} base, {} new; within one {} base, {} new ({} and {} invocations)",
                r.mode,
                r.share,
                r.workers,
                pct(s.base.between_rel_sd),
                pct(s.new.between_rel_sd),
                pct(s.base.within_rel_sd),
                pct(s.new.within_rel_sd),
                s.base.invocations,
                s.new.invocations
            ))
        })
        .collect()
}

/// Per series, the medians against workers as sparklines on one scale:
/// "  process/private  base ▃▆██  new ▂▄▅▅".
fn trend_lines(rows: &[&Row]) -> Vec<String> {
    let mut keys: Vec<(crate::vocab::Mode, crate::vocab::Share)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.mode, r.share)) {
            keys.push((r.mode, r.share));
        }
    }
    keys.into_iter()
        .filter_map(|(mode, share)| {
            let series: Vec<&&Row> = rows.iter().filter(|r| r.mode == mode && r.share == share).collect();
            if series.len() < 2 {
                return None;
            }
            let all: Vec<f64> = series.iter().flat_map(|r| [r.base_figure, r.new_figure]).collect();
            let max = all.iter().copied().fold(0.0, f64::max);
            let line = |pick: fn(&Row) -> f64| {
                let values: Vec<f64> = series.iter().map(|r| pick(r)).chain([max]).collect();
                let spark = sparkline(&values);
                spark.chars().take(series.len()).collect::<String>()
            };
            Some(format!("  {mode}/{share}  base {}  new {}", line(|r| r.base_figure), line(|r| r.new_figure)))
        })
        .collect()
}

fn markdown(out: &mut String, c: &Comparison) {
    // Every text from the documents is escaped: it cannot end a cell or a
    // row, or open HTML, in whatever renders the Markdown.
    let md = crate::escape::markdown_text;
    let _ = writeln!(out, "**base:** {}  \n**new:** {}\n", md(&c.base), md(&c.new));
    let test = c.rows.first().map(|r| r.test.name()).unwrap_or("-");
    let _ = writeln!(out, "{}\n", verdict_rule(c, test));
    for line in difference_lines(c) {
        let _ = writeln!(out, "- {}", md(line.trim_start_matches("differs: ")));
    }
    if !c.differences.is_empty() {
        out.push('\n');
    }
    for (fs, workload) in workloads(c) {
        let _ = writeln!(out, "### {}\n", md(&heading(&fs, workload)));
        let (kind, unit) = unit_of(c, &fs, workload);
        let head = columns(c.confidence, (&kind, &unit));
        let titles: Vec<&str> = head.iter().map(|(h, _)| h.as_str()).collect();
        let divider: Vec<&str> = head.iter().map(|(_, a)| if *a == Align::Right { "---:" } else { "---" }).collect();
        let _ = writeln!(out, "| {} |", titles.join(" | "));
        let _ = writeln!(out, "|{}|", divider.join("|"));
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.workload == workload && r.condition == fs).collect();
        for row in &rows {
            let _ = writeln!(out, "| {} |", cells(row).iter().map(|cell| md(cell)).collect::<Vec<_>>().join(" | "));
        }
        let notes = noise_lines(&rows).into_iter().chain(per_cpu_lines(&rows)).chain(spread_lines(&rows));
        for line in notes.chain(detect_lines(&rows, c.confidence)) {
            let _ = writeln!(out, "\n{}", md(line.trim_start()));
        }
        for row in &rows {
            let why = super::attribution::lines(row);
            if let Some((first, rest)) = why.split_first() {
                // A list: the sites and functions nested under their headings.
                let _ = writeln!(out, "\n{}\n", md(first));
                for line in rest {
                    let indent = if line.starts_with("    ") { "  " } else { "" };
                    let _ = writeln!(out, "{indent}- {}", md(line.trim_start()));
                }
            }
        }
        for row in &rows {
            let moved = super::moved::lines(row, 1.0 - c.confidence);
            if let Some((first, table)) = moved.split_first() {
                // The aligned table as a code block: its columns stay aligned.
                let _ = writeln!(out, "\n{}\n\n```", md(first));
                for line in table {
                    let _ = writeln!(out, "{}", line.trim_start_matches("  "));
                }
                let _ = writeln!(out, "```");
            }
        }
        let _ = writeln!(out, "\n{}\n", md(&summary_line(c, &fs, workload)));
    }
    if let Some(note) = c.within_noise_note(&c.rows) {
        let _ = writeln!(out, "{}\n", md(&note));
    }
    if let Some(note) = &c.invocations_note {
        let _ = writeln!(out, "{}\n", md(note));
    }
    let hint = super::attribution::hint_lines(c);
    if let Some((first, commands)) = hint.split_first() {
        let _ = writeln!(out, "{first}\n");
        for command in commands {
            let _ = writeln!(out, "    {}", command.trim_start());
        }
        out.push('\n');
    }
    if !c.unmatched.is_empty() {
        let _ = writeln!(out, "Not compared: {}", md(&c.unmatched.join(", ")));
    }
}
