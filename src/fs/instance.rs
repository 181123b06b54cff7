//! One made filesystem: image, loop device, mkfs, mount; and the way back.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{Backing, FsKind, FsOptions, FsSpec, STATE_DIR};
use crate::results::Target;

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Prefix of every image file and registry entry fsscale makes.
const PREFIX: &str = ".fsscale-fs-";

/// What a run records about the filesystem it ran on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct FsRecord {
    /// `ext4` or `ext4:data=journal`.
    pub label: String,
    pub kind: FsKind,
    /// The mkfs command line and the version it reports.
    pub mkfs_command: Option<String>,
    pub mkfs_version: Option<String>,
    /// As the kernel reports them (`/proc/self/mountinfo`).
    pub mount_options: String,
    pub super_options: String,
    /// `/dev/loop3`, the real device, or absent for tmpfs.
    pub device: Option<String>,
    /// `ram`, `file:DIR` or `dev:/dev/NAME`.
    pub backing: String,
    pub size_bytes: u64,
}

/// Registry entry: everything needed to undo this filesystem.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
struct Entry {
    pid: u32,
    mountpoint: PathBuf,
    image: Option<PathBuf>,
    loop_device: Option<String>,
}

/// A filesystem fsscale made and mounted; dropping it takes it all down.
pub struct FsInstance {
    id: String,
    entry: Entry,
    mounted: bool,
    pub record: FsRecord,
}

impl FsInstance {
    pub fn create(spec: &FsSpec, options: &FsOptions, size: u64) -> Result<FsInstance> {
        let id = format!("{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
        std::fs::create_dir_all(STATE_DIR).with_context(|| format!("creating {STATE_DIR}"))?;
        let mountpoint = Path::new(STATE_DIR).join(format!("mnt-{id}"));
        let mut this = FsInstance {
            id,
            entry: Entry { pid: std::process::id(), mountpoint: mountpoint.clone(), ..Entry::default() },
            mounted: false,
            record: FsRecord {
                label: spec.label(),
                kind: spec.kind,
                mkfs_command: None,
                mkfs_version: None,
                mount_options: String::new(),
                super_options: String::new(),
                device: None,
                backing: String::new(),
                size_bytes: size,
            },
        };
        this.register()?;
        std::fs::create_dir(&mountpoint).with_context(|| format!("creating mount point {}", mountpoint.display()))?;
        let opts = spec.mount_options.clone();
        if spec.kind == FsKind::Tmpfs {
            this.record.backing = "ram".into();
            let all = match &opts {
                Some(o) => format!("size={size},{o}"),
                None => format!("size={size}"),
            };
            run("mount", &["-t", "tmpfs", "-o", &all, "fsscale", &mountpoint.display().to_string()])?;
        } else {
            let device = match &options.backing {
                Backing::Device(dev) => {
                    this.record.backing = format!("dev:{}", dev.display());
                    dev.display().to_string()
                }
                Backing::Ram | Backing::File(_) => {
                    let dir = match &options.backing {
                        Backing::File(dir) => {
                            this.record.backing = format!("file:{}", dir.display());
                            dir.clone()
                        }
                        _ => {
                            this.record.backing = "ram".into();
                            PathBuf::from("/dev/shm")
                        }
                    };
                    let image = dir.join(format!("{PREFIX}{}.img", this.id));
                    this.entry.image = Some(image.clone());
                    this.register()?;
                    let file = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&image)
                        .with_context(|| format!("creating image {}", image.display()))?;
                    file.set_len(size).with_context(|| format!("sizing image {}", image.display()))?;
                    let device =
                        run("losetup", &["--find", "--show", &image.display().to_string()])?.trim().to_string();
                    this.entry.loop_device = Some(device.clone());
                    this.register()?;
                    device
                }
            };
            let (tool, flags, _) = spec.kind.mkfs().expect("a made filesystem has mkfs");
            let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
            args.extend(options.mkfs_options.iter().cloned());
            args.push(device.clone());
            let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
            run(tool, &args_ref)?;
            this.record.mkfs_command = Some(format!("{tool} {}", args.join(" ")));
            this.record.mkfs_version = mkfs_version(tool);
            let mut mount_args = vec!["-t", spec.kind.name()];
            if let Some(o) = &opts {
                mount_args.extend(["-o", o]);
            }
            let mnt = mountpoint.display().to_string();
            mount_args.extend([device.as_str(), mnt.as_str()]);
            run("mount", &mount_args)?;
            this.record.device = Some(device);
        }
        this.mounted = true;
        let target = Target::detect(&mountpoint);
        this.record.mount_options = target.mount_options;
        this.record.super_options = target.super_options;
        Ok(this)
    }

    pub fn mountpoint(&self) -> &Path {
        &self.entry.mountpoint
    }

    /// The block device's name in /sys/class/block (`loop3`), if any.
    pub fn block_name(&self) -> Option<String> {
        let dev = self.record.device.as_ref()?;
        let canonical = std::fs::canonicalize(dev).ok()?;
        canonical.file_name().map(|n| n.to_string_lossy().into_owned())
    }

    fn entry_path(&self) -> PathBuf {
        Path::new(STATE_DIR).join(format!("{PREFIX}{}.json", self.id))
    }

    fn register(&self) -> Result<()> {
        let text = serde_json::to_string(&self.entry).expect("entry serializes");
        std::fs::write(self.entry_path(), text).with_context(|| format!("writing {}", self.entry_path().display()))
    }

    /// Unmounts, detaches and deletes; the first failure is returned, the rest still attempted.
    pub fn destroy(mut self) -> Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        let result = undo(&self.entry, self.mounted);
        self.mounted = false;
        if result.is_ok() {
            let _ = std::fs::remove_file(self.entry_path());
        }
        result
    }
}

impl Drop for FsInstance {
    fn drop(&mut self) {
        if std::process::id() == self.entry.pid && (self.mounted || self.entry.image.is_some()) {
            let _ = self.teardown();
            self.entry.image = None;
        }
    }
}

/// Undoes an entry: unmount (lazily if busy), detach the loop device if it
/// still serves our image, delete the image, remove the mount point.
fn undo(entry: &Entry, mounted: bool) -> Result<()> {
    let mut first: Option<anyhow::Error> = None;
    let mnt = entry.mountpoint.display().to_string();
    if mounted || is_mounted(&entry.mountpoint) {
        if let Err(e) = run("umount", &[&mnt]) {
            if let Err(lazy) = run("umount", &["-l", &mnt]) {
                first.get_or_insert(e.context(lazy.to_string()));
            }
        }
    }
    if let (Some(dev), Some(image)) = (&entry.loop_device, &entry.image) {
        if loop_backs(dev, image) {
            if let Err(e) = run("losetup", &["-d", dev]) {
                first.get_or_insert(e);
            }
        }
    }
    if let Some(image) = &entry.image {
        let ours = image.file_name().is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
        if ours && image.exists() {
            if let Err(e) = std::fs::remove_file(image) {
                first.get_or_insert(anyhow!("removing {}: {e}", image.display()));
            }
        }
    }
    if entry.mountpoint.exists() && !is_mounted(&entry.mountpoint) {
        let _ = std::fs::remove_dir(&entry.mountpoint);
    }
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn is_mounted(path: &Path) -> bool {
    let text = path.display().to_string();
    crate::results::mounts().iter().any(|m| m.mount_point == text)
}

/// Whether loop device `dev` is still attached to `image`.
fn loop_backs(dev: &str, image: &Path) -> bool {
    let name = dev.trim_start_matches("/dev/");
    std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
        .map(|b| Path::new(b.trim()) == image)
        .unwrap_or(false)
}

/// Runs a program, returning its stdout; a failure carries the command and its stderr.
fn run(program: &str, args: &[&str]) -> Result<String> {
    let out =
        Command::new(program).args(args).output().map_err(|e| anyhow!("running {program}: {e} (is it installed?)"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).rev().take(2).collect();
        bail!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn mkfs_version(tool: &str) -> Option<String> {
    let out = Command::new(tool).arg("-V").output().ok()?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(String::from)
}

/// Registry entries left by processes that are gone.
fn stale_entries() -> Vec<(PathBuf, Entry)> {
    let Ok(dir) = std::fs::read_dir(STATE_DIR) else { return Vec::new() };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .filter_map(|e| {
            let entry: Entry = serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok()?;
            // SAFETY: kill with signal 0 only checks whether the process exists.
            let alive = unsafe { libc::kill(entry.pid as libc::pid_t, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
            (!alive).then_some((e.path(), entry))
        })
        .collect()
}

/// Describes what killed runs left behind (mount points, loop devices, images).
pub fn leftovers() -> Vec<String> {
    stale_entries().iter().map(|(_, e)| describe(e)).collect()
}

fn describe(e: &Entry) -> String {
    let mut parts = vec![format!("mount point {}", e.mountpoint.display())];
    if let Some(d) = &e.loop_device {
        parts.push(format!("loop device {d}"));
    }
    if let Some(i) = &e.image {
        parts.push(format!("image {}", i.display()));
    }
    format!("{} (pid {})", parts.join(", "), e.pid)
}

/// Undoes every leftover; returns what was cleaned.
pub fn cleanup_leftovers() -> Result<Vec<String>> {
    let mut cleaned = Vec::new();
    for (path, entry) in stale_entries() {
        undo(&entry, false).with_context(|| format!("cleaning {}", describe(&entry)))?;
        let _ = std::fs::remove_file(&path);
        cleaned.push(describe(&entry));
    }
    Ok(cleaned)
}

/// I/O counters of a block device (`/sys/class/block/NAME/stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceSnapshot {
    read_ios: u64,
    read_sectors: u64,
    write_ios: u64,
    write_sectors: u64,
    io_ms: u64,
}

impl DeviceSnapshot {
    pub fn read(name: &str) -> Option<DeviceSnapshot> {
        let text = std::fs::read_to_string(format!("/sys/class/block/{name}/stat")).ok()?;
        let f: Vec<u64> = text.split_whitespace().filter_map(|v| v.parse().ok()).collect();
        (f.len() >= 10).then(|| DeviceSnapshot {
            read_ios: f[0],
            read_sectors: f[2],
            write_ios: f[4],
            write_sectors: f[6],
            io_ms: f[9],
        })
    }

    pub fn delta(&self, later: &DeviceSnapshot) -> DeviceIo {
        DeviceIo {
            read_ios: later.read_ios.saturating_sub(self.read_ios),
            read_bytes: later.read_sectors.saturating_sub(self.read_sectors) * 512,
            write_ios: later.write_ios.saturating_sub(self.write_ios),
            write_bytes: later.write_sectors.saturating_sub(self.write_sectors) * 512,
            io_ms: later.io_ms.saturating_sub(self.io_ms),
        }
    }
}

/// The backing device's I/O during the timed window (the `iostat` view).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceIo {
    pub read_ios: u64,
    pub read_bytes: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
    /// Milliseconds the device was busy.
    pub io_ms: u64,
}
