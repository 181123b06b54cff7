//! Work shared among ranks with no hub: distributed work stealing, as
//! libcircle (which mpifileutils' dwalk uses) does it, and termination
//! detected without a central pool by Dijkstra and Safra's token ring.
//!
//! - **Stealing.** A rank with nothing to do asks a rank drawn at random
//!   for work; that rank answers with half of what it has queued (at most
//!   [`BATCH`] items), or with a refusal, after which the asker waits a
//!   little longer each time (1, 2, 4, ... up to [`MAX_BACKOFF`] ticks)
//!   before asking another. No rank is asked more than the others on average.
//! - **Termination** (Dijkstra, "Shmuel Safra's version of termination
//!   detection", EWD998, 1987). Each rank counts the work messages it sent
//!   minus those it received, and turns black when it receives one. Rank 0
//!   sends a token around the ring 0 → 1 → … → n−1 → 0; a rank passes it
//!   on only while it has nothing to do, adding its count, blackening the
//!   token if it is black itself, and turning white. When the token comes
//!   back white to a white, idle rank 0 and the counts sum to zero, no work
//!   is anywhere, in hand or in flight: rank 0 sends `Done` around the
//!   ring. Each round costs every rank one message.
//! - **Failure.** A rank that fails sends `Abort` to every other rank.
//!
//! The state machine is pure: [`Stealer::receive`] and [`Stealer::tick`]
//! take the rank's [`Local`] work and return the messages to send, so the
//! same logic runs over MPI (`runner::ranks::walk`) and, in the tests, over
//! a simulated network of 1,024 ranks.

use crate::stats::random::SplitMix64;

/// Items per work message at most.
pub(crate) const BATCH: usize = 64;

/// The longest wait between refused requests, in ticks.
pub(crate) const MAX_BACKOFF: u64 = 32;

/// What a rank tells another.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Message<T> {
    /// An idle rank asks for work.
    Request,
    /// Work, in answer to a request.
    Work(Vec<T>),
    /// Nothing to spare.
    NoWork,
    /// Safra's token: whether a rank it passed was black, and the counts so far.
    Token { black: bool, count: i64 },
    /// The work is over everywhere (passed around the ring).
    Done,
    /// A rank failed: the work ends with an error everywhere.
    Abort,
}

/// A rank's own work, as the stealing sees it.
pub(crate) trait Local<T> {
    /// Items queued and not yet taken by this rank's worker.
    fn queued(&self) -> usize;
    /// Up to `n` queued items, handed away.
    fn take(&mut self, n: usize) -> Vec<T>;
    /// Items from another rank, to do here.
    fn give(&mut self, items: Vec<T>);
    /// Nothing queued and nothing in the worker's hands.
    fn idle(&self) -> bool;
}

/// How many messages a rank handled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub sent: u64,
    pub received: u64,
    /// Of those received, requests for work it answered: what a hub would
    /// have answered for everyone.
    pub served: u64,
}

impl Traffic {
    pub fn total(self) -> u64 {
        self.sent + self.received
    }
}

/// One rank's part in the stealing and the termination ring.
#[derive(Debug)]
pub(crate) struct Stealer {
    rank: usize,
    ranks: usize,
    rng: SplitMix64,
    /// A request is out, to this rank.
    asking: Option<usize>,
    refusals: u32,
    /// No request before this tick.
    wait_until: u64,
    /// Safra: work messages sent minus received, and whether one was received since the token last passed.
    count: i64,
    black: bool,
    /// The token, while this rank holds it.
    token: Option<(bool, i64)>,
    /// Rank 0: a round of the token is under way.
    round: bool,
    done: bool,
    traffic: Traffic,
}

impl Stealer {
    /// Rank `rank` of `ranks`; rank 0 holds the token first. `seed` draws
    /// the ranks asked (each rank its own sequence).
    pub fn new(rank: usize, ranks: usize, seed: u64) -> Stealer {
        Stealer {
            rank,
            ranks,
            // A hashed start per rank: SplitMix64 states a multiple of its
            // step apart would give every rank the same draws, shifted.
            rng: SplitMix64::new(SplitMix64::new(seed ^ ((rank as u64) << 32 | rank as u64)).next_u64()),
            asking: None,
            refusals: 0,
            wait_until: 0,
            count: 0,
            black: false,
            token: (rank == 0).then_some((false, 0)),
            round: false,
            done: false,
            traffic: Traffic::default(),
        }
    }

    /// Whether the work is over here (`Done` seen, or sent).
    pub fn finished(&self) -> bool {
        self.done
    }

    pub(crate) fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn next(&self) -> usize {
        (self.rank + 1) % self.ranks
    }

    fn send<T>(&mut self, out: &mut Vec<(usize, Message<T>)>, to: usize, message: Message<T>) {
        self.traffic.sent += 1;
        out.push((to, message));
    }

    /// Handles `message` from rank `from` at tick `now`; what to send is
    /// pushed to `out`. `Err` on `Abort`: the rank that failed.
    pub fn receive<T>(
        &mut self,
        from: usize,
        message: Message<T>,
        now: u64,
        local: &mut impl Local<T>,
        out: &mut Vec<(usize, Message<T>)>,
    ) -> Result<(), usize> {
        self.traffic.received += 1;
        match message {
            Message::Abort => {
                self.done = true;
                return Err(from);
            }
            // After the end only stray requests and refusals can come: ignored.
            _ if self.done => {}
            Message::Request => {
                self.traffic.served += 1;
                let share = local.queued().div_ceil(2).min(BATCH);
                let items = local.take(share);
                match items.is_empty() {
                    true => self.send(out, from, Message::NoWork),
                    false => {
                        self.count += 1;
                        self.send(out, from, Message::Work(items));
                    }
                }
            }
            Message::Work(items) => {
                self.count -= 1;
                self.black = true;
                local.give(items);
                self.asking = None;
                self.refusals = 0;
            }
            Message::NoWork => {
                self.asking = None;
                self.refusals = (self.refusals + 1).min(16);
                self.wait_until = now + (1u64 << (self.refusals - 1)).min(MAX_BACKOFF);
            }
            Message::Token { black, count } => self.token = Some((black, count)),
            Message::Done => {
                self.done = true;
                if self.next() != 0 {
                    self.send(out, self.next(), Message::Done);
                }
            }
        }
        Ok(())
    }

    /// Does what is due at tick `now`: asks for work when idle, passes the
    /// token on while idle, and on rank 0 decides whether the work is over.
    pub(crate) fn tick<T>(&mut self, now: u64, local: &mut impl Local<T>, out: &mut Vec<(usize, Message<T>)>) {
        if self.done || !local.idle() {
            return;
        }
        if self.ranks == 1 {
            self.done = true;
            return;
        }
        if self.asking.is_none() && now >= self.wait_until {
            let mut to = self.rng.below(self.ranks - 1);
            if to >= self.rank {
                to += 1;
            }
            self.asking = Some(to);
            self.send(out, to, Message::Request);
        }
        let Some((black, count)) = self.token.take() else { return };
        if self.rank != 0 {
            let token = Message::Token { black: black || self.black, count: count + self.count };
            self.black = false;
            self.send(out, self.next(), token);
            return;
        }
        // Rank 0: a round has come back, or none has started.
        if self.round && !black && !self.black && count + self.count == 0 {
            self.done = true;
            self.send(out, self.next(), Message::Done);
            return;
        }
        self.round = true;
        self.black = false;
        self.send(out, self.next(), Message::Token { black: false, count: 0 });
    }

    /// This rank failed: every other rank is told.
    pub(crate) fn abort<T>(&mut self, out: &mut Vec<(usize, Message<T>)>) {
        if self.done {
            return;
        }
        self.done = true;
        let me = self.rank;
        for to in (0..self.ranks).filter(|&r| r != me) {
            self.send(out, to, Message::Abort);
        }
    }
}

#[cfg(test)]
#[path = "steal_simulation.rs"]
mod simulation;
