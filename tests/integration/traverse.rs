//! The `traverse` workload: complete walks at every sharing level, --stat,
//! a read-only --tree, refusals and cold caches.

use std::os::unix::fs::MetadataExt;

use fsscale::plan::{Cache, Mode};
use fsscale::workloads::Share;

use crate::util::*;

/// The number of entries below `dir` (what a walk must count).
fn count_entries(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        n += 1;
        if entry.file_type().unwrap().is_dir() {
            n += count_entries(&entry.path());
        }
    }
    n
}

/// The directories below `dir`.
fn walkdir_dirs(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| 1 + walkdir_dirs(&e.path()))
        .sum()
}

#[test]
fn walks_count_every_entry_at_every_sharing_level() {
    let env = TestEnv::new();
    let out = env.run(&[
        "traverse",
        "-j",
        "1,3",
        "--mode",
        "process,thread",
        "--share",
        "private,shared,same",
        "--scale",
        "0.005",
    ]);
    assert_success(&out);
    let doc = env.results();
    let entries = doc.settings.untar.as_ref().unwrap().entries;
    // Every sharing level in both modes (processes share the walk through shared memory): 6 series x 2 worker counts.
    assert_eq!(doc.points.len(), 12);
    assert!(doc.points.iter().any(|p| p.share == Share::Shared && p.mode == Mode::Process));
    for point in &doc.points {
        for run in &point.runs {
            match point.share {
                // Cooperative: the workers' counts add up to one walk, each entry once.
                Share::Shared => {
                    assert_eq!(run.ops, entries, "{point:?}");
                    assert_eq!(run.per_worker_ops.iter().sum::<u64>(), entries);
                }
                _ => assert_eq!(run.per_worker_ops, vec![entries; point.workers], "{:?} {:?}", point.mode, point.share),
            }
        }
    }
    // The table says how the shared walk split between the workers.
    let text = stdout(&out);
    assert!(text.contains("work share"), "{text}");
    let row = text.lines().find(|l| l.trim_start().starts_with("3  process  shared")).expect("a cooperative row");
    assert!(row.contains('%'), "{row}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_cooperative_walk_counts_each_entry_once_at_every_worker_count() {
    let env = TestEnv::new();
    let out = env.run(&["traverse", "-j", "1,2,4,8", "--share", "shared", "--scale", "0.02", "-n", "3"]);
    assert_success(&out);
    let doc = env.results();
    let entries = doc.settings.untar.as_ref().unwrap().entries;
    // The same tree, written here to count its directories (with its top).
    let tree = env.root.path().join("same-tree");
    assert_success(&fsscale().args(["tree", "--scale", "0.02", "--dir"]).arg(&tree).output().unwrap());
    let dirs = 1 + walkdir_dirs(&tree);
    assert_eq!(doc.points.len(), 4);
    for point in &doc.points {
        for run in &point.runs {
            assert_eq!((run.ops, run.per_worker_ops.iter().sum::<u64>()), (entries, entries), "x{}", point.workers);
            assert_eq!(run.per_worker_ops.len(), point.workers);
            // Each walker's tally: every directory listed once, by one of them.
            assert_eq!(run.walk.len(), point.workers, "x{}", point.workers);
            assert_eq!(run.walk.iter().map(|w| w.dirs).sum::<u64>(), dirs, "x{}", point.workers);
            let (stolen, given) = run.walk.iter().fold((0, 0), |(s, g), w| (s + w.stolen, g + w.given));
            assert!(stolen <= given, "no walker takes from others more than they gave: {stolen} > {given}");
            if point.workers == 1 {
                assert_eq!(stolen, 0, "alone, a walker steals nothing");
            }
        }
    }
    let text = stdout(&out);
    assert!(text.contains("walkers at 8 workers (process): listed "), "{text}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn walks_a_read_only_tree_with_stat_and_never_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    assert_success(&fsscale().args(["tree", "--scale", "0.005", "--seed", "4", "--dir"]).arg(&tree).output().unwrap());
    let expected = count_entries(&tree);
    let before: Vec<(String, i64, u64)> = walk_meta(&tree);
    let env = TestEnv::new();
    let out = env.run(&[
        "traverse",
        "--tree",
        tree.to_str().unwrap(),
        "--stat",
        "-j",
        "2",
        "--share",
        "same,shared",
        "--mode",
        "thread",
    ]);
    assert_success(&out);
    // The header says which tree and that every entry was stat'ed.
    let text = stdout(&out);
    assert!(text.contains("getdents64 of every directory and fstatat() of every entry (--stat)"), "{text}");
    let tree_line = format!("\n  tree: --tree {}: {} entries", tree.display(), expected);
    assert!(text.contains(&tree_line), "{tree_line} in {text}");
    let doc = env.results();
    for point in &doc.points {
        assert_eq!(point.runs[0].ops, expected * if point.share == Share::Same { 2 } else { 1 });
    }
    // The settings describe the tree walked, not a generated one (no tarball was made).
    let walked = doc.settings.walked_tree.as_ref().expect("settings.walked_tree");
    assert_eq!((walked.path.as_str(), walked.entries), (tree.to_str().unwrap(), expected));
    assert!(doc.settings.untar.is_none());
    // Without --share, every worker walks all of it (same): N concurrent finds.
    let out = env.run(&["traverse", "--tree", tree.to_str().unwrap(), "-j", "1,2", "--mode", "process,thread"]);
    assert_success(&out);
    assert!(stdout(&out).contains("counting entries (no --stat)"), "{}", stdout(&out));
    let shares: Vec<(String, Share, usize)> =
        env.results().points.iter().map(|p| (p.mode.to_string(), p.share, p.workers)).collect();
    assert_eq!(
        shares,
        [
            ("process".into(), Share::Same, 1),
            ("process".into(), Share::Same, 2),
            ("thread".into(), Share::Same, 1),
            ("thread".into(), Share::Same, 2),
        ]
    );
    assert_eq!(walk_meta(&tree), before, "--tree is untouched (names, mtimes, sizes)");
    // A private copy of --tree per worker would mean writing; refused.
    let out = env.run(&["traverse", "--tree", tree.to_str().unwrap(), "--share", "private"]);
    assert_one_line_error(&out, "traverse: --share private would need a copy of --tree per worker");
}

fn walk_meta(dir: &std::path::Path) -> Vec<(String, i64, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        out.push((entry.path().display().to_string(), meta.mtime(), meta.len()));
        if meta.is_dir() {
            out.extend(walk_meta(&entry.path()));
        }
    }
    out.sort();
    out
}

#[test]
fn cold_cache_drops_caches_or_says_why_not() {
    let env = TestEnv::new();
    let _page_cache = page_cache_to_myself();
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
    let _page_cache = page_cache_to_myself();
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
    // About 19,000 entries and 53 MB: cached whole, the walk reads nothing;
    // under a 32 MiB limit what the copy's extraction left cached cannot all stay.
    // The page cache is the machine's: another test's `--cache cold` drops it
    // for every walk, so they take turns.
    let _page_cache = page_cache_to_myself();
    let env = TestEnv::new();
    let walk = ["traverse", "--fs", "ext4", "--scale", "0.2", "-j", "1", "-n", "2", "--share", "private"];
    assert_success(&env.run(&walk));
    let unlimited = env.results();
    assert_eq!(unlimited.settings.memory_limit, None);
    // (A cold run of another fsscale beside this one drops it too: one warm walk in two suffices.)
    let reads = device_reads(&unlimited);
    assert!(reads.contains(&0), "a warm walk of a tree that fits reads nothing: {reads:?}");
    let out = env.run(&[&walk[..], &["--memory-limit", "32M"]].concat());
    assert_success(&out);
    assert!(
        stdout(&out)
            .contains("memory limit: the workers and their commands ran in a memory cgroup of 32 MiB (cgroup v"),
        "{}",
        stdout(&out)
    );
    let limited = env.results();
    let limit = limited.settings.memory_limit.clone().unwrap();
    assert_eq!(limit.bytes, 32 << 20);
    assert!(limit.cgroup.contains("/fsscale-"), "{limit:?}");
    let reads = device_reads(&limited);
    assert!(reads.iter().all(|&r| r > 1 << 20), "under the limit every walk reads from the device: {reads:?}");
    assert!(!std::path::Path::new(&limit.cgroup.rsplit_once(" (").unwrap().1.trim_end_matches(')')).exists());
    // Compare names the difference in the environment.
    let base = env.output.with_file_name("unlimited.json");
    std::fs::write(&base, serde_json::to_string(&unlimited).unwrap()).unwrap();
    let out = fsscale().arg("compare").arg(&base).arg(&env.output).output().unwrap();
    assert!(stdout(&out).contains("memory limit: none → 32 MiB"), "{}", stdout(&out));
}
