//! Bad input and failing system calls: one clear line, non-zero exit, nothing left behind.

use fsscale::results::Status;
use fsscale::workloads::Workload;

use crate::util::*;

#[test]
fn same_share_is_refused_where_it_makes_no_sense() {
    let env = TestEnv::new();
    let out = env.run(&["creat-unlink", "--share", "same"]);
    assert_one_line_error(
        &out,
        "creat-unlink: --share same is not possible (every worker would create and unlink one name); use --share private or --share shared",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!env.output.exists(), "nothing was run, so no results file");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn bad_worker_lists_are_clear_errors() {
    let env = TestEnv::new();
    for (spec, needle) in [
        ("0", "--workers: '0' gives 0 workers"),
        ("abc", "--workers: 'abc' is not a worker count; use counts like 1,2,4"),
        ("4..2", "--workers: range '4..2' runs backwards; write it as 2..4"),
    ] {
        let out = env.run(&["stat", "-j", spec]);
        assert_one_line_error(&out, needle);
        assert_eq!(out.status.code(), Some(1));
    }
}

#[test]
fn bad_option_values_are_usage_errors() {
    let out = fsscale().args(["run", "--mode", "fiber"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("[possible values: process, thread]"), "{}", stderr(&out));
    let out = fsscale().args(["run", "--duration", "soon"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'soon' is not a duration"), "{}", stderr(&out));
    let out = fsscale().args(["run", "statt"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown workload \"statt\"; choose from stat,"), "{}", stderr(&out));
    // Only the formats a command renders are offered.
    let out = fsscale().args(["analyze", "r.json", "--format", "markdown"]).output().unwrap();
    assert_one_line_error(&out, "invalid value 'markdown' for '--format <FORMAT>' [possible values: text, json]");
}

#[test]
fn missing_dir_is_a_clear_error() {
    let env = TestEnv::new();
    let missing = env.root.path().join("nope");
    let out = fsscale().args(["run", "stat", "--dir"]).arg(&missing).arg("-o").arg(&env.output).output().unwrap();
    assert_one_line_error(
        &out,
        &format!("--dir {} does not exist; create it or pass another --dir", missing.display()),
    );
    assert!(!env.output.exists());
}

#[test]
fn a_run_that_fails_before_any_run_leaves_no_default_results_file() {
    // Without -o the results file is made up front in fsscale-results/; a
    // run refused at the start must not leave it there empty.
    let env = TestEnv::new();
    let missing = env.root.path().join("nope");
    let out = fsscale().current_dir(&env.dir).args(["run", "stat", "--dir"]).arg(&missing).output().unwrap();
    assert_one_line_error(&out, "does not exist; create it or pass another --dir");
    assert_eq!(entries(&env.dir.join("fsscale-results")), Vec::<String>::new());
}

#[test]
fn read_only_dir_is_a_clear_error() {
    let env = TestEnv::new();
    // Root ignores permission bits, so a read-only mount is the only honest test there.
    let (dir, _mount) = if is_root() {
        let mount = TmpfsMount::new("ro,size=1m");
        (mount.path.clone(), Some(mount))
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&env.dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        (env.dir.clone(), None)
    };
    let out = fsscale().args(["run", "stat", "--dir"]).arg(&dir).arg("-o").arg(&env.output).output().unwrap();
    assert_one_line_error(&out, &format!("cannot create a scratch directory in {}", dir.display()));
    assert!(stderr(&out).contains("--dir must be a writable directory"), "{}", stderr(&out));
}

#[test]
fn a_failing_syscall_stops_the_run_and_keeps_finished_points() {
    if !needs_root("a_failing_syscall_stops_the_run_and_keeps_finished_points") {
        return;
    }
    // One page, which fsscale's scratch marker takes: the append loop's
    // first write has no room, however few ops the machine allows in the
    // window (with 256 KiB, 64 appends had to fit in it: beside a memory
    // hog they did not, and nothing failed).
    let mount = TmpfsMount::new("size=4k");
    let env = TestEnv::new();
    let out = env.run_at(&mount.path, &["stat", "append", "-j", "1", "--share", "private"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let line = err.lines().last().unwrap();
    assert_eq!(
        line,
        "fsscale: error: append (process, private, 1 worker), run 1 of 1: worker 0: write(\"w0/f\") failed: No space left on device (ENOSPC)"
    );
    // The finished stat point is in the JSON and on the terminal.
    let doc = env.results();
    assert_eq!(doc.status, Status::Failed);
    assert_eq!(doc.error.as_deref(), Some(line.trim_start_matches("fsscale: error: ")));
    assert_eq!(doc.points[0].workload, Workload::Stat);
    assert!(doc.points[0].complete && doc.points[0].runs[0].ops > 0);
    assert!(!doc.points[1].complete && doc.points[1].runs.is_empty());
    assert!(stdout(&out).starts_with("stat: fstatat()"), "{}", stdout(&out));
    assert_eq!(entries(&mount.path), Vec::<String>::new(), "scratch removed after the failure");
}

#[test]
fn unwritable_output_fails_before_running() {
    let env = TestEnv::new();
    let out = fsscale()
        .args(["run", "stat", "--dir"])
        .arg(&env.dir)
        .args(["-o", "/proc/fsscale/results.json"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "cannot create the results directory /proc/fsscale");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_refused_run_never_shows_an_older_results_file() {
    // Regression: a run refused before it started printed the results file
    // an earlier run had left at the same -o path, as if it were its own.
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1"]));
    let out = env.run(&["creat-unlink", "--share", "same"]);
    assert_one_line_error(&out, "creat-unlink: --share same is not possible");
    assert_eq!(stdout(&out), "", "nothing of the earlier run is shown");
}

#[test]
fn a_results_path_that_is_a_device_or_fifo_is_refused_not_replaced() {
    let env = TestEnv::new();
    let fifo = env.root.path().join("fifo");
    make_fifo(&fifo, 0o600);
    let mut cmd = fsscale();
    cmd.args(["run", "stat", "-n", "1", "-d", "0.05", "--warmup-runs", "0", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&fifo);
    let out = cmd.output().unwrap();
    assert_one_line_error(&out, "is a FIFO: fsscale writes only regular files");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is still one");
    assert!(env.leftovers().is_empty());
    // `-o /dev/null` as root would have turned the system's /dev/null into a regular file.
    let mut cmd = fsscale();
    cmd.args(["run", "stat", "-n", "1", "-d", "0.05", "--dir"]).arg(&env.dir).args(["-o", "/dev/null"]);
    assert_one_line_error(&cmd.output().unwrap(), "/dev/null is a character device");
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    // A refused -o leaves no journal beside it, in the devices directory or elsewhere.
    assert!(!fsscale::results::journal_path(&fifo).exists(), "a journal was left beside the FIFO");
    if is_root() {
        assert!(!std::path::Path::new("/dev/null.journal").exists(), "a journal was left in /dev");
    }
}

#[test]
fn a_memory_limit_below_the_minimum_is_shown_as_given() {
    let env = TestEnv::new();
    let out = env.run(&["stat", "-j", "1", "--memory-limit", "1"]);
    assert_one_line_error(&out, "--memory-limit 1 byte: below 16 MiB the workers themselves do not fit");
}
