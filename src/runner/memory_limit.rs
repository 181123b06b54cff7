//! `--memory-limit`: the run's workers and the commands they start in a
//! memory cgroup of that size, so that a walk's metadata or an
//! extraction's data no longer fits in the cache they may use.
//!
//! Linux charges a page (page cache, and the dentries and inodes the kernel
//! accounts) to the cgroup of the process that brought it into memory, and
//! reclaims from a cgroup over its limit: what the workers read or write
//! beyond the limit is evicted and read from the device again. Pages cached
//! before the run (the tree fsscale itself laid out) are charged elsewhere
//! and stay: `--cache cold` (or a made filesystem) starts from nothing.
//!
//! fsscale itself stays outside, in the cgroup it was started in: the
//! limit's OOM killer chooses only among the cgroup's own processes, so a
//! run whose workers do not fit loses a worker (recorded, named) and never
//! its coordinator, its results or its cleanup. Every process fsscale
//! starts for the run (a forked worker, the process that hosts thread
//! workers, a command) moves itself in between fork and its work.
//!
//! The cgroup is v2's `memory.max` where the v2 hierarchy has the memory
//! controller, else v1's `memory.limit_in_bytes`. It is made below the
//! cgroup fsscale was started in, so an enclosing limit still holds (a
//! limit above one is refused: it would record a limit the run never had).
//! It is named as the commands' cgroups are, `flock`ed while the run lives,
//! and removed at the end, after a signal, or by `fsscale cleanup` after a
//! `kill -9`.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::plan::RunConfig;
use crate::sys;
use crate::vocab::{format_size, FsKind};
use crate::workloads::{Share, Workload};

/// Below this the run's own processes (not the cache) would not fit, and
/// the kernel would kill them rather than evict anything.
pub(crate) const MIN_MEMORY_LIMIT: u64 = 16 << 20;

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

/// The memory cgroup the run's processes run in, until dropped.
pub(crate) struct MemoryLimit {
    hierarchy: Hierarchy,
    dir: PathBuf,
    /// The limit the kernel took (a multiple of the page size).
    bytes: u64,
    oom_kills_before: u64,
    /// Its `cgroup.procs`, which the run's processes write "0" to.
    _procs: OwnedFd,
    /// `dir`, `flock`ed: `fsscale cleanup` leaves a cgroup whose lock is held.
    _lock: File,
}

impl MemoryLimit {
    /// Makes the cgroup below this process's own and sets its limit; from
    /// then on every worker and command fsscale starts enters it.
    pub fn create(bytes: u64) -> Result<MemoryLimit> {
        let asked = format_size(bytes);
        if bytes < MIN_MEMORY_LIMIT {
            bail!(
                "--memory-limit {asked}: below {} the workers themselves do not fit and the kernel would kill them; \
                 give at least 16M",
                format_size(MIN_MEMORY_LIMIT)
            );
        }
        if let Some(total) = sys::total_memory().filter(|&total| bytes > total) {
            bail!(
                "--memory-limit {asked} is more than this machine's {} of memory, so it would limit nothing; \
                 give less, or run without it",
                format_size(total)
            );
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let controllers = |mount: &Path| std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        let hierarchy = find_hierarchy(&sys::mounts(), controllers, &own).context(
            "--memory-limit: no cgroup memory controller here (neither cgroup v2 with memory nor v1's memory \
             hierarchy is mounted); run without it, or mount one",
        )?;
        let home = hierarchy.mount.join(hierarchy.own.trim_start_matches('/'));
        if let Some((limit, at)) = enclosing_limit(&hierarchy, read_u64) {
            if limit < bytes {
                bail!(
                    "--memory-limit {asked}: fsscale runs in the memory cgroup {}, limited to {}, which would \
                     stop the run first; give at most {}",
                    at.display(),
                    format_size(limit),
                    format_size(limit)
                );
            }
        }
        if hierarchy.version == Version::V2 && hierarchy.own != "/" {
            // A v2 cgroup hands the controller to its children only while it
            // holds no process itself (the top alone is exempt).
            std::fs::write(home.join("cgroup.subtree_control"), b"+memory").map_err(|e| {
                anyhow::anyhow!(
                    "--memory-limit: cannot make a memory cgroup below fsscale's own, {} ({e}): cgroup v2 lets \
                     a cgroup with processes in it give no controller to its children; start fsscale in a \
                     delegated cgroup of its own (e.g. systemd-run --scope -p Delegate=yes fsscale ...)",
                    home.display()
                )
            })?;
        } else if hierarchy.version == Version::V2 {
            let _ = std::fs::write(hierarchy.mount.join("cgroup.subtree_control"), b"+memory");
        }
        let (dir, lock) = crate::exec::make_locked_cgroup(&home).map_err(|e| {
            anyhow::anyhow!(
                "--memory-limit: cannot make and lock a cgroup in {} ({e}); a memory limit needs root",
                home.display()
            )
        })?;
        let procs = sys::cstring(&dir.join("cgroup.procs"))
            .ok()
            .and_then(|c| sys::open(sys::CWD, &c, libc::O_WRONLY | libc::O_CLOEXEC, 0).ok());
        let Some(procs) = procs else {
            let _ = std::fs::remove_dir(&dir);
            bail!("--memory-limit: cannot open {}/cgroup.procs of the cgroup it made", dir.display());
        };
        let mut limit = MemoryLimit { bytes, oom_kills_before: 0, hierarchy, dir, _procs: procs, _lock: lock };
        // From here a failure drops `limit`, which removes the cgroup.
        let file = limit.dir.join(limit.hierarchy.version.limit_file());
        std::fs::write(&file, bytes.to_string())
            .with_context(|| format!("--memory-limit: setting {}", file.display()))?;
        limit.bytes = read_u64(&file).unwrap_or(bytes);
        limit.oom_kills_before = limit.oom_kills();
        crate::exec::set_memory_cgroup(Some(limit._procs.as_raw_fd()));
        Ok(limit)
    }

    /// The limit the kernel set.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// How runs lift the limit for their setup and set it again.
    pub fn switch(&self) -> LimitSwitch {
        let unlimited = match self.hierarchy.version {
            Version::V1 => "-1",
            Version::V2 => "max",
        };
        LimitSwitch { file: self.dir.join(self.hierarchy.version.limit_file()), bytes: self.bytes, unlimited }
    }

    /// The cgroup, where it is in the v2 hierarchy: commands' cgroups
    /// (one cgroup per process there) are made inside it.
    pub(crate) fn v2_dir(&self) -> Option<&Path> {
        (self.hierarchy.version == Version::V2).then_some(self.dir.as_path())
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
    pub(crate) fn oom_kills(&self) -> u64 {
        let file = match self.hierarchy.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        oom_kill_count(&std::fs::read_to_string(self.dir.join(file)).unwrap_or_default())
            .saturating_sub(self.oom_kills_before)
    }
}

/// `--memory-limit`'s limit, lifted while a run's workers set up and set
/// again before its measured work starts. Setup (a worker's copy of the
/// tree, say) is not what the limit measures, and a small cgroup full of
/// the metadata a filesystem writes cannot always be reclaimed from inside
/// the filesystem (`GFP_NOFS`): laid out unlimited, it is then trimmed to
/// the limit by the kernel's own reclaim (setting a limit below the usage
/// reclaims down to it), which leaves the most recently used part cached,
/// as a limit would have. The caller's own cgroups still bound setup.
#[derive(Clone, Debug)]
pub(crate) struct LimitSwitch {
    file: PathBuf,
    bytes: u64,
    unlimited: &'static str,
}

impl LimitSwitch {
    /// No limit of its own until [`LimitSwitch::set`].
    pub(crate) fn lift(&self) -> Result<()> {
        std::fs::write(&self.file, self.unlimited)
            .with_context(|| format!("--memory-limit: lifting the limit for setup ({})", self.file.display()))
    }

    /// The limit again, what setup cached beyond it evicted.
    pub fn set(&self) -> Result<()> {
        // v1 refuses a limit as soon as one reclaim pass frees nothing
        // (EBUSY): pages locked, under writeback or just referenced on a
        // busy machine (the harness saw it beside a profiled run) are
        // reclaimable a moment later. Untimed: the window has not opened.
        let mut tries = 1;
        let written = loop {
            match std::fs::write(&self.file, self.bytes.to_string()) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < LIMIT_TRIES => {
                    tries += 1;
                    std::thread::sleep(LIMIT_RETRY_PAUSE);
                }
                written => break written,
            }
        };
        written.map_err(|e| {
            anyhow::anyhow!(
                "--memory-limit {}: the kernel could not evict what the workers' setup left in memory down to \
                 the limit ({e}); raise it",
                format_size(self.bytes)
            )
        })
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        crate::exec::set_memory_cgroup(None);
        // What a command daemonised (`setsid -f`) would keep the cgroup alive.
        crate::exec::kill_cgroup(&self.dir);
    }
}

/// Writes of the limit before one refused for what could not be evicted is
/// final, and the pause between them: up to 2 s.
const LIMIT_TRIES: u32 = 41;
const LIMIT_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// The lowest limit of this process's cgroup and those enclosing it, and
/// where it is set; `None` where none is set (v1's "unlimited" is a huge number).
fn enclosing_limit(hierarchy: &Hierarchy, read: impl Fn(&Path) -> Option<u64>) -> Option<(u64, PathBuf)> {
    let mut lowest: Option<(u64, PathBuf)> = None;
    let mut dir = hierarchy.mount.join(hierarchy.own.trim_start_matches('/'));
    loop {
        if let Some(limit) = read(&dir.join(hierarchy.version.limit_file())) {
            if limit < (1 << 62) && lowest.as_ref().is_none_or(|(l, _)| limit < *l) {
                lowest = Some((limit, dir.clone()));
            }
        }
        if dir == hierarchy.mount || !dir.pop() || !dir.starts_with(&hierarchy.mount) {
            return lowest;
        }
    }
}

/// What a plan's largest point keeps in memory that no limit can evict,
/// against `--memory-limit`: mappings and files on a filesystem held in
/// memory (ramfs; tmpfs where there is no swap), private copies of mapped
/// pages without swap. Refused before anything runs where it cannot fit, as
/// the kernel would otherwise kill a worker partway through the plan.
pub(crate) struct Unevictable {
    /// The machine has swap: tmpfs pages and private copies can go there.
    pub swap: bool,
    /// Each filesystem of the plan is held in memory (ramfs, tmpfs, a `--dir` on either).
    pub in_memory: Vec<bool>,
    /// Bytes of the tree each untar or traverse worker extracts.
    pub tree_bytes: u64,
}

impl Unevictable {
    /// Bytes `workload` at `workers` keeps on filesystem `fs` beyond eviction, and why.
    fn bytes(&self, config: &RunConfig, workload: Workload, workers: u64, fs: usize) -> Option<(u64, String)> {
        let memory_fs = self.in_memory[fs] && (config.filesystems.specs[fs].kind == FsKind::Ramfs || !self.swap);
        let map = config.options.map_bytes;
        let copies = |share_same: bool| if share_same { 1 } else { workers };
        let same = config.shares.iter().all(|s| *s == Share::Same);
        match workload {
            Workload::FaultPrivate if !self.swap => {
                Some((map * workers, format!("{workload} x{workers}: private copies of its mappings (no swap)")))
            }
            Workload::FaultShared if memory_fs => Some((
                map * copies(same),
                format!("{workload} x{workers}: its mappings' pages, on a filesystem in memory"),
            )),
            Workload::Untar | Workload::Traverse if memory_fs => Some((
                self.tree_bytes * workers,
                format!("{workload} x{workers}: every worker's copy of the tree, on a filesystem in memory"),
            )),
            // `--files N`: each worker's N paths, built in its setup (and, on a
            // filesystem in memory, its N files' inodes and dentries).
            Workload::Stat | Workload::OpenClose if config.options.lookup.files > 1 => {
                let files = config.options.lookup.files as u64;
                let per_file = PATH_BYTES + if memory_fs { 1024 } else { 0 };
                let on = if memory_fs { " and files, on a filesystem in memory" } else { "" };
                Some((files * per_file * workers, format!("{workload} x{workers}: every worker's {files} paths{on}")))
            }
            _ => None,
        }
    }

    /// Refuses a plan whose largest point cannot fit under `limit`.
    pub fn check(&self, config: &RunConfig, limit: u64) -> Result<()> {
        let workers = config.workers.iter().copied().max().unwrap_or(1) as u64;
        let worst = (0..config.filesystems.specs.len())
            .flat_map(|fs| config.workloads.iter().filter_map(move |w| self.bytes(config, *w, workers, fs)))
            .max_by_key(|(bytes, _)| *bytes);
        let Some((bytes, what)) = worst else { return Ok(()) };
        // The workers' own memory (stacks, buffers) on top.
        let needed = bytes + workers * WORKER_OVERHEAD;
        if needed > limit {
            bail!(
                "--memory-limit {} cannot hold what the plan keeps in memory that the kernel cannot evict: {} \
                 for {what}; give at least {}, or fewer workers, or a filesystem on a device",
                format_size(limit),
                format_size(bytes),
                format_size(needed.next_multiple_of(1 << 20))
            );
        }
        Ok(())
    }
}

/// What a copy of a tree takes on a filesystem held in memory, at most: its
/// data in whole pages (a file's last page is whole too: a page more for
/// each file), and an inode and a dentry (about 1 KiB together) for every entry.
pub(crate) fn in_memory_bytes(tree: &crate::archive::ExtractStats) -> u64 {
    tree.bytes + tree.files * PAGE + tree.entries() * 1024
}

const PAGE: u64 = 4096;

/// A prebuilt path of `--files` in a worker's memory: the string, its
/// allocation's overhead, its slot in the list and in the visiting order.
const PATH_BYTES: u64 = 64;

/// A worker's own memory inside the limit: its stack, buffers, page tables
/// and the pages of fsscale it touches (seen: 1.2 MiB of anonymous memory).
const WORKER_OVERHEAD: u64 = 2 << 20;

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
    fn a_limit_too_small_or_larger_than_the_machine_is_refused() {
        let error = MemoryLimit::create(4 << 20).err().unwrap().to_string();
        assert!(error.contains("--memory-limit 4 MiB: below 16 MiB"), "{error}");
        let error = MemoryLimit::create(1 << 60).err().unwrap().to_string();
        assert!(error.contains("of memory, so it would limit nothing"), "{error}");
    }

    #[test]
    fn the_lowest_enclosing_limit_is_found_up_to_the_top() {
        let hierarchy = Hierarchy { version: Version::V1, mount: "/sys/fs/cgroup/memory".into(), own: "/a/b/c".into() };
        let limits = |path: &Path| match path.to_str().unwrap() {
            "/sys/fs/cgroup/memory/a/b/c/memory.limit_in_bytes" => Some(9223372036854771712),
            "/sys/fs/cgroup/memory/a/b/memory.limit_in_bytes" => Some(200 << 20),
            "/sys/fs/cgroup/memory/a/memory.limit_in_bytes" => Some(300 << 20),
            "/sys/fs/cgroup/memory/memory.limit_in_bytes" => Some(9223372036854771712),
            other => panic!("read {other}"),
        };
        assert_eq!(enclosing_limit(&hierarchy, limits), Some((200 << 20, "/sys/fs/cgroup/memory/a/b".into())));
        let top = Hierarchy { own: "/".into(), ..hierarchy };
        assert_eq!(enclosing_limit(&top, |_| Some(u64::MAX)), None);
        // v2's "max" reads as no number: no limit.
        let v2 = Hierarchy { version: Version::V2, mount: "/sys/fs/cgroup".into(), own: "/x".into() };
        assert_eq!(enclosing_limit(&v2, |_| None), None);
    }
}
