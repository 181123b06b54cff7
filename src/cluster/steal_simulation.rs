//! The stealing and its termination on simulated ranks: a generated tree
//! walked by up to 1,024 ranks over a network that delays every message
//! by a seeded random time while keeping each pair's messages in order (as
//! MPI does), each rank doing a random amount of work per tick. Every
//! schedule must end everywhere with every node visited exactly once, and
//! no rank may handle more than twice the mean rank's messages.

use std::collections::{BTreeMap, VecDeque};

use super::*;

/// A tree of `n` nodes: node i's children are a contiguous range, drawn so
/// that some directories are wide, most narrow, and the depth varies.
struct Tree {
    children: Vec<std::ops::Range<u32>>,
}

impl Tree {
    fn generate(n: u32, seed: u64) -> Tree {
        let mut rng = SplitMix64::new(seed);
        let mut children = vec![0..0; n as usize];
        let mut next = 1u32;
        for i in 0..n {
            if next >= n {
                break;
            }
            let mut k = if rng.below(10) == 0 { 20 + rng.below(200) as u32 } else { rng.below(4) as u32 };
            // The last node made so far must have a child, or the tree stops growing.
            if next == i + 1 {
                k = k.max(1);
            }
            let end = (next + k).min(n);
            children[i as usize] = next..end;
            next = end;
        }
        Tree { children }
    }
}

/// One rank's work: a queue of nodes and the node in its worker's hands.
struct Rank {
    queue: VecDeque<u32>,
    in_hand: Option<u32>,
}

impl Local<u32> for Rank {
    fn queued(&self) -> usize {
        self.queue.len()
    }
    fn take(&mut self, n: usize) -> Vec<u32> {
        // From the far end, as the walk hands away its oldest directories.
        (0..n).map_while(|_| self.queue.pop_front()).collect()
    }
    fn give(&mut self, items: Vec<u32>) {
        self.queue.extend(items);
    }
    fn idle(&self) -> bool {
        self.queue.is_empty() && self.in_hand.is_none()
    }
}

struct Outcome {
    traffic: Vec<Traffic>,
}

/// Messages in flight, by the tick they arrive: (from, to, message).
type InFlight = BTreeMap<u64, Vec<(usize, usize, Message<u32>)>>;

/// Walks `tree` with `ranks` ranks; panics on any count that is not exact.
fn walk(tree: &Tree, ranks: usize, seed: u64) -> Outcome {
    let n = tree.children.len();
    let mut rng = SplitMix64::new(seed);
    let mut stealers: Vec<Stealer> = (0..ranks).map(|r| Stealer::new(r, ranks, seed)).collect();
    let mut local: Vec<Rank> = (0..ranks).map(|_| Rank { queue: VecDeque::new(), in_hand: None }).collect();
    local[0].queue.push_back(0);
    let mut visited = vec![0u8; n];
    // In flight, by delivery tick; each pair's last delivery keeps them in order.
    let mut flight: InFlight = BTreeMap::new();
    let mut last_of_pair: std::collections::HashMap<(usize, usize), u64> = std::collections::HashMap::new();
    let mut out = Vec::new();
    let mut now = 0u64;
    let post = |from: usize,
                out: &mut Vec<(usize, Message<u32>)>,
                now: u64,
                rng: &mut SplitMix64,
                flight: &mut InFlight,
                last: &mut std::collections::HashMap<(usize, usize), u64>| {
        for (to, message) in out.drain(..) {
            let at = (now + 1 + rng.below(8) as u64).max(*last.get(&(from, to)).unwrap_or(&0));
            last.insert((from, to), at);
            flight.entry(at).or_default().push((from, to, message));
        }
    };
    while !stealers.iter().all(Stealer::finished) {
        now += 1;
        assert!(now < 5_000_000, "seed {seed}: no end after {now} ticks");
        // Deliveries due now, in the order they were posted.
        if let Some(due) = flight.remove(&now) {
            for (from, to, message) in due {
                let abort = stealers[to].receive(from, message, now, &mut local[to], &mut out);
                assert!(abort.is_ok(), "no rank fails here");
                post(to, &mut out, now, &mut rng, &mut flight, &mut last_of_pair);
            }
        }
        for r in 0..ranks {
            // A random amount of work: 0 to 3 nodes this tick.
            for _ in 0..rng.below(4) {
                let l = &mut local[r];
                if l.in_hand.is_none() {
                    l.in_hand = l.queue.pop_back();
                }
                let Some(node) = l.in_hand.take() else { break };
                visited[node as usize] += 1;
                l.queue.extend(tree.children[node as usize].clone());
            }
            stealers[r].tick(now, &mut local[r], &mut out);
            post(r, &mut out, now, &mut rng, &mut flight, &mut last_of_pair);
        }
    }
    let twice: Vec<usize> = visited.iter().enumerate().filter(|(_, &v)| v != 1).map(|(i, _)| i).take(5).collect();
    assert!(twice.is_empty(), "seed {seed}, {ranks} ranks: nodes not visited exactly once: {twice:?}");
    assert!(local.iter().all(Rank::idle), "seed {seed}: work left at the end");
    let work_in_flight = flight.values().flatten().filter(|(_, _, m)| matches!(m, Message::Work(_))).count();
    assert_eq!(work_in_flight, 0, "seed {seed}: work in flight at the end");
    Outcome { traffic: stealers.iter().map(Stealer::traffic).collect() }
}

/// The busiest rank's count over the mean rank's.
fn balance(traffic: &[Traffic], count: impl Fn(&Traffic) -> u64) -> f64 {
    let counts: Vec<f64> = traffic.iter().map(|t| count(t) as f64).collect();
    let mean = counts.iter().sum::<f64>() / counts.len() as f64;
    counts.iter().copied().fold(0.0, f64::max) / mean
}

#[test]
fn every_schedule_ends_with_every_node_visited_once() {
    let tree = Tree::generate(20_000, 1);
    for ranks in [1, 2, 3, 8, 16, 64] {
        for seed in 0..4 {
            let outcome = walk(&tree, ranks, seed);
            if ranks >= 8 {
                let b = balance(&outcome.traffic, |t| t.total());
                assert!(b <= 2.0, "{ranks} ranks, seed {seed}: the busiest rank handled {b:.2}× the mean");
            }
        }
    }
}

#[test]
fn a_thousand_ranks_end_with_exact_counts_and_no_hub() {
    let tree = Tree::generate(20_000, 2);
    // One schedule here (3 s in a debug build); `every_schedule_...` tries
    // 24 more at up to 64 ranks, and seeds 0–2 on 100,000 nodes passed too.
    for seed in 0..1 {
        let outcome = walk(&tree, 1024, seed);
        // No hub: requests, and messages of every kind, spread over the
        // ranks (measured on a tree of 100,000: the busiest 1.16–1.22× the
        // mean's requests, 1.08–1.11× its messages).
        let served = balance(&outcome.traffic, |t| t.served);
        assert!(served <= 2.0, "seed {seed}: the busiest rank answered {served:.2}× the mean's requests");
        let total = balance(&outcome.traffic, |t| t.total());
        assert!(total <= 2.0, "seed {seed}: the busiest rank handled {total:.2}× the mean's messages");
    }
}

#[test]
fn an_abort_reaches_every_rank() {
    let mut stealers: Vec<Stealer> = (0..4).map(|r| Stealer::new(r, 4, 0)).collect();
    let mut out: Vec<(usize, Message<u32>)> = Vec::new();
    stealers[2].abort(&mut out);
    assert_eq!(out.iter().map(|(to, _)| *to).collect::<Vec<_>>(), [0, 1, 3]);
    let mut rank = Rank { queue: VecDeque::from([7]), in_hand: None };
    for (to, message) in std::mem::take(&mut out) {
        assert_eq!(stealers[to].receive(2, message, 1, &mut rank, &mut out), Err(2));
        assert!(stealers[to].finished());
    }
}

#[test]
fn a_request_takes_half_the_queue_and_an_idle_rank_refuses() {
    let mut s = Stealer::new(1, 4, 0);
    let mut out = Vec::new();
    let mut busy = Rank { queue: (0..10).collect(), in_hand: Some(99) };
    s.receive(3, Message::Request, 1, &mut busy, &mut out).unwrap();
    assert_eq!(out, [(3, Message::Work(vec![0, 1, 2, 3, 4]))]);
    assert_eq!(busy.queue.len(), 5);
    out.clear();
    let mut idle = Rank { queue: VecDeque::new(), in_hand: None };
    s.receive(0, Message::Request, 2, &mut idle, &mut out).unwrap();
    assert_eq!(out, [(0, Message::NoWork)]);
}
