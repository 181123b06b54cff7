//! `mdtest-*`: mdtest's phased metadata benchmark, a phase per workload.
//!
//! mdtest runs create, stat, read and remove in one sequence with a barrier
//! between phases. Here each phase is a fixed-work workload of its own, so
//! that each is a series in every table, comparison, analysis and report:
//! its run does the phases before it untimed (`Phase::before`: the read
//! phase's files made, then stated, as mdtest leaves them), times the phase
//! from the common start to the slowest worker's end, and removes
//! everything untimed afterwards. The rate is mdtest's: all workers' items
//! over the slowest worker's time. The kernel gets mdtest's calls: the
//! same open modes and, with the lookup shape, paths as long as its.

use std::ffi::CString;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use anyhow::Result;

use super::lookup::{visiting_order, Placement};
use super::{Description, Job, JobContext, JobOutput, WorkerEnv, Workload};
use crate::sys::{self, Errno};

/// `--items`, `--write-bytes`, `--stonewall`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MdtestOptions {
    /// Items (files or directories) per worker.
    pub items: u64,
    /// Bytes written to each file as it is created, and read by the read phase.
    pub write_bytes: u64,
    /// A phase ends for every worker this long after the common start; the
    /// items done by then count.
    pub stonewall: Option<Duration>,
}

/// `--items` unless given. A phase's time is what fsscale measures, and a
/// fixed-work job must last [`MIN_FIXED_WORK_S`](crate::results::MIN_FIXED_WORK_S)
/// to be timed: the fastest phases (stat) run about 1M items/s a worker
/// on a quiet 2-vCPU VM, so 50,000 make even them last 50 ms (mdtest's own
/// examples use 1,000, whose phases here took 1-15 ms).
pub const DEFAULT_ITEMS: u64 = 50_000;

impl Default for MdtestOptions {
    fn default() -> MdtestOptions {
        MdtestOptions { items: DEFAULT_ITEMS, write_bytes: 0, stonewall: None }
    }
}

/// What a phase does to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Create,
    Stat,
    Read,
    Remove,
    DirCreate,
    DirStat,
    DirRemove,
}

impl Phase {
    fn of(workload: Workload) -> Option<Phase> {
        Some(match workload {
            Workload::MdtestCreate => Phase::Create,
            Workload::MdtestStat => Phase::Stat,
            Workload::MdtestRead => Phase::Read,
            Workload::MdtestRemove => Phase::Remove,
            Workload::MdtestDirCreate => Phase::DirCreate,
            Workload::MdtestDirStat => Phase::DirStat,
            Workload::MdtestDirRemove => Phase::DirRemove,
            _ => return None,
        })
    }

    fn directories(self) -> bool {
        matches!(self, Phase::DirCreate | Phase::DirStat | Phase::DirRemove)
    }

    /// The phases mdtest runs before this one in an iteration. `prepare`
    /// runs them untimed, so the phase starts from the state mdtest's own
    /// leaves: items made, then looked up, then opened. On a filesystem
    /// that caches names and attributes for a while (NFS, FUSE) that state
    /// decides whether an op needs a round trip to the server.
    fn before(self) -> &'static [Phase] {
        match self {
            Phase::Create | Phase::DirCreate => &[],
            Phase::Stat => &[Phase::Create],
            Phase::Read => &[Phase::Create, Phase::Stat],
            Phase::Remove => &[Phase::Create, Phase::Stat, Phase::Read],
            Phase::DirStat => &[Phase::DirCreate],
            Phase::DirRemove => &[Phase::DirCreate, Phase::DirStat],
        }
    }
}

pub(super) fn describe(workload: Workload) -> Description {
    let op = match Phase::of(workload).expect("an mdtest phase") {
        Phase::Create => "openat(O_RDWR|O_CREAT|O_EXCL) of a new file, --write-bytes written to it, close(); the phase: --items per worker (mdtest's file creation)",
        Phase::Stat => "fstatat() of a file; the phase: --items per worker (mdtest's file stat)",
        Phase::Read => "openat(O_RDWR) of a file (as mdtest opens it), a read of --write-bytes, close(); the phase: --items per worker (mdtest's file read)",
        Phase::Remove => "unlinkat() of a file; the phase: --items per worker (mdtest's file removal)",
        Phase::DirCreate => "mkdirat() of a new directory; the phase: --items per worker (mdtest's directory creation)",
        Phase::DirStat => "fstatat() of a directory; the phase: --items per worker (mdtest's directory stat)",
        Phase::DirRemove => "unlinkat(AT_REMOVEDIR) of a directory; the phase: --items per worker (mdtest's directory removal)",
    };
    Description {
        family: "mdtest phases (fixed work, timed to the slowest worker)",
        op,
        private: "worker i's items in w<i>/ (mdtest -u: a directory per rank)",
        shared: Ok("every worker's items in one directory (mdtest without -u)"),
        same: Err("each worker has items of its own, as in mdtest"),
    }
}

/// One worker's phase: its items' names, and what was done to them.
pub(super) struct Mdtest<'a> {
    phase: Phase,
    /// Where relative names start (the current directory when they are absolute).
    dir: BorrowedFd<'a>,
    /// The items in the order the phase visits them.
    names: Vec<CString>,
    options: MdtestOptions,
    buf: Vec<u8>,
    /// Items the timed phase got through (fewer than all when stonewalled).
    done: usize,
    /// Items that exist now, from the first (what `finish` removes).
    existing: std::ops::Range<usize>,
}

impl<'a> Mdtest<'a> {
    pub(super) fn setup(env: &WorkerEnv<'a>) -> Result<Mdtest<'a>> {
        super::refuse_same(env)?;
        let phase = Phase::of(env.workload).ok_or_else(|| anyhow::anyhow!("{} is no mdtest phase", env.workload))?;
        let kind = if phase.directories() { "dir" } else { "file" };
        // The lookup shape places the items (below --depth, named by --path)
        // and orders them (--random); by default they are mdtest's names in
        // the worker's directory, in order.
        let placement = Placement::new(env, env.options.lookup)?;
        let order = visiting_order(env.options.mdtest.items as usize, env.options.lookup.random, env.index);
        // mdtest's names: file.mdtest.<rank>.<i>, unique in a shared directory too.
        let names = order
            .into_iter()
            .map(|i| placement.name(&format!("{kind}.mdtest.{}.{i}", env.index)))
            .collect::<Result<_>>()?;
        let buf = vec![0x6d; env.options.mdtest.write_bytes as usize];
        Ok(Mdtest { phase, dir: placement.dir, names, options: env.options.mdtest, buf, done: 0, existing: 0..0 })
    }

    fn make(&self, name: &CString) -> Result<(), (&'static str, Errno)> {
        if self.phase.directories() {
            return sys::mkdirat(self.dir, name, 0o700).map_err(|e| ("mkdirat", e));
        }
        // mdtest opens O_RDWR in both phases; O_EXCL: fsscale removes only what it made.
        let fd = sys::open_bare(self.dir, name, libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600)
            .map_err(|e| ("openat", e))?;
        let written = if self.buf.is_empty() { Ok(0) } else { sys::write(&fd, &self.buf) };
        let closed = fd.close();
        match written {
            Ok(n) if n == self.buf.len() => closed.map_err(|e| ("close", e)),
            Ok(_) => Err(("write", libc::ENOSPC)),
            Err(e) => Err(("write", e)),
        }
    }

    fn remove(&self, name: &CString) -> Result<(), (&'static str, Errno)> {
        let flags = if self.phase.directories() { libc::AT_REMOVEDIR } else { 0 };
        sys::unlinkat(self.dir, name, flags).map_err(|e| ("unlinkat", e))
    }

    /// `phase`'s operation on item `i`; the bytes it moved.
    #[inline]
    fn operate(&mut self, phase: Phase, i: usize) -> Result<u64, (&'static str, Errno)> {
        let name = &self.names[i];
        match phase {
            Phase::Create | Phase::DirCreate => self.make(name).map(|()| self.buf.len() as u64),
            Phase::Stat | Phase::DirStat => sys::fstatat(self.dir, name, 0).map(|_| 0).map_err(|e| ("fstatat", e)),
            Phase::Read => {
                // mdtest's POSIX backend reads the read phase's O_RDONLY (0) as
                // "no mode given" and opens read-write, which takes write access
                // on the file and the mount: the kernel's work it measures.
                let fd = sys::open_bare(self.dir, name, libc::O_RDWR, 0).map_err(|e| ("openat", e))?;
                let read = if self.buf.is_empty() { Ok(0) } else { sys::read(&fd, &mut self.buf) };
                let closed = fd.close();
                let n = read.map_err(|e| ("read", e))?;
                closed.map_err(|e| ("close", e))?;
                Ok(n as u64)
            }
            Phase::Remove | Phase::DirRemove => self.remove(name).map(|()| 0),
        }
    }

    fn failed(&self, i: usize, (call, errno): (&'static str, Errno)) -> String {
        format!("{call}(\"{}\") failed: {}", self.names[i].to_string_lossy(), sys::errno_text(errno))
    }
}

impl Job for Mdtest<'_> {
    /// The phases before this one, untimed: the items a stat, read or
    /// remove phase works on, in the state mdtest's earlier phases leave.
    fn prepare(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<()> {
        for &phase in self.phase.before() {
            for i in 0..self.names.len() {
                if i % 256 == 0 && (ctx.stop)() {
                    return Err(anyhow::anyhow!("stopped while preparing"));
                }
                self.operate(phase, i).map_err(|e| anyhow::anyhow!("setup: {}", self.failed(i, e)))?;
                if matches!(phase, Phase::Create | Phase::DirCreate) {
                    self.existing = 0..i + 1;
                }
            }
        }
        Ok(())
    }

    fn run(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<JobOutput> {
        let deadline = self.options.stonewall.map(|s| sys::monotonic_ns() + s.as_nanos() as u64);
        let mut bytes = 0;
        for i in 0..self.names.len() {
            if i % 64 == 0 {
                if (ctx.stop)() {
                    return Err(anyhow::anyhow!("stopped"));
                }
                if deadline.is_some_and(|d| sys::monotonic_ns() >= d) {
                    break;
                }
                (ctx.progress)(i as u64);
            }
            bytes += self.operate(self.phase, i).map_err(|e| anyhow::Error::msg(self.failed(i, e)))?;
            self.done = i + 1;
            match self.phase {
                Phase::Create | Phase::DirCreate => self.existing = 0..i + 1,
                Phase::Remove | Phase::DirRemove => self.existing = i + 1..self.names.len(),
                _ => {}
            }
        }
        (ctx.progress)(self.done as u64);
        Ok(JobOutput { entries: self.done as u64, bytes, walk: None })
    }

    /// Removes every item there is, stonewalled ones too, untimed.
    fn finish(&mut self, _ctx: &JobContext<'_>) -> anyhow::Result<()> {
        for i in self.existing.clone() {
            self.remove(&self.names[i]).map_err(|e| anyhow::anyhow!("cleanup: {}", self.failed(i, e)))?;
        }
        self.existing = 0..0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_has_a_description_and_its_item_kind() {
        for w in Workload::ALL.into_iter().filter(|w| Phase::of(*w).is_some()) {
            let d = describe(w);
            assert!(d.op.contains("--items"), "{w}");
            assert!(d.same.is_err());
            assert_eq!(Phase::of(w).unwrap().directories(), w.name().contains("-dir-"), "{w}");
        }
        assert_eq!(Phase::of(Workload::Stat), None);
        assert!(Phase::Create.before().is_empty() && Phase::DirCreate.before().is_empty());
        // Every phase starts from the one before it, which started from its own.
        for w in Workload::ALL.into_iter().filter_map(Phase::of) {
            if let Some((&last, earlier)) = w.before().split_last() {
                assert_eq!(last.before(), earlier, "{w:?}");
                assert_eq!(last.directories(), w.directories(), "{w:?}");
            }
        }
    }
}
