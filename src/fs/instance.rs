//! One made filesystem: image, loop device, mkfs, mount; and the way back.

use std::fs::File;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use super::loopdev;
use super::registry::{Entry, Registration};
use super::Making;
use super::{Backing, DeviceIo, FsKind, FsOptions, FsRecord, FsSpec};
use crate::results::Target;

/// A filesystem fsscale made and mounted; dropping it takes it all down.
/// (Its registry entry stays locked, so `fsscale cleanup` leaves it alone,
/// until it is gone.)
pub struct FsInstance {
    registration: Option<Registration>,
    entry: Entry,
    mounted: bool,
    pid: u32,
    pub record: FsRecord,
}

impl FsInstance {
    pub fn create(spec: &FsSpec, options: &FsOptions, size: u64) -> Result<FsInstance> {
        let registration = Registration::create()?;
        let mountpoint = registration.mountpoint();
        let image_name = registration.image_name();
        let mut this = FsInstance {
            entry: Entry { pid: std::process::id(), mountpoint: mountpoint.clone(), ..Entry::default() },
            registration: Some(registration),
            mounted: false,
            pid: std::process::id(),
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
        match spec.kind {
            FsKind::Tmpfs => this.mount_tmpfs(spec, size)?,
            FsKind::Ramfs => this.mount_ramfs(spec, size)?,
            FsKind::Ext4 | FsKind::Xfs | FsKind::Btrfs | FsKind::F2fs => {
                this.make_on_device(spec, options, size, &image_name)?
            }
            FsKind::Dir => bail!("--dir is used as it is: nothing is made (internal error)"),
        }
        this.mounted = true;
        let target = Target::detect(&mountpoint);
        this.record.mount_options = target.mount_options;
        this.record.super_options = target.super_options;
        Ok(this)
    }

    /// tmpfs of `size` bytes.
    fn mount_tmpfs(&mut self, spec: &FsSpec, size: u64) -> Result<()> {
        let (mountpoint, opts) = (self.entry.mountpoint.clone(), &spec.mount_options);
        self.record.backing = "ram".into();
        let all = match &opts {
            Some(o) => format!("size={size},{o}"),
            None => format!("size={size}"),
        };
        run_in(&mountpoint, "mount", &["-t", "tmpfs", "-o", &all, "fsscale", &mountpoint.display().to_string()])?;
        Ok(())
    }

    /// ramfs, refused unless `size` bytes fit in the memory available now.
    fn mount_ramfs(&mut self, spec: &FsSpec, size: u64) -> Result<()> {
        let (mountpoint, opts) = (self.entry.mountpoint.clone(), &spec.mount_options);
        // ramfs has no size limit and never swaps: filling it can take the
        // machine's memory, so it must fit in what is available now.
        let available = crate::sys::available_memory().unwrap_or(0);
        if available < size {
            bail!(
                "--fs ramfs has no size limit and the workload may need {} MiB, but only {} MiB of memory is \
                 available; use tmpfs (which has one), or less work",
                size >> 20,
                available >> 20
            );
        }
        self.record.backing = "ram".into();
        let mut args = vec!["-t", "ramfs"];
        if let Some(o) = &opts {
            args.extend(["-o", o]);
        }
        let mnt = mountpoint.display().to_string();
        args.extend(["fsscale", mnt.as_str()]);
        run_in(&mountpoint, "mount", &args)?;
        Ok(())
    }

    /// A filesystem made with its mkfs on the backing device: a loop device
    /// over an image in memory or in `--backing file:DIR`, or a real device.
    fn make_on_device(&mut self, spec: &FsSpec, options: &FsOptions, size: u64, image_name: &str) -> Result<()> {
        let (mountpoint, opts) = (self.entry.mountpoint.clone(), &spec.mount_options);
        // Held until the filesystem is mounted: then the mount holds the
        // device, and the kernel detaches it once that is gone.
        let mut loop_held = None;
        let device = match &options.backing {
            Backing::Device(dev) => {
                self.record.backing = format!("dev:{}", dev.display());
                dev.display().to_string()
            }
            Backing::Ram | Backing::File(_) => {
                let dir = match &options.backing {
                    Backing::File(dir) => {
                        self.record.backing = format!("file:{}", dir.display());
                        dir.clone()
                    }
                    _ => {
                        self.record.backing = "ram".into();
                        PathBuf::from("/dev/shm")
                    }
                };
                // The image is sparse, but fills as the workload writes: a
                // full backing filesystem would fail the run midway.
                if let Some(free) = crate::sys::free_bytes(&dir).filter(|&free| free < size) {
                    bail!(
                        "--backing {}: {} has {} MiB free, the {} MiB image needs its room; \
                         free space, choose another directory, or pass a smaller --fs-size",
                        self.record.backing,
                        dir.display(),
                        free >> 20,
                        size >> 20
                    );
                }
                let image_dir = ImageDir::open(&dir, &self.record.backing)?;
                self.entry.image = Some(image_dir.path.join(image_name));
                self.register()?;
                let (image, id) = image_dir.create(image_name, size)?;
                self.entry.image_id = Some(id);
                self.register()?;
                let attached = loopdev::attach(&image, self.entry.image.as_deref().expect("set above"))?;
                self.entry.loop_device = Some(attached.path.clone());
                self.register()?;
                let device = attached.path.clone();
                loop_held = Some(attached);
                device
            }
        };
        let (tool, flags, _) = spec.kind.mkfs().expect("a made filesystem has mkfs");
        let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        args.extend(options.mkfs_options.iter().cloned());
        args.push(device.clone());
        let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
        run_in(&mountpoint, tool, &args_ref)?;
        self.record.mkfs_command = Some(format!("{tool} {}", args.join(" ")));
        self.record.mkfs_version = mkfs_version(tool);
        let mut mount_args = vec!["-t", spec.kind.name()];
        if let Some(o) = &opts {
            mount_args.extend(["-o", o]);
        }
        let mnt = mountpoint.display().to_string();
        mount_args.extend([device.as_str(), mnt.as_str()]);
        run_in(&mountpoint, "mount", &mount_args)?;
        drop(loop_held);
        self.record.device = Some(device);
        Ok(())
    }

    pub fn mountpoint(&self) -> &Path {
        &self.entry.mountpoint
    }

    /// The block device's name in /sys/class/block (`loop3`), if any.
    pub(crate) fn block_name(&self) -> Option<String> {
        let dev = self.record.device.as_ref()?;
        let canonical = std::fs::canonicalize(dev).ok()?;
        canonical.file_name().map(|n| n.to_string_lossy().into_owned())
    }

    fn register(&mut self) -> Result<()> {
        let entry = self.entry.clone();
        self.registration.as_mut().expect("registered until torn down").record(&entry)
    }

    /// Unmounts, detaches and deletes; the first failure is returned, the rest still attempted.
    pub fn destroy(mut self) -> Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        let result = undo(&self.entry, self.mounted);
        self.mounted = false;
        // On failure the entry stays (unlocked once this process is gone) for `fsscale cleanup`.
        if let (Ok(_), Some(registration)) = (&result, self.registration.take()) {
            registration.remove();
        }
        result.map(drop)
    }
}

impl Drop for FsInstance {
    fn drop(&mut self) {
        // Also after a failed setup (a bad mount option, mkfs failing): no
        // entry, mount point or image outlives it.
        if std::process::id() == self.pid && self.registration.is_some() {
            let _ = self.teardown();
        }
    }
}

/// Undoes an entry: unmount (lazily if busy), detach the loop device if it
/// still serves our image, delete the image, remove the mount point.
/// Returns what it removed.
pub(super) fn undo(entry: &Entry, mounted: bool) -> Result<Vec<String>> {
    let mut first: Option<anyhow::Error> = None;
    let mut done = Vec::new();
    let mnt = entry.mountpoint.display().to_string();
    if mounted || is_mounted(&entry.mountpoint) {
        match run("umount", &[&mnt])
            .or_else(|e| run("umount", &["-l", &mnt]).map_err(|lazy| e.context(lazy.to_string())))
        {
            Ok(_) => done.push(format!("unmounted {mnt}")),
            Err(e) => drop(first.get_or_insert(e)),
        }
    }
    // The image as fsscale made it: the inode recorded at creation. An entry
    // without one (cut short, or forged) names a file nobody can prove is
    // fsscale's: it is left alone, and said so.
    let image_id = entry.image_id;
    if let (Some(image), None) = (&entry.image, image_id) {
        if std::fs::symlink_metadata(image).is_ok() {
            first.get_or_insert(anyhow!(
                "not removing {}: its registry entry records no inode, so nothing proves fsscale made it; \
                 remove it by hand if it is yours",
                image.display()
            ));
        }
    }
    if let (Some(dev), Some(id)) = (&entry.loop_device, image_id) {
        match loopdev::detach_if_serving(dev, id) {
            Ok(true) => done.push(format!("detached loop device {dev}")),
            Ok(false) => {}
            Err(e) => drop(first.get_or_insert(e)),
        }
    }
    if let Some(image) = &entry.image {
        let ours = image.file_name().is_some_and(|n| n.to_string_lossy().starts_with(super::registry::PREFIX));
        let same = std::fs::symlink_metadata(image)
            .is_ok_and(|m| m.file_type().is_file() && image_id == Some((m.dev(), m.ino())));
        if ours && same {
            match std::fs::remove_file(image) {
                Ok(()) => done.push(format!("removed image {}", image.display())),
                Err(e) => drop(first.get_or_insert(anyhow!("removing {}: {e}", image.display()))),
            }
        }
    }
    if entry.mountpoint.exists() && !is_mounted(&entry.mountpoint) && std::fs::remove_dir(&entry.mountpoint).is_ok() {
        done.push(format!("removed mount point {mnt}"));
    }
    match first {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

fn is_mounted(path: &Path) -> bool {
    let text = path.display().to_string();
    crate::sys::mounts().iter().any(|m| m.mount_point == text)
}

/// Runs a program, returning its stdout; a failure carries the command and its stderr.
fn run(program: &str, args: &[&str]) -> Result<String> {
    run_in(Path::new("/"), program, args)
}

/// [`run`] in directory `cwd`. mkfs and mount run in the empty, root-only
/// mount point: a word of the user's that they read as a relative path
/// names nothing there.
fn run_in(cwd: &Path, program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .output()
        .map_err(|e| anyhow!("running {program}: {e} (is it installed?)"))?;
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

    pub(crate) fn delta(&self, later: &DeviceSnapshot) -> DeviceIo {
        DeviceIo {
            read_ios: later.read_ios.saturating_sub(self.read_ios),
            read_bytes: later.read_sectors.saturating_sub(self.read_sectors) * 512,
            write_ios: later.write_ios.saturating_sub(self.write_ios),
            write_bytes: later.write_sectors.saturating_sub(self.write_sectors) * 512,
            io_ms: later.io_ms.saturating_sub(self.io_ms),
        }
    }
}

/// A directory to create an image in, held open so that what is checked is
/// what the image is created in.
pub(super) struct ImageDir {
    dir: File,
    /// Its real path (no symbolic link), for the registry and people.
    path: PathBuf,
}

impl ImageDir {
    /// Opens `dir` and refuses it unless only root or this user can replace
    /// what is in it: owned by one of them, and writable by nobody else
    /// unless sticky (as /dev/shm and /tmp are).
    pub(super) fn open(dir: &Path, backing: &str) -> Result<ImageDir> {
        let name = crate::sys::cstring(dir)?;
        let dir_file =
            crate::sys::open(crate::sys::CWD, &name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
                .map_err(|e| anyhow!("--backing {backing}: {}: {}", dir.display(), crate::sys::errno_text(e)))?;
        let dir_file = File::from(dir_file);
        let meta = dir_file.metadata().with_context(|| format!("--backing {backing}: {}", dir.display()))?;
        if let Some(problem) = crate::sys::others_can_replace_in(&meta) {
            bail!(
                "--backing {backing}: {} {problem}, who could swap the image for a link to any file; \
                 use a directory owned by root or by you that only you can write, or a sticky one such as /dev/shm",
                dir.display()
            );
        }
        let path = crate::sys::fd_path(&dir_file)
            .with_context(|| format!("--backing {backing}: resolving {}", dir.display()))?;
        Ok(ImageDir { dir: dir_file, path })
    }

    /// Creates the image `name` (never through a link, never an existing
    /// file) of `size` bytes; returns it open and its (device, inode).
    fn create(&self, name: &str, size: u64) -> Result<(File, (u64, u64))> {
        let path = self.path.join(name);
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_RDWR | libc::O_CLOEXEC;
        let file = crate::sys::open(&self.dir, &crate::sys::cname(name), flags, 0o600)
            .map_err(|e| anyhow!("creating image {}: {}", path.display(), crate::sys::errno_text(e)))?;
        let file = File::from(file);
        file.set_len(size).with_context(|| format!("sizing image {}", path.display()))?;
        let id = loopdev::file_id(&file)?;
        Ok((file, id))
    }
}
