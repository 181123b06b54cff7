//! `traverse --share shared` over ranks: the cooperative walk's directories
//! move between ranks as MPI messages, with no hub.
//!
//! Each rank's worker walks from its own [`WalkQueue`], as on one machine;
//! the rank's coordinator thread is its agent and tends the queue while the
//! job runs. The rank serving worker 0 starts with the tree's top; from then
//! on the ranks share the walk by [`crate::cluster::steal`]: an idle rank
//! asks a rank drawn at random for directories and gets half of its queue,
//! and the end is found by Dijkstra and Safra's token ring, so no rank
//! answers for the others. A rank that fails tells every other.
use std::ffi::CString;

use anyhow::{anyhow, Result};

use crate::cluster::steal::{Local, Message, Stealer, Traffic};
use crate::cluster::Cluster;
use crate::workloads::{WalkQueue, WalkTally, FROM_ANOTHER_RANK};

/// The tags of the walk's messages: one per run (a failed run's stray
/// messages never match a later run's), clear of any the collectives use.
pub(super) fn tag(serial: u32) -> u16 {
    100 + (serial % 30_000) as u16
}

/// Paths per message at most, and their bytes: batches stay small enough
/// for MPI's buffered sends and eager protocol.
const BATCH: usize = crate::cluster::steal::BATCH;
const BATCH_BYTES: usize = 48 << 10;

fn encode(message: &Message<CString>) -> Vec<u8> {
    match message {
        Message::Request => b"R".to_vec(),
        Message::NoWork => b"N".to_vec(),
        Message::Done => b"D".to_vec(),
        Message::Abort => b"A".to_vec(),
        Message::Token { black, count } => {
            let mut bytes = vec![b'T', u8::from(*black)];
            bytes.extend_from_slice(&count.to_le_bytes());
            bytes
        }
        Message::Work(paths) => {
            let mut bytes = b"W".to_vec();
            for path in paths {
                bytes.extend_from_slice(path.as_bytes_with_nul());
            }
            bytes
        }
    }
}

fn decode(bytes: &[u8]) -> Result<Message<CString>> {
    let unknown = || anyhow!("the cooperative walk got a message it does not know (internal error)");
    Ok(match bytes.first() {
        Some(b'R') => Message::Request,
        Some(b'N') => Message::NoWork,
        Some(b'D') => Message::Done,
        Some(b'A') => Message::Abort,
        Some(b'T') if bytes.len() == 10 => Message::Token {
            black: bytes[1] != 0,
            count: i64::from_le_bytes(bytes[2..10].try_into().map_err(|_| unknown())?),
        },
        Some(b'W') => Message::Work(
            bytes[1..]
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| CString::new(p).expect("split at NUL"))
                .collect(),
        ),
        _ => return Err(unknown()),
    })
}

/// One rank's agent in the walk.
pub(super) struct WalkAgent<'a> {
    cluster: &'a Cluster,
    tag: u16,
    queue: &'a WalkQueue,
    /// The ranks walking, by their place in the stealing (the first starts with the top).
    ranks: Vec<usize>,
    stealer: Stealer,
    /// Work that came while the queue's arena was full (never, in practice).
    overflow: Vec<CString>,
    finished: bool,
    started: std::time::Instant,
}

/// This rank's work as the stealing sees it: the walk queue.
struct Queue<'q> {
    queue: &'q WalkQueue,
    overflow: &'q mut Vec<CString>,
}

impl Local<CString> for Queue<'_> {
    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn take(&mut self, n: usize) -> Vec<CString> {
        // The agent is no walker: what it does to the queue is not a walker's tally.
        let batch = take_batch(|| self.queue.pop(&mut WalkTally::default()).map(|(path, _)| path), n.min(BATCH));
        self.queue.handed_off(batch.len());
        batch
    }

    fn give(&mut self, items: Vec<CString>) {
        self.queue.found(items.len());
        self.overflow.extend(items);
        self.overflow.retain(|path| !self.queue.push(path, FROM_ANOTHER_RANK, &mut WalkTally::default()));
    }

    fn idle(&self) -> bool {
        self.queue.idle() && self.overflow.is_empty()
    }
}

impl<'a> WalkAgent<'a> {
    /// The agent of this rank, one of `ranks` (the first starts with the top).
    pub(super) fn new(cluster: &'a Cluster, queue: &'a WalkQueue, ranks: &[usize], tag: u16) -> WalkAgent<'a> {
        queue.cooperate();
        let me = ranks.iter().position(|&r| r == cluster.rank()).unwrap_or(0);
        WalkAgent {
            cluster,
            tag,
            queue,
            ranks: ranks.to_vec(),
            stealer: Stealer::new(me, ranks.len(), u64::from(tag)),
            overflow: Vec::new(),
            finished: false,
            started: std::time::Instant::now(),
        }
    }

    /// The messages this rank sent and received in the walk.
    pub(super) fn traffic(&self) -> Traffic {
        self.stealer.traffic()
    }

    fn send_all(&self, out: Vec<(usize, Message<CString>)>) -> Result<()> {
        out.iter().try_for_each(|(to, message)| self.cluster.send(self.ranks[*to], self.tag, &encode(message)))
    }

    /// Handles what arrived and does what is due; called often while the job runs.
    pub(super) fn tend(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        // Ticks of a millisecond: a refused rank waits 1, 2, 4, ... 32 ms before asking again.
        let now = self.started.elapsed().as_millis() as u64;
        let mut out = Vec::new();
        let mut local = Queue { queue: self.queue, overflow: &mut self.overflow };
        while let Some((from, bytes)) = self.cluster.receive(self.tag) {
            let message = decode(&bytes)?;
            let Some(index) = self.ranks.iter().position(|&r| r == from) else { continue };
            if let Err(failed) = self.stealer.receive(index, message, now, &mut local, &mut out) {
                self.finish();
                return Err(anyhow!("rank {} failed during the cooperative walk", self.ranks[failed]));
            }
        }
        local.overflow.retain(|path| !local.queue.push(path, FROM_ANOTHER_RANK, &mut WalkTally::default()));
        self.stealer.tick(now, &mut local, &mut out);
        self.send_all(out)?;
        if self.stealer.finished() {
            self.finish();
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.finished = true;
        self.queue.finish();
    }

    /// This rank failed, or heard that one did: the others must not wait for it.
    pub(super) fn abort(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finish();
        let mut out = Vec::new();
        self.stealer.abort(&mut out);
        self.send_all(out)
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
        for message in [
            Message::Work(paths),
            Message::Work(Vec::new()),
            Message::Request,
            Message::NoWork,
            Message::Done,
            Message::Abort,
            Message::Token { black: true, count: -3 },
            Message::Token { black: false, count: i64::MAX },
        ] {
            assert_eq!(decode(&encode(&message)).unwrap(), message);
        }
        assert!(decode(b"?").is_err());
        assert!(decode(b"T\x01").is_err(), "a token cut short");
    }
}
