//! Which figures of a series are searched, and how a step in one is set
//! beside the other.

use serde::Serialize;

use super::search::{find_changes, FigureSteps, Weighed};
use super::{Change, ChangeConfig, SeriesFigure};
use crate::history::store::Entry;

/// What the series' other figure did across a step's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OtherFigure {
    pub figure: SeriesFigure,
    /// Its level after the step over its level before, over the same results.
    pub ratio: f64,
    /// Whether it stepped there too (within the outliers the step may be among, or one result).
    pub stepped: bool,
}

/// What a series' figures show, searched at `level`.
#[derive(Clone, Debug)]
pub(crate) struct Searched {
    /// The series' own figure (ops/s with busy results left out, or per CPU-second).
    pub own: FigureSteps,
    /// The other, where every result has it with its workers CPU-bound (a
    /// sleeping worker's CPU time would hide a change in its sleep).
    pub other: Option<FigureSteps>,
    /// ops/s as measured, busy results and all, where enough were busy to
    /// make a level of their own.
    pub as_measured: Option<FigureSteps>,
}

/// `entries` searched at `level`. Only the own figure's steps are steps
/// (the false discovery rate counts one figure a series); the other's say
/// what it did across them, and ops/s as measured say where the load moved
/// them.
pub(crate) fn search_figures(entries: &[Entry], level: f64, config: &ChangeConfig) -> Searched {
    let has_per_cpu = !entries.is_empty() && entries.iter().all(|e| e.figure.per_cpu.is_some() && e.figure.cpu_bound);
    let (own, other) = match (config.figure, has_per_cpu) {
        (SeriesFigure::PerCpu, true) => (SeriesFigure::PerCpu, Some(SeriesFigure::Rate)),
        (_, true) => (SeriesFigure::Rate, Some(SeriesFigure::PerCpu)),
        (_, false) => (SeriesFigure::Rate, None),
    };
    let weighed = |f: SeriesFigure| if f == SeriesFigure::Rate { Weighed::Quiet } else { Weighed::All };
    let busy = entries.iter().filter(|e| e.figure.busy).count();
    Searched {
        own: find_changes(entries, own, weighed(own), level, config),
        other: other.map(|o| find_changes(entries, o, weighed(o), level, config)),
        as_measured: (busy >= config.min_segment())
            .then(|| find_changes(entries, SeriesFigure::Rate, Weighed::All, level, config)),
    }
}

impl Searched {
    /// The series' p-value for "no step": its own figure's most different split's.
    pub fn p_value(&self) -> Option<f64> {
        self.own.first_p
    }

    /// The own figure's steps, each with what the other did across it.
    pub fn steps(&self) -> Vec<Change> {
        annotated(&self.own, &self.own.changes, self.other.as_ref())
    }

    /// Where ops/s as measured stepped and the own figure did not: the
    /// load, not the change (said, not counted as steps).
    pub(crate) fn load_steps(&self) -> Vec<Change> {
        let Some(measured) = &self.as_measured else { return Vec::new() };
        let own = &self.own.changes;
        let load: Vec<Change> = measured.changes.iter().filter(|c| !own.iter().any(|o| near(o, c))).cloned().collect();
        let per_cpu = std::iter::once(&self.own).chain(&self.other).find(|f| f.figure == SeriesFigure::PerCpu);
        annotated(measured, &load, per_cpu)
    }
}

/// Whether `o` is at `c`'s place: within one result, or among the
/// outliers `c` may be on either side of.
fn near(o: &Change, c: &Change) -> bool {
    o.index.abs_diff(c.index) <= 1 || (c.index - c.unplaced..=c.index).contains(&o.index)
}

/// `steps` of `figure`, each with what `other` did across it.
fn annotated(figure: &FigureSteps, steps: &[Change], other: Option<&FigureSteps>) -> Vec<Change> {
    steps
        .iter()
        .map(|c| {
            let mut change = c.clone();
            change.other = other.map(|o| OtherFigure {
                figure: o.figure,
                ratio: level_ratio(o, &figure.changes, c),
                stepped: o.changes.iter().any(|x| near(x, c)),
            });
            change
        })
        .collect()
}

/// `other`'s mean after `step` over its mean before, across the results
/// between the steps beside it in `steps` (outliers of `other` left out).
fn level_ratio(other: &FigureSteps, steps: &[Change], step: &Change) -> f64 {
    let from = steps.iter().map(|c| c.index).filter(|&i| i < step.index).max().unwrap_or(0);
    let to = steps.iter().map(|c| c.index).filter(|&i| i > step.index).min().unwrap_or(other.values.len());
    let mean = |r: std::ops::Range<usize>| {
        let kept: Vec<f64> = r.filter(|&i| !other.outliers[i]).map(|i| other.values[i]).collect();
        kept.iter().sum::<f64>() / kept.len() as f64
    };
    mean(step.index..to) / mean(from..step.index - step.unplaced)
}

/// The unit a series' figure is in.
pub fn unit(entries: &[Entry], figure: SeriesFigure) -> String {
    match figure {
        SeriesFigure::Rate => entries.last().map_or_else(String::new, |e| e.figure.unit.clone()),
        SeriesFigure::PerCpu => "ops/cpu-s".to_string(),
    }
}
