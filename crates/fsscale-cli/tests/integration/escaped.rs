//! Every byte from outside is escaped in every output format: a received
//! results file's label and revision, and an argument's value, reach the
//! terminal, JSON, CSV, Markdown and SVG only as text.

use std::path::{Path, PathBuf};

use crate::util::*;

/// What a received file once used: a carriage return and an erase-line to
/// replace an error line, conceal (SGR 8) to hide a row, an OSC title, raw
/// HTML, a cell separator, a newline, DEL and a C1 CSI.
const HOSTILE: &str = "r1\r\u{1b}[Kplan checked \u{1b}[8mhidden\u{1b}[0m <img src=x> | a\nb \u{7f}\u{9b}2J";
const HOSTILE_REV: &str = "rev\u{1b}]0;title\u{7}";

/// The README's example results, and a copy of them with the hostile label and revision.
fn files(dir: &Path) -> (PathBuf, PathBuf) {
    let plain = dir.join("plain.json");
    std::fs::copy(repo().join("docs/example/tmpfs.json"), &plain).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
    doc["label"] = HOSTILE.into();
    doc["rev"] = HOSTILE_REV.into();
    doc["run_id"] = "hostile-run".into();
    let hostile = dir.join("hostile.json");
    std::fs::write(&hostile, doc.to_string()).unwrap();
    (plain, hostile)
}

/// Nothing in `text` but printable characters, newline and tab.
fn assert_no_controls(what: &str, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n' && *c != '\t').collect();
    assert!(bad.is_empty(), "{what} holds control characters {bad:?}:\n{text}");
}

fn run_ok(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = fsscale().args(args).output().unwrap();
    assert_success(&out);
    assert_no_controls("stderr", &out.stderr);
    out
}

#[test]
fn a_received_label_reaches_the_terminal_only_as_text_and_never_breaks_a_row() {
    let env = TestEnv::new();
    let (plain, hostile) = files(env.root.path());
    let out = run_ok(&["compare".as_ref(), plain.as_os_str(), hostile.as_os_str()]);
    assert_no_controls("compare", &out.stdout);
    assert!(stdout(&out).contains(r"new:  r1\x0d\x1b[Kplan checked \x1b[8mhidden\x1b[0m <img src=x> | a\nb \x7f\x9b2J"));
    let db = env.root.path().join("h.sqlite");
    run_ok(&[
        "history".as_ref(),
        "add".as_ref(),
        hostile.as_os_str(),
        plain.as_os_str(),
        "--history-db".as_ref(),
        db.as_os_str(),
    ]);
    let out = run_ok(&["history".as_ref(), "show".as_ref(), "--history-db".as_ref(), db.as_os_str()]);
    assert_no_controls("history show", &out.stdout);
    // Every row of every series is one line: the hostile result's row holds its label, escaped.
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("1  ")).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.contains(r"\x1b[8mhidden") && r.contains(r"rev\x1b]0;title\x07")),
        "{text}"
    );
    // An argument's value in an error line.
    let out = fsscale().args(["analyze", "missing\r\u{1b}[2Kok"]).output().unwrap();
    assert_one_line_error(&out, r"missing\x0d\x1b[2Kok");
    assert_no_controls("an error", &out.stderr);
}

#[test]
fn machine_readable_outputs_stay_valid_and_carry_the_text_exactly() {
    let env = TestEnv::new();
    let (plain, hostile) = files(env.root.path());
    let out =
        run_ok(&["compare".as_ref(), plain.as_os_str(), hostile.as_os_str(), "--format".as_ref(), "json".as_ref()]);
    assert_no_controls("compare --format json", &out.stdout);
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(parsed[0]["new"], HOSTILE, "the label round-trips exactly");
    let db = env.root.path().join("h.sqlite");
    run_ok(&["history".as_ref(), "add".as_ref(), hostile.as_os_str(), "--history-db".as_ref(), db.as_os_str()]);
    for query in ["show", "changes"] {
        let out = run_ok(&[
            "history".as_ref(),
            query.as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            "--history-db".as_ref(),
            db.as_os_str(),
        ]);
        assert_no_controls(query, &out.stdout);
        let _: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    }
    let out = run_ok(&[
        "export".as_ref(),
        hostile.as_os_str(),
        "--format".as_ref(),
        "json-lines".as_ref(),
        "--runs".as_ref(),
    ]);
    for line in stdout(&out).lines() {
        let _: serde_json::Value = serde_json::from_str(line).expect("every line is JSON");
    }
    // CSV and Markdown: one record per line, no raw HTML, no cell broken.
    let csv = run_ok(&["export".as_ref(), hostile.as_os_str(), "--format".as_ref(), "csv".as_ref()]);
    assert_no_controls("csv", &csv.stdout);
    let md =
        run_ok(&["compare".as_ref(), plain.as_os_str(), hostile.as_os_str(), "--format".as_ref(), "markdown".as_ref()]);
    let md = stdout(&md);
    assert!(md.contains(r"**new:** r1\\x0d\\x1b[Kplan checked \\x1b[8mhidden\\x1b[0m &lt;img src=x> \| a\\nb"), "{md}");
    assert!(!md.contains("<img"), "{md}");
    // SVG is XML: no control character may stand in it.
    let svg = env.root.path().join("chart.svg");
    run_ok(&[
        "plot".as_ref(),
        plain.as_os_str(),
        hostile.as_os_str(),
        "--workload".as_ref(),
        "stat".as_ref(),
        "-o".as_ref(),
        svg.as_os_str(),
    ]);
    let svg = std::fs::read(&svg).unwrap();
    assert_no_controls("the SVG", &svg);
    assert!(!String::from_utf8_lossy(&svg).contains("<img"));
}

#[test]
fn a_non_utf8_argument_is_taken_as_bytes_or_refused_in_one_line_never_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let bytes = std::ffi::OsStr::from_bytes(b"results-\xff.json");
    let out = fsscale().arg("analyze").arg(bytes).output().unwrap();
    assert_one_line_error(&out, "reading results file results-\u{fffd}.json: No such file or directory");
    let env = TestEnv::new();
    let out = fsscale().args(["run", "stat", "--dir"]).arg(env.root.path().join(bytes)).output().unwrap();
    assert_one_line_error(&out, "is not valid UTF-8, and a run records its command line as text");
    let out = fsscale().args(["gate", "--good"]).arg(bytes).output().unwrap();
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn an_alerts_words_on_stderr_carry_a_received_host_and_revision_only_as_text() {
    // Eight results of a hostile host and revisions, the last three at half
    // the rate: `history changes --since` names the step on stderr.
    let env = TestEnv::new();
    let (plain, _) = files(env.root.path());
    let base: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
    let db = env.root.path().join("h.sqlite");
    for k in 0..8 {
        let mut doc = base.clone();
        doc["run_id"] = format!("alert-{k}").into();
        doc["started_at"] = format!("2026-11-2{k}T10:00:00Z").into();
        doc["rev"] = format!("{HOSTILE_REV}{k}").into();
        doc["host"]["hostname"] = "lab\u{1b}[2J".into();
        let (level, wobble) = (if k >= 5 { 0.5 } else { 1.0 }, 1.0 + 0.004 * (k % 3) as f64);
        for point in doc["points"].as_array_mut().unwrap() {
            for run in point["runs"].as_array_mut().unwrap() {
                let scaled = run["ops_per_s"].as_f64().unwrap() * level * wobble;
                run["ops_per_s"] = scaled.into();
            }
            point["summary"] = serde_json::Value::Null;
        }
        let file = env.root.path().join(format!("r{k}.json"));
        std::fs::write(&file, doc.to_string()).unwrap();
        run_ok(&["history".as_ref(), "add".as_ref(), file.as_os_str(), "--history-db".as_ref(), db.as_os_str()]);
    }
    let out =
        fsscale().args(["history", "changes", "--since", "2026-11-24", "--history-db"]).arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_no_controls("the alert", &out.stderr);
    assert_no_controls("the steps", &out.stdout);
    assert!(stderr(&out).contains(r"on lab\x1b[2J:"), "{}", stderr(&out));
}
