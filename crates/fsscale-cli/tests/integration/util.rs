//! Helpers: run the real binary in a temporary directory and read its results.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use fsscale::results::ResultsFile;

/// The repository's root: the workspace, with the docs, `bpf/` and the
/// library's sources (this test binary belongs to the command line's crate).
pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A temporary `--dir` and a place for the results file.
pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub dir: PathBuf,
    pub output: PathBuf,
}

/// The machine: shared by every test that runs fsscale, taken whole by a
/// test that measures its noise (see [`machine_to_myself`]).
static MACHINE: RwLock<()> = RwLock::new(());

thread_local! {
    // Each test runs on its own thread, so a share taken here lasts until the test ends.
    static SHARE: RefCell<Option<RwLockReadGuard<'static, ()>>> = const { RefCell::new(None) };
    // This thread has the machine to itself (and so needs no share of it).
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Holds a share of the machine for the rest of the calling test.
fn share_machine() {
    if ALONE.with(|alone| alone.get()) {
        return;
    }
    SHARE.with(|share| {
        let mut share = share.borrow_mut();
        if share.is_none() {
            *share = Some(MACHINE.read().unwrap_or_else(|poisoned| poisoned.into_inner()));
        }
    });
}

/// Waits until no other test is running fsscale and keeps new ones from
/// starting, so a test of what compare detects is not measuring the others
/// (and one that loads the machine hard disturbs none); the test may still
/// run fsscale itself.
pub fn machine_to_myself() -> Alone {
    // With one test thread, an earlier test's share lives on this thread.
    SHARE.with(|share| share.borrow_mut().take());
    let guard = MACHINE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    ALONE.with(|alone| alone.set(true));
    Alone { _guard: guard }
}

/// The page cache: tests that drop it (`--cache cold`) share it with each
/// other; a test that needs what it cached to stay holds it alone, for as
/// short a time as it can. Every other test runs on.
static PAGE_CACHE: RwLock<()> = RwLock::new(());

/// Held while this test drops the page cache (`--cache cold`).
pub fn page_cache_dropped() -> RwLockReadGuard<'static, ()> {
    PAGE_CACHE.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held while what this test cached must stay cached: no test drops it meanwhile.
pub fn page_cache_kept() -> RwLockWriteGuard<'static, ()> {
    PAGE_CACHE.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The machine, held by one test until dropped.
pub struct Alone {
    _guard: RwLockWriteGuard<'static, ()>,
}

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.with(|alone| alone.set(false));
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        // In memory where there is /dev/shm: an fsync on a busy disk can
        // outlast a 50 ms test window and leave it without a single op.
        let shm = std::path::Path::new("/dev/shm");
        let root = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("temp dir");
        let dir = root.path().join("target-dir");
        std::fs::create_dir(&dir).unwrap();
        let output = root.path().join("results.json");
        share_machine();
        TestEnv { root, dir, output }
    }

    /// `fsscale run ARGS --dir DIR -o OUTPUT`, quick settings unless overridden later in ARGS.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_at(&self.dir, args)
    }

    /// [`TestEnv::run`] with another `--dir` (a tiny mount, say).
    pub fn run_at(&self, dir: &Path, args: &[&str]) -> Output {
        let mut cmd = fsscale();
        self.run_args(&mut cmd, dir, args);
        cmd.output().expect("run fsscale")
    }

    /// [`TestEnv::run`] under `taskset -c CPUS`.
    pub fn run_on_cpus(&self, cpus: &str, args: &[&str]) -> Output {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", cpus, env!("CARGO_BIN_EXE_fsscale")]);
        self.run_args(&mut cmd, &self.dir, args);
        cmd.output().expect("run taskset fsscale")
    }

    fn run_args(&self, cmd: &mut Command, dir: &Path, args: &[&str]) {
        // No warm-up runs: tests of them ask for them.
        cmd.arg("run").args(["-n", "1", "--duration", "0.05", "--warmup", "0", "--warmup-runs", "0"]);
        // A test's runs take turns at its one results file.
        cmd.args(args).arg("--dir").arg(dir).arg("-o").arg(&self.output).arg("--force");
    }

    pub fn results(&self) -> ResultsFile {
        ResultsFile::load(&self.output).expect("results file")
    }

    /// What is left inside `--dir` (must be nothing after any run).
    pub fn leftovers(&self) -> Vec<String> {
        entries(&self.dir)
    }
}

/// The binary, with generated tarballs cached in one place for all tests.
pub fn fsscale() -> Command {
    share_machine();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fsscale"));
    cmd.env("FSSCALE_CACHE_DIR", std::env::temp_dir().join("fsscale-test-cache"));
    cmd.env(OWNER_VARIABLE, std::process::id().to_string());
    // No test reads or writes the user's own history store (compare reads
    // thresholds from it); a test of the default store sets its own.
    cmd.env("XDG_DATA_HOME", std::env::temp_dir().join(format!("fsscale-test-data-{}", std::process::id())));
    cmd
}

pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts success and prints the streams when it fails.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "fsscale failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

/// Whether a line of stderr is progress (the plan's size, a progress line
/// of a log): what a run prints before it fails mid-way.
pub fn is_progress(line: &str) -> bool {
    let plan = line
        .strip_prefix("fsscale: ")
        .and_then(|l| l.split_once(" point"))
        .is_some_and(|(n, _)| n.parse::<usize>().is_ok());
    // Preparing an input (`fsscale: generating the scale-0.1 tree tarball in ...`).
    let preparing = line.starts_with("fsscale: ") && line.ends_with("...");
    plan || preparing || line.starts_with("fsscale: [")
}

/// Whether a line of stderr is about the machine rather than this run: what
/// other (killed) runs left, or how much other work took. Tests run beside
/// each other and beside the `leftovers` tests' killed runs, so a run may
/// rightly say so before its own error.
pub fn is_about_the_machine(line: &str) -> bool {
    line.starts_with("fsscale: warning: a killed run left ") || line.starts_with("fsscale: warning: other work took ")
}

/// Asserts a failure with exactly one line on stderr, besides progress and
/// notes about the machine, that contains `needle`.
pub fn assert_one_line_error(out: &Output, needle: &str) {
    assert!(!out.status.success(), "expected failure, got success\nstdout:\n{}", stdout(out));
    let all = stderr(out);
    let err: String =
        all.lines().filter(|l| !is_progress(l) && !is_about_the_machine(l)).map(|l| format!("{l}\n")).collect();
    assert_eq!(err.lines().count(), 1, "expected one line on stderr besides progress, got:\n{all}");
    assert!(err.starts_with("fsscale: error: ") || err.starts_with("error: "), "{err}");
    assert!(err.contains(needle), "stderr does not contain {needle:?}:\n{err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
}

/// Runs `fsscale run ARGS --dir DIR -o FILE` once per file in `outputs`: the
/// same plan measured again, as two systems (or a re-run) would give.
pub fn run_each(env: &TestEnv, args: &[&str], outputs: &[&Path]) {
    for output in outputs {
        // Warm-up runs as long as the window, not until steady (up to 5 s a point), unless `args` say otherwise.
        let out = fsscale()
            .args(["run", "--warmup-max", "0"])
            .args(args)
            .arg("--dir")
            .arg(&env.dir)
            .arg("-o")
            .arg(output)
            .output()
            .unwrap();
        assert_success(&out);
    }
}

/// Sets the runs of every point of the results file at `path` to these
/// ops/s, run by run, with no busy marks: a real file whose verdicts cannot
/// hang on this machine's load.
pub fn set_rates(path: &Path, rates: &[f64]) {
    let mut doc = ResultsFile::load(path).unwrap();
    for point in &mut doc.points {
        assert_eq!(point.runs.len(), rates.len(), "one rate a run");
        for (run, rate) in point.runs.iter_mut().zip(rates) {
            run.noise = None;
            run.ops_per_s = *rate;
            run.ops = (rate * run.elapsed_s) as u64;
        }
        point.summarize();
    }
    doc.save(path).unwrap();
}

/// `fsscale cleanup` removes every killed run's leftovers, not only its
/// caller's: one at a time in this binary, and across test binaries on the
/// machine (two suites at once, as the flake harness runs one beside
/// another checkout's), so that a test that holds [`cleanups`] from making
/// its leftovers to its own cleanup sees exactly what that cleanup removed.
static CLEANUPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held while no other test's cleanup runs, here or in another suite.
pub struct Cleanups {
    _here: std::sync::MutexGuard<'static, ()>,
    /// flock'ed; released when closed.
    _machine: Option<std::fs::File>,
}

/// No other test's cleanup runs while this is held.
pub fn cleanups() -> Cleanups {
    use std::os::unix::io::AsRawFd;
    let here = CLEANUPS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Another user's file of that name: no lock across suites, as before one existed.
    let lock = std::env::temp_dir().join("fsscale-test-cleanups.lock");
    let machine = std::fs::OpenOptions::new().create(true).append(true).open(lock).ok();
    if let Some(file) = &machine {
        // SAFETY: flock on a descriptor this File owns; it blocks until the other suite's cleanup is done.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    }
    Cleanups { _here: here, _machine: machine }
}

/// Runs a cleanup command when no other test's cleanup runs.
pub fn cleanup_output(cmd: &mut Command) -> Output {
    let _cleanups = cleanups();
    cmd.output().expect("run fsscale cleanup")
}

/// Spawns `fsscale ARGS` in its own process group (so a test can signal
/// all of it, as a terminal would), with its output captured.
pub fn spawn_group(args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    fsscale()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Polls `done` every 20 ms, failing the test after 120 s with `what`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    // A hang guard, never a verdict: generous for a machine short of CPU or memory.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what} did not happen within 120 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether a test can run here: `ok` says its prerequisite (root, a tool)
/// is there. A missing one fails the test under `.ci/run` (which exports
/// `FSSCALE_TEST_STRICT`, runs as root and installs every tool), where a
/// quiet skip would hide a broken feature; elsewhere the test is skipped,
/// says so at once, and is named in the summary the binary ends with.
pub fn prerequisite(ok: bool, test: &str, missing: &str) -> bool {
    if !ok {
        crate::skips::skip(test, missing);
    }
    ok
}

/// [`prerequisite`] for tests that need root.
pub fn needs_root(test: &str) -> bool {
    prerequisite(is_root(), test, "needs root")
}

pub fn is_root() -> bool {
    fsscale::sys::euid() == 0
}

/// A tmpfs mounted for one test (root only), unmounted on drop.
pub struct TmpfsMount {
    pub path: PathBuf,
    _holder: tempfile::TempDir,
}

impl TmpfsMount {
    pub fn new(options: &str) -> TmpfsMount {
        let holder = tempfile::tempdir().unwrap();
        let path = holder.path().join("mnt");
        std::fs::create_dir(&path).unwrap();
        let status = Command::new("mount").args(["-t", "tmpfs", "-o", options, "fsscale-test"]).arg(&path).status();
        assert!(status.map(|s| s.success()).unwrap_or(false), "mount -t tmpfs -o {options} failed");
        TmpfsMount { path, _holder: holder }
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// Processes whose process group is `pgid`, other than zombies.
pub fn live_processes_in_group(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the command name, which is in parentheses and may hold spaces.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            found.push(pid);
        }
    }
    found
}

/// Direct children of `parent` in `parent`'s own process group: its worker
/// processes (commands get groups of their own, the guardian a session).
pub fn workers_of(parent: i32) -> Vec<i32> {
    let Some(group) = stat_field(parent, 2) else { return Vec::new() };
    let mut found: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent) && stat_field(pid, 2) == Some(group))
        .collect();
    // In worker order (PIDs wrap, at 32768 here, so the fork order is not theirs).
    found.sort_by_key(|&pid| (worker_index(pid).unwrap_or(usize::MAX), pid));
    found
}

/// A forked worker's index, from the name it gives itself (`fsscale-w<index>`)
/// just after the fork; `None` before that, or for another process.
pub fn worker_index(pid: i32) -> Option<usize> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    comm.trim_end().strip_prefix("fsscale-w")?.parse().ok()
}

/// The parent of a process, while it lives.
pub fn parent_of(pid: i32) -> Option<i32> {
    stat_field(pid, 1)
}

/// Field `n` after the command name in `/proc/<pid>/stat` (0: the state;
/// 1: the parent; 2: the process group), while the process lives.
fn stat_field(pid: i32, n: usize) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(n)?.parse().ok()
}

/// The variable every process this test binary starts (and all they start)
/// carries, with this process's pid: what tells its processes from those of
/// another test binary or fsscale run on the machine.
pub const OWNER_VARIABLE: &str = "FSSCALE_TEST_OWNER";

/// `OWNER_VARIABLE=<this process's pid>`, as in `/proc/<pid>/environ`.
fn owner_entry() -> String {
    format!("{OWNER_VARIABLE}={}", std::process::id())
}

/// This test binary's processes (see [`OWNER_VARIABLE`]) whose command line
/// is `needle` followed by nothing or by more words (other than zombies).
pub fn processes_running(needle: &str) -> Vec<i32> {
    let owner = owner_entry();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            // Each word ends with a NUL: "sleep 42" is not a prefix of "sleep 420".
            let words = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let matches = words.strip_prefix(needle).is_some_and(|rest| rest.is_empty() || rest.starts_with(' '));
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let ours = environ.split(|&b| b == 0).any(|v| v == owner.as_bytes());
            !zombie && matches && ours
        })
        .collect()
}

/// A directory of files outside everything fsscale may touch, with a
/// snapshot of names, sizes, modes and mtimes to prove it untouched.
pub struct Canary {
    pub path: PathBuf,
    snapshot: Vec<(String, u64, u32, i64)>,
    _holder: tempfile::TempDir,
}

impl Canary {
    pub fn new() -> Canary {
        let holder = tempfile::tempdir().unwrap();
        let path = holder.path().join("canary");
        std::fs::create_dir_all(path.join("sub")).unwrap();
        std::fs::write(path.join("precious"), b"keep me").unwrap();
        std::fs::write(path.join("sub/also"), b"and me").unwrap();
        let snapshot = Canary::take(&path);
        Canary { path, snapshot, _holder: holder }
    }

    fn take(path: &Path) -> Vec<(String, u64, u32, i64)> {
        use std::os::unix::fs::MetadataExt;
        let mut all = Vec::new();
        for name in ["", "precious", "sub", "sub/also"] {
            let meta = std::fs::symlink_metadata(path.join(name)).expect("canary entry");
            all.push((name.to_string(), meta.len(), meta.mode(), meta.mtime_nsec() + meta.mtime() * 1_000_000_000));
        }
        all
    }

    /// Panics unless every entry is there, unchanged.
    pub fn assert_untouched(&self) {
        assert_eq!(Canary::take(&self.path), self.snapshot, "the canary outside fsscale's scratch changed");
        assert_eq!(std::fs::read(self.path.join("precious")).unwrap(), b"keep me");
    }
}

/// `fsscale run ARGS` (one quick run, no warm-up) under `strace -f`
/// tracing `calls`: its output and the trace file; `None` (a visible skip,
/// a failure under CI) without strace.
pub fn under_strace(env: &TestEnv, calls: &str, args: &[&str], test: &str) -> Option<(std::process::Output, PathBuf)> {
    strace(env, &[], calls, args, test)
}

/// [`under_strace`] with each descriptor's path (strace -y):
/// `mkdirat(8</…/w1>, "m", 0700`, the directory a call was made in.
pub fn under_strace_naming_fds(
    env: &TestEnv,
    calls: &str,
    args: &[&str],
    test: &str,
) -> Option<(std::process::Output, PathBuf)> {
    strace(env, &["-y"], calls, args, test)
}

fn strace(
    env: &TestEnv,
    options: &[&str],
    calls: &str,
    args: &[&str],
    test: &str,
) -> Option<(std::process::Output, PathBuf)> {
    let trace = env.root.path().join("strace.out");
    let out = std::process::Command::new("strace")
        .args(options)
        // --seccomp-bpf stops only the traced calls: the coordinator, untraced,
        // opens and closes the window at full speed.
        .args(["-f", "--seccomp-bpf", "-qq", "-e", &format!("trace={calls}"), "-e", "signal=none", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_fsscale"))
        .arg("run")
        .args(args)
        .args(["-n", "1", "--duration", "0.05", "--warmup", "0", "--warmup-runs", "0", "--dir"])
        .arg(&env.dir)
        .arg("-o")
        .arg(&env.output)
        .output();
    match out {
        Ok(out) => Some((out, trace)),
        Err(_) => {
            prerequisite(false, test, "strace is not installed (.ci/run installs it)");
            None
        }
    }
}

/// This test process's own cgroup in the memory controller's hierarchy
/// (v1's memory hierarchy, else v2's), where fsscale, started from here,
/// makes its `--memory-limit` cgroup.
pub fn own_memory_cgroup() -> PathBuf {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let v1 = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers.split(',').any(|c| c == "memory").then(|| path.to_string())
    });
    let mounts = mountinfo.lines().filter_map(|l| {
        let (before, after) = l.split_once(" - ")?;
        let mut fields = after.split_whitespace();
        let (kind, super_options) = (fields.next()?, fields.nth(1)?);
        let point = PathBuf::from(before.split_whitespace().nth(4)?);
        Some((kind.to_string(), super_options.to_string(), point))
    });
    let mounts: Vec<_> = mounts.collect();
    let v2 = mounts.iter().find(|(kind, _, point)| {
        kind == "cgroup2"
            && std::fs::read_to_string(point.join("cgroup.controllers")).unwrap_or_default().contains("memory")
    });
    match v2 {
        Some((_, _, point)) => {
            point.join(own.lines().find_map(|l| l.strip_prefix("0::")).unwrap().trim_start_matches('/'))
        }
        None => {
            let (_, _, point) = mounts
                .iter()
                .find(|(kind, options, _)| kind == "cgroup" && options.split(',').any(|o| o == "memory"))
                .expect("a memory hierarchy");
            point.join(v1.expect("a memory cgroup").trim_start_matches('/'))
        }
    }
}

/// A database of its own on the PostgreSQL server `FSSCALE_TEST_POSTGRES`
/// names (`.ci/run` starts one), dropped with it; `None`, said, without one.
pub fn postgres_test_database(test: &str) -> Option<TestDatabase> {
    let server = std::env::var("FSSCALE_TEST_POSTGRES").ok();
    if !prerequisite(server.is_some(), test, "FSSCALE_TEST_POSTGRES names no PostgreSQL server (.ci/run starts one)") {
        return None;
    }
    let server = server.unwrap();
    use std::sync::atomic::{AtomicUsize, Ordering};
    static MADE: AtomicUsize = AtomicUsize::new(0);
    let name = format!("fsscale_itest_{}_{}", std::process::id(), MADE.fetch_add(1, Ordering::SeqCst));
    let mut client = postgres::Client::connect(&server, postgres::NoTls).expect("the test server");
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).unwrap();
    client.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    let url = fsscale::history::with_database(&server, &name);
    Some(TestDatabase { server, name, url })
}

pub struct TestDatabase {
    server: String,
    name: String,
    pub url: String,
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.server, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        }
    }
}

/// Makes a FIFO at `path` with `mode`.
pub fn make_fifo(path: &Path, mode: u32) {
    use rustix::fs::{mknodat, FileType, Mode, CWD};
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(mode), 0)
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}
