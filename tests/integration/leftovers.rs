//! What `kill -9` leaves besides scratch and filesystems: tracing instances,
//! command cgroups whose guardian died too, half-written cache tarballs.
//! `fsscale cleanup` removes each, judging liveness by lock, never by PID.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

fn kill_group(pgid: u32) {
    // SAFETY: killing the process group of our own child.
    unsafe { libc::kill(-(pgid as i32), libc::SIGKILL) };
}

/// Entries of `dir` whose name starts with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(prefix)).map(|e| e.path()).collect()
        })
        .unwrap_or_default()
}

fn cleanup_from_another_pid_namespace() -> String {
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", env!("CARGO_BIN_EXE_fsscale"), "cleanup"])
        .output()
        .unwrap();
    stdout(&out)
}

#[test]
fn a_killed_runs_tracing_instance_is_removed_by_cleanup_and_a_live_ones_is_not() {
    if !needs_root("a_killed_runs_tracing_instance_is_removed_by_cleanup_and_a_live_ones_is_not") {
        return;
    }
    let env = TestEnv::new();
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    let child = spawn_group(&[
        "run",
        "stat",
        "-j",
        "1",
        "-n",
        "20",
        "--duration",
        "0.5",
        "--profile",
        "locks",
        "--dir",
        &dir,
        "-o",
        &output,
    ]);
    let instances = Path::new("/sys/kernel/tracing/instances");
    let prefix = format!("fsscale-{}-", child.id());
    wait_until("the run's tracing instance", || !named(instances, &prefix).is_empty());
    // Another PID namespace sees no process of that PID: the lock keeps it.
    cleanup_from_another_pid_namespace();
    assert!(!named(instances, &prefix).is_empty(), "cleanup removed a live run's tracing instance");
    kill_group(child.id());
    let _ = child.wait_with_output();
    assert!(!named(instances, &prefix).is_empty(), "kill -9 leaves the instance (nothing could remove it)");
    let out = fsscale().arg("cleanup").output().unwrap();
    assert!(stdout(&out).contains("removed tracing instance"), "{}", stdout(&out));
    assert_eq!(named(instances, &prefix), Vec::<PathBuf>::new());
}

/// The cgroup v2 directory where `pid`'s run keeps its commands' cgroups.
fn run_cgroups(pid: u32) -> Vec<PathBuf> {
    let Some(mount) = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .find(|l| l.contains(" - cgroup2 "))
        .and_then(|l| l.split_whitespace().nth(4).map(PathBuf::from))
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut pending = vec![mount];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if entry.file_name().to_string_lossy().starts_with(&format!("fsscale-{pid}-")) {
                    found.push(entry.path());
                } else {
                    pending.push(entry.path());
                }
            }
        }
    }
    found
}

#[test]
fn cleanup_kills_and_removes_a_command_cgroup_whose_guardian_died_too() {
    if !needs_root("cleanup_kills_and_removes_a_command_cgroup_whose_guardian_died_too") {
        return;
    }
    let env = TestEnv::new();
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    let child =
        spawn_group(&["run", "command", "--cmd", "sleep 60", "-j", "1", "-n", "1", "--dir", &dir, "-o", &output]);
    let pid = child.id();
    wait_until("the command's cgroup", || !run_cgroups(pid).is_empty());
    wait_until("the command", || !processes_running("sleep 60").is_empty());
    let cgroup = run_cgroups(pid).remove(0);
    // The guardian: fsscale's child in a session of its own. Killed first, then the run.
    let guardian: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
            // After the command name: state, ppid, pgrp, session.
            fields.len() > 3 && fields[1] == pid.to_string() && fields[3] == p.to_string()
        })
        .collect();
    assert_eq!(guardian.len(), 1, "one guardian");
    // SAFETY: killing our own grandchild.
    unsafe { libc::kill(guardian[0], libc::SIGKILL) };
    kill_group(pid);
    let _ = child.wait_with_output();
    assert!(cgroup.exists(), "with its guardian dead, nothing removed the cgroup");
    let out = fsscale().arg("cleanup").output().unwrap();
    assert!(stdout(&out).contains(&format!("removed cgroup {}", cgroup.display())), "{}", stdout(&out));
    assert!(!cgroup.exists());
    wait_until("the command killed", || processes_running("sleep 60").is_empty());
}

#[test]
fn cleanup_removes_a_tarball_a_killed_run_was_generating() {
    let env = TestEnv::new();
    let cache = env.root.path().join("cache");
    let mut cmd = fsscale();
    cmd.env("FSSCALE_CACHE_DIR", &cache)
        .args(["run", "untar", "-j", "1", "-n", "1", "--scale", "3", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&env.output)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    wait_until("a tarball being written", || !named(&cache, ".tree-").is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = named(&cache, ".tree-");
    assert_eq!(partial.len(), 1, "{partial:?}");
    let out = fsscale().env("FSSCALE_CACHE_DIR", &cache).arg("cleanup").output().unwrap();
    assert!(stdout(&out).contains(&format!("removed temporary file {}", partial[0].display())), "{}", stdout(&out));
    assert_eq!(named(&cache, ".tree-"), Vec::<PathBuf>::new());
}
