//! `--verify`: whether the kernel counted the system calls the workers' op
//! counters imply (raw_syscalls:sys_enter, per worker).

use super::attribution::Attribution;
use super::{Explains, Section};
use crate::render::markup::Html;
use crate::results::{Point, ResultsFile, RunRecord, SyscallCheck};

pub(super) struct Verify;

impl Section for Verify {
    fn recorded(&self, run: &RunRecord) -> bool {
        run.sections.syscalls.is_some()
    }

    fn merge_ranks(&self, ranks: &[RunRecord], into: &mut RunRecord) {
        into.sections.syscalls = SyscallCheck::sum(ranks.iter().filter_map(|r| r.sections.syscalls.as_ref()));
    }

    fn explains(&self, _point: &Point) -> Explains {
        Explains::No
    }

    /// Said once for the file, in [`Section::finding`].
    fn explain(&self, _point: &Point, _what: &str) -> String {
        String::new()
    }

    fn legend(&self) -> &'static str {
        ""
    }

    fn html_series(&self, _points: &[&Point], _title: &str, _widest: f64) -> Html {
        Html::new()
    }

    fn attribute(&self, _base: &Point, _new: &Point, _why: &mut Attribution) -> bool {
        false
    }

    fn attributes(&self) -> bool {
        false
    }

    fn finding(&self, doc: &ResultsFile) -> Option<String> {
        let runs: Vec<(&RunRecord, usize)> =
            doc.points.iter().flat_map(|p| p.runs.iter().map(move |r| (r, p.workers))).collect();
        let checked: Vec<_> = runs.iter().filter_map(|(r, w)| Some((r.sections.syscalls.as_ref()?, *w))).collect();
        let off = checked.iter().filter(|(c, w)| !c.mismatches(*w).is_empty()).count();
        Some(match (checked.len(), off) {
            (0, _) => "--verify checked no run (no workload here has a fixed set of calls per op)".to_string(),
            (n, 0) => format!("--verify: the kernel's system call counts matched the ops within 0.5% in all {n} runs checked"),
            (n, k) => format!("--verify: the kernel's counts differed from the ops by more than 0.5% in {k} of {n} runs (the results file has the counts)"),
        })
    }
}
