//! The instruments' registry on the results' side: how each instrument's
//! section of a run's record is merged over MPI ranks, explained under a
//! table, drawn in the report and compared (`compare` and `report` call
//! it; it calls only what is below them).
//!
//! An [`Instrument`] (its name, help and flag) is a word of `vocab`; its
//! section's field, and how a received one is capped, are
//! `results::Sections`';
//! the measuring library keeps the other half (what it needs of the
//! kernel, how it is armed, switched and drained) in a registry of its own.
//! Each is an exhaustive `match`, so the compiler names every place a new
//! instrument must fill. docs/ARCHITECTURE.md ("Adding an instrument")
//! walks through it.

pub mod attribution;
mod cpu;
mod latency;
mod locks;
mod offcpu;
mod verify;

pub use crate::vocab::{Instrument, Instruments};
pub use locks::NOTABLE_WAIT_SHARE;
pub use offcpu::NOTABLE_ASLEEP_SHARE;

use crate::render::markup::Html;
use crate::results::{Point, ResultsFile, RunRecord};
use attribution::Attribution;

impl Instrument {
    /// Its results' half: the registry. The match is exhaustive, so a new
    /// [`Instrument`] is not done until it is here.
    pub fn section(self) -> &'static dyn Section {
        match self {
            Instrument::Locks => &locks::Locks,
            Instrument::Cpu => &cpu::Cpu,
            Instrument::Offcpu => &offcpu::Offcpu,
            Instrument::Latency => &latency::Latency,
            Instrument::Verify => &verify::Verify,
        }
    }
}

/// Whether an instrument makes a point worth explaining under its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Explains {
    /// Not this point (it did not record it).
    No,
    /// Where the point's efficiency falls (or with `--explain-all`).
    IfFalling,
    /// Whatever its efficiency: a measurement, or a finding in itself.
    Always,
}

/// One instrument's section of a run's record, and everything that reads it.
pub trait Section: Sync {
    /// Whether `run` carries its section.
    fn recorded(&self, run: &RunRecord) -> bool;

    /// Sets `into`'s section to `ranks`' sections merged, as one machine's
    /// coordinator would have recorded it for all their workers.
    fn merge_ranks(&self, ranks: &[RunRecord], into: &mut RunRecord);

    /// Whether `point` is worth explaining for this instrument's sake.
    fn explains(&self, point: &Point) -> Explains;

    /// Its table under an explained point (`what` names the point), or nothing.
    fn explain(&self, point: &Point, what: &str) -> String;

    /// What its table's columns mean, printed once under the tables where one was.
    fn legend(&self) -> &'static str;

    /// Its part of the report's view of one series (`points` by worker
    /// count; `widest` the workload's widest wait share, as a common scale).
    fn html_series(&self, points: &[&Point], title: &str, widest: f64) -> Html;

    /// What it says changed between two sides' points, into `why`; false
    /// when it cannot say (not recorded on both sides, or nothing to compare).
    fn attribute(&self, base: &Point, new: &Point, why: &mut Attribution) -> bool;

    /// Whether [`Section::attribute`] can say anything of a point that
    /// records it (the history keeps which instruments a figure can be
    /// attributed from, without working out an attribution).
    fn attributes(&self) -> bool;

    /// What the file's runs found, for the line that says which instruments were on.
    fn finding(&self, _doc: &ResultsFile) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Choice;

    #[test]
    fn every_instrument_that_prints_a_table_has_its_legend() {
        for &i in Instrument::ALL {
            let legend = i.section().legend();
            assert!(legend.is_empty() || legend.ends_with('\n'), "{i}'s legend is whole lines");
        }
    }
}
