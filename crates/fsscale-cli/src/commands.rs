//! What each subcommand does between parsing and printing.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::cli::{
    AnalyzeArgs, AnalyzeFormat, CompareArgs, ExportArgs, ExportFormatArg, PlotArgs, ReportArgs, WorkloadArg,
};
#[cfg(target_os = "linux")]
use crate::cli::{CleanupArgs, TreeArgs};
use fsscale::analyze::{analyze_pairs, analyze_results};
use fsscale::compare::{
    compare_between, compare_invocations, compare_using, regressions, Between, CompareConfig, Figure, PointThreshold,
    Verdict, DEFAULT_NOISE_THRESHOLD_PCT,
};
use fsscale::report::{render_analysis, render_comparisons, ExportFormat};
use fsscale::results::{ResultsFile, RunFigure};
use fsscale::stats::hypothesis::TestKind;
use fsscale::vocab::Cache;

/// `--fail-if-worse` found regressions: exit status 3, distinct from errors (1).
#[derive(Debug)]
pub struct Regressed(pub String);

impl std::fmt::Display for Regressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Regressed {}

fn label(path: &Path) -> String {
    path.display().to_string()
}

/// What a loaded results file is called: its `--label`, else its path.
fn name(path: &Path, doc: &ResultsFile) -> String {
    doc.label.clone().unwrap_or_else(|| label(path))
}

/// Loads a results file for analysis; a partial one (its run failed or was
/// interrupted, or points miss runs) is used with a warning on stderr, so
/// figures from it are never taken for whole ones.
fn load(path: &Path) -> Result<ResultsFile> {
    let doc = ResultsFile::load(path)?;
    for warning in doc.completeness_warnings() {
        eprintln!("fsscale: warning: {}: {warning}", path.display());
    }
    // Points without a single run: every command would print nothing and succeed.
    if !doc.points.is_empty() && doc.points.iter().all(|p| p.runs.is_empty()) {
        bail!(
            "{}: none of its {} points has a finished run, so there is nothing to show (status {}); \
             run it again",
            path.display(),
            doc.points.len(),
            doc.status.name()
        );
    }
    Ok(doc)
}

/// `option`'s value `pct` is a finite percentage of 0 or more (`example` shows one).
fn percentage_of_0_or_more(option: &str, pct: f64, example: u32) -> Result<()> {
    if !(pct.is_finite() && pct >= 0.0) {
        bail!("{option} {pct} must be a percentage of 0 or more (e.g. {example})");
    }
    Ok(())
}

/// `fsscale compare`: the rendered comparisons, the regressions that fail
/// `--fail-if-worse`, and warnings: points worse by more than its threshold
/// that were too noisy to call (the gate cannot judge them, so it says so).
pub fn compare_command(args: &CompareArgs) -> Result<(String, Option<Regressed>, Vec<String>)> {
    let between_text = args.between.clone().or_else(|| args.variants.as_ref().map(|v| format!("variant={v}")));
    let between = between_text.as_deref().map(Between::parse).transpose()?;
    let config = compare_config(args, between.as_ref())?;
    let base = load_workload(&args.base, args.workload.as_ref())?;
    if args.workload.is_some() && base.points.iter().all(|p| p.runs.is_empty()) {
        bail!(
            "-w: {} has no point of that workload with runs; `fsscale analyze {}` lists its points",
            label(&args.base),
            label(&args.base)
        );
    }
    let mut comparisons = Vec::new();
    if let (Some(between), Some(text)) = (&between, &between_text) {
        let c = compare_between(&base, &name(&args.base, &base), between, &config)?;
        if c.rows.is_empty() {
            bail!("--between {text}: no point of {} pairs with another on everything else", label(&args.base));
        }
        comparisons.push(c);
    }
    if !args.vs.is_empty() {
        comparisons.push(compare_sides(args, &config)?);
    }
    // One file a side, no threshold given: the history may know how much
    // each point's invocations differ on this host.
    let mut notices = Vec::new();
    let history = match (args.noise_threshold, args.no_history, args.vs.is_empty() && between.is_none()) {
        (None, false, true) => match crate::history_command::store_to_read(args.history_db.as_deref()) {
            Ok(store) => store,
            // A store named on the command line must open; the default one is a convenience.
            Err(e) if args.history_db.is_some() => return Err(e),
            Err(e) => {
                notices.push(format!("the history's thresholds are not used: {e:#}"));
                None
            }
        },
        _ => None,
    };
    for path in args.new.iter().filter(|_| args.vs.is_empty()) {
        comparisons.push(compare_file(args, &base, path, &config, history.as_ref())?);
    }
    if !args.force {
        refuse_different_work(&comparisons)?;
    }
    // Escaped for the terminal here, then painted: the colours are the only
    // escape sequences in what is printed (main prints it as it is).
    let text = fsscale::escape::for_output(&render_comparisons(&comparisons, args.format, args.plot)).into_owned();
    let text = match args.format == fsscale::report::CompareFormat::Text && use_color(args.no_color) {
        true => fsscale::escape::paint_verdicts(&text),
        false => text,
    };
    let regressed = args.fail_if_worse.and_then(|pct| regressed(&comparisons, pct));
    notices.extend(args.fail_if_worse.map(|pct| too_noisy_to_gate(&comparisons, pct)).unwrap_or_default());
    Ok((text, regressed, notices))
}

/// How `compare` judges, from its flags (checked here).
fn compare_config(args: &CompareArgs, between: Option<&Between>) -> Result<CompareConfig> {
    if !(args.confidence > 0.0 && args.confidence < 100.0) {
        bail!("--confidence {} is not a percentage between 0 and 100 (e.g. 95)", args.confidence);
    }
    if let Some(pct) = args.fail_if_worse {
        percentage_of_0_or_more("--fail-if-worse", pct, 5)?;
    }
    if let Some(pct) = args.noise_threshold {
        percentage_of_0_or_more("--noise-threshold", pct, 2)?;
    }
    // Sides of one file ran round by round: paired by round unless another test is asked for.
    let test = args.test.unwrap_or(if between.is_some() { TestKind::Paired } else { TestKind::Welch });
    Ok(CompareConfig {
        test,
        confidence: args.confidence / 100.0,
        figure: if args.per_cpu { Figure::OpsPerCpuSecond } else { Figure::Throughput },
        noise_threshold_pct: args
            .noise_threshold
            .unwrap_or_else(|| between.map_or(DEFAULT_NOISE_THRESHOLD_PCT, Between::default_noise_threshold_pct)),
        noise_veto: !args.no_noise_veto,
        detect_pct: args.detect,
        fdr: !args.no_fdr,
        auto_per_cpu: !args.no_auto_per_cpu,
        response: args.response,
    })
}

/// A results file with only the points of `-w`'s workloads: the others are
/// left out on every side of a comparison, as if not run.
fn load_workload(path: &std::path::Path, workload: Option<&WorkloadArg>) -> Result<ResultsFile> {
    let mut doc = load(path)?;
    if let Some(wanted) = workload {
        doc.points.retain(|p| wanted.includes(p.workload));
    }
    Ok(doc)
}

/// `compare BASE [NEW...] --vs FILE...`: invocations against invocations.
fn compare_sides(args: &CompareArgs, config: &CompareConfig) -> Result<fsscale::compare::Comparison> {
    let workload = args.workload.as_ref();
    let base_side = load_all(std::iter::once(&args.base).chain(&args.new), workload)?;
    let new_side = load_all(&args.vs, workload)?;
    if config.test == TestKind::Paired && (base_side.len() != new_side.len() || base_side.len() < 2) {
        bail!(
            "--test paired with --vs pairs invocation k of each side, so it needs as many files on each side, \
             two or more (here {} and {}); run them alternately (A1 B1 A2 B2 ...), or leave --test out",
            base_side.len(),
            new_side.len()
        );
    }
    let c = compare_invocations(&base_side, &new_side, config);
    if c.rows.is_empty() {
        bail!(
            "no point is in every file of both sides (same workload, mode, share and workers){}; nothing to compare",
            c.unmatched.first().map(|u| format!(", e.g. {u}")).unwrap_or_default()
        );
    }
    Ok(c)
}

/// `compare BASE NEW`: one file against another, each point's threshold
/// from the history's spread on their host where `history` has it.
fn compare_file(
    args: &CompareArgs,
    base: &ResultsFile,
    path: &std::path::Path,
    config: &CompareConfig,
    history: Option<&fsscale::history::Store>,
) -> Result<fsscale::compare::Comparison> {
    let new = load_workload(path, args.workload.as_ref())?;
    let same_host = base.host.hostname == new.host.hostname;
    let threshold_of = |point: &fsscale::results::Point| {
        let store = history.filter(|_| same_host)?;
        let compared = [base.run_id.as_deref().unwrap_or_default(), new.run_id.as_deref().unwrap_or_default()];
        let spread = fsscale::history::invocation_spread(store, base, point, &compared).ok()??;
        Some(PointThreshold { pct: spread.threshold_pct, why: spread.words() })
    };
    let c = compare_using(base, &new, &name(&args.base, base), &name(path, &new), config, &threshold_of);
    let without_cpu = |u: &String| u.contains("no worker CPU time recorded");
    if c.rows.is_empty() && !c.unmatched.is_empty() && c.unmatched.iter().all(without_cpu) {
        bail!(
            "{} and {} have points in common, but not the workers' CPU time --per-cpu divides by (e.g. {}); \
             compare without --per-cpu",
            label(&args.base),
            label(path),
            c.unmatched[0]
        );
    }
    if c.rows.is_empty() {
        bail!(
            "{} and {} have no point in common (same workload, mode, share and workers); nothing to compare",
            label(&args.base),
            label(path)
        );
    }
    Ok(c)
}

/// Points that measured different work (a workload defined differently)
/// are not compared without `--force`.
fn refuse_different_work(comparisons: &[fsscale::compare::Comparison]) -> Result<()> {
    for c in comparisons {
        if let Some(row) = c.not_comparable().next() {
            bail!(
                "{} and {} defined {} differently ({}): its points measured different work, so they are not \
                 comparable; --force compares them anyway",
                c.base,
                c.new,
                row.workload,
                row.defined_differently.as_deref().unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// `--fail-if-worse PCT`: the points called worse by more than PCT, as the gate's failure.
fn regressed(comparisons: &[fsscale::compare::Comparison], pct: f64) -> Option<Regressed> {
    let worse: Vec<String> = comparisons
        .iter()
        .flat_map(|c| {
            regressions(c, pct)
                .into_iter()
                .map(move |r| format!("{} {:+.1}% in {}", r.point_words(), r.change_pct, c.new))
        })
        .collect();
    (!worse.is_empty()).then(|| {
        Regressed(format!(
            "{} point{} significantly worse by more than {pct}%: {}",
            worse.len(),
            if worse.len() == 1 { " is" } else { "s are" },
            worse.join(", ")
        ))
    })
}

/// Points worse by more than PCT that were too noisy to call: the gate cannot judge them, so it says so.
fn too_noisy_to_gate(comparisons: &[fsscale::compare::Comparison], pct: f64) -> Vec<String> {
    comparisons
        .iter()
        .flat_map(|c| {
            c.rows.iter().filter(move |r| r.verdict == Verdict::TooNoisy && r.worse_by_more_than(pct)).map(move |r| {
                format!(
                    "{} {} {} x{} is {:+.1}% in {} but too noisy to call ({}); --fail-if-worse cannot judge it: \
                     rerun on a quiet machine",
                    r.workload,
                    r.mode,
                    r.share,
                    r.workers,
                    r.change_pct,
                    c.new,
                    r.noise.as_deref().unwrap_or("noisy")
                )
            })
        })
        .collect()
}

pub fn analyze_command(args: &AnalyzeArgs) -> Result<String> {
    let mut curves = String::new();
    let series = match &args.csv {
        Some(path) => {
            // A regular file of bounded size, never waited on: as every input is read.
            let text = fsscale::sys::read_input(path, fsscale::analyze::MAX_PAIRS_BYTES)
                .map_err(|e| anyhow::anyhow!("reading {}: {e:#}", path.display()))?;
            let pairs = fsscale::analyze::parse_pairs(&text, &label(path))?;
            vec![analyze_pairs(&label(path), &pairs)]
        }
        None => {
            let mut all = Vec::new();
            for path in &args.results {
                let doc = load(path)?;
                curves.push_str(&fsscale::report::open_loop::render_curves(&label(path), &doc));
                let mut series = analyze_results(&doc);
                if args.results.len() > 1 {
                    for s in &mut series {
                        s.label = format!("{}: {}", label(path), s.label);
                    }
                }
                all.extend(series);
            }
            all
        }
    };
    Ok(match args.format {
        AnalyzeFormat::Json => fsscale::escape::json_pretty(&series)? + "\n",
        // Open loops' curves of response time against rate (text only: the JSON is the series' array).
        AnalyzeFormat::Text => render_analysis(&series) + &curves,
    })
}

/// Colour only on a terminal, and never with --no-color or NO_COLOR set (no-color.org).
fn use_color(no_color: bool) -> bool {
    let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
    tty && !no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Each file loaded (only `workload`'s points, where given), with its name (see [`name`]).
fn load_all<'a>(
    paths: impl IntoIterator<Item = &'a PathBuf>,
    workload: Option<&WorkloadArg>,
) -> Result<Vec<(String, ResultsFile)>> {
    paths
        .into_iter()
        .map(|p| {
            let doc = load_workload(p, workload)?;
            Ok((name(p, &doc), doc))
        })
        .collect()
}

/// `fsscale report`: writes the HTML file, returns the line saying where.
pub fn report_command(args: &ReportArgs) -> Result<String> {
    if args.history {
        let html = crate::history_command::history_report(&args.store, &args.series, &args.search)?;
        fsscale::atomic_file::write(&args.output, html.as_bytes())?;
        return Ok(format!("report: {}\n", args.output.display()));
    }
    if args.store.history_db.is_some() {
        bail!("--history-db names the store `report --history` draws; add --history, or drop --history-db");
    }
    let files = load_all(&args.results, None)?;
    let between: Vec<Between> = args.between.iter().map(|b| Between::parse(b)).collect::<Result<_, _>>()?;
    let html = fsscale::report::render_html(&files, &between);
    fsscale::atomic_file::write(&args.output, html.as_bytes())?;
    Ok(format!("report: {}\n", args.output.display()))
}

/// `fsscale plot`: one workload's scaling chart as SVG or PNG.
pub fn plot_command(args: &PlotArgs) -> Result<String> {
    let WorkloadArg::One(workload) = args.workload else {
        bail!("--workload takes one workload name, not all");
    };
    let files = load_all(&args.results, None)?;
    let svg = match fsscale::report::open_loop::curve_chart(&files, workload) {
        // Open loops: response time against the rate asked, each curve's knee ringed.
        Some(svg) => svg,
        None => scaling_svg(&files, workload, args)?,
    };
    let ext = args.output.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let bytes = match ext.as_str() {
        "svg" => svg.into_bytes(),
        "png" => fsscale::report::chart::svg_to_png(&svg)?,
        _ => bail!("-o {}: use a .svg or .png file name", args.output.display()),
    };
    fsscale::atomic_file::write(&args.output, &bytes)?;
    Ok(format!("chart: {}\n", args.output.display()))
}

/// Throughput against workers, for `plot`.
fn scaling_svg(files: &[(String, ResultsFile)], workload: fsscale::vocab::Workload, args: &PlotArgs) -> Result<String> {
    let analyses: Vec<_> = files.iter().map(|(_, d)| analyze_results(d)).collect();
    let (series, _) = fsscale::report::workload_series(files, &analyses, workload);
    if series.is_empty() {
        bail!("no results of {workload} in {}", args.results.iter().map(|p| label(p)).collect::<Vec<_>>().join(", "));
    }
    let y = fsscale::report::figure_label(files, workload);
    Ok(fsscale::report::chart::scaling_chart(
        &format!("{workload}: throughput"),
        &y,
        &series,
        fsscale::report::higher_is_better(files, workload),
    ))
}

/// `fsscale tree`: returns the summary line.
#[cfg(target_os = "linux")]
pub fn tree_command(args: &TreeArgs) -> Result<String> {
    let spec = fsscale::tree::TreeSpec { scale: args.scale, seed: args.seed };
    spec.validate()?;
    let (stats, target) = match (&args.dir, &args.tar) {
        (Some(dir), _) => (fsscale::tree::write_dir(&spec, dir)?, dir),
        (None, Some(tar)) => (fsscale::tree::write_tar_file(&spec, tar)?, tar),
        (None, None) => unreachable!("clap requires --dir or --tar"),
    };
    Ok(format!(
        "{}: {} files, {} directories, {} symlinks, {} hard links, {:.1} MB of file data (scale {}, seed {})\n",
        target.display(),
        stats.files,
        stats.dirs,
        stats.symlinks,
        stats.hardlinks,
        stats.bytes as f64 / 1e6,
        args.scale,
        args.seed
    ))
}

/// `fsscale cleanup`: the text to print and how many leftovers it refused.
#[cfg(target_os = "linux")]
pub fn cleanup_command(args: &CleanupArgs) -> Result<(String, usize)> {
    let done = fsscale::cleanup::cleanup(&args.scratch, &crate::cli::cache_dir())?;
    let mut text = String::new();
    for line in done.filesystems.removed.iter().chain(&done.other_removed) {
        text += &format!("{line}\n");
    }
    for path in &done.scratch_removed {
        text += &format!("removed scratch directory {}\n", path.display());
    }
    for dead in &done.scratch_left {
        let pid = dead.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        let parent = dead.path.parent().map(|p| p.display().to_string()).unwrap_or_default();
        text += &format!(
            "left by a killed run{pid}: scratch directory {}; remove it with `fsscale cleanup --scratch {parent}`\n",
            dead.path.display()
        );
    }
    for (file, variant) in &done.variants_in_effect {
        text += &format!(
            "left by a killed run: --variant {}'s setup ran and its teardown did not (results file {}): it may \
             still be in effect; undo it by hand\n",
            fsscale::escape::for_terminal(variant),
            fsscale::escape::for_terminal(&file.display().to_string())
        );
    }
    let refused: Vec<&String> = done.filesystems.refused.iter().chain(&done.scratch_refused).collect();
    for line in &refused {
        text += &format!("refused: {line}\n");
    }
    if done.filesystems.live > 0 {
        text += &format!("left alone: {} filesystem(s) of runs still going\n", done.filesystems.live);
    }
    for held in &done.other_held {
        text += &format!("left alone: {held}\n");
    }
    if text.is_empty() {
        text = "nothing to clean up\n".to_string();
    }
    Ok((text, refused.len()))
}

/// `fsscale export`: the runs' figures of one point, one a line, in the
/// point's unit (what `ministat` reads); a header comment names the point.
pub fn export_command(args: &ExportArgs) -> Result<String> {
    let mut doc = load(&args.results)?;
    let format = match args.format {
        ExportFormatArg::Ministat => None,
        ExportFormatArg::Csv => Some(ExportFormat::Csv),
        ExportFormatArg::Markdown => Some(ExportFormat::Markdown),
        ExportFormatArg::JsonLines => Some(ExportFormat::JsonLines),
    };
    if format.is_some() && args.figure != RunFigure::Rate {
        bail!("--figure {} goes with --format ministat (the other formats have a column for each figure)", args.figure);
    }
    if let Some(variant) = &args.variant {
        refuse_unknown_variant(&doc, variant, &args.results)?;
    }
    if let Some(format) = format {
        doc.points.retain(|p| {
            args.workload.is_none_or(|w| p.workload == w)
                && args.workers.is_none_or(|n| p.workers == n)
                && export_wanted(args, p)
        });
        return Ok(fsscale::report::export(&doc, format, args.runs));
    }
    if args.runs {
        bail!("--runs goes with --format csv, markdown or json-lines (ministat's lines are per run already)");
    }
    let point = the_point_to_export(args, &doc)?;
    let mut text = format!(
        "# {} {} {} x{}{}: {}{} per run ({})\n",
        point.workload,
        point.mode,
        point.share,
        point.workers,
        point.condition().map(|c| format!(" {c}")).unwrap_or_default(),
        if args.figure == RunFigure::Rate { String::new() } else { format!("{} in ", args.figure) },
        args.figure.unit(&point.unit()),
        args.results.display()
    );
    for (i, run) in point.runs.iter().enumerate() {
        let Some(value) = args.figure.of(run) else {
            bail!(
                "run {} of that point has no {} figure (sync: fixed work only; runq and asleep: where the \
                 scheduler's figures were read); choose another --figure",
                i + 1,
                args.figure
            );
        };
        text += &format!("{value}\n");
    }
    Ok(text)
}

/// `--variant NAME` that `doc` did not run, refused with the ones it did.
fn refuse_unknown_variant(doc: &ResultsFile, variant: &str, path: &std::path::Path) -> Result<()> {
    if doc.points.iter().any(|p| p.variant.as_deref() == Some(variant)) {
        return Ok(());
    }
    let names: Vec<&str> = doc.settings.variants.iter().map(|v| v.name.as_str()).collect();
    bail!(
        "--variant {}: {} has no such variant{}",
        fsscale::escape::shell_word(variant),
        path.display(),
        match names.is_empty() {
            true => " (it ran none)".to_string(),
            false => format!("; it has {}", names.join(", ")),
        }
    )
}

/// The options every export format filters points by.
fn export_wanted(args: &ExportArgs, p: &fsscale::results::Point) -> bool {
    args.mode.is_none_or(|m| p.mode == m)
        && args.share.is_none_or(|s| p.share == s)
        && args.fs.as_ref().is_none_or(|f| p.fs.as_ref() == Some(f))
        && args.cache.is_none_or(|c| p.cache.unwrap_or(Cache::Warm) == c)
        && args.variant.as_ref().is_none_or(|v| p.variant.as_ref() == Some(v))
}

/// The one point `export` for ministat prints: `--workload` and `-j` with
/// the other options; several that match are refused with the options that
/// tell them apart.
fn the_point_to_export<'a>(args: &ExportArgs, doc: &'a ResultsFile) -> Result<&'a fsscale::results::Point> {
    let (Some(workload), Some(workers)) = (args.workload, args.workers) else {
        bail!(
            "export for ministat prints one point's runs: give --workload and -j, or --format csv|markdown|json-lines \
             for every point"
        );
    };
    let matching: Vec<&fsscale::results::Point> = doc
        .points
        .iter()
        .filter(|p| p.workload == workload && p.workers == workers && export_wanted(args, p))
        .collect();
    // Each match by the options that tell the matches apart, and only those.
    let options = |p: &fsscale::results::Point| -> Vec<String> {
        let word = fsscale::escape::shell_word;
        vec![
            format!("--mode {}", p.mode),
            format!("--share {}", p.share),
            p.fs.as_ref().map_or_else(String::new, |f| format!("--fs {}", word(f))),
            p.cache.map_or_else(String::new, |c| format!("--cache {c}")),
            p.variant.as_ref().map_or_else(String::new, |v| format!("--variant {}", word(v))),
        ]
    };
    let differ: Vec<usize> =
        (0..5).filter(|&i| matching.iter().any(|p| options(p)[i] != options(matching[0])[i])).collect();
    let describe = |p: &fsscale::results::Point| {
        let all = options(p);
        differ.iter().map(|&i| all[i].clone()).filter(|o| !o.is_empty()).collect::<Vec<_>>().join(" ")
    };
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => bail!(
            "{} has no {} point at {} workers with those options; `fsscale analyze {}` lists its points",
            args.results.display(),
            workload,
            workers,
            args.results.display()
        ),
        many => bail!(
            "{} has {} such points; choose one with {}",
            args.results.display(),
            many.len(),
            many.iter().map(|p| describe(p)).collect::<Vec<_>>().join(" or ")
        ),
    }
}
