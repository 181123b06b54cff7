//! Scratch directories: the only places fsscale ever deletes anything.
//!
//! A scratch directory is made with `mkdir` under a unique name (so it cannot
//! already exist), mode 0700, and holds a marker file with a random token.
//! Before removing it, fsscale checks that the name still refers to the very
//! directory it made (device and inode through the parent descriptor it kept
//! open) and that the marker still holds its token. Removal works through
//! descriptors, never follows symbolic links, and refuses to descend into
//! another filesystem mounted inside.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};

use crate::sys::{self, Errno};

mod runs;
pub mod warden;

pub use runs::{dead_runs, forget, DeadRun, RunRegistration};

/// The marker file in every scratch directory.
pub(crate) const MARKER: &str = ".fsscale-scratch";

/// Name prefix of every scratch directory.
pub(crate) const PREFIX: &str = ".fsscale-";

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// A scratch directory fsscale made and owns.
pub(crate) struct Scratch {
    parent: OwnedFd,
    name: CString,
    path: PathBuf,
    dir: OwnedFd,
    dev: u64,
    ino: u64,
    /// The mount the directory is on: removal never leaves it.
    mount: u64,
    token: String,
    owner_pid: u32,
    removed: bool,
    /// The marker, open and `flock`ed while the directory is in use (forked
    /// workers share the lock): `fsscale cleanup` removes only directories
    /// whose marker nobody holds.
    marker_lock: Option<std::fs::File>,
}

impl Scratch {
    /// Makes a fresh scratch directory inside `parent`.
    pub fn create(parent: &Path) -> Result<Scratch> {
        let parent_c = sys::cstring(parent)?;
        let parent_fd =
            sys::open(sys::CWD, &parent_c, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| dir_error(parent, e))?;
        let token = sys::random_hex(16);
        let name =
            format!("{PREFIX}{}-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed), &token[..8]);
        let name_c = sys::cname(&name);
        sys::mkdirat(&parent_fd, &name_c, 0o700).map_err(|e| {
            anyhow::anyhow!(
                "cannot create a scratch directory in {}: {}; --dir must be a writable directory",
                parent.display(),
                sys::errno_text(e)
            )
        })?;
        // Whatever fails from here (a full filesystem, no descriptor left)
        // takes the new directory and its marker with it: nothing half-made stays.
        let text = marker_text(std::process::id(), &token);
        let made = open_made(parent_fd.as_fd(), &parent.join(&name), &name_c, &text);
        let (dir, st, path, mount, marker) = match made {
            Ok(made) => made,
            Err(error) => {
                let _ = sys::unlinkat(&parent_fd, &sys::cname(&format!("{name}/{MARKER}")), 0);
                let _ = sys::unlinkat(&parent_fd, &name_c, libc::AT_REMOVEDIR);
                return Err(error);
            }
        };
        Ok(Scratch {
            parent: parent_fd,
            name: name_c,
            path,
            dir,
            dev: st.st_dev,
            ino: st.st_ino,
            mount,
            token,
            owner_pid: std::process::id(),
            removed: false,
            marker_lock: Some(marker),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The random token its marker holds: another process that finds it
    /// there (an MPI rank on another node) knows the directory is this one.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// Removes the directory and everything in it, after proving it is ours.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<()> {
        let shown = self.path.display();
        let st = sys::fstatat(&self.parent, &self.name, libc::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| anyhow::anyhow!("scratch directory {shown} vanished: {}", sys::errno_text(e)))?;
        if st.st_dev != self.dev || st.st_ino != self.ino {
            bail!("scratch directory {shown} was replaced by something else; not removing it");
        }
        let marker = read_small_file(self.fd(), MARKER);
        if marker.as_deref() != Some(marker_text(self.owner_pid, &self.token).as_str()) {
            bail!("scratch directory {shown} no longer holds fsscale's marker; not removing it");
        }
        // Held while the contents go, so that no other run takes this live
        // directory for a killed run's; closed just before the marker is
        // unlinked: NFS and FUSE keep an open file that is unlinked as a
        // hidden `.nfs*`/`.fuse_hidden*` entry until its last close, and the
        // directory would not be empty.
        let mut lock = self.marker_lock.take();
        remove_proven(self.parent.as_fd(), &self.name, self.fd(), self.mount, &self.path, &mut || drop(lock.take()))
    }
}

fn marker_text(pid: u32, token: &str) -> String {
    format!("fsscale scratch directory\npid={pid}\ntoken={token}\n")
}

/// Opens the directory just made as `name` in `parent`, proves its real
/// path names it, sets its mode and writes its marker (kept open, locked).
/// Workloads that look up absolute paths use that real path, resolved once
/// through the descriptor, never `--dir`'s symbolic links again.
fn open_made(
    parent: BorrowedFd<'_>,
    given: &Path,
    name: &CStr,
    marker: &str,
) -> Result<(OwnedFd, sys::Stat, PathBuf, u64, std::fs::File)> {
    use std::os::unix::fs::MetadataExt;
    let dir = sys::open(parent, name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
        .map_err(|e| anyhow::anyhow!("opening scratch directory {}: {}", given.display(), sys::errno_text(e)))?;
    let st = sys::fstat(&dir).map_err(|e| anyhow::anyhow!("{}: {}", given.display(), sys::errno_text(e)))?;
    let path = sys::fd_path(&dir).with_context(|| format!("resolving scratch directory {}", given.display()))?;
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.dev() == st.st_dev && m.ino() == st.st_ino) {
        bail!("scratch directory {} is not reachable by its own path; pass a plain --dir", path.display());
    }
    let mount =
        sys::mount_id(&dir).map_err(|e| anyhow::anyhow!("{}: statx: {}", path.display(), sys::errno_text(e)))?;
    // The umask may have narrowed the mode; 0700 exactly is the contract.
    let _ = sys::fchmod(&dir, 0o700);
    let written = crate::lockfile::create_locked(&dir, &sys::cname(MARKER), 0o600)
        .map_err(std::io::Error::from_raw_os_error)
        .and_then(|mut file| std::io::Write::write_all(&mut file, marker.as_bytes()).map(|()| file));
    let file = written.with_context(|| format!("writing {MARKER} in {}", path.display()))?;
    Ok((dir, st, path, mount, file))
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A forked worker holds a copy of this value; only the creator removes.
        if !self.removed && std::process::id() == self.owner_pid {
            self.removed = true;
            let _ = self.remove_inner();
        }
    }
}

fn dir_error(dir: &Path, errno: Errno) -> anyhow::Error {
    match errno {
        libc::ENOENT => anyhow::anyhow!("--dir {} does not exist; create it or pass another --dir", dir.display()),
        libc::ENOTDIR => anyhow::anyhow!("--dir {} is not a directory; pass a directory", dir.display()),
        _ => anyhow::anyhow!("cannot open --dir {}: {}", dir.display(), sys::errno_text(errno)),
    }
}

/// Refuses a `--dir` that someone other than root or this user could
/// replace under a run: every directory on its real path must be owned by
/// one of them and writable by nobody else unless sticky (as /tmp). Absolute
/// lookups walk that path from `/` on every op; this is what keeps them in
/// the scratch directory fsscale made.
pub(crate) fn check_trusted_path(dir: &Path) -> Result<()> {
    let real = std::fs::canonicalize(dir).map_err(|e| anyhow::anyhow!("--dir {}: {e}", dir.display()))?;
    for component in real.ancestors() {
        let meta = std::fs::metadata(component).map_err(|e| anyhow::anyhow!("{}: {e}", component.display()))?;
        let Some(problem) = sys::others_can_replace_in(&meta) else { continue };
        bail!(
            "--path absolute: {} on the way to --dir {} {problem}, who could swap it while the run looks up paths \
             through it; use a --dir whose every directory only root or you can change",
            component.display(),
            dir.display()
        );
    }
    Ok(())
}

/// A scratch directory a killed run left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadScratch {
    pub path: PathBuf,
    /// The pid its marker names (for people; liveness is the marker's lock).
    pub pid: Option<u32>,
}

/// Scratch directories in `parent` that no live run holds: named like
/// fsscale's, a real directory, and a marker of fsscale's whose lock is free.
pub(crate) fn dead_scratches(parent: &Path) -> Result<Vec<DeadScratch>> {
    let entries = std::fs::read_dir(parent).with_context(|| format!("reading {}", parent.display()))?;
    let mut dead = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(PREFIX) || name.starts_with(".fsscale-fs-") {
            continue;
        }
        if let Ok(Some(pid)) = probe_dead(&entry.path()) {
            dead.push(DeadScratch { path: entry.path(), pid });
        }
    }
    dead.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(dead)
}

/// `Some(pid)` when `path` is a scratch directory of fsscale's that no live
/// run holds; `None` when it is held (alive). Errors: not fsscale's.
fn probe_dead(path: &Path) -> Result<Option<Option<u32>>> {
    let dir = sys::open(sys::CWD, &sys::cstring(path)?, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), sys::errno_text(e)))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let marker = match crate::lockfile::lock_if_unheld(&dir, &sys::cname(MARKER)) {
        Ok(Some(marker)) => marker,
        Ok(None) => return Ok(None), // a live run holds it
        Err(libc::ENOENT) if stillborn(&dir, &name, false) => return Ok(Some(None)),
        Err(e) => bail!("{}: no marker ({})", path.display(), sys::errno_text(e)),
    };
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(&marker, 4096), &mut text)?;
    if text.is_empty() && stillborn(&dir, &name, true) {
        return Ok(Some(None));
    }
    let mut lines = text.lines();
    if lines.next() != Some("fsscale scratch directory") {
        bail!("{}: the marker is not fsscale's", path.display());
    }
    let pid = lines.next().and_then(|l| l.strip_prefix("pid=")).and_then(|p| p.parse().ok());
    let token = lines.next().and_then(|l| l.strip_prefix("token=")).unwrap_or("");
    if token.len() < 8 || !name.ends_with(&token[..8]) {
        bail!("{}: the marker's token does not match the directory's name", path.display());
    }
    Ok(Some(pid))
}

/// Whether `dir`, called `name`, is a scratch directory a run killed (or
/// failed) while making it: fsscale's form of name
/// (`.fsscale-PID-SEQ-8HEX`), and nothing inside but, with `marker`, an
/// empty marker. Removing one deletes no byte of anybody's.
fn stillborn(dir: &OwnedFd, name: &str, marker: bool) -> bool {
    let parts: Vec<&str> = name.strip_prefix(PREFIX).unwrap_or("").split('-').collect();
    let named = parts.len() == 3
        && parts[..2].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[2].len() == 8
        && parts[2].bytes().all(|b| b.is_ascii_hexdigit());
    // Through the descriptor's magic link: the very directory opened, whatever its name is now.
    let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd())) else { return false };
    let inside: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    named && inside.len() == usize::from(marker) && inside.iter().all(|n| n == MARKER)
}

/// Removes a scratch directory of a killed run, after proving again that
/// it is one (fsscale's name, its marker, nobody holding it), through the
/// same checked removal a run uses: never across a mount.
pub(crate) fn remove_dead(path: &Path) -> Result<()> {
    if probe_dead(path)?.is_none() {
        bail!("{} belongs to a run that is still going; not removing it", path.display());
    }
    let name = path.file_name().ok_or_else(|| anyhow::anyhow!("{} has no name", path.display()))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let parent_fd = sys::open(sys::CWD, &sys::cstring(parent)?, libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow::anyhow!("{}: {}", parent.display(), sys::errno_text(e)))?;
    let name = sys::cstring(Path::new(name))?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let dir = sys::open(&parent_fd, &name, flags, 0)
        .map_err(|e| anyhow::anyhow!("opening {}: {}", path.display(), sys::errno_text(e)))?;
    let mount = sys::mount_id(&dir).map_err(|e| anyhow::anyhow!("statx {}: {}", path.display(), sys::errno_text(e)))?;
    remove_proven(parent_fd.as_fd(), &name, dir.as_fd(), mount, path, &mut || {})
}

/// Removes scratch directory `name` in `parent` (open as `dir`, on mount
/// `mount`) once it is proven fsscale's: everything but the marker, never
/// across a mount; then, if nothing was left alone, the marker, which goes
/// last so that whatever stays is still provably fsscale's, and the directory.
/// Removes the proven scratch directory `dir` (`name` in `parent`): its
/// contents (never across a mount), then, after `unlock`, its marker and itself.
fn remove_proven(
    parent: BorrowedFd<'_>,
    name: &std::ffi::CStr,
    dir: BorrowedFd<'_>,
    mount: u64,
    path: &Path,
    unlock: &mut dyn FnMut(),
) -> Result<()> {
    let marker = sys::cname(MARKER);
    let mut mounts = Vec::new();
    remove_contents(dir, mount, path, &mut mounts, Some(&marker))?;
    if !mounts.is_empty() {
        let parent_path = path.parent().unwrap_or(Path::new("."));
        bail!(
            "left {} alone: a mount inside the scratch directory (fsscale never deletes across mounts); \
             unmount it, and `fsscale cleanup --scratch {}` removes the rest",
            mounts.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            parent_path.display()
        );
    }
    unlock();
    // A stillborn directory (see `stillborn`) has no marker to unlink.
    let unmarked = sys::unlinkat(dir, &marker, 0).or_else(|e| if e == libc::ENOENT { Ok(()) } else { Err(e) });
    unmarked
        .and_then(|()| sys::unlinkat(parent, name, libc::AT_REMOVEDIR))
        .map_err(|e| anyhow::anyhow!("removing scratch directory {}: {}", path.display(), sys::errno_text(e)))
}

fn read_small_file(dir: BorrowedFd<'_>, name: &str) -> Option<String> {
    // Non-blocking and a regular file only: a FIFO there is not waited on.
    let fd = sys::open(dir, &sys::cname(name), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0).ok()?;
    let file = std::fs::File::from(fd);
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 4096), &mut text).ok()?;
    Some(text)
}

/// Entries of a directory (without `.` and `..`), with their `d_type`.
fn list(dir: BorrowedFd<'_>) -> Result<Vec<(CString, u8)>, Errno> {
    let fd = sys::open(dir, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut entries = Vec::new();
    loop {
        let filled = sys::getdents64(&fd, &mut buf)?;
        if filled == 0 {
            return Ok(entries);
        }
        for entry in sys::dirents(&buf, filled) {
            if !entry.is_dot() {
                entries.push((entry.name().to_owned(), entry.d_type));
            }
        }
    }
}

/// Removes everything below `dir` that is on mount `mount`; a directory
/// that is another mount (a bind mount of the same filesystem included) is
/// left alone and listed in `mounts`. Depth first with a stack of its own,
/// not the thread's: a tree 5,000 directories deep (a tarball's) is removed
/// like any other, one descriptor a level.
fn remove_contents(
    dir: BorrowedFd<'_>,
    mount: u64,
    path: &Path,
    mounts: &mut Vec<PathBuf>,
    keep: Option<&std::ffi::CStr>,
) -> Result<()> {
    /// A directory being emptied: its descriptor (none for `dir`), path,
    /// the entries not yet removed, its name in the one above, and how many
    /// mounts were found before it.
    struct Level {
        fd: Option<OwnedFd>,
        path: PathBuf,
        entries: std::vec::IntoIter<(CString, u8)>,
        name: Option<CString>,
        mounts_before: usize,
    }
    let fail = |what: &str, at: &Path, name: &std::ffi::CStr, e: Errno| {
        anyhow::anyhow!("{what} {}: {}", at.join(name.to_string_lossy().as_ref()).display(), sys::errno_text(e))
    };
    let listed = |fd: BorrowedFd<'_>, at: &Path| {
        list(fd).map_err(|e| anyhow::anyhow!("listing {}: {}", at.display(), sys::errno_text(e)))
    };
    let mut stack = vec![Level {
        fd: None,
        path: path.to_path_buf(),
        entries: listed(dir, path)?.into_iter(),
        name: None,
        mounts_before: 0,
    }];
    loop {
        let at_top = stack.len() == 1;
        let Some(top) = stack.last_mut() else { break };
        let here = top.fd.as_ref().map_or(dir, |fd| fd.as_fd());
        let Some((name, d_type)) = top.entries.next() else {
            let done = stack.pop().expect("a level is there");
            let (Some(name), Some(above)) = (done.name, stack.last()) else { continue };
            drop(done.fd);
            if mounts.len() > done.mounts_before {
                continue; // a mount below keeps this directory
            }
            let parent = above.fd.as_ref().map_or(dir, |fd| fd.as_fd());
            sys::unlinkat(parent, &name, libc::AT_REMOVEDIR).map_err(|e| fail("removing", &above.path, &name, e))?;
            continue;
        };
        if at_top && keep == Some(name.as_c_str()) {
            continue;
        }
        let at = &top.path;
        let is_dir = match d_type {
            libc::DT_DIR => true,
            libc::DT_UNKNOWN => {
                let st =
                    sys::fstatat(here, &name, libc::AT_SYMLINK_NOFOLLOW).map_err(|e| fail("stat", at, &name, e))?;
                st.st_mode & libc::S_IFMT == libc::S_IFDIR
            }
            _ => false,
        };
        if !is_dir {
            match sys::unlinkat(here, &name, 0) {
                Ok(()) => {}
                // A file bind-mounted over this name: the mount's, not ours.
                Err(libc::EBUSY) => mounts.push(at.join(name.to_string_lossy().as_ref())),
                Err(e) => return Err(fail("removing", at, &name, e)),
            }
            continue;
        }
        let sub = sys::open(here, &name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
            .map_err(|e| fail("opening", at, &name, e))?;
        let sub_path = at.join(name.to_string_lossy().as_ref());
        if sys::mount_id(&sub).map_err(|e| fail("statx", at, &name, e))? != mount {
            mounts.push(sub_path);
            continue;
        }
        let entries = listed(sub.as_fd(), &sub_path)?.into_iter();
        let mounts_before = mounts.len();
        stack.push(Level { fd: Some(sub), path: sub_path, entries, name: Some(name), mounts_before });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_private_marked_directory_and_removes_everything_in_it() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let path = scratch.path().to_path_buf();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert!(path.file_name().unwrap().to_str().unwrap().starts_with(PREFIX));
        assert!(path.join(MARKER).exists());
        std::fs::create_dir_all(path.join("a/b/c")).unwrap();
        std::fs::write(path.join("a/b/c/file"), b"x").unwrap();
        std::os::unix::fs::symlink(parent.path(), path.join("a/escape")).unwrap();
        scratch.remove().unwrap();
        assert!(!path.exists());
        // The symlink's target (the parent) is untouched.
        assert!(parent.path().exists());
    }

    #[test]
    fn two_scratches_never_share_a_name() {
        let parent = tempfile::tempdir().unwrap();
        let a = Scratch::create(parent.path()).unwrap();
        let b = Scratch::create(parent.path()).unwrap();
        assert_ne!(a.path(), b.path());
    }

    #[test]
    fn refuses_a_directory_whose_marker_was_changed() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join(MARKER), b"somebody else's").unwrap();
        let err = scratch.remove().unwrap_err().to_string();
        assert!(err.contains("no longer holds fsscale's marker"), "{err}");
        assert!(path.exists());
    }

    #[test]
    fn refuses_a_directory_that_was_swapped() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let path = scratch.path().to_path_buf();
        let moved = parent.path().join("moved");
        std::fs::rename(&path, &moved).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("precious"), b"keep").unwrap();
        let err = scratch.remove().unwrap_err().to_string();
        assert!(err.contains("was replaced"), "{err}");
        assert!(path.join("precious").exists());
    }

    #[test]
    fn missing_parent_is_a_clear_error() {
        let err = Scratch::create(Path::new("/nonexistent/fsscale-test")).err().unwrap().to_string();
        assert_eq!(err, "--dir /nonexistent/fsscale-test does not exist; create it or pass another --dir");
    }
}
