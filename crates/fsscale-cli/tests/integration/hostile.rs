//! A received results file, or an input, costs no more than its size to
//! read (no recursion as deep as it says, no work in its square, memory
//! within a small multiple of it) and cannot drive the terminal it is
//! shown on.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::*;

/// Runs fsscale with `args` under GNU time to its end: its status, stdout,
/// stderr and peak resident KiB. (wait4's own `ru_maxrss` would count the
/// test process's memory the child had between fork and exec.)
fn run_measured(args: &[&std::ffi::OsStr], dir: &Path) -> (std::process::ExitStatus, String, String, i64) {
    let peak = dir.join("peak");
    let out = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&peak)
        .args(["-f", "%M", env!("CARGO_BIN_EXE_fsscale")])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("GNU time (.ci/run installs it)");
    let text = std::fs::read_to_string(&peak).unwrap();
    let kib = text.lines().filter_map(|l| l.trim().parse().ok()).next_back().unwrap_or_else(|| panic!("{text}"));
    (out.status, stdout(&out), stderr(&out), kib)
}

fn has_gnu_time(test: &str) -> bool {
    prerequisite(Path::new("/usr/bin/time").exists(), test, "no /usr/bin/time (Debian's time)")
}

/// A real run's file with `profile` (a CPU profile's JSON) in its first run.
fn with_cpu_profile(env: &TestEnv, folded: serde_json::Value, name: &str) -> std::path::PathBuf {
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&env.output).unwrap()).unwrap();
    doc["points"][0]["runs"][0]["cpu_profile"] = serde_json::json!({
        "event": "cpu-clock", "frequency_hz": 1000, "samples": 100, "kernel_samples": 50, "lost_samples": 0,
        "folded": folded,
    });
    let path = env.root.path().join(name);
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

#[test]
fn a_crafted_profile_costs_no_more_than_its_size_to_report_and_compare() {
    if !has_gnu_time("crafted profiles") {
        return;
    }
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "-n", "2"]));
    // One stack of 40,000 frames: a report recursing per frame overflowed its stack.
    let deep: Vec<String> = (0..40_000).map(|i| format!("frame_{i}")).collect();
    let deep = with_cpu_profile(&env, serde_json::json!({ deep.join(";"): 5, "a;b": 3 }), "deep.json");
    // 300,000 four-frame stacks: 11 MB of JSON.
    let wide: serde_json::Map<String, serde_json::Value> =
        (0..300_000).map(|i| (format!("a{i};b{i};c{i};d{i}"), serde_json::json!(1))).collect();
    let wide = with_cpu_profile(&env, serde_json::Value::Object(wide), "wide.json");
    for (file, note) in [
        (&deep, "1 stack(s) deeper than 512 frames were cut to their first 512"),
        (&wide, "280001 of a profile's stacks beyond its heaviest 20000 were summed as one"),
    ] {
        let size_kib = (std::fs::metadata(file).unwrap().len() / 1024) as i64;
        let html = env.root.path().join("report.html");
        let (status, _, err, rss) =
            run_measured(&["report".as_ref(), file.as_os_str(), "-o".as_ref(), html.as_os_str()], env.root.path());
        assert!(status.success(), "{status:?}: {err}");
        assert!(err.contains(note), "the reader is told what was cut: {err}");
        assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"), "the flame graph is drawn");
        // fsscale's own footprint (~20 MiB) plus a small multiple of the file.
        assert!(rss < 40 * 1024 + 8 * size_kib, "report of a {size_kib} KiB file peaked at {rss} KiB");
        let (status, _, err, rss) =
            run_measured(&["compare".as_ref(), env.output.as_os_str(), file.as_os_str()], env.root.path());
        assert!(status.code().is_some(), "compare was killed: {status:?} {err}");
        assert!(rss < 40 * 1024 + 8 * size_kib, "compare of a {size_kib} KiB file peaked at {rss} KiB");
    }
}

#[test]
fn ministat_reads_an_endless_input_a_line_at_a_time() {
    if !has_gnu_time("ministat /dev/zero") {
        return;
    }
    let env = TestEnv::new();
    let (status, _, err, rss) = run_measured(&["ministat".as_ref(), "/dev/zero".as_ref()], env.root.path());
    assert_eq!(status.code(), Some(2));
    assert_eq!(err, "ministat: Invalid data on line 1 in /dev/zero\n");
    assert!(rss < 64 * 1024, "{rss} KiB");
}

/// A terminal sequence that sets the window title (OSC 0) and one that
/// writes the clipboard (OSC 52).
const OSC: &str = "\u{1b}]0;owned\u{7}\u{1b}]52;c;aGk=\u{7}\u{9b}2J";

/// Whether `text` could drive a terminal: any control character but
/// newline, tab and fsscale's own colour and erase-line sequences.
fn drives_a_terminal(text: &str) -> bool {
    let stripped =
        text.replace("\u{1b}[K", "").replace("\u{1b}[0m", "").replace("\u{1b}[31m", "").replace("\u{1b}[32m", "");
    stripped.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
}

#[test]
fn strings_from_a_received_file_or_an_argument_cannot_drive_the_terminal() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "-n", "2"]));
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&env.output).unwrap()).unwrap();
    doc["label"] = format!("label{OSC}").into();
    doc["note"] = format!("note{OSC}").into();
    doc["error"] = format!("error{OSC}").into();
    doc["status"] = "failed".into();
    doc["host"]["kernel_release"] = format!("6.1{OSC}").into();
    doc["host"]["cpu_model"] = format!("EPYC{OSC}").into();
    doc["host"]["hostname"] = format!("host{OSC}").into();
    doc["points"][0]["runs"][0]["cpu_profile"] = serde_json::json!({
        "event": "cpu-clock", "frequency_hz": 1000, "samples": 10, "kernel_samples": 5, "lost_samples": 0,
        "folded": { format!("main;frame{OSC}"): 10 },
    });
    let crafted = env.root.path().join("crafted.json");
    std::fs::write(&crafted, serde_json::to_string(&doc).unwrap()).unwrap();
    let outputs = [
        fsscale().arg("analyze").arg(&crafted).output().unwrap(),
        fsscale().arg("compare").arg(&env.output).arg(&crafted).output().unwrap(),
        fsscale().arg("compare").arg(&crafted).arg(&env.output).args(["--format", "markdown"]).output().unwrap(),
        fsscale().arg("export").arg(&crafted).args(["--format", "csv"]).output().unwrap(),
    ];
    for out in &outputs {
        let (o, e) = (stdout(out), stderr(out));
        assert!(!drives_a_terminal(&o) && !drives_a_terminal(&e), "stdout:\n{o:?}\nstderr:\n{e:?}");
    }
    // What the strings said is still there, escaped.
    let text = stdout(&outputs[0]) + &stderr(&outputs[0]);
    assert!(text.contains("\\x1b]0;owned\\x07"), "{text}");
    // A variant name no run gives is refused, and shown escaped.
    doc["points"][0]["variant"] = format!("a{OSC}").into();
    std::fs::write(&crafted, serde_json::to_string(&doc).unwrap()).unwrap();
    let out = fsscale().arg("analyze").arg(&crafted).output().unwrap();
    assert_one_line_error(&out, "a variant is named $'a\\x1b]0;owned");
    assert!(!drives_a_terminal(&stderr(&out)));
    // An argument's control characters are escaped in the error that names it.
    let out = env.run(&[&format!("stat{OSC}")]);
    assert!(!out.status.success());
    assert!(!drives_a_terminal(&stderr(&out)), "{:?}", stderr(&out));
    assert!(stderr(&out).contains("]0;owned"), "the argument is still named: {}", stderr(&out));
}

#[test]
fn a_file_whose_workers_do_not_add_up_is_refused_at_load() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "2", "-n", "2"]));
    let original: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&env.output).unwrap()).unwrap();
    let crafted = env.root.path().join("crafted.json");
    let mut zero = original.clone();
    zero["points"][0]["workers"] = 0.into();
    std::fs::write(&crafted, serde_json::to_string(&zero).unwrap()).unwrap();
    assert_one_line_error(&fsscale().arg("analyze").arg(&crafted).output().unwrap(), "a point of 0 workers");
    let mut more = original;
    more["points"][0]["runs"][0]["per_worker_ops"] = serde_json::json!([1, 2, 3, 4]);
    std::fs::write(&crafted, serde_json::to_string(&more).unwrap()).unwrap();
    let out = fsscale().arg("analyze").arg(&crafted).output().unwrap();
    assert_one_line_error(&out, "run 1: ops of 4 workers, which no run of 2 workers has");
}

#[test]
fn compare_per_cpu_names_missing_cpu_time_and_survives_a_crafted_tiny_one() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "-n", "3"]));
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&env.output).unwrap()).unwrap();
    let crafted = env.root.path().join("crafted.json");
    for cpu in [0.0, 1e-300] {
        for point in doc["points"].as_array_mut().unwrap() {
            for run in point["runs"].as_array_mut().unwrap() {
                run["worker_cpu"]["user_s"] = cpu.into();
                run["worker_cpu"]["sys_s"] = cpu.into();
            }
        }
        std::fs::write(&crafted, serde_json::to_string(&doc).unwrap()).unwrap();
        let out = fsscale().arg("compare").arg(&env.output).arg(&crafted).arg("--per-cpu").output().unwrap();
        assert_one_line_error(&out, "have points in common, but not the workers' CPU time --per-cpu divides by");
    }
}

#[test]
fn a_fifo_where_the_journal_would_be_is_passed_over() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "-n", "2"]));
    let journal = env.output.with_extension("json.journal");
    make_fifo(&journal, 0o600);
    let started = std::time::Instant::now();
    let out = fsscale().arg("analyze").arg(&env.output).output().unwrap();
    assert_success(&out);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "reading never waits on the FIFO");
    assert!(stderr(&out).contains("is not a regular file; passed over"), "{}", stderr(&out));
    assert!(stdout(&out).contains("stat"), "the document stands: {}", stdout(&out));
}
