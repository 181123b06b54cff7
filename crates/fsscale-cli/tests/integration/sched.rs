//! The scheduler view with the real binary: workers that share one CPU are
//! runnable but waiting; workers that wait for a command are asleep.

use crate::util::*;

#[test]
fn workers_sharing_a_cpu_wait_on_its_runqueue() {
    let env = TestEnv::new();
    let out = env.run_on_cpus("0", &["stat", "-j", "4", "--share", "private", "--duration", "0.3"]);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("runq  asleep"), "{text}");
    assert!(text.contains("runq, asleep = share of") && text.contains("waiting for a CPU, and blocked"), "{text}");
    let doc = env.results();
    let run = &doc.points[0].runs[0];
    assert_eq!(run.sched.len(), 4, "one entry per worker: {:?}", run.sched);
    // Four CPU-bound workers on one CPU: together they run at most one
    // CPU's worth of the window, so (never asleep) they wait for it at least
    // three windows' worth between them, however the scheduler shares it.
    let shares = run.worker_sched_shares();
    for (i, share) in shares.iter().enumerate() {
        assert!(share.asleep < 0.1, "a stat loop never sleeps: worker {i}: {share:?}");
    }
    let on_cpu: f64 = run.sched.iter().map(|w| w.on_cpu_s).sum();
    let window: f64 = run.sched.iter().map(|w| w.window_s).sum();
    let waiting: f64 = run.sched.iter().map(|w| w.runqueue_s).sum();
    assert!(on_cpu <= run.elapsed_s * 1.05, "one CPU's worth at most: {on_cpu} s in {} s", run.elapsed_s);
    assert!(waiting / window > 0.6, "waiting {waiting} s of {window} s: {:?}", run.sched);
    assert!(run.sched.iter().map(|w| w.involuntary_switches).sum::<u64>() >= 3, "{:?}", run.sched);
}

#[test]
fn workers_waiting_for_a_command_are_asleep() {
    let env = TestEnv::new();
    let out = env.run(&["command", "--cmd", "sleep 0.2", "-j", "1"]);
    assert_success(&out);
    let doc = env.results();
    let share = doc.points[0].runs[0].sched_shares().expect("scheduler figures");
    // Waiting for sleep(1) is not running: asleep in wait4 (it slept at
    // least once), or, on a busy machine, waiting for a CPU (the fork's
    // child to run, the wake-up: beside two CPU hogs that was half the
    // window). What it ran was a fork and a wait, a sliver of 0.2 s.
    assert!(share.asleep + share.runqueue > 0.9, "waiting for sleep(1) is not running: {share:?}");
    assert!(share.asleep > 0.0 && doc.points[0].runs[0].sched[0].voluntary_switches >= 1, "{share:?}");
}

#[test]
fn every_run_records_the_machines_counters_and_the_workers_faults() {
    // Every op of fault-private is a page fault: the workers' own counters
    // and the machine's vmstat both see them.
    let env = TestEnv::new();
    let args = ["fault-private", "-j", "2", "-n", "2", "--share", "private", "--duration", "0.1", "--map-size", "1M"];
    let out = env.run(&args);
    assert_success(&out);
    let doc = env.results();
    for run in &doc.points[0].runs {
        let stats = &run.system_stats;
        // The machine's counters are read before the window opens and after it closes: all its faults are inside.
        let pgfault = stats.get("vmstat.pgfault").copied().unwrap_or(0);
        assert!(pgfault >= run.ops as i64, "vmstat.pgfault {pgfault} for {} faulting ops", run.ops);
        assert!(stats.get("interrupts").is_some_and(|&n| n > 0), "{stats:?}");
        assert!(stats.keys().any(|k| k.starts_with("softirqs.")), "{stats:?}");
        // Each worker's own window: it may start an op or two after the coordinator's.
        let faults: u64 = run.sched.iter().map(|w| w.minor_faults).sum();
        assert!(faults >= run.ops / 2, "{faults} minor faults for {} ops", run.ops);
    }
}
