//! `fsscale list` and successful `fsscale run`s.

use std::collections::BTreeMap;

use fsscale::plan::Mode;
use fsscale::report::format_rate;
use fsscale::results::{ResultsFile, Status, SCHEMA_VERSION};
use fsscale::workloads::{Catalogue, Share, Sharing, Workload};

use crate::util::*;

#[test]
fn list_describes_every_workload() {
    let out = fsscale().arg("list").output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    for workload in Workload::ALL {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", workload.name())))
            .unwrap_or_else(|| panic!("{} missing from list:\n{text}", workload.name()));
        assert!(line.contains(&format!("one op = {}", workload.describe().op)), "{line}");
    }
    // Ten workloads, and each of mdtest's seven phases (items of their own).
    assert_eq!(text.matches("same:    refused").count(), 10 + Workload::MDTEST.len() + Workload::MDTEST_DIRS.len());
    assert_eq!(text.matches("shared:  refused").count(), 3, "untar, replay, command");
}

/// Parses the terminal tables into (workload, mode, share, workers) -> (ops/s, ops/s/worker).
fn parse_tables(text: &str) -> BTreeMap<(String, String, String, usize), (String, String)> {
    let mut rows = BTreeMap::new();
    let mut workload = String::new();
    for line in text.lines() {
        if let Some((name, _)) = line.split_once(": ") {
            if Workload::from_name(name).is_some() {
                workload = name.to_string();
                continue;
            }
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        if let Some(Ok(workers)) = cells.first().map(|c| c.parse::<usize>()) {
            let key = (workload.clone(), cells[1].to_string(), cells[2].to_string(), workers);
            rows.insert(key, (cells[3].to_string(), cells[5].to_string()));
        }
    }
    rows
}

/// Checks the invariants every finished results file must hold.
fn check_consistent(doc: &ResultsFile, table: &str) {
    assert_eq!(doc.schema_version, SCHEMA_VERSION);
    assert_eq!(doc.status, Status::Complete);
    assert!(doc.finished_at.is_some());
    assert!(doc.host.online_cpus >= 1);
    assert!(!doc.target.fs_type.is_empty());
    let rows = parse_tables(table);
    // A fixed-time window is held open until every worker made an op in it
    // (beside two hogs and a build, a worker once made none in 50 ms); fixed
    // work makes what it has, which for a worker with nothing to do is none.
    let mut worked = std::collections::BTreeMap::new();
    for point in &doc.points {
        assert!(point.complete, "{point:?}");
        assert_eq!(point.runs.len(), doc.settings.runs);
        for run in &point.runs {
            assert_eq!(run.per_worker_ops.len(), point.workers);
            assert_eq!(run.per_worker_ops.iter().sum::<u64>(), run.ops, "per-worker ops add up");
            *worked.entry(point.workload.name()).or_insert(0) += run.ops;
            // A worker that made an op ran on a CPU: its own CPU clock
            // (nanoseconds, unlike getrusage's ticks) says so, however short
            // the window and however busy the machine.
            for (i, (ops, sched)) in run.per_worker_ops.iter().zip(&run.sched).enumerate() {
                assert!(*ops == 0 || sched.on_cpu_s > 0.0, "{}: worker {i} made {ops} ops on no CPU", point.workload);
                assert!(*ops > 0 || point.workload.is_fixed_work(), "{}: worker {i} made no op", point.workload);
            }
            if point.workload.is_fixed_work() {
                let completion = run.completion_s.as_ref().expect("fixed work records completion times");
                assert_eq!(completion.len(), point.workers);
                assert_eq!(completion.iter().copied().fold(0.0, f64::max), run.elapsed_s, "time = slowest worker");
            } else {
                assert!(run.elapsed_s >= doc.settings.duration_s * 0.99, "window too short: {}", run.elapsed_s);
            }
            assert!((run.ops_per_s - run.ops as f64 / run.elapsed_s).abs() <= 1e-6 * run.ops_per_s);
            assert_eq!(run.timeline.cumulative_ops.last(), Some(&run.ops), "timeline ends at the total");
            assert!(run.timeline.cumulative_ops.windows(2).all(|w| w[0] <= w[1]), "timeline is monotonic");
            let cpu = run.system_cpu;
            let total = cpu.user + cpu.nice + cpu.system + cpu.idle + cpu.iowait + cpu.irq + cpu.softirq + cpu.steal;
            assert!((total - 1.0).abs() < 1e-9 || total == 0.0, "CPU fractions sum to 1: {total}");
        }
        let summary = point.summary.as_ref().expect("summary");
        let key = (point.workload.name().to_string(), point.mode.to_string(), point.share.to_string(), point.workers);
        let (rate, per_worker) = rows.get(&key).unwrap_or_else(|| panic!("{key:?} missing from table:\n{table}"));
        if point.workload.is_fixed_work() {
            // Columns: time, sd, entries/s: the third holds the rate.
            assert_eq!(per_worker, &format_rate(summary.ops_per_s.median), "{key:?}");
        } else {
            assert_eq!(rate, &format_rate(summary.ops_per_s.median), "{key:?}");
            assert_eq!(per_worker, &format_rate(summary.ops_per_s_per_worker_median), "{key:?}");
        }
    }
    assert_eq!(rows.len(), doc.points.len(), "one table row per point");
    for (workload, ops) in worked {
        assert!(ops > 0, "{workload}: no ops in any run");
    }
}

/// Every built-in workload at private and shared, at 1 and 2 workers, in `mode`.
fn every_workload_runs_at_private_and_shared(mode: &str) {
    let env = TestEnv::new();
    // 200 mdtest items, not 50,000: what is checked is that every point runs and adds up, not its rate.
    // 10 ms windows (a window is held open until every worker made an op in
    // it): 160 points of 50 ms were most of the CPU this test took.
    let args =
        ["all", "--mode", mode, "--share", "private,shared", "-j", "1,2", "--items", "200", "--duration", "0.01"];
    let out = env.run(&args);
    assert_success(&out);
    let doc = env.results();
    let combos: usize = Workload::ALL
        .iter()
        .filter(|w| w.is_builtin())
        .map(|w| w.supported_shares().iter().filter(|s| **s != Share::Same).count())
        .sum();
    assert_eq!(doc.points.len(), combos * 2, "every runnable combination, 2 worker counts");
    assert!(doc.points.iter().all(|p| p.mode.to_string() == mode), "{mode} only");
    assert!(doc.points.iter().any(|p| p.workload == Workload::Untar), "untar runs (at private only)");
    check_consistent(&doc, &stdout(&out));
    assert_eq!(env.leftovers(), Vec::<String>::new(), "scratch directories removed");
}

// One test per mode: they run at once (together they were the suite's last long test).
#[test]
fn every_workload_runs_as_processes_at_private_and_shared() {
    every_workload_runs_at_private_and_shared("process");
}

#[test]
fn every_workload_runs_as_threads_at_private_and_shared() {
    every_workload_runs_at_private_and_shared("thread");
}

#[test]
fn every_workload_that_allows_same_runs_at_same() {
    let env = TestEnv::new();
    let same: Vec<&str> = Workload::ALL
        .iter()
        .filter(|w| w.is_builtin() && w.check_share(Share::Same).is_ok())
        .map(|w| w.name())
        .collect();
    // fcntl-lock at same: every worker waits for byte 0 (will-it-scale's lock2).
    assert_eq!(same.len(), 19);
    assert!(same.contains(&"fcntl-lock"));
    let mut args = same.clone();
    // 10 ms windows, held open until every worker made an op: what is checked is that each point runs.
    args.extend(["--mode", "process,thread", "--share", "same", "-j", "1,3", "--duration", "0.01"]);
    let out = env.run(&args);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.points.len(), same.len() * 2 * 2);
    check_consistent(&doc, &stdout(&out));
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn many_workers_as_processes_and_threads() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "creat-unlink", "--mode", "process,thread", "--share", "shared", "-j", "256"]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.points.len(), 4);
    // Every worker took part and reported (whether any of 256 made an op in
    // a 50 ms window on a busy 2-CPU machine is the scheduler's to decide).
    for point in &doc.points {
        assert_eq!(point.workers, 256);
        let run = &point.runs[0];
        assert_eq!(run.per_worker_ops.len(), 256);
        assert_eq!(run.per_worker_ops.iter().sum::<u64>(), run.ops);
        assert_eq!(run.sched.len(), 256, "each worker's scheduler counters");
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn namespace_workloads_leave_nothing_behind_and_count_real_syscalls() {
    // strace counts the system calls the kernel actually saw: every op
    // of creat-unlink must be exactly one unlinkat of the worker's file, and
    // so on, counted against every op the workers made, in the window or
    // not (strace counts from the first to the last).
    let env = TestEnv::new();
    let Some((out, trace)) = under_strace_naming_fds(
        &env,
        "unlinkat,mkdirat,linkat",
        &["creat-unlink", "mkdir-rmdir", "link-unlink", "-j", "2", "--share", "private"],
        "namespace_workloads_leave_nothing_behind_and_count_real_syscalls",
    ) else {
        return;
    };
    assert_success(&out);
    let doc = env.results();
    let calls = std::fs::read_to_string(&trace).unwrap();
    // strace -y names each directory descriptor: `mkdirat(8</…/w1>, "m", 0700`.
    // Each op's calls name the worker's own object; setup and cleanup name others.
    let count = |call: &str, names: &str| {
        let start = format!("{call}(");
        calls
            .lines()
            .filter(|l| !l.contains("resumed") && l.split_whitespace().nth(1).is_some_and(|c| c.starts_with(&start)))
            .filter(|l| l.contains(&format!(">, {names}")))
            .count() as u64
    };
    let point = |w: Workload| &doc.points.iter().find(|p| p.workload == w).unwrap().runs[0];
    let made = |w: Workload| {
        let run = point(w);
        let made = run.ops_made.unwrap_or_else(|| panic!("{w}: every op made recorded"));
        // The window's ops, and those the workers made before it opened and before they saw it close.
        assert!(made >= run.ops && run.ops > 0, "{w}: {made} made, {} in the window", run.ops);
        made
    };
    let (creat, mkdir, link) = (made(Workload::CreatUnlink), made(Workload::MkdirRmdir), made(Workload::LinkUnlink));
    assert_eq!(count("unlinkat", "\"c\", 0"), creat, "creat-unlink: one unlinkat of its file per op");
    assert_eq!(count("mkdirat", "\"m\", "), mkdir, "mkdir-rmdir: one mkdirat per op");
    assert_eq!(count("unlinkat", "\"m\", AT_REMOVEDIR"), mkdir, "mkdir-rmdir: one rmdir per op");
    assert_eq!(count("linkat", "\"f\", "), link, "link-unlink: one linkat per op");
    assert_eq!(count("unlinkat", "\"l\", 0"), link, "link-unlink: one unlinkat of the link per op");
    eprintln!(
        "ops made (in the window): creat-unlink {creat} ({}), mkdir-rmdir {mkdir} ({}), link-unlink {link} ({})",
        point(Workload::CreatUnlink).ops,
        point(Workload::MkdirRmdir).ops,
        point(Workload::LinkUnlink).ops
    );
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn pin_binds_worker_i_to_the_ith_cpu_in_topology_order_and_records_it() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "--share", "private", "-j", "3", "--pin"]);
    assert_success(&out);
    let doc = env.results();
    assert!(doc.settings.pin);
    let cpus = doc.points[0].runs[0].pinned_cpus.clone().expect("binding recorded");
    // The CPUs it may use (all online ones, recorded as an empty list,
    // unless it runs under taskset), in the recorded topology order.
    let mut allowed: Vec<usize> = match &doc.host.allowed_cpus {
        all if all.is_empty() => (0..doc.host.online_cpus).collect(),
        some => some.clone(),
    };
    let order = doc.settings.pin_order.clone().expect("the order recorded");
    let expected: Vec<usize> = (0..3).map(|i| order[i % order.len()]).collect();
    assert_eq!(cpus, expected);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    allowed.sort_unstable();
    assert_eq!(sorted, allowed, "every usable CPU once");
    // Under taskset the binding follows the affinity mask: the last CPU
    // alone here, whatever its number.
    let last = *order.last().unwrap();
    let masked = TestEnv::new();
    assert_success(&masked.run_on_cpus(&last.to_string(), &["stat", "--share", "private", "-j", "3", "--pin"]));
    assert_eq!(masked.results().points[0].runs[0].pinned_cpus, Some(vec![last; 3]));
    let unpinned = TestEnv::new();
    assert_success(&unpinned.run(&["stat", "--share", "private", "-j", "1"]));
    assert_eq!(unpinned.results().points[0].runs[0].pinned_cpus, None);
}

#[test]
fn default_suite_and_default_output_location() {
    let env = TestEnv::new();
    let out = fsscale()
        .current_dir(env.root.path())
        // Warm-ups no longer than the window: the suite and where its file goes are checked, not warming.
        .args(["run", "-n", "1", "--duration", "0.02", "--warmup", "0", "--warmup-max", "0", "--dir"])
        .arg(&env.dir)
        .output()
        .unwrap();
    assert_success(&out);
    let results_dir = env.root.path().join("fsscale-results");
    let files = entries(&results_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with("Z.json"), "{files:?}");
    assert!(stderr(&out).contains(&format!("results: fsscale-results/{}", files[0])), "{}", stderr(&out));
    let doc = ResultsFile::load(&results_dir.join(&files[0])).unwrap();
    let cores = doc.host.online_cpus;
    let workers = fsscale::plan::default_workers(cores);
    let mut combos: Vec<(Workload, Mode, Share)> = doc.points.iter().map(|p| (p.workload, p.mode, p.share)).collect();
    combos.dedup();
    let expected: Vec<(Workload, Mode, Share)> = Workload::DEFAULT_SUITE
        .iter()
        .flat_map(|&w| {
            [Share::Private, Share::Shared]
                .into_iter()
                .filter(move |s| w.supported_shares().contains(s))
                .map(move |s| (w, Mode::Process, s))
        })
        .collect();
    assert_eq!(combos, expected);
    assert_eq!(doc.points.len(), expected.len() * workers.len());
    assert_eq!(doc.points.iter().take(workers.len()).map(|p| p.workers).collect::<Vec<_>>(), workers);
    check_consistent(&doc, &stdout(&out));
}

#[test]
fn results_record_the_command_line_and_target() {
    let env = TestEnv::new();
    let out = env.run(&["read", "--share", "private", "-j", "1", "--sample-interval", "10ms"]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.command_line[1], "run");
    assert!(doc.command_line.contains(&"read".to_string()));
    assert_eq!(doc.tool.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(doc.target.path, std::fs::canonicalize(&env.dir).unwrap().display().to_string());
    assert!(!doc.target.mount_point.is_empty() && !doc.target.mount_options.is_empty());
    assert_eq!(doc.settings.sample_interval_s, 0.01);
    let timeline = &doc.points[0].runs[0].timeline;
    assert!(timeline.at_s.len() >= 4, "{timeline:?}");
}

#[test]
fn lookup_shapes_visit_that_many_files_that_deep_by_absolute_paths() {
    // strace shows the paths the kernel was given: absolute, 3 components
    // below the worker's directory, 5 distinct files, visited in a random
    // order that is not the files' order.
    let env = TestEnv::new();
    let shape =
        ["stat", "-j", "1", "--share", "private", "--files", "5", "--depth", "3", "--path", "absolute", "--random"];
    let Some((out, trace)) =
        under_strace(&env, "newfstatat", &shape, "lookup_shapes_visit_that_many_files_that_deep_by_absolute_paths")
    else {
        return;
    };
    assert_success(&out);
    assert!(stdout(&out).contains("stat: fstatat() of a regular file (5 files, 3 deep, absolute path, random order)"));
    let doc = env.results();
    let shape = doc.settings.lookup.expect("the shape recorded");
    assert_eq!((shape.files, shape.depth, shape.absolute, shape.random), (5, 3, true, true));
    let calls = std::fs::read_to_string(&trace).unwrap();
    let dir = env.dir.canonicalize().unwrap().display().to_string();
    let visited: Vec<String> = calls
        .lines()
        .filter_map(|l| l.split_once("newfstatat(AT_FDCWD, \"")?.1.split_once('"').map(|(p, _)| p.to_string()))
        .filter(|p| p.starts_with(&dir) && p.contains("/w0/s1/s2/f"))
        .collect();
    // The window is held open until the worker made an op; how many more
    // it makes under strace is the machine's (18 in 50 ms beside a profiled
    // run). Each is the next of worker 0's fixed shuffle, cycled: f2 f3 f1
    // f4 f0, not the files' order.
    assert!(!visited.is_empty(), "no lookup of the shaped files:\n{calls}");
    let shuffle = ["f2", "f3", "f1", "f4", "f0"];
    let names: Vec<&str> = visited.iter().map(|p| p.rsplit('/').next().unwrap()).collect();
    let expected: Vec<&str> = shuffle.iter().copied().cycle().take(names.len()).collect();
    assert_eq!(names, expected, "worker 0's fixed random order, cycled");
    assert_eq!(env.leftovers(), Vec::<String>::new());
    // A shape for workloads that have no lookups is refused.
    assert_one_line_error(
        &env.run(&["creat-unlink", "--depth", "3"]),
        "shape the lookups of stat, open-close and the mdtest phases",
    );
    assert_one_line_error(&env.run(&["creat-unlink", "--files", "10"]), "sizes the working set of stat and open-close");
}

#[test]
fn append_grow_appends_its_size_and_never_truncates() {
    let env = TestEnv::new();
    let out = env.run(&["append-grow", "-j", "2", "--share", "private,shared", "--grow-size", "1M", "-n", "2"]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.settings.grow_bytes, Some(1 << 20));
    assert_eq!(doc.points.len(), 2);
    for point in &doc.points {
        for run in &point.runs {
            // 256 appends of 4 KiB by each of the 2 workers.
            assert_eq!(run.ops, 512, "{:?}", point.share);
            assert_eq!(run.bytes, Some(2 << 20));
        }
    }
    assert!(stdout(&out).contains("append-grow: fixed work: write() of 4 KiB to an O_APPEND file"));
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_log_gets_the_plan_its_time_and_progress_lines_and_quiet_gets_none() {
    let env = TestEnv::new();
    // stderr is a pipe here, as in a log: the plan, then a line at the first
    // run (and every 30 s after; this run is shorter).
    let out = env.run(&["stat", "-j", "1,2", "--share", "private", "-n", "2", "--fs", "tmpfs"]);
    assert_success(&out);
    let err = stderr(&out);
    // (A busy machine adds a warning, and the results' path follows.)
    let lines: Vec<&str> =
        err.lines().filter(|l| !l.starts_with("fsscale: warning") && !l.starts_with("results:")).collect();
    assert!(lines[0].starts_with("fsscale: 2 points, 4 runs (2 runs each); about "), "{err}");
    assert!(
        lines[1].starts_with("fsscale: [1/2] stat process private x1 on tmpfs, run 1/2: 0 of 4 runs done, about "),
        "{err}"
    );
    assert_eq!(lines.len(), 2, "{err}");
    let out = env.run(&["stat", "-j", "1", "--share", "private", "--quiet"]);
    assert_success(&out);
    // Warnings and where the results went still show; progress does not.
    assert!(
        stderr(&out).lines().all(|l| l.starts_with("fsscale: warning") || l.starts_with("results:")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn like_reruns_the_recorded_plan_exactly_and_refuses_what_changed() {
    let env = TestEnv::new();
    let args = ["stat", "-j", "1,2", "-n", "2", "--share", "private", "--order", "shuffled"];
    assert_success(&env.run(&args));
    let a = env.results();
    let b_path = env.root.path().join("b.json");
    // `--like A -o OUT`, with A's --dir given again.
    let like = |output: &std::path::Path| {
        fsscale().args(["run", "--like"]).arg(&env.output).arg("-o").arg(output).arg("--dir").arg(&env.dir).output()
    };
    let out = like(&b_path).unwrap();
    assert_success(&out);
    let b = ResultsFile::load(&b_path).unwrap();
    let plan =
        |d: &ResultsFile| d.points.iter().map(|p| (p.workload, p.share, p.workers, p.runs.len())).collect::<Vec<_>>();
    assert_eq!(plan(&a), plan(&b));
    assert_eq!((b.settings.order_seed, b.settings.duration_s), (a.settings.order_seed, a.settings.duration_s));
    // The same rounds in the same order: the seed was recorded and reused.
    let order = |d: &ResultsFile| {
        let mut runs: Vec<(usize, usize)> = d
            .points
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.runs.iter().map(move |r| (r.position.unwrap(), i)))
            .collect();
        runs.sort();
        runs.into_iter().map(|(_, i)| i).collect::<Vec<_>>()
    };
    assert_eq!(order(&a), order(&b));
    assert!(b.command_line.iter().any(|w| w.starts_with("--order-seed=")), "{:?}", b.command_line);
    // Anything but -o would change the plan.
    let out = fsscale().args(["run", "--like"]).arg(&env.output).args(["-j", "4"]).output().unwrap();
    assert_one_line_error(&out, "--workers 4 would change the plan it records");
    // A tarball that changed since is refused before anything runs.
    let tarball = env.root.path().join("t.tar");
    assert_success(&fsscale().args(["tree", "--scale", "0.002", "--tar"]).arg(&tarball).output().unwrap());
    let out = env.run(&["untar", "-j", "1", "--tarball", tarball.to_str().unwrap()]);
    assert_success(&out);
    let mut bytes = std::fs::read(&tarball).unwrap();
    bytes.truncate(bytes.len() - 1024);
    let extra = {
        let mut t = Vec::new();
        fsscale::tree::write_entry_header(&mut t, "extra", 0o644, 0, 0, b'0', "").unwrap();
        t
    };
    bytes.extend_from_slice(&extra);
    bytes.extend_from_slice(&[0u8; 1024]);
    std::fs::write(&tarball, &bytes).unwrap();
    let c_path = env.root.path().join("c.json");
    let out = like(&c_path).unwrap();
    assert_one_line_error(&out, "when it was recorded: it is not the same tarball");
    assert!(!c_path.exists());
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn the_fault_mapping_size_is_an_option_recorded_with_the_op_and_compared() {
    let env = TestEnv::new();
    let (a, b) = (env.output.with_file_name("a.json"), env.output.with_file_name("b.json"));
    let mut maps = Vec::new();
    for (size, file) in [("8M", &a), ("4M", &b)] {
        assert_success(&env.run(&["fault-private", "-j", "1", "--map-size", size]));
        let doc = env.results();
        maps.push((doc.settings.map_bytes, doc.points[0].op.clone()));
        std::fs::rename(&env.output, file).unwrap();
    }
    assert_eq!(maps[0].0, Some(8 << 20));
    assert!(maps[0].1.ends_with("again (--map-size 8 MiB)"), "{}", maps[0].1);
    assert!(maps[1].1.ends_with("again (--map-size 4 MiB)"), "{}", maps[1].1);
    let out = fsscale().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_one_line_error(&out, "defined fault-private differently (fault mapping: 8 MiB → 4 MiB)");
    let out = fsscale().args(["run", "fault-shared", "--map-size", "5000"]).output().unwrap();
    assert_one_line_error(&out, "--map-size 5000: give a whole number of 4 KiB pages, e.g. 4M or 128M");
    // Unless given, will-it-scale's 128 MiB.
    assert_success(&env.run(&["fault-shared", "-j", "1"]));
    assert_eq!(env.results().settings.map_bytes, Some(128 << 20));
    assert_eq!(env.leftovers(), Vec::<String>::new());
}
