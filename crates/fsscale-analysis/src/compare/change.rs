//! The change a row states, with the two figures it is the ratio of, so
//! that every figure compare prints agrees with the others: the row's base
//! and new figures are exactly what its change divides, whatever the test.

use serde::{Deserialize, Serialize};

use super::CompareConfig;
use crate::stats::distributions::t_quantile_two_sided;
use crate::stats::hierarchical::Invocations;
use crate::stats::hypothesis::{mann_whitney, paired_log_ratio, ratio_interval, student, welch, Pairs, TestKind};
use crate::stats::Sample;

/// What a row's base and new figures are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FigureKind {
    /// The runs' arithmetic means (Welch, Student, Mann–Whitney).
    #[default]
    Mean,
    /// The geometric means of the paired runs (or invocation means): the
    /// geometric mean of the pairs' ratios is exactly their ratio.
    Geomean,
    /// The means of each side's invocation means (the invocation is the unit).
    MeanOfMeans,
}

impl FigureKind {
    /// The word in a column header: `base mean ops/s`.
    pub fn word(self) -> &'static str {
        match self {
            FigureKind::Mean => "mean",
            FigureKind::Geomean => "geomean",
            FigureKind::MeanOfMeans => "mean",
        }
    }
}

/// A side's figures, each with its recorded round (`RunRecord::run`).
pub(super) type ByRound<'a> = &'a [(usize, f64)];

/// A measured change: `pct` is exactly `new / base − 1` in percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Change {
    pub base: f64,
    pub new: f64,
    pub kind: FigureKind,
    pub pct: f64,
    pub ci_pct: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    /// Paired designs: how many pairs the test used.
    pub pairs: Option<usize>,
}

impl Change {
    fn of(base: f64, new: f64, kind: FigureKind) -> Change {
        Change { base, new, kind, pct: (new / base - 1.0) * 100.0, ci_pct: None, p_value: None, pairs: None }
    }
}

/// The change, its confidence interval and the test's p-value, as
/// `config.test` measures them: the ratio of means with Fieller's interval
/// (Student, Welch, Mann–Whitney), the ratio of the paired figures'
/// geometric means with the t interval of their log ratios (paired), or
/// the ratio of the invocation means' means (hierarchical). `rounds` holds
/// each side's figures with their recorded round (`RunRecord::run`): paired
/// runs pair by round, never by their place in the list.
pub(super) fn measure(
    bs: &Sample,
    ns: &Sample,
    rounds: (ByRound<'_>, ByRound<'_>),
    config: &CompareConfig,
    nested: Option<(&Invocations, &Invocations)>,
) -> Change {
    let means = Change::of(bs.mean(), ns.mean(), FigureKind::Mean);
    let fieller = |b: &Sample, n: &Sample, df: f64| {
        let t = t_quantile_two_sided(config.confidence, df.max(1.0));
        // Throughputs and times are positive, so their ratio is too: Fieller's
        // lower bound can fall below 0 on very noisy data, a change below -100%
        // that no measurement can have; it is cut at 0.
        ratio_interval(b, n, t).map(|(lo, hi)| ((lo.max(0.0) - 1.0) * 100.0, (hi.max(0.0) - 1.0) * 100.0))
    };
    let pct = |r: f64| (r - 1.0) * 100.0;
    match config.test {
        TestKind::Student => match student(bs, ns, config.confidence) {
            Ok(t) => Change { ci_pct: fieller(bs, ns, t.df), p_value: Some(t.p_value), ..means },
            Err(_) => means,
        },
        TestKind::Welch => match welch(bs, ns, config.confidence) {
            Ok(t) => Change { ci_pct: fieller(bs, ns, t.df), p_value: Some(t.p_value), ..means },
            Err(_) => means,
        },
        TestKind::MannWhitney => {
            let ci_pct = welch(bs, ns, config.confidence).ok().and_then(|t| fieller(bs, ns, t.df));
            Change { ci_pct, p_value: mann_whitney(bs, ns).ok().map(|m| m.p_value), ..means }
        }
        TestKind::Paired => {
            let (base, new) = match nested {
                // Invocation k of each side, run alternately: their means pair.
                Some((b, n)) => (b.means(), n.means()),
                None => by_round(rounds.0, rounds.1),
            };
            match Pairs::new(&base, &new).and_then(|p| paired_log_ratio(&p, config.confidence)) {
                Ok(r) => Change {
                    ci_pct: Some((pct(r.interval.0), pct(r.interval.1))),
                    p_value: Some(r.p_value),
                    pairs: Some(r.pairs),
                    ..Change::of(geomean(&base), geomean(&new), FigureKind::Geomean)
                },
                Err(_) => means,
            }
        }
        TestKind::Hierarchical => {
            // Each side's invocation means are its sample (see `invocations`);
            // a side of one invocation has only its runs, as Welch takes them.
            let sample = |inv: &Invocations, runs: &Sample| match inv.count() {
                1 => Some(runs.clone()),
                _ => Sample::new(&inv.means()).ok(),
            };
            let sides = nested.and_then(|(b, n)| Some((sample(b, bs)?, sample(n, ns)?)));
            let (b, n) = sides.unwrap_or_else(|| (bs.clone(), ns.clone()));
            let change = Change::of(b.mean(), n.mean(), FigureKind::MeanOfMeans);
            match welch(&b, &n, config.confidence) {
                Ok(t) => Change { ci_pct: fieller(&b, &n, t.df), p_value: Some(t.p_value), ..change },
                Err(_) => change,
            }
        }
    }
}

/// The figures of the rounds both sides ran, in round order.
pub(super) fn by_round(base: ByRound<'_>, new: ByRound<'_>) -> (Vec<f64>, Vec<f64>) {
    let mut pairs: Vec<(usize, f64, f64)> = base
        .iter()
        .filter_map(|&(round, b)| new.iter().find(|(r, _)| *r == round).map(|&(_, n)| (round, b, n)))
        .collect();
    pairs.sort_by_key(|p| p.0);
    pairs.into_iter().map(|(_, b, n)| (b, n)).unzip()
}

/// exp(mean(ln x)): the figure whose ratio is the geometric mean of the pairs' ratios.
fn geomean(values: &[f64]) -> f64 {
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn config(test: TestKind) -> CompareConfig {
        CompareConfig { test, ..CompareConfig::DEFAULT }
    }

    #[test]
    fn runs_pair_by_their_round_not_their_place() {
        // The new side's list is in another order: round 2 first.
        let base = [(0, 100.0), (1, 110.0), (2, 120.0)];
        let new = [(2, 132.0), (0, 110.0), (1, 121.0)];
        let (bs, ns) = (Sample::new(&[100.0, 110.0, 120.0]).unwrap(), Sample::new(&[132.0, 110.0, 121.0]).unwrap());
        let c = measure(&bs, &ns, (&base, &new), &config(TestKind::Paired), None);
        // Every round is exactly 10% faster.
        assert!((c.pct - 10.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c.pairs, Some(3));
        assert_eq!(c.kind, FigureKind::Geomean);
        // A round only one side ran does not pair.
        let c = measure(&bs, &ns, (&base, &new[..2]), &config(TestKind::Paired), None);
        assert_eq!(c.pairs, Some(2));
    }

    proptest! {
        /// Whatever the test, the change is the ratio of the figures shown,
        /// so its sign agrees with base → new.
        #[test]
        fn the_change_is_the_ratio_of_the_figures_it_shows(
            base in prop::collection::vec(1.0f64..1e6, 2..12),
            new in prop::collection::vec(1.0f64..1e6, 2..12),
            test in 0usize..5,
        ) {
            let test = [TestKind::Welch, TestKind::Student, TestKind::MannWhitney, TestKind::Paired, TestKind::Hierarchical][test];
            let rounds = |v: &[f64]| v.iter().copied().enumerate().collect::<Vec<_>>();
            let (bs, ns) = (Sample::new(&base).unwrap(), Sample::new(&new).unwrap());
            let c = measure(&bs, &ns, (&rounds(&base), &rounds(&new)), &config(test), None);
            prop_assert!(((c.new / c.base - 1.0) * 100.0 - c.pct).abs() < 1e-9 * c.pct.abs().max(1.0));
            prop_assert_eq!(c.pct > 0.0, c.new > c.base);
        }
    }
}
