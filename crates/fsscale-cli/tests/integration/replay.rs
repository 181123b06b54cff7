//! `replay` (dbench loadfiles) and `--latency` histograms.

use fsscale::replay::OpKind;
use fsscale::results::{ResultsFile, Status};

use crate::util::*;

/// A trace whose mix is counted by hand: 2 NTCreateX, 2 WriteX, 1 ReadX, ...
pub const TINY: &str = r#"# hand-counted: 14 ops, 12 kinds, 3 x 4096 bytes per pass
Deltree "\t" NT_STATUS_OK
Mkdir "\t" NT_STATUS_OK
NTCreateX "\t\f" 0x0 2 1 NT_STATUS_OK
WriteX 1 0 4096 4096 NT_STATUS_OK
WriteX 1 4096 4096 4096 NT_STATUS_OK
ReadX 1 0 4096 4096 NT_STATUS_OK
Close 1 NT_STATUS_OK
QUERY_PATH_INFORMATION "\t\f" 1004 NT_STATUS_OK
QUERY_PATH_INFORMATION "\t\g" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\t\f" 0x0 1 2 NT_STATUS_OK
QUERY_FILE_INFORMATION 2 1004 NT_STATUS_OK
Close 2 NT_STATUS_OK
FIND_FIRST "\t\*" 260 1366 0 NT_STATUS_OK
Unlink "\t\f" 0x6 NT_STATUS_OK
"#;

const TINY_MIX: [(OpKind, u64); 10] = [
    (OpKind::NTCreateX, 2),
    (OpKind::Close, 2),
    (OpKind::ReadX, 1),
    (OpKind::WriteX, 2),
    (OpKind::Unlink, 1),
    (OpKind::Mkdir, 1),
    (OpKind::Deltree, 1),
    (OpKind::FindFirst, 1),
    (OpKind::QueryPath, 2),
    (OpKind::QueryFile, 1),
];

#[test]
fn replay_of_a_tiny_trace_matches_its_hand_counted_mix() {
    let env = TestEnv::new();
    let trace = env.root.path().join("tiny.load");
    std::fs::write(&trace, TINY).unwrap();
    let out = env.run(&["replay", "--trace", trace.to_str().unwrap(), "-j", "1", "--duration", "0.2"]);
    assert_success(&out);
    let doc = env.results();
    let settings = doc.settings.replay.as_ref().unwrap();
    assert_eq!(settings.trace, trace.display().to_string());
    assert_eq!(settings.ops_per_pass.iter().map(|(k, n)| (*k, *n)).collect::<Vec<_>>(), TINY_MIX);
    assert_eq!(settings.bytes_per_pass, 3 * 4096);
    let run = &doc.points[0].runs[0];
    let ops = run.replay_ops.as_ref().unwrap();
    let total: u64 = ops.values().map(|h| h.count).sum();
    assert!(total > 100, "{total}");
    // One client records a contiguous stretch of the looping trace: each kind's
    // count is its per-pass count times the full passes, plus at most one pass more.
    let passes = total / 14;
    for (kind, per_pass) in TINY_MIX {
        let got = ops.get(&kind).map_or(0, |h| h.count);
        assert!(got >= passes * per_pass && got <= (passes + 1) * per_pass, "{kind:?}: {got} for {passes} passes");
    }
    assert_eq!(ops.len(), TINY_MIX.len(), "no other kinds");
    // Bytes are those of the ReadX and WriteX replayed.
    let io = ops[&OpKind::ReadX].count + ops[&OpKind::WriteX].count;
    assert_eq!(run.bytes, Some(io * 4096));
    assert_eq!(run.latency.as_ref().unwrap().count, total);
    let table = stdout(&out);
    assert!(table.contains("operations at 1 worker (process, private), all runs:"), "{table}");
    // The header says which trace ran.
    let trace_line = format!("\n  trace: {}: 14 operations, 12.3 kB read and written per pass\n", trace.display());
    assert!(table.contains(&trace_line), "{trace_line} in {table}");
    assert!(table.contains("QUERY_PATH_INFORMATION") && table.contains("MB/s") && table.contains("p99.9"), "{table}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn the_built_in_trace_replays_in_processes_and_threads() {
    let env = TestEnv::new();
    let out = env.run(&["replay", "-j", "1,2", "--mode", "process,thread", "--duration", "0.3"]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.status, Status::Complete);
    assert_eq!(doc.settings.replay.as_ref().unwrap().trace, "fileserver (built in)");
    assert_eq!(doc.points.len(), 4);
    for p in &doc.points {
        let run = &p.runs[0];
        let ops = run.replay_ops.as_ref().unwrap();
        let recorded: u64 = ops.values().map(|h| h.count).sum();
        // The histograms cover what each worker did while it saw the window
        // open; the counters what the coordinator counted in it.
        let slack = run.ops / 50 + 100 * p.workers as u64;
        assert!(recorded.abs_diff(run.ops) <= slack, "{recorded} recorded vs {} counted", run.ops);
        assert!(ops.contains_key(&OpKind::ReadX) && ops.contains_key(&OpKind::NTCreateX));
        assert!(run.bytes.unwrap() > 0);
        // The window's intervals, each with its ops' percentiles.
        let intervals = run.timeline.latency.as_ref().expect("interval latencies");
        let samples = run.timeline.at_s.len();
        assert_eq!((intervals.ops.len(), intervals.p50_ns.len(), intervals.p99_ns.len()), (samples, samples, samples));
        let in_intervals: u64 = intervals.ops.iter().sum();
        assert!(in_intervals > 0 && in_intervals <= recorded, "{in_intervals} of {recorded}");
        for ((ops, p50), p99) in intervals.ops.iter().zip(&intervals.p50_ns).zip(&intervals.p99_ns) {
            assert!(if *ops > 0 { 0 < *p50 && p50 <= p99 } else { *p50 == 0 && *p99 == 0 }, "{intervals:?}");
        }
        let lat = p.summary.as_ref().unwrap().latency.unwrap();
        assert!(lat.p50_ns <= lat.p90_ns && lat.p90_ns <= lat.p99_ns && lat.p99_ns <= lat.p999_ns);
        assert!(
            lat.p999_ns <= lat.max_ns
                && lat.count == p.runs.iter().map(|r| r.latency.as_ref().unwrap().count).sum::<u64>()
        );
    }
    // Each operation's p99 at every client count of a series, and a note
    // exactly when some client's window covered less than a pass.
    let text = stdout(&out);
    assert!(text.contains("  p99 of each operation by clients (process, private), all runs:\n"), "{text}");
    let header = |l: &&str| l.starts_with("  operation ") && l.ends_with("x1 p99  x2 p99");
    assert_eq!(text.lines().filter(header).count(), 2, "one a series: {text}");
    let per_pass: u64 = doc.settings.replay.as_ref().unwrap().ops_per_pass.values().sum();
    let short = doc.points.iter().any(|p| p.runs.iter().any(|r| r.ops / (p.workers as u64) < per_pass));
    assert_eq!(text.contains("  note: a client's window covered "), short, "{per_pass} ops a pass: {text}");
    let page = env.root.path().join("report.html");
    assert_success(&fsscale().arg("report").arg(&env.output).arg("-o").arg(&page).output().unwrap());
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<table class=\"replay\">").count(), 2, "one a series");
    assert!(html.contains("<th>x1 p99</th><th>x2 p99</th>"));
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn malformed_and_divergent_traces_name_the_line() {
    let env = TestEnv::new();
    let bad = env.root.path().join("bad.load");
    std::fs::write(&bad, "Mkdir \"\\a\" NT_STATUS_OK\n# comment\nReadX 1 0 NT_STATUS_OK\n").unwrap();
    let out = env.run(&["replay", "--trace", bad.to_str().unwrap()]);
    assert_one_line_error(&out, &format!("--trace {}: line 3: ReadX needs 4 arguments", bad.display()));
    assert!(!env.output.exists(), "refused before anything ran");
    std::fs::write(
        &bad,
        "Mkdir \"\\a\" NT_STATUS_OK\nNTCreateX \"\\a\\x\" 0x0 2 5 NT_STATUS_OK\nClose 5 NT_STATUS_OK\nRmdir \"\\a\" NT_STATUS_OK\n",
    )
    .unwrap();
    // The directory still holds x, so the Rmdir recorded as succeeding fails: a divergence, named by line.
    let out = env.run(&["replay", "--trace", bad.to_str().unwrap(), "--duration", "0.1"]);
    assert_one_line_error(&out, ", line 4: Rmdir: rmdir(\"a\") failed: Directory not empty (ENOTEMPTY)");
    assert_eq!(env.results().status, Status::Failed);
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let missing = env.run(&["replay", "--trace", "/nonexistent/x.load"]);
    assert_one_line_error(&missing, "--trace /nonexistent/x.load: cannot read the loadfile");
    let shared = env.run(&["replay", "--share", "shared"]);
    assert_one_line_error(&shared, "replay: --share shared is not possible");
    assert_one_line_error(&env.run(&["stat", "--trace", "x"]), "--trace is for the replay workload");
}

#[test]
fn latency_histograms_are_opt_in_for_fixed_time_loops() {
    let env = TestEnv::new();
    let out =
        env.run(&["stat", "open-close", "--latency", "-j", "1,2", "--mode", "process,thread", "--share", "private"]);
    assert_success(&out);
    let doc = env.results();
    assert!(doc.settings.latency);
    assert_eq!(doc.points.len(), 8);
    for p in &doc.points {
        let run = &p.runs[0];
        let h = run.latency.as_ref().expect("histogram per run");
        let slack = run.ops / 50 + 100 * p.workers as u64;
        assert!(h.count.abs_diff(run.ops) <= slack, "{} timed vs {} counted", h.count, run.ops);
        assert_eq!(h.buckets.iter().map(|b| b.1).sum::<u64>(), h.count);
        assert!(h.min_ns > 0 && h.min_ns <= h.max_ns);
        // The window's intervals, each with its ops' percentiles.
        let intervals = run.timeline.latency.as_ref().expect("interval latencies");
        let samples = run.timeline.at_s.len();
        assert_eq!((intervals.ops.len(), intervals.p50_ns.len(), intervals.p99_ns.len()), (samples, samples, samples));
        let in_intervals: u64 = intervals.ops.iter().sum();
        assert!(in_intervals > 0 && in_intervals <= h.count, "{in_intervals} of {}", h.count);
        for ((ops, p50), p99) in intervals.ops.iter().zip(&intervals.p50_ns).zip(&intervals.p99_ns) {
            assert!(if *ops > 0 { 0 < *p50 && p50 <= p99 } else { *p50 == 0 && *p99 == 0 }, "{intervals:?}");
        }
        let lat = p.summary.as_ref().unwrap().latency.unwrap();
        assert!(
            lat.p50_ns <= lat.p90_ns
                && lat.p90_ns <= lat.p99_ns
                && lat.p99_ns <= lat.p999_ns
                && lat.p999_ns <= lat.max_ns
        );
    }
    let table = stdout(&out);
    assert!(
        table.contains("efficiency     p50     p90") || table.contains("p50") && table.contains("p99.9"),
        "{table}"
    );
    assert!(table.contains("p50 ... max: latency of single ops"), "{table}");
    let report = env.output.with_extension("html");
    assert_success(&fsscale().arg("report").arg(&env.output).arg("-o").arg(&report).output().unwrap());
    let html = std::fs::read_to_string(&report).unwrap();
    // A chart per workload and mode, each with both worker counts' p50 and p99.
    assert_eq!(html.matches("private: latency over the window\n").count(), 4, "a chart per series");
    assert_eq!(html.matches("p99, 2 workers (run 1)").count(), 4);

    let plain = TestEnv::new();
    assert_success(&plain.run(&["stat", "-j", "1"]));
    let doc: ResultsFile = plain.results();
    assert!(doc.points.iter().all(|p| p.runs[0].latency.is_none() && p.summary.as_ref().unwrap().latency.is_none()));
    let text = std::fs::read_to_string(&plain.output).unwrap();
    assert!(!text.contains("latency"), "no latency fields without --latency");
}

#[test]
fn dbench_s_own_loadfile_is_every_op_and_replays_by_clients() {
    let loadfile = std::path::Path::new("/usr/share/dbench/client.txt");
    if !prerequisite(
        loadfile.exists(),
        "dbench_s_own_loadfile_is_every_op_and_replays_by_clients",
        "dbench is not installed (.ci/run installs it)",
    ) {
        return;
    }
    let env = TestEnv::new();
    // Every line of client.txt is an op (what a pass is does not depend on how long it runs).
    assert_success(&env.run(&["replay", "--trace", loadfile.to_str().unwrap(), "-j", "1"]));
    let per_pass: u64 = env.results().settings.replay.as_ref().unwrap().ops_per_pass.values().sum();
    assert_eq!(per_pass, 458_344, "every line of client.txt is an op");
    // Its first 5,000 lines by clients of 1 and 2: each run's ops are its
    // clients' and its kinds' (how many passes a client makes in a window
    // is the machine's: that every pass is whole, op for op, is the unit
    // test `replay::tests::dbench_s_own_loadfile_replays_pass_after_pass`).
    let prefix = env.root.path().join("client-prefix.txt");
    let text = std::fs::read_to_string(loadfile).unwrap();
    std::fs::write(&prefix, text.lines().take(5_000).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let out = env.run(&["replay", "--trace", prefix.to_str().unwrap(), "-j", "1,2", "--duration", "0.2"]);
    assert_success(&out);
    let doc = env.results();
    let per_pass: u64 = doc.settings.replay.as_ref().unwrap().ops_per_pass.values().sum();
    assert_eq!(per_pass, 5_000, "every line of the prefix is an op");
    assert_eq!(doc.points.iter().map(|p| p.workers).collect::<Vec<_>>(), [1, 2]);
    for point in &doc.points {
        let run = &point.runs[0];
        assert_eq!(run.per_worker_ops.len(), point.workers);
        assert!(run.per_worker_ops.iter().all(|&n| n > 0), "the window is held until every client made an op");
        assert_eq!(run.per_worker_ops.iter().sum::<u64>(), run.ops, "the run's ops are its clients'");
        // Each kind's histogram times every op a client made, the window's and those at its edges.
        let by_kind: u64 = run.replay_ops.as_ref().unwrap().values().map(|k| k.count).sum();
        assert!(by_kind >= run.ops, "{by_kind} ops timed by kind, {} in the window", run.ops);
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}
