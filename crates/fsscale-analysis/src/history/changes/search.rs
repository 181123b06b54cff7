//! One figure of a series searched for steps: its outliers, the search
//! (judged with each result's runs), and each step's levels, ratio and
//! interval.

use super::{Change, ChangeConfig, Level, SeriesFigure};
use crate::history::store::Entry;
use crate::stats::changepoint::ChangePoint;
use crate::stats::distributions::t_quantile_two_sided;
use crate::stats::hypothesis::ratio_interval;
use crate::stats::replicated_steps::{replicated_search, Replicated};
use crate::stats::replicated_steps::{Judging, StepConfig};
use crate::stats::series_outliers::series_outliers;
use crate::stats::Sample;

/// What one figure of a series shows.
#[derive(Clone, Debug)]
pub struct FigureSteps {
    pub figure: SeriesFigure,
    /// The figure of every result, in order.
    pub values: Vec<f64>,
    /// Which of them are outliers, left out of the search and the levels.
    pub outliers: Vec<bool>,
    pub changes: Vec<Change>,
    /// The p-value of its most different split, significant or not
    /// (`None`: too few results to split).
    pub first_p: Option<f64>,
}

/// Which results a figure's search weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weighed {
    /// All but outliers.
    All,
    /// All but outliers and results run while other work took the machine
    /// with their workers CPU-bound: their ops/s measure the load, and are
    /// known to, so they hold their place but give no level (a busy result
    /// added cannot move a step). Workers that mostly wait lose little to
    /// other work, and their busy results are weighed; so are all results
    /// of a series with too few quiet ones to hold a step.
    Quiet,
}

/// The steps of one figure of a series (`entries` in order), significant
/// at `significance`, without attribution.
pub fn find_changes(
    entries: &[Entry],
    figure: SeriesFigure,
    weighed: Weighed,
    significance: f64,
    config: &ChangeConfig,
) -> FigureSteps {
    let values = figure_values(entries, figure);
    // Logarithms: a step of 5% is one size at every level; a figure of 0 cannot be placed.
    if values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        let outliers = vec![false; values.len()];
        return FigureSteps { figure, values, outliers, changes: Vec::new(), first_p: None };
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    // Busy results left out first, so that they change nothing, not even
    // which of their neighbours look like outliers.
    let quiet = |e: &Entry| !(e.figure.busy && e.figure.cpu_bound);
    // A series with too few quiet results to hold a step (a machine always
    // shared) is judged on all of them, rather than not at all.
    let enough_quiet = entries.iter().filter(|e| quiet(e)).count() >= 2 * config.min_segment();
    let weighs = |e: &Entry| weighed == Weighed::All || !enough_quiet || quiet(e);
    // Results not weighed are left out; so are the outliers the search
    // finds among the others.
    let fixed: Vec<bool> = entries.iter().map(|e| !weighs(e)).collect();
    // The search and the levels leave outliers out: one disturbed
    // invocation is not a level, and would pull a step's place towards it.
    let (found, first_p, outlying) = search(entries, figure, &fixed, &logs, significance, config);
    let kept: Vec<usize> = (0..values.len()).filter(|&i| !outlying[i]).collect();
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(found.iter().map(|c| c.index));
    bounds.push(kept.len());
    let higher_is_better = entries.first().is_none_or(|e| e.figure.higher_is_better);
    let changes = found
        .iter()
        .enumerate()
        .map(|(k, c)| {
            // The kept results on each side, as figures.
            let (before, after) = (&kept[bounds[k]..bounds[k + 1]], &kept[bounds[k + 1]..bounds[k + 2]]);
            let figures = |at: &[usize]| at.iter().map(|&i| values[i]).collect::<Vec<f64>>();
            let (bv, av) = (figures(before), figures(after));
            let level = |at: &[usize], v: &[f64]| Level {
                mean: v.iter().sum::<f64>() / v.len() as f64,
                results: at.len(),
                noisy: at.iter().filter(|&&i| entries[i].figure.noise.is_some()).count(),
                busy: at.iter().filter(|&&i| entries[i].figure.busy).count(),
            };
            let (b, a) = (level(before, &bv), level(after, &av));
            let ratio = a.mean / b.mean;
            // Fieller's interval on the smaller side's degrees of freedom
            // less one (Hsu's conservative choice, where Welch's estimate
            // them): the split was chosen as the most different, and on
            // Welch's the interval covered a planted step in 92% of
            // simulated series of 8 (`a_steps_interval_covers_the_planted_step`).
            let df = (bv.len().min(av.len()) as f64 - 1.0).max(1.0);
            let interval = Sample::new(&bv)
                .ok()
                .zip(Sample::new(&av).ok())
                .and_then(|(b, a)| ratio_interval(&b, &a, t_quantile_two_sided(config.confidence, df)));
            Change {
                // The first result at the new level; outliers between the
                // two sides could belong to either (`unplaced` counts them).
                index: kept[c.index],
                unplaced: kept[c.index] - kept[c.index - 1] - 1,
                improved: (ratio > 1.0) == higher_is_better,
                before: b,
                after: a,
                ratio,
                interval,
                p_value: c.p_value,
                figure,
                other: None,
                attribution: None,
                moved: Vec::new(),
            }
        })
        .collect();
    FigureSteps { figure, outliers: outlying, values, changes, first_p }
}

/// The steps of a figure's results (indexes among those not left out),
/// judged with each result's runs ([`crate::stats::replicated_steps`]),
/// the first candidate's p-value, and which results were left out: those
/// `fixed`, and the outliers among the others.
fn search(
    entries: &[Entry],
    figure: SeriesFigure,
    fixed: &[bool],
    logs: &[f64],
    significance: f64,
    config: &ChangeConfig,
) -> (Vec<ChangePoint>, Option<f64>, Vec<bool>) {
    // Every result holds its place (an outlier counts towards a side's
    // fewest results), but only the kept ones give a level and a spread.
    let results: Vec<Replicated> = (0..logs.len())
        .map(|i| {
            let runs = match figure {
                SeriesFigure::Rate => Some(&entries[i].figure.run_values),
                SeriesFigure::PerCpu => entries[i].figure.run_per_cpu.as_ref(),
            };
            // A result whose runs are not recorded counts as its figure alone.
            runs.and_then(|r| Replicated::of_runs(r))
                .filter(|r| (r.value - logs[i]).abs() < 1e-9)
                .unwrap_or(Replicated { value: logs[i], within: 0.0 })
        })
        .collect();
    let step = StepConfig {
        significance,
        min_segment: config.min_segment(),
        seed: config.seed,
        resolution: config.resolution,
        judging: Judging::Segments,
    };
    let searched = replicated_search(&results, fixed, &step);
    let kept: Vec<usize> = (0..logs.len()).filter(|&i| !searched.left_out[i]).collect();
    let found = searched
        .steps
        .into_iter()
        // As the first kept result from the step on (outliers before it are `unplaced`).
        .map(|c| ChangePoint { index: kept.partition_point(|&k| k < c.index), ..c })
        .collect();
    (found, searched.first_p, searched.left_out)
}

/// Each result's figure of the kind the series is judged on.
pub(super) fn figure_values(entries: &[Entry], figure: SeriesFigure) -> Vec<f64> {
    entries
        .iter()
        .map(|e| match figure {
            SeriesFigure::Rate => e.figure.mean,
            SeriesFigure::PerCpu => e.figure.per_cpu.unwrap_or(f64::NAN),
        })
        .collect()
}

/// Which of a series' figures are outliers
/// ([`crate::stats::series_outliers`]), on their logarithms; none where a
/// figure is not positive.
pub fn outliers_of(values: &[f64], min_segment: usize) -> Vec<bool> {
    match values.iter().all(|v| v.is_finite() && *v > 0.0) {
        true => series_outliers(&values.iter().map(|v| v.ln()).collect::<Vec<f64>>(), min_segment),
        false => vec![false; values.len()],
    }
}
