//! [`Comm`] over the system's MPI library (the `mpi` crate).
//!
//! Every collective starts with a nonblocking barrier that is polled, with
//! a growing pause, so a rank waiting for others (for the next run, or
//! while it serves no worker) notices a signal and costs the measured CPUs
//! almost nothing. Past the barrier every rank is present and the blocking
//! collectives that move the data return at once.

use std::time::Duration;

use anyhow::{anyhow, Result};
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use super::{Comm, Idle};

/// The buffer that buffered sends copy into: far more than the walk's
/// messages in flight at once (a few batches of paths per rank).
const SEND_BUFFER: usize = 32 << 20;

/// The longest pause between two polls of a barrier: how late a waiting
/// rank may see that the others arrived (so also the start skew between ranks).
const LONGEST_PAUSE: Duration = Duration::from_millis(2);

pub(super) struct Mpi {
    universe: Universe,
    world: SimpleCommunicator,
}

impl Mpi {
    /// `MPI_Init_thread`: only the main thread calls MPI; the workers are threads that never do.
    pub(super) fn init() -> Result<Mpi> {
        let (mut universe, _) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| anyhow!("MPI was initialised twice (internal error)"))?;
        universe.set_buffer_size(SEND_BUFFER);
        let world = universe.world();
        Ok(Mpi { universe, world })
    }

    fn barrier(&self, idle: Idle<'_>) -> Result<()> {
        let mut request = self.world.immediate_barrier();
        let mut pause = Duration::from_micros(20);
        loop {
            match request.test() {
                Ok(_) => return Ok(()),
                Err(pending) => request = pending,
            }
            if let Err(e) = idle() {
                // An MPI barrier cannot be cancelled; the process leaves without finalising.
                std::mem::forget(request);
                return Err(e);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }

    fn displacements(counts: &[i32]) -> Vec<i32> {
        counts.iter().scan(0, |at, n| Some(std::mem::replace(at, *at + n))).collect()
    }

    fn split(buffer: &[u8], counts: &[i32]) -> Vec<Vec<u8>> {
        let mut at = 0;
        counts
            .iter()
            .map(|&n| {
                let part = buffer[at..at + n as usize].to_vec();
                at += n as usize;
                part
            })
            .collect()
    }
}

fn count(bytes: &[u8]) -> Result<i32> {
    i32::try_from(bytes.len()).map_err(|_| anyhow!("a message of {} bytes is too large for MPI", bytes.len()))
}

impl Comm for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_gather(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<Vec<u8>>> {
        self.barrier(idle)?;
        let mut counts = vec![0i32; self.size()];
        self.world.all_gather_into(&count(mine)?, &mut counts[..]);
        let displs = Self::displacements(&counts);
        let mut buffer = vec![0u8; counts.iter().map(|&n| n as usize).sum()];
        {
            let mut partition = PartitionMut::new(&mut buffer[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(mine, &mut partition);
        }
        Ok(Self::split(&buffer, &counts))
    }

    fn gather(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<Vec<u8>>> {
        self.barrier(idle)?;
        let root = self.world.process_at_rank(0);
        if self.rank() != 0 {
            root.gather_into(&count(mine)?);
            root.gather_varcount_into(mine);
            return Ok(Vec::new());
        }
        let mut counts = vec![0i32; self.size()];
        root.gather_into_root(&count(mine)?, &mut counts[..]);
        let displs = Self::displacements(&counts);
        let mut buffer = vec![0u8; counts.iter().map(|&n| n as usize).sum()];
        {
            let mut partition = PartitionMut::new(&mut buffer[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(mine, &mut partition);
        }
        Ok(Self::split(&buffer, &counts))
    }

    fn broadcast(&self, data: &[u8], idle: Idle<'_>) -> Result<Vec<u8>> {
        self.barrier(idle)?;
        let root = self.world.process_at_rank(0);
        let mut length = if self.rank() == 0 { count(data)? } else { 0 };
        root.broadcast_into(&mut length);
        let mut buffer = if self.rank() == 0 { data.to_vec() } else { vec![0u8; length as usize] };
        root.broadcast_into(&mut buffer[..]);
        Ok(buffer)
    }

    fn send(&self, to: usize, tag: u16, bytes: &[u8]) -> Result<()> {
        count(bytes)?;
        self.world.process_at_rank(to as i32).buffered_send_with_tag(bytes, tag as i32);
        Ok(())
    }

    fn receive(&self, tag: u16) -> Option<(usize, Vec<u8>)> {
        let probed = self.world.any_process().immediate_matched_probe_with_tag(tag as i32)?;
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        Some((status.source_rank() as usize, bytes))
    }

    fn library(&self) -> String {
        let text = mpi::environment::library_version().unwrap_or_default();
        let (major, minor) = mpi::environment::version();
        let first = text.lines().next().unwrap_or("unknown MPI library").trim().trim_end_matches(',');
        format!("{first} (MPI {major}.{minor})")
    }

    fn host(&self) -> String {
        mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into())
    }

    fn finalize(self: Box<Self>) {
        drop(self.world);
        drop(self.universe);
    }

    fn abandon(self: Box<Self>) {
        std::mem::forget(self.universe);
    }
}
