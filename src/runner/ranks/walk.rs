//! `traverse --share shared` over ranks: the cooperative walk's directories
//! move between ranks as MPI messages.
//!
//! Each rank's worker walks from its own [`WalkQueue`], as on one machine;
//! the rank's coordinator thread is its agent and tends the queue while the
//! job runs. The rank serving worker 0 is the hub (it starts with the
//! tree's top): an idle rank (nothing pending) sends the hub a request and
//! stays idle until work comes; the hub answers from a pool that busy ranks
//! fill when it tells them someone is hungry (half of their queued
//! directories), or from its own queue. Every message from a rank to the hub
//! goes in order (MPI does not overtake), so when every other rank has a
//! request open, the pool is empty and the hub itself is idle, nothing is
//! pending anywhere and no directory is in flight: the hub tells everyone
//! the walk is done. A rank that fails tells the hub, which tells the rest.

use std::collections::VecDeque;
use std::ffi::CString;

use anyhow::{anyhow, Result};

use crate::cluster::Cluster;
use crate::workloads::WalkQueue;

/// The tags of the walk's messages: one per run (a failed run's stray
/// messages never match a later run's), clear of any the collectives use.
pub(super) fn tag(serial: u32) -> u16 {
    100 + (serial % 30_000) as u16
}

/// Paths per message at most, and their bytes: batches stay small enough
/// for MPI's buffered sends and eager protocol.
const BATCH: usize = 64;
const BATCH_BYTES: usize = 48 << 10;

enum Message {
    /// An idle rank asks the hub for work.
    Request,
    /// The hub asks a busy rank for some of its queued directories.
    Hungry,
    /// Directories: from the hub to a requester, or from a busy rank to the hub.
    Work(Vec<CString>),
    /// The walk is over everywhere.
    Done,
    /// A rank failed: the walk ends with an error everywhere.
    Abort,
}

impl Message {
    fn encode(&self) -> Vec<u8> {
        match self {
            Message::Request => b"R".to_vec(),
            Message::Hungry => b"H".to_vec(),
            Message::Done => b"D".to_vec(),
            Message::Abort => b"A".to_vec(),
            Message::Work(paths) => {
                let mut bytes = b"W".to_vec();
                for path in paths {
                    bytes.extend_from_slice(path.as_bytes_with_nul());
                }
                bytes
            }
        }
    }

    fn decode(bytes: &[u8]) -> Result<Message> {
        Ok(match bytes.first() {
            Some(b'R') => Message::Request,
            Some(b'H') => Message::Hungry,
            Some(b'D') => Message::Done,
            Some(b'A') => Message::Abort,
            Some(b'W') => Message::Work(
                bytes[1..]
                    .split(|&b| b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| CString::new(p).expect("split at NUL"))
                    .collect(),
            ),
            _ => return Err(anyhow!("the cooperative walk got a message it does not know (internal error)")),
        })
    }
}

/// One rank's agent in the walk.
pub(super) struct WalkAgent<'a> {
    cluster: &'a Cluster,
    tag: u16,
    queue: &'a WalkQueue,
    /// The ranks walking; `ranks[0]` is the hub.
    ranks: Vec<usize>,
    /// This rank asked the hub for work and has had none since.
    requested: bool,
    /// The hub asked this rank for directories.
    hungry: bool,
    /// Work that came while the queue's arena was full (never, in practice).
    overflow: Vec<CString>,
    finished: bool,
    hub: Option<Hub>,
}

/// The hub's own state.
#[derive(Default)]
struct Hub {
    pool: Vec<CString>,
    /// Ranks with a request open, oldest first.
    waiting: VecDeque<usize>,
    /// Busy ranks were asked for work since the pool last ran dry.
    asked: bool,
}

impl<'a> WalkAgent<'a> {
    /// The agent of this rank, one of `ranks` (the hub is `ranks[0]`).
    pub(super) fn new(cluster: &'a Cluster, queue: &'a WalkQueue, ranks: &[usize], tag: u16) -> WalkAgent<'a> {
        queue.cooperate();
        let is_hub = ranks.first() == Some(&cluster.rank());
        WalkAgent {
            cluster,
            tag,
            queue,
            ranks: ranks.to_vec(),
            requested: false,
            hungry: false,
            overflow: Vec::new(),
            finished: false,
            hub: is_hub.then(Hub::default),
        }
    }

    fn send(&self, to: usize, message: &Message) -> Result<()> {
        self.cluster.send(to, self.tag, &message.encode())
    }

    /// Handles what arrived and does what is due; called often while the job runs.
    pub(super) fn tend(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        while let Some((from, bytes)) = self.cluster.receive(self.tag) {
            match Message::decode(&bytes)? {
                Message::Abort => {
                    // The hub passes it on to everyone else; a member just stops.
                    if self.hub.is_some() {
                        self.abort()?;
                    }
                    self.finish()?;
                    return Err(anyhow!("rank {from} failed during the cooperative walk"));
                }
                Message::Done => return self.finish(),
                Message::Hungry => self.hungry = true,
                Message::Request => self.hub_mut()?.waiting.push_back(from),
                Message::Work(paths) => match &mut self.hub {
                    // A donation.
                    Some(hub) => hub.pool.extend(paths),
                    None => {
                        self.requested = false;
                        self.queue.found(paths.len());
                        self.overflow.extend(paths);
                    }
                },
            }
        }
        self.overflow.retain(|path| !self.queue.push(path));
        match self.hub.is_some() {
            true => self.tend_hub(),
            false => self.tend_member(),
        }
    }

    fn hub_mut(&mut self) -> Result<&mut Hub> {
        self.hub.as_mut().ok_or_else(|| anyhow!("a walk request reached a rank that is not the hub (internal error)"))
    }

    fn tend_member(&mut self) -> Result<()> {
        let hub = self.ranks[0];
        if self.hungry {
            let batch = self.take_queued(self.queue.len() / 2);
            if !batch.is_empty() {
                self.hungry = false;
                self.send(hub, &Message::Work(batch))?;
            }
        }
        if !self.requested && self.queue.idle() && self.overflow.is_empty() {
            self.requested = true;
            self.send(hub, &Message::Request)?;
        }
        Ok(())
    }

    fn tend_hub(&mut self) -> Result<()> {
        let mut hub = self.hub.take().unwrap_or_default();
        let outcome = self.serve_requests(&mut hub);
        self.hub = Some(hub);
        outcome
    }

    fn serve_requests(&mut self, hub: &mut Hub) -> Result<()> {
        if !hub.waiting.is_empty() && hub.pool.is_empty() {
            // The hub's own queue first; its worker keeps what it holds privately.
            hub.pool = self.take_queued(self.queue.len() / 2);
        }
        while let (Some(&to), false) = (hub.waiting.front(), hub.pool.is_empty()) {
            let share = hub.pool.len().div_ceil(hub.waiting.len()).min(BATCH);
            let batch = take_batch(|| hub.pool.pop(), share);
            hub.waiting.pop_front();
            self.send(to, &Message::Work(batch))?;
        }
        if hub.waiting.is_empty() {
            hub.asked = false;
        } else if !hub.asked {
            hub.asked = true;
            for &rank in self.ranks[1..].iter().filter(|r| !hub.waiting.contains(r)) {
                self.send(rank, &Message::Hungry)?;
            }
        }
        let everyone_idle = hub.waiting.len() == self.ranks.len() - 1;
        if everyone_idle && hub.pool.is_empty() && self.queue.idle() && self.overflow.is_empty() {
            for &rank in &self.ranks[1..] {
                self.send(rank, &Message::Done)?;
            }
            hub.waiting.clear();
            return self.finish();
        }
        Ok(())
    }

    /// Up to `n` directories from the queue, no longer pending here.
    fn take_queued(&self, n: usize) -> Vec<CString> {
        let batch = take_batch(|| self.queue.pop(), n.min(BATCH));
        self.queue.handed_off(batch.len());
        batch
    }

    fn finish(&mut self) -> Result<()> {
        self.finished = true;
        self.queue.finish();
        Ok(())
    }

    /// This rank failed, or heard that one did: the others must not wait for it.
    pub(super) fn abort(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.queue.finish();
        match self.hub.is_some() {
            true => self.ranks[1..].iter().try_for_each(|&r| self.send(r, &Message::Abort)),
            false => self.send(self.ranks[0], &Message::Abort),
        }
    }
}

/// Up to `n` paths from `next`, within the batch's bytes.
fn take_batch(mut next: impl FnMut() -> Option<CString>, n: usize) -> Vec<CString> {
    let mut batch = Vec::new();
    let mut bytes = 0;
    while batch.len() < n && bytes < BATCH_BYTES {
        let Some(path) = next() else { break };
        bytes += path.as_bytes().len() + 1;
        batch.push(path);
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let paths = vec![CString::new("./a").unwrap(), CString::new("./b/c d").unwrap()];
        match Message::decode(&Message::Work(paths.clone()).encode()).unwrap() {
            Message::Work(back) => assert_eq!(back, paths),
            _ => panic!("not work"),
        }
        assert!(matches!(Message::decode(&Message::Request.encode()).unwrap(), Message::Request));
        assert!(
            matches!(Message::decode(&Message::Work(Vec::new()).encode()).unwrap(), Message::Work(p) if p.is_empty())
        );
        assert!(Message::decode(b"?").is_err());
    }
}
