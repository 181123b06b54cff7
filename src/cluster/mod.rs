//! Many clients: the ranks of an MPI job (`mpirun -np R fsscale run ...`),
//! each one worker process, on one node or many.
//!
//! [`Comm`] is all the runner asks of MPI: gather to every rank or to rank
//! 0, and broadcast from rank 0, each waiting in a way a signal can end. The
//! binding to a real MPI library is a crate of its own (`fsscale-mpi`), which
//! the command line passes to [`from_launcher`] when built with its `mpi`
//! feature; without it, or when no MPI launcher started the process, there
//! is no cluster and fsscale is a one-machine tool.

pub mod steal;

use anyhow::{anyhow, bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use crate::results::cluster::{ClusterInfo, Placement};

/// Called while a collective waits; an error (a signal came) ends the wait.
pub type Idle<'a> = &'a mut dyn FnMut() -> Result<()>;

/// The collectives the runner uses, over any transport.
pub trait Comm {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Every rank's bytes, in rank order, on every rank.
    fn all_gather(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<Vec<u8>>>;
    /// Every rank's bytes on rank 0, in rank order; an empty list elsewhere.
    fn gather(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<Vec<u8>>>;
    /// Rank 0's `data` on every rank (what others pass is ignored).
    fn broadcast(&self, data: &[u8], idle: Idle<'_>) -> Result<Vec<u8>>;
    /// Sends `bytes` to rank `to` without waiting for it to receive them
    /// (buffered: the cooperative walk's messages, a few kilobytes each).
    fn send(&self, to: usize, tag: u16, bytes: &[u8]) -> Result<()>;
    /// A message with `tag` that has arrived from any rank, and its sender.
    fn receive(&self, tag: u16) -> Option<(usize, Vec<u8>)>;
    /// The library's name and version.
    fn library(&self) -> String;
    /// This rank's node, as the library names it.
    fn host(&self) -> String;
    /// Ends MPI as every rank does at the same point.
    fn finalize(self: Box<Self>);
    /// Leaves without MPI's goodbye, which would wait for ranks that are gone
    /// or interrupted; the launcher ends the rest.
    fn abandon(self: Box<Self>);
}

/// The job as the runner sees it: the transport and every rank's host.
pub struct Cluster {
    comm: Box<dyn Comm>,
    hosts: Vec<String>,
    placement: Placement,
}

impl Cluster {
    /// Learns every rank's host (a collective: every rank calls it).
    pub fn new(comm: Box<dyn Comm>, placement: Placement) -> Result<Cluster> {
        let mut no_wait = || Ok(());
        let hosts = comm
            .all_gather(comm.host().as_bytes(), &mut no_wait)?
            .into_iter()
            .map(|h| String::from_utf8_lossy(&h).into_owned())
            .collect();
        Ok(Cluster { comm, hosts, placement })
    }

    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    pub fn size(&self) -> usize {
        self.comm.size()
    }

    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// Rank `rank`'s host.
    pub fn host(&self, rank: usize) -> &str {
        &self.hosts[rank]
    }

    /// The ranks serving a point of `workers` workers: worker i is rank `[i]`.
    pub(crate) fn ranks_for(&self, workers: usize) -> Vec<usize> {
        let mut order = self.placement.order(&self.hosts);
        order.truncate(workers);
        order
    }

    /// This rank's position among its node's ranks (for `--pin`).
    pub(crate) fn local_index(&self) -> usize {
        let me = self.rank();
        self.hosts[..me].iter().filter(|h| **h == self.hosts[me]).count()
    }

    /// What the results record of the job.
    pub(crate) fn info(&self) -> ClusterInfo {
        ClusterInfo {
            library: self.comm.library(),
            ranks: self.size(),
            hosts: self.hosts.clone(),
            placement: self.placement,
        }
    }

    /// Sends `bytes` to `to` at once; see [`Comm::send`].
    pub(crate) fn send(&self, to: usize, tag: u16, bytes: &[u8]) -> Result<()> {
        self.comm.send(to, tag, bytes)
    }

    /// A message with `tag` from anyone, if one has arrived.
    pub(crate) fn receive(&self, tag: u16) -> Option<(usize, Vec<u8>)> {
        self.comm.receive(tag)
    }

    /// Every rank's `value`, in rank order, on every rank.
    pub(crate) fn exchange<T: Serialize + DeserializeOwned>(&self, value: &T, idle: Idle<'_>) -> Result<Vec<T>> {
        let bytes = serde_json::to_vec(value).context("encoding a message to the other ranks")?;
        self.comm.all_gather(&bytes, idle)?.iter().map(|b| decode(b)).collect()
    }

    /// Every rank's `value` on rank 0 (`None` elsewhere).
    pub(crate) fn gather<T: Serialize + DeserializeOwned>(&self, value: &T, idle: Idle<'_>) -> Result<Option<Vec<T>>> {
        let bytes = serde_json::to_vec(value).context("encoding a message to rank 0")?;
        let all = self.comm.gather(&bytes, idle)?;
        if !self.is_root() {
            return Ok(None);
        }
        all.iter().map(|b| decode(b)).collect::<Result<_>>().map(Some)
    }

    /// Rank 0's `value` on every rank (`None` is what the others pass).
    pub(crate) fn broadcast<T: Serialize + DeserializeOwned>(&self, value: Option<&T>, idle: Idle<'_>) -> Result<T> {
        let bytes = match value {
            Some(v) => serde_json::to_vec(v).context("encoding a message to the other ranks")?,
            None => Vec::new(),
        };
        decode(&self.comm.broadcast(&bytes, idle)?)
    }

    pub(crate) fn finalize(self) {
        self.comm.finalize();
    }

    pub(crate) fn abandon(self) {
        self.comm.abandon();
    }
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes)
        .map_err(|e| anyhow!("a message between ranks did not decode ({e}); do all ranks run the same fsscale?"))
}

/// The environment variables by which MPI launchers tell a process its job's size.
const LAUNCHER_SIZE_VARS: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"];

/// The job's size when an MPI launcher (mpirun, mpiexec, srun) started this process.
fn launched_ranks() -> Option<(&'static str, usize)> {
    LAUNCHER_SIZE_VARS.iter().find_map(|var| Some((*var, std::env::var(var).ok()?.trim().parse().ok()?)))
}

/// Starts the transport of a job (`MPI_Init`), when the binary has one.
pub type Connect = fn() -> Result<Box<dyn Comm>>;

/// The job this process is a rank of, when an MPI launcher started it; `None`
/// when none did (a run on one machine, as without MPI). `connect` is the
/// binary's MPI transport, `None` in a binary built without one.
pub fn from_launcher(placement: Placement, connect: Option<Connect>) -> Result<Option<Cluster>> {
    let Some((var, ranks)) = launched_ranks() else { return Ok(None) };
    match connect {
        Some(connect) => Cluster::new(connect()?, placement).map(Some),
        None => {
            refuse_without_mpi(var, ranks)?;
            Ok(None)
        }
    }
}

/// A binary built without MPI that a launcher started as one of several
/// ranks refuses: every rank would run the whole sweep on its own.
fn refuse_without_mpi(var: &str, ranks: usize) -> Result<()> {
    if ranks > 1 {
        bail!(
            "an MPI launcher started this fsscale as one of {ranks} ranks ({var}={ranks}), but it was built \
             without MPI, so every rank would run the whole sweep on its own: build it with \
             `cargo build --release --features mpi`"
        );
    }
    Ok(())
}

/// Refuses what cannot run with ranks as workers, with the reason.
pub(crate) fn check_refusals(
    modes_threads: bool,
    makes_filesystems: bool,
    ranks: usize,
    max_workers: usize,
) -> Result<()> {
    if modes_threads {
        bail!(
            "--mode thread: under MPI every worker is a rank, a process of its own; use --mode process (the default)"
        );
    }
    if makes_filesystems {
        bail!(
            "--fs: under MPI the ranks must share one filesystem, and a filesystem made by rank 0 is local to its \
             node; make and mount it first, then pass its directory as --dir"
        );
    }
    if max_workers > ranks {
        bail!("-j {max_workers}: the job has {ranks} ranks, one per worker; start it with `mpirun -np {max_workers}` or use -j up to {ranks}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_mpi_refuses_to_be_one_of_many_ranks() {
        // Checked in every build (CI's has the feature); the real binary's refusal is tested without it.
        let refused = refuse_without_mpi("OMPI_COMM_WORLD_SIZE", 4).unwrap_err().to_string();
        assert!(refused.contains("one of 4 ranks (OMPI_COMM_WORLD_SIZE=4), but it was built without MPI"), "{refused}");
        assert!(refused.contains("--features mpi"), "{refused}");
        assert!(refuse_without_mpi("PMI_SIZE", 1).is_ok(), "a job of one rank is a run on one machine");
    }
}
