//! The gate stops cleanly: what is its own failure ends a bisection (128),
//! never skips a revision (125), and a signal to it stops its measuring run
//! and leaves nothing behind.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::*;

fn good(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("good.json");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/example/tmpfs.json"), &path).unwrap();
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
        // SAFETY: kill with our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(128), "signal {signal}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("the gate was stopped by signal {signal}")), "{}", stderr(&out));
        // SAFETY: kill with signal 0 only asks whether the pid is alive.
        let alive = |pid: i32| unsafe { libc::kill(pid, 0) } == 0;
        wait_until("the run to be gone", || !alive(run_pids[0]));
        assert_eq!(env.leftovers(), Vec::<String>::new(), "the run removed its scratch");
        assert_eq!(entries(&tmp), Vec::<String>::new(), "the gate removed its directory");
    }
}
