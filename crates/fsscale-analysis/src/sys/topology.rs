//! Where each CPU sits (socket, core) and the order `--pin` fills them in:
//! every core's first hardware thread before any core's second, socket by
//! socket, as will-it-scale orders hwloc's processing units. Worker i then
//! gets a core of its own for as long as there are cores, and a second
//! thread of a busy core only after that.

use serde::{Deserialize, Serialize};

/// One CPU (hardware thread) and the socket and core it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    pub cpu: usize,
    /// `physical_package_id`: the socket.
    pub package: usize,
    /// `core_id`: unique within its package only.
    pub core: usize,
}

/// The topology of `cpus` from /sys/devices/system/cpu; a CPU whose files
/// cannot be read counts as a core of its own on socket 0.
pub fn read(cpus: &[usize]) -> Vec<CpuPlace> {
    let field = |cpu: usize, name: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{name}"))
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok())
    };
    cpus.iter()
        .map(|&cpu| CpuPlace {
            cpu,
            package: field(cpu, "physical_package_id").unwrap_or(0),
            core: field(cpu, "core_id").unwrap_or(usize::MAX - cpu),
        })
        .collect()
}

/// The order `--pin` binds workers in: pass k holds the k-th hardware
/// thread (by CPU number) of every core, sockets in order and cores in
/// order within a socket; passes follow each other. Every CPU appears once.
pub fn pin_order(places: &[CpuPlace]) -> Vec<usize> {
    let mut sorted = places.to_vec();
    sorted.sort_by_key(|p| (p.package, p.core, p.cpu));
    // The rank of each CPU among its core's threads.
    let mut ranked: Vec<(usize, usize, usize, usize)> = Vec::with_capacity(sorted.len());
    for (i, p) in sorted.iter().enumerate() {
        let rank = match i.checked_sub(1).map(|j| &sorted[j]) {
            Some(prev) if (prev.package, prev.core) == (p.package, p.core) => ranked[i - 1].0 + 1,
            _ => 0,
        };
        ranked.push((rank, p.package, p.core, p.cpu));
    }
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, _, _, cpu)| cpu).collect()
}

/// The CPUs this process may use, in `--pin`'s order.
pub fn pin_cpus() -> Vec<usize> {
    pin_order(&read(&super::allowed_cpus()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn place(cpu: usize, package: usize, core: usize) -> CpuPlace {
        CpuPlace { cpu, package, core }
    }

    #[test]
    fn cores_first_then_their_siblings_socket_by_socket() {
        // Two sockets of two cores with two threads each, numbered as Intel
        // machines number them: siblings are N apart.
        let places = [
            place(0, 0, 0),
            place(1, 0, 1),
            place(2, 1, 0),
            place(3, 1, 1),
            place(4, 0, 0),
            place(5, 0, 1),
            place(6, 1, 0),
            place(7, 1, 1),
        ];
        assert_eq!(pin_order(&places), [0, 1, 2, 3, 4, 5, 6, 7]);
        // Numbered as some AMD machines number them: siblings adjacent.
        let adjacent = [place(0, 0, 0), place(1, 0, 0), place(2, 0, 1), place(3, 0, 1)];
        assert_eq!(pin_order(&adjacent), [0, 2, 1, 3]);
        // No SMT: CPU order.
        assert_eq!(pin_order(&[place(0, 0, 0), place(1, 0, 1)]), [0, 1]);
    }

    #[test]
    fn this_machine_has_an_order_of_its_cpus() {
        let cpus: Vec<usize> = (0..crate::sys::online_cpus()).collect();
        let mut order = pin_order(&read(&cpus));
        order.sort_unstable();
        assert_eq!(order, cpus);
    }

    proptest! {
        #[test]
        fn every_cpu_once_and_no_second_thread_before_a_free_core(
            threads in proptest::collection::vec((0usize..2, 0usize..4, 1usize..3), 1..12),
        ) {
            // (package, core, threads of that core), made unique per core.
            let mut places = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for (package, core, n) in threads {
                if seen.insert((package, core)) {
                    for _ in 0..n {
                        places.push(place(places.len(), package, core));
                    }
                }
            }
            let order = pin_order(&places);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..places.len()).collect::<Vec<_>>());
            // The first `cores` CPUs in the order are on distinct cores.
            let cores = seen.len();
            let first: std::collections::HashSet<(usize, usize)> =
                order[..cores].iter().map(|&c| (places[c].package, places[c].core)).collect();
            prop_assert_eq!(first.len(), cores);
        }
    }
}
