//! `--memory-limit`: the run's processes (this one, its workers and the
//! commands they start) in a memory cgroup of that size, so that a walk's
//! metadata or an extraction's data no longer fits in the cache they may use.
//!
//! Linux charges a page (page cache, and the dentries and inodes the kernel
//! accounts) to the cgroup of the process that brought it into memory, and
//! reclaims from a cgroup over its limit: what the run reads or writes
//! beyond the limit is evicted and read from the device again. Pages cached
//! before the run are charged elsewhere and stay: `--cache cold` (or a made
//! filesystem) starts from nothing. The cgroup is v2's `memory.max` where
//! the v2 hierarchy has the memory controller, else v1's
//! `memory.limit_in_bytes`; it is made at the top of its hierarchy (v2 lets
//! no process sit in a cgroup whose controllers its children use), named
//! as the commands' cgroups are, `flock`ed while the run lives, and removed
//! at the end, after a signal, or by `fsscale cleanup` after a `kill -9`.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::sys;
use crate::vocab::format_size;

/// Below this the run's own processes (not the cache) would not fit, and
/// the kernel would kill them rather than evict anything.
pub const MIN_MEMORY_LIMIT: u64 = 16 << 20;

/// Which cgroup hierarchy holds the memory controller here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

impl Version {
    fn limit_file(self) -> &'static str {
        match self {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }
}

/// Where the memory controller is mounted, and this process's cgroup in it.
#[derive(Clone, Debug, PartialEq)]
struct Hierarchy {
    version: Version,
    mount: PathBuf,
    /// This process's cgroup, relative to `mount` (`/` at the top).
    own: String,
}

/// The memory controller's hierarchy, from mountinfo, the controllers v2
/// offers at its top, and `/proc/self/cgroup`: v2 where it has memory, else v1.
fn find_hierarchy(mounts: &[sys::Mount], v2_controllers: impl Fn(&Path) -> String, own: &str) -> Option<Hierarchy> {
    let v2 = mounts
        .iter()
        .filter(|m| m.fs_type == "cgroup2")
        .find(|m| v2_controllers(Path::new(&m.mount_point)).split_whitespace().any(|c| c == "memory"))
        .and_then(|m| {
            let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
            Some(Hierarchy { version: Version::V2, mount: m.mount_point.clone().into(), own: path.to_string() })
        });
    let v1 = || {
        let mount =
            mounts.iter().find(|m| m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "memory"))?;
        let path = own.lines().find_map(|l| {
            let mut fields = l.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            controllers.split(',').any(|c| c == "memory").then(|| path.to_string())
        })?;
        Some(Hierarchy { version: Version::V1, mount: mount.mount_point.clone().into(), own: path })
    };
    v2.or_else(v1)
}

/// The memory cgroup this process runs in until dropped.
pub struct MemoryLimit {
    hierarchy: Hierarchy,
    dir: PathBuf,
    /// The limit the kernel took (a multiple of the page size).
    bytes: u64,
    oom_kills_before: u64,
    /// `dir`, `flock`ed: `fsscale cleanup` leaves a cgroup whose lock is held.
    _lock: File,
}

impl MemoryLimit {
    /// Makes the cgroup, sets its limit and moves this process (every
    /// thread) into it. Call before anything is forked, so that every
    /// worker and command starts inside.
    pub fn enter(bytes: u64) -> Result<MemoryLimit> {
        if bytes < MIN_MEMORY_LIMIT {
            bail!(
                "--memory-limit {}: below {} this run's own processes do not fit and the kernel would kill them; \
                 give at least 16M",
                format_size(bytes),
                format_size(MIN_MEMORY_LIMIT)
            );
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let controllers = |mount: &Path| std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        let hierarchy = find_hierarchy(&sys::mounts(), controllers, &own).context(
            "--memory-limit: no cgroup memory controller here (neither cgroup v2 with memory nor v1's memory \
             hierarchy is mounted); run without it, or mount one",
        )?;
        let name = format!("{}{}-{}", crate::exec::CGROUP_PREFIX, std::process::id(), sys::random_hex(4));
        let dir = hierarchy.mount.join(name);
        if hierarchy.version == Version::V2 {
            // The top's children get the controller only when the top hands it down.
            let _ = std::fs::write(hierarchy.mount.join("cgroup.subtree_control"), b"+memory");
        }
        std::fs::create_dir(&dir).map_err(|e| {
            anyhow::anyhow!("--memory-limit: cannot make the cgroup {} ({e}); a memory limit needs root", dir.display())
        })?;
        let lock =
            sys::cstring(&dir).ok().and_then(|c| crate::lockfile::lock_if_unheld(libc::AT_FDCWD, &c).ok().flatten());
        let Some(lock) = lock else {
            let _ = std::fs::remove_dir(&dir);
            bail!("--memory-limit: cannot lock the cgroup {} it made", dir.display());
        };
        let mut limit = MemoryLimit { bytes, oom_kills_before: 0, hierarchy, dir, _lock: lock };
        // From here a failure drops `limit`, which removes the cgroup.
        let version = limit.hierarchy.version;
        std::fs::write(limit.dir.join(version.limit_file()), bytes.to_string())
            .with_context(|| format!("--memory-limit: setting {}", limit.dir.join(version.limit_file()).display()))?;
        limit.bytes = read_u64(&limit.dir.join(version.limit_file())).unwrap_or(bytes);
        limit.oom_kills_before = limit.oom_kills();
        std::fs::write(limit.dir.join("cgroup.procs"), std::process::id().to_string())
            .with_context(|| format!("--memory-limit: moving fsscale into {}", limit.dir.display()))?;
        Ok(limit)
    }

    /// The limit the kernel set.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// What the results record: the hierarchy and the cgroup.
    pub fn describe(&self) -> String {
        let version = match self.hierarchy.version {
            Version::V1 => "cgroup v1 memory.limit_in_bytes",
            Version::V2 => "cgroup v2 memory.max",
        };
        format!("{version} ({})", self.dir.display())
    }

    /// Processes the kernel killed for the limit since the cgroup was made.
    pub fn oom_kills(&self) -> u64 {
        let file = match self.hierarchy.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        oom_kill_count(&std::fs::read_to_string(self.dir.join(file)).unwrap_or_default())
            .saturating_sub(self.oom_kills_before)
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        let home = self.hierarchy.mount.join(self.hierarchy.own.trim_start_matches('/'));
        let _ = std::fs::write(home.join("cgroup.procs"), std::process::id().to_string());
        // Workers that were just killed may still be leaving.
        for _ in 0..250 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(4));
        }
    }
}

/// `oom_kill N` in v1's `memory.oom_control` or v2's `memory.events`.
fn oom_kill_count(text: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix("oom_kill ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(fs_type: &str, point: &str, super_options: &str) -> sys::Mount {
        sys::Mount {
            device: "0:1".into(),
            mount_point: point.into(),
            mount_options: "rw".into(),
            fs_type: fs_type.into(),
            source: fs_type.into(),
            super_options: super_options.into(),
        }
    }

    const OWN: &str = "12:memory:/user.slice\n11:cpu,cpuacct:/\n0::/user.slice/session-1.scope\n";

    #[test]
    fn v2_is_used_where_it_has_the_memory_controller_else_v1() {
        let mounts = [
            mount("cgroup", "/sys/fs/cgroup/cpu", "rw,cpu"),
            mount("cgroup", "/sys/fs/cgroup/memory", "rw,memory"),
            mount("cgroup2", "/sys/fs/cgroup/unified", "rw"),
        ];
        let none = find_hierarchy(&mounts, |_| String::new(), OWN).unwrap();
        assert_eq!(
            none,
            Hierarchy { version: Version::V1, mount: "/sys/fs/cgroup/memory".into(), own: "/user.slice".into() }
        );
        let with_memory = find_hierarchy(&mounts, |_| "cpu io memory pids\n".into(), OWN).unwrap();
        assert_eq!(with_memory.version, Version::V2);
        assert_eq!(with_memory.mount, PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(with_memory.own, "/user.slice/session-1.scope");
        assert_eq!(with_memory.version.limit_file(), "memory.max");
        assert_eq!(none.version.limit_file(), "memory.limit_in_bytes");
    }

    #[test]
    fn no_memory_controller_is_none() {
        let mounts = [mount("cgroup", "/sys/fs/cgroup/cpu", "rw,cpu"), mount("cgroup2", "/sys/fs/cgroup", "rw")];
        assert_eq!(find_hierarchy(&mounts, |_| "cpu pids".into(), OWN), None);
        // A memory hierarchy this process is in no cgroup of (no line for it) is not used either.
        let mounts = [mount("cgroup", "/sys/fs/cgroup/memory", "rw,memory")];
        assert_eq!(find_hierarchy(&mounts, |_| String::new(), "0::/\n"), None);
    }

    #[test]
    fn oom_kills_are_read_from_either_file() {
        assert_eq!(oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3);
        assert_eq!(oom_kill_count("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n"), 2);
        assert_eq!(oom_kill_count(""), 0);
    }

    #[test]
    fn a_limit_too_small_for_the_run_is_refused() {
        let error = MemoryLimit::enter(4 << 20).err().unwrap().to_string();
        assert!(error.contains("--memory-limit 4 MiB: below 16 MiB"), "{error}");
    }
}
