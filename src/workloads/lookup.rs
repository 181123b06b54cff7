//! The files `stat` and `open-close` look up, in the shape `LookupShape`
//! asks for: `files` distinct files below a chain of `depth - 1`
//! directories (`s1/s2/...`), named relative to the worker's directory or
//! by their absolute path, visited in order or in a fixed random order.
//! Every path is built before the start; an op only takes the next one.
//!
//! Private: worker i makes its chain and files in `w<i>`. Shared: the
//! coordinator makes the chain in `shared`, worker i its files `w<i>-f<k>`
//! in it (mdtest's shared directory). Same: the coordinator makes the chain
//! and the files `f<k>` every worker visits.

use std::ffi::{CStr, CString};
use std::os::fd::BorrowedFd;

use anyhow::Result;

use super::{create_file, Share, WorkerEnv};
use crate::sys::{self, Errno};
use crate::tree::Rng;
use crate::vocab::LookupShape;

/// The directories above the files, outermost first: `s1`, ... `s<depth-1>`.
fn chain_dirs(shape: LookupShape) -> Vec<String> {
    (1..shape.depth).map(|d| format!("s{d}")).collect()
}

/// Their path: `s1/.../s<depth-1>`, or "".
fn chain(shape: LookupShape) -> String {
    chain_dirs(shape).join("/")
}

fn below(chain: &str, leaf: &str) -> String {
    if chain.is_empty() {
        leaf.to_string()
    } else {
        format!("{chain}/{leaf}")
    }
}

/// Makes a chain of directories below `dir`, each inside the one before
/// (`a`, `a/b`, ...); on failure, the path that failed.
pub(super) fn make_chain<S: AsRef<str>>(dir: BorrowedFd<'_>, components: &[S]) -> Result<(), (String, Errno)> {
    let mut path = String::new();
    for component in components {
        path = below(&path, component.as_ref());
        sys::mkdirat(dir, &sys::cname(&path), 0o700).map_err(|e| (path.clone(), e))?;
    }
    Ok(())
}

/// The coordinator's part in the shared directory: the chain, and at
/// `same` the files themselves. Nothing for the default shape, whose one
/// file the caller makes as before.
pub(super) fn prepare_shared(share: Share, dir: BorrowedFd<'_>, shape: LookupShape) -> Result<()> {
    let fail = |call: &str, path: &str, e: Errno| anyhow::anyhow!("{call}(\"{path}\") failed: {}", sys::errno_text(e));
    make_chain(dir, &chain_dirs(shape)).map_err(|(path, e)| fail("mkdirat", &path, e))?;
    if share == Share::Same {
        let chain = chain(shape);
        for k in 0..shape.files {
            let path = below(&chain, &format!("f{k}"));
            create_file(dir, &sys::cname(&path), 0).map_err(|(call, e)| fail(call, &path, e))?;
        }
    }
    Ok(())
}

/// Where a worker's shaped names live: below the chain, in its own
/// directory or the shared one, and how an op names them (relative to the
/// directory, or absolute from `/`). The mdtest phases' items use it too.
pub(super) struct Placement<'a> {
    /// The directory relative names start from (the current one for absolute names).
    pub dir: BorrowedFd<'a>,
    chain: String,
    /// The worker's directory's path, when names are absolute.
    base: Option<std::path::PathBuf>,
}

impl<'a> Placement<'a> {
    /// Makes the chain in a private directory (the coordinator made the
    /// shared one's).
    pub(super) fn new(env: &WorkerEnv<'a>, shape: LookupShape) -> Result<Placement<'a>> {
        if env.share == Share::Private {
            make_chain(env.dir, &chain_dirs(shape))
                .map_err(|(path, e)| env.setup_error("mkdirat", &sys::cname(&path), e))?;
        }
        let dir = if shape.absolute { sys::CWD } else { env.dir };
        Ok(Placement { dir, chain: chain(shape), base: shape.absolute.then(|| env.dir_path()) })
    }

    /// `leaf`'s path relative to the worker's directory.
    pub(super) fn relative(&self, leaf: &str) -> String {
        below(&self.chain, leaf)
    }

    /// The name an op gives the kernel for `leaf`, with `self.dir`.
    pub(super) fn name(&self, leaf: &str) -> Result<CString> {
        let relative = self.relative(leaf);
        match &self.base {
            Some(base) => Ok(sys::cstring(&base.join(relative))?),
            None => Ok(sys::cname(&relative)),
        }
    }
}

/// A fixed visiting order of `n` items per worker: in order, or shuffled
/// the same way in every run.
pub(super) fn visiting_order(n: usize, random: bool, worker: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    if random {
        Rng::new(worker as u64).shuffle(&mut order);
    }
    order
}

/// The paths one worker looks up, and where it is in its order.
pub(super) struct Lookups<'a> {
    /// The directory relative paths start from (the current one for absolute paths).
    pub dir: BorrowedFd<'a>,
    paths: Vec<CString>,
    /// Indices into `paths`, in visiting order.
    order: Vec<u32>,
    next: usize,
}

impl<'a> Lookups<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Lookups<'a>> {
        let shape = env.options.lookup;
        if shape.is_default() {
            // One hot name, as fsscale always measured: `f`, or `f<i>` in the shared directory.
            let name = env.own_name("f");
            if env.makes_own_objects() {
                env.create_file(&name, 0)?;
            }
            return Ok(Lookups { dir: env.dir, paths: vec![name], order: vec![0], next: 0 });
        }
        let placement = Placement::new(env, shape)?;
        let mut paths = Vec::with_capacity(shape.files);
        for k in 0..shape.files {
            let leaf = match env.share {
                Share::Shared => format!("w{}-f{k}", env.index),
                Share::Private | Share::Same => format!("f{k}"),
            };
            if env.makes_own_objects() {
                env.create_file(&sys::cname(&placement.relative(&leaf)), 0)?;
            }
            paths.push(placement.name(&leaf)?);
        }
        let order = visiting_order(shape.files, shape.random, env.index);
        Ok(Lookups { dir: placement.dir, paths, order, next: 0 })
    }

    /// One fixed path (`stat-deep`'s chain).
    pub(super) fn single(dir: BorrowedFd<'a>, path: CString) -> Lookups<'a> {
        Lookups { dir, paths: vec![path], order: vec![0], next: 0 }
    }

    /// The next path to look up.
    #[inline(always)]
    pub(super) fn next(&mut self) -> &CStr {
        let index = self.order[self.next] as usize;
        self.next += 1;
        if self.next == self.order.len() {
            self.next = 0;
        }
        &self.paths[index]
    }

    /// The path the last `next` gave (for an error message).
    pub(super) fn last(&self) -> &CStr {
        let at = self.next.checked_sub(1).unwrap_or(self.order.len() - 1);
        &self.paths[self.order[at] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_and_the_order() {
        assert_eq!(chain(LookupShape::default()), "");
        assert_eq!(chain(LookupShape { depth: 4, ..Default::default() }), "s1/s2/s3");
        let mut order: Vec<u32> = (0..1000).collect();
        Rng::new(3).shuffle(&mut order);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<u32>>(), "a permutation");
        assert_ne!(order, sorted, "shuffled");
        let mut again: Vec<u32> = (0..1000).collect();
        Rng::new(3).shuffle(&mut again);
        assert_eq!(order, again, "the same for the same worker");
    }
}
