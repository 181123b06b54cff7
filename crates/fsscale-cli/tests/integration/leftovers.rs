//! What `kill -9` leaves besides scratch and filesystems: tracing instances,
//! command cgroups whose guardian died too, half-written cache tarballs.
//! `fsscale cleanup` removes each, judging liveness by lock, never by PID.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::*;

/// `kill -9` of a run's process group, returning once every process of it
/// has exited: a SIGKILLed process holds its locks (scratch, tracing
/// instance, cgroup) until then, and cleanup rightly leaves what is locked
/// alone (a worker took a moment to exit beside CI's side builds).
fn kill_group(pgid: u32) {
    let _ = fsscale::sys::send_signal(-(pgid as i32), libc::SIGKILL);
    wait_until("the killed group's processes gone", || live_processes_in_group(pgid as i32).is_empty());
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
    let out = cleanup_output(Command::new("unshare").args([
        "--pid",
        "--fork",
        "--mount-proc",
        env!("CARGO_BIN_EXE_fsscale"),
        "cleanup",
    ]));
    stdout(&out)
}

#[test]
fn a_killed_runs_tracing_instance_is_removed_by_cleanup_and_a_live_ones_is_not() {
    if !needs_root("a_killed_runs_tracing_instance_is_removed_by_cleanup_and_a_live_ones_is_not") {
        return;
    }
    // Alone: another test's `fsscale cleanup` would remove the killed run's
    // instance too, and this test asks that its own cleanup says it did
    // (seen in a clean-clone CI run).
    let _machine = machine_to_myself();
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
        // The instance is what is left behind: BPF's maps and programs go with the process.
        "--profile-via",
        "tracefs",
        "--dir",
        &dir,
        "-o",
        &output,
    ]);
    let instances = Path::new("/sys/kernel/tracing/instances");
    let prefix = format!("fsscale-{}-", child.id());
    wait_until("the run's tracing instance", || !named(instances, &prefix).is_empty());
    // Another PID namespace sees no process of that PID: the lock keeps it.
    let said = cleanup_from_another_pid_namespace();
    let live = named(instances, &prefix);
    assert_eq!(live.len(), 1, "cleanup removed a live run's tracing instance");
    let left_alone = format!("left alone: tracing instance {} (held by a live process)", live[0].display());
    assert!(said.lines().any(|l| l == left_alone), "{said}");
    kill_group(child.id());
    let _ = child.wait_with_output();
    assert!(!named(instances, &prefix).is_empty(), "kill -9 leaves the instance (nothing could remove it)");
    // Its lock goes with the last process that held it, which may be a
    // worker dying of its parent's death a moment after the group (seen in
    // a clean-clone CI run): cleanup removes the instance once it is free.
    let mut said = String::new();
    wait_until("cleanup to remove the killed run's tracing instance", || {
        said.push_str(&stdout(&cleanup_output(fsscale().arg("cleanup"))));
        named(instances, &prefix).is_empty()
    });
    assert!(said.contains("removed tracing instance"), "{said}");
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
    // A sleep of its own length, so that other tests' sleeps are not taken for it.
    let sleep = format!("sleep 60.{}", std::process::id());
    let child = spawn_group(&["run", "command", "--cmd", &sleep, "-j", "1", "-n", "1", "--dir", &dir, "-o", &output]);
    let pid = child.id();
    wait_until("the command's cgroup", || !run_cgroups(pid).is_empty());
    wait_until("the command", || !processes_running(&sleep).is_empty());
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
    // Any cleanup removes what killed runs left: no other test's runs from
    // here to this one's, which then removes it itself.
    let cleanups = cleanups();
    let _ = fsscale::sys::send_signal(guardian[0], libc::SIGKILL);
    kill_group(pid);
    let _ = child.wait_with_output();
    assert!(cgroup.exists(), "with its guardian dead, nothing removed the cgroup");
    let out = fsscale().arg("cleanup").output().unwrap();
    drop(cleanups);
    assert_success(&out);
    assert!(stdout(&out).contains(&format!("removed cgroup {}", cgroup.display())), "{}", stdout(&out));
    assert!(!cgroup.exists(), "{}", stdout(&out));
    wait_until("the command killed", || processes_running(&sleep).is_empty());
}

/// `--memory-limit` cgroups of `pid`'s run: below this test's own memory cgroup.
fn memory_cgroups(pid: u32) -> Vec<PathBuf> {
    named(&own_memory_cgroup(), &format!("fsscale-{pid}-"))
}

#[test]
fn a_memory_limits_cgroup_is_removed_at_ctrl_c_and_by_cleanup_after_kill_9() {
    if !needs_root("a_memory_limits_cgroup_is_removed_at_ctrl_c_and_by_cleanup_after_kill_9") {
        return;
    }
    let env = TestEnv::new();
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    for (signal, mode) in [(libc::SIGINT, "process"), (libc::SIGKILL, "thread")] {
        let args = ["run", "stat", "-j", "2", "-n", "1", "--duration", "60", "--memory-limit", "64M", "--force"];
        let child = spawn_group(&[&args[..], &["--mode", mode, "--dir", &dir, "-o", &output]].concat());
        let pid = child.id();
        // Process workers each, thread workers in the one process that hosts them.
        let expected = if mode == "process" { 2 } else { 1 };
        wait_until("the workers", || workers_of(pid as i32).len() == expected);
        // The cgroup the workers are in: another fsscale starting beside this
        // one (a live profiled run) may take a cgroup made but not yet locked
        // for a killed run's, and the run then makes another (seen once).
        let procs = |cgroup: &PathBuf| std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap_or_default();
        let mut found = None;
        wait_until("the workers inside the run's memory cgroup", || {
            found = memory_cgroups(pid).into_iter().find(|c| procs(c).lines().count() == expected);
            found.is_some()
        });
        let cgroup = found.expect("found above");
        let inside = procs(&cgroup);
        for worker in workers_of(pid as i32) {
            assert!(inside.lines().any(|p| p == worker.to_string()), "worker {worker} runs inside: {inside}");
        }
        // fsscale itself stays outside: the limit's OOM killer never picks it.
        assert!(!inside.lines().any(|p| p == pid.to_string()), "fsscale {pid} is outside: {inside}");
        if mode == "thread" {
            // The host joins the cgroup before it starts its threads: a state waited for, not a moment.
            let host = workers_of(pid as i32)[0];
            let threads = || std::fs::read_dir(format!("/proc/{host}/task")).map_or(0, |d| d.count());
            wait_until("the host running the 2 worker threads", || threads() >= 2);
        }
        let _ = fsscale::sys::send_signal(-(pid as i32), signal);
        let out = child.wait_with_output().unwrap();
        if signal == libc::SIGINT {
            assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
            assert!(!cgroup.exists(), "Ctrl-C leaves the memory cgroup behind");
            assert_eq!(env.results().settings.memory_limit.unwrap().bytes, 64 << 20);
        } else {
            // kill -9 leaves the memory cgroup for cleanup (the kernel's doing:
            // the signal cannot be caught). Any fsscale starting beside this
            // test sweeps killed runs' cgroups, so from here on it may be gone
            // already: what is asserted is that it is named or gone, and gone
            // after `cleanup` (the harness saw another run take it first).
            // The next run names it, as it names every other leftover.
            let out = env.run(&["stat", "-j", "1", "--memory-limit", "64M"]);
            assert_success(&out);
            let warning = format!("a killed run left the cgroup {}; `fsscale cleanup` removes it", cgroup.display());
            assert!(stderr(&out).contains(&warning) || !cgroup.exists(), "{}", stderr(&out));
            let out = cleanup_output(fsscale().arg("cleanup"));
            let removed = format!("removed cgroup {}", cgroup.display());
            assert!(stdout(&out).contains(&removed) || !cgroup.exists(), "{}", stdout(&out));
            assert!(!cgroup.exists());
        }
    }
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
    let out = cleanup_output(fsscale().env("FSSCALE_CACHE_DIR", &cache).arg("cleanup"));
    assert!(stdout(&out).contains(&format!("removed temporary file {}", partial[0].display())), "{}", stdout(&out));
    assert_eq!(named(&cache, ".tree-"), Vec::<PathBuf>::new());
}

/// Everything of run `pid` that outlived it: mounts, loop devices,
/// tracing instances, cgroups, scratch in `dir`, temporaries in `cache`,
/// processes of its group.
fn everything_of(pid: u32, dir: &Path, cache: &Path) -> Vec<String> {
    let mut left = Vec::new();
    let tag = format!("mnt-{pid}-");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    left.extend(mounts.lines().filter(|l| l.contains(&tag)).map(|l| format!("mount {l}")));
    for e in std::fs::read_dir("/sys/block").into_iter().flatten().flatten() {
        let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if backing.contains(&format!(".fsscale-fs-{pid}-")) {
            left.push(format!("loop {backing}"));
        }
    }
    let instances = named(Path::new("/sys/kernel/tracing/instances"), &format!("fsscale-{pid}-"));
    left.extend(instances.iter().map(|p| format!("tracing instance {}", p.display())));
    left.extend(run_cgroups(pid).iter().map(|p| format!("cgroup {}", p.display())));
    left.extend(named(dir, ".fsscale-").iter().map(|p| format!("scratch {}", p.display())));
    left.extend(named(cache, ".tree-").iter().map(|p| format!("temporary {}", p.display())));
    left.extend(live_processes_in_group(pid as i32).iter().map(|p| format!("process {p}")));
    left
}

// One test per phase, each signal in turn: the three run side by side.
#[test]
fn every_signal_while_generating_the_tarball_leaves_nothing_after_cleanup() {
    every_signal_leaves_nothing_after_cleanup("generating the tarball");
}

#[test]
fn every_signal_in_the_timed_window_leaves_nothing_after_cleanup() {
    every_signal_leaves_nothing_after_cleanup("in the timed window");
}

#[test]
fn every_signal_during_fixed_work_leaves_nothing_after_cleanup() {
    every_signal_leaves_nothing_after_cleanup("during fixed work");
}

fn every_signal_leaves_nothing_after_cleanup(phase: &str) {
    if !needs_root(&format!("every signal {phase} leaves nothing after cleanup")) {
        return;
    }
    let signals: [(&str, &[i32]); 6] = [
        ("SIGINT", &[libc::SIGINT]),
        ("SIGTERM", &[libc::SIGTERM]),
        ("SIGQUIT", &[libc::SIGQUIT]),
        ("SIGHUP", &[libc::SIGHUP]),
        ("SIGKILL", &[libc::SIGKILL]),
        ("SIGSTOP then SIGCONT", &[libc::SIGSTOP, libc::SIGCONT]),
    ];
    let shared_cache = std::env::temp_dir().join("fsscale-test-cache");
    // The extraction's sleep, of a length no other test's sleep has.
    let sleep = format!("sleep 0.2{}", std::process::id());
    let extract = format!("{sleep}; tar xf {{tarball}} -C {{dir}}");
    for (name, sequence) in signals {
        let env = TestEnv::new();
        let fresh_cache = env.root.path().join("cache");
        let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
        let mut args = vec!["run", "--warmup-runs", "0", "--dir", &dir, "-o", &output];
        let cache = match phase {
            "generating the tarball" => {
                // 0.2: most of a second of writing (debug build), which a stop at its first file
                // lands inside; a caught signal ends the writing between two entries.
                args.extend(["untar", "-j", "1", "-n", "1", "--scale", "0.2"]);
                &fresh_cache
            }
            "in the timed window" => {
                // A long window, signalled well inside it.
                args.extend(["stat", "-j", "2", "-n", "5", "--duration", "3", "--warmup", "0", "--fs", "tmpfs"]);
                // Through tracefs: its instance is what a killed run can leave.
                args.extend(["--profile", "locks", "--profile-via", "tracefs"]);
                &shared_cache
            }
            _ => {
                let tree = ["untar", "-j", "2", "-n", "30", "--scale", "0.05", "--fs", "tmpfs", "--profile", "locks"];
                args.extend(tree);
                args.extend(["--profile-via", "tracefs"]);
                args.extend(["--extract-cmd", &extract]);
                &shared_cache
            }
        };
        let mut cmd = fsscale();
        cmd.env("FSSCALE_CACHE_DIR", cache).args(&args);
        use std::os::unix::process::CommandExt;
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let prefix = format!("fsscale-{pid}-");
        match phase {
            "generating the tarball" => wait_until(phase, || !named(cache, ".tree-").is_empty()),
            "in the timed window" => {
                wait_until(phase, || {
                    !named(Path::new("/sys/kernel/tracing/instances"), &prefix).is_empty()
                        && live_processes_in_group(pid as i32).len() > 1
                });
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            _ => wait_until(phase, || !processes_running(&sleep).is_empty()),
        }
        for (i, &signal) in sequence.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            let _ = fsscale::sys::send_signal(-(pid as i32), signal);
        }
        let out = child.wait_with_output().unwrap();
        // A stop outside what is measured (making the tarball) harms nothing: the run goes on.
        let harmless = name == "SIGSTOP then SIGCONT" && phase == "generating the tarball";
        assert_eq!(out.status.success(), harmless, "{phase}, {name}: {}", stderr(&out));
        if !stderr(&out).is_empty() {
            assert_eq!(stderr(&out).lines().filter(|l| l.contains("panicked")).count(), 0, "{}", stderr(&out));
        }
        // What a caught signal leaves is nothing; after kill -9, cleanup
        // removes the rest. It leaves alone what a live process holds, and a
        // killed worker can take its time to exit where memory is short:
        // once the run's processes are all gone, a cleanup leaves nothing.
        let mut cleanup =
            cleanup_output(fsscale().env("FSSCALE_CACHE_DIR", cache).args(["cleanup", "--scratch", &dir]));
        wait_until(&format!("{phase}, {name}: the run's processes gone"), || {
            live_processes_in_group(pid as i32).is_empty()
        });
        // What cleanup leaves alone is held: by a killed worker still exiting
        // (its inherited locks), or by another fsscale removing it that very
        // moment (a profiled run sweeps killed runs' tracing instances as it
        // starts). Either way it goes: cleanup again until it has.
        let mut left = everything_of(pid, &env.dir, cache);
        let mut said = stdout(&cleanup);
        wait_until(&format!("{phase}, {name}: cleanup to leave nothing"), || {
            if !left.is_empty() && said.contains("left alone: ") {
                cleanup =
                    cleanup_output(fsscale().env("FSSCALE_CACHE_DIR", cache).args(["cleanup", "--scratch", &dir]));
                said = stdout(&cleanup);
                left = everything_of(pid, &env.dir, cache);
            }
            left.is_empty() || !said.contains("left alone: ")
        });
        assert!(left.is_empty(), "{phase}, {name}: left {left:?}\ncleanup said:\n{said}");
        if name != "SIGKILL" && phase != "generating the tarball" {
            let status = fsscale::results::ResultsFile::load(&env.output).map(|d| d.status);
            assert!(
                matches!(status, Ok(s) if s != fsscale::results::Status::Running),
                "{phase}, {name}: the results say {status:?}"
            );
        }
    }
}
