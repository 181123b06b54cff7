//! `--memory-limit` as a user meets it: a limit that would limit nothing or
//! escape the caller's cgroup is refused, a plan that cannot fit is refused
//! before it runs, and what the limit kills fails its run, saying so, while
//! fsscale itself survives, keeps its results and leaves nothing behind.

use std::path::Path;
use std::process::Command;

use fsscale::results::Status;

use crate::util::*;

#[test]
fn a_memory_limit_that_limits_nothing_is_refused() {
    let env = TestEnv::new();
    for (size, needle) in [
        ("99999999999999999999", "'99999999999999999999' is too large a size"),
        ("18446744073709551615", "is too large a size"),
        ("inf", "is too large a size"),
    ] {
        assert_one_line_error(&env.run(&["stat", "--memory-limit", size]), needle);
    }
    if !needs_root("a memory limit above the machine's memory") {
        return;
    }
    let out = env.run(&["stat", "--memory-limit", "100T"]);
    assert_one_line_error(&out, "--memory-limit 100.0 TiB is more than this machine's ");
    assert!(!env.output.exists(), "nothing ran");
}

#[test]
fn a_memory_limit_above_the_callers_own_is_refused_and_one_below_nests_in_it() {
    if !needs_root("a memory limit inside a limited cgroup") {
        return;
    }
    // A v1 memory cgroup (this machine kind's) takes `memory.limit_in_bytes`.
    let own = own_memory_cgroup();
    let v1 = own.join("memory.limit_in_bytes").exists();
    if !prerequisite(v1, "a memory limit inside a limited cgroup", "no v1 memory hierarchy here") {
        return;
    }
    let env = TestEnv::new();
    let caller =
        own.join(format!("limits-test-{}-{}", std::process::id(), env.root.path().display().to_string().len()));
    std::fs::create_dir(&caller).unwrap();
    std::fs::write(caller.join("memory.limit_in_bytes"), (200u64 << 20).to_string()).unwrap();
    let inside = |size: &str| {
        // A shell moves itself into the caller's cgroup, then becomes fsscale.
        let script = format!("echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"", caller.display());
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script, env!("CARGO_BIN_EXE_fsscale"), "run", "stat", "-j", "1", "-n", "1"])
            .args(["--duration", "0.05", "--warmup-runs", "0", "--force", "--memory-limit", size, "--dir"])
            .arg(&env.dir)
            .arg("-o")
            .arg(&env.output);
        cmd.output().unwrap()
    };
    let out = inside("2G");
    assert_one_line_error(&out, "--memory-limit 2.0 GiB: fsscale runs in the memory cgroup ");
    assert!(stderr(&out).contains("limited to 200 MiB, which would stop the run first; give at most 200 MiB"));
    let out = inside("64M");
    assert_success(&out);
    let cgroup = env.results().settings.memory_limit.unwrap().cgroup;
    assert!(cgroup.contains(&format!("{}/fsscale-", caller.display())), "nested in the caller's: {cgroup}");
    let leftovers: Vec<_> = std::fs::read_dir(&caller).unwrap().flatten().filter(|e| e.path().is_dir()).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir(&caller).unwrap();
}

#[test]
fn a_plan_the_limit_cannot_hold_is_refused_before_it_runs() {
    if !needs_root("a plan that cannot fit under the limit") {
        return;
    }
    let env = TestEnv::new();
    // ramfs keeps every extracted byte: 4 copies of the tree cannot fit in 32 MiB.
    // (A small ramfs: one is refused unless its size fits in the memory free now.)
    let out = env.run(&["untar", "--fs", "ramfs", "--fs-size", "64M", "-j", "1,4", "--memory-limit", "32M"]);
    assert_one_line_error(
        &out,
        "--memory-limit 32 MiB cannot hold what the plan keeps in memory that the kernel cannot evict: ",
    );
    assert!(stderr(&out).contains("for untar x4: every worker's copy of the tree, on a filesystem in memory"));
    assert!(!env.output.exists(), "nothing ran");
    // One copy fits, and runs.
    assert_success(&env.run(&["untar", "--fs", "ramfs", "--fs-size", "64M", "-j", "1", "--memory-limit", "32M"]));
    // Each worker's prebuilt paths of --files are its own memory.
    let out = env.run(&["stat", "--files", "300000", "-j", "2", "--memory-limit", "16M"]);
    assert_one_line_error(&out, "for stat x2: every worker's 300000 paths");
}

#[test]
fn what_the_limit_kills_fails_its_run_saying_so_and_fsscale_survives() {
    if !needs_root("a command the memory limit kills") {
        return;
    }
    let env = TestEnv::new();
    // tail keeps the last lines of a file with no newline: all of /dev/zero.
    let out = env.run(&["command", "--cmd", "tail /dev/zero", "-j", "1", "--memory-limit", "32M"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("the memory limit killed 1 process(es) of this run (--memory-limit 32 MiB, in cgroup v"),
        "{err}"
    );
    assert!(err.contains("killed by signal 9"), "which process it killed: {err}");
    let doc = env.results();
    assert_eq!(doc.status, Status::Failed);
    assert!(doc.error.unwrap().contains("the memory limit killed 1 process(es) of this run"));
    let cgroup = doc.settings.memory_limit.unwrap().cgroup;
    let dir = cgroup.rsplit_once(" (").unwrap().1.trim_end_matches(')');
    assert!(!Path::new(dir).exists(), "the limit's cgroup is removed: {dir}");
    assert!(processes_running("tail /dev/zero").is_empty());
}
