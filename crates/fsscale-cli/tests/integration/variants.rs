//! `run --variant`: configurations measured against each other in one
//! interleaved run, their commands applied around each run, and
//! `compare --variants` pairing them by round.

use fsscale::compare::Comparison;
use fsscale::stats::hypothesis::TestKind;

use crate::util::*;

#[test]
fn each_round_runs_every_variant_after_its_setup_in_a_rotated_order_and_compare_pairs_them() {
    let env = TestEnv::new();
    let log = env.root.path().join("applied.log");
    let log = log.to_str().unwrap();
    let on = format!("on=echo set-on >> {log}");
    let off = format!("off=echo set-off >> {log}");
    let undo = format!("on=echo undo-on >> {log}");
    let out = env.run(&[
        "stat",
        "-j",
        "1",
        "--share",
        "private",
        "-n",
        "3",
        "--max-runs",
        "3",
        "--variant",
        &off,
        "--variant",
        &on,
        "--variant-teardown",
        &undo,
    ]);
    assert_success(&out);
    let doc = env.results();
    let names: Vec<&str> = doc.settings.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["off", "on"]);
    // --max-runs equal to -n: exactly that many rounds, not until precise.
    assert_eq!((doc.settings.until_ci_pct, doc.settings.max_runs), (None, None));
    let variants: Vec<Option<&str>> = doc.points.iter().map(|p| p.variant.as_deref()).collect();
    assert_eq!(variants, [Some("off"), Some("on")]);
    // Rounds alternate which variant goes first: off on | on off | off on.
    let positions: Vec<Vec<usize>> =
        doc.points.iter().map(|p| p.runs.iter().map(|r| r.position.unwrap()).collect()).collect();
    assert_eq!(positions, [vec![0, 3, 4], vec![1, 2, 5]]);
    // Each run had its variant's setup just before it, and `on`'s teardown just after.
    let applied = std::fs::read_to_string(log).unwrap();
    let expected = ["set-off", "set-on", "undo-on", "set-on", "undo-on", "set-off", "set-off", "set-on", "undo-on"];
    assert_eq!(applied.lines().collect::<Vec<_>>(), expected);
    let text = stdout(&out);
    assert!(text.contains("stat variant off: "), "{text}");
    assert!(
        text.contains(&format!(
            "variants: off (`echo set-off >> {log}`), on (`echo set-on >> {log}`, undone by `echo undo-on >> {log}`);"
        )),
        "{text}"
    );
    assert_eq!(env.leftovers(), Vec::<String>::new());

    // compare --variants is --between variant=..., paired by round.
    let out =
        fsscale().arg("compare").arg(&env.output).args(["--variants", "off,on", "--format", "json"]).output().unwrap();
    assert_success(&out);
    let comparisons: Vec<Comparison> = serde_json::from_slice(&out.stdout).unwrap();
    let c = &comparisons[0];
    assert_eq!(c.new, format!("{} variant=on", env.output.display()));
    assert_eq!(c.rows.len(), 1);
    assert_eq!((c.rows[0].test, c.rows[0].base_runs.len(), c.rows[0].new_runs.len()), (TestKind::Paired, 3, 3));

    // The HTML report lists the variants and compares them paired.
    let html_path = env.root.path().join("r.html");
    assert_success(&fsscale().arg("report").arg(&env.output).arg("-o").arg(&html_path).output().unwrap());
    let html = std::fs::read_to_string(&html_path).unwrap();
    let name = env.output.display().to_string();
    assert!(html.contains(&format!("<h3>{name} variant=on against {name} variant=off</h3>")), "{html}");
    assert!(html.contains("<th>p (paired)</th>"), "{html}");
    assert!(html.contains("<th>variants</th><td>off (`echo set-off &gt;&gt; "), "{html}");
}

#[test]
fn by_default_variants_run_rounds_in_lockstep_until_their_ratio_is_precise() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "-j", "1", "--share", "private", "-n", "2", "--variant", "a=", "--variant", "b=true"]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!((doc.settings.until_ci_pct, doc.settings.max_runs), (Some(2.0), Some(50)));
    // However noisy this machine is, both variants ran the same rounds, at least -n and at most 50.
    let rounds: Vec<usize> = doc.points.iter().map(|p| p.runs.len()).collect();
    assert!(rounds[0] == rounds[1] && (2..=50).contains(&rounds[0]), "{rounds:?}");
    let (a, b) = (&doc.points[0], &doc.points[1]);
    let precise = b.paired_interval_pct(a).is_some_and(|half| half <= 2.0);
    assert!(precise || rounds[0] == 50, "stopped at {} rounds, neither precise nor at the cap", rounds[0]);
    // Before the last round it was not yet precise (or at the least rounds).
    let mut earlier = (a.clone(), b.clone());
    earlier.0.runs.pop();
    earlier.1.runs.pop();
    assert!(
        rounds[0] == 2 || !earlier.1.paired_interval_pct(&earlier.0).is_some_and(|half| half <= 2.0),
        "it went on past a precise round"
    );
    let text = stdout(&out);
    assert!(
        text.contains("ratio to a, paired by round, had its 95% interval within ±2% (at most 50 rounds)"),
        "{text}"
    );
}

#[test]
fn a_failing_variant_command_fails_its_run_named_and_keeps_the_runs_before_it() {
    let env = TestEnv::new();
    let marker = env.root.path().join("second");
    // `bad` fails from its second run on.
    let bad = format!("bad=if [ -e {0} ]; then echo no such tunable >&2; exit 2; fi; touch {0}", marker.display());
    let out = env.run(&["stat", "-j", "1", "--share", "private", "-n", "3", "--variant", "good=", "--variant", &bad]);
    assert!(!out.status.success());
    let err = stderr(&out);
    // (A loaded machine adds a warning about its busy runs.)
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("fsscale: warning: ") && !is_progress(l)).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0], format!("results so far: {}", env.output.display()));
    let named = "fsscale: error: stat (process, private, 1 worker) variant bad, run 2 of 3: --variant bad: `if [ -e";
    assert!(lines[1].starts_with(named) && lines[1].ends_with("exited with status 2: no such tunable"), "{err}");
    let doc = env.results();
    let kept: Vec<usize> = doc.points.iter().map(|p| p.runs.len()).collect();
    // Round 1 whole; round 2 rotated, so bad went first and failed.
    assert_eq!(kept, [1, 1]);
    assert_eq!(doc.status, fsscale::results::Status::Failed);
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn the_command_workload_sees_its_variant_and_bad_variants_are_refused() {
    let env = TestEnv::new();
    let log = env.root.path().join("seen.log");
    let cmd = format!("echo $FSSCALE_VARIANT {{variant}} >> {}", log.display());
    let (variants, one_round) = (["--variant", "a=", "--variant", "b="], ["--max-runs", "1"]);
    let args =
        [["command", "--cmd", &cmd, "--shell", "-j", "1", "--share", "private"].as_slice(), &variants, &one_round]
            .concat();
    let out = env.run(&args);
    assert_success(&out);
    let mut seen: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_string).collect();
    seen.sort();
    assert_eq!(seen, ["a a", "b b"]);

    assert_one_line_error(
        &env.run(&["stat", "--variant", "a=true"]),
        "--variant a: one variant has nothing to be compared with",
    );
    assert_one_line_error(
        &env.run(&["stat", "--variant", "a=", "--variant", "b=", "--order", "sequential"]),
        "--order sequential has no rounds",
    );
    assert_one_line_error(&env.run(&["stat", "--variant", "a b=true"]), "a name is 1 to 32 letters");
    assert_one_line_error(
        &env.run(&["stat", "--variant", "a=", "--variant-teardown", "b=x"]),
        "there is no --variant b",
    );
}

#[test]
fn ctrl_c_during_a_variants_run_still_runs_its_teardown() {
    let env = TestEnv::new();
    let (set, undone) = (env.root.path().join("set"), env.root.path().join("undone"));
    let b = format!("b=touch {}", set.display());
    let undo = format!("b=rm {}; touch {}", set.display(), undone.display());
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    let args = ["run", "stat", "-j", "1", "--share", "private", "-n", "3", "--duration", "3", "--warmup-runs", "0"];
    let tail = ["--variant", "a=", "--variant", &b, "--variant-teardown", &undo, "--dir", &dir, "-o", &output];
    let child = spawn_group(&[&args[..], &tail[..]].concat());
    // b's setup has run: its run is under way.
    wait_until("b's setup", || set.exists());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pgid = child.id() as i32;
    let _ = fsscale::sys::send_signal(-pgid, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(!set.exists() && undone.exists(), "the teardown put back what the setup changed");
    assert_eq!(env.results().status, fsscale::results::Status::Interrupted);
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn what_a_variants_setup_or_teardown_daemonises_dies_with_the_run() {
    let env = TestEnv::new();
    // A marker in the command line tells this test's daemons from anyone else's.
    let tag = format!("{}", 371 + std::process::id() % 1000);
    let (setup, teardown) = (format!("a=setsid -f sleep {tag}"), format!("a=setsid -f sleep 1{tag}"));
    let mut args = vec!["stat", "-j", "1", "--share", "private", "--max-runs", "2", "--variant", &setup];
    args.extend(["--variant", "b=true", "--variant-teardown", &teardown]);
    if is_root() {
        args.extend(["--memory-limit", "64M"]);
    }
    assert_success(&env.run(&args));
    let doc = env.results();
    let containment = doc.settings.containment.clone().unwrap_or_default();
    assert!(!containment.is_empty(), "the run records how its commands were contained");
    for daemon in [format!("sleep {tag}"), format!("sleep 1{tag}")] {
        let left = processes_running(&daemon);
        // Where a survivor is, and who its parent is, say which kill missed it (seen once beside two hogs).
        let cgroups: Vec<String> = left
            .iter()
            .map(|pid| {
                let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let ppid = status.lines().find(|l| l.starts_with("PPid:")).unwrap_or_default().to_string();
                format!("pid {pid} ({ppid}): {}", cgroup.replace('\n', "; "))
            })
            .collect();
        assert!(left.is_empty(), "{daemon} outlived the run ({containment}): {cgroups:?}");
    }
    if let Some(limit) = doc.settings.memory_limit {
        let dir = limit.cgroup.rsplit_once(" (").unwrap().1.trim_end_matches(')').to_string();
        assert!(!std::path::Path::new(&dir).exists(), "the memory limit's cgroup is gone: {dir}");
    }
}

#[test]
fn a_setup_that_fails_after_changing_something_is_torn_down_and_its_stderr_is_shown() {
    let env = TestEnv::new();
    let state = env.root.path().join("STATE");
    let failing = format!("b=touch {}; exit 3", state.display());
    let undo = format!("b=rm -f {}", state.display());
    let out = env.run(&["stat", "-j", "1", "--variant", "a=", "--variant", &failing, "--variant-teardown", &undo]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("exited with status 3"), "{}", stderr(&out));
    assert!(!state.exists(), "the teardown ran after the failed setup");
    assert_eq!(env.results().variant_in_effect, None, "the teardown succeeded: nothing is left set");
    // A setup that exits 0 but complains is shown and recorded, not trusted silently.
    let knob = "b=echo 'sysctl: cannot stat /proc/sys/vm/no_such_knob' >&2; echo set";
    let out =
        env.run(&["stat", "-j", "1", "--share", "private", "--max-runs", "2", "--variant", "a=", "--variant", knob]);
    assert_success(&out);
    let warning = "--variant b: its setup exited 0 but wrote to stderr (run 1 of stat): sysctl: cannot stat";
    assert!(stderr(&out).contains(warning), "{}", stderr(&out));
    let doc = env.results();
    let recorded: Vec<_> = doc.points.iter().flat_map(|p| &p.runs).filter_map(|r| r.setup_stderr.as_deref()).collect();
    assert!(!recorded.is_empty() && recorded.iter().all(|s| s.contains("no_such_knob")), "{recorded:?}");
}

#[test]
fn a_run_killed_during_a_setup_says_which_variant_may_be_in_effect() {
    let env = TestEnv::new();
    let started = env.root.path().join("started");
    let setup = format!("b=touch {}; sleep 30", started.display());
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    let args = ["run", "stat", "-j", "1", "--share", "private", "-n", "1", "--warmup-runs", "0", "--duration", "0.05"];
    let tail = ["--variant", "a=", "--variant", &setup, "--variant-teardown", "b=true", "--dir", &dir, "-o", &output];
    let child = spawn_group(&[&args[..], &tail[..]].concat());
    wait_until("b's setup", || started.exists());
    let _ = fsscale::sys::send_signal(-(child.id() as i32), libc::SIGKILL);
    let _ = child.wait_with_output();
    let doc = env.results();
    assert_eq!(doc.status, fsscale::results::Status::Running);
    assert_eq!(doc.variant_in_effect.as_deref(), Some("b"));
    let out = fsscale().arg("analyze").arg(&env.output).output().unwrap();
    let said = "its run stopped after --variant b's setup ran and before its teardown did: the setup may still be in \
                effect on that machine; undo it by hand";
    assert!(stderr(&out).contains(said) || stdout(&out).contains(said), "{}{}", stdout(&out), stderr(&out));
    if is_root() {
        let out = cleanup_output(fsscale().arg("cleanup"));
        let said = format!("--variant b's setup ran and its teardown did not (results file {})", env.output.display());
        assert!(stdout(&out).contains(&said), "{}", stdout(&out));
    }
}
