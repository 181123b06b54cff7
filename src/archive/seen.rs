//! The paths a tarball's entries made so far, as the pre-run scan tracks
//! them to say which entry the extraction would refuse.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};

use anyhow::{anyhow, bail, Result};

use super::components;

/// What [`super::scan`] has seen of the paths before an entry: the symbolic links
/// (by path), the other files, and the directories, explicit or implied by
/// a path through them. Paths are looked up by an incremental hash of their components, so
/// an entry costs O(its depth) whatever the depth (joining every prefix to
/// look it up cost O(depth²) an entry, and 5,000 nested directories took 91 s).
#[derive(Default)]
pub(super) struct Seen {
    hashing: std::collections::hash_map::RandomState,
    /// A symbolic link's path, by its hash (compared whole on a match).
    symlinks: HashMap<u64, String>,
    /// Regular files and hard links: a path through one fails (ENOTDIR).
    files: HashSet<u64>,
    directories: HashSet<u64>,
}

impl Seen {
    /// The hash of every prefix of `parts`: `[hash(a), hash(a/b), ...]`.
    fn prefixes(&self, parts: &[&str]) -> Vec<u64> {
        let mut hasher = self.hashing.build_hasher();
        parts
            .iter()
            .map(|part| {
                hasher.write(part.as_bytes());
                hasher.write_u8(b'/');
                hasher.clone().finish()
            })
            .collect()
    }

    /// The first of `parts`' proper prefixes that is a symbolic link.
    fn link_on_the_way(&self, parts: &[&str], hashes: &[u64]) -> Option<String> {
        (0..parts.len().saturating_sub(1)).find_map(|k| {
            let link = self.symlinks.get(&hashes[k])?;
            (link.split('/').eq(parts[..=k].iter().copied())).then(|| link.clone())
        })
    }

    /// Whether [`super::extract`] refuses the entry `name` of type `typeflag`
    /// (linking to `link`), given what came before it; records what it makes.
    pub(super) fn refused(&mut self, name: &str, typeflag: u8, link: &str) -> Result<()> {
        let parts = components(name)?;
        let hashes = self.prefixes(&parts);
        // Every directory on the way, as extract() opens them with O_NOFOLLOW.
        if let Some(link) = self.link_on_the_way(&parts, &hashes) {
            bail!("directory \"{link}\": is a symbolic link or not a directory; refusing to write through it");
        }
        if let Some(k) = (0..parts.len().saturating_sub(1)).find(|&k| self.files.contains(&hashes[k])) {
            bail!("directory \"{}\": is a file, not a directory", parts[..=k].join("/"));
        }
        let Some(&last) = hashes.last() else { return Ok(()) };
        self.directories.extend(&hashes[..hashes.len() - 1]);
        let is_directory = typeflag == b'5';
        // A file or link over a directory fails in extract() (EISDIR):
        // nothing in an archive turns a directory into something else.
        if !is_directory && self.directories.contains(&last) {
            bail!("\"{name}\" is a directory already: a file or link may not replace it");
        }
        match typeflag {
            b'0' | 0 | b'7' => {
                self.symlinks.remove(&last);
                self.files.insert(last);
            }
            b'5' => {
                // A directory replaces a link or file of its name, as GNU tar's does.
                self.symlinks.remove(&last);
                self.files.remove(&last);
                self.directories.insert(last);
            }
            b'2' => {
                self.files.remove(&last);
                self.symlinks.insert(last, parts.join("/"));
            }
            b'1' => {
                let target = components(link).map_err(|why| anyhow!("hard link to \"{link}\": {why:#}"))?;
                if target.is_empty() {
                    bail!("hard link to the extraction directory itself");
                }
                if let Some(dir) = self.link_on_the_way(&target, &self.prefixes(&target)) {
                    bail!(
                        "hard link to \"{link}\": \"{dir}\": is a symbolic link or not a directory; refusing to follow it"
                    );
                }
                self.symlinks.remove(&last);
                self.files.insert(last);
            }
            other => bail!(
                "unsupported entry type '{}' (devices and FIFOs are not extracted)",
                char::from(other).escape_default()
            ),
        }
        Ok(())
    }
}
