//! A deterministic synthetic source tree shaped like a BSD ports tree:
//! `category/port/{Makefile,distinfo,pkg-descr,pkg-plist}` and
//! `category/port/files/patch-*`, four levels deep.
//!
//! At scale 1 it has about 94,000 files in about 27,000 directories and
//! 230 MB (the reference: a 270 MB ports tarball of 93,862 files). File
//! sizes are log-normal (median 900 bytes, σ = 1.5: most files under
//! 4 KiB) with a rare heavy tail of 1–4 MiB files (one in 20,000). A few
//! ports have a symbolic link, fewer a hard link. Everything follows from
//! the seed: the same seed and scale give the same entries and bytes.

mod tar_writer;

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

pub use tar_writer::{write_entry_header, write_tar, write_tar_until};

/// Ports at scale 1 (with categories and `files/` directories: ~27,000 directories).
const PORTS_AT_SCALE_1: f64 = 19_950.0;
const MAX_CATEGORIES: usize = 64;
/// Base of all modification times (2023-11-14T22:13:20Z), plus up to a year.
const MTIME_BASE: i64 = 1_700_000_000;

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    /// Content is generated from `content_seed`.
    File {
        size: u64,
        content_seed: u64,
    },
    /// Relative target.
    Symlink {
        target: String,
    },
    /// Archive path of an earlier file.
    HardLink {
        target: String,
    },
}

/// One entry of the tree, in archive order (parents before children).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative path, `/`-separated, no trailing slash.
    pub path: String,
    pub mode: u32,
    pub mtime: i64,
    pub kind: EntryKind,
}

/// Counts of a generated tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TreeStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub hardlinks: u64,
    /// Bytes of file content.
    pub bytes: u64,
}

impl TreeStats {
    /// Every entry a walk of the extracted tree visits (files, directories, links).
    pub fn entries(&self) -> u64 {
        self.files + self.dirs + self.symlinks + self.hardlinks
    }

    fn count(&mut self, entry: &Entry) {
        match &entry.kind {
            EntryKind::Dir => self.dirs += 1,
            EntryKind::File { size, .. } => {
                self.files += 1;
                self.bytes += size;
            }
            EntryKind::Symlink { .. } => self.symlinks += 1,
            EntryKind::HardLink { .. } => self.hardlinks += 1,
        }
    }
}

/// The tree's generator: SplitMix64 (`stats::random`), with its own uniform in [0, 1).
#[derive(Clone)]
pub struct Rng(crate::stats::random::SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(crate::stats::random::SplitMix64::new(seed))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fisher–Yates (Knuth, TAOCP vol. 2, 3.4.2, algorithm P).
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Standard normal by Box–Muller.
    fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

const SYLLABLES: [&str; 24] = [
    "ba", "ko", "ri", "ne", "mu", "tas", "lin", "gro", "py", "xe", "dor", "vim", "qua", "zel", "fo", "sha", "tri",
    "wen", "lu", "cap", "mo", "jet", "hu", "syn",
];

fn word(rng: &mut Rng) -> String {
    let parts = 2 + rng.below(2) as usize;
    (0..parts).map(|_| SYLLABLES[rng.below(SYLLABLES.len() as u64) as usize]).collect()
}

/// File size: log-normal around 900 bytes, rarely a 1–4 MiB file.
fn file_size(rng: &mut Rng) -> u64 {
    if rng.chance(1.0 / 20_000.0) {
        let mib = (1u64 << 20) as f64;
        return (mib * 4f64.powf(rng.unit())) as u64;
    }
    let size = (900f64.ln() + 1.5 * rng.normal()).exp();
    size.min((1u64 << 20) as f64 - 1.0) as u64
}

/// The tree at `scale` from `seed`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeSpec {
    pub scale: f64,
    pub seed: u64,
}

impl TreeSpec {
    pub fn validate(&self) -> Result<()> {
        if !(self.scale > 0.0 && self.scale <= 1000.0) {
            bail!(
                "--scale {} is out of range; use a factor between 0.0001 and 1000 (1 = about 94,000 files)",
                self.scale
            );
        }
        Ok(())
    }

    /// Every entry, parents first, made as they are taken: a port's few
    /// entries at a time, so that no scale holds the tree in memory (scale
    /// 1000, 94 million files, once took 15.4 GB before a byte was written).
    /// Cheap: content is not generated here.
    pub fn entries(&self) -> Entries {
        let ports = ((PORTS_AT_SCALE_1 * self.scale).round() as usize).max(1);
        let categories = ports.min(MAX_CATEGORIES);
        let mut rng = Rng::new(self.seed);
        let category_names: Vec<String> = (0..categories).map(|i| format!("{}{i:02}", word(&mut rng))).collect();
        Entries {
            rng,
            next_content: Rng::new(self.seed ^ 0x00c0_ffee),
            category_names,
            ports,
            next_category: 0,
            next_port: 0,
            pending: std::collections::VecDeque::with_capacity(16),
        }
    }

    pub fn stats(&self) -> TreeStats {
        let mut stats = TreeStats::default();
        for entry in self.entries() {
            stats.count(&entry);
        }
        stats
    }
}

/// The entries of a [`TreeSpec`], in archive order, made a category or a
/// port at a time from the seed (the same draws in the same order as ever,
/// so a seed gives the same tree as before).
pub struct Entries {
    rng: Rng,
    next_content: Rng,
    category_names: Vec<String>,
    ports: usize,
    next_category: usize,
    next_port: usize,
    pending: std::collections::VecDeque<Entry>,
}

impl Entries {
    fn mtime(&mut self) -> i64 {
        MTIME_BASE + self.rng.below(365 * 86_400) as i64
    }

    fn dir(&mut self, path: String) {
        let mtime = self.mtime();
        self.pending.push_back(Entry { path, mode: 0o755, mtime, kind: EntryKind::Dir });
    }

    fn file(&mut self, path: String) {
        let mode = if self.rng.chance(0.02) { 0o755 } else { 0o644 };
        let size = file_size(&mut self.rng);
        let content_seed = self.next_content.next_u64();
        let mtime = self.mtime();
        self.pending.push_back(Entry { path, mode, mtime, kind: EntryKind::File { size, content_seed } });
    }

    /// The next category's or port's entries, into `pending`; false when all are made.
    fn make_more(&mut self) -> bool {
        if self.next_category < self.category_names.len() {
            let name = self.category_names[self.next_category].clone();
            self.next_category += 1;
            self.dir(name.clone());
            self.file(format!("{name}/Makefile"));
            return true;
        }
        if self.next_port == self.ports {
            return false;
        }
        let p = self.next_port;
        self.next_port += 1;
        let categories = self.category_names.len();
        let category = &self.category_names[p % categories];
        let port = format!("{category}/{}-{}", word(&mut self.rng), p / categories);
        self.dir(port.clone());
        for base in ["Makefile", "distinfo", "pkg-descr"] {
            self.file(format!("{port}/{base}"));
        }
        if self.rng.chance(0.5) {
            self.file(format!("{port}/pkg-plist"));
        }
        if self.rng.chance(0.35) {
            let files = format!("{port}/files");
            self.dir(files.clone());
            for k in 0..1 + self.rng.below(6) {
                let name = format!("{files}/patch-{}_{k}.c", word(&mut self.rng));
                self.file(name);
            }
        }
        // Port 0 always has both links, so that small trees test them too.
        if p == 0 || self.rng.chance(1.0 / 400.0) {
            let kind = EntryKind::Symlink { target: "pkg-descr".into() };
            let mtime = self.mtime();
            self.pending.push_back(Entry { path: format!("{port}/README"), mode: 0o777, mtime, kind });
        }
        if p == 0 || self.rng.chance(1.0 / 1000.0) {
            let kind = EntryKind::HardLink { target: format!("{port}/Makefile") };
            let mtime = self.mtime();
            self.pending.push_back(Entry { path: format!("{port}/Makefile.orig"), mode: 0o644, mtime, kind });
        }
        true
    }
}

impl Iterator for Entries {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        loop {
            if let Some(entry) = self.pending.pop_front() {
                return Some(entry);
            }
            if !self.make_more() {
                return None;
            }
        }
    }
}

/// Fills `buf` with the bytes of a file at `offset`: printable text whose
/// every 8-byte block derives from (content_seed, block index), so any
/// range is generated without the bytes before it.
pub(crate) fn fill_content(content_seed: u64, offset: u64, buf: &mut [u8]) {
    const ALPHABET: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n";
    let mut pos = 0;
    while pos < buf.len() {
        let absolute = offset + pos as u64;
        let block = absolute / 8;
        let mut rng = Rng::new(content_seed ^ block.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let word = rng.next_u64();
        let start = (absolute % 8) as usize;
        for i in start..8 {
            if pos == buf.len() {
                break;
            }
            buf[pos] = ALPHABET[((word >> (i * 8)) & 63) as usize];
            pos += 1;
        }
    }
}

/// Writes the tree into `dir`, which must not exist yet (so nothing of
/// anybody's is ever overwritten).
pub fn write_dir(spec: &TreeSpec, dir: &Path) -> Result<TreeStats> {
    std::fs::create_dir(dir).with_context(|| {
        format!(
            "cannot create {} (it must not exist yet; fsscale tree never writes into an existing directory)",
            dir.display()
        )
    })?;
    let mut stats = TreeStats::default();
    let mut buf = vec![0u8; 1 << 20];
    let mut dir_times = Vec::new();
    for entry in spec.entries() {
        let path = dir.join(&entry.path);
        match &entry.kind {
            EntryKind::Dir => {
                std::fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
                dir_times.push((path.clone(), entry.mtime, entry.mode));
            }
            EntryKind::File { size, content_seed } => {
                let mut f = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
                let mut offset = 0;
                while offset < *size {
                    let chunk = (*size - offset).min(buf.len() as u64) as usize;
                    fill_content(*content_seed, offset, &mut buf[..chunk]);
                    f.write_all(&buf[..chunk]).with_context(|| format!("writing {}", path.display()))?;
                    offset += chunk as u64;
                }
                set_mode_and_time(&path, entry.mode, entry.mtime)?;
            }
            EntryKind::Symlink { target } => {
                std::os::unix::fs::symlink(target, &path).with_context(|| format!("creating {}", path.display()))?;
            }
            EntryKind::HardLink { target } => {
                std::fs::hard_link(dir.join(target), &path).with_context(|| format!("creating {}", path.display()))?;
            }
        }
        stats.count(&entry);
    }
    for (path, mtime, mode) in dir_times.into_iter().rev() {
        set_mode_and_time(&path, mode, mtime)?;
    }
    Ok(stats)
}

/// Writes the tarball to `path` (which must not exist) through a temporary
/// file, so a half-written tarball never carries the final name.
pub fn write_tar_file(spec: &TreeSpec, path: &Path) -> Result<TreeStats> {
    write_tar_file_until(spec, path, &|| false)
}

/// [`write_tar_file`], asking `stop` before every entry; a stopped one leaves no file.
pub(crate) fn write_tar_file_until(spec: &TreeSpec, path: &Path, stop: &dyn Fn() -> bool) -> Result<TreeStats> {
    if std::fs::symlink_metadata(path).is_ok() {
        bail!("{} exists; remove it or choose another name (fsscale tree never overwrites)", path.display());
    }
    let mut file = crate::atomic_file::AtomicFile::create(path)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file.file());
    let stats = tar_writer::write_tar_until(spec, &mut out, stop)
        .and_then(|stats| out.flush().map(|()| stats))
        .with_context(|| format!("writing {}", path.display()))?;
    drop(out);
    file.create_new().context("fsscale tree never overwrites")?;
    Ok(stats)
}

fn set_mode_and_time(path: &Path, mode: u32, mtime: i64) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting mode of {}", path.display()))?;
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime as u64);
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.set_modified(time).with_context(|| format!("setting mtime of {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_one_has_the_shape_of_a_ports_tree() {
        let stats = TreeSpec { scale: 1.0, seed: 1 }.stats();
        assert!((88_000..100_000).contains(&stats.files), "{stats:?}");
        assert!((25_500..28_500).contains(&stats.dirs), "{stats:?}");
        assert!((185_000_000..270_000_000).contains(&stats.bytes), "{stats:?}");
        assert!(stats.symlinks > 20 && stats.hardlinks > 5, "{stats:?}");
        let entries = TreeSpec { scale: 1.0, seed: 1 }.entries().collect::<Vec<_>>();
        let deepest = entries.iter().map(|e| e.path.matches('/').count() + 1).max().unwrap();
        assert_eq!(deepest, 4, "category/port/files/patch-*");
        let sizes: Vec<u64> = entries
            .iter()
            .filter_map(|e| match e.kind {
                EntryKind::File { size, .. } => Some(size),
                _ => None,
            })
            .collect();
        let small = sizes.iter().filter(|&&s| s < 4096).count();
        assert!(small * 10 > sizes.len() * 8, "most files under 4 KiB");
        assert!(sizes.iter().any(|&s| s > 1 << 20), "a few over 1 MiB");
    }

    #[test]
    fn same_seed_same_tree_other_seed_other_tree() {
        let a = TreeSpec { scale: 0.01, seed: 7 }.entries().collect::<Vec<_>>();
        assert_eq!(a, TreeSpec { scale: 0.01, seed: 7 }.entries().collect::<Vec<_>>());
        assert_ne!(a, TreeSpec { scale: 0.01, seed: 8 }.entries().collect::<Vec<_>>());
        let paths: std::collections::HashSet<&str> = a.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths.len(), a.len(), "paths are unique");
    }

    #[test]
    fn content_ranges_agree_with_the_whole() {
        let mut whole = vec![0u8; 100];
        fill_content(42, 0, &mut whole);
        let mut part = vec![0u8; 37];
        fill_content(42, 13, &mut part);
        assert_eq!(&whole[13..50], &part[..]);
        assert!(whole.iter().all(|b| b.is_ascii()));
    }

    #[test]
    fn entries_are_made_a_port_at_a_time_never_the_whole_tree_at_once() {
        let mut entries = TreeSpec { scale: 1000.0, seed: 1 }.entries();
        let mut most = 0;
        for _ in 0..200_000 {
            entries.next().unwrap();
            most = most.max(entries.pending.len());
        }
        // A port has at most 13 entries (its directory, 4 files, files/ with 6 patches, 2 links).
        assert!(most <= 13, "{most} entries were waiting");
        assert!(entries.pending.capacity() <= 32);
    }
}
