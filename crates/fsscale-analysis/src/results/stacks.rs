//! Folded stacks (`root;...;leaf` → weight) kept within what a reader may
//! afford: frames per stack and stacks per profile capped (see `bounds`).

use std::collections::BTreeMap;

/// Frames a stack keeps: the root-most, then one `[N more frames]` frame.
pub(crate) const MAX_FRAMES: usize = 512;
/// Distinct stacks a profile keeps: the heaviest, then one `[other stacks]`.
pub(crate) const MAX_STACKS: usize = 20_000;

/// Caps `folded` (`root;...;leaf` → weight) in frames per stack and in stacks.
pub(crate) fn bound_stacks(folded: &mut BTreeMap<String, u64>, cut: &mut impl CutCounter) {
    if folded.keys().any(|k| k.len() > MAX_FRAMES && k.split(';').nth(MAX_FRAMES).is_some()) {
        let mut deep = 0;
        let old = std::mem::take(folded);
        for (stack, weight) in old {
            let key = match stack.match_indices(';').nth(MAX_FRAMES - 1) {
                Some((at, _)) => {
                    deep += 1;
                    let more = stack[at + 1..].split(';').count();
                    format!("{};[{more} more frames]", &stack[..at])
                }
                None => stack,
            };
            *folded.entry(key).or_default() += weight;
        }
        cut.deep(deep);
    }
    if folded.len() > MAX_STACKS {
        let mut by_weight: Vec<(String, u64)> = std::mem::take(folded).into_iter().collect();
        by_weight.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let rest: u64 = by_weight[MAX_STACKS - 1..].iter().map(|(_, w)| w).fold(0u64, |a, w| a.saturating_add(*w));
        cut.stacks(by_weight.len() - (MAX_STACKS - 1));
        by_weight.truncate(MAX_STACKS - 1);
        folded.extend(by_weight);
        *folded.entry("[other stacks]".to_string()).or_default() += rest;
    }
}

/// Where [`bound_stacks`] counts what it cut.
pub(crate) trait CutCounter {
    fn deep(&mut self, stacks: usize);
    fn stacks(&mut self, stacks: usize);
}

/// A count nobody reads: profiles summed over runs are capped again, silently.
pub(crate) struct Uncounted;

impl CutCounter for Uncounted {
    fn deep(&mut self, _: usize) {}
    fn stacks(&mut self, _: usize) {}
}
