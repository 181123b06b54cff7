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
    fn plan(&mut self, _points: usize, _runs_per_point: usize) {}
    /// A run (repetition) of a point is about to start; indices count from 0,
    /// `run` among the point's warm-up runs when `warmup`.
    fn run_started(&mut self, _point: &PointSpec, _point_index: usize, _run: usize, _warmup: bool) {}
    /// `point` holds its runs so far, this one last (among its warm-up runs when `warmup`).
    fn run_finished(&mut self, _point: &Point, _warmup: bool) {}
    fn point_finished(&mut self, _point: &Point) {}
    /// The results file was (re)written.
    fn saved(&mut self) {}
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {}
