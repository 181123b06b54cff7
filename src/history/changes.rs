//! Where a series' level stepped, by how much, and why.
//!
//! The figures are the ones compare's verdicts use: each result's mean
//! ops/s, or its ops per worker CPU-second for a series in which the
//! machine was busy in some result (other work moves ops/s, not the
//! workers' own CPU time; docs/STATISTICS.md). Steps are found on their
//! logarithms: in a short series with each result's runs
//! ([`crate::stats::replicated_steps`]: a permutation test over a few
//! results cannot reach the significance asked), in a longer one by
//! E-Divisive means ([`crate::stats::changepoint`]), which assumes nothing
//! of the noise's distribution. Each found step's levels are the means of
//! the results between it and its neighbouring steps, their ratio with
//! Fieller's 95% interval, as compare gives it.

use serde::Serialize;

use super::store::{Entry, Series, Store};
use crate::compare::{attribute, Attribution};
use crate::stats::changepoint::{e_divisive, ChangePoint, ChangePointConfig};
use crate::stats::distributions::t_quantile_two_sided;
use crate::stats::hypothesis::{ratio_interval, welch};
use crate::stats::replicated_steps::{replicated_steps, Replicated, StepConfig};
use crate::stats::Sample;

/// How `history changes` searches.
#[derive(Clone, Copy, Debug)]
pub struct ChangeConfig {
    pub detector: ChangePointConfig,
    /// The most recent results of each series read (and shown).
    pub last: usize,
    /// Of those, the most recent searched for steps: the search is
    /// quadratic in them (1,000 take 0.3 s, 10,000 take 45).
    pub search: usize,
    /// Of the levels' ratio interval, in (0, 1).
    pub confidence: f64,
    /// A series searched with fewer results than this (outliers left out)
    /// is judged with each result's runs; from it on, by permutations.
    pub short_series: usize,
}

impl ChangeConfig {
    /// 16: from there on, E-Divisive's permutation test calls a 5% step
    /// at its place in nearly every series (docs/STATISTICS.md).
    pub const DEFAULT: ChangeConfig = ChangeConfig {
        detector: ChangePointConfig::DEFAULT,
        last: 200,
        search: 1000,
        confidence: 0.95,
        short_series: 16,
    };

    /// The fewest results on each side of a step.
    pub fn min_segment(&self) -> usize {
        self.detector.min_segment.max(2)
    }
}

/// How a step was tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepTest {
    /// A short series: Student's t on the results, their spread held to
    /// their runs', against step-free series like it.
    Replicates,
    /// E-Divisive means' permutation test.
    Permutations,
}

/// Which figure of each result a series is judged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesFigure {
    /// The mean of the runs' figure (ops/s, or a driver's metric).
    Rate,
    /// The mean of the runs' ops per worker CPU-second.
    PerCpu,
}

/// One side of a step: the results between it and the neighbouring step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Level {
    pub mean: f64,
    pub results: usize,
    /// Of them, results whose runs cannot support a verdict on their own (drift, two modes, busy).
    pub noisy: usize,
}

/// A step in a series.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// The index (in the series as searched) of the first result after the step.
    pub index: usize,
    pub before: Level,
    pub after: Level,
    /// after / before, and its interval at the configured confidence
    /// (`None` when a side has one result, or the base is not clear of 0).
    pub ratio: f64,
    pub interval: Option<(f64, f64)>,
    /// The test's p-value (of the most different of the splits searched).
    pub p_value: f64,
    pub test: StepTest,
    /// Outliers just before `index`, between the last result at the old
    /// level and the first at the new: the step may be at any of them.
    pub unplaced: usize,
    /// Whether the figure got better (higher, or lower for a smaller-is-better metric).
    pub improved: bool,
    /// Why, from the profiles of the nearest results on both sides that recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attributed>,
}

impl Change {
    /// The change in percent, `(ratio − 1)·100`.
    pub fn pct(&self) -> f64 {
        (self.ratio - 1.0) * 100.0
    }
}

/// A change's attribution and the two results it compares.
#[derive(Clone, Debug, Serialize)]
pub struct Attributed {
    pub before: String,
    pub after: String,
    pub attribution: Attribution,
}

/// A series with its steps.
#[derive(Clone, Debug, Serialize)]
pub struct SeriesChanges {
    pub host: String,
    pub point: String,
    pub figure: SeriesFigure,
    pub unit: String,
    #[serde(skip)]
    pub entries: Vec<Entry>,
    /// The figure of every result, in order.
    pub values: Vec<f64>,
    /// Which of them are outliers, left out of the search and the levels.
    pub outliers: Vec<bool>,
    /// How many results were searched for steps.
    pub searched: usize,
    /// The fewest results on each side of a step: a series searched with
    /// fewer than twice this has none to find, and a step in its last
    /// `min_segment − 1` results cannot be told yet.
    pub min_segment: usize,
    pub changes: Vec<Change>,
}

/// The figure a series is judged on: per CPU-second where the machine was
/// busy in some result and every result has that figure with its workers
/// CPU-bound (a sleeping worker's CPU time would hide a change in its sleep).
pub fn series_figure(entries: &[Entry]) -> SeriesFigure {
    let busy = entries.iter().any(|e| e.figure.busy);
    match busy && entries.iter().all(|e| e.figure.per_cpu.is_some() && e.figure.cpu_bound) {
        true => SeriesFigure::PerCpu,
        false => SeriesFigure::Rate,
    }
}

/// The steps of one series (`entries` in order), without attribution.
pub fn find_changes(entries: &[Entry], config: &ChangeConfig) -> (SeriesFigure, Vec<f64>, Vec<Change>) {
    let figure = series_figure(entries);
    let values = figure_values(entries, figure);
    // Logarithms: a step of 5% is one size at every level; a figure of 0 cannot be placed.
    if values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return (figure, values, Vec::new());
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let outlying = outliers(&logs);
    // The search and the levels leave outliers out: one disturbed
    // invocation is not a level, and would pull a step's place towards it.
    let kept: Vec<usize> = (0..values.len()).filter(|&i| !outlying[i]).collect();
    let (found, test) = search(entries, figure, &kept, &logs, config);
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
            };
            let (b, a) = (level(before, &bv), level(after, &av));
            let ratio = a.mean / b.mean;
            let interval = Sample::new(&bv).ok().zip(Sample::new(&av).ok()).and_then(|(b, a)| {
                let df = welch(&b, &a, config.confidence).ok()?.df;
                ratio_interval(&b, &a, t_quantile_two_sided(config.confidence, df))
            });
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
                test,
                attribution: None,
            }
        })
        .collect();
    (figure, values, changes)
}

/// The steps among the `kept` results (indexes among them): a short
/// series judged with each result's runs, a longer one by E-Divisive's
/// permutations.
fn search(
    entries: &[Entry],
    figure: SeriesFigure,
    kept: &[usize],
    logs: &[f64],
    config: &ChangeConfig,
) -> (Vec<ChangePoint>, StepTest) {
    if kept.len() >= config.short_series {
        let kept_logs: Vec<f64> = kept.iter().map(|&i| logs[i]).collect();
        return (e_divisive(&kept_logs, &config.detector), StepTest::Permutations);
    }
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
    let mut left_out = vec![true; logs.len()];
    kept.iter().for_each(|&i| left_out[i] = false);
    let step = StepConfig {
        significance: config.detector.significance,
        min_segment: config.min_segment(),
        seed: config.detector.seed,
    };
    let found = replicated_steps(&results, &left_out, &step)
        .into_iter()
        // As the first kept result from the step on (outliers before it are `unplaced`).
        .map(|c| ChangePoint { index: kept.partition_point(|&k| k < c.index), ..c })
        .collect();
    (found, StepTest::Replicates)
}

/// Each result's figure of the kind the series is judged on.
fn figure_values(entries: &[Entry], figure: SeriesFigure) -> Vec<f64> {
    entries
        .iter()
        .map(|e| match figure {
            SeriesFigure::Rate => e.figure.mean,
            SeriesFigure::PerCpu => e.figure.per_cpu.unwrap_or(f64::NAN),
        })
        .collect()
}

/// The steps of every series in `series`, each attributed from the
/// nearest profiled results on both sides where there are such.
pub fn changes(store: &Store, series: &[Series], config: &ChangeConfig) -> anyhow::Result<Vec<SeriesChanges>> {
    let mut out = Vec::new();
    for s in series {
        let entries = store.entries(s.id, Some(config.last))?;
        // Searched: the most recent `search` of them; shown: all.
        let from = entries.len().saturating_sub(config.search);
        let (figure, _, mut changes) = find_changes(&entries[from..], config);
        for change in &mut changes {
            change.index += from;
            change.attribution = attribution(store, &entries, change.index)?;
        }
        let values = figure_values(&entries, figure);
        out.push(SeriesChanges {
            host: s.host.clone(),
            point: s.identity.describe(),
            figure,
            outliers: outliers_of(&values),
            unit: match figure {
                SeriesFigure::Rate => entries.last().map_or_else(String::new, |e| e.figure.unit.clone()),
                SeriesFigure::PerCpu => "ops/cpu-s".to_string(),
            },
            searched: entries.len() - from,
            min_segment: config.min_segment(),
            entries,
            values,
            changes,
        });
    }
    Ok(out)
}

/// The last result before `index` and the first from it on that recorded a
/// profile of a kind both have, compared as compare compares two files' points.
fn attribution(store: &Store, entries: &[Entry], index: usize) -> anyhow::Result<Option<Attributed>> {
    for after in entries[index..].iter().filter(|e| !e.figure.profiles.is_empty()) {
        let shared = |e: &&Entry| e.figure.profiles.iter().any(|p| after.figure.profiles.contains(p));
        let Some(before) = entries[..index].iter().rev().find(shared) else { continue };
        let (b, a) = (store.document(before.result)?, store.document(after.result)?);
        let (Some(bp), Some(ap)) = (b.points.get(before.point_index), a.points.get(after.point_index)) else {
            continue;
        };
        if let Some(attribution) = attribute(bp, ap) {
            return Ok(Some(Attributed {
                before: before.name().to_string(),
                after: after.name().to_string(),
                attribution,
            }));
        }
    }
    Ok(None)
}

/// Which of a series' figures are outliers (see [`outliers`]), on their
/// logarithms; none where a figure is not positive.
pub fn outliers_of(values: &[f64]) -> Vec<bool> {
    match values.iter().all(|v| v.is_finite() && *v > 0.0) {
        true => outliers(&values.iter().map(|v| v.ln()).collect::<Vec<f64>>()),
        false => vec![false; values.len()],
    }
}

/// Results far from their neighbours on both sides: more than
/// [`OUTLIER_SIGMAS`] robust standard deviations from the median of the
/// three results before them and from that of the three after (at either
/// end, the side there is, when it holds two or more). A Hampel filter (Pearson, "Outliers in process
/// modeling and identification", IEEE TCST 10(1), 2002) with its window
/// split in two, so that a result beside a step, which is close to the
/// results on its own side, is never taken for an outlier. The deviation is
/// estimated from successive differences (their MAD / √2), which a step
/// moves only once.
fn outliers(values: &[f64]) -> Vec<bool> {
    let n = values.len();
    let mut out = vec![false; n];
    if n < 7 {
        return out;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        }
    };
    let mut diffs: Vec<f64> = values.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let sigma = 1.4826 * median(&mut diffs) / std::f64::consts::SQRT_2;
    if sigma <= 0.0 {
        return out;
    }
    let far = |i: usize, side: &[f64]| (values[i] - median(&mut side.to_vec())).abs() > OUTLIER_SIGMAS * sigma;
    for (i, flag) in out.iter_mut().enumerate() {
        let before = &values[i.saturating_sub(3)..i];
        let after = &values[i + 1..(i + 4).min(n)];
        // Far from every side that has a result; at either end, from the
        // side there is, when it has two or more. A result with one
        // neighbour after it is held to that one too: judged on the side
        // before alone, the second result after a step near the end would
        // be taken for an outlier.
        *flag = match (before.len(), after.len()) {
            (0, 0..2) | (0..2, 0) => false,
            (0, _) => far(i, after),
            (_, 0) => far(i, before),
            _ => far(i, before) && far(i, after),
        };
    }
    out
}

/// How far from its neighbours a result is an outlier, in robust standard deviations.
pub const OUTLIER_SIGMAS: f64 = 4.0;
