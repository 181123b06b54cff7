//! The workload catalogue: what one op is, which sharing levels make sense,
//! and how each worker prepares its files before the start barrier.
//!
//! Every op works relative to a directory descriptor (`*at` system calls), so
//! the measured cost does not depend on how deep `--dir` is, and threads do
//! not depend on the shared working directory.
//!
//! Layout inside a run's scratch directory:
//! - `w<i>/`: worker i's private directory (`--share private`);
//! - `shared/`: the one directory all workers use (`--share shared|same`),
//!   made by the coordinator together with any object all workers touch.

mod catalogue;
mod command;
mod data;
mod fdtable;
mod fileops;
mod grow;
mod listing;
mod lookup;
mod mapping;
mod mdtest;
mod metadata;
mod readdir;
mod traverse;
mod untar;
mod walk_queue;

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::Result;

use crate::sys::{self, Errno};
use crate::vocab::InputError;
pub use crate::vocab::{Lookups, Share, Workload};
pub use listing::render_catalogue;

pub use catalogue::{prepare_point, start, Catalogue, OpWords, Started};
pub use command::CommandSpec;
pub use data::DATA_BLOCK;
pub use mapping::{DEFAULT_MAP_BYTES, PAGE as MAP_PAGE};
pub use mdtest::{MdtestOptions, DEFAULT_ITEMS as DEFAULT_MDTEST_ITEMS};
pub use traverse::TREE_DIR;
pub use untar::TreeSource;
pub use walk_queue::{Pusher, WalkQueue, WalkTally, FROM_ANOTHER_RANK};

/// The catalogue entry shown by `fsscale list`.
pub struct Description {
    pub family: &'static str,
    /// Exactly what one counted op does.
    pub op: &'static str,
    /// What each sharing level means for this workload; `Err` = refused, with the reason.
    pub private: &'static str,
    pub shared: Result<&'static str, &'static str>,
    pub same: Result<&'static str, &'static str>,
}

/// Which sharing levels a workload can run at.
pub trait Sharing {
    /// Whether this workload can run at `share`; the error says why not and what to use.
    fn check_share(self, share: Share) -> Result<(), InputError>;

    /// The sharing levels this workload can run at.
    fn supported_shares(self) -> Vec<Share>;
}

impl Sharing for Workload {
    fn check_share(self, share: Share) -> Result<(), InputError> {
        let d = self.describe();
        let verdict = match share {
            Share::Private => Ok(""),
            Share::Shared => d.shared,
            Share::Same => d.same,
        };
        verdict.map(drop).map_err(|reason| {
            let usable: Vec<String> = self.supported_shares().iter().map(|s| format!("--share {s}")).collect();
            InputError::Unsupported(format!(
                "{}: --share {share} is not possible ({reason}); use {}",
                self.name(),
                usable.join(" or ")
            ))
        })
    }

    fn supported_shares(self) -> Vec<Share> {
        let d = self.describe();
        Share::ALL
            .into_iter()
            .filter(|s| match s {
                Share::Private => true,
                Share::Shared => d.shared.is_ok(),
                Share::Same => d.same.is_ok(),
            })
            .collect()
    }
}

/// A failed system call inside an op, small enough to return from the hot loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysError {
    pub call: &'static str,
    /// The errno, or 0 for a short transfer.
    pub errno: Errno,
    /// Which of the op's names the call used (see [`Op::arg_name`]).
    pub arg: u8,
}

impl SysError {
    #[inline(always)]
    pub fn new(call: &'static str, arg: u8) -> impl Fn(Errno) -> SysError {
        move |errno| SysError { call, errno, arg }
    }

    /// A raw libc call's status (0 or -1 with errno) as an op's result.
    #[inline(always)]
    pub fn status(call: &'static str, ret: libc::c_int) -> Result<(), SysError> {
        if ret == 0 {
            Ok(())
        } else {
            Err(SysError { call, errno: sys::last_errno(), arg: 0 })
        }
    }
}

/// One workload's per-worker state; `once` is the measured operation.
pub trait Op {
    /// Performs one counted op. Must not allocate, format or lock.
    fn once(&mut self) -> Result<(), SysError>;

    /// The path (relative to the worker's directory) that argument `arg` names.
    fn arg_name(&self, arg: u8) -> &CStr;
}

/// What a worker knows when it sets up its op.
pub struct WorkerEnv<'a> {
    pub workload: Workload,
    pub index: usize,
    pub workers: usize,
    pub share: Share,
    /// The worker's directory: `w<i>` (private) or `shared`.
    pub dir: BorrowedFd<'a>,
    pub dir_label: &'a str,
    /// The run's scratch directory, for commands that need paths.
    pub scratch_path: &'a std::path::Path,
    pub point: &'a PointState,
    /// The prepared tarball and tree, for `untar` and `traverse`.
    pub tree: Option<&'a TreeSource>,
    /// `command`'s templates.
    pub command: Option<&'a CommandSpec>,
    /// The workloads' own options.
    pub options: WorkloadOptions,
}

/// What the workloads' own options say: one value from the command line to
/// every worker, so that a new option is a field here and its uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadOptions {
    /// `stat`, `open-close` and the mdtest phases: the shape of their lookups
    /// (`--files`, `--depth`, `--path`, `--random`).
    pub lookup: crate::vocab::LookupShape,
    /// The mdtest phases: `--items`, `--write-bytes`, `--stonewall`.
    pub mdtest: MdtestOptions,
    /// `append-grow`: bytes each worker appends (`--grow-size`).
    pub grow_bytes: u64,
    /// `fault-shared`, `fault-private`: bytes mapped at once (`--map-size`), a multiple of the page.
    pub map_bytes: u64,
    /// `traverse`: `fstatat` every entry too (`--stat`).
    pub walk_stat: bool,
}

impl Default for WorkloadOptions {
    fn default() -> WorkloadOptions {
        WorkloadOptions {
            lookup: Default::default(),
            mdtest: Default::default(),
            grow_bytes: 0,
            map_bytes: mapping::DEFAULT_MAP_BYTES,
            walk_stat: false,
        }
    }
}

/// What a fixed-work job did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobOutput {
    /// Entries created or visited.
    pub entries: u64,
    pub bytes: u64,
    /// A walk shared through the queue: what this walker did with it.
    pub walk: Option<WalkTally>,
}

/// What a job may ask while it runs.
pub struct JobContext<'a> {
    /// True when the run is being abandoned (a failure elsewhere, or a signal).
    pub stop: &'a dyn Fn() -> bool,
    /// Reports entries done so far (the time series).
    pub progress: &'a dyn Fn(u64),
}

/// A fixed amount of work, timed from the common start to its completion.
pub trait Job {
    /// Untimed work before the start barrier (`command --setup`).
    fn prepare(&mut self, _ctx: &JobContext<'_>) -> anyhow::Result<()> {
        Ok(())
    }

    /// The timed work.
    fn run(&mut self, ctx: &JobContext<'_>) -> anyhow::Result<JobOutput>;

    /// Untimed work after every worker finished (`command --cleanup`).
    fn finish(&mut self, _ctx: &JobContext<'_>) -> anyhow::Result<()> {
        Ok(())
    }
}

impl WorkerEnv<'_> {
    /// The worker's directory as a path.
    pub(crate) fn dir_path(&self) -> std::path::PathBuf {
        self.scratch_path.join(self.dir_label)
    }

    /// The name of this worker's own entry called `base`: `base` in a private
    /// directory, `base<i>` in the shared one, `base` itself at `--share same`.
    pub(crate) fn own_name(&self, base: &str) -> CString {
        match self.share {
            Share::Shared => sys::cname(&format!("{base}{}", self.index)),
            Share::Private | Share::Same => sys::cname(base),
        }
    }

    /// Whether the worker makes its own objects (false at `--share same`,
    /// where the coordinator made the one object everybody uses).
    pub(crate) fn makes_own_objects(&self) -> bool {
        self.share != Share::Same
    }

    /// Turns a setup failure into a message naming the workload and path.
    pub(crate) fn setup_error(&self, call: &str, name: &CStr, errno: Errno) -> anyhow::Error {
        anyhow::anyhow!(
            "setup: {call}(\"{}/{}\") failed: {}",
            self.dir_label,
            name.to_string_lossy(),
            sys::errno_text(errno)
        )
    }

    /// Creates (or truncates) a regular file of `len` bytes, untimed setup.
    pub(crate) fn create_file(&self, name: &CStr, len: u64) -> Result<()> {
        create_file(self.dir, name, len).map_err(|(call, errno)| self.setup_error(call, name, errno))
    }

    pub fn open(&self, name: &CStr, flags: libc::c_int) -> Result<sys::BareFd> {
        sys::open_bare(self.dir, name, flags, 0o600).map_err(|errno| self.setup_error("openat", name, errno))
    }
}

/// Objects the coordinator makes once per run, before the workers start.
#[derive(Default)]
pub struct PointState {
    /// An open file all workers inherit (`dup-close` at `--share same`).
    pub shared_file: Option<OwnedFd>,
    /// The directories a cooperative `traverse` shares (processes or threads; under MPI each rank has one, fed by messages).
    pub walk_queue: Option<WalkQueue>,
}

/// Name of the directory every worker uses at `--share shared|same`.
pub(crate) const SHARED_DIR: &str = "shared";

/// A generic callback over the concrete op type (a closure cannot be generic).
pub trait OpDriver<R> {
    fn drive<O: Op>(self, op: O) -> R;
}

/// Creates or truncates `name` to `len` bytes of a fixed pattern; returns the failing call and errno.
fn create_file(dir: impl AsFd, name: &CStr, len: u64) -> Result<(), (&'static str, Errno)> {
    let fd = sys::open(dir, name, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, 0o600).map_err(|e| ("openat", e))?;
    let block = [0x5au8; DATA_BLOCK];
    let mut offset = 0u64;
    while offset < len {
        let chunk = (len - offset).min(DATA_BLOCK as u64) as usize;
        let written = sys::pwrite(&fd, &block[..chunk], offset).map_err(|e| ("pwrite", e))?;
        if written == 0 {
            return Err(("pwrite", libc::EIO));
        }
        offset += written as u64;
    }
    Ok(())
}

/// The data file's name: `w<i>/f` of a worker's own, `shared/f` of the shared one.
const FILE: &str = "f";

/// The one file `f` (`len` bytes) in the shared directory, and (`same`) an open file
/// description of it for every worker to use: made before they start, so
/// threads share it and forked processes inherit it.
fn prepare_shared_file(share: Share, dir: BorrowedFd<'_>, len: u64) -> Result<Option<OwnedFd>> {
    let name = sys::cname(FILE);
    let fail = |call: &str, e| anyhow::anyhow!("{call}(\"{FILE}\") failed: {}", sys::errno_text(e));
    create_file(dir, &name, len).map_err(|(call, e)| fail(call, e))?;
    if share != Share::Same {
        return Ok(None);
    }
    let fd = sys::open(dir, &name, libc::O_RDWR, 0).map_err(|e| fail("openat", e))?;
    Ok(Some(fd))
}

/// A worker's open data file `f`: its own (made `len` bytes long when
/// private), or at `--share same` the one open file description the
/// coordinator opened for every worker (`PointState::shared_file`).
pub(super) struct WorkerFile<'a> {
    pub name: CString,
    fd: FileFd<'a>,
}

/// A worker's own descriptor of its file, or the coordinator's one.
enum FileFd<'a> {
    Own(sys::BareFd),
    Shared(BorrowedFd<'a>),
}

impl<'a> WorkerFile<'a> {
    pub(super) fn open(env: &WorkerEnv<'a>, flags: libc::c_int, len: u64) -> Result<WorkerFile<'a>> {
        let name = sys::cname(FILE);
        if let (Share::Same, Some(file)) = (env.share, &env.point.shared_file) {
            return Ok(WorkerFile { name, fd: FileFd::Shared(file.as_fd()) });
        }
        if env.share == Share::Private {
            env.create_file(&name, len)?;
        }
        WorkerFile::own(env, name, flags)
    }

    /// The worker's own open file description of `name` (which exists).
    pub(super) fn own(env: &WorkerEnv<'a>, name: CString, flags: libc::c_int) -> Result<WorkerFile<'a>> {
        let fd = env.open(&name, flags)?;
        Ok(WorkerFile { name, fd: FileFd::Own(fd) })
    }
}

impl AsFd for WorkerFile<'_> {
    #[inline(always)]
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.fd {
            FileFd::Own(fd) => fd.as_fd(),
            FileFd::Shared(fd) => fd.as_fd(),
        }
    }
}

/// Refuses a sharing level at setup time too, so a programming error cannot
/// make two workers fight over one name.
fn refuse_same(env: &WorkerEnv<'_>) -> Result<()> {
    if env.share == Share::Same {
        env.workload.check_share(Share::Same)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_faults_calls_and_words_follow_its_mapping_size() {
        let options = |map_bytes| WorkloadOptions { map_bytes, ..Default::default() };
        assert_eq!(WorkloadOptions::default().map_bytes, 128 << 20, "will-it-scale's page_fault2/3");
        let calls = Workload::FaultShared.syscalls_per_op(&options(4 << 20)).unwrap();
        assert_eq!(calls, [("munmap", 1.0 / 1024.0), ("mmap", 1.0 / 1024.0)]);
        let calls = Workload::FaultPrivate.syscalls_per_op(&WorkloadOptions::default()).unwrap();
        assert_eq!(calls, [("munmap", 1.0 / 32768.0), ("mmap", 1.0 / 32768.0)]);
        assert!(Workload::FaultPrivate.op_words(&options(8 << 20)).ends_with("again (--map-size 8 MiB)"));
        assert_eq!(mapping::shared_len(Share::Shared, 3, 8 << 20), 24 << 20);
        assert_eq!(mapping::shared_len(Share::Same, 3, 8 << 20), 8 << 20);
        // Other workloads' words do not mention it.
        assert_eq!(Workload::Stat.op_words(&options(8 << 20)), Workload::Stat.describe().op);
    }

    #[test]
    fn names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(Workload::from_name(w.name()), Some(w));
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, format!("\"{}\"", w.name()));
        }
        assert_eq!(Workload::from_name("nope"), None);
    }

    #[test]
    fn same_is_refused_exactly_where_it_makes_no_sense() {
        let refused: Vec<&str> =
            Workload::ALL.into_iter().filter(|w| w.check_share(Share::Same).is_err()).map(|w| w.name()).collect();
        let mdtest: Vec<&str> = Workload::MDTEST.iter().chain(&Workload::MDTEST_DIRS).map(|w| w.name()).collect();
        let expected: Vec<&str> = [
            "creat-unlink",
            "mkdir-rmdir",
            "rename",
            "rename-dirs",
            "append",
            "append-grow",
            // (fcntl-lock at same is the contended lock: every worker waits for byte 0.)
            "fallocate",
            "truncate",
            "untar",
            "replay",
        ]
        .into_iter()
        .chain(mdtest)
        .collect();
        assert_eq!(refused, expected);
        assert_eq!(Workload::Command.supported_shares(), [Share::Private, Share::Same]);
        assert_eq!(Workload::Replay.supported_shares(), [Share::Private]);
        assert_eq!(Workload::Traverse.supported_shares(), Share::ALL);
        assert_eq!(Workload::Untar.supported_shares(), [Share::Private]);
        let message = Workload::CreatUnlink.check_share(Share::Same).unwrap_err().to_string();
        assert!(message.starts_with("creat-unlink: --share same is not possible ("), "{message}");
        assert!(message.ends_with("use --share private or --share shared"), "{message}");
    }
}
