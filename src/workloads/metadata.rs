//! Metadata workloads: lookups (`stat`, `stat-deep`, `open-close`) and
//! namespace changes (`creat-unlink`, `mkdir-rmdir`, `rename`,
//! `rename-dirs`, `link-unlink`).

use std::ffi::{CStr, CString};
use std::os::fd::BorrowedFd;

use anyhow::Result;

use super::lookup::{make_chain, Lookups};
use super::{create_file, refuse_same, Description, Op, Share, SysError, WorkerEnv, Workload};
use crate::sys::{self, Errno};

/// The directories above the leaf in `stat-deep`: with the leaf, 8 components.
const DEEP_DIRS: [&str; 7] = ["d1", "d2", "d3", "d4", "d5", "d6", "d7"];

/// `stat`.
pub(super) const STAT: Description = Description {
    family: "metadata",
    op: "fstatat() of a regular file",
    private: "worker i stats w<i>/f",
    shared: Ok("one directory; worker i stats shared/f<i>"),
    same: Ok("every worker stats shared/f"),
};

/// `stat-deep`.
pub(super) const STAT_DEEP: Description = Description {
    family: "metadata",
    op: "fstatat() of a file 8 components deep (d1/d2/d3/d4/d5/d6/d7/f): a lookup per component",
    private: "worker i has its own chain w<i>/d1/.../d7/f",
    shared: Ok("one chain shared/d1/.../d7; worker i stats its own leaf f<i>"),
    same: Ok("every worker stats shared/d1/.../d7/f"),
};

/// `open-close`.
pub(super) const OPEN_CLOSE: Description = Description {
    family: "metadata",
    op: "openat(O_RDONLY) of a regular file, then close()",
    private: "worker i opens w<i>/f",
    shared: Ok("one directory; worker i opens shared/f<i>"),
    same: Ok("every worker opens shared/f"),
};

/// `creat-unlink`.
pub(super) const CREAT_UNLINK: Description = Description {
    family: "metadata",
    op: "openat(O_CREAT|O_WRONLY|O_TRUNC) of a new file, close(), unlinkat() of it",
    private: "worker i creates w<i>/c",
    shared: Ok("one directory; worker i creates shared/c<i>"),
    same: Err("every worker would create and unlink one name"),
};

/// `mkdir-rmdir`.
pub(super) const MKDIR_RMDIR: Description = Description {
    family: "metadata",
    op: "mkdirat() of a new directory, then unlinkat(AT_REMOVEDIR) of it",
    private: "worker i makes w<i>/m",
    shared: Ok("one directory; worker i makes shared/m<i>"),
    same: Err("every worker would make and remove one directory"),
};

/// `rename`.
pub(super) const RENAME: Description = Description {
    family: "metadata",
    op: "renameat() of a file from a to b, the next op back from b to a (one rename per op)",
    private: "worker i renames w<i>/a <-> w<i>/b",
    shared: Ok("one directory; worker i renames shared/a<i> <-> shared/b<i>"),
    same: Err("every worker would rename one file from under the others"),
};

/// `rename-dirs`.
pub(super) const RENAME_DIRS: Description = Description {
    family: "metadata",
    op: "renameat() of a file from directory a to directory b, the next op back (one rename across directories per op)",
    private: "worker i renames w<i>/a/f <-> w<i>/b/f",
    shared: Ok("two directories; worker i renames shared/a/f<i> <-> shared/b/f<i> (fxmark MWRM)"),
    same: Err("every worker would rename one file from under the others"),
};

/// `link-unlink`.
pub(super) const LINK_UNLINK: Description = Description {
    family: "metadata",
    op: "linkat() of an existing file to a new name, then unlinkat() of that name",
    private: "worker i links w<i>/f to w<i>/l",
    shared: Ok("one directory; worker i links shared/f<i> to shared/l<i>"),
    same: Ok("every worker links the one file shared/f to shared/l<i> (one inode's link count)"),
};

/// Makes the coordinator's objects in the shared directory.
pub(super) fn prepare_shared(workload: Workload, share: Share, dir: BorrowedFd<'_>) -> Result<()> {
    let setup =
        |call: &str, name: &str, errno: Errno| anyhow::anyhow!("{call}(\"{name}\") failed: {}", sys::errno_text(errno));
    if workload == Workload::StatDeep {
        make_chain(dir, &DEEP_DIRS).map_err(|(path, e)| setup("mkdirat", &path, e))?;
    }
    if workload == Workload::RenameDirs {
        make_rename_dirs(dir).map_err(|(path, e)| setup("mkdirat", path, e))?;
    }
    if share == Share::Same {
        let name = leaf_path(workload == Workload::StatDeep, "f");
        create_file(dir, &sys::cname(&name), 0).map_err(|(call, e)| setup(call, &name, e))?;
    }
    Ok(())
}

/// The two directories `rename-dirs` moves its file between.
const RENAMED_BETWEEN: [&str; 2] = ["a", "b"];

fn make_rename_dirs(dir: BorrowedFd<'_>) -> Result<(), (&'static str, Errno)> {
    for name in RENAMED_BETWEEN {
        sys::mkdirat(dir, &sys::cname(name), 0o700).map_err(|e| (name, e))?;
    }
    Ok(())
}

fn leaf_path(deep: bool, leaf: &str) -> String {
    if deep {
        format!("{}/{leaf}", DEEP_DIRS.join("/"))
    } else {
        leaf.to_string()
    }
}

/// `stat` and `stat-deep`.
pub(super) struct Stat<'a> {
    lookups: Lookups<'a>,
}

impl<'a> Stat<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>, deep: bool) -> Result<Stat<'a>> {
        if !deep {
            return Ok(Stat { lookups: Lookups::setup(env)? });
        }
        let leaf = env.own_name("f").into_string().expect("ascii name");
        if env.share == Share::Private {
            make_chain(env.dir, &DEEP_DIRS).map_err(|(path, e)| env.setup_error("mkdirat", &sys::cname(&path), e))?;
        }
        let path = sys::cname(&leaf_path(true, &leaf));
        if env.makes_own_objects() {
            env.create_file(&path, 0)?;
        }
        Ok(Stat { lookups: Lookups::single(env.dir, path) })
    }
}

impl Op for Stat<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let dir = self.lookups.dir;
        sys::fstatat(dir, self.lookups.next(), 0).map(drop).map_err(SysError::new("fstatat", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        self.lookups.last()
    }
}

/// `open-close`.
pub(super) struct OpenClose<'a> {
    lookups: Lookups<'a>,
}

impl<'a> OpenClose<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<OpenClose<'a>> {
        Ok(OpenClose { lookups: Lookups::setup(env)? })
    }
}

impl Op for OpenClose<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let dir = self.lookups.dir;
        let fd = sys::open_bare(dir, self.lookups.next(), libc::O_RDONLY, 0).map_err(SysError::new("openat", 0))?;
        fd.close().map_err(SysError::new("close", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        self.lookups.last()
    }
}

/// `creat-unlink`.
pub(super) struct CreatUnlink<'a> {
    dir: BorrowedFd<'a>,
    name: CString,
}

impl<'a> CreatUnlink<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<CreatUnlink<'a>> {
        refuse_same(env)?;
        Ok(CreatUnlink { dir: env.dir, name: env.own_name("c") })
    }
}

impl Op for CreatUnlink<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC;
        let fd = sys::open_bare(self.dir, &self.name, flags, 0o600).map_err(SysError::new("openat", 0))?;
        fd.close().map_err(SysError::new("close", 0))?;
        sys::unlinkat(self.dir, &self.name, 0).map_err(SysError::new("unlinkat", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

/// `mkdir-rmdir`.
pub(super) struct MkdirRmdir<'a> {
    dir: BorrowedFd<'a>,
    name: CString,
}

impl<'a> MkdirRmdir<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<MkdirRmdir<'a>> {
        refuse_same(env)?;
        Ok(MkdirRmdir { dir: env.dir, name: env.own_name("m") })
    }
}

impl Op for MkdirRmdir<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        sys::mkdirat(self.dir, &self.name, 0o700).map_err(SysError::new("mkdirat", 0))?;
        sys::unlinkat(self.dir, &self.name, libc::AT_REMOVEDIR).map_err(SysError::new("unlinkat", 0))
    }

    fn arg_name(&self, _: u8) -> &CStr {
        &self.name
    }
}

/// `rename` and `rename-dirs`: `names[0]` = a, `names[1]` = b; `at_a` says where the file is now.
pub(super) struct Rename<'a> {
    dir: BorrowedFd<'a>,
    names: [CString; 2],
    at_a: bool,
}

impl<'a> Rename<'a> {
    /// `rename`: `a` and `b` in one directory; `rename-dirs` (`across`):
    /// `a/f` and `b/f`, one in each of two directories.
    pub(super) fn setup(env: &WorkerEnv<'a>, across: bool) -> Result<Rename<'a>> {
        refuse_same(env)?;
        let names = if across {
            if env.share == Share::Private {
                make_rename_dirs(env.dir).map_err(|(name, e)| env.setup_error("mkdirat", &sys::cname(name), e))?;
            }
            let own = env.own_name("f");
            let own = own.to_string_lossy();
            RENAMED_BETWEEN.map(|d| sys::cname(&format!("{d}/{own}")))
        } else {
            [env.own_name("a"), env.own_name("b")]
        };
        env.create_file(&names[0], 0)?;
        Ok(Rename { dir: env.dir, names, at_a: true })
    }
}

impl Op for Rename<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        let (from, to) = if self.at_a { (0, 1) } else { (1, 0) };
        sys::renameat(self.dir, &self.names[from], &self.names[to]).map_err(SysError::new("renameat", from as u8))?;
        self.at_a = !self.at_a;
        Ok(())
    }

    fn arg_name(&self, arg: u8) -> &CStr {
        &self.names[arg as usize & 1]
    }
}

/// `link-unlink`: `names[0]` = the existing file, `names[1]` = the link.
pub(super) struct LinkUnlink<'a> {
    dir: BorrowedFd<'a>,
    names: [CString; 2],
}

impl<'a> LinkUnlink<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<LinkUnlink<'a>> {
        let target = env.own_name("f");
        if env.makes_own_objects() {
            env.create_file(&target, 0)?;
        }
        // At `same` the target is shared but every link name is the worker's own.
        let link = match env.share {
            Share::Private => sys::cname("l"),
            Share::Shared | Share::Same => sys::cname(&format!("l{}", env.index)),
        };
        Ok(LinkUnlink { dir: env.dir, names: [target, link] })
    }
}

impl Op for LinkUnlink<'_> {
    #[inline(always)]
    fn once(&mut self) -> Result<(), SysError> {
        sys::linkat(self.dir, &self.names[0], &self.names[1]).map_err(SysError::new("linkat", 1))?;
        sys::unlinkat(self.dir, &self.names[1], 0).map_err(SysError::new("unlinkat", 1))
    }

    fn arg_name(&self, arg: u8) -> &CStr {
        &self.names[arg as usize & 1]
    }
}
