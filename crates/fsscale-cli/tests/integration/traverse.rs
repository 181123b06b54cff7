//! The `traverse` workload: complete walks at every sharing level, --stat,
//! a read-only --tree and refusals (its cold and warm caches: `cache`).

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
