//! The page cache: cold walks (`--cache cold` drops it), warm and cold
//! points of one run, a memory limit that keeps a warm walk from it. The
//! warm walk that must stay cached holds the page cache alone while the
//! others wait; first in the suite's order (libtest starts tests by name),
//! so that their turns overlap the rest of the suite rather than trail it.

use fsscale::plan::Cache;

use crate::util::*;

#[test]
fn cold_cache_drops_caches_or_says_why_not() {
    let env = TestEnv::new();
    let _page_cache = page_cache_dropped();
    let out = env.run(&["traverse", "-j", "1", "--cache", "cold", "--scale", "0.002"]);
    if is_root() {
        assert_success(&out);
        let points = env.results().points;
        // The default shares: each worker's own copy, and one walked together.
        assert_eq!(points.len(), 2);
        assert!(points.iter().all(|p| p.cache == Some(Cache::Cold)));
        assert!(stdout(&out).contains("traverse cold cache: "), "{}", stdout(&out));
    } else {
        assert_one_line_error(&out, "--cache cold: cannot write /proc/sys/vm/drop_caches");
    }
}

#[test]
fn warm_and_cold_are_points_of_one_run_analyzed_apart() {
    if !needs_root("warm_and_cold_are_points_of_one_run_analyzed_apart") {
        return;
    }
    let env = TestEnv::new();
    let _page_cache = page_cache_dropped();
    let out = env.run(&[
        "traverse",
        "-j",
        "1,2",
        "--cache",
        "warm,cold",
        "--scale",
        "0.002",
        "--runs",
        "2",
        "--share",
        "private",
    ]);
    assert_success(&out);
    let doc = env.results();
    let caches: Vec<(usize, Option<Cache>)> = doc.points.iter().map(|p| (p.workers, p.cache)).collect();
    assert_eq!(
        caches,
        [(1, Some(Cache::Warm)), (2, Some(Cache::Warm)), (1, Some(Cache::Cold)), (2, Some(Cache::Cold))],
        "a sweep dimension, every point with its runs"
    );
    assert!(doc.points.iter().all(|p| p.runs.len() == 2 && p.complete));
    let text = stdout(&out);
    // Two tables: the warm one under the plain name, the cold one named.
    assert_eq!(text.matches("traverse: ").count(), 1, "{text}");
    assert_eq!(text.matches("traverse cold cache: ").count(), 1, "{text}");
    // The analysis keeps them apart: two series, not one of four points.
    let analysis = fsscale().args(["analyze", "--format", "json"]).arg(&env.output).output().unwrap();
    assert_success(&analysis);
    let series: serde_json::Value = serde_json::from_slice(&analysis.stdout).unwrap();
    let labels: Vec<&str> = series.as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["traverse (process, private)", "traverse (process, private) cold cache"]);
    // ministat's input for one of them, chosen by --cache; without it, both are offered.
    let export = |extra: &[&str]| {
        fsscale()
            .arg("export")
            .arg(&env.output)
            .args(["--workload", "traverse", "-j", "2"])
            .args(extra)
            .output()
            .unwrap()
    };
    let cold = export(&["--cache", "cold"]);
    assert_success(&cold);
    let cold = stdout(&cold);
    assert!(cold.starts_with("# traverse process private x2 cold cache: entries/s per run"), "{cold}");
    assert_eq!(cold.lines().count(), 3, "header and one figure per run: {cold}");
    assert_one_line_error(&export(&[]), "has 2 such points; choose one with --cache warm or --cache cold");
}

/// Bytes the runs of `doc` read from their filesystem's device, run by run.
fn device_reads(doc: &fsscale::results::ResultsFile) -> Vec<u64> {
    doc.points
        .iter()
        .flat_map(|p| &p.runs)
        .map(|r| r.device_io.expect("a made filesystem's device").read_bytes)
        .collect()
}

#[test]
fn a_memory_limit_makes_a_warm_walk_read_from_the_device() {
    if !needs_root("a_memory_limit_makes_a_warm_walk_read_from_the_device") {
        return;
    }
    // About 9,500 entries and 26 MB: cached whole, the walk reads nothing;
    // under a 16 MiB limit (the least fsscale takes) what the copy's
    // extraction left cached cannot all stay.
    let env = TestEnv::new();
    let walk = ["traverse", "--fs", "ext4", "--scale", "0.1", "-j", "1", "--share", "private"];
    // The page cache is the machine's: another test's `--cache cold` drops it
    // for every walk, so none does while the unlimited walks run. (A cold run
    // of another fsscale beside this one drops it too: one warm walk in two suffices.)
    let unlimited = {
        let _page_cache = page_cache_kept();
        assert_success(&env.run(&[&walk[..], &["-n", "3"]].concat()));
        env.results()
    };
    assert_eq!(unlimited.settings.memory_limit, None);
    let reads = device_reads(&unlimited);
    // What the machine does beside (a build's writeback, another run's
    // mkfs) may cost one walk a block or two: one of three reads nothing.
    assert!(reads.contains(&0), "a warm walk of a tree that fits reads nothing: {reads:?}");
    // A drop of the page cache only adds reads: the limited walk needs no turn.
    let out = env.run(&[&walk[..], &["-n", "2", "--memory-limit", "16M"]].concat());
    assert_success(&out);
    assert!(
        stdout(&out)
            .contains("memory limit: the workers and their commands ran in a memory cgroup of 16 MiB (cgroup v"),
        "{}",
        stdout(&out)
    );
    let limited = env.results();
    let limit = limited.settings.memory_limit.clone().unwrap();
    assert_eq!(limit.bytes, 16 << 20);
    assert!(limit.cgroup.contains("/fsscale-"), "{limit:?}");
    let reads = device_reads(&limited);
    // How much of the tree reclaim takes is the kernel's choice (5 to 24 MB
    // in a dozen runs here): every run reads, and at least one reads megabytes.
    assert!(reads.iter().all(|&r| r > 0), "under the limit every walk reads from the device: {reads:?}");
    assert!(reads.iter().any(|&r| r > 1 << 20), "under the limit a walk reads megabytes: {reads:?}");
    assert!(!std::path::Path::new(&limit.cgroup.rsplit_once(" (").unwrap().1.trim_end_matches(')')).exists());
    // Compare names the difference in the environment.
    let base = env.output.with_file_name("unlimited.json");
    std::fs::write(&base, serde_json::to_string(&unlimited).unwrap()).unwrap();
    let out = fsscale().arg("compare").arg(&base).arg(&env.output).output().unwrap();
    assert!(stdout(&out).contains("memory limit: none → 16 MiB"), "{}{}", stdout(&out), stderr(&out));
}
