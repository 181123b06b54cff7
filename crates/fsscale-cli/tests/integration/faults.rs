//! Faults injected into real runs: workers killed or stopped in each phase,
//! mounts and links planted where fsscale deletes or writes, concurrent
//! runs, cleanup from another PID namespace, forged registry entries,
//! commands that daemonise or flood their output, a fake extractor, a full
//! filesystem. Each checks the clear error, the exit code, that finished
//! results are kept, that nothing is left, and that nothing outside fsscale's
//! scratch was touched.

use std::path::Path;
use std::process::{Child, Output};
use std::time::Duration;

use fsscale::results::{ResultsFile, Status};

use crate::util::*;

/// Starts `fsscale run ARGS --dir DIR -o OUT` in its own process group.
fn start(env: &TestEnv, args: &[&str]) -> Child {
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    // No warm-up runs unless a test asks: these tests count on which run is which.
    let mut all = vec!["run", "--warmup-runs", "0"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--dir", &dir, "-o", &output]);
    spawn_group(&all)
}

/// Waits until `child` has `n` worker processes, each named as its index
/// (a worker names itself just after the fork: before that, it cannot be
/// told apart, and PIDs wrap), and returns them in worker order.
fn wait_for_workers(child: &Child, n: usize) -> Vec<i32> {
    let mut found = Vec::new();
    wait_until(&format!("{n} worker processes"), || {
        found = workers_of(child.id() as i32);
        found.len() >= n && found[..n].iter().all(|&pid| worker_index(pid).is_some())
    });
    found
}

fn signal(pid: i32, signal: i32) {
    let _ = fsscale::sys::send_signal(pid, signal);
}

/// Waits for `child`, failing the test if it takes longer than `limit`.
fn finish_within(child: Child, limit: Duration) -> Output {
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < limit, "fsscale took {:?} to fail", started.elapsed());
    out
}

/// The last line fsscale printed on stderr (its error).
fn error_line(out: &Output) -> String {
    stderr(out).lines().last().unwrap_or_default().to_string()
}

/// A failed run: exit 1, the error line holds `needle`, the results file
/// says failed with that error, and `--dir` holds nothing.
fn assert_failed_cleanly(env: &TestEnv, out: &Output, needle: &str) -> ResultsFile {
    assert_eq!(out.status.code(), Some(1), "stderr:\n{}", stderr(out));
    let line = error_line(out);
    assert!(line.starts_with("fsscale: error: ") && line.contains(needle), "{line}");
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
    let doc = env.results();
    assert_eq!(doc.status, Status::Failed);
    assert!(doc.error.as_deref().is_some_and(|e| e.contains(needle)), "{:?}", doc.error);
    assert_eq!(env.leftovers(), Vec::<String>::new(), "scratch left in --dir");
    doc
}

#[test]
fn a_worker_killed_in_the_timed_window_fails_the_run_and_finished_points_stay() {
    let env = TestEnv::new();
    // The first point (1 worker) finishes; the second is killed mid-window.
    let child =
        start(&env, &["stat", "-j", "1,2", "--share", "private", "-n", "1", "--duration", "3", "--warmup", "0"]);
    let workers = loop {
        let w = wait_for_workers(&child, 1);
        if w.len() == 2 {
            break w;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    signal(workers[1], libc::SIGKILL);
    let out = finish_within(child, Duration::from_secs(10));
    let doc = assert_failed_cleanly(&env, &out, "worker 1 died (killed by signal 9, SIGKILL) during the timed window");
    assert!(doc.points[0].complete && doc.points[0].runs.len() == 1, "the finished point is kept");
    assert!(doc.points[1].runs.is_empty(), "no half-measured run is recorded");
}

#[test]
fn a_worker_killed_while_setting_up_fails_the_run_in_seconds() {
    let env = TestEnv::new();
    let sleep = format!("sleep 30.{}", std::process::id());
    let child = start(&env, &["command", "--cmd", "true", "--setup", &sleep, "-j", "2", "-n", "1"]);
    let workers = wait_for_workers(&child, 2);
    std::thread::sleep(Duration::from_millis(200));
    signal(workers[0], libc::SIGKILL);
    let out = finish_within(child, Duration::from_secs(10));
    assert_failed_cleanly(&env, &out, "worker 0 died (killed by signal 9, SIGKILL) while setting up");
    wait_until("the --setup commands gone", || processes_running(&sleep).is_empty());
}

#[test]
fn a_worker_killed_at_the_start_barrier_fails_the_run() {
    let env = TestEnv::new();
    // Worker 0 is ready at once and waits at the barrier; worker 1 is still setting up.
    let sleep = format!("sleep 32.{}", std::process::id());
    let setup = format!("if [ {{worker}} = 1 ]; then {sleep}; fi");
    let child = start(&env, &["command", "--shell", "--cmd", "true", "--setup", &setup, "-j", "2", "-n", "1"]);
    let workers = wait_for_workers(&child, 2);
    wait_until("worker 1's setup", || processes_running(&sleep).len() == 1);
    std::thread::sleep(Duration::from_millis(200));
    signal(workers[0], libc::SIGKILL);
    let out = finish_within(child, Duration::from_secs(10));
    assert_failed_cleanly(&env, &out, "worker 0 died (killed by signal 9, SIGKILL) at the start barrier");
    wait_until("the setup command gone", || processes_running(&sleep).is_empty());
}

#[test]
fn a_worker_killed_during_fixed_work_fails_the_run() {
    let env = TestEnv::new();
    let sleep = format!("sleep 31.{}", std::process::id());
    let child = start(&env, &["command", "--cmd", &sleep, "-j", "2", "-n", "1"]);
    wait_until("the commands", || processes_running(&sleep).len() == 2);
    // The commands' parents, in worker order (their names say which is which).
    let mut workers: Vec<i32> = processes_running(&sleep).into_iter().filter_map(parent_of).collect();
    workers.sort_by_key(|&w| worker_index(w));
    assert_eq!(workers_of(child.id() as i32)[..2], workers[..], "the two workers, named");
    signal(workers[1], libc::SIGKILL);
    let out = finish_within(child, Duration::from_secs(10));
    assert_failed_cleanly(&env, &out, "worker 1 died (killed by signal 9, SIGKILL) during its timed job");
    wait_until("every copy gone", || processes_running(&sleep).is_empty());
}

#[test]
fn a_stopped_worker_fails_the_run_naming_it() {
    let env = TestEnv::new();
    let child =
        start(&env, &["stat", "-j", "2", "--share", "private", "-n", "1", "--duration", "30", "--stall-timeout", "1s"]);
    let workers = wait_for_workers(&child, 2);
    std::thread::sleep(Duration::from_millis(300));
    signal(workers[0], libc::SIGSTOP);
    let out = finish_within(child, Duration::from_secs(10));
    assert_failed_cleanly(&env, &out, "worker 0 was stopped (signal 19, SIGSTOP)");
    assert!(error_line(&out).contains("and stayed stopped for"), "{}", error_line(&out));
    // The stopped worker was killed, not left behind.
    wait_until("the stopped worker gone", || !Path::new(&format!("/proc/{}", workers[0])).exists());
}

#[test]
fn a_stopped_worker_in_fixed_work_fails_the_run() {
    let env = TestEnv::new();
    let child = start(&env, &["untar", "--scale", "0.05", "-j", "2", "-n", "3", "--stall-timeout", "1s"]);
    // Stop a worker of the first run while it extracts.
    let workers = wait_for_workers(&child, 2);
    signal(workers[1], libc::SIGSTOP);
    let out = finish_within(child, Duration::from_secs(15));
    let line = error_line(&out);
    // It may have finished its job before the stop landed: then it is stuck
    // after it. Either way the stop is named (never a stall: a stopped
    // worker's lack of progress is its stop's).
    assert!(line.contains("worker 1 was stopped (signal 19, SIGSTOP)"), "{line}");
    assert_failed_cleanly(&env, &out, "SIGSTOP");
}

#[test]
fn scratch_removal_never_crosses_a_bind_mount() {
    if !needs_root("scratch_removal_never_crosses_a_bind_mount") {
        return;
    }
    let env = TestEnv::new();
    let canary = Canary::new();
    let cmd = format!("mkdir b && mount --bind '{}' b", canary.path.display());
    let out = env.run(&["command", "--shell", "--cmd", &cmd, "-j", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(line.contains("/w0/b alone: a mount inside the scratch directory"), "{line}");
    canary.assert_untouched();
    // What the command mounted is the user's to unmount; then cleanup removes the rest.
    let scratch = env.dir.join(&env.leftovers()[0]);
    let mounted = scratch.join("w0/b");
    assert!(std::process::Command::new("umount").arg(&mounted).status().unwrap().success());
    let out = cleanup_output(fsscale().args(["cleanup", "--scratch"]).arg(&env.dir));
    assert_success(&out);
    assert!(stdout(&out).contains(&format!("removed scratch directory {}", scratch.display())), "{}", stdout(&out));
    assert_eq!(env.leftovers(), Vec::<String>::new());
    canary.assert_untouched();
}

#[test]
fn results_and_tarballs_are_never_written_through_planted_links() {
    let env = TestEnv::new();
    let canary = Canary::new();
    let victim = canary.path.join("precious");
    // The results file itself, and the old fixed temporary name, as symlinks to the victim.
    std::os::unix::fs::symlink(&victim, &env.output).unwrap();
    let old_tmp = env.root.path().join("results.json.tmp");
    std::os::unix::fs::symlink(&victim, &old_tmp).unwrap();
    assert_success(&env.run(&["stat", "-j", "1"]));
    canary.assert_untouched();
    assert!(!std::fs::symlink_metadata(&env.output).unwrap().file_type().is_symlink());
    assert_eq!(env.results().status, Status::Complete);
    assert_eq!(std::fs::read_link(&old_tmp).unwrap(), victim, "a planted file is left alone");
    // `fsscale tree --tar X` never writes through X.
    let tar = env.root.path().join("tree.tar");
    std::os::unix::fs::symlink(&victim, &tar).unwrap();
    let out = fsscale().args(["tree", "--scale", "0.001", "--tar"]).arg(&tar).output().unwrap();
    assert_one_line_error(&out, "exists; remove it or choose another name");
    canary.assert_untouched();
}

#[test]
fn a_shared_cache_directory_is_refused() {
    let env = TestEnv::new();
    let cache = env.root.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = fsscale()
        .env("FSSCALE_CACHE_DIR", &cache)
        .args(["run", "untar", "-j", "1", "-n", "1", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&env.output)
        .output()
        .unwrap();
    assert_one_line_error(&out, "is writable by others (mode 777)");
    assert_eq!(entries(&cache), Vec::<String>::new(), "nothing was generated into it");
}

#[test]
fn concurrent_runs_never_share_a_results_file() {
    let env = TestEnv::new();
    let cwd = env.root.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    // Several runs started at once, without -o: each gets its own file.
    let children: Vec<Child> = (0..4)
        .map(|_| {
            fsscale()
                .current_dir(&cwd)
                .args(["run", "stat", "-j", "1", "-n", "1", "--duration", "0.05", "--dir"])
                .arg(&env.dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        assert_success(&child.wait_with_output().unwrap());
    }
    let files = entries(&cwd.join("fsscale-results"));
    assert_eq!(files.len(), 4, "{files:?}");
    for file in &files {
        assert_eq!(ResultsFile::load(&cwd.join("fsscale-results").join(file)).unwrap().status, Status::Complete);
    }
    // Two runs with the same -o at once: one writes it whole, the other is
    // refused in one line (never both "finished" with one's results lost).
    let (dir, output) = (env.dir.display().to_string(), env.output.display().to_string());
    let args = ["run", "stat", "-j", "1", "-n", "3", "--duration", "0.05", "--dir", &dir, "-o", &output];
    let (a, b) = (spawn_group(&args), spawn_group(&args));
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let refused: Vec<&std::process::Output> = outs.iter().filter(|o| !o.status.success()).collect();
    assert!(refused.len() <= 1, "both runs failed");
    for out in refused {
        assert_one_line_error(out, "is writing it; choose another -o, or wait until that run ends");
    }
    let doc = env.results();
    assert_eq!(doc.status, Status::Complete);
    assert_eq!(doc.points.iter().map(|p| p.runs.len()).sum::<usize>(), 3 * doc.points.len());
    assert_eq!(entries(env.root.path()).iter().filter(|n| n.contains(".tmp")).count(), 0, "no temporary file left");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn cleanup_from_another_pid_namespace_leaves_a_live_run_alone() {
    if !needs_root("cleanup_from_another_pid_namespace_leaves_a_live_run_alone") {
        return;
    }
    let env = TestEnv::new();
    let child = start(&env, &["stat", "-j", "1", "-n", "1", "--duration", "3", "--fs", "tmpfs"]);
    wait_for_workers(&child, 1);
    let out = cleanup_output(std::process::Command::new("unshare").args([
        "--pid",
        "--fork",
        "--mount-proc",
        env!("CARGO_BIN_EXE_fsscale"),
        "cleanup",
    ]));
    assert_success(&out);
    // This run's filesystem at least (another live fsscale run's may be counted too).
    let text = stdout(&out);
    let live =
        text.lines().find_map(|l| l.strip_prefix("left alone: ")?.strip_suffix(" filesystem(s) of runs still going"));
    assert!(live.and_then(|n| n.parse::<usize>().ok()).is_some_and(|n| n >= 1), "{text}");
    let out = child.wait_with_output().unwrap();
    assert_success(&out);
    assert_eq!(env.results().points[0].runs.len(), 1, "the run finished on its filesystem");
}

#[test]
fn forged_registry_entries_are_refused() {
    if !needs_root("forged_registry_entries_are_refused") {
        return;
    }
    let canary = Canary::new();
    std::fs::create_dir_all("/run/fsscale").unwrap();
    let id = format!("forged-{}", std::process::id());
    let entry = Path::new("/run/fsscale").join(format!(".fsscale-fs-{id}.json"));
    let forged = serde_json::json!({
        "pid": 1,
        "mountpoint": canary.path,
        "image": canary.path.join("precious"),
        "loop_device": null,
    });
    // No other test's cleanup may meet the forged entry: it refuses it too.
    let turn = cleanups();
    std::fs::write(&entry, forged.to_string()).unwrap();
    let out = fsscale().arg("cleanup").output().unwrap();
    let _ = std::fs::remove_file(&entry);
    drop(turn);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&format!("refused: {}: its mount point", entry.display())), "{}", stdout(&out));
    assert!(stdout(&out).contains("is not fsscale's own"), "{}", stdout(&out));
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
    canary.assert_untouched();
}

#[test]
fn a_daemonising_command_does_not_outlive_its_run() {
    let env = TestEnv::new();
    let sleep = format!("sleep 1002.{}", std::process::id());
    let out = env.run(&["command", "--shell", "--cmd", &format!("setsid {sleep} & sleep 0.1"), "-j", "2"]);
    assert_success(&out);
    assert!(stderr(&out).contains("killed 2 process(es) the commands left running"), "{}", stderr(&out));
    assert_eq!(processes_running(&sleep), Vec::<i32>::new());
    assert!(env
        .results()
        .settings
        .containment
        .is_some_and(|c| c.starts_with("cgroup v2") || c.starts_with("subreaper")));
}

#[test]
fn commands_die_with_a_killed_fsscale() {
    let env = TestEnv::new();
    // A duration of this test process's own, so other runs' sleeps never count.
    let sleep = format!("sleep 1003.{}", std::process::id());
    let cmd = format!("{sleep}; true");
    let child = start(&env, &["command", "--shell", "--cmd", &cmd, "-j", "2", "-n", "1"]);
    wait_until("the commands", || processes_running(&sleep).len() == 2);
    // kill -9 of fsscale alone: no cleanup of its own can run.
    signal(child.id() as i32, libc::SIGKILL);
    let _ = child.wait_with_output();
    wait_until("the commands gone", || processes_running(&sleep).is_empty());
    // The scratch stays (nothing ran to remove it); cleanup names it and removes it.
    let out = cleanup_output(fsscale().arg("cleanup"));
    assert_success(&out);
    let left = env.leftovers();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        stdout(&out).contains(&format!("remove it with `fsscale cleanup --scratch {}`", env.dir.display())),
        "{}",
        stdout(&out)
    );
    assert_success(&cleanup_output(fsscale().args(["cleanup", "--scratch"]).arg(&env.dir)));
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn a_flooding_driver_keeps_memory_bounded() {
    let env = TestEnv::new();
    // 320 MB of output under a 256 MiB address-space limit (fsscale's own
    // peak is about 66 MB): kept whole, it could not fit.
    let mut cmd = fsscale();
    cmd.args(["run", "command", "--driver", "--shell", "--cmd", "yes | head -c 320000000", "-j", "1", "-n", "1"])
        .arg("--dir")
        .arg(&env.dir)
        .arg("-o")
        .arg(&env.output);
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit between fork and exec, with a valid struct.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 256 << 20, rlim_max: 256 << 20 };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_success(&out);
    assert_eq!(env.results().points[0].runs.len(), 1);
}

#[test]
fn a_fake_extractor_is_caught() {
    let env = TestEnv::new();
    let out = env.run(&["untar", "-j", "1", "--extract-cmd", "true {dir}"]);
    assert_failed_cleanly(
        &env,
        &out,
        "exited 0 but extracted 0 entries and 0 bytes of file data where the tarball holds",
    );
}

#[test]
fn a_hostile_dir_name_is_never_code_in_a_shell_command() {
    let env = TestEnv::new();
    let canary = Canary::new();
    let pwned = canary.path.join("pwned");
    // The path reaches the command through the environment too: $PWNED names the canary's file.
    let hostile = env.root.path().join("a b'c\"$(touch $PWNED)`touch $PWNED`");
    std::fs::create_dir(&hostile).unwrap();
    for cmd in ["test -d {dir}", "test -d \"{dir}\"", "test -d '{dir}'", "test -d \"$(printf %s {dir})\""] {
        let out = fsscale()
            .env("PWNED", &pwned)
            .args(["run", "command", "--shell", "--cmd", cmd, "-j", "1", "-n", "1", "--dir"])
            .arg(&hostile)
            .arg("-o")
            .arg(&env.output)
            .arg("--force")
            .output()
            .unwrap();
        assert_success(&out);
    }
    assert!(!pwned.exists(), "a path was executed as code");
    canary.assert_untouched();
}

#[test]
fn a_full_filesystem_is_a_clear_error_and_leaves_nothing() {
    if !needs_root("a_full_filesystem_is_a_clear_error_and_leaves_nothing") {
        return;
    }
    // Room for the tree's bytes (the plan's check passes) but not its
    // entries: the filesystem fills during the extraction.
    let mount = TmpfsMount::new("size=64m,nr_inodes=300");
    let env = TestEnv::new();
    let out = env.run_at(&mount.path, &["stat", "untar", "-j", "1", "--scale", "0.01"]);
    assert_eq!(out.status.code(), Some(1));
    let line = error_line(&out);
    assert!(line.contains("untar (process, private, 1 worker), run 1 of 1: worker 0: entry"), "{line}");
    assert!(line.ends_with("No space left on device (ENOSPC)"), "{line}");
    let doc = env.results();
    assert_eq!(doc.status, Status::Failed);
    assert!(doc.points[0].complete, "the finished stat point is kept");
    assert_eq!(entries(&mount.path), Vec::<String>::new());
}

#[test]
fn a_worker_stopped_briefly_in_the_window_fails_the_run_instead_of_recording_it() {
    let env = TestEnv::new();
    let child =
        start(&env, &["stat", "-j", "2", "-n", "1", "--duration", "1.5", "--warmup", "0", "--share", "private"]);
    let workers = wait_for_workers(&child, 2);
    std::thread::sleep(Duration::from_millis(300));
    signal(workers[1], libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(300));
    signal(workers[1], libc::SIGCONT);
    let out = child.wait_with_output().unwrap();
    assert_one_line_error(&out, "worker 1 was stopped by signal 19, SIGSTOP during the timed window");
    assert_one_line_error(&out, "the run is not recorded");
    let doc = env.results();
    assert_eq!(doc.status, Status::Failed);
    assert!(doc.points.iter().all(|p| p.runs.is_empty()), "a stopped run was recorded");
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn ctrl_z_and_fg_during_the_window_fail_the_run_instead_of_recording_it() {
    let env = TestEnv::new();
    let child = start(&env, &["stat", "-j", "1", "-n", "1", "--duration", "1.5", "--warmup", "0", "--mode", "thread"]);
    let pid = child.id() as i32;
    wait_until("the worker thread", || std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |t| t.count()) > 1);
    std::thread::sleep(Duration::from_millis(300));
    // The whole process group, as a terminal's Ctrl-Z and fg do.
    let _ = fsscale::sys::send_signal(-pid, libc::SIGTSTP);
    std::thread::sleep(Duration::from_millis(500));
    let _ = fsscale::sys::send_signal(-pid, libc::SIGCONT);
    let out = child.wait_with_output().unwrap();
    assert_one_line_error(&out, "fsscale was stopped (Ctrl-Z or SIGSTOP) and continued while it measured");
    assert_eq!(env.results().status, Status::Failed);
    assert!(env.results().points.iter().all(|p| p.runs.is_empty()));
}

#[test]
fn a_plan_that_would_write_more_than_the_target_has_free_is_refused_before_anything_is_written() {
    if !needs_root("a_plan_that_would_write_more_than_the_target_has_free_is_refused") {
        return;
    }
    let mount = TmpfsMount::new("size=8m");
    let env = TestEnv::new();
    for (args, what) in [
        (&["append-grow", "-j", "4", "--grow-size", "4M"][..], "about 16 MiB into --dir"),
        (&["fault-private", "-j", "2", "--map-size", "8M"][..], "at 2 workers (its --map-size each)"),
        (&["untar", "-j", "2", "--scale", "0.1"][..], "(a copy of the tree each), more than the 8 MiB free there"),
    ] {
        let out = env.run_at(&mount.path, args);
        assert_one_line_error(&out, what);
        assert!(!env.output.exists(), "no results file was begun");
        assert!(!fsscale::results::journal_path(&env.output).exists(), "nor its journal");
        assert_eq!(entries(&mount.path), Vec::<String>::new());
    }
}
