//! `traverse`: a recursive walk of a tree, counting every entry (and with
//! `--stat`, `fstatat`-ing each), timed to completion.
//!
//! private: each worker walks its own copy; same: every worker walks the one
//! tree; shared: the workers walk the one tree together, handing
//! directories to each other through a queue (like a parallel find).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

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
    to_extract: Option<(RawFd, &'a std::path::Path)>,
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
                let fd = sys::open_owned(libc::AT_FDCWD, &c, libc::O_RDONLY | libc::O_DIRECTORY, 0)
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
pub(super) fn extract_tree(dir: RawFd, tarball: &std::path::Path, stop: &dyn Fn() -> bool) -> Result<()> {
    let name = sys::cname(TREE_DIR);
    sys::mkdirat(dir, &name, 0o755)
        .map_err(|e| anyhow::anyhow!("setup: mkdirat(\"{TREE_DIR}\"): {}", sys::errno_text(e)))?;
    let fd = open_tree(dir)?;
    let mut file = std::fs::File::open(tarball).with_context(|| format!("setup: opening {}", tarball.display()))?;
    archive::extract(&mut file, fd.as_raw_fd(), stop, &|_| {}).context("setup: extracting the tree")?;
    Ok(())
}

fn open_tree(dir: RawFd) -> Result<OwnedFd> {
    sys::open_owned(dir, &sys::cname(TREE_DIR), libc::O_RDONLY | libc::O_DIRECTORY, 0)
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
            .as_raw_fd();
        let mut entries = 0u64;
        let mut tally = WalkTally::default();
        let mut local: Vec<CString> = Vec::new();
        if self.queue.is_none() {
            local.push(CString::from(c"."));
        }
        let mut found = Vec::new();
        loop {
            let dir = match local.pop() {
                Some(dir) => dir,
                None => match self.queue {
                    None => break,
                    Some(queue) => match queue.take(self.index, ctx.stop, &mut tally) {
                        Some(dir) => dir,
                        None => break,
                    },
                },
            };
            if (ctx.stop)() {
                return Err(anyhow::anyhow!("stopped"));
            }
            found.clear();
            entries += list(root, &dir, self.stat, &mut self.buf, &mut found)?;
            tally.dirs += 1;
            (ctx.progress)(entries);
            match self.queue {
                None => local.append(&mut found),
                Some(queue) => {
                    queue.found(found.len());
                    // Keep work local, but feed the queue while others may be idle;
                    // what does not fit in it stays here.
                    while queue.len() < queue.target_len(self.workers) {
                        match found.pop() {
                            Some(d) if queue.push(&d, self.index, &mut tally) => {}
                            Some(d) => {
                                found.push(d);
                                break;
                            }
                            None => break,
                        }
                    }
                    local.append(&mut found);
                    // This directory is listed; its subdirectories are counted as pending.
                    queue.listed();
                }
            }
        }
        Ok(JobOutput { entries, bytes: 0, walk: self.queue.map(|_| tally) })
    }
}

/// Lists one directory: counts its entries, pushes its subdirectories' paths.
/// Per entry, nothing is allocated: names are read where the kernel wrote
/// them (NUL-terminated); only a subdirectory's path is made.
fn list(root: RawFd, dir: &CStr, stat: bool, buf: &mut [u8], subdirs: &mut Vec<CString>) -> Result<u64> {
    let shown = || dir.to_string_lossy().into_owned();
    let fd = sys::open_long_owned(root, dir, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .map_err(|e| anyhow::anyhow!("openat(\"{}\"): {}", sys::shorten_middle(&shown(), 160), sys::errno_text(e)))?;
    // SAFETY: stat is plain data.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let mut count = 0;
    loop {
        let filled = sys::getdents64(fd.as_raw_fd(), buf).map_err(|e| {
            anyhow::anyhow!("getdents64(\"{}\"): {}", sys::shorten_middle(&shown(), 160), sys::errno_text(e))
        })?;
        if filled == 0 {
            return Ok(count);
        }
        for (name, d_type) in sys::dirents(buf, filled) {
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            count += 1;
            let mut is_dir = d_type == libc::DT_DIR;
            if stat || d_type == libc::DT_UNKNOWN {
                sys::fstatat(fd.as_raw_fd(), name, &mut st, libc::AT_SYMLINK_NOFOLLOW).map_err(|e| {
                    let path = format!("{}/{}", shown(), name.to_string_lossy());
                    anyhow::anyhow!("fstatat(\"{}\"): {}", sys::shorten_middle(&path, 160), sys::errno_text(e))
                })?;
                is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            }
            if is_dir {
                let parent = dir.to_bytes();
                let mut path = Vec::with_capacity(parent.len() + bytes.len() + 2);
                path.extend_from_slice(parent);
                path.push(b'/');
                path.extend_from_slice(bytes);
                // SAFETY: two NUL-free byte strings and a slash; with_capacity left room for the NUL.
                subdirs.push(unsafe { CString::from_vec_unchecked(path) });
            }
        }
    }
}
