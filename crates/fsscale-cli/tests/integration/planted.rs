//! What another local user can plant, as root runs: a link or FIFO at a
//! name fsscale opens, a store directory someone else owns or can write,
//! another program's database, a results file that passes for another
//! run's continuation or was begun on another machine.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::*;

/// A file whose bytes must never change.
fn victim(dir: &Path) -> PathBuf {
    let path = dir.join("victim");
    std::fs::write(&path, b"precious\n").unwrap();
    path
}

fn assert_victim_untouched(path: &Path) {
    assert_eq!(std::fs::read(path).unwrap(), b"precious\n", "{} was written", path.display());
}

/// A results file of fsscale's (the README's example run).
fn results_file(dir: &Path) -> PathBuf {
    let path = dir.join("results.json");
    std::fs::copy(repo().join("docs/example/tmpfs.json"), &path).unwrap();
    path
}

fn mkfifo(path: &Path) {
    make_fifo(path, 0o666);
}

fn mkdir(path: &Path, mode: u32) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_path_buf()
}

/// `cmd`'s output, failing the test (and killing it) if it has not ended
/// within 60 s: a command that waits on a planted FIFO never ends, so the
/// deadline is a hang caught, not a time measured.
pub fn output_unless_hung(cmd: &mut Command) -> Output {
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id() as i32;
    let (done, waiting) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match waiting.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = fsscale::sys::send_signal(pid, libc::SIGKILL);
            panic!("{cmd:?} hung (blocked on a planted FIFO?)");
        }
    }
}

fn history_add(db: &Path, file: &Path) -> Output {
    fsscale().args(["history", "add"]).arg(file).arg("--history-db").arg(db).output().unwrap()
}

#[test]
fn a_history_store_through_a_planted_link_or_in_a_directory_others_control_is_refused_and_nothing_is_written() {
    if !needs_root("a_history_store_through_a_planted_link_or_in_a_directory_others_control_is_refused") {
        return;
    }
    let env = TestEnv::new();
    let root = env.root.path();
    let results = results_file(root);
    let victim = victim(root);
    let own = mkdir(&root.join("own"), 0o700);
    // The store's name, its log and its shared memory, each a link to the victim.
    for (name, says) in [
        ("h.sqlite", "the history store"),
        ("h.sqlite-wal", "the store's log"),
        ("h.sqlite-shm", "the store's shared memory"),
    ] {
        std::os::unix::fs::symlink(&victim, own.join(name)).unwrap();
        let out = history_add(&own.join("h.sqlite"), &results);
        assert_one_line_error(&out, &format!("{says} "));
        assert_one_line_error(&out, "is a symbolic link; fsscale opens only its own files there");
        std::fs::remove_file(own.join(name)).unwrap();
        assert_victim_untouched(&victim);
        assert_eq!(entries(&own), Vec::<String>::new(), "nothing was made beside the link");
    }
    // A hard link to the victim at the store's name.
    std::fs::hard_link(&victim, own.join("h.sqlite")).unwrap();
    assert_one_line_error(&history_add(&own.join("h.sqlite"), &results), "a file with 2 names (a hard link)");
    std::fs::remove_file(own.join("h.sqlite")).unwrap();
    // Directories another user can write or owns, the store's or above it.
    let open = mkdir(&root.join("open"), 0o777);
    let theirs = mkdir(&root.join("theirs"), 0o700);
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let under_open = mkdir(&root.join("open/mine"), 0o700);
    for (dir, says) in [
        (&open, "is writable by others (mode 777)"),
        (&theirs, "is owned by uid 65534, not by you (uid 0)"),
        (&under_open, "which is writable by others (mode 777): another user could replace it"),
    ] {
        let out = history_add(&dir.join("h.sqlite"), &results);
        assert_one_line_error(&out, says);
        assert!(!dir.join("h.sqlite").exists(), "no store was made in {}", dir.display());
    }
    // The default store, under a data directory another user owns.
    let data = mkdir(&root.join("data"), 0o755);
    let store_dir = mkdir(&data.join("fsscale"), 0o700);
    std::os::unix::fs::chown(&store_dir, Some(65534), Some(65534)).unwrap();
    let out = fsscale().args(["history", "add"]).arg(&results).env("XDG_DATA_HOME", &data).output().unwrap();
    assert_one_line_error(&out, "is owned by uid 65534");
    assert_eq!(entries(&store_dir), Vec::<String>::new());
}

#[test]
fn a_database_fsscale_did_not_make_is_refused_before_anything_is_written() {
    let env = TestEnv::new();
    let results = results_file(env.root.path());
    let db = env.root.path().join("h.sqlite");
    assert_success(&history_add(&db, &results));
    // Another program's trigger would run inside fsscale's own insert.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE log (x); CREATE TRIGGER t AFTER INSERT ON results BEGIN INSERT INTO log VALUES (1); END;",
    )
    .unwrap();
    let mut edited: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    edited["run_id"] = "another-run".into();
    let other = env.root.path().join("other.json");
    std::fs::write(&other, edited.to_string()).unwrap();
    assert_one_line_error(&history_add(&db, &other), "has a table log that fsscale's schema version");
    let logged: i64 = conn.query_row("SELECT COUNT(*) FROM log", [], |r| r.get(0)).unwrap();
    let results_rows: i64 = conn.query_row("SELECT COUNT(*) FROM results", [], |r| r.get(0)).unwrap();
    assert_eq!((logged, results_rows), (0, 1), "the trigger never ran and nothing was added");
    // A database with tables and no schema version is never migrated into.
    let foreign = env.root.path().join("foreign.sqlite");
    rusqlite::Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE accounts (name TEXT);").unwrap();
    assert_one_line_error(&history_add(&foreign, &results), "has a table accounts but no fsscale schema version");
    let odd = env.root.path().join("odd.sqlite");
    rusqlite::Connection::open(&odd).unwrap().execute_batch("PRAGMA user_version = -1;").unwrap();
    assert_one_line_error(&history_add(&odd, &results), "has schema version -1, which no fsscale writes");
}

#[test]
fn a_file_with_a_recorded_run_id_replaces_its_record_only_as_that_run_continued() {
    let env = TestEnv::new();
    let results = results_file(env.root.path());
    let db = env.root.path().join("h.sqlite");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    doc["run_id"] = "run-under-test".into();
    let runs = doc["points"][0]["runs"].as_array().unwrap().clone();
    let mut fewer = doc.clone();
    fewer["points"][0]["runs"] = serde_json::Value::Array(runs[..1].to_vec());
    let first = env.root.path().join("first.json");
    std::fs::write(&first, fewer.to_string()).unwrap();
    assert_success(&history_add(&db, &first));
    // More runs, but another host's: refused, and the stored record stands.
    let mut moved = doc.clone();
    moved["host"]["hostname"] = "another-lab-host".into();
    let forged = env.root.path().join("forged.json");
    std::fs::write(&forged, moved.to_string()).unwrap();
    assert_one_line_error(&history_add(&db, &forged), "is not that run continued (another host)");
    let show = fsscale().args(["history", "show", "--format", "json", "--history-db"]).arg(&db).output().unwrap();
    assert_success(&show);
    assert!(!stdout(&show).contains("another-lab-host"), "{}", stdout(&show));
    // The same run with its runs continued replaces it.
    std::fs::write(&results, doc.to_string()).unwrap();
    let out = history_add(&db, &results);
    assert_success(&out);
    assert!(stdout(&out).contains("updated"), "{}", stdout(&out));
}

#[test]
fn a_fifo_planted_at_a_journal_marker_or_input_is_refused_without_waiting() {
    let env = TestEnv::new();
    // `-o X` opens X.journal to lock it.
    mkfifo(&fsscale::results::journal_path(&env.output));
    let mut run = fsscale();
    run.args(["run", "stat", "-j", "1", "-n", "1", "-d", "0.05", "--warmup-runs", "0", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&env.output);
    assert_one_line_error(
        &output_unless_hung(&mut run),
        "not a regular file or a directory (a FIFO or device was put there)",
    );
    assert!(!env.output.exists(), "no results file was begun");
    // A scratch directory's marker, in a shared --dir: the run looks for
    // killed runs' directories there, and `cleanup --scratch` reads them.
    let shared = mkdir(&env.root.path().join("shared"), 0o1777);
    let planted = mkdir(&shared.join(".fsscale-1-1-deadbeef"), 0o755);
    mkfifo(&planted.join(".fsscale-scratch"));
    let output = env.root.path().join("shared-run.json");
    let mut run = fsscale();
    run.args(["run", "stat", "-j", "1", "-n", "1", "-d", "0.05", "--warmup-runs", "0", "--dir"])
        .arg(&shared)
        .arg("-o")
        .arg(&output);
    assert_success(&output_unless_hung(&mut run));
    let mut cleanup = fsscale();
    cleanup.args(["cleanup", "--scratch"]).arg(&shared);
    let out = {
        let _cleanups = cleanups();
        output_unless_hung(&mut cleanup)
    };
    assert!(planted.join(".fsscale-scratch").exists(), "the planted directory is left alone: {}", stderr(&out));
    // Inputs read whole: a FIFO or a device is refused, never read.
    let fifo = env.root.path().join("pairs.csv");
    mkfifo(&fifo);
    for input in [fifo.as_path(), Path::new("/dev/zero")] {
        let mut analyze = fsscale();
        analyze.args(["analyze", "--csv"]).arg(input);
        assert_one_line_error(&output_unless_hung(&mut analyze), "is not a regular file");
    }
}

#[test]
fn a_run_begun_on_another_machine_is_resumed_only_with_force_which_records_this_one() {
    let env = TestEnv::new();
    assert_success(&env.run(&["stat", "-j", "1", "-n", "2"]));
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&env.output).unwrap()).unwrap();
    // As a run interrupted after its first run on another host.
    doc["status"] = "interrupted".into();
    doc["host"]["hostname"] = "elsewhere".into();
    doc["points"][0]["complete"] = false.into();
    doc["points"][0]["summary"] = serde_json::Value::Null;
    let kept = doc["points"][0]["runs"].as_array().unwrap()[..1].to_vec();
    doc["points"][0]["runs"] = serde_json::Value::Array(kept);
    std::fs::write(&env.output, doc.to_string()).unwrap();
    let resume = |force: bool| {
        let mut cmd = fsscale();
        cmd.arg("run").arg("--resume").arg(&env.output).arg("--dir").arg(&env.dir);
        if force {
            cmd.arg("--force");
        }
        cmd.output().unwrap()
    };
    let out = resume(false);
    assert_one_line_error(&out, "--resume: that run began on host elsewhere, not this host");
    assert_one_line_error(&out, "or give --force to continue here");
    let out = resume(true);
    assert_success(&out);
    let after = env.results();
    assert_eq!(after.host.hostname, "elsewhere", "the document still says where it began");
    let here = after.resumed[0].host.as_ref().expect("the resumption records this machine");
    assert_ne!(here.hostname, "elsewhere");
    assert_eq!(after.points[0].runs.len(), 2);
}
