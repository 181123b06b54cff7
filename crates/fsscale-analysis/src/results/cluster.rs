//! An MPI job as the results record it: its ranks and their nodes, and
//! which ranks serve a point of N workers (`--placement`).

use serde::{Deserialize, Serialize};

use crate::vocab::choice;

/// How a point's workers are spread over the job's nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// One rank per node before a second on any node: N = nodes measures one client per node.
    #[default]
    Spread,
    /// Fill a node before the next: N up to the ranks per node measures one node.
    Pack,
}

choice!(Placement { Spread => "spread", Pack => "pack" });

impl Placement {
    pub const ALL: [Placement; 2] = [Placement::Spread, Placement::Pack];

    /// The ranks in the order points take them: a point of N workers is
    /// served by the first N, worker i by the i-th. `hosts` is each rank's
    /// host, in rank order; nodes are ordered by their lowest rank, so rank 0
    /// always serves worker 0 (it also coordinates).
    pub fn order(self, hosts: &[String]) -> Vec<usize> {
        let nodes = nodes(hosts);
        match self {
            Placement::Pack => nodes.into_iter().flat_map(|(_, ranks)| ranks).collect(),
            Placement::Spread => {
                let deepest = nodes.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
                (0..deepest).flat_map(|k| nodes.iter().filter_map(move |(_, r)| r.get(k).copied())).collect()
            }
        }
    }
}

/// The MPI job a run was: `mpirun -np R fsscale run ...`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ClusterInfo {
    /// The MPI library's name and version, as it reports them.
    pub library: String,
    pub ranks: usize,
    /// Each rank's node, in rank order.
    pub hosts: Vec<String>,
    /// Which ranks served a point of N workers.
    pub placement: Placement,
}

impl ClusterInfo {
    /// The nodes, in order of their lowest rank, with their ranks.
    pub fn nodes(&self) -> Vec<(&str, Vec<usize>)> {
        nodes(&self.hosts)
    }
}

/// The nodes of `hosts` (each rank's host, in rank order), in order of
/// their lowest rank, with their ranks.
pub fn nodes(hosts: &[String]) -> Vec<(&str, Vec<usize>)> {
    let mut nodes: Vec<(&str, Vec<usize>)> = Vec::new();
    for (rank, host) in hosts.iter().enumerate() {
        match nodes.iter_mut().find(|(h, _)| *h == host.as_str()) {
            Some((_, ranks)) => ranks.push(rank),
            None => nodes.push((host.as_str(), vec![rank])),
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn spread_takes_one_rank_per_node_first_and_pack_fills_a_node() {
        // mpirun's default by-slot mapping: ranks 0-2 on a, 3-5 on b.
        let h = hosts(&["a", "a", "a", "b", "b", "b"]);
        assert_eq!(Placement::Spread.order(&h), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(Placement::Pack.order(&h), vec![0, 1, 2, 3, 4, 5]);
        // By-node mapping, uneven nodes.
        let h = hosts(&["a", "b", "c", "a", "b", "a"]);
        assert_eq!(Placement::Spread.order(&h), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(Placement::Pack.order(&h), vec![0, 3, 5, 1, 4, 2]);
    }

    proptest! {
        #[test]
        fn every_rank_once_and_rank_zero_first(nodes in proptest::collection::vec(0u8..5, 1..64)) {
            let h: Vec<String> = nodes.iter().map(|n| format!("node{n}")).collect();
            for placement in Placement::ALL {
                let order = placement.order(&h);
                let mut sorted = order.clone();
                sorted.sort_unstable();
                prop_assert_eq!(sorted, (0..h.len()).collect::<Vec<_>>());
                prop_assert_eq!(order[0], 0);
            }
            // Spread: the first `distinct nodes` ranks are on distinct nodes.
            let distinct = { let mut d = nodes.clone(); d.sort_unstable(); d.dedup(); d.len() };
            let first: std::collections::HashSet<_> =
                Placement::Spread.order(&h)[..distinct].iter().map(|&r| h[r].clone()).collect();
            prop_assert_eq!(first.len(), distinct);
        }
    }
}
