//! A CPU quota is not a busy machine: a run capped by a real CFS bandwidth
//! quota, on whichever cgroup version holds the cpu controller here, is
//! marked throttled, not busy, and compare judges its ops/s as measured.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::util::*;

/// A cgroup of the test's own with a CPU quota, removed when dropped.
struct QuotaCgroup {
    dir: PathBuf,
    v2: bool,
}

impl QuotaCgroup {
    /// Where the cpu controller is: v2 if the unified hierarchy offers it
    /// (enabled for its children), else v1's `cpu` hierarchy.
    fn new(cpus: f64) -> Option<QuotaCgroup> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let mounts: Vec<(String, String, PathBuf)> = mountinfo
            .lines()
            .filter_map(|l| {
                let (before, after) = l.split_once(" - ")?;
                let mut fields = after.split_whitespace();
                let (kind, options) = (fields.next()?, fields.nth(1)?);
                Some((kind.to_string(), options.to_string(), PathBuf::from(before.split_whitespace().nth(4)?)))
            })
            .collect();
        let name = format!("fsscale-quota-test-{}-{:x}", std::process::id(), rand_suffix());
        let period = 100_000u64;
        let quota = (cpus * period as f64) as u64;
        let v2_root = mounts.iter().find(|(kind, _, point)| {
            kind == "cgroup2"
                && std::fs::read_to_string(point.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu"))
        });
        if let Some((_, _, root)) = v2_root {
            let dir = root.join(name);
            std::fs::create_dir(&dir).ok()?;
            let cgroup = QuotaCgroup { dir, v2: true };
            std::fs::write(cgroup.dir.join("cpu.max"), format!("{quota} {period}")).ok()?;
            return Some(cgroup);
        }
        let (_, _, root) =
            mounts.iter().find(|(kind, options, _)| kind == "cgroup" && options.split(',').any(|o| o == "cpu"))?;
        let dir = root.join(name);
        std::fs::create_dir(&dir).ok()?;
        let cgroup = QuotaCgroup { dir, v2: false };
        std::fs::write(cgroup.dir.join("cpu.cfs_period_us"), period.to_string()).ok()?;
        std::fs::write(cgroup.dir.join("cpu.cfs_quota_us"), quota.to_string()).ok()?;
        Some(cgroup)
    }

    /// `command`, moved into the cgroup between fork and exec.
    fn run_inside(&self, command: &mut std::process::Command) -> std::process::Output {
        let procs =
            std::ffi::CString::new(self.dir.join("cgroup.procs").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: open and write are async-signal-safe; the path was made before the fork.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
                Ok(())
            });
        }
        command.output().unwrap()
    }
}

impl Drop for QuotaCgroup {
    fn drop(&mut self) {
        // Its processes have exited; a cgroup is removed once empty.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64
}

fn run_args(env: &TestEnv, output: &Path) -> Vec<String> {
    let dir = env.dir.to_str().unwrap();
    let out = output.to_str().unwrap();
    ["run", "stat", "-j", "1", "--share", "private", "-n", "3", "--duration", "0.3", "--warmup-runs", "0"]
        .into_iter()
        .chain(["--warmup", "0", "--dir", dir, "-o", out])
        .map(String::from)
        .collect()
}

#[test]
fn a_cpu_quota_is_reported_as_throttled_not_busy_and_its_slowdown_is_judged() {
    if !needs_root("a real CPU quota") {
        return;
    }
    // 5% of a CPU: a worker runs out of it in every period even beside a
    // loaded machine's other work (at 30%, a CI run's worker, sharing the
    // CPUs with ten others, was throttled less than the test asked).
    let quota = QuotaCgroup::new(0.05);
    if !prerequisite(quota.is_some(), "a real CPU quota", "no cgroup with the cpu controller to make a quota in") {
        return;
    }
    let quota = quota.unwrap();
    let env = TestEnv::new();
    let (quiet, capped) = (env.root.path().join("quiet.json"), env.root.path().join("capped.json"));
    assert_success(&fsscale().args(run_args(&env, &quiet)).output().unwrap());
    let out = quota.run_inside(fsscale().args(run_args(&env, &capped)));
    assert_success(&out);
    assert!(stdout(&out).contains("~quota 3/3"), "the table marks it: {}", stdout(&out));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&capped).unwrap()).unwrap();
    let point = &doc["points"][0];
    assert_eq!(point["summary"]["throttled_runs"], serde_json::json!([0, 1, 2]), "{}", quota.v2);
    for run in point["runs"].as_array().unwrap() {
        let throttled = &run["noise"]["throttled"];
        assert_eq!(throttled["quota_cpus"], 0.05, "{run}");
        assert!(throttled["throttled_periods"].as_u64().unwrap() > 0, "{run}");
        // Capped at 5% of a CPU, a spinning worker is held off most of its window.
        assert!(throttled["throttled_s"].as_f64().unwrap() > 0.1, "{run}");
    }
    // A throttled run is busy only if its worker waited beyond the throttled time.
    let unexplained = |run: &serde_json::Value| {
        let waited: f64 = run["sched"].as_array().unwrap().iter().map(|w| w["runqueue_s"].as_f64().unwrap()).sum();
        let window: f64 = run["sched"].as_array().unwrap().iter().map(|w| w["window_s"].as_f64().unwrap()).sum();
        (waited - run["noise"]["throttled"]["throttled_s"].as_f64().unwrap()) / window
    };
    let busy: Vec<usize> = point["runs"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, r)| unexplained(r) > 0.05)
        .map(|(i, _)| i)
        .collect();
    let marked: Vec<usize> = serde_json::from_value(point["summary"]["busy_runs"].clone()).unwrap_or_default();
    assert_eq!(marked, busy, "busy only by the wait the quota does not explain");
    // compare says what the quota did, and calls the slowdown where no side is noisy.
    let out = fsscale().arg("compare").arg(&quiet).arg(&capped).output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("quota at process private x1: new: throttled by a CPU quota of 0.05 CPUs in 3 of 3 runs"),
        "{text}"
    );
    assert!(text.contains("the wait is the quota's, not other work's"), "{text}");
    let out = fsscale().args(["compare", "--format", "json"]).arg(&quiet).arg(&capped).output().unwrap();
    let comparison: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &comparison[0]["rows"][0];
    if row["noise"].is_null() {
        assert_eq!(row["verdict"], "worse", "a 0.05-CPU quota against a whole CPU: {row}");
    } else {
        assert!(!row["noise"].as_str().unwrap().contains("new: machine busy") || !busy.is_empty(), "{row}");
    }
    assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());
}
