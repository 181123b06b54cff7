//! The `traverse` workload: complete walks at every sharing level, --stat,
//! a read-only --tree, refusals and cold caches.

use std::os::unix::fs::MetadataExt;

use fsscale::plan::Mode;
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
    // private and same in both modes, shared with threads only: 5 series x 2 worker counts.
    assert_eq!(doc.points.len(), 10);
    assert!(!doc.points.iter().any(|p| p.share == Share::Shared && p.mode == Mode::Process));
    for point in &doc.points {
        for run in &point.runs {
            match point.share {
                // Cooperative: the workers' counts add up to one walk.
                Share::Shared => assert_eq!(run.ops, entries, "{point:?}"),
                _ => assert_eq!(run.per_worker_ops, vec![entries; point.workers], "{:?} {:?}", point.mode, point.share),
            }
        }
    }
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
    let doc = env.results();
    for point in &doc.points {
        assert_eq!(point.runs[0].ops, expected * if point.share == Share::Same { 2 } else { 1 });
    }
    // The settings describe the tree walked, not a generated one (no tarball was made).
    let walked = doc.settings.walked_tree.as_ref().expect("settings.walked_tree");
    assert_eq!((walked.path.as_str(), walked.entries), (tree.to_str().unwrap(), expected));
    assert!(doc.settings.untar.is_none());
    // Without --share, every worker walks all of it (same), and together where threads run (shared).
    let out = env.run(&["traverse", "--tree", tree.to_str().unwrap(), "-j", "2", "--mode", "process,thread"]);
    assert_success(&out);
    let shares: Vec<(String, Share)> = env.results().points.iter().map(|p| (p.mode.to_string(), p.share)).collect();
    assert_eq!(
        shares,
        [("process".into(), Share::Same), ("thread".into(), Share::Same), ("thread".into(), Share::Shared)]
    );
    assert_eq!(walk_meta(&tree), before, "--tree is untouched (names, mtimes, sizes)");
    // A private copy of --tree per worker would mean writing; refused.
    let out = env.run(&["traverse", "--tree", tree.to_str().unwrap(), "--share", "private"]);
    assert_one_line_error(&out, "traverse: --share private would need a copy of --tree per worker");
    let out = env.run(&["traverse", "--mode", "process", "--share", "shared"]);
    assert_one_line_error(&out, "use --mode thread (a parallel find is threaded), or --share same");
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
    let out = env.run(&["traverse", "-j", "1", "--cache", "cold", "--scale", "0.002"]);
    if is_root() {
        assert_success(&out);
        assert_eq!(env.results().points.len(), 1);
    } else {
        assert_one_line_error(&out, "--cache cold: cannot write /proc/sys/vm/drop_caches");
    }
}
