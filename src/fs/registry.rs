//! The registry of filesystems fsscale made, so that `fsscale cleanup` can
//! undo what a killed run left, and nothing else.
//!
//! A run creates its entry exclusively (`O_EXCL | O_NOFOLLOW`, a name with
//! an unpredictable part) in a root-only directory and holds an exclusive
//! `flock` on it for as long as the filesystem exists. Liveness is that
//! lock: a process of another PID namespace, a reused PID or a forged `pid`
//! field cannot make a live run's filesystem look dead or a dead one alive.
//! Cleanup acts only on what fsscale itself names: the mount point
//! `STATE_DIR/mnt-<id>`, an image called `.fsscale-fs-<id>.img` that is a
//! regular file, and a loop device whose backing file is that image.

use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::STATE_DIR;
use crate::{lockfile, sys};

/// Prefix of every image file and registry entry fsscale makes.
pub(super) const PREFIX: &str = ".fsscale-fs-";

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Everything needed to undo one filesystem.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub(super) struct Entry {
    /// For people reading the registry; liveness never depends on it.
    pub pid: u32,
    pub mountpoint: PathBuf,
    pub image: Option<PathBuf>,
    /// The image's (device, inode) once created: cleanup detaches and
    /// deletes only that file.
    #[serde(default)]
    pub image_id: Option<(u64, u64)>,
    pub loop_device: Option<String>,
}

/// A live run's entry: created exclusively, locked until dropped.
pub(super) struct Registration {
    pub id: String,
    path: PathBuf,
    file: File,
}

impl Registration {
    pub(super) fn create() -> Result<Registration> {
        sys::ensure_private_dir(Path::new(STATE_DIR), "state directory")?;
        let id = format!("{}-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed), sys::random_hex(4));
        let path = Path::new(STATE_DIR).join(format!("{PREFIX}{id}.json"));
        let file = lockfile::create_locked(crate::sys::CWD, &sys::cstring(&path)?, 0o600)
            .map_err(|e| anyhow!("creating registry entry {}: {}", path.display(), sys::errno_text(e)))?;
        Ok(Registration { id, path, file })
    }

    pub(super) fn mountpoint(&self) -> PathBuf {
        Path::new(STATE_DIR).join(format!("mnt-{}", self.id))
    }

    pub(super) fn image_name(&self) -> String {
        format!("{PREFIX}{}.img", self.id)
    }

    /// Rewrites the entry in place (through the locked descriptor).
    pub(super) fn record(&mut self, entry: &Entry) -> Result<()> {
        let text = serde_json::to_string(entry).expect("entry serializes");
        let written =
            self.file.set_len(0).and_then(|()| self.file.rewind()).and_then(|()| self.file.write_all(text.as_bytes()));
        written.with_context(|| format!("writing registry entry {}", self.path.display()))
    }

    /// Removes the entry: the filesystem is gone.
    pub(super) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What `fsscale cleanup` did.
#[derive(Debug, Default)]
pub struct CleanupReport {
    pub removed: Vec<String>,
    /// Things it would not touch, and why.
    pub refused: Vec<String>,
    /// Entries of runs still going (left alone).
    pub live: usize,
}

/// An entry with no live run behind it.
pub(super) struct Stale {
    pub(super) path: PathBuf,
    pub(super) id: String,
    pub(super) entry: Option<Entry>,
    /// Held while the leftover is undone, so two cleanups never race.
    _lock: File,
}

/// Entries whose lock nobody holds.
pub(super) fn stale_entries(live: &mut usize) -> Vec<Stale> {
    let Ok(dir) = std::fs::read_dir(STATE_DIR) else { return Vec::new() };
    let mut stale = Vec::new();
    for dirent in dir.flatten() {
        let name = dirent.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_prefix(PREFIX).and_then(|n| n.strip_suffix(".json")) else { continue };
        let path = dirent.path();
        let Ok(cpath) = sys::cstring(&path) else { continue };
        let file = match lockfile::lock_if_unheld(crate::sys::CWD, &cpath) {
            Ok(Some(file)) => file,
            Ok(None) => {
                *live += 1;
                continue;
            }
            Err(_) => continue,
        };
        let entry = std::io::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok());
        stale.push(Stale { path, id: id.to_string(), entry, _lock: file });
    }
    stale
}

/// Describes what killed runs left behind.
pub fn leftovers() -> Vec<String> {
    let mut live = 0;
    stale_entries(&mut live).iter().map(|s| s.entry.as_ref().map_or_else(|| s.id.clone(), describe)).collect()
}

pub(super) fn describe(e: &Entry) -> String {
    let mut parts = vec![format!("mount point {}", e.mountpoint.display())];
    if let Some(d) = &e.loop_device {
        parts.push(format!("loop device {d}"));
    }
    if let Some(i) = &e.image {
        parts.push(format!("image {}", i.display()));
    }
    format!("{} (pid {})", parts.join(", "), e.pid)
}

/// Whether an entry names only what fsscale itself would have made for `id`.
pub(super) fn checked(id: &str, entry: &Entry) -> Result<()> {
    let mountpoint = Path::new(STATE_DIR).join(format!("mnt-{id}"));
    if entry.mountpoint != mountpoint {
        bail!("its mount point {} is not fsscale's own ({})", entry.mountpoint.display(), mountpoint.display());
    }
    if let Some(image) = &entry.image {
        let expected = format!("{PREFIX}{id}.img");
        if image.file_name().and_then(|n| n.to_str()) != Some(expected.as_str()) || !image.is_absolute() {
            bail!("its image {} does not have fsscale's name for it ({expected})", image.display());
        }
        // Directly inside the directory it was made in, named without `..`,
        // `.` or a symbolic link (fsscale records the real path).
        let plain = image.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        let parent = image.parent().unwrap_or(Path::new("/"));
        if !plain || std::fs::canonicalize(parent).is_ok_and(|real| real != parent) {
            bail!("its image {} is not named by its real path", image.display());
        }
        if let Ok(meta) = std::fs::symlink_metadata(image) {
            if !meta.file_type().is_file() {
                bail!("its image {} is not a regular file", image.display());
            }
        }
    }
    if let Some(dev) = &entry.loop_device {
        let name = dev.strip_prefix("/dev/loop").unwrap_or("");
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
            bail!("its loop device {dev} is not a loop device");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fsscale_names_pass_the_check() {
        let id = "12-0-abcd1234";
        let good = Entry {
            pid: 12,
            mountpoint: Path::new(STATE_DIR).join(format!("mnt-{id}")),
            image: Some(PathBuf::from(format!("/dev/shm/{PREFIX}{id}.img"))),
            image_id: None,
            loop_device: Some("/dev/loop7".into()),
        };
        assert!(checked(id, &good).is_ok());
        let forged = Entry { mountpoint: PathBuf::from("/home"), ..good.clone() };
        assert!(checked(id, &forged).unwrap_err().to_string().contains("not fsscale's own"));
        let forged = Entry { image: Some(PathBuf::from("/etc/passwd")), ..good.clone() };
        assert!(checked(id, &forged).unwrap_err().to_string().contains("does not have fsscale's name"));
        let forged = Entry { image: Some(PathBuf::from(format!("/dev/shm/{PREFIX}other.img"))), ..good.clone() };
        assert!(checked(id, &forged).is_err());
        let dotdot = format!("/dev/shm/../etc/{PREFIX}{id}.img");
        let forged = Entry { image: Some(PathBuf::from(dotdot)), ..good.clone() };
        assert!(checked(id, &forged).unwrap_err().to_string().contains("not named by its real path"));
        // Through a symbolic link (/dev/fd leads to /proc/self/fd).
        let forged = Entry { image: Some(PathBuf::from(format!("/dev/fd/{PREFIX}{id}.img"))), ..good.clone() };
        assert!(checked(id, &forged).unwrap_err().to_string().contains("not named by its real path"));
        let forged = Entry { loop_device: Some("/dev/sda".into()), ..good };
        assert!(checked(id, &forged).unwrap_err().to_string().contains("not a loop device"));
    }
}
