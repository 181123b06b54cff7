//! How the runner tells the outside world what it is doing, without printing.

use crate::plan::PointSpec;
use crate::results::Point;

/// Receives progress events; every method has an empty default.
pub trait Progress {
    /// Something the user should know that does not stop the run.
    fn warning(&mut self, _text: &str) {}
    /// Untimed preparation that may take a while (e.g. generating a tarball).
    fn preparing(&mut self, _what: &str) {}
    /// Called once before the first run.
    fn plan(&mut self, _plan: &PlanSummary) {}
    /// A run (repetition) of a point is about to start.
    fn run_started(&mut self, _run: &RunStart<'_>) {}
    /// `point` holds its runs so far, this one last (among its warm-up runs when `warmup`).
    fn run_finished(&mut self, _point: &Point, _warmup: bool) {}
    fn point_finished(&mut self, _point: &Point) {}
    /// `--slo`: a search whose state is `search` probes `spec` next.
    fn probing(&mut self, _spec: &PointSpec, _search: &crate::results::objective::Search) {}
    /// The results file was (re)written.
    fn saved(&mut self) {}
}

/// The size of a run's plan, told once before its first run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanSummary {
    pub points: usize,
    pub runs_per_point: usize,
    pub warmups_per_point: usize,
    /// `--until-ci`: points may take more runs than `runs_per_point`, up to this many.
    pub max_runs: Option<usize>,
    /// Seconds the whole plan should take, when every point has something
    /// to go by (fixed work is known only once it has run).
    pub eta_s: Option<f64>,
    /// With `max_runs`: seconds if every point ran to its cap.
    pub eta_max_s: Option<f64>,
    /// `--slo`: the most probes each point's search may add, each a point
    /// of its own (not in `points`, `eta_s` or `eta_max_s`).
    pub probes_per_point: Option<usize>,
}

impl PlanSummary {
    /// Runs in all, warm-ups included (the least, with `--until-ci`).
    pub fn total_runs(&self) -> usize {
        self.points * (self.runs_per_point + self.warmups_per_point)
    }
}

/// A run about to start, with where the whole run stands.
#[derive(Clone, Copy, Debug)]
pub struct RunStart<'a> {
    pub point: &'a PointSpec,
    /// Its point's place in the plan, from 0.
    pub index: usize,
    /// From 0, among the point's warm-up runs when `warmup`.
    pub run: usize,
    pub warmup: bool,
    /// The made filesystem's label (`ext4:noatime`), when `--fs` made one.
    pub filesystem: Option<&'a str>,
    /// Its `--variant`'s name.
    pub variant: Option<&'a str>,
    /// Runs finished so far, warm-ups included.
    pub done: usize,
    /// Runs in all (the least, with `--until-ci`).
    pub total: usize,
    /// Seconds left, when known (see [`PlanSummary::eta_s`]).
    pub eta_s: Option<f64>,
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {}
