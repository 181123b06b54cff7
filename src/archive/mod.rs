//! A streaming tar extractor that cannot write outside its directory.
//!
//! Formats: POSIX ustar (with prefix), pax extended headers (`path`,
//! `linkpath`, `size`, `mtime`), GNU long names and long link names, GNU
//! base-256 sizes. Entry types: files, directories, symbolic links, hard
//! links. Device nodes and FIFOs are refused.
//!
//! Safety: every entry's path is checked lexically (no absolute paths, no
//! `..`), hard-link targets are archive paths checked the same way and
//! opened without following links, and every directory on the way to an
//! entry is opened with `O_NOFOLLOW`, so a symbolic link planted by the
//! archive itself is never written through. A symbolic link's target is
//! therefore only text: it is created as it is, absolute or relative,
//! inside the tree or not, as GNU tar creates it, since nothing here (nor
//! scratch removal, which unlinks links) ever follows one. What is refused:
//! an entry's own path leaving the directory, a hard link to a path that
//! does, an entry under an earlier symbolic link (writing through it),
//! devices and FIFOs. [`scan`] finds each of these before anything runs.
//! Setuid and setgid bits are dropped; files are owned by whoever extracts.
//!
//! Speed: directories stay open on a stack that follows the archive's
//! order, so each entry is created with one `openat` relative to its
//! parent instead of a walk from the top.

mod digest;
mod input;
mod seen;
mod tally;

pub use digest::{file_sha256, hex, HashingReader};
pub use tally::{tally, tally_with_digest, tally_with_digest_within};

use std::ffi::{CStr, CString};
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{anyhow, bail, Result};

use crate::sys::{self, Errno};
use input::Input;

/// What one extraction created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExtractStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub hardlinks: u64,
    /// Bytes of file content written.
    pub bytes: u64,
}

impl ExtractStats {
    pub fn entries(&self) -> u64 {
        self.files + self.dirs + self.symlinks + self.hardlinks
    }
}

const BLOCK: usize = 512;

/// Per-entry overrides from pax headers and GNU long-name entries.
#[derive(Default)]
struct Pending {
    path: Option<String>,
    link: Option<String>,
    size: Option<u64>,
    mtime: Option<i64>,
}

/// Extracts the archive read from `input` into the directory `root`.
/// `stop` is asked before every entry (to abandon the work early);
/// `progress` is told the number of entries created so far.
pub fn extract(
    input: &mut dyn Read,
    root: BorrowedFd<'_>,
    stop: &dyn Fn() -> bool,
    progress: &dyn Fn(u64),
) -> Result<ExtractStats> {
    let mut input = Input::new(input);
    let mut dirs = DirStack::new(root);
    let mut stats = ExtractStats::default();
    let mut pending = Pending::default();
    let mut dir_fixups: Vec<DirFixup> = Vec::new();
    // The entry's own name as a C string, made here with no allocation.
    let mut leaf_buf: Vec<u8> = Vec::with_capacity(256);
    loop {
        if stop() {
            bail!("stopped");
        }
        let Some(Entry { offset, block: header, size, name }) = next_entry(&mut input, &mut pending)? else {
            break;
        };
        let typeflag = header[156];
        let at = |what: String| anyhow!("entry \"{name}\" at byte offset {offset}: {what}");
        let mode = parse_octal(&header[100..108]).unwrap_or(0o644) as u32 & 0o1777;
        let mtime = pending.mtime.take().unwrap_or_else(|| parse_octal(&header[136..148]).unwrap_or(0) as i64);
        // Only links read the link field.
        let link = match (pending.link.take(), typeflag) {
            (Some(link), _) => link,
            (None, b'1' | b'2') => field(&header[157..257]).map_err(|e| at(format!("{e:#}")))?,
            (None, _) => String::new(),
        };
        let parts = components(&name).map_err(|e| at(format!("{e:#}")))?;
        let Some((leaf, parents)) = parts.split_last() else {
            // "./": the extraction directory itself.
            input.skip_data(size, offset, &name)?;
            continue;
        };
        let parent = dirs.open(parents).map_err(|e| at(format!("{e:#}")))?;
        leaf_buf.clear();
        leaf_buf.extend_from_slice(leaf.as_bytes());
        leaf_buf.push(0);
        let leaf_c = CStr::from_bytes_with_nul(&leaf_buf).map_err(|_| at("a name holds a NUL byte".into()))?;
        match typeflag {
            b'0' | 0 | b'7' => {
                let fd = create_file(parent, leaf_c, mode)
                    .map_err(|e| at(format!("creating file: {}", sys::errno_text(e))))?;
                input.copy_data(size, fd.as_fd(), offset, &name)?;
                let _ = sys::set_mtime(&fd, mtime);
                stats.files += 1;
                stats.bytes += size;
            }
            b'5' => {
                input.skip_data(size, offset, &name)?;
                // Made with its own mode where that lets the owner write in
                // it (the common 0755), so that most need no chmod later.
                let made = (mode | 0o700) & 0o777;
                let fresh = make_directory(parent, leaf_c, made)
                    .map_err(|e| at(format!("creating directory: {}", sys::errno_text(e))))?;
                let chmod = !fresh || mode & 0o1777 != made & !umask();
                dir_fixups.push(DirFixup { path: sys::cname(&parts.join("/")), mode: chmod.then_some(mode), mtime });
                stats.dirs += 1;
            }
            b'2' => {
                input.skip_data(size, offset, &name)?;
                let target = CString::new(link.as_str()).map_err(|_| at("link target holds a NUL byte".into()))?;
                replace(parent, leaf_c, |p, n| sys::symlinkat(&target, p, n))
                    .map_err(|e| at(format!("creating symbolic link: {}", sys::errno_text(e))))?;
                let _ = sys::set_mtime_at(parent, leaf_c, mtime);
                stats.symlinks += 1;
            }
            b'1' => {
                input.skip_data(size, offset, &name)?;
                hard_link(&mut dirs, parents, leaf_c, &link).map_err(|e| at(format!("{e:#}")))?;
                stats.hardlinks += 1;
            }
            other => {
                return Err(at(format!(
                    "unsupported entry type '{}' (devices and FIFOs are not extracted)",
                    char::from(other).escape_default()
                )))
            }
        }
        progress(stats.entries());
    }
    fix_directories(dirs.root, dir_fixups);
    Ok(stats)
}

/// Links `parents/leaf` to the archive's earlier entry `link`, both inside
/// the extraction directory; the error says what failed.
fn hard_link(dirs: &mut DirStack, parents: &[&str], leaf: &CStr, link: &str) -> Result<()> {
    let target = components(link).map_err(|why| anyhow!("hard link to \"{link}\": {why:#}"))?;
    let Some((target_leaf, target_parents)) = target.split_last() else {
        bail!("hard link to the extraction directory itself");
    };
    let target_dir = open_path(dirs.root, target_parents).map_err(|e| anyhow!("hard link to \"{link}\": {e:#}"))?;
    let target_c = sys::cname(target_leaf);
    let parent = dirs.open(parents)?;
    // Flags 0: never following a symbolic link's target.
    replace(parent, leaf, |p, n| sys::link_across(&target_dir, &target_c, p, n))
        .map_err(|e| anyhow!("creating hard link to \"{link}\": {}", sys::errno_text(e)))
}

/// Makes directory `name` in `parent` with `mode`; true if made, false if
/// one was there. Anything else there (an earlier entry's file or link) is
/// replaced, as GNU tar does: a directory fixup must never reach through a
/// link by its path.
fn make_directory(parent: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<bool, Errno> {
    match sys::mkdirat(parent, name, mode as libc::mode_t) {
        Ok(()) => Ok(true),
        Err(libc::EEXIST) => {
            let st = sys::fstatat(parent, name, libc::AT_SYMLINK_NOFOLLOW)?;
            if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                return Ok(false);
            }
            sys::unlinkat(parent, name, 0)?;
            sys::mkdirat(parent, name, mode as libc::mode_t).map(|()| true)
        }
        Err(e) => Err(e),
    }
}

/// What a directory still needs once everything in it is written.
struct DirFixup {
    /// Its path under the extraction directory.
    path: CString,
    /// The archive's mode, where the one it was made with differs.
    mode: Option<u32>,
    mtime: i64,
}

/// Directories last, deepest first: their contents are written, so modes
/// like 0555 and the archive's mtimes can now be applied. By path from the
/// extraction directory, with no descriptor opened: every directory on a
/// fixup's path was made (or found a directory) by this extraction, under
/// [`DirStack`]'s `O_NOFOLLOW`, and no entry can turn a directory into a
/// link (a link or file over one fails with `EISDIR`), so the path names
/// what was made. The last component is never followed either way.
fn fix_directories(root: BorrowedFd<'_>, fixups: Vec<DirFixup>) {
    for fixup in fixups.into_iter().rev() {
        if let Some(mode) = fixup.mode {
            // A directory's mode, not a link's.
            let _ = sys::chmodat(root, &fixup.path, mode as libc::mode_t);
        }
        let _ = sys::set_mtime_at(root, &fixup.path, fixup.mtime);
    }
}

/// What [`scan`] found: what the archive holds, and the first entry the
/// extractor would refuse, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    pub contents: ExtractStats,
    /// "entry \"NAME\" at byte offset N: why", for [`extract`] to refuse.
    pub refusal: Option<String>,
}

/// Counts what an archive holds without extracting it (and so reads it
/// once, which also brings it into the page cache), and finds the first
/// entry [`extract`] would refuse, so a run can say so before it starts.
pub fn scan(input: &mut dyn Read) -> Result<Scanned> {
    let mut input = Input::new(input);
    let mut stats = ExtractStats::default();
    let mut pending = Pending::default();
    let mut seen = seen::Seen::default();
    let mut refusal = None;
    let mut any = false;
    loop {
        let Some(Entry { offset, block: header, size, name }) = next_entry(&mut input, &mut pending)? else {
            if !any {
                bail!("the tarball holds no entries (it is empty, or only zero blocks): nothing to extract; name a tarball with entries");
            }
            return Ok(Scanned { contents: stats, refusal });
        };
        any = true;
        let link = match pending.link.take() {
            Some(link) => link,
            None => field(&header[157..257]).map_err(|e| anyhow!("entry \"{name}\" at byte offset {offset}: {e:#}"))?,
        };
        pending.mtime = None;
        if refusal.is_none() {
            refusal = seen
                .refused(&name, header[156], &link)
                .err()
                .map(|why| format!("entry \"{name}\" at byte offset {offset}: {why:#}"));
        }
        // "./" is the extraction directory itself, which extract() does not count either.
        let is_root = components(&name).is_ok_and(|parts| parts.is_empty());
        match header[156] {
            _ if is_root => {}
            b'0' | 0 | b'7' => {
                stats.files += 1;
                stats.bytes += size;
            }
            b'5' => stats.dirs += 1,
            b'2' => stats.symlinks += 1,
            b'1' => stats.hardlinks += 1,
            _ => {}
        }
        input.skip_data(size, offset, &name)?;
    }
}

/// One entry's header, with what pax and GNU long-name entries before it said.
struct Entry {
    /// Where its header starts.
    offset: u64,
    block: [u8; BLOCK],
    size: u64,
    name: String,
}

/// Reads up to the next entry that is not metadata, applying pax headers and
/// GNU long names to `pending` on the way; `None` at the end of the archive
/// (end of file at a block boundary is accepted, as GNU tar does).
fn next_entry(input: &mut Input<'_>, pending: &mut Pending) -> Result<Option<Entry>> {
    let mut block = [0u8; BLOCK];
    loop {
        let offset = input.offset();
        if !input.read_block(&mut block)? || block.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        verify_checksum(&block, offset)?;
        let size = match pending.size.take() {
            Some(size) => checked_size(size, offset)?,
            None => parse_size(&block[124..136], offset)?,
        };
        let name = match pending.path.take() {
            Some(name) => name,
            None => header_name(&block).map_err(|e| anyhow!("entry at byte offset {offset}: {e:#}"))?,
        };
        let typeflag = block[156];
        if !matches!(typeflag, b'x' | b'g' | b'L' | b'K') {
            return Ok(Some(Entry { offset, block, size, name }));
        }
        let data = input.read_data(size, offset, &name)?;
        match typeflag {
            b'x' => {
                parse_pax(&data, pending).map_err(|e| anyhow!("entry \"{name}\" at byte offset {offset}: {e:#}"))?
            }
            b'L' => pending.path = Some(field(&data).map_err(|e| anyhow!("entry at byte offset {offset}: {e:#}"))?),
            b'K' => pending.link = Some(field(&data).map_err(|e| anyhow!("entry at byte offset {offset}: {e:#}"))?),
            _ => {} // global pax headers hold nothing fsscale needs
        }
    }
}

/// Open directories from the root to the current entry's parent, and the
/// last ones left, by path: archives that go round their top directories
/// (as the generated tree does, and `tar` of several trees) would otherwise
/// open the same directory again at every turn.
struct DirStack<'a> {
    root: BorrowedFd<'a>,
    stack: Vec<(String, OwnedFd)>,
    /// Directories left, by their path from the root, oldest first.
    left: std::collections::VecDeque<(String, OwnedFd)>,
}

/// Directories [`DirStack`] keeps open after leaving them: enough for an
/// archive that goes round 64 top directories, few enough for many
/// extracting threads within the descriptor limit (it is emptied if the
/// limit is reached anyway).
const KEPT_OPEN: usize = 64;

impl<'a> DirStack<'a> {
    fn new(root: BorrowedFd<'a>) -> DirStack<'a> {
        DirStack { root, stack: Vec::new(), left: std::collections::VecDeque::new() }
    }

    fn path_to(&self, depth: usize, name: &str) -> String {
        let mut path = String::new();
        for (part, _) in &self.stack[..depth] {
            path.push_str(part);
            path.push('/');
        }
        path.push_str(name);
        path
    }

    /// The directory `parents` (made if missing), never through a symbolic link.
    fn open(&mut self, parents: &[&str]) -> Result<BorrowedFd<'_>> {
        let common = self.stack.iter().zip(parents).take_while(|(open, want)| open.0 == **want).count();
        while self.stack.len() > common {
            let (name, fd) = self.stack.pop().expect("deeper than common");
            let path = self.path_to(self.stack.len(), &name);
            if self.left.len() == KEPT_OPEN {
                // The deepest goes first (the oldest of those): the top
                // directories are the ones an archive goes round.
                let depth = |p: &str| p.bytes().filter(|&b| b == b'/').count();
                let deepest = (0..self.left.len()).rev().max_by_key(|&i| depth(&self.left[i].0)).expect("full");
                self.left.remove(deepest);
            }
            self.left.push_back((path, fd));
        }
        for component in &parents[common..] {
            let path = self.path_to(self.stack.len(), component);
            let fd = match self.left.iter().position(|(p, _)| *p == path) {
                Some(i) => self.left.remove(i).expect("found").1,
                None => {
                    let at = self.stack.last().map_or(self.root, |d| d.1.as_fd());
                    let mut opened = open_dir(at, component);
                    if matches!(&opened, Err(e) if e.downcast_ref::<DescriptorsExhausted>().is_some())
                        && !self.left.is_empty()
                    {
                        self.left.clear();
                        opened = open_dir(at, component);
                    }
                    opened.map_err(|e| anyhow!("directory \"{path}\": {e:#}"))?
                }
            };
            self.stack.push((component.to_string(), fd));
        }
        Ok(self.stack.last().map_or(self.root, |d| d.1.as_fd()))
    }
}

/// `EMFILE`: the process's descriptors are all in use.
#[derive(Debug, thiserror::Error)]
#[error("too many open files (EMFILE)")]
struct DescriptorsExhausted;

/// Opens (making if missing) directory `name` under `at`, refusing symbolic links.
fn open_dir(at: BorrowedFd<'_>, name: &str) -> Result<OwnedFd> {
    let c = sys::cname(name);
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let errno = |e: Errno| match e {
        libc::EMFILE => anyhow::Error::new(DescriptorsExhausted),
        e => sys::errno_error(e),
    };
    match sys::open(at, &c, flags, 0) {
        Ok(fd) => Ok(fd),
        Err(libc::ENOENT) => {
            sys::mkdirat(at, &c, 0o755).map_err(sys::errno_error)?;
            sys::open(at, &c, flags, 0).map_err(errno)
        }
        Err(libc::ELOOP) | Err(libc::ENOTDIR) => {
            bail!("is a symbolic link or not a directory; refusing to write through it")
        }
        Err(e) => Err(errno(e)),
    }
}

/// Opens an existing path under `root` without following symbolic links.
fn open_path(root: BorrowedFd<'_>, parts: &[&str]) -> Result<OwnedFd> {
    let mut current: Option<OwnedFd> = None;
    for part in parts {
        let at = current.as_ref().map_or(root, |f| f.as_fd());
        let fd = sys::open(at, &sys::cname(part), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0).map_err(
            |e| match e {
                libc::ELOOP | libc::ENOTDIR => {
                    anyhow!("\"{part}\": is a symbolic link or not a directory; refusing to follow it")
                }
                e => anyhow!("\"{part}\": {}", sys::errno_text(e)),
            },
        )?;
        current = Some(fd);
    }
    match current {
        Some(fd) => Ok(fd),
        None => {
            // The root itself: a second descriptor of it.
            sys::open(root, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(sys::errno_error)
        }
    }
}

fn create_file(parent: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<sys::BareFd, Errno> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let create = || sys::open_bare(parent, name, flags, (mode & 0o777) as libc::mode_t);
    let fd = match create() {
        // An earlier entry of the same name is replaced, as tar does.
        Err(libc::EEXIST) => {
            sys::unlinkat(parent, name, 0)?;
            create()?
        }
        other => other?,
    };
    if mode & 0o1777 != (mode & 0o777) & !umask() {
        let _ = sys::fchmod(&fd, mode as libc::mode_t);
    }
    Ok(fd)
}

/// The process's umask, read without changing it: `/proc/self/status`
/// says it (Linux 4.7+). Setting and restoring it would flip a
/// process-wide value under thread-mode workers extracting at the same time.
fn umask() -> u32 {
    use std::sync::OnceLock;
    static MASK: OnceLock<u32> = OnceLock::new();
    *MASK.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = status.lines().find_map(|l| l.strip_prefix("Umask:")).map(str::trim);
        // Without the field, the strictest common mask: a mode is then fixed with fchmod more often, never less.
        field.and_then(|m| u32::from_str_radix(m, 8).ok()).unwrap_or(0o077)
    })
}

/// Creates with `make`, replacing an existing non-directory entry once.
fn replace(
    parent: BorrowedFd<'_>,
    name: &CStr,
    make: impl Fn(BorrowedFd<'_>, &CStr) -> Result<(), Errno>,
) -> Result<(), Errno> {
    match make(parent, name) {
        Err(libc::EEXIST) => {
            sys::unlinkat(parent, name, 0)?;
            make(parent, name)
        }
        other => other,
    }
}

/// The checked components of an archive path; empty for the root itself.
fn components(path: &str) -> Result<Vec<&str>> {
    if path.starts_with('/') {
        bail!("refusing an absolute path");
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => bail!("refusing a path with a \"..\" component"),
            p if p.contains('\0') => bail!("refusing a path with a NUL byte"),
            p => parts.push(p),
        }
    }
    Ok(parts)
}

fn verify_checksum(header: &[u8; BLOCK], offset: u64) -> Result<()> {
    let stored = parse_octal(&header[148..156]);
    // The checksum field counts as eight spaces. The signed sum (of some
    // old tars) only when the unsigned one, the standard's, does not match.
    let field = &header[148..156];
    let sum = |byte: fn(u8) -> i64| {
        header.iter().map(|&b| byte(b)).sum::<i64>() - field.iter().map(|&b| byte(b)).sum::<i64>() + 8 * 32
    };
    let unsigned = sum(i64::from);
    match stored {
        Some(s) if s as i64 == unsigned || s as i64 == sum(|b| i64::from(b as i8)) => Ok(()),
        _ => bail!("corrupt tarball: bad header checksum at byte offset {offset} (not a tar header)"),
    }
}

/// Octal digits, after optional leading spaces, up to a space or NUL.
fn parse_octal(field: &[u8]) -> Option<u64> {
    let start = field.iter().position(|&b| b != b' ' && b != 0).unwrap_or(field.len());
    let digits = &field[start..];
    let end = digits.iter().position(|&b| b == b' ' || b == 0).unwrap_or(digits.len());
    digits[..end].iter().try_fold(0u64, |value, &b| match b {
        b'0'..=b'7' => value.checked_mul(8).map(|v| v + u64::from(b - b'0')),
        _ => None,
    })
}

fn parse_size(field: &[u8], offset: u64) -> Result<u64> {
    if field[0] & 0x80 != 0 {
        // GNU base-256: big-endian, the top bit of the first byte is the marker.
        let mut value: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            value = value
                .checked_mul(256)
                .and_then(|v| v.checked_add(u64::from(b)))
                .ok_or_else(|| anyhow!("corrupt tarball: entry size too large at byte offset {offset}"))?;
        }
        return checked_size(value, offset);
    }
    let value = parse_octal(field).ok_or_else(|| anyhow!("corrupt tarball: bad size field at byte offset {offset}"))?;
    checked_size(value, offset)
}

/// The largest entry size accepted: far beyond any real file, and small
/// enough that rounding up to whole blocks and adding offsets cannot wrap.
const MAX_ENTRY_SIZE: u64 = 1 << 62;

fn checked_size(size: u64, offset: u64) -> Result<u64> {
    if size > MAX_ENTRY_SIZE {
        bail!("corrupt tarball: entry size {size} at byte offset {offset} is impossibly large");
    }
    Ok(size)
}

/// A name or link field up to its NUL. Only UTF-8: two names that differ
/// only in bytes that are not would read as one (each invalid byte as
/// U+FFFD), and one entry would replace the other.
fn field(bytes: &[u8]) -> Result<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    utf8(&bytes[..end])
}

fn utf8(bytes: &[u8]) -> Result<String> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(_) => bail!(
            "the name or link \"{}\" is not UTF-8; fsscale extracts only UTF-8 names",
            crate::escape::for_terminal(&String::from_utf8_lossy(bytes))
        ),
    }
}

/// The entry name: ustar's prefix/name, or the name alone (GNU and v7).
fn header_name(header: &[u8; BLOCK]) -> Result<String> {
    let name = field(&header[0..100])?;
    if &header[257..263] == b"ustar\0" {
        let prefix = field(&header[345..500])?;
        if !prefix.is_empty() {
            return Ok(format!("{prefix}/{name}"));
        }
    }
    Ok(name)
}

fn parse_pax(data: &[u8], pending: &mut Pending) -> Result<()> {
    let mut rest = data;
    while !rest.is_empty() && rest[0] != 0 {
        let space = rest.iter().position(|&b| b == b' ').ok_or_else(|| anyhow!("malformed pax record (no length)"))?;
        let len: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&l| l > space && l <= rest.len())
            .ok_or_else(|| anyhow!("malformed pax record length"))?;
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        let eq = record.iter().position(|&b| b == b'=').ok_or_else(|| anyhow!("malformed pax record (no '=')"))?;
        let (key, raw) = (&record[..eq], &record[eq + 1..]);
        let value = String::from_utf8_lossy(raw).into_owned();
        match key {
            b"path" => pending.path = Some(utf8(raw)?),
            b"linkpath" => pending.link = Some(utf8(raw)?),
            b"size" => pending.size = Some(value.parse().map_err(|_| anyhow!("malformed pax size"))?),
            b"mtime" => pending.mtime = value.split('.').next().and_then(|s| s.parse().ok()),
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests;
