//! Noise diagnostics with the real binary: a run that drifts and a machine
//! that is busy are marked in the table, recorded, and make `compare` refuse
//! a verdict.

use std::process::{Command, Stdio};

use crate::util::*;

/// A driver whose figure falls by 5 on every run (50, 45 ... 30), half the
/// steady one's: a
/// machine slowing down, exactly, whatever else the machine is doing (a
/// slowdown timed in sleeps was reordered by scheduling beside CI's builds).
fn slowing_command(env: &TestEnv) -> String {
    let counter = env.root.path().join("count");
    format!(
        "n=$(cat '{0}' 2>/dev/null || echo 0); echo $((n + 1)) > '{0}'; echo \"rate: $((50 - 5 * n))\"",
        counter.display()
    )
}

/// A driver whose figure stays about 100 (99, 100, 101 in turn).
fn steady_command(env: &TestEnv) -> String {
    let counter = env.root.path().join("count");
    format!(
        "n=$(cat '{0}' 2>/dev/null || echo 0); echo $((n + 1)) > '{0}'; echo \"rate: $((99 + n % 3))\"",
        counter.display()
    )
}

#[test]
fn drift_is_marked_and_compare_calls_it_too_noisy() {
    let metric = ["--metric", "rate: ([0-9]+)", "--higher-is-better"];
    let steady = TestEnv::new();
    let cmd = steady_command(&steady);
    assert_success(&steady.run(&[&["command", "--shell", "--cmd", &cmd, "-j", "1", "-n", "5"][..], &metric].concat()));
    let drifting = TestEnv::new();
    let cmd = slowing_command(&drifting);
    let out = drifting.run(&[&["command", "--shell", "--cmd", &cmd, "-j", "1", "-n", "5"][..], &metric].concat());
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains(" !drift"), "{text}");
    assert!(text.contains("\n!drift: the runs trend with their order"), "the legend explains it: {text}");
    // Only the marks shown, a line each; every line of the legend is short.
    assert!(!text.contains("!2 modes:") && !text.contains("!short:"), "{text}");
    let legend = text.split("\n\n").last().unwrap();
    assert!(legend.lines().all(|l| l.chars().count() <= 200), "{legend}");
    assert!(legend.len() < 1200, "{} bytes: {legend}", legend.len());
    // -q: the table and its marks, and no legend.
    std::fs::remove_file(drifting.root.path().join("count")).unwrap();
    let out = drifting
        .run(&[&["command", "--shell", "--cmd", &cmd, "-j", "1", "-n", "5", "-q", "--force"][..], &metric].concat());
    assert_success(&out);
    let quiet = stdout(&out);
    assert!(quiet.contains(" !drift") && !quiet.contains("!drift:") && !quiet.contains("fixed work:"), "{quiet}");
    let doc = drifting.results();
    let drift = doc.points[0].summary.as_ref().unwrap().diagnostics.as_ref().unwrap().drift.unwrap();
    assert_eq!(drift.rho, -1.0, "every run slower than the one before");
    // 50 ... 30 against about 100: significant, but not the system's doing.
    let out = fsscale().arg("compare").arg(&steady.output).arg(&drifting.output).output().unwrap();
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.ends_with("  too noisy")), "{text}");
    assert!(text.contains("new: drifts with run order (Spearman ρ = -1.00, p = 0.017)"), "{text}");
    assert!(!text.lines().any(|l| l.ends_with("  worse")), "no verdict of worse: {text}");
    // A gate cannot judge it either, and says so rather than passing in silence.
    let out = fsscale()
        .arg("compare")
        .arg(&steady.output)
        .arg(&drifting.output)
        .args(["--fail-if-worse", "10"])
        .output()
        .unwrap();
    assert_success(&out);
    assert!(stderr(&out).contains("fsscale: warning: command process private x1 is -"), "{}", stderr(&out));
    assert!(stderr(&out).contains("but too noisy to call ("), "{}", stderr(&out));
    assert!(stderr(&out).contains("new: drifts with run order"), "{}", stderr(&out));
}

/// Runs `body` while a process spins on CPU 0 (taking half of it from
/// whatever else is confined there): started, and on CPU 0, before `body`.
fn beside_a_hog<T>(body: impl FnOnce() -> T) -> T {
    use std::io::BufRead;
    let mut hog = Command::new("taskset")
        .args(["-c", "0", "sh", "-c", "echo spinning; while :; do :; done"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("taskset");
    let mut line = String::new();
    std::io::BufReader::new(hog.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "spinning\n", "the hog started");
    let result = body();
    let _ = hog.kill();
    let _ = hog.wait();
    result
}

#[test]
fn a_busy_machine_is_named() {
    // A spinning process on the CPU the run is confined to takes half of it.
    let env = TestEnv::new();
    let out = beside_a_hog(|| {
        env.run_on_cpus("0", &["stat", "-j", "1", "-n", "3", "--duration", "0.2", "--share", "private"])
    });
    assert_success(&out);
    let doc = env.results();
    let runs = &doc.points[0].runs;
    assert!(
        runs.iter().all(|r| r.noise.unwrap().others_cpu > 0.15),
        "{:?}",
        runs.iter().map(|r| r.noise).collect::<Vec<_>>()
    );
    assert_eq!(doc.points[0].summary.as_ref().unwrap().busy_runs, [0, 1, 2]);
    assert!(stdout(&out).contains("!busy 3/3"), "{}", stdout(&out));
    assert!(stderr(&out).contains("fsscale: warning: other work took "), "{}", stderr(&out));
    assert_eq!(doc.points[0].noise_problem().as_deref(), Some("machine busy in 3 of 3 runs"));
}

/// How far a hog moves ops/s and ops per CPU-second depends on the machine
/// and on what else runs: that is a benchmark (bench/per-cpu.sh, figures in
/// docs/BENCHMARKS.md). What holds on any machine: each run's figure is its
/// ops over its workers' CPU seconds, and compare, on ops/s, never blames a
/// hog's slowdown on the change, while on ops per CPU-second it judges.
#[test]
fn ops_per_cpu_second_are_ops_over_worker_cpu_and_compare_judges_them_beside_a_hog() {
    let args = ["stat", "-j", "1", "-n", "4", "--duration", "0.2", "--share", "private"];
    let quiet = TestEnv::new();
    let out = quiet.run_on_cpus("0", &args);
    assert_success(&out);
    assert!(stdout(&out).contains("ops/cpu-s"), "the column: {}", stdout(&out));
    assert!(stdout(&out).contains("ops/cpu-s = ops per second of the workers' own CPU time"), "{}", stdout(&out));
    let busy = TestEnv::new();
    let out = beside_a_hog(|| busy.run_on_cpus("0", &args));
    assert_success(&out);
    let (q, b) = (quiet.results(), busy.results());
    for run in q.points[0].runs.iter().chain(&b.points[0].runs) {
        let cpu = run.worker_cpu.user_s + run.worker_cpu.sys_s;
        assert!(cpu > 0.0, "a run of stat used CPU: {run:?}");
        assert!((run.ops_per_cpu_s().unwrap() * cpu - run.ops as f64).abs() < 1.0);
    }
    let (qs, bs) = (q.points[0].summary.as_ref().unwrap(), b.points[0].summary.as_ref().unwrap());
    let median_of = |runs: &[fsscale::results::RunRecord]| {
        let mut v: Vec<f64> = runs.iter().map(|r| r.ops_per_cpu_s().unwrap()).collect();
        v.sort_by(f64::total_cmp);
        (v[1] + v[2]) / 2.0
    };
    assert_eq!(qs.ops_per_cpu_s.as_ref().unwrap().median, median_of(&q.points[0].runs));
    assert_eq!(bs.ops_per_cpu_s.as_ref().unwrap().median, median_of(&b.points[0].runs));
    // On ops/s the busy side vetoes a verdict (too noisy), or, where other
    // work made the quiet side busy too, the spread leaves it unproven or
    // within noise: never worse or better.
    let out = fsscale().arg("compare").arg(&quiet.output).arg(&busy.output).output().unwrap();
    let text = stdout(&out);
    assert!(text.contains("new: machine busy"), "{text}");
    // Beside a build both sides can be busy; a significant change inside ±2% is "within noise".
    let unjudged = ["  too noisy", "  no difference proven", "  within noise"];
    assert!(text.lines().any(|l| unjudged.iter().any(|u| l.ends_with(u))), "{text}");
    assert!(!text.contains("  worse\n") && !text.contains("  better\n"), "{text}");
    let out = fsscale().arg("compare").arg("--per-cpu").arg(&quiet.output).arg(&busy.output).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("base mean ops/cpu-s"), "the figure is named: {text}");
    assert!(!text.lines().any(|l| l.ends_with("  too noisy")) && !text.contains("machine busy"), "{text}");
}

#[test]
fn a_driver_beside_other_work_is_marked_busy() {
    // A driver that spins 0.2 s and reports a figure, confined to the CPU a hog spins on.
    let env = TestEnv::new();
    let spin = "end=$(( $(date +%s%N) + 200000000 )); while [ $(date +%s%N) -lt $end ]; do :; done; echo 'rate: 7'";
    let out = beside_a_hog(|| {
        env.run_on_cpus("0", &["command", "--shell", "--cmd", spin, "--metric", "rate: ([0-9]+)", "-j", "1", "-n", "3"])
    });
    assert_success(&out);
    let text = stdout(&out);
    let row = text.lines().find(|l| l.trim_start().starts_with("1 ")).unwrap();
    assert!(row.contains("!busy "), "a driver's runs are judged too: {text}");
    let doc = env.results();
    assert!(doc.points[0].runs.iter().all(|r| r.noise.unwrap().others_cpu > 0.10), "{:?}", doc.points[0].runs);
}
