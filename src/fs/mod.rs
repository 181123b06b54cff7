//! Filesystems made fresh for the runs: tmpfs, or ext4, xfs, btrfs or f2fs
//! on a loop device over an image in RAM (the memory-disk method) or in a
//! file, or, with an explicit destructive flag, on a real block device.
//!
//! Every filesystem fsscale makes is registered in a state directory before
//! anything is created, so `fsscale cleanup` can undo what a killed run left
//! (only entries no live run holds locked, and only what fsscale named). Dropping an [`FsInstance`] unmounts,
//! detaches and deletes in that order.

mod instance;
mod loopdev;
mod registry;
mod words;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

pub use crate::vocab::format_size;
pub use instance::{DeviceSnapshot, FsInstance};
pub use registry::{leftovers, CleanupReport};
pub use words::parse_mkfs_options;

use crate::vocab::{Choice, InputError};
/// Where the registry of made filesystems lives (root only, a tmpfs cleared at boot).
pub use crate::vocab::{DeviceIo, Fresh, FsKind, FsRecord};

pub(crate) const STATE_DIR: &str = "/run/fsscale";

/// How a kind of filesystem is made: its mkfs, its size, its names.
pub(crate) trait Making {
    /// The mkfs program, the flags that make it non-interactive, and the Debian package.
    ///
    /// ext4's inode tables and journal are zeroed by mkfs (a fallocate on an
    /// image or loop device, milliseconds): left lazy, the kernel's
    /// `ext4lazyinit` thread writes them in the background for a while after
    /// the mount, megabytes of device writes in the middle of the runs.
    fn mkfs(self) -> Option<(&'static str, &'static [&'static str], &'static str)>;

    /// Whether it is made on a block device (image, loop device or a real one).
    fn on_a_device(self) -> bool;

    /// The smallest filesystem its mkfs accepts, with room for a small workload.
    fn min_size(self) -> u64;

    /// Every kind's name, in words: `dir, tmpfs, ... or f2fs`.
    fn names_in_words(kinds: impl Iterator<Item = FsKind>, and: &str) -> String;
}

impl Making for FsKind {
    fn mkfs(self) -> Option<(&'static str, &'static [&'static str], &'static str)> {
        match self {
            FsKind::Ext4 => {
                Some(("mkfs.ext4", &["-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"], "e2fsprogs"))
            }
            FsKind::Xfs => Some(("mkfs.xfs", &["-f", "-q"], "xfsprogs")),
            FsKind::Btrfs => Some(("mkfs.btrfs", &["-f", "-q"], "btrfs-progs")),
            FsKind::F2fs => Some(("mkfs.f2fs", &["-f", "-q"], "f2fs-tools")),
            FsKind::Dir | FsKind::Tmpfs | FsKind::Ramfs => None,
        }
    }

    fn on_a_device(self) -> bool {
        self.mkfs().is_some()
    }

    fn min_size(self) -> u64 {
        match self {
            FsKind::Xfs => 320 << 20,
            FsKind::Btrfs => 256 << 20,
            FsKind::Dir | FsKind::Tmpfs | FsKind::Ramfs | FsKind::Ext4 | FsKind::F2fs => 64 << 20,
        }
    }

    fn names_in_words(kinds: impl Iterator<Item = FsKind>, and: &str) -> String {
        let names: Vec<&str> = kinds.map(FsKind::name).collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} {and} {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// One filesystem configuration: kind and mount options, e.g. `ext4:data=journal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsSpec {
    pub kind: FsKind,
    pub mount_options: Option<String>,
}

impl FsSpec {
    /// Parses `KIND[:MOUNTOPTS]`.
    pub fn parse(text: &str) -> Result<FsSpec, InputError> {
        let (kind, opts) = match text.split_once(':') {
            Some((k, o)) => (k, Some(o.to_string()).filter(|o| !o.is_empty())),
            None => (text, None),
        };
        let kind = FsKind::from_name(kind).ok_or_else(|| {
            let kinds = FsKind::names_in_words(FsKind::ALL.iter().copied(), "or");
            InputError::Malformed(format!("'{kind}' is not a filesystem kind; use {kinds}"))
        })?;
        if kind == FsKind::Dir && opts.is_some() {
            return Err(InputError::malformed("dir takes no mount options (it is an existing directory)"));
        }
        if let Some(opts) = &opts {
            words::check_mount_options(opts)?;
        }
        Ok(FsSpec { kind, mount_options: opts })
    }

    /// The label of a filesystem `--fs` makes; `None` for `--dir`'s own.
    pub(crate) fn made_label(&self) -> Option<String> {
        (self.kind != FsKind::Dir).then(|| self.label())
    }

    /// The label results carry: `ext4` or `ext4:data=journal`.
    pub fn label(&self) -> String {
        match &self.mount_options {
            Some(o) => format!("{}:{o}", self.kind.name()),
            None => self.kind.name().to_string(),
        }
    }
}

/// What the filesystem is made on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// An image on /dev/shm, attached to a loop device.
    Ram,
    /// An image in this directory, attached to a loop device.
    File(PathBuf),
    /// A real block device (its data is destroyed).
    Device(PathBuf),
}

impl Backing {
    pub fn parse(text: &str) -> Result<Backing, InputError> {
        if text == "ram" {
            return Ok(Backing::Ram);
        }
        if let Some(path) = text.strip_prefix("file:") {
            return Ok(Backing::File(PathBuf::from(path)));
        }
        if let Some(path) = text.strip_prefix("dev:") {
            return Ok(Backing::Device(PathBuf::from(path)));
        }
        Err(InputError::Malformed(format!("'{text}' is not a backing; use ram, file:DIR or dev:/dev/NAME")))
    }
}

/// The filesystem matrix of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct FsOptions {
    pub specs: Vec<FsSpec>,
    pub backing: Backing,
    /// Bytes; `None` sizes it from the workload.
    pub size: Option<u64>,
    pub mkfs_options: Vec<String>,
    pub fresh: Fresh,
    pub destroy_device_data: bool,
}

impl FsOptions {
    /// Only `--dir`: nothing is made (the tests' plans).
    #[cfg(test)]
    pub(crate) fn existing_dir() -> FsOptions {
        FsOptions {
            specs: vec![FsSpec { kind: FsKind::Dir, mount_options: None }],
            backing: Backing::Ram,
            size: None,
            mkfs_options: Vec::new(),
            fresh: Fresh::Run,
            destroy_device_data: false,
        }
    }

    pub(crate) fn makes_filesystems(&self) -> bool {
        self.specs.iter().any(|s| s.kind != FsKind::Dir)
    }

    /// Checks everything that can be checked before any run: root, tools,
    /// kernel support, and the safety of a `dev:` backing.
    pub fn validate(&self) -> Result<()> {
        if !self.makes_filesystems() {
            return Ok(());
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            bail!("--fs {} makes and mounts filesystems, which needs root; run as root or use --fs dir", self.labels());
        }
        for spec in &self.specs {
            // The kernel first: without it, installing the tools would not help.
            if spec.kind != FsKind::Dir && !kernel_supports(spec.kind) {
                bail!(
                    "--fs {}: unsupported: this kernel has no {} filesystem (not in /proc/filesystems, no module)",
                    spec.label(),
                    spec.kind.name()
                );
            }
            if let Some((tool, _, package)) = spec.kind.mkfs() {
                if find_program(tool).is_none() {
                    bail!(
                        "--fs {}: {tool} is not installed; install the package {package} (apt-get install {package})",
                        spec.label()
                    );
                }
            }
        }
        match &self.backing {
            Backing::Device(dev) => check_device(dev, self.destroy_device_data)?,
            Backing::File(dir) if !dir.is_dir() => bail!("--backing file:{}: not a directory", dir.display()),
            Backing::File(dir) => drop(instance::ImageDir::open(dir, &format!("file:{}", dir.display()))?),
            _ => {}
        }
        if self.backing != Backing::Ram && self.specs.iter().all(|s| !s.kind.on_a_device()) {
            let kinds = FsKind::names_in_words(FsKind::ALL.iter().copied().filter(|k| k.on_a_device()), "and");
            bail!("--backing applies to {kinds}; tmpfs is always in memory");
        }
        Ok(())
    }

    pub fn labels(&self) -> String {
        self.specs.iter().map(FsSpec::label).collect::<Vec<_>>().join(",")
    }

    /// The filesystem size for `spec`: `--fs-size`, or at least 1 GiB,
    /// three times the data the workloads write, and room for their entries'
    /// inodes: ext4 makes one inode per 16 KiB, so [`BYTES_PER_ENTRY`] per
    /// entry keeps half of them free (xfs and btrfs allocate inodes as
    /// needed; the same room covers their metadata).
    pub(crate) fn size_for(&self, spec: &FsSpec, data_bytes: u64, entries: u64) -> u64 {
        self.size
            .unwrap_or_else(|| {
                (1u64 << 30).max(data_bytes.saturating_mul(3)).max(entries.saturating_mul(BYTES_PER_ENTRY))
            })
            .max(spec.kind.min_size())
    }
}

/// Filesystem room per file, directory or link a workload makes.
pub(crate) const BYTES_PER_ENTRY: u64 = 32 << 10;

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether the kernel has the filesystem: registered now, or as a module
/// that mount would load.
fn kernel_supports(kind: FsKind) -> bool {
    let list = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if list.lines().any(|l| l.split_whitespace().last() == Some(kind.name())) {
        return true;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let deps = std::fs::read_to_string(format!("/lib/modules/{}/modules.dep", release.trim())).unwrap_or_default();
    let module = format!("/fs/{0}/{0}.ko", kind.name());
    deps.lines().any(|l| l.split(':').next().is_some_and(|m| m.contains(&module)))
}

/// A `dev:` backing must be a block device that nothing of it is mounted,
/// and the user must have said its data may be destroyed.
fn check_device(dev: &Path, destroy: bool) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(dev).map_err(|e| anyhow::anyhow!("--backing dev:{}: {e}", dev.display()))?;
    if !meta.file_type().is_block_device() {
        bail!("--backing dev:{} is not a block device", dev.display());
    }
    if !destroy {
        bail!(
            "--backing dev:{} would destroy all data on it; add --destroy-device-data if that is what you want",
            dev.display()
        );
    }
    use std::os::unix::fs::MetadataExt;
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    if let Some(in_use) = device_in_use(major, minor) {
        bail!("--backing dev:{}: {in_use}; fsscale never formats a device in use", dev.display());
    }
    Ok(())
}

/// Why the block device `major:minor` (or one of its partitions) is in
/// use: mounted (by device number, whatever name the mount shows), held by
/// device-mapper or RAID, or swap. Names are not compared: a symlink, a
/// `/dev/disk/by-id` path or a renamed node all have the same numbers.
fn device_in_use(major: u32, minor: u32) -> Option<String> {
    let sys = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let mut ours = vec![(format!("{major}:{minor}"), sys.clone())];
    if let Ok(entries) = std::fs::read_dir(&sys) {
        for entry in entries.flatten() {
            if entry.path().join("partition").exists() {
                if let Ok(number) = std::fs::read_to_string(entry.path().join("dev")) {
                    ours.push((number.trim().to_string(), entry.path()));
                }
            }
        }
    }
    if let Some(m) = crate::sys::mounts().into_iter().find(|m| ours.iter().any(|(n, _)| *n == m.device)) {
        return Some(format!("device {} ({}) is mounted on {}", m.device, m.source, m.mount_point));
    }
    for (number, path) in &ours {
        let holders: Vec<String> = std::fs::read_dir(path.join("holders"))
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if !holders.is_empty() {
            return Some(format!("device {number} is held by {} (device-mapper, LVM or RAID)", holders.join(", ")));
        }
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        let Some(name) = line.split_whitespace().next() else { continue };
        if let Ok(meta) = std::fs::metadata(name) {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            let number = format!("{}:{}", libc::major(meta.rdev()), libc::minor(meta.rdev()));
            if meta.file_type().is_block_device() && ours.iter().any(|(n, _)| *n == number) {
                return Some(format!("device {number} is in use as swap ({name})"));
            }
        }
    }
    None
}

/// Undoes every leftover that is provably fsscale's own; reports the rest.
pub fn cleanup() -> CleanupReport {
    let mut report = CleanupReport::default();
    for stale in registry::stale_entries(&mut report.live) {
        let Some(entry) = &stale.entry else {
            report.refused.push(format!("{}: not a registry entry fsscale can read; left alone", stale.path.display()));
            continue;
        };
        match registry::checked(&stale.id, entry) {
            Err(why) => report.refused.push(format!("{}: {why}; left alone", stale.path.display())),
            Ok(()) => match instance::undo(entry, false) {
                Ok(done) => {
                    report.removed.extend(done);
                    let _ = std::fs::remove_file(&stale.path);
                }
                Err(e) => report.refused.push(format!("{}: {e:#}", registry::describe(entry))),
            },
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs_and_backings() {
        assert_eq!(FsSpec::parse("ext4").unwrap(), FsSpec { kind: FsKind::Ext4, mount_options: None });
        let s = FsSpec::parse("ext4:data=journal,noatime").unwrap();
        assert_eq!((s.kind, s.label()), (FsKind::Ext4, "ext4:data=journal,noatime".to_string()));
        assert!(FsSpec::parse("zfs").unwrap_err().to_string().contains("not a filesystem kind"));
        assert!(FsSpec::parse("dir:ro").is_err());
        assert_eq!(Backing::parse("ram").unwrap(), Backing::Ram);
        assert_eq!(Backing::parse("dev:/dev/sdz").unwrap(), Backing::Device("/dev/sdz".into()));
        assert!(Backing::parse("disk").is_err());
    }

    #[test]
    fn sizes_from_the_workload() {
        let o = FsOptions::existing_dir();
        let ext4 = FsSpec::parse("ext4").unwrap();
        assert_eq!(o.size_for(&ext4, 0, 0), 1 << 30);
        assert_eq!(o.size_for(&ext4, 1 << 30, 0), 3 << 30);
        // 120,000 entries of little data (traverse of a scale-0.5 tree at 2 workers) need inodes, not bytes.
        assert_eq!(o.size_for(&ext4, 1 << 20, 120_000), 120_000 * BYTES_PER_ENTRY);
        let xfs = FsSpec::parse("xfs").unwrap();
        assert_eq!(FsOptions { size: Some(1 << 20), ..o }.size_for(&xfs, 0, 0), 320 << 20);
    }
}
