//! The history: runs recorded as they end, a planted step found with its
//! revision and cause, concurrent writers, and `git bisect run` with the gate.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::report::load_in_chromium;
use crate::util::*;

fn history(db: &Path, args: &[&str]) -> std::process::Output {
    fsscale().arg("history").args(args).arg("--history-db").arg(db).output().unwrap()
}

#[test]
fn runs_with_a_planted_slowdown_are_found_at_its_revision_with_the_cause() {
    if !needs_root("the history of profiled runs") {
        return;
    }
    let env = TestEnv::new();
    let db = env.root.path().join("history.sqlite");
    // Eight revisions of a program; from r6 on it sleeps 150 ms instead of
    // 60, in a series as short as one a step can be told in (5 before, 3
    // after: each result's runs judge it). The runs and their profiles are
    // real; the figures recorded are set to what the sleeps make on a quiet
    // machine, with a spread of their own (what a sleep takes beside other
    // work is not this test's to judge).
    let program = env.root.path().join("work.sh");
    let cmd = format!("sh {}", program.display());
    for rev in 1..=8 {
        std::fs::write(&program, if rev >= 6 { "sleep 0.15\n" } else { "sleep 0.06\n" }).unwrap();
        let rev_name = format!("r{rev}");
        let mut args = vec!["command", "--cmd", &cmd, "-j", "1", "-n", "3", "--rev", &rev_name];
        // Profiled around the step only (loading the programs is most of a run here).
        if (5..=6).contains(&rev) {
            args.extend(["--profile", "offcpu"]);
        }
        assert_success(&env.run(&args));
        let file = env.root.path().join(format!("r{rev}.json"));
        std::fs::copy(&env.output, &file).unwrap();
        let per_s = if rev >= 6 { 1.0 / 0.15 } else { 1.0 / 0.06 };
        let jitter = [1.0, 1.01, 0.99];
        set_rates(&file, &jitter.map(|j| j * per_s * (1.0 + 0.002 * (rev % 3) as f64)));
        if rev == 6 {
            // Begun in r5's second, as quick runs are: results are timed to the second.
            let mut doc = fsscale::results::ResultsFile::load(&file).unwrap();
            doc.started_at = fsscale::results::ResultsFile::load(&env.root.path().join("r5.json")).unwrap().started_at;
            doc.save(&file).unwrap();
        }
        let out = history(&db, &["add", file.to_str().unwrap()]);
        assert_success(&out);
    }
    let out = history(&db, &["changes"]);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("command process private x1: -"), "{text}");
    assert!(text.contains("(worse) from result 6 on: rev r6, kernel "), "{text}");
    assert!(text.contains("  before: ") && text.contains(" results; after: "), "{text}");
    assert!(text.contains("(95% interval of the ratio), p = 0.0"), "{text}");
    assert!(text.contains("why, from the profiles of r5 and r6 (before → after"), "{text}");
    // The sites listed are those whose share of the worker's time moved most:
    // the sleep's grows a few points (the shell's own time is the rest), which
    // beside a memory hog other sites' noise outranked once. Its stacks are
    // all in the differential flame graph, below.
    assert!(text.contains("  asleep: "), "{text}");
    assert!(
        text.contains(
            "1 step in 1 series: 1 worse, 0 better; held to a false discovery rate of 1% across the 1 series searched"
        ),
        "{text}"
    );
    // The alert: a step to worse after r5, none after r6.
    let out = history(&db, &["changes", "--since", "r5"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 step to worse since r5"), "{}", stdout(&out));
    assert!(
        stderr(&out).starts_with("fsscale: 1 step to worse since r5: command process private x1 on "),
        "{}",
        stderr(&out)
    );
    let out = history(&db, &["changes", "--since", "r6"]);
    assert_success(&out);
    assert!(stdout(&out).contains("no step to worse since r6"), "{}", stdout(&out));
    assert_one_line_error(&history(&db, &["changes", "--since", "r99"]), "--since r99: no result of that revision");
    // The series, with its step where `changes` put it.
    let out = history(&db, &["show", "-w", "command"]);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("command process private x1 on "), "{text}");
    let row6 = text.lines().find(|l| l.trim_start().starts_with("6 ")).unwrap_or_else(|| panic!("{text}"));
    assert!(row6.contains(" r6 ") && row6.contains("step -"), "{row6}");
    assert_eq!(text.lines().filter(|l| l.contains("step ")).count(), 1, "{text}");
    // JSON carries the same step.
    let out = history(&db, &["changes", "--format", "json", "--since", "2000-01-01"]);
    assert_eq!(out.status.code(), Some(3));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["schema"], "fsscale-history-changes/1");
    assert_eq!((json["searched"].as_u64(), json["significance"].as_f64()), (Some(1), Some(0.01)));
    assert_eq!(json["series"][0]["changes"][0]["index"], 5);
    assert_eq!(json["series"][0]["changes"][0]["improved"], false);
    // The five results before the step are its level, less any outlier (a
    // profiled run beside the step may be one): none is lost or misplaced.
    let step = &json["series"][0]["changes"][0];
    let outliers_before =
        json["series"][0]["outliers"].as_array().unwrap()[..5].iter().filter(|o| o.as_bool() == Some(true)).count();
    assert_eq!(step["before"]["results"].as_u64().unwrap() as usize + outliers_before, 5, "{step}");
    assert_eq!(json["worse_since"][0]["rev"], "r6");
    // The report draws it, with the differential flame graph under the step.
    let page = env.root.path().join("history.html");
    let out = fsscale().args(["report", "--history", "--history-db"]).arg(&db).arg("-o").arg(&page).output().unwrap();
    assert_success(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2 id=\"series-1\">command process private x1 on "), "series heading");
    assert!(html.contains("stroke-dasharray=\"5,4\"") && html.contains(">step 1: -"), "the step drawn");
    assert!(html.contains("r6 against r5, differential"), "the differential flame graph");
    assert!(html.contains("nanosleep"), "the sleep's stack in the off-CPU differential flame graph");
    load_in_chromium(&env, &page);
}

/// `n` copies of the results file at `template`, each its own run (id and start).
fn copies(template: &Path, dir: &Path, n: usize) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(template).unwrap();
    (0..n)
        .map(|i| {
            let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            doc["run_id"] = format!("copy-{i:04}").into();
            doc["started_at"] = format!("2026-11-{:02}T{:02}:{:02}:00Z", 1 + i / 1440, i / 60 % 24, i % 60).into();
            let path = dir.join(format!("copy-{i:04}.json"));
            std::fs::write(&path, doc.to_string()).unwrap();
            path
        })
        .collect()
}

#[test]
fn writers_adding_at_once_lose_nothing_and_never_see_a_lock() {
    let env = TestEnv::new();
    writers_at_once(&env, &env.root.path().join("shared.sqlite"));
}

/// Processes standing in for a lab's hosts, all adding to one server's store at once.
#[test]
fn writers_adding_to_a_postgresql_store_at_once_lose_nothing() {
    let Some(database) = postgres_test_database("a shared PostgreSQL store") else { return };
    let env = TestEnv::new();
    writers_at_once(&env, Path::new(&database.url));
}

fn writers_at_once(env: &TestEnv, db: &Path) {
    // The template's point (stat process private x1) is the runs' own point too: one series.
    assert_success(&env.run(&["stat", "-j", "1", "--share", "private", "-n", "2"]));
    let files = copies(&env.output, env.root.path(), 160);
    // Eight writers of 20 files each, and two more adding the first 40 again.
    let mut children: Vec<_> = files
        .chunks(20)
        .chain([&files[..40], &files[..40]])
        .map(|chunk| {
            fsscale()
                .args(["history", "add", "--history-db"])
                .arg(db)
                .args(chunk)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // And three runs finishing at about the same time, each recording itself.
    children.extend((0..3).map(|i| {
        fsscale()
            .args([
                "run",
                "stat",
                "-j",
                "1",
                "--share",
                "private",
                "-n",
                "1",
                "--duration",
                "0.05",
                "--warmup-runs",
                "0",
            ])
            .args(["--history", "--history-db"])
            .arg(db)
            .arg("--dir")
            .arg(&env.dir)
            .arg("-o")
            .arg(env.root.path().join(format!("run-{i}.json")))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }));
    let outputs: Vec<_> = children.drain(..).map(|c| c.wait_with_output().unwrap()).collect();
    let mut recorded = 0;
    for out in &outputs {
        assert_success(out);
        assert!(!stderr(out).contains("locked"), "{}", stderr(out));
        recorded += stdout(out).lines().filter(|l| l.starts_with("recorded ")).count();
        recorded += stderr(out).lines().filter(|l| l.starts_with("history: recorded in ")).count();
    }
    assert_eq!(recorded, 163, "each file and run recorded exactly once");
    let out = history(db, &["show", "--format", "json", "--last", "1000"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["results"].as_array().unwrap().len(), 163);
}

#[test]
fn bad_history_input_is_one_line_naming_the_fix() {
    let env = TestEnv::new();
    let missing = env.root.path().join("none.sqlite");
    let out = history(&missing, &["show"]);
    assert_one_line_error(&out, "no history store at");
    let out = history(&missing, &["changes", "--significance", "0.7"]);
    assert_one_line_error(&out, "--significance 0.7: give a probability above 0 and below 0.5");
    let out = history(&missing, &["changes", "--min-segment", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!missing.exists(), "a query makes no store");
    let json = env.root.path().join("results.json");
    std::fs::write(&json, "{\"not\": \"a store\"}\n".repeat(20)).unwrap();
    let out = history(&json, &["changes"]);
    assert_one_line_error(&out, "is not a history store (not an SQLite database); give --history-db another path");
    let db = env.root.path().join("h.sqlite");
    let out = history(&db, &["add", json.to_str().unwrap()]);
    assert_one_line_error(&out, "is not an fsscale results file");
    // The gate that cannot judge stops the bisection (128), never says "bad".
    let out = fsscale().args(["gate", "--good"]).arg(&missing).args(["--results"]).arg(&json).output().unwrap();
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(stderr(&out).contains("the bisection stops"), "{}", stderr(&out));
    let out = fsscale().args(["gate", "--good", "x.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(128), "a usage error: {}", stderr(&out));
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn git_bisect_run_with_the_gate_names_the_commit_that_slowed_down() {
    let has_git = Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success());
    if !prerequisite(has_git, "git bisect with the gate", "no git (.ci/run installs it)") {
        return;
    }
    let env = TestEnv::new();
    let repo = env.root.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    // Sixteen commits; from the eleventh the program measured reports a
    // third of the figure. It reports its own figure, spread by its PID, so
    // no load on the machine makes, hides or blurs the slowdown.
    let mut commits = Vec::new();
    for n in 1..=16 {
        let level = if n >= 11 { "330 + $$ % 13" } else { "1000 + $$ % 40" };
        std::fs::write(repo.join("work.sh"), format!("echo \"figure $(({level}))\"\n")).unwrap();
        std::fs::write(repo.join("n"), format!("{n}\n")).unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", &format!("commit {n}")]);
        commits.push(git(&repo, &["rev-parse", "HEAD"]).trim().to_string());
    }
    let cmd = format!("sh {}", repo.join("work.sh").display());
    let dir = env.dir.to_str().unwrap().to_string();
    let run_args = [
        "command",
        "--cmd",
        &cmd,
        "--metric",
        "figure (\\d+)",
        "--higher-is-better",
        "-j",
        "1",
        "-n",
        "5",
        "--warmup-runs",
        "0",
        "-q",
        "--dir",
        &dir,
    ];
    let measure = |commit: &str, output: &Path| {
        git(&repo, &["checkout", "-q", commit]);
        let out = fsscale().arg("run").args(run_args).arg("-o").arg(output).output().unwrap();
        assert_success(&out);
    };
    let (good, bad) = (env.root.path().join("good.json"), env.root.path().join("bad.json"));
    measure(&commits[0], &good);
    measure(&commits[15], &bad);
    git(&repo, &["bisect", "start", &commits[15], &commits[0]]);
    let out = Command::new("git")
        .args(["bisect", "run", env!("CARGO_BIN_EXE_fsscale"), "gate", "--good"])
        .arg(&good)
        .arg("--bad")
        .arg(&bad)
        .arg("--")
        .args(run_args)
        .current_dir(&repo)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains(&format!("{} is the first bad commit", commits[10])), "{text}\n{}", stderr(&out));
    assert!(stderr(&out).contains("this revision: bad") && stderr(&out).contains("this revision: good"));
    git(&repo, &["bisect", "reset"]);
    assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
}

#[test]
fn compare_takes_its_threshold_from_how_much_the_points_invocations_differ_in_the_history() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "--share", "private", "-n", "5"]));
    let (base, new) = (env.root.path().join("base.json"), env.root.path().join("new.json"));
    // Two invocations 10% apart, each tight: alone, compare calls it worse.
    for (path, level, id) in [(&base, 100_000.0, "base-run"), (&new, 90_000.0, "new-run")] {
        std::fs::copy(&env.output, path).unwrap();
        set_rates(path, &[level, level * 1.001, level * 0.999, level * 1.002, level * 0.998]);
        let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        doc["run_id"] = id.into();
        std::fs::write(path, doc.to_string()).unwrap();
    }
    // The history: eight earlier invocations of the point on this host, 10% apart in turn.
    let files = copies(&base, env.root.path(), 8);
    for (i, file) in files.iter().enumerate() {
        let level = if i % 2 == 0 { 100_000.0 } else { 110_000.0 };
        set_rates(file, &[level, level * 1.001, level * 0.999, level * 1.002, level * 0.998]);
    }
    let db = env.root.path().join("h.sqlite");
    let out = history(&db, &[&["add"][..], &files.iter().map(|f| f.to_str().unwrap()).collect::<Vec<_>>()].concat());
    assert_success(&out);
    let compare = |extra: &[&str]| {
        let out = fsscale().arg("compare").arg(&base).arg(&new).args(extra).output().unwrap();
        assert_success(&out);
        stdout(&out)
    };
    let alone = compare(&["--no-history"]);
    assert!(alone.lines().any(|l| l.ends_with("  worse")), "{alone}");
    assert!(alone.contains("±2% (--noise-threshold) stands in for it"), "{alone}");
    let with_history = compare(&["--history-db", db.to_str().unwrap()]);
    // Successive invocations differ by ln 1.1: 1.96 · ln 1.1 / 0.6745 = 27.7% in logs, 31.9% as a ratio.
    assert!(
        with_history.contains(
            "threshold at process private x1: invocations of this point on this host differ by 31.9% (8 results in the history): a change must exceed that"
        ),
        "{with_history}"
    );
    assert!(with_history.lines().any(|l| l.ends_with("  within noise")), "{with_history}");
    assert!(
        with_history.contains("where the history holds 6 or more results of a point on this host"),
        "{with_history}"
    );
    // A given threshold wins, and the default store is only read where it exists.
    assert!(compare(&["--history-db", db.to_str().unwrap(), "--noise-threshold", "2"])
        .lines()
        .any(|l| l.ends_with("  worse")));
    assert!(compare(&[]).contains("±2% (--noise-threshold) stands in for it"));
    let missing = env.root.path().join("none.sqlite");
    let out = fsscale().arg("compare").arg(&base).arg(&new).arg("--history-db").arg(&missing).output().unwrap();
    assert_success(&out);
    assert!(!missing.exists(), "compare makes no store");
}

#[test]
fn open_loops_are_kept_as_series_of_their_response_p99_at_each_rate() {
    let env = TestEnv::new();
    let db = env.root.path().join("history.sqlite");
    for run in 0..2 {
        assert_success(&env.run(&[
            "stat",
            "-j",
            "1",
            "--share",
            "private",
            "--rate",
            "1k,2k",
            "--rev",
            &format!("r{run}"),
        ]));
        assert_success(&history(&db, &["add", env.output.to_str().unwrap()]));
    }
    let out = history(&db, &["show", "--rate", "2k"]);
    assert_success(&out);
    let text = stdout(&out);
    // Only the 2k series, of response p99, with both results.
    assert!(text.starts_with("stat process private x1 at 2k/s on "), "{text}");
    assert!(text.contains("(µs p99 response, 2 results)"), "{text}");
    assert!(!text.contains("at 1k/s"), "{text}");
    assert_one_line_error(&history(&db, &["show", "--rate", "fast"]), "'fast' is not a rate");
}
