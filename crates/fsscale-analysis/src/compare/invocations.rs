//! `compare A1.json A2.json --vs B1.json B2.json`: several invocations per
//! side (kernels, boots, machines), the invocation the experimental unit.
//! Each point's runs stay nested in their invocation, and each side's
//! spread is split into what varies between invocations and what varies
//! between runs (Kalibera and Jones; see [`crate::stats::hierarchical`]).
//! The change is the ratio of the sides' means of invocation means, and its
//! interval Fieller's on those means with Welch's degrees of freedom: the
//! summary-statistics analysis of a two-level design, whose invocation
//! means carry both levels' variance. (A hierarchical bootstrap, which the
//! same papers describe, called 33 of 200 simulated A/A pairs at three
//! invocations a side; this interval calls 7: docs/STATISTICS.md.) With the
//! spread between invocations measured on both sides, the fixed
//! `--noise-threshold` that stands in for it with one file a side is not applied.
//! With `--test paired` and as many files a side, invocation k of one side
//! pairs with invocation k of the other: a paired t test on the log ratios
//! of their means, for invocations run alternately (A1 B1 A2 B2 ...).

use serde::{Deserialize, Serialize};

use super::{compare_point, figures, key, CompareConfig, Comparison, Row, Verdict};
use crate::results::{Point, ResultsFile};
use crate::stats::hierarchical::{
    detectable_change, invocations_needed, invocations_to_detect, Invocations, VarianceComponents,
};
use crate::stats::hypothesis::TestKind;

/// How each side's figures vary, between and within invocations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvocationStats {
    pub base: VarianceComponents,
    pub new: VarianceComponents,
}

/// What a comparison of invocations could have found at a point, from the
/// spread it measured between them: a change smaller than `change_pct` is
/// missed more than one time in five.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Detectable {
    /// The smallest change found at the comparison's confidence with 80% power, in percent.
    pub change_pct: f64,
    /// Invocations a side it assumes (the smaller side's).
    pub invocations: usize,
    /// `--detect PCT`: the change asked about, and the invocations a side it needs (`None`: more than 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wanted: Option<(f64, Option<usize>)>,
}

/// The power a "could detect" figure promises.
pub const DETECT_POWER: f64 = 0.8;

/// What `row`'s invocations could find, from both sides' spread pooled.
fn detectable(stats: &InvocationStats, config: &CompareConfig) -> Option<Detectable> {
    let (b, n) = (stats.base, stats.new);
    let pooled = |x: Option<f64>, y: Option<f64>| Some(((x?.powi(2) + y?.powi(2)) / 2.0).sqrt());
    let between = pooled(b.between_rel_sd, n.between_rel_sd)?;
    let within = pooled(b.within_rel_sd, n.within_rel_sd).unwrap_or(0.0);
    let runs = b.runs_per_invocation.min(n.runs_per_invocation).round().max(1.0) as usize;
    let count = b.invocations.min(n.invocations);
    let found = |n| detectable_change(between, within, runs, n, config.confidence, DETECT_POWER);
    Some(Detectable {
        change_pct: 100.0 * found(count)?,
        invocations: count,
        wanted: config.detect_pct.map(|pct| {
            let needed = invocations_to_detect(pct / 100.0, between, within, runs, config.confidence, DETECT_POWER);
            (pct, needed)
        }),
    })
}

/// Compares the invocations `new` against `base` (each a label and its
/// results), point by point: a point is compared when every file holds it.
pub fn compare_invocations(
    base: &[(String, ResultsFile)],
    new: &[(String, ResultsFile)],
    config: &CompareConfig,
) -> Comparison {
    let measured = base.len() >= 2 && new.len() >= 2;
    // `--test paired`: invocation k of each side ran one after the other
    // (A1 B1 A2 B2 ...), so what moved the machine between invocations
    // cancels in their means' ratio, as runs pair by round in one file.
    let paired = config.test == TestKind::Paired && measured && base.len() == new.len();
    let config = CompareConfig {
        test: if paired { TestKind::Paired } else { TestKind::Hierarchical },
        noise_threshold_pct: if measured { 0.0 } else { config.noise_threshold_pct },
        ..*config
    };
    let all = || base.iter().chain(new);
    let by_condition = all().any(|(_, doc)| super::conditions(doc) > 1);
    let key = |p: &Point| key(p, by_condition);
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    let Some(((_, first_base), (_, first_new))) = base.first().zip(new.first()) else {
        return Comparison::of(labels(base), labels(new), &config, Vec::new(), Vec::new(), None);
    };
    for b in first_base.points.iter().filter(|p| !p.runs.is_empty()) {
        let k = key(b);
        let describe = |why: &str| {
            let on = k.0.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
            format!("{} {} {} x{}{on} ({why})", k.1, k.2, k.3, k.4)
        };
        let matches = |p: &Point| key(p) == k;
        let side = |files| side(files, &matches, config.figure);
        let ((base_points, base_runs), (new_points, new_runs)) = match (side(base), side(new)) {
            (Ok(b), Ok(n)) => (b, n),
            (Err(why), _) | (_, Err(why)) => {
                unmatched.push(describe(&why.to_string()));
                continue;
            }
        };
        let (Ok(bi), Ok(ni)) = (Invocations::new(base_runs.clone()), Invocations::new(new_runs.clone())) else {
            unmatched.push(describe("a run's figure is not a number of 0 or more"));
            continue;
        };
        let pooled = |runs: Vec<Vec<f64>>| runs.into_iter().flatten().collect::<Vec<f64>>();
        let mut row = compare_point(
            base_points[0],
            new_points[0],
            pooled(base_runs),
            pooled(new_runs),
            &config,
            Some((&bi, &ni)),
        );
        let stats = InvocationStats { base: bi.components(), new: ni.components() };
        row.detectable = detectable(&stats, &config);
        row.invocations = Some(stats);
        if !by_condition {
            row.condition = None;
        }
        rows.push(row);
    }
    for n in first_new.points.iter().filter(|p| !p.runs.is_empty()) {
        if !first_base.points.iter().any(|b| key(b) == key(n) && !b.runs.is_empty()) {
            let on = n.condition().filter(|_| by_condition).map(|c| format!(" {c}")).unwrap_or_default();
            unmatched.push(format!("{} {} {} x{}{on} (new only)", n.workload, n.mode, n.share, n.workers));
        }
    }
    let invocations_note = (!measured).then(|| unmeasured_note(base.len(), new.len(), &rows, &config));
    let mut c = Comparison::of(labels(base), labels(new), &config, rows, unmatched, invocations_note);
    c.set_differences(super::differences(first_base, first_new));
    c.set_profile_hint(first_base, first_new);
    c
}

/// Why a side's invocations cannot be compared at a point.
enum Missing<'a> {
    /// The file (its label) has no runs of the point.
    Point(&'a str),
    /// `--per-cpu`, and a file's runs lack the workers' CPU time.
    CpuTime,
}

impl std::fmt::Display for Missing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Point(label) => write!(f, "not in {label}"),
            Missing::CpuTime => f.write_str("no worker CPU time recorded"),
        }
    }
}

/// Every file's point that `matches`, and its figures; or why one lacks it.
#[allow(clippy::type_complexity)]
fn side<'a>(
    files: &'a [(String, ResultsFile)],
    matches: &dyn Fn(&Point) -> bool,
    figure: super::Figure,
) -> Result<(Vec<&'a Point>, Vec<Vec<f64>>), Missing<'a>> {
    let mut points = Vec::new();
    let mut runs = Vec::new();
    for (label, doc) in files {
        let Some(p) = doc.points.iter().find(|p| matches(p) && !p.runs.is_empty()) else {
            return Err(Missing::Point(label));
        };
        runs.push(figures(p, figure).ok_or(Missing::CpuTime)?);
        points.push(p);
    }
    Ok((points, runs))
}

fn labels(files: &[(String, ResultsFile)]) -> String {
    files.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>().join(" ")
}

/// A side with one invocation: how far apart invocations are is unknown.
fn unmeasured_note(base: usize, new: usize, rows: &[Row], config: &CompareConfig) -> String {
    let sides = match (base, new) {
        (1, 1) => "one per side",
        (1, _) => "one on the base side",
        _ => "one on the new side",
    };
    format!(
        "invocations: {sides}, so how much invocations differ is unknown; ±{}% (--noise-threshold) stands in for it. \
         Give two or more per side (A1.json A2.json A3.json --vs B1.json B2.json B3.json) to measure it{}",
        config.noise_threshold_pct,
        needed(rows, config)
    )
}

/// `compare BASE NEW`: one file per side, what a verdict cannot promise and
/// how many invocations would let it.
pub(super) fn one_per_side_note(rows: &[Row], config: &CompareConfig) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    Some(unmeasured_note(1, 1, rows, config))
}

/// How many invocations per side the smallest change called here needs,
/// if invocations differ by the noise threshold.
fn needed(rows: &[Row], config: &CompareConfig) -> String {
    let called = |r: &&Row| matches!(r.verdict, Verdict::Better | Verdict::Worse | Verdict::WithinNoise);
    let Some(smallest) = rows.iter().filter(called).min_by(|a, b| a.change_pct.abs().total_cmp(&b.change_pct.abs()))
    else {
        return ".".to_string();
    };
    let within = smallest.base.stddev / smallest.base.mean;
    let spread = config.noise_threshold_pct / 100.0;
    match invocations_needed(smallest.change_pct / 100.0, spread, within, smallest.base_runs.len(), config.confidence) {
        Some(n) => format!(
            "; if they differ by {}%, the smallest change called here ({:+.1}%) needs {n} per side.",
            config.noise_threshold_pct, smallest.change_pct
        ),
        None => ".".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::doc;
    use crate::vocab::Workload;

    const CONFIG: CompareConfig = CompareConfig::DEFAULT;

    fn files(prefix: &str, sides: &[&[f64]]) -> Vec<(String, ResultsFile)> {
        sides
            .iter()
            .enumerate()
            .map(|(i, runs)| (format!("{prefix}{}.json", i + 1), doc(&[(Workload::Stat, 1, runs)])))
            .collect()
    }

    #[test]
    fn three_invocations_per_side_call_a_change_the_invocations_spread_cannot_explain() {
        // Invocations 2% apart, runs 0.5% apart; the new side 10% slower.
        let base = files("A", &[&[100.0, 100.5, 99.5], &[102.0, 102.5, 101.5], &[98.0, 98.5, 97.5]]);
        let new = files("B", &[&[90.0, 90.4, 89.6], &[91.8, 92.2, 91.4], &[88.2, 88.6, 87.8]]);
        let c = compare_invocations(&base, &new, &CONFIG);
        assert_eq!((c.base.as_str(), c.new.as_str()), ("A1.json A2.json A3.json", "B1.json B2.json B3.json"));
        assert_eq!((c.noise_threshold_pct, c.invocations_note.as_deref()), (0.0, None));
        let row = &c.rows[0];
        assert_eq!((row.test, row.verdict), (TestKind::Hierarchical, Verdict::Worse));
        assert!((row.change_pct + 10.0).abs() < 0.01, "{}", row.change_pct);
        let (lo, hi) = row.change_ci_pct.unwrap();
        assert!(lo < -10.0 && hi > -10.0 && hi < -5.0, "{lo} {hi}");
        let stats = row.invocations.unwrap();
        assert_eq!((stats.base.invocations, stats.new.invocations), (3, 3));
        assert!((stats.base.between_rel_sd.unwrap() - 0.02).abs() < 0.001, "{stats:?}");
        assert!((stats.base.within_rel_sd.unwrap() - 0.005).abs() < 0.0005, "{stats:?}");
        assert_eq!(row.base_runs.len(), 9, "every run of every invocation");
    }

    #[test]
    fn a_difference_inside_the_invocations_spread_is_not_called() {
        // A 1.5% difference, invocations 3% apart: Welch on pooled runs would call it.
        let base = files("A", &[&[100.0, 100.2, 99.8], &[103.0, 103.2, 102.8], &[97.0, 97.2, 96.8]]);
        let new = files("B", &[&[98.5, 98.7, 98.3], &[101.5, 101.7, 101.3], &[95.5, 95.7, 95.3]]);
        let c = compare_invocations(&base, &new, &CONFIG);
        assert_eq!(c.rows[0].verdict, Verdict::NoDifferenceProven, "{:?}", c.rows[0]);
    }

    #[test]
    fn one_file_a_side_says_the_spread_between_invocations_is_unknown_and_what_would_measure_it() {
        let base = files("A", &[&[100.0, 100.5, 99.5, 100.2, 99.8]]);
        let new = files("B", &[&[95.0, 95.4, 94.6, 95.2, 94.8]]);
        let c = crate::compare::compare(&base[0].1, &new[0].1, "A1.json", "B1.json", &CONFIG);
        assert_eq!(c.rows[0].verdict, Verdict::Worse);
        assert_eq!(
            c.invocations_note.as_deref(),
            Some(
                "invocations: one per side, so how much invocations differ is unknown; ±2% (--noise-threshold) \
                 stands in for it. Give two or more per side (A1.json A2.json A3.json --vs B1.json B2.json B3.json) \
                 to measure it; if they differ by 2%, the smallest change called here (-5.0%) needs 3 per side."
            )
        );
        // Through --vs with one file a side: the same note, the threshold still applied.
        let c = compare_invocations(&base, &new, &CONFIG);
        assert_eq!(c.noise_threshold_pct, 2.0);
        assert!(c.invocations_note.unwrap().starts_with("invocations: one per side"));
        // A point missing from one invocation is named, not compared.
        let mut partial = files("B", &[&[95.0, 95.4], &[95.0, 95.4]]);
        partial[1].1.points.clear();
        let c = compare_invocations(&files("A", &[&[1.0, 1.1], &[1.0, 1.1]]), &partial, &CONFIG);
        assert_eq!(c.unmatched, ["stat process private x1 (not in B2.json)"]);
    }
}
