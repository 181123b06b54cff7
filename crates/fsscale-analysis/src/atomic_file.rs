//! Files that appear whole or not at all, written through a temporary file
//! that nobody can prepare for us: an unpredictable name in the target's
//! own directory, created with `O_CREAT | O_EXCL | O_NOFOLLOW` (so a planted
//! file or symbolic link makes the create fail instead of redirecting a
//! root-owned write), then renamed over the target, or next to it without
//! replacing anything.

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use crate::sys;

/// A temporary file on its way to becoming `path`; removed if dropped uncommitted.
pub struct AtomicFile {
    dir: OwnedFd,
    temp_name: CString,
    name: CString,
    path: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary file in `path`'s directory.
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let (dir, name) = open_parent(path)?;
        refuse_special(&dir, &name, path)?;
        for _ in 0..8 {
            let temp = format!(".{}.{}.tmp", name.to_string_lossy(), sys::random_hex(8));
            let temp_name = sys::cname(&temp);
            let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY;
            match sys::open(&dir, &temp_name, flags, 0o644) {
                Ok(fd) => {
                    let file = File::from(fd);
                    // Held until it has its name: `fsscale cleanup` removes
                    // only temporaries nobody holds (a killed run's).
                    let _ = sys::lock_exclusive_now(&file);
                    return Ok(AtomicFile { dir, temp_name, name, path: path.to_path_buf(), file: Some(file) });
                }
                Err(libc::EEXIST) => continue,
                Err(e) => bail!("cannot create a temporary file next to {}: {}", path.display(), sys::errno_text(e)),
            }
        }
        bail!("cannot create a temporary file next to {}: every name tried exists", path.display())
    }

    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("present until committed")
    }

    /// Gives the file its name, replacing whatever had it (never following
    /// a symbolic link there: the link itself is replaced).
    pub fn replace(mut self) -> Result<()> {
        // Closed (and unlocked) once renamed, not before.
        let _held = self.file.take();
        refuse_special(&self.dir, &self.name, &self.path)?;
        sys::renameat(&self.dir, &self.temp_name, &self.name)
            .map_err(|e| anyhow!("cannot write {}: {}", self.path.display(), sys::errno_text(e)))?;
        self.temp_name = CString::default();
        Ok(())
    }

    /// Gives the file its name only if nothing has it yet.
    pub fn create_new(mut self) -> Result<()> {
        let _held = self.file.take();
        let dir = self.dir.as_fd();
        // A hard link never replaces an existing name (and never follows a
        // link); then the temporary name goes.
        if let Err(errno) = sys::linkat(dir, &self.temp_name, &self.name) {
            return match errno {
                libc::EEXIST => Err(anyhow!("{} exists; remove it or choose another name", self.path.display())),
                e => Err(anyhow!("cannot write {}: {}", self.path.display(), sys::errno_text(e))),
            };
        }
        let _ = sys::unlinkat(dir, &self.temp_name, 0);
        self.temp_name = CString::default();
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.temp_name.as_bytes().is_empty() {
            let _ = sys::unlinkat(&self.dir, &self.temp_name, 0);
        }
    }
}

/// Removes temporary files of killed writers in `dir` (a generated tarball
/// cut short: 134 MB after a kill during generation): fsscale's form of
/// name (`.NAME.<16 hex>.tmp`), a regular file, and a lock nobody holds.
pub fn remove_dead_temporaries(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_file())) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let hex = name.strip_suffix(".tmp").and_then(|n| n.rsplit_once('.')).map(|(_, hex)| hex);
        let ours =
            name.starts_with('.') && hex.is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        let Ok(cname) = sys::cstring(&entry.path()) else { continue };
        if !ours {
            continue;
        }
        let Ok(Some(_held)) = crate::lockfile::lock_if_unheld(sys::CWD, &cname) else { continue };
        if sys::unlinkat(sys::CWD, &cname, 0).is_ok() {
            removed.push(format!("removed temporary file {}", entry.path().display()));
        }
    }
    removed
}

/// Writes `bytes` to `path` atomically, replacing it.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.file().write_all(bytes).map_err(|e| anyhow!("writing {}: {e}", path.display()))?;
    file.replace()
}

/// Creates `dir/STEM.EXT`, or `dir/STEM-2.EXT`, ... whichever does not
/// exist yet, exclusively: two processes never get the same name.
pub fn create_unique(dir: &Path, stem: &str, ext: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow!("cannot create the directory {}: {e}; pass -o FILE to write elsewhere", dir.display()))?;
    for n in 1..10_000 {
        let name = if n == 1 { format!("{stem}.{ext}") } else { format!("{stem}-{n}.{ext}") };
        let path = dir.join(name);
        let created =
            std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&path);
        match created {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!("cannot create {}: {e}", path.display()),
        }
    }
    bail!("cannot find a free name for {stem}.{ext} in {}", dir.display())
}

/// A rename replaces whatever has the name, and as root that includes a
/// device, a FIFO or a socket (`-o /dev/null` would turn the system's
/// /dev/null into a regular file): only a regular file, a symbolic link
/// (itself replaced, never followed) or nothing may be there.
fn refuse_special(dir: impl AsFd, name: &std::ffi::CStr, path: &Path) -> Result<()> {
    let Ok(st) = sys::fstatat(dir, name, libc::AT_SYMLINK_NOFOLLOW) else { return Ok(()) };
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG | libc::S_IFLNK => return Ok(()),
        libc::S_IFDIR => "a directory",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        _ => "not a regular file",
    };
    bail!(
        "{} is {kind}: fsscale writes only regular files, and writing this one would replace it; \
         name a file (the results are always saved)",
        path.display()
    )
}

/// The directory holding `path` (opened) and the name inside it.
fn open_parent(path: &Path) -> Result<(OwnedFd, CString)> {
    let name = path.file_name().ok_or_else(|| anyhow!("{} names no file", path.display()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent_c = sys::cstring(parent)?;
    let dir = sys::open(sys::CWD, &parent_c, libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow!("cannot open the directory {}: {}", parent.display(), sys::errno_text(e)))?;
    Ok((dir, sys::cstring(Path::new(name))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn never_replaces_a_device_fifo_or_directory() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(sys::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
            .unwrap();
        let error = write(&fifo, b"x").unwrap_err().to_string();
        assert!(error.contains("is a FIFO") && error.contains("writes only regular files"), "{error}");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
        let error = write(dir.path(), b"x").unwrap_err().to_string();
        assert!(error.contains("is a directory") || error.contains("names no file"), "{error}");
        // /dev/null itself: refused before anything is created next to it.
        let error = write(Path::new("/dev/null"), b"x").unwrap_err().to_string();
        assert!(error.contains("/dev/null is a character device"), "{error}");
        assert!(std::fs::read_dir(dir.path()).unwrap().count() == 1, "no temporary file left");
    }

    #[test]
    fn replaces_a_symlink_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let out = dir.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write(&out, b"results").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(std::fs::read(&out).unwrap(), b"results");
        assert!(!std::fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        // No temporary file is left.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn create_new_never_replaces_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.tar");
        std::fs::write(&out, b"old").unwrap();
        let mut file = AtomicFile::create(&out).unwrap();
        file.file().write_all(b"new").unwrap();
        assert!(file.create_new().unwrap_err().to_string().contains("exists"));
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let dropped = AtomicFile::create(&dir.path().join("y")).unwrap();
        drop(dropped);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn unique_names_are_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let a = create_unique(dir.path(), "2026-01-01T00-00-00Z", "json").unwrap();
        let b = create_unique(dir.path(), "2026-01-01T00-00-00Z", "json").unwrap();
        assert_ne!(a, b);
        assert!(b.to_string_lossy().ends_with("-2.json"));
    }
}
