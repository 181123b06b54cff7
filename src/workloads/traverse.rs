//! `traverse`: a recursive walk of a tree, counting every entry (and with
//! `--stat`, `fstatat`-ing each), timed to completion.
//!
//! private: each worker walks its own copy; same: every worker walks the one
//! tree; shared: the workers walk the one tree together, handing
//! directories to each other through a queue (like a parallel find).

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};

use super::walk_queue::{Pusher, WalkTally};
use super::{Description, Job, JobContext, JobOutput, Share, WalkQueue, WorkerEnv};
use crate::archive;
use crate::sys;

/// Directory under the worker's (or the shared) directory holding the tree.
pub const TREE_DIR: &str = "tree";

pub(super) fn describe() -> Description {
    Description {
        family: "macro (fixed work, timed to completion)",
        op: "walk the whole tree (generated at --scale, or --tree DIR, read only): getdents64 of every directory, \
             counting entries; with --stat also fstatat() of each",
        private: "worker i walks its own copy w<i>/tree",
        shared: Ok("the workers walk shared/tree together, handing directories to each other through one shared queue (processes or threads; MPI ranks through messages)"),
        same: Ok("every worker walks all of shared/tree"),
    }
}

pub(super) struct Traverse<'a> {
    /// The tree's top directory (once a private copy is extracted).
    root: Option<OwnedFd>,
    /// A private copy still to extract: the worker's directory and the tarball.
    to_extract: Option<(BorrowedFd<'a>, &'a std::path::Path)>,
    stat: bool,
    queue: Option<&'a WalkQueue>,
    workers: usize,
    /// This worker's index, as the paths it pushes carry it.
    index: Pusher,
    buf: Vec<u8>,
}

impl<'a> Traverse<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Traverse<'a>> {
        let source = env.tree.context("traverse needs a tree (internal error: none prepared)")?;
        let (root, to_extract) = match (&source.walk_tree, env.share) {
            (Some(tree), _) => {
                let c = sys::cstring(tree)?;
                let fd = sys::open(sys::CWD, &c, libc::O_RDONLY | libc::O_DIRECTORY, 0)
                    .map_err(|e| anyhow::anyhow!("setup: opening --tree {}: {}", tree.display(), sys::errno_text(e)))?;
                (Some(fd), None)
            }
            // The worker's own copy, extracted in `prepare` (untimed, stoppable, beating).
            (None, Share::Private) => (None, Some((env.dir, source.tarball.as_path()))),
            (None, _) => (Some(open_tree(env.dir)?), None),
        };
        Ok(Traverse {
            root,
            to_extract,
            stat: source.stat,
            queue: if env.share == Share::Shared { env.point.walk_queue.as_ref() } else { None },
            workers: env.workers,
            index: env.index as Pusher,
            buf: vec![0u8; 64 * 1024],
        })
    }
}

/// Extracts `tarball` into `dir/tree` (setup, not timed), asking `stop`
/// before every entry.
pub(super) fn extract_tree(dir: BorrowedFd<'_>, tarball: &std::path::Path, stop: &dyn Fn() -> bool) -> Result<()> {
    let name = sys::cname(TREE_DIR);
    sys::mkdirat(dir, &name, 0o755)
        .map_err(|e| anyhow::anyhow!("setup: mkdirat(\"{TREE_DIR}\"): {}", sys::errno_text(e)))?;
    let fd = open_tree(dir)?;
    let mut file = std::fs::File::open(tarball).with_context(|| format!("setup: opening {}", tarball.display()))?;
    archive::extract(&mut file, fd.as_fd(), stop, &|_| {}).context("setup: extracting the tree")?;
    Ok(())
}

fn open_tree(dir: BorrowedFd<'_>) -> Result<OwnedFd> {
    sys::open(dir, &sys::cname(TREE_DIR), libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow::anyhow!("setup: opening \"{TREE_DIR}\": {}", sys::errno_text(e)))
}

impl Job for Traverse<'_> {
    fn prepare(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<()> {
        if let Some((dir, tarball)) = self.to_extract.take() {
            extract_tree(dir, tarball, ctx.stop)?;
            self.root = Some(open_tree(dir)?);
        }
        Ok(())
    }

    fn run(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<JobOutput> {
        let root = self
            .root
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("traverse: no tree to walk (internal error: not prepared)"))?
            .as_fd();
        let mut entries = 0u64;
        let mut tally = WalkTally::default();
        let mut local = PathStack::default();
        if self.queue.is_none() {
            local.push(c".");
        }
        let mut dir = Vec::new();
        let (index, target) = (self.index, self.queue.map_or(0, |q| q.target_len(self.workers)));
        loop {
            if !local.pop_into(&mut dir) {
                let Some(taken) = self.queue.and_then(|q| q.take(index, ctx.stop, &mut tally)) else { break };
                dir = taken.into_bytes_with_nul();
            }
            if (ctx.stop)() {
                return Err(anyhow::anyhow!("stopped"));
            }
            // What the stack held before this listing is pending already, and
            // may go to the queue while a large directory is read.
            let mut counted = local.len();
            let path = CStr::from_bytes_until_nul(&dir).expect("a path ends with its NUL");
            let mut between_reads = |local: &mut PathStack| {
                if let Some(queue) = self.queue.filter(|q| q.is_empty()) {
                    counted -= feed(queue, local, counted, target, index, &mut tally);
                }
            };
            entries += list(root, path, self.stat, &mut self.buf, &mut local, &mut between_reads)?;
            tally.dirs += 1;
            (ctx.progress)(entries);
            if let Some(queue) = self.queue {
                // This directory is listed; its subdirectories are pending before any is pushed.
                queue.listed_finding(local.len() - counted);
                // Keep one directory, and feed the queue while others may be idle.
                let all_but_one = local.len().saturating_sub(1);
                feed(queue, &mut local, all_but_one, target, index, &mut tally);
            }
        }
        Ok(JobOutput { entries, bytes: 0, walk: self.queue.map(|_| tally) })
    }
}

/// Moves up to `most` directories from the bottom of `local` (the oldest,
/// nearest the top of the tree: the largest pieces of work) to the queue
/// while it is shorter than `target`; returns how many moved.
fn feed(
    queue: &WalkQueue,
    local: &mut PathStack,
    most: usize,
    target: usize,
    index: Pusher,
    t: &mut WalkTally,
) -> usize {
    let mut moved = 0;
    while moved < most && queue.len() < target {
        if !queue.push(local.bottom(), index, t) {
            break;
        }
        local.drop_bottom();
        moved += 1;
    }
    moved
}

/// A walker's own directories still to list: NUL-terminated paths end to
/// end in one buffer, so that the walk allocates only while the stack grows
/// past its largest yet, never per directory or per entry. The walker
/// lists from the top (depth first) and gives from the bottom.
#[derive(Default)]
struct PathStack {
    bytes: Vec<u8>,
    /// Where each path starts in `bytes`, bottom first.
    starts: std::collections::VecDeque<usize>,
}

impl PathStack {
    fn len(&self) -> usize {
        self.starts.len()
    }

    fn push(&mut self, path: &CStr) {
        self.starts.push_back(self.bytes.len());
        self.bytes.extend_from_slice(path.to_bytes_with_nul());
    }

    /// The oldest path; the stack must not be empty.
    fn bottom(&self) -> &CStr {
        let start = *self.starts.front().expect("a path on the stack");
        CStr::from_bytes_until_nul(&self.bytes[start..]).expect("every path ends with its NUL")
    }

    /// Drops the oldest path; its bytes are reclaimed when the stack empties
    /// or they are most of the buffer.
    fn drop_bottom(&mut self) {
        self.starts.pop_front();
        match self.starts.front() {
            None => self.bytes.clear(),
            Some(&live) if live > self.bytes.len() / 2 && live > 1 << 16 => {
                self.bytes.drain(..live);
                self.starts.iter_mut().for_each(|s| *s -= live);
            }
            Some(_) => {}
        }
    }

    /// Pushes `parent/name`.
    fn push_joined(&mut self, parent: &[u8], name: &[u8]) {
        self.starts.push_back(self.bytes.len());
        self.bytes.extend_from_slice(parent);
        self.bytes.push(b'/');
        self.bytes.extend_from_slice(name);
        self.bytes.push(0);
    }

    /// Moves the path on top into `out` (with its NUL); false when empty.
    fn pop_into(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(start) = self.starts.pop_back() else { return false };
        out.clear();
        out.extend_from_slice(&self.bytes[start..]);
        // Empty, it also lets go of what was given from the bottom.
        self.bytes.truncate(if self.starts.is_empty() { 0 } else { start });
        true
    }
}

/// Lists one directory: counts its entries, pushes its subdirectories' paths.
/// Per entry, nothing is allocated or copied: records are read where the
/// kernel wrote them, and a name is measured only for a subdirectory (or to
/// stat it).
/// `between_reads` is called after each full buffer (a large directory).
fn list(
    root: BorrowedFd<'_>,
    dir: &CStr,
    stat: bool,
    buf: &mut [u8],
    subdirs: &mut PathStack,
    between_reads: &mut dyn FnMut(&mut PathStack),
) -> Result<u64> {
    let shown = || dir.to_string_lossy().into_owned();
    let fd = sys::open_long(root, dir, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .map_err(|e| anyhow::anyhow!("openat(\"{}\"): {}", sys::shorten_middle(&shown(), 160), sys::errno_text(e)))?;
    let mut count = 0;
    loop {
        let filled = sys::getdents64(&fd, buf).map_err(|e| {
            anyhow::anyhow!("getdents64(\"{}\"): {}", sys::shorten_middle(&shown(), 160), sys::errno_text(e))
        })?;
        if filled == 0 {
            return Ok(count);
        }
        for entry in sys::dirents(buf, filled) {
            if entry.is_dot() {
                continue;
            }
            count += 1;
            let mut is_dir = entry.d_type == libc::DT_DIR;
            if stat || entry.d_type == libc::DT_UNKNOWN {
                let name = entry.name();
                let st = sys::fstatat(&fd, name, libc::AT_SYMLINK_NOFOLLOW).map_err(|e| {
                    let path = format!("{}/{}", shown(), name.to_string_lossy());
                    anyhow::anyhow!("fstatat(\"{}\"): {}", sys::shorten_middle(&path, 160), sys::errno_text(e))
                })?;
                is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            }
            if is_dir {
                subdirs.push_joined(dir.to_bytes(), entry.name().to_bytes());
            }
        }
        between_reads(subdirs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn popped(stack: &mut PathStack) -> Option<String> {
        let mut out = Vec::new();
        stack.pop_into(&mut out).then(|| CStr::from_bytes_with_nul(&out).unwrap().to_str().unwrap().to_string())
    }

    #[test]
    fn a_path_stack_lists_from_the_top_and_gives_from_the_bottom() {
        let mut s = PathStack::default();
        s.push(c".");
        s.push_joined(b".", b"a");
        s.push_joined(b"./a", b"b");
        assert_eq!((s.len(), s.bottom()), (3, c"."));
        s.drop_bottom();
        assert_eq!(s.bottom(), c"./a");
        assert_eq!(popped(&mut s).as_deref(), Some("./a/b"));
        assert_eq!(popped(&mut s).as_deref(), Some("./a"));
        assert_eq!(popped(&mut s), None);
        assert!(s.bytes.is_empty(), "an empty stack holds no bytes");
    }

    #[test]
    fn a_path_stack_reclaims_what_it_gave_from_the_bottom() {
        let mut s = PathStack::default();
        let long = "d".repeat(1000);
        for _ in 0..200 {
            s.push_joined(b".", long.as_bytes());
        }
        for _ in 0..150 {
            s.drop_bottom();
        }
        assert_eq!(s.len(), 50);
        assert!(s.bytes.len() < 100 * 1002, "given paths' bytes are reclaimed: {}", s.bytes.len());
        let mut left = 0;
        while let Some(path) = popped(&mut s) {
            assert_eq!(path.len(), 1002);
            left += 1;
        }
        assert_eq!(left, 50);
    }
}
