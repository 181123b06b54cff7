//! The A/B a user pastes: every figure compare prints agrees with the
//! others in every design, runs pair by their recorded round, and the
//! variant figures a user needs can be exported and filtered.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

const QUICK: [&str; 8] = ["-n", "3", "--duration", "0.03", "--warmup", "0", "--warmup-runs", "0"];

/// `fsscale run ARGS` into `path`, quick.
fn run_into(env: &TestEnv, path: &Path, args: &[&str]) {
    let out =
        fsscale().arg("run").args(QUICK).args(args).arg("--dir").arg(&env.dir).arg("-o").arg(path).output().unwrap();
    assert_success(&out);
}

fn compare_json(args: &[&str]) -> Vec<Value> {
    let out = fsscale().arg("compare").args(args).args(["--format", "json"]).output().unwrap();
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every row's change is its figures' ratio, its sign theirs, and each
/// table's summary lies within its rows' changes.
fn assert_figures_agree(comparisons: &[Value], design: &str) {
    for c in comparisons {
        let rows = c["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{design}: no rows");
        for r in rows {
            let (base, new, change) = (
                r["base_figure"].as_f64().unwrap(),
                r["new_figure"].as_f64().unwrap(),
                r["change_pct"].as_f64().unwrap(),
            );
            let ratio = (new / base - 1.0) * 100.0;
            assert!((ratio - change).abs() < 1e-6 * change.abs().max(1.0), "{design}: {r}");
            assert_eq!(change > 0.0, new > base, "{design}: the sign disagrees with base → new: {r}");
        }
        for s in c["summaries"].as_array().unwrap() {
            let mine: Vec<f64> = rows
                .iter()
                .filter(|r| r["workload"] == s["workload"] && r.get("condition") == s.get("condition"))
                .map(|r| r["change_pct"].as_f64().unwrap())
                .collect();
            let (lo, hi) = mine.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            let summary = s["geomean_change_pct"].as_f64().unwrap();
            assert!(summary >= lo - 1e-9 && summary <= hi + 1e-9, "{design}: summary {summary} outside [{lo}, {hi}]");
        }
    }
}

#[test]
fn every_figure_compare_prints_agrees_in_every_design() {
    let env = TestEnv::new();
    let file = |name: &str| -> PathBuf { env.root.path().join(name) };
    let points = ["stat", "creat-unlink", "-j", "1,2"];
    let variants = ["--variant", "a=true", "--variant", "b=true", "--max-runs", "3"];
    run_into(&env, &file("v.json"), &[&points[..], &variants[..]].concat());
    for name in ["a1.json", "a2.json", "b1.json", "b2.json"] {
        run_into(&env, &file(name), &points);
    }
    let path = |name: &str| file(name).display().to_string();
    let designs: [(&str, Vec<String>); 5] = [
        ("two files", vec![path("a1.json"), path("b1.json")]),
        ("--between", vec![path("a1.json"), "--between".into(), "share=private,shared".into()]),
        ("--variants", vec![path("v.json"), "--variants".into(), "a,b".into()]),
        ("--vs", vec![path("a1.json"), path("a2.json"), "--vs".into(), path("b1.json"), path("b2.json")]),
        (
            "--vs paired",
            vec![
                path("a1.json"),
                path("a2.json"),
                "--vs".into(),
                path("b1.json"),
                path("b2.json"),
                "--test".into(),
                "paired".into(),
            ],
        ),
    ];
    for (design, args) in &designs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_figures_agree(&compare_json(&args), design);
    }
    // The text shows the figures the change divides, named as such, and the
    // summary is the rows' own.
    let out = fsscale().arg("compare").arg(file("v.json")).args(["--variants", "a,b"]).output().unwrap();
    let text = stdout(&out);
    // (ops/cpu-s, or "figure" where some rows are, when this machine is busy.)
    assert!(text.contains("  base geomean ") && text.contains("  new geomean "), "{text}");
    assert!(text.contains("geometric mean of the rows' changes"), "{text}");
    assert!(!text.contains("median ratios"), "{text}");
    // --between names both sides by the dimension's values, never the base's for both.
    let out =
        fsscale().arg("compare").arg(file("a1.json")).args(["--between", "share=private,shared"]).output().unwrap();
    let text = stdout(&out);
    // The table's rows (a moved stat's line may start with a digit too).
    let rows: Vec<&str> =
        text.lines().filter(|l| l.trim_start().starts_with(['1', '2']) && l.contains("  process  ")).collect();
    assert!(!rows.is_empty() && rows.iter().all(|l| l.contains("private→shared")), "{text}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn runs_pair_by_their_recorded_round_and_a_round_twice_is_refused() {
    let env = TestEnv::new();
    let v = env.root.path().join("v.json");
    run_into(
        &env,
        &v,
        &["stat", "-j", "1", "--share", "private", "--variant", "a=true", "--variant", "b=true", "--max-runs", "3"],
    );
    let before = compare_json(&[v.to_str().unwrap(), "--variants", "a,b"]);
    assert_eq!(before[0]["rows"][0]["pairs"], 3);
    let text = stdout(&fsscale().arg("compare").arg(&v).args(["--variants", "a,b"]).output().unwrap());
    assert!(text.contains("(the runs of round k of each side paired, 3 rounds at each point: "), "{text}");
    // The same runs listed in another order pair as before: by round, not place.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&v).unwrap()).unwrap();
    doc["points"][1]["runs"].as_array_mut().unwrap().reverse();
    let shuffled = env.root.path().join("shuffled.json");
    std::fs::write(&shuffled, doc.to_string()).unwrap();
    let after = compare_json(&[shuffled.to_str().unwrap(), "--variants", "a,b"]);
    assert_eq!(after[0]["rows"][0]["change_pct"], before[0]["rows"][0]["change_pct"]);
    assert_eq!(after[0]["rows"][0]["p_value"], before[0]["rows"][0]["p_value"]);
    // A round recorded twice is refused when the file is read.
    doc["points"][1]["runs"][0]["run"] = doc["points"][1]["runs"][1]["run"].clone();
    let twice = env.root.path().join("twice.json");
    std::fs::write(&twice, doc.to_string()).unwrap();
    let out = fsscale().arg("compare").arg(&twice).args(["--variants", "a,b"]).output().unwrap();
    assert_one_line_error(&out, "two runs say they are run ");
    // --test welch with --variants is honoured, not ignored; the default is paired.
    let welch = compare_json(&[v.to_str().unwrap(), "--variants", "a,b", "--test", "welch"]);
    assert_eq!(welch[0]["rows"][0]["test"], "welch");
    assert_eq!(welch[0]["rows"][0]["figure_kind"], "mean");
    assert_eq!(before[0]["rows"][0]["test"], "paired");
}

#[test]
fn invocations_say_what_they_could_have_found() {
    let env = TestEnv::new();
    let file = |name: &str| env.root.path().join(name).display().to_string();
    for name in ["a1.json", "a2.json", "a3.json", "b1.json", "b2.json", "b3.json"] {
        run_into(&env, Path::new(&file(name)), &["stat", "-j", "1", "--share", "private"]);
    }
    let out = fsscale()
        .arg("compare")
        .args([
            file("a1.json"),
            file("a2.json"),
            file("a3.json"),
            "--vs".into(),
            file("b1.json"),
            file("b2.json"),
            file("b3.json"),
        ])
        .args(["--detect", "5%"])
        .output()
        .unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("could detect with 3 invocations a side (95% confidence, 80% power, from their spread): process private x1 ±"), "{text}");
    assert!(text.contains("--detect 5%: invocations a side needed: process private x1 "), "{text}");
    let json = compare_json(&[
        &file("a1.json"),
        &file("a2.json"),
        "--vs",
        &file("b1.json"),
        &file("b2.json"),
        "--detect",
        "5",
    ]);
    let detectable = &json[0]["rows"][0]["detectable"];
    assert_eq!(detectable["invocations"], 2);
    assert!(detectable["change_pct"].as_f64().unwrap() > 0.0, "{detectable}");
    assert_eq!(detectable["wanted"][0], 5.0);
    // Without --vs there is no spread between invocations to go by.
    let out = fsscale().args(["compare", &file("a1.json"), &file("b1.json"), "--detect", "5"]).output().unwrap();
    assert_one_line_error(&out, "--vs");
}

#[test]
fn a_variant_run_states_its_cap_and_its_points_export_by_variant() {
    let env = TestEnv::new();
    let v = env.root.path().join("v.json");
    let out = fsscale()
        .args([
            "run",
            "stat",
            "open-close",
            "-j",
            "1",
            "--share",
            "private",
            "-d",
            "0.03",
            "--warmup",
            "0",
            "--warmup-runs",
            "0",
        ])
        .args(["--variant", "a=true", "--variant", "b=true", "-n", "2", "--max-runs", "4", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&v)
        .output()
        .unwrap();
    assert_success(&out);
    assert!(stderr(&out).contains("(2 runs each, up to 4 until precise); about "), "{}", stderr(&out));
    // A variant column, and a filter by variant.
    let csv = fsscale().args(["export", v.to_str().unwrap(), "--format", "csv"]).output().unwrap();
    let text = stdout(&csv);
    assert!(text.lines().next().unwrap().contains(",variant,"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(",b,")).count(), 2, "{text}");
    let only_b = fsscale().args(["export", v.to_str().unwrap(), "--format", "csv", "--variant", "b"]).output().unwrap();
    assert_eq!(stdout(&only_b).lines().count(), 3, "{}", stdout(&only_b));
    // A variant point goes to ministat; the hint names what tells the points apart, once each.
    let ministat = fsscale()
        .args(["export", v.to_str().unwrap(), "--workload", "stat", "-j", "1", "--variant", "a"])
        .output()
        .unwrap();
    assert_success(&ministat);
    assert!(stdout(&ministat).lines().count() >= 2, "{}", stdout(&ministat));
    let both = fsscale().args(["export", v.to_str().unwrap(), "--workload", "stat", "-j", "1"]).output().unwrap();
    assert_one_line_error(&both, "has 2 such points; choose one with --variant a or --variant b");
    let unknown =
        fsscale().args(["export", v.to_str().unwrap(), "--format", "csv", "--variant", "c"]).output().unwrap();
    assert_one_line_error(&unknown, "--variant c: ");
    assert_one_line_error(&unknown, "has no such variant; it has a, b");
    // compare -w takes one workload's points, as plot and export do.
    let w = compare_json(&[v.to_str().unwrap(), "--variants", "a,b", "-w", "open-close"]);
    let workloads: Vec<&Value> = w[0]["rows"].as_array().unwrap().iter().map(|r| &r["workload"]).collect();
    assert_eq!(workloads, [&Value::from("open-close")]);
    assert_eq!(env.leftovers(), Vec::<String>::new());
}
