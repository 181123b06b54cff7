//! How a workload's workers work, said once for every workload: a loop's
//! op driven by the runner's generic hot loop, a fixed-work job, or replay.

use anyhow::Result;

use super::{
    command, data, fdtable, fileops, grow, mapping, mdtest, metadata, readdir, traverse, untar, Job, Lookups, OpDriver,
    WorkerEnv, Workload,
};

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
        Workload::MdtestCreate
        | Workload::MdtestStat
        | Workload::MdtestRead
        | Workload::MdtestRemove
        | Workload::MdtestDirCreate
        | Workload::MdtestDirStat
        | Workload::MdtestDirRemove => job(mdtest::Mdtest::setup(env)?),
        Workload::Replay => Started::Replay,
    })
}

impl Workload {
    /// The op's words for a point: the catalogue's, with the shape of its
    /// lookups when that is not the one hot name.
    pub fn op_words(self, lookup: &crate::vocab::LookupShape) -> String {
        let op = self.describe().op;
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
