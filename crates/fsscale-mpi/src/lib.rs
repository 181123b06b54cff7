//! fsscale's cluster transport: [`Comm`] over the system's MPI library
//! (the `mpi` crate). A crate of its own, so that only it and the command
//! line change with the `mpi` feature: the library builds once for both.
//!
//! Every collective is nonblocking and polled, with a growing pause, so a
//! rank waiting for others (for the next run, or while it serves no
//! worker) notices a signal or a stalled rank at any point of the
//! exchange, not only before it, and costs the measured CPUs almost nothing.

use std::time::Duration;

use anyhow::{anyhow, Result};
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use fsscale::cluster::{Comm, Idle};

/// The buffer that buffered sends copy into: far more than the walk's
/// messages in flight at once (a few batches of paths per rank).
const SEND_BUFFER: usize = 32 << 20;

/// The longest pause between two polls of a collective: how late a waiting
/// rank may see that the others arrived (so also the start skew between ranks).
const LONGEST_PAUSE: Duration = Duration::from_millis(2);

/// Memory a nonblocking collective reads or writes until it completes.
/// Leaked while lent, so that a request abandoned (a signal, a stalled
/// rank: MPI requests cannot be cancelled) never has it freed under it;
/// taken back once the request completed.
struct Lent<T: ?Sized>(*mut T);

impl<T: ?Sized> Lent<T> {
    fn new(value: Box<T>) -> Lent<T> {
        Lent(Box::into_raw(value))
    }

    /// The memory, for one request.
    ///
    /// # Safety
    /// At most one reference from here may be alive at a time.
    unsafe fn lend(&self) -> &'static mut T {
        // SAFETY: the pointer came from Box::into_raw and is freed only by `take_back`.
        unsafe { &mut *self.0 }
    }

    /// # Safety
    /// The request it was lent to has completed.
    unsafe fn take_back(self) -> Box<T> {
        // SAFETY: from Box::into_raw, and no request refers to it any more.
        unsafe { Box::from_raw(self.0) }
    }
}

/// The world communicator of the job this process is a rank of.
pub struct Mpi {
    universe: Universe,
    world: SimpleCommunicator,
}

impl Mpi {
    /// `MPI_Init_thread`: only the main thread calls MPI; the workers are threads that never do.
    pub fn init() -> Result<Mpi> {
        let (mut universe, _) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| anyhow!("MPI was initialised twice (internal error)"))?;
        universe.set_buffer_size(SEND_BUFFER);
        let world = universe.world();
        Ok(Mpi { universe, world })
    }

    /// Polls `request` until it completes, or `idle` fails (then the
    /// request is abandoned with its memory: the process leaves without finalising).
    fn wait<D: ?Sized>(mut request: Request<'static, D, StaticScope>, idle: Idle<'_>) -> Result<()> {
        let mut pause = Duration::from_micros(20);
        loop {
            match request.test() {
                Ok(_) => return Ok(()),
                Err(pending) => request = pending,
            }
            if let Err(e) = idle() {
                std::mem::forget(request);
                return Err(e);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }

    /// Every rank's message length.
    fn lengths(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<i32>> {
        let sent = Lent::new(Box::new(count(mine)?));
        let counts = Lent::new(vec![0i32; self.size()].into_boxed_slice());
        // SAFETY: each is lent to this one request, and taken back only once it completed.
        unsafe {
            Self::wait(self.world.immediate_all_gather_into(StaticScope, sent.lend(), counts.lend()), idle)?;
            drop(sent.take_back());
            Ok(counts.take_back().into_vec())
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

/// A receive buffer for `counts` bytes from each rank, partitioned as MPI's variable-count collectives want it.
type Partition = PartitionMut<'static, [u8], Vec<i32>, Vec<i32>>;

impl Comm for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_gather(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<Vec<u8>>> {
        let counts = self.lengths(mine, &mut *idle)?;
        let displs = Self::displacements(&counts);
        let total = counts.iter().map(|&n| n as usize).sum();
        let sent = Lent::new(mine.to_vec().into_boxed_slice());
        let buffer = Lent::new(vec![0u8; total].into_boxed_slice());
        // SAFETY: each is lent to one request (the partition holds the
        // buffer's only reference), and taken back only once it completed.
        unsafe {
            let partition: Lent<Partition> =
                Lent::new(Box::new(PartitionMut::new(buffer.lend(), counts.clone(), displs)));
            let request = self.world.immediate_all_gather_varcount_into(StaticScope, sent.lend(), partition.lend());
            Self::wait(request, idle)?;
            drop(partition.take_back());
            drop(sent.take_back());
            Ok(Self::split(&buffer.take_back(), &counts))
        }
    }

    fn gather(&self, mine: &[u8], idle: Idle<'_>) -> Result<Vec<Vec<u8>>> {
        // Every rank learns every length: the root needs them, and the others lose nothing by it.
        let counts = self.lengths(mine, &mut *idle)?;
        let root = self.world.process_at_rank(0);
        let sent = Lent::new(mine.to_vec().into_boxed_slice());
        if self.rank() != 0 {
            // SAFETY: lent to this one request, taken back once it completed.
            unsafe {
                Self::wait(root.immediate_gather_varcount_into(StaticScope, sent.lend()), idle)?;
                drop(sent.take_back());
            }
            return Ok(Vec::new());
        }
        let displs = Self::displacements(&counts);
        let total = counts.iter().map(|&n| n as usize).sum();
        let buffer = Lent::new(vec![0u8; total].into_boxed_slice());
        // SAFETY: as in `all_gather`.
        unsafe {
            let partition: Lent<Partition> =
                Lent::new(Box::new(PartitionMut::new(buffer.lend(), counts.clone(), displs)));
            let request = root.immediate_gather_varcount_into_root(StaticScope, sent.lend(), partition.lend());
            Self::wait(request, idle)?;
            drop(partition.take_back());
            drop(sent.take_back());
            Ok(Self::split(&buffer.take_back(), &counts))
        }
    }

    fn broadcast(&self, data: &[u8], idle: Idle<'_>) -> Result<Vec<u8>> {
        let root = self.world.process_at_rank(0);
        let length = Lent::new(Box::new(if self.rank() == 0 { count(data)? } else { 0 }));
        // SAFETY: each is lent to one request, taken back once it completed.
        unsafe {
            Self::wait(root.immediate_broadcast_into(StaticScope, length.lend()), &mut *idle)?;
            let length = *length.take_back();
            let buffer =
                Lent::new(if self.rank() == 0 { data.into() } else { vec![0u8; length as usize].into_boxed_slice() });
            Self::wait(root.immediate_broadcast_into(StaticScope, buffer.lend()), idle)?;
            Ok(buffer.take_back().into_vec())
        }
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
