//! Where a series' level stepped, by how much, and why.
//!
//! A series is judged on each result's mean ops/s (or a driver's metric),
//! whatever the load: which figure it is judged on never depends on the
//! results it holds, so one more result cannot move a step already
//! reported. Where every result also has its ops per worker CPU-second
//! with the workers CPU-bound, that figure is searched too, and each step
//! says what the other figure did: ops/s that fall while ops per
//! CPU-second hold point at other work on the machine, not at the change
//! (docs/STATISTICS.md). `--figure cpu` makes the per-CPU figure the
//! series' own. Steps are found on their logarithms, judged with each
//! result's runs ([`crate::stats::replicated_steps`]: a permutation test
//! over a few results cannot reach the significance asked, nor resolve the
//! p-values a false discovery rate across series compares), and held to
//! that rate across the series one query searches (`changes::fdr`). Each found
//! step's levels are the means of the results between it and its
//! neighbouring steps, their ratio with Fieller's 95% interval on Hsu's
//! degrees of freedom.

use serde::Serialize;

pub(crate) mod fdr;
pub(crate) mod figures;
mod search;
mod since;

pub use figures::{unit as changes_unit, OtherFigure};
pub use search::{find_changes, outliers_of, FigureSteps, Weighed};
pub use since::Since;

use super::store::{Entry, Series, Store};
use crate::compare::{attribute, moved, Attribution, MovedStat};
use crate::results::Point;

/// How `history changes` searches.
#[derive(Clone, Copy, Debug)]
pub struct ChangeConfig {
    /// The false discovery rate the steps are held to across the series
    /// one query searches (for one series alone, its significance).
    pub significance: f64,
    /// The fewest results on each side of a step (at least 2).
    pub min_segment: usize,
    /// The null draws' seed: the same series gives the same answer.
    pub seed: u64,
    /// The most recent results of each series read (and shown).
    pub last: usize,
    /// Of those, the most recent searched for steps.
    pub search: usize,
    /// Of the levels' ratio interval, in (0, 1).
    pub confidence: f64,
    /// The series' own figure: ops/s (`Rate`, the default) or per CPU-second.
    pub figure: SeriesFigure,
    /// The smallest p-value a search must tell apart: the significance
    /// over the number of series one query searches ([`changes`] sets it).
    pub resolution: f64,
}

impl ChangeConfig {
    /// A false discovery rate of 1%, 3 results a side at least.
    pub const DEFAULT: ChangeConfig = ChangeConfig {
        significance: 0.01,
        min_segment: 3,
        seed: 0x5eed_c4a9,
        last: 200,
        search: 1000,
        confidence: 0.95,
        figure: SeriesFigure::Rate,
        resolution: 0.01,
    };

    pub fn significance(&self) -> f64 {
        self.significance
    }

    /// The fewest results on each side of a step.
    pub fn min_segment(&self) -> usize {
        self.min_segment.max(2)
    }
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
    /// Of them, results run while other work took the machine.
    pub busy: usize,
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
    /// The figure that stepped.
    pub figure: SeriesFigure,
    /// What the series' other figure did across the same results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other: Option<OtherFigure>,
    /// Outliers just before `index`, between the last result at the old
    /// level and the first at the new: the step may be at any of them.
    pub unplaced: usize,
    /// Whether the figure got better (higher, or lower for a smaller-is-better metric).
    pub improved: bool,
    /// Why, from the profiles of the nearest results on both sides that recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attributed>,
    /// The machine's and the workers' stats that stepped with it: the runs
    /// of the nearest results on each side, as compare lists what moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<MovedStat>,
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
    /// The figure the series is judged on, and its unit.
    pub figure: SeriesFigure,
    pub unit: String,
    /// The other figure searched, where every result has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_figure: Option<SeriesFigure>,
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
    /// The p-value of its most different split: what the false discovery
    /// rate across series selects on. `None`: too short to split.
    pub p_value: Option<f64>,
    /// Its steps, in order.
    pub changes: Vec<Change>,
    /// Where its ops/s as measured stepped with the load while its own
    /// figure did not (a level of busy results): said, not counted as steps.
    pub load: Vec<Change>,
}

/// What `history changes` found in every series it searched.
#[derive(Clone, Debug, Serialize)]
pub struct ChangesFound {
    /// The JSON's form: docs/HISTORY-JSON.md.
    pub schema: &'static str,
    /// Series searched that were long enough to hold a step.
    pub searched: usize,
    /// The false discovery rate the steps are held to across them.
    pub significance: f64,
    pub series: Vec<SeriesChanges>,
}

/// The form of `history changes --format json` (docs/HISTORY-JSON.md).
pub const CHANGES_SCHEMA: &str = "fsscale-history-changes/1";

/// The steps of every series in `series`, held to a false discovery rate
/// of `config.significance()` across them (`changes::fdr`), each attributed from
/// the nearest profiled results on both sides where there are such.
pub fn changes(store: &Store, series: &[Series], config: &ChangeConfig) -> anyhow::Result<ChangesFound> {
    // p-values told apart down to α/m, which the step-up rule compares the smallest with.
    let config = &ChangeConfig { resolution: config.significance() / series.len().max(1) as f64, ..*config };
    let mut read = Vec::new();
    for s in series {
        let entries = store.entries(s.id, Some(config.last))?;
        // Searched: the most recent `search` of them; shown: all.
        let from = entries.len().saturating_sub(config.search);
        let first = figures::search_figures(&entries[from..], config.significance(), config);
        read.push((s, entries, from, first));
    }
    let family: Vec<Option<f64>> = read.iter().map(|r| r.3.p_value()).collect();
    let levels = fdr::selected_levels(&family, config.significance());
    let mut out = Vec::new();
    for ((s, entries, from, first), level) in read.into_iter().zip(levels) {
        let searched = &entries[from..];
        let figures = match level {
            // Selected: searched again at the level the selection leaves it.
            Some(level) if level < config.significance() => figures::search_figures(searched, level, config),
            _ => first,
        };
        let p_value = figures.p_value();
        let mut changes = if level.is_some() { figures.steps() } else { Vec::new() };
        for change in &mut changes {
            change.index += from;
            change.attribution = attribution(store, &entries, change.index)?;
            change.moved = stats_that_stepped(store, &entries, change, config.significance())?;
        }
        let mut load = figures.load_steps();
        load.iter_mut().for_each(|c| c.index += from);
        let primary = &figures.own;
        let values = search::figure_values(&entries, primary.figure);
        out.push(SeriesChanges {
            host: s.host.clone(),
            point: s.identity.describe(),
            figure: primary.figure,
            unit: figures::unit(&entries, primary.figure),
            other_figure: figures.other.as_ref().map(|f| f.figure),
            outliers: outliers_of(&values, config.min_segment()),
            searched: entries.len() - from,
            min_segment: config.min_segment(),
            p_value,
            entries,
            values,
            changes,
            load,
        });
    }
    let searched = family.iter().flatten().count();
    Ok(ChangesFound { schema: CHANGES_SCHEMA, searched, significance: config.significance(), series: out })
}

/// Results read on each side of a step for its stats.
const STATS_RESULTS: usize = 3;

/// The stats that stepped with `change`: the runs of up to
/// [`STATS_RESULTS`] results of its level on each side, nearest first,
/// pooled into one point a side and tested as compare tests a point's
/// (`moved`, the false discovery rate held over the stats at `alpha`).
/// Results of one level are runs of one system, by the step's own test.
fn stats_that_stepped(store: &Store, entries: &[Entry], change: &Change, alpha: f64) -> anyhow::Result<Vec<MovedStat>> {
    let index = change.index;
    let before = &entries[index.saturating_sub(change.before.results.min(STATS_RESULTS))..index];
    let after = &entries[index..(index + change.after.results.min(STATS_RESULTS)).min(entries.len())];
    let pooled = |side: &[Entry]| -> anyhow::Result<Option<Point>> {
        let mut pooled: Option<Point> = None;
        for entry in side {
            let doc = store.document(entry.result)?;
            let Some(point) = doc.points.into_iter().nth(entry.point_index) else { continue };
            match &mut pooled {
                None => pooled = Some(point),
                Some(p) => p.runs.extend(point.runs),
            }
        }
        Ok(pooled)
    };
    Ok(match (pooled(before)?, pooled(after)?) {
        (Some(b), Some(a)) => moved(&b, &a, alpha),
        _ => Vec::new(),
    })
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
