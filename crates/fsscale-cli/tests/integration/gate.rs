//! The gate stops cleanly: what is its own failure ends a bisection (128),
//! never skips a revision (125), and a signal to it stops its measuring run
//! and leaves nothing behind.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::*;

fn good(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("good.json");
    std::fs::copy(repo().join("docs/example/tmpfs.json"), &path).unwrap();
    path
}

/// `fsscale gate --good GOOD -- RUN...` with its own temporary directory.
fn gate(tmp: &Path, good: &Path, run: &[&str]) -> Command {
    let mut cmd = fsscale();
    cmd.env("TMPDIR", tmp).args(["gate", "--good"]).arg(good).arg("--").args(run);
    cmd
}

#[test]
fn a_run_that_fails_before_measuring_ends_the_bisection_with_128_not_a_skip() {
    let env = TestEnv::new();
    let good = good(env.root.path());
    let tmp = env.root.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let missing_dir = env.root.path().join("no-such-dir");
    let missing_like = env.root.path().join("no-such.json");
    for run in [
        vec!["stat", "-j", "1", "--dir", missing_dir.to_str().unwrap()],
        vec!["stat", "--no-such-flag"],
        vec!["--like", missing_like.to_str().unwrap()],
    ] {
        let out = gate(&tmp, &good, &run).output().unwrap();
        assert_eq!(out.status.code(), Some(128), "{run:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("before its first measurement"), "{run:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("the bisection stops (exit 128)"), "{}", stderr(&out));
        assert_eq!(entries(&tmp), Vec::<String>::new(), "the gate's directory is gone");
    }
}

#[test]
fn a_gate_stopped_by_a_signal_stops_its_run_removes_its_directory_and_exits_128() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let env = TestEnv::new();
        let good = good(env.root.path());
        let tmp = env.root.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let dir = env.dir.to_str().unwrap();
        // Long enough never to end by itself before the signal.
        let run =
            ["stat", "-j", "1", "-n", "200", "--duration", "0.5", "--warmup", "0", "--warmup-runs", "0", "--dir", dir];
        let child = gate(&tmp, &good, &run).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        // Measuring: its scratch directory is in --dir.
        wait_until("the gate's run to start measuring", || !entries(&env.dir).is_empty());
        let run_pids = workers_of(child.id() as i32);
        assert_eq!(run_pids.len(), 1, "the gate's one run: {run_pids:?}");
        assert_eq!(fsscale::sys::send_signal(child.id() as i32, signal), Ok(()));
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(128), "signal {signal}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("the gate was stopped by signal {signal}")), "{}", stderr(&out));
        // Signal 0 only asks whether the pid is alive.
        let alive = |pid: i32| fsscale::sys::send_signal(pid, 0).is_ok();
        wait_until("the run to be gone", || !alive(run_pids[0]));
        assert_eq!(env.leftovers(), Vec::<String>::new(), "the run removed its scratch");
        assert_eq!(entries(&tmp), Vec::<String>::new(), "the gate removed its directory");
    }
}

/// A driver whose figure is given by `rate` (a shell arithmetic expression
/// of `n`, the count of its earlier runs, kept in `counter`): exact figures
/// whatever the machine's load.
fn driver(counter: &Path, rate: &str) -> Vec<String> {
    let cmd = format!(
        "n=$(cat '{0}' 2>/dev/null || echo 0); echo $((n + 1)) > '{0}'; echo \"rate: $(({rate}))\"",
        counter.display()
    );
    ["command", "--shell", "--cmd", &cmd, "--metric", "rate: ([0-9]+)", "--higher-is-better", "-j", "1"]
        .map(String::from)
        .to_vec()
}

fn runs_counted(counter: &Path) -> u32 {
    std::fs::read_to_string(counter).map_or(0, |s| s.trim().parse().unwrap())
}

/// Good about 100, bad about 50 (99, 100, 101 and 49, 50, 51 in turn), six runs each.
fn references(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut files = Vec::new();
    for (name, rate) in [("good", "99 + n % 3"), ("bad", "49 + n % 3")] {
        let counter = env.root.path().join(format!("{name}.count"));
        let args = [driver(&counter, rate), ["-n", "6"].map(String::from).to_vec()].concat();
        assert_success(&env.run(&args.iter().map(String::as_str).collect::<Vec<_>>()));
        let path = env.root.path().join(format!("{name}.json"));
        std::fs::rename(&env.output, &path).unwrap();
        files.push(path);
    }
    (files.remove(0), files.remove(0))
}

fn gate_with(env: &TestEnv, good: &Path, bad: &Path, extra: &[&str], run: &[String]) -> std::process::Output {
    let mut cmd = fsscale();
    cmd.env("TMPDIR", env.root.path()).arg("gate").arg("--good").arg(good).arg("--bad").arg(bad).args(extra);
    if !run.is_empty() {
        let dir = env.dir.to_str().unwrap();
        cmd.arg("--").args(run).args(["--warmup-runs", "0", "--warmup", "0", "-q", "--dir", dir]);
    }
    cmd.output().unwrap()
}

#[test]
fn an_undecided_revision_is_measured_again_before_it_is_skipped() {
    let env = TestEnv::new();
    let (good, bad) = references(&env);
    // Figures 200 and 50 in turn: about 100 (good's level; the midpoint
    // is 70.7), but so spread that five runs cannot say which level (good's
    // 6 times likelier than bad's, short of 19); ten can (36 times).
    let counter = env.root.path().join("spread.count");
    let run = [driver(&counter, "n % 2 == 0 ? 200 : 50"), ["-n", "5"].map(String::from).to_vec()].concat();
    let out = gate_with(&env, &good, &bad, &[], &run);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("2 rounds measured, each an invocation (--max-rounds 3)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("this revision: good"), "{}", stderr(&out));
    assert_eq!(runs_counted(&counter), 10, "two rounds of five runs");
    // At the midpoint itself no number of rounds decides: three, then skip.
    let counter = env.root.path().join("middle.count");
    let run = [driver(&counter, "n % 2 == 0 ? 100 : 50"), ["-n", "4"].map(String::from).to_vec()].concat();
    let out = gate_with(&env, &good, &bad, &[], &run);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(stderr(&out).contains("3 rounds measured"), "{}", stderr(&out));
    assert!(stderr(&out).contains("command process private x1: undecided"), "{}", stderr(&out));
    assert_eq!(runs_counted(&counter), 12, "three rounds of four runs");
    // --max-rounds 1: the first answer stands.
    std::fs::remove_file(&counter).unwrap();
    let out = gate_with(&env, &good, &bad, &["--max-rounds", "1"], &run);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert_eq!(runs_counted(&counter), 4);
    assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
}

#[test]
fn check_measures_a_reference_again_and_stops_the_bisection_if_it_is_not_what_was_said() {
    let env = TestEnv::new();
    let (good, bad) = references(&env);
    let like_good = [driver(&env.root.path().join("a.count"), "99 + n % 3"), vec!["-n".into(), "6".into()]].concat();
    let out = gate_with(&env, &good, &bad, &["--check", "good"], &like_good);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("this revision: good, as --check says"), "{}", stderr(&out));
    // The bad revision measured again, as the good one measures now: the bisection cannot trust them.
    let out = gate_with(&env, &good, &bad, &["--check", "bad"], &like_good);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--check bad: this revision measured good, not bad (command process private x1: good"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("the bisection stops (exit 128)"), "{}", stderr(&out));
    // Measured results may be checked too; --check bad needs the bad ones.
    let out = gate_with(&env, &good, &bad, &["--check", "bad", "--results", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out =
        fsscale().args(["gate", "--check", "bad", "--good"]).arg(&good).arg("--results").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(stderr(&out).contains("--check bad needs the bad results to check against: give --bad BAD.json"));
    // References that do not separate: no step to place a revision on.
    let out = gate_with(&env, &good, &good, &["--results", good.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("good and bad do not separate at any point this revision measured"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
