//! The `command` workload: N concurrent copies timed to completion, and one
//! driver per point with a parsed metric; placeholders, failures, timeouts.

use std::path::Path;
use std::time::{Duration, Instant};

use fsscale::results::Status;
use fsscale::workloads::Workload;

use crate::util::*;

/// A directory outside `--dir` where test commands leave evidence.
fn log_dir(env: &TestEnv) -> std::path::PathBuf {
    let log = env.root.path().join("log");
    std::fs::create_dir_all(&log).unwrap();
    log
}

/// Waits until process `pid` has exited (gone, or a zombie awaiting its parent).
fn wait_gone(pid: i32) {
    wait_until(&format!("process {pid} exits"), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "))
    });
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn copies_run_concurrently_each_in_its_own_directory() {
    let env = TestEnv::new();
    let log = log_dir(&env);
    let log = log.display();
    // Each copy says where it ran, then waits (a minute at most) until every
    // copy of its point has: only copies that run at once all meet.
    let cmd = format!(
        "sh -c 'test -e made-by-setup && echo {{worker}} {{workers}} $FSSCALE_WORKER {{dir}} $(pwd) {{scratch}} > {log}/{{workers}}-{{worker}}; \
         i=0; while [ $(ls {log} | grep -c \"^{{workers}}-[0-9]*$\") -lt {{workers}} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; \
         [ $i -lt 600 ] && echo met > {log}/met-{{workers}}-{{worker}}'"
    );
    let cleanup = format!("sh -c 'echo cleaned > {log}/cleanup-{{workers}}-{{worker}}'");
    let prepare = format!("sh -c 'echo {{workers}} $(pwd) {{scratch}} >> {log}/prepare'");
    let out = env.run(&[
        "command",
        "--cmd",
        &cmd,
        "--setup",
        "touch made-by-setup",
        "--cleanup",
        &cleanup,
        "--prepare",
        &prepare,
        "-j",
        "1,3",
    ]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.status, Status::Complete);
    let settings = doc.settings.command.as_ref().expect("command recorded");
    assert_eq!(settings.cmd, cmd);
    assert!(!settings.shell && settings.metric.is_none());
    assert_eq!(doc.points.len(), 2);
    for point in &doc.points {
        assert_eq!(point.workload, Workload::Command);
        let run = &point.runs[0];
        assert_eq!(run.per_worker_ops, vec![1; point.workers], "one completed copy per worker");
        assert_eq!(run.completion_s.as_ref().unwrap().len(), point.workers);
    }
    // Every copy met the others of its point: they ran at once.
    for (workers, worker) in [(1, 0), (3, 0), (3, 1), (3, 2)] {
        assert_eq!(read(&env.root.path().join(format!("log/met-{workers}-{worker}"))), "met\n");
    }
    let mut dirs = Vec::new();
    for (workers, worker) in [(1, 0), (3, 0), (3, 1), (3, 2)] {
        let line = read(&env.root.path().join(format!("log/{workers}-{worker}")));
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[..3], [worker.to_string(), workers.to_string(), worker.to_string()], "{line}");
        let (dir, cwd, scratch) = (fields[3], fields[4], fields[5]);
        assert_eq!(dir, cwd, "{{dir}} is the working directory");
        assert_eq!(Path::new(dir), Path::new(scratch).join(format!("w{worker}")));
        assert!(Path::new(scratch).starts_with(&env.dir), "{scratch} is inside --dir");
        dirs.push(dir.to_string());
        assert_eq!(read(&env.root.path().join(format!("log/cleanup-{workers}-{worker}"))), "cleaned\n");
    }
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 4, "every copy of every run had a directory of its own");
    // --prepare ran once before each run, in the run's scratch directory.
    let prepared = read(&env.root.path().join("log/prepare"));
    let runs: Vec<Vec<&str>> = prepared.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(runs.iter().map(|r| r[0]).collect::<Vec<_>>(), ["1", "3"], "{prepared}");
    assert!(runs.iter().all(|r| r[1] == r[2] && Path::new(r[1]).starts_with(&env.dir)), "{prepared}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let table = stdout(&out);
    assert!(table.contains("runs/s") && table.contains("eff. concurrency"), "{table}");
}

#[test]
fn share_same_runs_every_copy_in_one_directory_with_setup_once() {
    let env = TestEnv::new();
    let log = log_dir(&env);
    let cmd = format!("sh -c 'echo $(wc -l < setup-count) $(pwd) > {}/{{worker}}'", log.display());
    let out =
        env.run(&["command", "--share", "same", "-j", "3", "--setup", "sh -c 'echo x >> setup-count'", "--cmd", &cmd]);
    assert_success(&out);
    for worker in 0..3 {
        let line = read(&log.join(worker.to_string()));
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], "1", "--setup ran once");
        assert!(fields[1].ends_with("/shared"), "{line}");
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_driver_reports_its_metric_at_each_worker_count() {
    let env = TestEnv::new();
    // No shell: $HOME stays literal, so the regex only matches unexpanded output.
    let out = env.run(&[
        "command",
        "--cmd",
        "echo $HOME clients={workers} rate={workers}00",
        "--metric",
        r"\$HOME clients=\d+ rate=([0-9]+)",
        "--metric-name",
        "tps",
        "--higher-is-better",
        "-j",
        "1,2,4",
        "-n",
        "2",
    ]);
    assert_success(&out);
    let doc = env.results();
    let values: Vec<f64> = doc.points.iter().map(|p| p.runs[0].ops_per_s).collect();
    assert_eq!(values, [100.0, 200.0, 400.0]);
    let metric = doc.points[0].metric.as_ref().expect("metric recorded");
    assert_eq!((metric.name.as_str(), metric.higher_is_better), ("tps", true));
    assert!(doc.settings.command.as_ref().unwrap().metric.as_ref().unwrap().starts_with("regex "));
    let table = stdout(&out);
    assert!(table.contains("  workers     tps    sd  speedup  efficiency  wall s"), "{table}");
    assert!(table.contains("        4  400.00  0.0%     4.00      100.0%"), "{table}");

    // With --shell the shell computes; --metric-json reads a path.
    let json = TestEnv::new();
    let out = json.run(&[
        "command",
        "--shell",
        "--cmd",
        r#"printf '{"result":{"rates":[1,%d]}}' $(({workers} * 10))"#,
        "--metric-json",
        "result.rates.1",
        "-j",
        "1,3",
    ]);
    assert_success(&out);
    let values: Vec<f64> = json.results().points.iter().map(|p| p.runs[0].ops_per_s).collect();
    assert_eq!(values, [10.0, 30.0]);
    assert_eq!(json.leftovers(), Vec::<String>::new());
}

#[test]
fn a_sysbench_client_thread_sweep() {
    let installed = std::process::Command::new("sysbench").arg("--version").output().is_ok();
    if !prerequisite(installed, "a_sysbench_client_thread_sweep", "sysbench is not installed (.ci/run installs it)") {
        return;
    }
    let env = TestEnv::new();
    let out = env.run(&[
        "command",
        "--cmd",
        "sysbench cpu --threads={workers} --cpu-max-prime=2000 --events=400 --time=0 run",
        "--metric",
        r"events per second:\s*([0-9.]+)",
        "--metric-name",
        "events/s",
        "--higher-is-better",
        "-j",
        "1,2",
        "-n",
        "2",
    ]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.points.len(), 2);
    for p in &doc.points {
        assert_eq!(p.runs.len(), 2);
        assert!(
            p.runs.iter().all(|r| r.ops_per_s > 10.0),
            "{:?}",
            p.runs.iter().map(|r| r.ops_per_s).collect::<Vec<_>>()
        );
        // The kernel splits a short process's time between user and system
        // by the ticks that landed in each (a run of a few ms may get none
        // in user mode: seen under CI); their sum is its measured runtime.
        let cpu: Vec<f64> = p.runs.iter().map(|r| r.worker_cpu.user_s + r.worker_cpu.sys_s).collect();
        assert!(cpu.iter().all(|&s| s > 0.0), "the driver's CPU time is recorded: {cpu:?}");
    }
    assert!(stdout(&out).contains("events/s"), "{}", stdout(&out));
}

#[test]
fn wall_time_drivers_compare_smaller_as_better() {
    let env = TestEnv::new();
    let fast = env.root.path().join("fast.json");
    let slow = env.root.path().join("slow.json");
    let args = ["command", "--driver", "--cmd", "sleep 0.05", "-j", "1,2", "-n", "3"];
    run_each(&env, &args, &[fast.as_path()]);
    let doc = fsscale::results::ResultsFile::load(&fast).unwrap();
    let metric = doc.points[0].metric.as_ref().unwrap();
    assert_eq!((metric.name.as_str(), metric.higher_is_better), ("time s", false));
    // A driver's figure is its wall time: never less than what it slept.
    assert!(doc.points.iter().all(|p| p.runs.iter().all(|r| r.ops_per_s >= 0.05)), "{:?}", doc.points);
    // The direction, on the real file with the times set (how long a sleep
    // takes on a busy machine is not this test's to judge): five times longer is worse.
    std::fs::copy(&fast, &slow).unwrap();
    set_rates(&fast, &[0.050, 0.051, 0.052]);
    set_rates(&slow, &[0.250, 0.252, 0.251]);
    let out = fsscale().arg("compare").arg(&fast).arg(&slow).args(["--no-color"]).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    let worse = text.lines().filter(|l| l.trim_end().ends_with("  worse")).count();
    assert_eq!(worse, 2, "a longer time is worse:\n{text}");
    // The figure is named as the driver named it, not "ops/s".
    assert!(text.contains("base mean time s") && text.contains("new mean time s") && !text.contains("ops/s"), "{text}");
    let analyzed = stdout(&fsscale().arg("analyze").arg(&fast).output().unwrap());
    assert!(analyzed.contains("1/(time s)") && !analyzed.contains(" ops/s"), "{analyzed}");
    let gate = fsscale().arg("compare").arg(&fast).arg(&slow).args(["--fail-if-worse", "10"]).output().unwrap();
    assert_eq!(gate.status.code(), Some(3));
}

#[test]
fn a_failing_command_fails_the_point_with_its_stderr() {
    let env = TestEnv::new();
    let out = env.run(&["command", "--cmd", "sh -c 'echo first >&2; echo last words >&2; exit 7'", "-j", "2"]);
    assert_one_line_error(
        &out,
        "`sh -c 'echo first >&2; echo last words >&2; exit 7'` exited with status 7: first | last words",
    );
    let doc = env.results();
    assert_eq!(doc.status, Status::Failed);
    assert_eq!(env.leftovers(), Vec::<String>::new());

    let missing = env.run(&["command", "--cmd", "fsscale-no-such-program {dir}"]);
    assert_one_line_error(&missing, "cannot run `fsscale-no-such-program ");
    assert_one_line_error(&missing, "program not found");
    let unmatched = env.run(&["command", "--cmd", "echo nothing here", "--metric", "rate=([0-9]+)"]);
    assert_one_line_error(
        &unmatched,
        "--metric 'rate=([0-9]+)' matched nothing in the command's output (last line: \"nothing here\")",
    );
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let env = TestEnv::new();
    let log = log_dir(&env);
    let cmd = format!("sh -c 'sleep 60 & echo $! > {}/bg-{{worker}}; sleep 60'", log.display());
    let started = Instant::now();
    let out = env.run(&["command", "--cmd", &cmd, "--timeout", "500ms", "-j", "2"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_one_line_error(&out, "timed out after 500ms; its process group was killed");
    for worker in 0..2 {
        let Ok(text) = std::fs::read_to_string(log.join(format!("bg-{worker}"))) else { continue };
        let pid: i32 = text.trim().parse().unwrap();
        wait_gone(pid);
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn ctrl_c_stops_every_copy() {
    let env = TestEnv::new();
    let log = log_dir(&env);
    let cmd = format!("sh -c 'echo $$ > {}/pid-{{worker}}; exec sleep 60'", log.display());
    let output = env.output.display().to_string();
    let dir = env.dir.display().to_string();
    let mut child = spawn_group(&["run", "command", "--cmd", &cmd, "-j", "3", "-n", "1", "--dir", &dir, "-o", &output]);
    wait_until("every copy started", || (0..3).all(|w| log.join(format!("pid-{w}")).exists()));
    std::thread::sleep(Duration::from_millis(100));
    let _ = fsscale::sys::send_signal(-(child.id() as i32), libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    for w in 0..3 {
        let pid: i32 = read(&log.join(format!("pid-{w}"))).trim().parse().unwrap();
        wait_gone(pid);
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
    assert_eq!(env.results().status, Status::Interrupted);
}

#[test]
fn command_options_are_checked_before_anything_runs() {
    let env = TestEnv::new();
    assert_one_line_error(&env.run(&["command"]), "the command workload needs --cmd");
    assert_one_line_error(&env.run(&["stat", "--metric", "x"]), "required arguments were not provided: --cmd <CMD>");
    assert_one_line_error(&env.run(&["stat", "--cmd", "true"]), "add `command` to the workloads");
    assert_one_line_error(&env.run(&["command", "--cmd", "echo 'oops"]), "--cmd: unterminated '");
    assert_one_line_error(
        &env.run(&["command", "--cmd", "true", "--higher-is-better"]),
        "required arguments were not provided: <--driver|--metric <REGEX>|--metric-json <PATH>>",
    );
    assert_one_line_error(
        &env.run(&["command", "--cmd", "true", "--metric", "(x"]),
        "--metric '(x' is not a valid regular expression",
    );
    assert_one_line_error(
        &env.run(&["command", "--cmd", "true", "--driver", "--share", "same"]),
        "a driver is one command per point, so --share does not apply",
    );
    assert!(!env.output.exists(), "nothing ran, so no results file");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn the_cpu_of_commands_counts_as_the_workers() {
    // Regression: worker_cpu of command copies was near 0, the child's CPU uncounted.
    let env = TestEnv::new();
    let burn = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
    for mode in ["process", "thread"] {
        let out = env.run(&["command", "--shell", "--cmd", burn, "-j", "2", "--mode", mode]);
        assert_success(&out);
        let run = &env.results().points[0].runs[0];
        // Two copies of a shell loop that takes well over 50 ms each.
        assert!(run.worker_cpu.user_s > 0.1, "{mode}: {:?}", run.worker_cpu);
        assert!(
            run.worker_cpu.user_s < 2.0 * run.elapsed_s + 0.1,
            "{mode}: more CPU than 2 workers had: {:?}",
            run.worker_cpu
        );
        assert!(stdout(&out).contains("user s  sys s"), "{}", stdout(&out));
    }
}
