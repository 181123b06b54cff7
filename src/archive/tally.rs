//! Counting what a directory holds, in the terms of [`ExtractStats`]: to
//! check that an extraction (an external command's above all) really
//! produced the tarball's entries.

use std::collections::HashSet;
use std::os::fd::BorrowedFd;

use anyhow::{anyhow, Result};
use sha2::{Digest, Sha256};

use super::ExtractStats;
use crate::sys;

/// Every entry below `dir` (not `dir` itself), without following links:
/// a file whose inode was already seen is a hard link, and its bytes count once.
pub fn tally(dir: BorrowedFd<'_>) -> Result<ExtractStats> {
    Ok(walk(dir, None, u64::MAX)?.expect("an unbounded walk ends"))
}

/// [`tally`], and a SHA-256 digest of what a walk of `dir` sees: every
/// entry's path, type, permissions, size and link target, directory by
/// directory in name order. Two trees with one digest hold the same names
/// and shapes (file contents are not read: a walk does not read them).
pub fn tally_with_digest(dir: BorrowedFd<'_>) -> Result<(ExtractStats, String)> {
    let mut hasher = Sha256::new();
    let stats = walk(dir, Some(&mut hasher), u64::MAX)?.expect("an unbounded walk ends");
    Ok((stats, super::hex(&hasher.finalize())))
}

/// [`tally_with_digest`] of a tree a received file names, which held
/// `entries` when it was recorded: the walk stops (`Ok(None)`) as soon as
/// it has seen more, so a file that names `/` costs no walk of the system.
pub fn tally_with_digest_within(dir: BorrowedFd<'_>, entries: u64) -> Result<Option<(ExtractStats, String)>> {
    let mut hasher = Sha256::new();
    Ok(walk(dir, Some(&mut hasher), entries)?.map(|stats| (stats, super::hex(&hasher.finalize()))))
}

/// Every entry below `dir`; `None` once more than `limit` were seen.
fn walk(dir: BorrowedFd<'_>, mut digest: Option<&mut Sha256>, limit: u64) -> Result<Option<ExtractStats>> {
    let mut stats = ExtractStats::default();
    let mut seen = HashSet::new();
    let root = sys::open(dir, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow!("opening the directory: {}", sys::errno_text(e)))?;
    let mut stack = vec![(root, String::new())];
    let mut buf = vec![0u8; 64 * 1024];
    while let Some((fd, path)) = stack.pop() {
        let mut names: Vec<Vec<u8>> = Vec::new();
        loop {
            let filled =
                sys::getdents64(&fd, &mut buf).map_err(|e| anyhow!("reading {path}/: {}", sys::errno_text(e)))?;
            if filled == 0 {
                break;
            }
            names.extend(sys::dirents(&buf, filled).filter(|e| !e.is_dot()).map(|e| e.name().to_bytes().to_vec()));
        }
        if digest.is_some() {
            // The kernel's order is the directory's own; the digest's is the names'.
            names.sort_unstable();
        }
        for name in names {
            if stats.entries() >= limit {
                return Ok(None);
            }
            let shown = format!("{path}/{}", String::from_utf8_lossy(&name));
            let name_c = std::ffi::CString::new(name).expect("no NUL inside a directory entry");
            let st = sys::fstatat(&fd, &name_c, libc::AT_SYMLINK_NOFOLLOW)
                .map_err(|e| anyhow!("stat {shown}: {}", sys::errno_text(e)))?;
            if let Some(hasher) = digest.as_deref_mut() {
                let kind = st.st_mode & libc::S_IFMT;
                let size = if kind == libc::S_IFREG { st.st_size as u64 } else { 0 };
                let target = match kind {
                    libc::S_IFLNK => sys::readlinkat(&fd, &name_c).unwrap_or_default(),
                    _ => Vec::new(),
                };
                hasher.update(shown.as_bytes());
                hasher.update([0]);
                hasher.update(kind.to_le_bytes());
                hasher.update((st.st_mode & 0o7777).to_le_bytes());
                hasher.update(size.to_le_bytes());
                hasher.update(&target);
                hasher.update([0]);
            }
            match st.st_mode & libc::S_IFMT {
                libc::S_IFDIR => {
                    stats.dirs += 1;
                    let sub = sys::open(&fd, &name_c, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
                        .map_err(|e| anyhow!("opening {shown}: {}", sys::errno_text(e)))?;
                    stack.push((sub, shown));
                }
                libc::S_IFLNK => stats.symlinks += 1,
                libc::S_IFREG if st.st_nlink > 1 && !seen.insert((st.st_dev, st.st_ino)) => stats.hardlinks += 1,
                libc::S_IFREG => {
                    stats.files += 1;
                    stats.bytes += st.st_size as u64;
                }
                _ => stats.files += 1,
            }
        }
    }
    Ok(Some(stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn counts_like_the_tarball_does() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        std::fs::write(p.join("a/f"), b"12345").unwrap();
        std::fs::hard_link(p.join("a/f"), p.join("a/b/h")).unwrap();
        std::fs::write(p.join("g"), b"xy").unwrap();
        std::os::unix::fs::symlink("a/f", p.join("l")).unwrap();
        let root = std::fs::File::open(p).unwrap();
        let stats = tally(root.as_fd()).unwrap();
        assert_eq!((stats.dirs, stats.files, stats.hardlinks, stats.symlinks), (2, 2, 1, 1));
        assert_eq!(stats.bytes, 7);
        assert_eq!(stats.entries(), 6);
        let (same, digest) = tally_with_digest(root.as_fd()).unwrap();
        assert_eq!(same.entries(), 6);
        // One byte more in one file, or another link target: another digest.
        std::fs::write(p.join("g"), b"xyz").unwrap();
        let (_, grown) = tally_with_digest(root.as_fd()).unwrap();
        assert_ne!(digest, grown);
        std::fs::write(p.join("g"), b"xy").unwrap();
        assert_eq!(tally_with_digest(root.as_fd()).unwrap().1, digest, "the same tree, the same digest");
        std::fs::remove_file(p.join("l")).unwrap();
        std::os::unix::fs::symlink("a/b", p.join("l")).unwrap();
        assert_ne!(tally_with_digest(root.as_fd()).unwrap().1, digest);
    }
}
