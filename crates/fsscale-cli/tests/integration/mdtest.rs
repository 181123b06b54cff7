//! mdtest's phases: every item created, stated, read and removed once per
//! run, stonewalling, directories, and what is refused.

use fsscale::results::ResultsFile;
use fsscale::workloads::Workload;

use crate::util::*;

/// Every run of every point of `phase` did `items` per worker, exactly.
fn assert_every_item_once(doc: &ResultsFile, phase: Workload, items: u64) {
    let points: Vec<_> = doc.points.iter().filter(|p| p.workload == phase).collect();
    assert!(!points.is_empty(), "no {phase} points");
    for p in points {
        for run in &p.runs {
            assert_eq!(run.ops, p.workers as u64 * items, "{phase} x{} {}", p.workers, p.share);
            let times = run.completion_s.as_ref().expect("timed to completion");
            assert_eq!(times.len(), p.workers);
            assert!(
                (run.elapsed_s - times.iter().cloned().fold(0.0, f64::max)).abs() < 1e-9,
                "the slowest worker's time"
            );
        }
    }
}

#[test]
fn the_file_phases_do_every_item_once_in_mdtests_order() {
    let env = TestEnv::new();
    let out = env.run(&[
        "mdtest",
        "-j",
        "1,2",
        "--share",
        "private,shared",
        "-n",
        "2",
        "--items",
        "300",
        "--write-bytes",
        "100",
    ]);
    assert_success(&out);
    let doc = env.results();
    let settings = doc.settings.mdtest.as_ref().expect("mdtest settings recorded");
    assert_eq!((settings.items, settings.write_bytes, settings.stonewall_s), (300, 100, None));
    for phase in Workload::MDTEST {
        assert_every_item_once(&doc, phase, 300);
    }
    // Created files carry their bytes, and the read phase reads them all back.
    for phase in [Workload::MdtestCreate, Workload::MdtestRead] {
        for p in doc.points.iter().filter(|p| p.workload == phase) {
            assert!(p.runs.iter().all(|r| r.bytes == Some(p.workers as u64 * 300 * 100)), "{phase}");
        }
    }
    // The tables come in mdtest's order, one per phase.
    let text = stdout(&out);
    let at = |name: &str| text.find(&format!("{name}: ")).unwrap_or_else(|| panic!("no {name} table:\n{text}"));
    assert!(
        at("mdtest-create") < at("mdtest-stat")
            && at("mdtest-stat") < at("mdtest-read")
            && at("mdtest-read") < at("mdtest-remove")
    );
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn the_directory_phases_do_every_item_once() {
    let env = TestEnv::new();
    let out = env.run(&["mdtest-dirs", "-j", "2", "--share", "shared", "--items", "200"]);
    assert_success(&out);
    let doc = env.results();
    for phase in Workload::MDTEST_DIRS {
        assert_every_item_once(&doc, phase, 200);
    }
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_stonewall_ends_a_phase_for_everyone_and_leaves_nothing() {
    let env = TestEnv::new();
    // Far more items than 50 ms allow: the create phase stops at the wall.
    let out = env.run(&[
        "mdtest-create",
        "mdtest-remove",
        "-j",
        "2",
        "--share",
        "private",
        "--items",
        "40000",
        "--stonewall",
        "0.05",
    ]);
    assert_success(&out);
    let doc = env.results();
    assert_eq!(doc.settings.mdtest.as_ref().unwrap().stonewall_s, Some(0.05));
    for p in &doc.points {
        let run = &p.runs[0];
        // The wall stopped them: far from all their items (how many they made
        // by then is the machine's: none, for a worker a busy machine never ran).
        assert!(run.ops < 2 * 40000, "{}: {} items", p.workload, run.ops);
        // Every worker went on until the wall (how far past it, a batch of 64
        // items at most, is the machine's too).
        for t in run.completion_s.as_ref().unwrap() {
            assert!(*t >= 0.049, "{}: a worker stopped at {t} s, before the wall", p.workload);
        }
    }
    // What the wall left (files the remove phase did not reach, and all that create made) is gone.
    assert_eq!(env.leftovers(), Vec::<String>::new());
    assert_eq!(entries(&env.dir), Vec::<String>::new());
}

#[test]
fn mdtest_refuses_the_same_entry_in_one_line() {
    let env = TestEnv::new();
    let out = env.run(&["mdtest-stat", "--share", "same"]);
    assert_one_line_error(&out, "mdtest-stat: --share same is not possible");
}

#[test]
fn a_lookup_shape_places_and_orders_the_items_as_mdtest_names_them() {
    // strace shows what the kernel was given: every phase names each item
    // once by its absolute path, one directory below the worker's (or the
    // shared) directory, in a fixed random order the same for every phase.
    let env = TestEnv::new();
    let args = [
        "mdtest",
        "-j",
        "2",
        "--share",
        "private,shared",
        "--items",
        "30",
        "--depth",
        "2",
        "--path",
        "absolute",
        "--random",
    ];
    let test = "a_lookup_shape_places_and_orders_the_items_as_mdtest_names_them";
    let Some((out, trace)) = under_strace(&env, "openat,newfstatat,unlinkat", &args, test) else {
        return;
    };
    assert_success(&out);
    assert!(stdout(&out).contains("(mdtest's file stat) (2 deep, absolute path, random order)"), "{}", stdout(&out));
    let doc = env.results();
    let shape = doc.settings.lookup.expect("the shape recorded");
    assert_eq!((shape.depth, shape.absolute, shape.random), (2, true, true));
    for phase in Workload::MDTEST {
        assert_every_item_once(&doc, phase, 30);
    }
    let calls = std::fs::read_to_string(&trace).unwrap();
    let dir = env.dir.canonicalize().unwrap().display().to_string();
    // (call, worker directory, worker, item) of every call on an item, in order.
    let items: Vec<(&str, &str, u32, u32)> = calls
        .lines()
        .filter_map(|line| {
            // strace pads the pid column: `123  newfstatat(...`.
            let (call, rest) = line.split_once(' ')?.1.trim_start().split_once("(AT_FDCWD, \"")?;
            let path = rest.split_once('"')?.0.strip_prefix(&dir)?;
            let (parent, leaf) = path.rsplit_once("/s1/file.mdtest.")?;
            let worker_dir = parent.rsplit('/').next()?;
            let flags_create = rest.contains("O_CREAT");
            let call = match call {
                "openat" if flags_create => "create",
                "openat" => "read",
                "newfstatat" => "stat",
                "unlinkat" => "remove",
                _ => return None,
            };
            let (worker, item) = leaf.split_once('.')?;
            Some((call, worker_dir, worker.parse().ok()?, item.parse().ok()?))
        })
        .collect();
    for (call, worker_dir, worker) in [("stat", "w0", 0), ("read", "w1", 1), ("remove", "shared", 1)] {
        let timed: Vec<u32> =
            items.iter().filter(|i| i.0 == call && i.1 == worker_dir && i.2 == worker).map(|i| i.3).collect();
        // Untimed setup creates items too; the timed phases touch each once per run.
        assert!(timed.len() >= 30 && timed.len().is_multiple_of(30), "{call} in {worker_dir}: {timed:?}");
        let first: Vec<u32> = timed.iter().take(30).copied().collect();
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..30).collect::<Vec<u32>>(), "{call} in {worker_dir}: every item once");
        assert_ne!(first, sorted, "{call} in {worker_dir}: a random order");
    }
    // The read phase opens read-write, as mdtest's POSIX backend does.
    let reads: Vec<&str> = calls.lines().filter(|l| l.contains("openat(") && l.contains("/s1/file.mdtest.")).collect();
    assert!(reads.iter().all(|l| l.contains("O_RDWR")), "{reads:?}");
    assert_eq!(env.leftovers(), Vec::<String>::new());
    // --files sizes stat's and open-close's working set only.
    assert_one_line_error(&env.run(&["mdtest", "--files", "10"]), "the mdtest phases take --items");
}
