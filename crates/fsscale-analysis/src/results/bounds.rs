//! What reading a received results file may cost: a profile's stacks,
//! frames and sites are capped as the file is read, so that no crafted
//! file makes a report recurse as deep as it says, work in its square, or
//! take memory beyond a small multiple of its size. Real profiles are far
//! inside the caps: perf keeps 127 frames by default, fsscale's own
//! profiles keep 40 sites per run.

use super::stacks::{CutCounter, MAX_FRAMES, MAX_STACKS};
use super::{ResultsFile, RunRecord};
use crate::vocab::{Choice, Instrument};

/// Sites a lock or off-CPU profile keeps (the heaviest; they come ranked).
pub(crate) const MAX_SITES: usize = 400;

/// What capping cut, for the reader's note.
#[derive(Default)]
pub struct Cut {
    pub(crate) deep_stacks: usize,
    pub(crate) stacks: usize,
    pub(crate) sites: usize,
    pub(crate) buckets: usize,
}

impl ResultsFile {
    /// Caps every run's profiles (see the module's doc), noting what was cut.
    pub(super) fn bound_profiles(&mut self) {
        let mut cut = Cut::default();
        for point in &mut self.points {
            for run in point.runs.iter_mut().chain(point.warmup_runs.iter_mut()) {
                bound_run(run, &mut cut);
            }
        }
        if cut.deep_stacks > 0 {
            self.read_notes.push(format!(
                "{} stack(s) deeper than {MAX_FRAMES} frames were cut to their first {MAX_FRAMES}",
                cut.deep_stacks
            ));
        }
        if cut.stacks > 0 {
            self.read_notes.push(format!(
                "{} of a profile's stacks beyond its heaviest {MAX_STACKS} were summed as one",
                cut.stacks
            ));
        }
        if cut.buckets > 0 {
            self.read_notes.push(format!(
                "{} latency histogram bucket(s) past the last one a recording makes were left out",
                cut.buckets
            ));
        }
        if cut.sites > 0 {
            self.read_notes.push(format!("{} sites beyond a profile's first {MAX_SITES} were left out", cut.sites));
        }
    }
}

fn bound_run(run: &mut RunRecord, cut: &mut Cut) {
    for i in Instrument::ALL {
        run.sections.bound(*i, cut);
    }
    for h in run.latency.iter_mut().chain(run.replay_ops.iter_mut().flat_map(|ops| ops.values_mut())) {
        cut.buckets += h.bound();
    }
    if let Some(open_loop) = &mut run.open_loop {
        cut.buckets += open_loop.bound();
    }
}

impl CutCounter for Cut {
    fn deep(&mut self, stacks: usize) {
        self.deep_stacks += stacks;
    }
    fn stacks(&mut self, stacks: usize) {
        self.stacks += stacks;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::results::stacks::bound_stacks;

    #[test]
    fn a_deep_stack_keeps_its_first_frames_and_says_how_many_more() {
        let deep: Vec<String> = (0..MAX_FRAMES + 10).map(|i| format!("f{i}")).collect();
        let mut folded = BTreeMap::from([(deep.join(";"), 7), ("a;b".to_string(), 3)]);
        let mut cut = Cut::default();
        bound_stacks(&mut folded, &mut cut);
        assert_eq!(cut.deep_stacks, 1);
        let (key, weight) = folded.iter().find(|(k, _)| k.starts_with("f0;")).unwrap();
        assert_eq!(*weight, 7);
        assert_eq!(key.split(';').count(), MAX_FRAMES + 1);
        assert!(key.ends_with(&format!(";f{};[10 more frames]", MAX_FRAMES - 1)), "{key}");
        assert_eq!(folded["a;b"], 3);
    }

    #[test]
    fn stacks_beyond_the_cap_are_summed_as_one_and_the_total_kept() {
        let mut folded: BTreeMap<String, u64> = (0..MAX_STACKS as u64 + 50).map(|i| (format!("s{i}"), i + 1)).collect();
        let total: u64 = folded.values().sum();
        let mut cut = Cut::default();
        bound_stacks(&mut folded, &mut cut);
        assert_eq!(folded.len(), MAX_STACKS);
        assert_eq!(folded.values().sum::<u64>(), total);
        assert_eq!(cut.stacks, 51);
        // The heaviest stay.
        assert!(folded.contains_key(&format!("s{}", MAX_STACKS + 49)));
        assert!(!folded.contains_key("s0"));
    }
}
