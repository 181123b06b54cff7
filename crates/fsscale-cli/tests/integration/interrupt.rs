//! Ctrl-C and SIGTERM mid-run: no worker left, no scratch left, finished points kept.

use fsscale::results::{ResultsFile, Status};

use crate::util::*;

/// Starts a long run in its own process group, waits until at least one point
/// has finished, then sends `signal` to the whole group as a terminal would.
fn interrupt_mid_run(signal: i32, mode: &str) -> (TestEnv, std::process::Output, i32) {
    let env = TestEnv::new();
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    let child = spawn_group(&[
        "run",
        "stat",
        "open-close",
        "--share",
        "private",
        "-j",
        "1,2",
        "-n",
        "2",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        // Each point's warm-up run (at least a second) leaves the signal
        // plenty of time to land in the next point; unsteady, it would
        // spin for up to 5 s.
        "--warmup-max",
        "1s",
        "--mode",
        mode,
        "--dir",
        &dir,
        "-o",
        &output,
    ]);
    let pgid = child.id() as i32;
    wait_until("a finished point", || {
        // The document with its journal folded in, as any reader sees it mid-run.
        ResultsFile::load(&env.output).ok().is_some_and(|d| d.points.iter().any(|p| p.complete))
    });
    // The signal must land while workers run (there is no warm-up, so that
    // is the window): wait until the next point's workers exist, forked
    // processes in the group or threads of fsscale.
    let pid = child.id();
    wait_until("the next point's workers", || match mode {
        "thread" => std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |t| t.count()) > 1,
        _ => live_processes_in_group(pgid).len() > 1,
    });
    let _ = fsscale::sys::send_signal(-pgid, signal);
    let out = child.wait_with_output().unwrap();
    (env, out, pgid)
}

fn check_interrupted(signal: i32, mode: &str, code: i32, name: &str) {
    let (env, out, pgid) = interrupt_mid_run(signal, mode);
    assert_eq!(out.status.code(), Some(code), "stderr:\n{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("interrupted by {name}")), "{}", stderr(&out));
    assert_eq!(live_processes_in_group(pgid), Vec::<i32>::new(), "worker processes left behind");
    assert_eq!(env.leftovers(), Vec::<String>::new(), "scratch directory left behind");
    let doc = env.results();
    assert_eq!(doc.status, Status::Interrupted);
    let complete: Vec<_> = doc.points.iter().filter(|p| p.complete).collect();
    assert!(!complete.is_empty());
    for point in complete {
        assert_eq!(point.runs.len(), 2);
        assert!(point.runs.iter().all(|r| r.ops > 0));
    }
    assert!(stdout(&out).starts_with("stat: "), "finished points are shown: {}", stdout(&out));
}

#[test]
fn ctrl_c_with_worker_processes() {
    check_interrupted(libc::SIGINT, "process", 130, "SIGINT");
}

#[test]
fn ctrl_c_with_worker_threads() {
    check_interrupted(libc::SIGINT, "thread", 130, "SIGINT");
}

#[test]
fn sigterm_with_worker_processes() {
    check_interrupted(libc::SIGTERM, "process", 143, "SIGTERM");
}

#[test]
fn sigquit_with_worker_processes_is_a_clean_stop_not_a_core_dump() {
    check_interrupted(libc::SIGQUIT, "process", 131, "SIGQUIT");
}

#[test]
fn sighup_with_worker_threads() {
    check_interrupted(libc::SIGHUP, "thread", 129, "SIGHUP");
}

#[test]
fn an_interrupted_run_is_resumed_into_its_file_keeping_every_finished_run() {
    let (env, out, _) = interrupt_mid_run(libc::SIGINT, "process");
    assert_eq!(out.status.code(), Some(130), "stderr:\n{}", stderr(&out));
    let before = env.results();
    let kept: Vec<(usize, u64)> =
        before.points.iter().flat_map(|p| p.runs.iter().map(|r| (r.position.unwrap(), r.ops))).collect();
    assert!(!kept.is_empty());
    // The natural slip, the same command again, is refused and says how to finish it.
    let again =
        fsscale().args(["run", "stat", "-j", "1", "--dir"]).arg(&env.dir).arg("-o").arg(&env.output).output().unwrap();
    assert_one_line_error(&again, &format!("(interrupted, {} runs) is there already", kept.len()));
    assert_one_line_error(&again, &format!("or --resume {} to finish it", env.output.display()));
    let out = fsscale().arg("run").arg("--resume").arg(&env.output).arg("--dir").arg(&env.dir).output().unwrap();
    assert_success(&out);
    let warmups: usize = before.points.iter().map(|p| p.warmup_runs.len()).sum();
    let says = format!("continuing its plan ({} runs and {warmups} warm-up runs kept)", kept.len());
    assert!(stderr(&out).contains(&says), "{}", stderr(&out));
    let after = env.results();
    assert_eq!(after.status, Status::Complete);
    assert_eq!(after.points.len(), before.points.len());
    for point in &after.points {
        assert!(point.complete);
        assert_eq!(point.runs.len(), 2, "{} x{}", point.workload, point.workers);
    }
    // Every finished run is still there, as it was; the new ones come after them.
    let now: Vec<(usize, u64)> =
        after.points.iter().flat_map(|p| p.runs.iter().map(|r| (r.position.unwrap(), r.ops))).collect();
    assert!(kept.iter().all(|k| now.contains(k)), "{kept:?} {now:?}");
    let resumed = &after.resumed[0];
    assert_eq!(resumed.runs_kept, kept.len() + warmups);
    assert!(now.iter().filter(|r| !kept.contains(r)).all(|(position, _)| *position >= resumed.first_position));
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let out = fsscale().arg("run").arg("--resume").arg(&env.output).arg("--dir").arg(&env.dir).output().unwrap();
    assert_one_line_error(&out, "its run finished every point: there is nothing to resume");
}

/// fsscale's cgroups (commands' and `--memory-limit`'s) of process `pid`, anywhere in a cgroup hierarchy.
fn cgroups_of(pid: u32) -> Vec<String> {
    let prefix = format!("fsscale-{pid}-");
    let mut found = Vec::new();
    let mut pending: Vec<(std::path::PathBuf, usize)> = vec![("/sys/fs/cgroup".into(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(entry.path().display().to_string());
            } else if depth < 8 {
                pending.push((entry.path(), depth + 1));
            }
        }
    }
    found
}

/// Every catchable signal, and SIGKILL, in each phase of a variant's run
/// under `--memory-limit` (as root): a catchable signal stops the run, runs
/// the teardown to its end and leaves nothing; SIGKILL leaves a file that
/// says which variant may be in effect, and `fsscale cleanup` removes the
/// rest. Either way nothing is left after cleanup.
#[test]
fn every_signal_in_every_phase_of_a_variant_under_a_memory_limit_leaves_nothing_after_cleanup() {
    let signals =
        [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGHUP, 129), (libc::SIGQUIT, 131), (libc::SIGKILL, -1)];
    for phase in ["setup", "run", "teardown"] {
        for (signal, code) in signals {
            let env = TestEnv::new();
            let at = |name: &str| env.root.path().join(name);
            // A sleep only this test starts.
            let tag = format!("{}.{}", 20 + std::process::id() % 10, signal);
            let (setup_sleep, duration, teardown_sleep) = match phase {
                "setup" => (tag.as_str(), "0.05", "0"),
                "run" => ("0", "20", "0"),
                _ => ("0", "0.05", "2"),
            };
            let setup = format!("b=touch {}; sleep {setup_sleep}", at("set").display());
            let teardown = format!(
                "b=touch {}; sleep {teardown_sleep}; rm {}; touch {}",
                at("tearing").display(),
                at("set").display(),
                at("undone").display()
            );
            let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
            let mut args = vec!["run", "stat", "-j", "2", "-n", "1", "--warmup-runs", "0", "--duration", duration];
            // b first: the first round runs the variants in the order named.
            args.extend(["--variant", &setup, "--variant", "a=", "--variant-teardown", &teardown]);
            args.extend(["--dir", &dir, "-o", &output]);
            if is_root() {
                args.extend(["--memory-limit", "64M"]);
            }
            let started = std::time::Instant::now();
            let child = spawn_group(&args);
            let (pid, pgid) = (child.id(), child.id() as i32);
            match phase {
                "setup" => wait_until("b's setup", || at("set").exists()),
                "run" => wait_until("b's workers", || at("set").exists() && live_processes_in_group(pgid).len() > 2),
                _ => wait_until("b's teardown", || at("tearing").exists()),
            }
            let _ = fsscale::sys::send_signal(-pgid, signal);
            let out = child.wait_with_output().unwrap();
            let case = format!("{phase}, signal {signal}");
            let doc = env.results();
            if code > 0 {
                assert_eq!(out.status.code(), Some(code), "{case}: {}", stderr(&out));
                assert!(at("undone").exists() && !at("set").exists(), "{case}: the teardown ran to its end");
                assert_eq!(doc.variant_in_effect, None, "{case}");
            } else {
                assert_eq!(doc.variant_in_effect.as_deref(), Some("b"), "{case}: the file says what may be set");
            }
            // A killed run's lock is free only once every process of it has
            // exited (a SIGKILLed worker takes a moment under load); until
            // then cleanup rightly leaves its cgroup alone.
            wait_until("the group's processes gone", || live_processes_in_group(pgid).is_empty());
            if is_root() {
                let cleaned = cleanup_output(fsscale().arg("cleanup").arg("--scratch").arg(&env.dir));
                if code < 0 {
                    assert!(stdout(&cleaned).contains("--variant b's setup ran and its teardown did not"), "{case}");
                }
                assert_eq!(cgroups_of(pid), Vec::<String>::new(), "{case}: cgroups left");
            }
            assert!(processes_running(&format!("sleep {tag}")).is_empty(), "{case}: the setup's sleep is gone");
            assert_eq!(env.leftovers(), Vec::<String>::new(), "{case}: scratch left");
            assert!(started.elapsed() < std::time::Duration::from_secs(15), "{case}: took {:?}", started.elapsed());
        }
    }
}
