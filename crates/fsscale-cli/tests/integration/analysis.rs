//! `fsscale compare` and `fsscale analyze` on results of real runs.

use fsscale::analyze::SeriesAnalysis;
use fsscale::compare::{Comparison, Verdict};
use fsscale::results::ResultsFile;

use crate::util::*;

/// Two real results files of the same plan.
fn two_runs() -> (TestEnv, std::path::PathBuf, std::path::PathBuf) {
    let env = TestEnv::new();
    let base = env.root.path().join("base.json");
    let new = env.root.path().join("new.json");
    let plan =
        ["stat", "creat-unlink", "-j", "1,2", "--share", "private", "-n", "4", "--duration", "0.05", "--warmup", "0"];
    run_each(&env, &plan, &[&base, &new]);
    (env, base, new)
}

/// Replaces each point's runs by its median times 0.99, 1.00, 1.01, 1.00.
fn steady(path: &std::path::Path) {
    let mut doc = ResultsFile::load(path).unwrap();
    for point in &mut doc.points {
        let median = point.summary.as_ref().unwrap().ops_per_s.median;
        for (run, factor) in point.runs.iter_mut().zip([0.99, 1.0, 1.01, 1.0]) {
            // A quiet machine, too: the runs carried what this one's other tests did to them.
            run.noise = None;
            run.ops_per_s = median * factor;
            run.ops_per_s_per_worker = run.ops_per_s / point.workers as f64;
            run.ops = (run.ops_per_s * run.elapsed_s) as u64;
        }
        point.summarize();
    }
    doc.save(path).unwrap();
}

/// Scales every run's throughput, as a regressed system would show.
fn scale(path: &std::path::Path, factor: f64) {
    let mut doc = ResultsFile::load(path).unwrap();
    for point in &mut doc.points {
        for run in &mut point.runs {
            run.ops = (run.ops as f64 * factor) as u64;
            run.ops_per_s *= factor;
            run.ops_per_s_per_worker *= factor;
        }
        point.summarize();
    }
    doc.save(path).unwrap();
}

#[test]
fn compare_matches_points_and_gates_regressions() {
    let (env, base, new) = two_runs();
    let out = fsscale().arg("compare").arg(&base).arg(&new).args(["--format", "json"]).output().unwrap();
    assert_success(&out);
    let comparisons: Vec<Comparison> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(comparisons.len(), 1);
    assert_eq!(comparisons[0].rows.len(), 4, "2 workloads x 2 worker counts");
    assert!(comparisons[0].rows.iter().all(|r| r.base_runs.len() == 4 && r.p_value.is_some()));

    // The gate is what is tested here, not this machine's noise: give every
    // point of the base a ±1% spread around its real median, then make the
    // new file a copy at a fifth of the throughput (80% worse everywhere).
    steady(&base);
    std::fs::copy(&base, &new).unwrap();
    scale(&new, 0.2);
    let gate =
        |pct: &str| fsscale().arg("compare").arg(&base).arg(&new).args(["--fail-if-worse", pct]).output().unwrap();
    let out = gate("10");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .starts_with("fsscale: 4 points are significantly worse by more than 10%: stat process private x1 -"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("worse"), "the table is still printed");
    // Worse by 80%, but not by more than 85%: the gate stays open.
    assert_eq!(gate("85").status.code(), Some(0));

    let out = fsscale().arg("compare").arg(&base).arg(&new).args(["--plot"]).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("stat process private x1: x = base, + = new"), "{text}");
    assert!(
        text.contains("stat: geometric mean of the rows' changes -80.0% over 2 points (0 better, 2 worse)"),
        "{text}"
    );
    // The new system at a fifth of the base: its sparkline sits at the bottom of the common scale.
    let trend = text.lines().find(|l| l.starts_with("  process/private  base ")).expect(&text);
    let new_bars = trend.rsplit("new ").next().unwrap();
    assert!(new_bars.chars().count() == 2 && new_bars.chars().all(|c| c == '▁' || c == '▂'), "{trend}");
    let verdicts = text.lines().filter(|l| l.ends_with("  worse")).count();
    assert_eq!(verdicts, 4, "{text}");

    let out = fsscale().arg("compare").arg(&base).arg(&new).args(["--format", "markdown"]).output().unwrap();
    assert!(stdout(&out)
        .contains("| workers | mode | share | base mean ops/s | new mean ops/s | change | 95% CI | p | verdict |"));

    // 2.5% faster with runs that agree to 1%: significant (p < 0.01), but the
    // interval reaches inside ±2%, by which two invocations can differ.
    std::fs::copy(&base, &new).unwrap();
    scale(&new, 1.025);
    let compared = |extra: &[&str]| {
        let out = fsscale().arg("compare").arg(&base).arg(&new).args(extra).output().unwrap();
        assert_success(&out);
        stdout(&out)
    };
    let verdicts = |extra: &[&str]| -> Vec<Verdict> {
        let json = compared(&[&["--format", "json"], extra].concat());
        let comparisons: Vec<Comparison> = serde_json::from_str(&json).unwrap();
        comparisons[0].rows.iter().map(|r| r.verdict).collect()
    };
    assert_eq!(verdicts(&[]), [Verdict::WithinNoise; 4]);
    assert_eq!(verdicts(&["--noise-threshold", "0"]), [Verdict::Better; 4], "the test's call alone");
    let text = compared(&[]);
    assert!(text.lines().filter(|l| l.ends_with("  within noise")).count() == 4, "{text}");
    assert!(
        text.contains(
            "\nwithin noise: significant, but its interval reaches inside ±2%, which two invocations of one system"
        ),
        "{text}"
    );
    assert!(
        text.contains("stat: geometric mean of the rows' changes +2.5% over 2 points (0 better, 0 worse)"),
        "{text}"
    );
    let markdown = compared(&["--format", "markdown"]);
    assert_eq!(
        markdown.matches("within noise: significant, but its interval reaches inside ±2%").count(),
        1,
        "{markdown}"
    );
    drop(env);
}

#[test]
fn compare_errors_are_clear() {
    let (env, base, _) = two_runs();
    let other = env.root.path().join("other.json");
    assert_success(
        &fsscale()
            .args(["run", "read", "-j", "1", "-n", "2", "--duration", "0.02", "--warmup", "0", "--dir"])
            .arg(&env.dir)
            .arg("-o")
            .arg(&other)
            .output()
            .unwrap(),
    );
    let out = fsscale().arg("compare").arg(&base).arg(&other).output().unwrap();
    assert_one_line_error(&out, "have no point in common");
    let out = fsscale().arg("compare").arg(&base).arg(&base).args(["--noise-threshold=-1"]).output().unwrap();
    assert_one_line_error(&out, "--noise-threshold -1 must be a percentage of 0 or more");
    let out = fsscale().arg("compare").arg(&base).arg(&base).args(["--fail-if-worse=-5"]).output().unwrap();
    assert_one_line_error(&out, "--fail-if-worse -5 must be a percentage of 0 or more (e.g. 5)");
    let out = fsscale().arg("compare").arg(&base).arg(env.root.path().join("missing.json")).output().unwrap();
    assert_one_line_error(&out, "reading results file");
    std::fs::write(env.root.path().join("junk.json"), "{}").unwrap();
    let out = fsscale().arg("compare").arg(&base).arg(env.root.path().join("junk.json")).output().unwrap();
    assert_one_line_error(&out, "is not an fsscale results file");
}

#[test]
fn analyze_fits_the_usl_to_a_real_sweep_and_refuses_short_ones() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "--share", "private", "-j", "1..4", "-n", "2"]);
    assert_success(&out);
    let line = stdout(&out).lines().find(|l| l.starts_with("  scaling process/private ")).map(String::from);
    // A fit, and a regime only where it is reliable (2 runs a point on a busy VM may not be).
    let shown = |l: &str| l.contains(": σ = ") || l.contains(": no reliable USL fit: ");
    assert!(line.as_deref().is_some_and(shown), "run shows the fit: {}", stdout(&out));
    let out = fsscale().arg("analyze").arg(&env.output).args(["--format", "json"]).output().unwrap();
    assert_success(&out);
    let series: Vec<SeriesAnalysis> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(series.len(), 1);
    let fit = series[0].fit.as_ref().expect("4 distinct worker counts fit");
    assert!(fit.lambda > 0.0 && fit.sigma >= 0.0 && fit.kappa >= 0.0);
    assert_eq!(fit.points, 8, "every run is an observation");
    assert_eq!(series[0].points.len(), 4);
    assert_eq!(series[0].points[0].speedup, Some(1.0));

    let short = TestEnv::new();
    assert_success(&short.run(&["stat", "--share", "private", "-j", "1,2,4"]));
    let out = fsscale().arg("analyze").arg(&short.output).output().unwrap();
    assert_success(&out);
    assert!(
        stdout(&out).contains("no USL fit: needs at least 4 distinct worker counts to fit λ, σ and κ, got 3 (1, 2, 4)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn analyze_csv_reproduces_the_specsdm91_fit() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("specsdm91.csv");
    std::fs::write(
        &csv,
        "load,throughput\n1,64.9\n18,995.9\n36,1652.4\n72,1853.2\n108,1828.9\n144,1775.0\n216,1702.2\n",
    )
    .unwrap();
    let out = fsscale().arg("analyze").arg("--csv").arg(&csv).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("USL: λ = 90 ± 14.21 ops/s, σ = 0.02773 ± 0.009122, κ = 0.0001044 ± 1.988e-05"), "{text}");
    assert!(text.contains("peak at N* = 96.52 (95% CI 71.57 to 121.5) workers"), "{text}");
    assert!(text.contains("coherency-bound (retrograde)"), "{text}");
    let out = fsscale().arg("analyze").arg("--csv").arg(&csv).args(["--format", "json"]).output().unwrap();
    let series: Vec<SeriesAnalysis> = serde_json::from_slice(&out.stdout).unwrap();
    let fit = series[0].fit.as_ref().unwrap();
    assert_eq!(format!("{:.3e} {:.3e} {:.3e}", fit.lambda, fit.sigma, fit.kappa), "9.000e1 2.773e-2 1.044e-4");
    assert_eq!(format!("{:.1}", fit.peak_workers.unwrap()), "96.5");

    std::fs::write(&csv, "1,10\n2,x\n").unwrap();
    let out = fsscale().arg("analyze").arg("--csv").arg(&csv).output().unwrap();
    assert_one_line_error(&out, "specsdm91.csv line 2: expected two numbers (N and throughput), got \"2,x\"");
    let out = fsscale().args(["analyze"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "needs results or --csv");
    assert!(matches!(Verdict::Worse.words(), "worse"));
}

#[test]
fn export_feeds_ministat_in_one_step() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1,2", "-n", "4"]));
    let export = |extra: &[&str]| {
        fsscale().arg("export").arg(&env.output).args(["--workload", "stat", "-j", "2"]).args(extra).output().unwrap()
    };
    // Two sharing levels at 2 workers: the choice is named.
    assert_one_line_error(&export(&[]), "has 2 such points; choose one with --share private or --share shared");
    let out = export(&["--share", "private"]);
    assert_success(&out);
    let text = stdout(&out);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("# stat process private x2: ops/s per run"), "{text}");
    let values: Vec<f64> = lines.map(|l| l.parse().unwrap()).collect();
    let doc = env.results();
    let point = doc.points.iter().find(|p| p.workers == 2 && p.share == fsscale::workloads::Share::Private).unwrap();
    assert_eq!(values, point.runs.iter().map(|r| r.ops_per_s).collect::<Vec<_>>());
    // ministat reads it as it is (the header is a comment).
    let file = env.root.path().join("runs.txt");
    std::fs::write(&file, &text).unwrap();
    let out = fsscale().args(["ministat", "-n"]).arg(&file).arg(&file).output().unwrap();
    assert_success(&out);
    assert!(stdout(&out).contains("x   4 "), "4 runs read: {}", stdout(&out));
    assert_one_line_error(
        &fsscale().arg("export").arg(&env.output).args(["--workload", "stat", "-j", "7"]).output().unwrap(),
        "has no stat point at 7 workers",
    );
    // Any run's figure: the system seconds the seeds compared, the run's time.
    let out = export(&["--share", "private", "--figure", "sys"]);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.starts_with("# stat process private x2: sys in s per run"), "{text}");
    let sys: Vec<f64> = text.lines().skip(1).map(|l| l.parse().unwrap()).collect();
    assert_eq!(sys, point.runs.iter().map(|r| r.worker_cpu.sys_s).collect::<Vec<_>>());
    let elapsed = stdout(&export(&["--share", "private", "--figure", "elapsed"]));
    assert_eq!(
        elapsed.lines().skip(1).map(|l| l.parse::<f64>().unwrap()).collect::<Vec<_>>(),
        point.runs.iter().map(|r| r.elapsed_s).collect::<Vec<_>>()
    );
    assert_one_line_error(
        &export(&["--share", "private", "--figure", "sync"]),
        "run 1 of that point has no sync figure",
    );
    assert_one_line_error(&export(&["--figure", "sys", "--format", "csv"]), "--figure sys goes with --format ministat");
}

#[test]
fn export_writes_csv_markdown_and_json_lines_and_run_pastes_markdown() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "-j", "1,2", "-n", "2", "--share", "private", "--format", "markdown"]);
    assert_success(&out);
    // `run --format markdown`: the GitHub table on stdout, a row per point.
    let table = stdout(&out);
    assert!(table.starts_with("| workload | mode | share | filesystem |"), "{table}");
    assert_eq!(table.lines().filter(|l| l.starts_with("| stat | process | private |")).count(), 2, "{table}");
    let doc = env.results();
    let export = |args: &[&str]| fsscale().arg("export").arg(&env.output).args(args).output().unwrap();
    // CSV: a header and a row per point, the medians as in the file.
    let out = export(&["--format", "csv"]);
    assert_success(&out);
    let text = stdout(&out);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
    assert_eq!(rows.len(), 3);
    for (row, point) in rows[1..].iter().zip(&doc.points) {
        assert_eq!(row[col("workers")], point.workers.to_string());
        let median: f64 = row[col("median")].parse().unwrap();
        assert_eq!(median, point.summary.as_ref().unwrap().ops_per_s.median);
    }
    // JSON lines per run, filtered to one point.
    let out = export(&["--format", "json-lines", "--runs", "-j", "2"]);
    assert_success(&out);
    let runs: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["workers"] == 2 && r["ops"].as_u64().unwrap() > 0));
    // `run --format json`: the results document itself.
    let out = env.run(&["stat", "-j", "1", "--share", "private", "--format", "json"]);
    assert_success(&out);
    // Read as any file is read (its summaries recomputed from its runs, where
    // the last bit of a ratio may differ from the run's own arithmetic).
    let printed = env.root.path().join("printed.json");
    std::fs::write(&printed, stdout(&out)).unwrap();
    assert_eq!(fsscale::results::ResultsFile::load(&printed).unwrap(), env.results());
    assert_one_line_error(&export(&[]), "give --workload and -j, or --format csv|markdown|json-lines");
}

#[test]
fn compare_between_pairs_two_sharing_levels_of_one_run_by_round() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "-j", "1,2", "-n", "3", "--share", "private,shared", "--duration", "0.05"]);
    assert_success(&out);
    let between = |args: &[&str]| fsscale().arg("compare").arg(&env.output).args(args).output().unwrap();
    let out = between(&["--between", "share=private,shared"]);
    assert_success(&out);
    let text = stdout(&out);
    let name = env.output.display().to_string();
    assert!(text.starts_with(&format!("base: {name} share=private\nnew:  {name} share=shared\n")), "{text}");
    assert!(text.contains("p: paired t test on the rounds' log ratios"), "{text}");
    // One row per worker count, each paired by its three rounds.
    assert_eq!(text.lines().filter(|l| l.contains("  process  private→shared  ")).count(), 2, "{text}");
    let out = between(&["--between", "share=private,shared", "--format", "json"]);
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = json[0]["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["test"] == "paired" && r["base_runs"].as_array().unwrap().len() == 3), "{json}");
    // What the file does not hold is named with what it does, in one line.
    assert_one_line_error(
        &between(&["--between", "share=private,same"]),
        "has no point with share same; its points have share private, shared",
    );
    assert_one_line_error(
        &between(&["--between", "workers=1,2"]),
        "'workers' is not a dimension; use fs, share, mode, cache",
    );
}

#[test]
fn compare_vs_takes_several_invocations_per_side_and_splits_their_spread() {
    let env = TestEnv::new();
    let files: Vec<std::path::PathBuf> =
        ["a1", "a2", "a3", "b1", "b2", "b3"].iter().map(|n| env.root.path().join(format!("{n}.json"))).collect();
    let refs: Vec<&std::path::Path> = files.iter().map(|p| p.as_path()).collect();
    run_each(&env, &["stat", "-j", "1", "-n", "3", "--share", "private", "--duration", "0.05"], &refs);
    // Real files, with figures set so that the verdict cannot hang on this
    // machine's load: invocations 2% apart, runs 1% apart, and the new
    // side's at half the rate.
    for (i, path) in files.iter().enumerate() {
        let level = 1e6 * (1.0 + 0.02 * (i % 3) as f64) * if i >= 3 { 0.5 } else { 1.0 };
        set_rates(path, &[0.99 * level, level, 1.01 * level]);
    }
    let compare = |args: &[&std::path::Path], extra: &[&str]| {
        let mut cmd = fsscale();
        cmd.arg("compare");
        cmd.arg(args[0]).arg(args[1]).arg(args[2]).arg("--vs").args(&args[3..]).args(extra);
        cmd.output().unwrap()
    };
    let out = compare(&refs, &["--format", "json"]);
    assert_success(&out);
    let comparisons: Vec<Comparison> = serde_json::from_slice(&out.stdout).unwrap();
    let c = &comparisons[0];
    assert_eq!(c.noise_threshold_pct, 0.0, "the spread between invocations is measured: no fixed threshold");
    assert_eq!(c.invocations_note, None);
    let row = &c.rows[0];
    assert_eq!((row.verdict, row.base_runs.len(), row.new_runs.len()), (Verdict::Worse, 9, 9));
    assert!((row.change_pct + 50.0).abs() < 1e-9, "{}", row.change_pct);
    let spread = row.invocations.unwrap();
    assert_eq!((spread.base.invocations, spread.new.invocations), (3, 3));
    // Runs 1% apart within each; invocations 2% apart, less the runs' share.
    let (between, within) = (spread.base.between_rel_sd.unwrap(), spread.base.within_rel_sd.unwrap());
    assert!((within - 0.01 / 1.02).abs() < 1e-3 && (between - 0.0194).abs() < 1e-3, "{spread:?}");
    let text = stdout(&compare(&refs, &[]));
    assert!(text.contains("p: Welch's t test on the invocation means"), "{text}");
    assert!(text.contains("  spread at process private x1: between invocations "), "{text}");
    // Run alternately, invocation k of each side pairs: every pair's ratio is 0.5 exactly.
    let out = compare(&refs, &["--test", "paired", "--format", "json"]);
    assert_success(&out);
    let comparisons: Vec<Comparison> = serde_json::from_slice(&out.stdout).unwrap();
    let row = &comparisons[0].rows[0];
    assert_eq!((row.test, row.verdict), (fsscale::stats::hypothesis::TestKind::Paired, Verdict::Worse));
    assert!((row.change_pct + 50.0).abs() < 1e-9 && row.invocations.is_some(), "{row:?}");
    assert!(stdout(&compare(&refs, &["--test", "paired"])).contains("invocation k of each side paired"));
    let mut uneven = fsscale();
    uneven.arg("compare").args(&refs[..3]).arg("--vs").args(&refs[3..5]).args(["--test", "paired"]);
    assert_one_line_error(&uneven.output().unwrap(), "needs as many files on each side, two or more (here 3 and 2)");
    // One file a side: the note says what is unknown and how to measure it.
    let out = fsscale().arg("compare").arg(refs[0]).arg(refs[3]).output().unwrap();
    assert_success(&out);
    assert!(
        stdout(&out).contains("invocations: one per side, so how much invocations differ is unknown"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn compare_says_what_differs_and_refuses_workloads_defined_differently() {
    let env = TestEnv::new();
    let (a, b) = (env.root.path().join("a.json"), env.root.path().join("b.json"));
    let common = ["untar", "stat", "-j", "1", "-n", "2", "--share", "private", "--duration", "0.05"];
    run_each(&env, &[&common[..], &["--scale", "0.002"]].concat(), &[&a]);
    run_each(&env, &[&common[..], &["--scale", "0.003", "--duration", "0.06"]].concat(), &[&b]);
    let out = fsscale().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_one_line_error(&out, "defined untar differently (tarball: generated, scale 0.002 seed 1: ");
    assert!(stderr(&out).contains("not comparable; --force compares them anyway"), "{}", stderr(&out));
    let out = fsscale().arg("compare").arg(&a).arg(&b).arg("--force").output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("differs: duration: 0.05 s → 0.06 s\n"), "{text}");
    assert!(text.contains("differs: tarball: generated, scale 0.002 seed 1: "), "{text}");
    assert!(text.contains("(defines untar: not comparable)"), "{text}");
    assert!(text.contains("  not comparable (--force): the sides defined it differently: tarball: "), "{text}");
    // stat's rows are comparable: no mark under its table.
    let stat_table = text.split("\nstat").nth(1).unwrap();
    assert!(!stat_table.split("\nuntar").next().unwrap().contains("not comparable"), "{text}");
}

#[test]
fn compare_lists_the_stats_that_moved_in_every_format() {
    let env = TestEnv::new();
    let (a, b) = (env.root.path().join("a.json"), env.root.path().join("b.json"));
    run_each(&env, &["stat", "-j", "1", "-n", "3", "--share", "private", "--duration", "0.05"], &[&a, &b]);
    // Planted, so that the verdict is the files', not the machine's: a
    // preempted 200 times a second, b 20,000 (as beside two hogs), and in b
    // a stat named by a stranger's file, which appeared. Counts follow each
    // run's own window, so per second they are what was planted.
    let hostile = "vmstat.<b>x</b>\u{1b}[31m";
    for (path, per_s, plant) in [(&a, 200.0, false), (&b, 20_000.0, true)] {
        let mut doc = ResultsFile::load(path).unwrap();
        for (i, run) in doc.points[0].runs.iter_mut().enumerate() {
            let count = |rate: f64| (rate * run.elapsed_s).round() as u64 + i as u64;
            for worker in &mut run.sched {
                worker.involuntary_switches = count(per_s);
            }
            if plant {
                let appeared = count(1e6) as i64;
                run.system_stats.insert(hostile.to_string(), appeared);
            }
        }
        std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
    }
    let compare = |extra: &[&str]| fsscale().arg("compare").arg(&a).arg(&b).args(extra).output().unwrap();
    let text = stdout(&compare(&[]));
    assert!(text.contains("stats that moved at process private x1"), "{text}");
    let switches =
        text.lines().find(|l| l.ends_with("workers.involuntary_switches per s")).unwrap_or_else(|| panic!("{text}"));
    assert!(switches.contains("+"), "{switches}");
    assert!(!text.contains('\u{1b}'), "no raw escape reaches the terminal: {text}");
    assert!(text.contains("vmstat.<b>x</b>"), "{text}");
    let markdown = stdout(&compare(&["--format", "markdown"]));
    assert!(markdown.contains("workers.involuntary_switches per s"), "{markdown}");
    let out = compare(&["--format", "json"]);
    let comparisons: Vec<Comparison> = serde_json::from_slice(&out.stdout).unwrap();
    let moved = &comparisons[0].rows[0].moved;
    assert_eq!(moved[0].stat, hostile, "what appeared comes first: {moved:?}");
    assert!(moved.iter().any(|m| m.stat == "workers.involuntary_switches" && m.per == "s"), "{moved:?}");
    let page = env.root.path().join("report.html");
    let out = fsscale().arg("report").arg(&a).arg(&b).arg("-o").arg(&page).output().unwrap();
    assert_success(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<table class=\"moved\">") && html.contains("workers.involuntary_switches per s"));
    assert!(html.contains("vmstat.&lt;b&gt;x&lt;/b&gt;") && !html.contains("<b>x</b>"), "escaped in the page");
}

#[test]
fn compare_says_a_dirsync_mount_differs() {
    if !needs_root("compare_says_a_dirsync_mount_differs") {
        return;
    }
    // dirsync is the superblock's flag: mountinfo shows it in the super options only.
    let (plain, dirsync) = (TmpfsMount::new("size=8m"), TmpfsMount::new("dirsync,size=8m"));
    let env = TestEnv::new();
    let (a, b) = (env.root.path().join("a.json"), env.root.path().join("b.json"));
    for (mount, output) in [(&plain, &a), (&dirsync, &b)] {
        let out = fsscale()
            .args(["run", "--warmup-max", "0", "creat-unlink", "-j", "1", "-n", "2", "--duration", "0.05", "--dir"])
            .arg(&mount.path)
            .arg("-o")
            .arg(output)
            .output()
            .unwrap();
        assert_success(&out);
    }
    let text = stdout(&fsscale().arg("compare").arg(&a).arg(&b).output().unwrap());
    let line = text.lines().find(|l| l.starts_with("differs: mount options: ")).unwrap_or_else(|| panic!("{text}"));
    let (before, after) = line.split_once(" → ").unwrap();
    assert!(!before.contains("dirsync") && after.contains("dirsync"), "{line}");
}

#[test]
fn labels_name_runs_in_compare_and_report_and_notes_are_kept() {
    let env = TestEnv::new();
    let (a, b) = (env.root.path().join("a.json"), env.root.path().join("b.json"));
    let run = |path: &std::path::Path, label: &str| {
        let args = ["stat", "-j", "1", "-n", "2", "--share", "private", "--duration", "0.05", "--label", label];
        run_each(&env, &[&args[..], &["--note", "pool-of-threads, thread_pool_size=2"]].concat(), &[path]);
    };
    run(&a, "one-thread-per-connection");
    run(&b, "pool-of-threads");
    let doc = ResultsFile::load(&b).unwrap();
    assert_eq!(doc.label.as_deref(), Some("pool-of-threads"));
    assert_eq!(doc.note.as_deref(), Some("pool-of-threads, thread_pool_size=2"));
    let out = fsscale().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_success(&out);
    assert!(stdout(&out).starts_with("base: one-thread-per-connection\nnew:  pool-of-threads\n"), "{}", stdout(&out));
    let html = env.root.path().join("r.html");
    assert_success(&fsscale().arg("report").arg(&a).arg(&b).arg("-o").arg(&html).output().unwrap());
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("<th>pool-of-threads</th>") && html.contains("thread_pool_size=2"), "labels and notes");
    let out = fsscale().args(["run", "stat", "--label", ""]).output().unwrap();
    assert_one_line_error(&out, "--label \"\": give a name of 1 to 64 characters on one line");
}
