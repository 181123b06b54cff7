//! The catalogue: every workload's entry said once, each in one exhaustive
//! match (a new workload does not compile until it has them all): its
//! description, the system calls of one op, what the coordinator prepares
//! for a point, and how its workers work (a loop's op driven by the
//! runner's generic hot loop, a fixed-work job, or replay).

use std::os::fd::{AsFd, BorrowedFd};

use anyhow::{Context, Result};

use super::{
    command, create_file, data, fdtable, fileops, grow, lookup, mapping, mdtest, metadata, prepare_shared_file,
    readdir, traverse, untar, Description, Job, Lookups, OpDriver, PointState, Share, TreeSource, WalkQueue, WorkerEnv,
    Workload, WorkloadOptions, FILE, SHARED_DIR,
};
use crate::sys;

/// Every mdtest phase, as a pattern: the phases are one job with one
/// description each, and every match of the catalogue treats them alike.
macro_rules! mdtest_phases {
    () => {
        Workload::MdtestCreate
            | Workload::MdtestStat
            | Workload::MdtestRead
            | Workload::MdtestRemove
            | Workload::MdtestDirCreate
            | Workload::MdtestDirStat
            | Workload::MdtestDirRemove
    };
}

/// A workload's catalogue entry and the system calls it makes per op.
pub trait Catalogue {
    /// Its catalogue entry: one exhaustive match.
    fn describe(self) -> Description;

    /// The system calls one counted op makes, by name, and how many of each
    /// (`--verify`); `None` where they vary (replay's kinds, commands, jobs).
    fn syscalls_per_op(self, options: &WorkloadOptions) -> Option<Vec<(&'static str, f64)>>;
}

impl Catalogue for Workload {
    fn describe(self) -> Description {
        match self {
            Workload::Stat => metadata::STAT,
            Workload::StatDeep => metadata::STAT_DEEP,
            Workload::OpenClose => metadata::OPEN_CLOSE,
            Workload::CreatUnlink => metadata::CREAT_UNLINK,
            Workload::MkdirRmdir => metadata::MKDIR_RMDIR,
            Workload::Rename => metadata::RENAME,
            Workload::RenameDirs => metadata::RENAME_DIRS,
            Workload::LinkUnlink => metadata::LINK_UNLINK,
            Workload::Readdir => readdir::describe(),
            Workload::Read => data::READ,
            Workload::Write => data::WRITE,
            Workload::ReadSeq => data::READ_SEQ,
            Workload::WriteSeq => data::WRITE_SEQ,
            Workload::ReadDirect => data::READ_DIRECT,
            Workload::WriteDirect => data::WRITE_DIRECT,
            Workload::Append => data::APPEND,
            Workload::Fsync => data::FSYNC,
            Workload::DupClose => fdtable::describe(),
            Workload::Lseek => fileops::LSEEK,
            Workload::FcntlLock => fileops::FCNTL_LOCK,
            Workload::Flock => fileops::FLOCK,
            Workload::Fallocate => fileops::FALLOCATE,
            Workload::Truncate => fileops::TRUNCATE,
            Workload::FaultShared => mapping::FAULT_SHARED,
            Workload::FaultPrivate => mapping::FAULT_PRIVATE,
            Workload::AppendGrow => grow::describe(),
            Workload::Untar => untar::describe(),
            Workload::Traverse => traverse::describe(),
            Workload::Replay => replay_description(),
            Workload::Command => command::describe(),
            w @ (mdtest_phases!()) => mdtest::describe(w),
        }
    }

    fn syscalls_per_op(self, options: &WorkloadOptions) -> Option<Vec<(&'static str, f64)>> {
        let calls = match self {
            Workload::Stat | Workload::StatDeep => vec![("newfstatat", 1.0)],
            Workload::OpenClose => vec![("openat", 1.0), ("close", 1.0)],
            Workload::CreatUnlink => vec![("openat", 1.0), ("close", 1.0), ("unlinkat", 1.0)],
            Workload::MkdirRmdir => vec![("mkdirat", 1.0), ("unlinkat", 1.0)],
            Workload::Rename | Workload::RenameDirs => vec![("renameat", 1.0)],
            Workload::LinkUnlink => vec![("linkat", 1.0), ("unlinkat", 1.0)],
            // One listing fits the buffer: a getdents64 that fills it, one that returns 0.
            Workload::Readdir => vec![("openat", 1.0), ("getdents64", 2.0), ("close", 1.0)],
            Workload::Read | Workload::ReadDirect => vec![("pread64", 1.0)],
            Workload::Write | Workload::WriteDirect => vec![("pwrite64", 1.0)],
            Workload::Fsync => vec![("pwrite64", 1.0), ("fsync", 1.0)],
            Workload::ReadSeq => vec![("read", 1.0), ("lseek", 1.0 / f64::from(data::BLOCKS_PER_MIB))],
            Workload::WriteSeq => vec![("write", 1.0), ("lseek", 1.0 / f64::from(data::BLOCKS_PER_MIB))],
            Workload::Append => vec![("write", 1.0), ("ftruncate", 1.0 / f64::from(data::BLOCKS_PER_MIB))],
            Workload::DupClose => vec![("dup", 1.0), ("close", 1.0)],
            Workload::Lseek => vec![("lseek", 1.0)],
            Workload::FcntlLock => vec![("fcntl", 2.0)],
            Workload::Flock => vec![("flock", 2.0)],
            Workload::Fallocate => vec![("fallocate", 2.0)],
            Workload::Truncate => vec![("ftruncate", 2.0)],
            // A fault is no system call; the mapping is renewed once per its pages.
            Workload::FaultShared | Workload::FaultPrivate => {
                let renew = mapping::renewals_per_op(options.map_bytes);
                vec![("munmap", renew), ("mmap", renew)]
            }
            // Replay's calls vary by kind (see `OpKind::exact_syscall`); jobs are not op loops.
            Workload::Replay
            | Workload::Untar
            | Workload::AppendGrow
            | Workload::Traverse
            | Workload::Command
            | mdtest_phases!() => return None,
        };
        Some(calls)
    }
}

fn replay_description() -> Description {
    Description {
        family: "macro (fixed time, per-op latency)",
        op: "one operation of the trace (built-in fileserver, or --trace FILE in dbench loadfile format), \
             replayed in a loop",
        private: "client i replays in w<i>/",
        shared: Err("every client's trace creates and deletes the same names, so each needs its own directory"),
        same: Err("every client's trace creates and deletes the same names, so each needs its own directory"),
    }
}

/// Makes the coordinator's part of a run: the shared directory and the
/// objects every worker touches. `scratch` is the run's scratch directory.
pub fn prepare_point(
    workload: Workload,
    share: Share,
    workers: usize,
    scratch: BorrowedFd<'_>,
    tree: Option<&TreeSource>,
    options: &WorkloadOptions,
) -> Result<PointState> {
    let lookup = options.lookup;
    let mut state = PointState::default();
    if share == Share::Private {
        return Ok(state);
    }
    let shared = sys::cname(SHARED_DIR);
    sys::mkdirat(scratch, &shared, 0o700)
        .map_err(|e| anyhow::anyhow!("creating directory \"{SHARED_DIR}\": {}", sys::errno_text(e)))?;
    let dir = sys::open(scratch, &shared, libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| anyhow::anyhow!("opening directory \"{SHARED_DIR}\": {}", sys::errno_text(e)))?;
    let dir = dir.as_fd();
    let what = || format!("{workload} setup in \"{SHARED_DIR}\"");
    match workload {
        w if w.takes_lookup_shape() && !lookup.is_default() => {
            lookup::prepare_shared(share, dir, lookup).with_context(what)?
        }
        Workload::Stat | Workload::StatDeep | Workload::OpenClose | Workload::LinkUnlink | Workload::RenameDirs => {
            metadata::prepare_shared(workload, share, dir).with_context(what)?
        }
        Workload::Readdir => readdir::prepare_shared(share, dir).with_context(what)?,
        Workload::Read
        | Workload::Write
        | Workload::ReadDirect
        | Workload::WriteDirect
        | Workload::Append
        | Workload::Fsync => data::prepare_shared(workload, share, workers, dir).with_context(what)?,
        Workload::FaultShared | Workload::FaultPrivate => {
            create_file(dir, &sys::cname(FILE), mapping::shared_len(share, workers, options.map_bytes))
                .map_err(|(call, e)| anyhow::anyhow!("{call}(\"{FILE}\") failed: {}", sys::errno_text(e)))
                .with_context(what)?
        }
        Workload::ReadSeq | Workload::WriteSeq => {
            // One position for all at `same`: room for every worker's 256 blocks.
            let len = data::SEQ_FILE_LEN * if share == Share::Same { workers as u64 } else { 1 };
            state.shared_file = prepare_shared_file(share, dir, len).with_context(what)?
        }
        Workload::DupClose
        | Workload::Lseek
        | Workload::FcntlLock
        | Workload::Flock
        | Workload::Fallocate
        | Workload::Truncate
        | Workload::AppendGrow => state.shared_file = prepare_shared_file(share, dir, 0).with_context(what)?,
        Workload::Traverse => {
            if let Some(source) = tree.filter(|t| t.walk_tree.is_none()) {
                traverse::extract_tree(dir, &source.tarball, &|| false).with_context(what)?;
            }
            if share == Share::Shared {
                state.walk_queue = Some(WalkQueue::new().context("mapping the shared walk queue")?);
            }
        }
        Workload::CreatUnlink
        | Workload::MkdirRmdir
        | Workload::Rename
        | Workload::Untar
        | Workload::Replay
        | Workload::Command
        | mdtest_phases!() => {}
    }
    Ok(state)
}

/// What a worker does, as [`start`] set it up.
pub enum Started<'a, R> {
    /// A fixed-time loop: its op was set up and `drive` ran it to the end.
    Drove(R),
    /// Fixed work: the job, set up, for the worker to run at the start.
    Job(Box<dyn Job + 'a>),
    /// `replay`: the worker plays the trace.
    Replay,
}

/// Sets up the worker of `env.workload`: a loop's op, handed to `drive`
/// (generic, so that every op's hot loop is compiled and inlined on its
/// own), or a fixed-work job. One exhaustive match: a new workload cannot
/// compile until it says how its workers work.
pub fn start<'a, R>(env: &WorkerEnv<'a>, drive: impl OpDriver<R>) -> Result<Started<'a, R>> {
    use Started::Drove;
    fn job<'a, R>(job: impl Job + 'a) -> Started<'a, R> {
        Started::Job(Box::new(job))
    }
    Ok(match env.workload {
        Workload::Stat => Drove(drive.drive(metadata::Stat::setup(env, false)?)),
        Workload::StatDeep => Drove(drive.drive(metadata::Stat::setup(env, true)?)),
        Workload::OpenClose => Drove(drive.drive(metadata::OpenClose::setup(env)?)),
        Workload::CreatUnlink => Drove(drive.drive(metadata::CreatUnlink::setup(env)?)),
        Workload::MkdirRmdir => Drove(drive.drive(metadata::MkdirRmdir::setup(env)?)),
        Workload::Rename => Drove(drive.drive(metadata::Rename::setup(env, false)?)),
        Workload::RenameDirs => Drove(drive.drive(metadata::Rename::setup(env, true)?)),
        Workload::LinkUnlink => Drove(drive.drive(metadata::LinkUnlink::setup(env)?)),
        Workload::Readdir => Drove(drive.drive(readdir::Readdir::setup(env)?)),
        Workload::Read => Drove(drive.drive(data::Read::setup(env)?)),
        Workload::Write => Drove(drive.drive(data::Write::setup(env, false)?)),
        Workload::Append => Drove(drive.drive(data::Append::setup(env)?)),
        Workload::Fsync => Drove(drive.drive(data::Write::setup(env, true)?)),
        Workload::ReadSeq => Drove(drive.drive(data::Sequential::setup(env, false)?)),
        Workload::ReadDirect => Drove(drive.drive(data::Direct::setup(env, false)?)),
        Workload::WriteDirect => Drove(drive.drive(data::Direct::setup(env, true)?)),
        Workload::WriteSeq => Drove(drive.drive(data::Sequential::setup(env, true)?)),
        Workload::DupClose => Drove(drive.drive(fdtable::DupClose::setup(env)?)),
        Workload::Lseek => Drove(drive.drive(fileops::Lseek::setup(env)?)),
        Workload::FcntlLock => Drove(drive.drive(fileops::FcntlLock::setup(env)?)),
        Workload::Flock => Drove(drive.drive(fileops::Flock::setup(env)?)),
        Workload::Fallocate => Drove(drive.drive(fileops::Fallocate::setup(env)?)),
        Workload::Truncate => Drove(drive.drive(fileops::Truncate::setup(env)?)),
        Workload::FaultShared => Drove(drive.drive(mapping::Fault::setup(env, true)?)),
        Workload::FaultPrivate => Drove(drive.drive(mapping::Fault::setup(env, false)?)),
        Workload::Untar => job(untar::Untar::setup(env)?),
        Workload::AppendGrow => job(grow::AppendGrow::setup(env)?),
        Workload::Traverse => job(traverse::Traverse::setup(env)?),
        Workload::Command => job(command::CommandCopy::setup(env)?),
        mdtest_phases!() => job(mdtest::Mdtest::setup(env)?),
        Workload::Replay => Started::Replay,
    })
}

/// The words of a workload's op for a point.
pub trait OpWords {
    /// The op's words for a point: the catalogue's, with the shape of its
    /// lookups when that is not the one hot name, and a fault's mapping size.
    fn op_words(self, options: &WorkloadOptions) -> String;
}

impl OpWords for Workload {
    fn op_words(self, options: &WorkloadOptions) -> String {
        let (op, lookup) = (self.describe().op, &options.lookup);
        if self == Workload::Traverse {
            return match options.walk_stat {
                true => "walk the whole tree, read only: getdents64 of every directory and fstatat() of every \
                         entry (--stat)"
                    .to_string(),
                false => "walk the whole tree, read only: getdents64 of every directory, counting entries \
                          (no --stat)"
                    .to_string(),
            };
        }
        if self.maps_a_file() {
            return format!("{op} (--map-size {})", crate::vocab::format_size(options.map_bytes));
        }
        match self.traits().lookups {
            Lookups::Files if !lookup.is_default() => format!("{op} ({})", lookup.describe()),
            Lookups::Items => match lookup.describe_placement() {
                Some(placement) => format!("{op} ({placement})"),
                None => op.to_string(),
            },
            Lookups::Files | Lookups::Own => op.to_string(),
        }
    }
}
