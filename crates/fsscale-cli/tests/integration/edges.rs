//! Smaller faults, each a clear one-line error (or the right figure) from
//! the real binary: CPU affinity, damaged results files, a window too short
//! to time, signals during mkfs, full backings, trees deeper than PATH_MAX.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use fsscale::results::{ResultsFile, Status};

use crate::util::*;

#[test]
fn cores_means_the_cpus_this_process_may_use() {
    let env = TestEnv::new();
    let out = env.run_on_cpus("0", &["stat", "-j", "cores,2xcores", "--share", "private", "--duration", "0.02"]);
    assert_success(&out);
    let doc = env.results();
    let workers: Vec<usize> = doc.points.iter().map(|p| p.workers).collect();
    assert_eq!(workers, [1, 2], "cores is 1 under taskset -c 0");
    assert_eq!(doc.host.usable_cpus, 1);
    if doc.host.online_cpus > 1 {
        assert_eq!(doc.host.allowed_cpus, [0]);
    }
}

/// A valid results file, then `edit` applied to its JSON.
fn damaged(env: &TestEnv, name: &str, edit: impl Fn(&mut serde_json::Value)) -> std::path::PathBuf {
    if !env.output.exists() {
        assert_success(&env.run(&["stat", "-j", "1,2", "--share", "private", "-n", "3", "--duration", "0.02"]));
    }
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&env.output).unwrap()).unwrap();
    edit(&mut json);
    let path = env.root.path().join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path
}

#[test]
fn damaged_or_partial_results_files_are_refused_or_flagged() {
    let env = TestEnv::new();
    let analyze = |path: &std::path::Path| fsscale().arg("analyze").arg(path).output().unwrap();
    for version in [0, 99] {
        let path = damaged(&env, &format!("v{version}.json"), |j| j["schema_version"] = version.into());
        assert_one_line_error(&analyze(&path), &format!("schema_version {version} is not one this fsscale reads"));
    }
    let path = damaged(&env, "negative.json", |j| j["points"][0]["runs"][0]["ops_per_s"] = (-5.0).into());
    assert_one_line_error(&analyze(&path), "ops_per_s is -5, which no measurement gives");
    // A failed run's file is analyzed, with a visible warning.
    let path = damaged(&env, "failed.json", |j| {
        j["status"] = "failed".into();
        j["error"] = "worker 1 died".into();
        j["points"][1]["complete"] = false.into();
    });
    let out = analyze(&path);
    assert_success(&out);
    let err = stderr(&out);
    assert!(err.contains("its run did not complete (status failed): worker 1 died"), "{err}");
    assert!(err.contains("incomplete points: stat (process, private, 2 workers: 3 of 3 runs)"), "{err}");
    let out = fsscale().arg("compare").arg(&env.output).arg(&path).output().unwrap();
    assert_success(&out);
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    // A directory and a FIFO are one-line errors (the FIFO must not block).
    assert_one_line_error(&analyze(env.root.path()), "is a directory, not a results file");
    let fifo = env.root.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_one_line_error(&analyze(&fifo), "is not a regular file");
}

#[test]
fn analysis_inputs_and_ministat_refuse_impossible_numbers() {
    let env = TestEnv::new();
    let csv = env.root.path().join("pairs.csv");
    for (bad, needle) in
        [("2,-3", "throughput must be a positive number, got -3"), ("2,inf", "got inf"), ("2,0", "got 0")]
    {
        std::fs::write(&csv, format!("1,10\n{bad}\n")).unwrap();
        let out = fsscale().args(["analyze", "--csv"]).arg(&csv).output().unwrap();
        assert_one_line_error(&out, needle);
    }
    let data = env.root.path().join("data");
    std::fs::write(&data, "1\n2\ninf\n").unwrap();
    let out = fsscale().arg("ministat").arg(&data).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("inf is not a finite number"), "{}", stderr(&out));
    std::fs::write(&data, "1\n2\n3\n").unwrap();
    let out = fsscale().args(["ministat", "-w", "100000000"]).arg(&data).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "ministat: -w 100000000 is wider than any screen; use at most 10000\n");
}

#[test]
fn a_window_too_short_to_time_is_refused() {
    let env = TestEnv::new();
    assert_one_line_error(&env.run(&["stat", "--duration", "1us"]), "--duration 1µs is shorter than fsscale can time");
    assert_one_line_error(&env.run(&["stat", "--stall-timeout", "10ms"]), "--stall-timeout 10ms is too short");
}

#[test]
fn ctrl_c_during_mkfs_is_an_interruption() {
    if !needs_root("ctrl_c_during_mkfs_is_an_interruption") {
        return;
    }
    // A slow mkfs.ext4 first on PATH: the signal lands while it runs.
    let env = TestEnv::new();
    let bin = env.root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("mkfs.ext4");
    std::fs::write(&fake, "#!/bin/sh\ntouch \"$(dirname \"$0\")/started\"\nexec sleep 20\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = env.output.display().to_string();
    let child = {
        use std::os::unix::process::CommandExt;
        fsscale()
            .env("PATH", path)
            .args(["run", "stat", "-j", "1", "-n", "1", "--fs", "ext4", "-o", &output])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    wait_until("the fake mkfs", || bin.join("started").exists());
    let _ = fsscale::sys::send_signal(-(child.id() as i32), libc::SIGINT);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted by SIGINT"), "{}", stderr(&out));
    assert_eq!(ResultsFile::load(&env.output).unwrap().status, Status::Interrupted);
    // Its own entries only: another run killed beside this one may have left some.
    let own = format!("(pid {pid})");
    let left: Vec<String> = fsscale::fs::leftovers().into_iter().filter(|l| l.ends_with(&own)).collect();
    assert_eq!(left, Vec::<String>::new(), "the registry keeps nothing of it");
}

#[test]
fn made_filesystems_need_no_writable_cwd_and_a_backing_with_room() {
    if !needs_root("made_filesystems_need_no_writable_cwd_and_a_backing_with_room") {
        return;
    }
    let env = TestEnv::new();
    let readonly = TmpfsMount::new("ro,size=1m");
    let out = fsscale()
        .current_dir(&readonly.path)
        .args(["run", "stat", "-j", "1", "-n", "1", "--duration", "0.02", "--fs", "tmpfs", "-o"])
        .arg(&env.output)
        .arg("--force")
        .output()
        .unwrap();
    assert_success(&out);
    let small = TmpfsMount::new("size=8m");
    let out = fsscale()
        .args(["run", "stat", "-j", "1", "-n", "1", "--fs", "ext4", "--fs-size", "512m", "--backing"])
        .arg(format!("file:{}", small.path.display()))
        .arg("-o")
        .arg(&env.output)
        .arg("--force")
        .output()
        .unwrap();
    assert_one_line_error(&out, "MiB free, the 512 MiB image needs its room");
    assert_eq!(entries(&small.path), Vec::<String>::new(), "no image was made");
}

#[test]
fn traverse_walks_a_tree_deeper_than_path_max() {
    // 1,500 nested directories of 2-byte names: paths of 4,500 bytes.
    let env = TestEnv::new();
    let tree = env.root.path().join("deep");
    std::fs::create_dir(&tree).unwrap();
    let mut at: std::os::fd::OwnedFd = std::fs::File::open(&tree).unwrap().into();
    for _ in 0..1500 {
        fsscale::sys::mkdirat(&at, c"dd", 0o755).unwrap();
        at = fsscale::sys::open(&at, c"dd", libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
    }
    drop(at);
    for mode in ["process", "thread"] {
        let out =
            env.run(&["traverse", "-j", "2", "--mode", mode, "--share", "same", "--tree", &tree.display().to_string()]);
        assert_success(&out);
        let run = &env.results().points[0].runs[0];
        assert_eq!(run.ops, 2 * 1500, "each of 2 workers counts 1,500 directories");
    }
    // A tree fsscale did not make is only read.
    assert!(tree.join("dd").exists());
}

#[test]
fn help_marks_explains_every_mark_and_help_names_a_subcommand() {
    let out = fsscale().args(["help", "marks"]).output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    for mark in ["!drift", "!2 modes", "!busy k/n", "~outlier", "!short", "!impossible", "~above CPUs"] {
        assert!(text.contains(&format!("  {mark}")), "{mark}: {text}");
    }
    let out = fsscale().args(["help", "compare"]).output().unwrap();
    assert_success(&out);
    assert!(stdout(&out).contains("Usage: fsscale compare"), "{}", stdout(&out));
    let out = fsscale().args(["help", "nothing"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("no help topic \"nothing\"; give one of list, run,"), "{}", stderr(&out));
}

#[test]
fn the_options_reference_is_the_command_definition() {
    let root = repo();
    let out = fsscale().args(["manpage", "--markdown"]).output().unwrap();
    assert_success(&out);
    let committed = std::fs::read_to_string(root.join("docs/REFERENCE.md")).unwrap();
    assert!(
        committed == stdout(&out),
        "docs/REFERENCE.md differs from the command definition: run `cargo run -- manpage --markdown > docs/REFERENCE.md`"
    );
    // Every option the README and the guide name exists.
    for doc in ["README.md", "docs/GUIDE.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for option in long_options(&text) {
            assert!(
                committed.contains(&format!("--{option}")) || NOT_FSSCALE_OPTIONS.contains(&option.as_str()),
                "{doc} names --{option}, which no fsscale command has"
            );
        }
    }
}

/// Options other programs take, as the docs quote their command lines.
const NOT_FSSCALE_OPTIONS: &[&str] =
    &["threads", "time", "output-format", "numjobs", "release", "features", "host", "all-targets", "bin", "target"];

/// The `--name`s in `text`.
fn long_options(text: &str) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '-') {
            continue;
        }
        let name: String = text[at + 2..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect();
        let name = name.trim_end_matches('-').to_string();
        if name.len() > 1 {
            found.insert(name);
        }
    }
    found
}
