//! Sampled stacks, read back: the lock and off-CPU programs walk a task's
//! kernel stack for one event in N, chosen by a countdown of random length
//! that does not look at the events (`sample_every`, `sample_reuse` in
//! `bpf/common.bpf.h`), and count every other event exactly but under
//! [`STACK_NOT_SAMPLED`]. Each such total is spread here over the stacks
//! walked for events of its own kind (a lock's, a sleep state's), in
//! proportion to theirs: the walked events are a sample of all, so the
//! shares are unbiased, and every total stays exact.
//!
//! (Reusing a task's last walked stack for its next events instead would
//! bias the shares: a walk forced by a change of lock falls on whatever
//! follows that change, in a fixed place of each op.)

pub(crate) use super::bpf::shared::STACK_NOT_SAMPLED;

/// `unsampled`'s figures spread over the `sampled` entries: the first
/// figure (the count) in proportion to theirs; each other figure in
/// proportion to the same figure of the entries given a part of the count
/// (or, where those are all 0, to the parts of the count), so that no part
/// has time without events. In whole units by largest remainder, so that
/// the parts add up to `unsampled` exactly. Empty without sampled entries.
pub(crate) fn spread<const N: usize>(unsampled: [u64; N], sampled: &[[u64; N]]) -> Vec<[u64; N]> {
    let mut parts = vec![[0u64; N]; sampled.len()];
    if sampled.is_empty() {
        return parts;
    }
    for field in 0..N {
        let counted = |i: usize| field == 0 || unsampled[0] == 0 || parts[i][0] > 0;
        let weight = |i: usize, f: usize| if counted(i) { u128::from(sampled[i][f]) } else { 0 };
        let by = if (0..sampled.len()).any(|i| weight(i, field) > 0) { field } else { 0 };
        let weights: Vec<u128> = (0..sampled.len())
            .map(|i| {
                if by == field {
                    weight(i, field)
                } else if field == 0 {
                    u128::from(sampled[i][0])
                } else {
                    u128::from(parts[i][0])
                }
            })
            .collect();
        let total: u128 = weights.iter().sum();
        let amount = u128::from(unsampled[field]);
        if total == 0 {
            // No weight at all: evenly, the remainder to the first.
            let each = amount / sampled.len() as u128;
            for (i, part) in parts.iter_mut().enumerate() {
                part[field] = (each + u128::from(i == 0) * (amount - each * sampled.len() as u128)) as u64;
            }
            continue;
        }
        let mut given = 0u128;
        let mut remainders: Vec<(u128, usize)> = Vec::with_capacity(sampled.len());
        for (i, w) in weights.iter().enumerate() {
            let exact = amount * w;
            parts[i][field] = (exact / total) as u64;
            given += exact / total;
            remainders.push((exact % total, i));
        }
        // The units left go to the largest remainders (ties: the earlier entry).
        remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in remainders.iter().take((amount - given) as usize) {
            parts[i][field] += 1;
        }
    }
    parts
}

/// [`spread`], with the unsampled events' longest (`max`) going whole to
/// the largest part (by its first figure, the earlier on a tie) and 0 to the rest.
pub(crate) fn spread_with_max<const N: usize>(
    unsampled: [u64; N],
    max: u64,
    sampled: &[[u64; N]],
) -> Vec<([u64; N], u64)> {
    let parts = spread(unsampled, sampled);
    let largest = (0..parts.len()).max_by_key(|&i| (parts[i][0], std::cmp::Reverse(i))).unwrap_or(0);
    parts.into_iter().enumerate().map(|(i, p)| (p, if i == largest { max } else { 0 })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsampled_totals_are_spread_in_proportion_and_add_up_exactly() {
        // 90 waits of 900 ns unwalked; walked: 2 at one site, 1 at another.
        let parts = spread([90, 900], &[[2, 100], [1, 200]]);
        assert_eq!(parts, [[60, 300], [30, 600]]);
        // Remainders: 10 over thirds, the largest remainders first.
        let parts = spread([10, 0], &[[1, 1], [1, 1], [1, 1]]);
        assert_eq!(parts.iter().map(|p| p[0]).collect::<Vec<_>>(), [4, 3, 3]);
        assert_eq!(parts.iter().map(|p| p[0]).sum::<u64>(), 10);
        // A figure the sampled entries all lack goes by their counts.
        let parts = spread([4, 8, 12], &[[1, 5, 0], [3, 5, 0]]);
        assert_eq!(parts, [[1, 4, 3], [3, 4, 9]]);
        // Nothing walked: nothing to spread over.
        assert!(spread([5, 5], &[]).is_empty());
        // The longest goes with the largest part.
        assert_eq!(spread_with_max([3, 0], 77, &[[1, 0], [2, 0]]), [([1, 0], 0), ([2, 0], 77)]);
        // A part given none of the count is given none of the time.
        assert_eq!(spread([1, 500], &[[1, 100], [1, 900]]), [[1, 500], [0, 0]]);
        // Large figures do not overflow.
        let parts = spread([u64::MAX, 1], &[[u64::MAX, 1], [u64::MAX, 1]]);
        assert_eq!(parts[0][0] as u128 + parts[1][0] as u128, u64::MAX as u128);
    }
}
