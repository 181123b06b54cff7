//! A verdict `git bisect run` understands: is this revision's result like
//! the known good one's, like the known bad one's, or too noisy to say?
//!
//! Each point is compared as `compare` compares two files (the same test,
//! interval and noise threshold):
//! - significantly worse than the good result, with the noise veto on:
//!   bad (any such point makes the revision bad: bisection looks for the
//!   first revision with the slowdown);
//! - with a bad result given, the two comparisons taken without the veto
//!   and required to agree: worse than good and no better than bad is bad;
//!   no worse than good and better than bad is good. A busy machine can
//!   make one comparison significant, not both in agreement. Where both
//!   are significant (worse than good, better than bad), the revision is
//!   placed on the logarithmic scale between the two references: within
//!   the quarter nearest one of them, it is that one (a busy machine's few
//!   percent beside the slowdown bisected); in the middle half, skip;
//! - without a bad result, anything not worse than good is good;
//! - anything else (too noisy, too few runs, like neither side): skip.

use anyhow::{bail, Result};

use crate::compare::{compare, CompareConfig, Row, Verdict};
use crate::results::ResultsFile;

/// What `git bisect run` is told, by exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateVerdict {
    Good,
    Bad,
    /// Too noisy to say: `git bisect skip`.
    Skip,
}

impl GateVerdict {
    /// 0 good, 1 bad, 125 skip (`git bisect run`'s meanings).
    pub fn exit_code(self) -> u8 {
        match self {
            GateVerdict::Good => 0,
            GateVerdict::Bad => 1,
            GateVerdict::Skip => 125,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            GateVerdict::Good => "good",
            GateVerdict::Bad => "bad",
            GateVerdict::Skip => "skip (too noisy to say)",
        }
    }
}

/// The verdict and, a line per point, why.
#[derive(Clone, Debug)]
pub struct GateDecision {
    pub verdict: GateVerdict,
    pub points: Vec<String>,
}

/// Judges `current` against the `good` result and, when given, the `bad` one.
pub fn judge(
    current: &ResultsFile,
    good: &ResultsFile,
    bad: Option<&ResultsFile>,
    config: &CompareConfig,
) -> Result<GateDecision> {
    let vs_good = compare(good, current, "good", "this revision", config);
    let raw = CompareConfig { noise_veto: false, ..*config };
    let raw_good = compare(good, current, "good", "this revision", &raw);
    let vs_bad = bad.map(|bad| compare(bad, current, "bad", "this revision", &raw));
    if vs_good.rows.is_empty() {
        bail!(
            "this revision's results share no measured point with the good results; run the plan the good results record (fsscale run --like GOOD.json)"
        );
    }
    let same = |a: &Row, b: &Row| {
        (a.condition.as_ref(), a.workload, a.mode, a.share, a.workers)
            == (b.condition.as_ref(), b.workload, b.mode, b.share, b.workers)
    };
    let not_better = |v: Verdict| matches!(v, Verdict::Worse | Verdict::NoDifferenceProven | Verdict::WithinNoise);
    let not_worse = |v: Verdict| matches!(v, Verdict::Better | Verdict::NoDifferenceProven | Verdict::WithinNoise);
    let mut verdicts = Vec::new();
    let mut points = Vec::new();
    for row in &vs_good.rows {
        let unvetoed = raw_good.rows.iter().find(|r| same(r, row)).map_or(row.verdict, |r| r.verdict);
        let against_bad = vs_bad.as_ref().and_then(|c| c.rows.iter().find(|r| same(r, row)));
        let verdict = match (row.verdict, unvetoed, against_bad.map(|r| r.verdict)) {
            _ if row.defined_differently.is_some() => GateVerdict::Skip,
            (Verdict::Worse, _, _) => GateVerdict::Bad,
            (Verdict::TooFewRuns, _, _) => GateVerdict::Skip,
            (_, Verdict::Worse, Some(b)) if not_better(b) => GateVerdict::Bad,
            (_, g, Some(Verdict::Better)) if not_worse(g) => GateVerdict::Good,
            (_, Verdict::Worse, Some(Verdict::Better)) => {
                against_bad.map_or(GateVerdict::Skip, |b| by_position(row.change_pct, b.change_pct))
            }
            (v, _, None) if bad.is_none() && not_worse(v) => GateVerdict::Good,
            _ => GateVerdict::Skip,
        };
        let bad_words = against_bad
            .map_or(String::new(), |r| format!("; against bad {:+.1}% ({})", r.change_pct, r.verdict.words()));
        points.push(format!(
            "{}: {} against good {:+.1}% ({}){bad_words}",
            row.point_words(),
            verdict.word(),
            row.change_pct,
            row.verdict.words()
        ));
        verdicts.push(verdict);
    }
    let verdict = if verdicts.contains(&GateVerdict::Bad) {
        GateVerdict::Bad
    } else if verdicts.iter().all(|v| *v == GateVerdict::Good) {
        GateVerdict::Good
    } else {
        GateVerdict::Skip
    };
    Ok(GateDecision { verdict, points })
}

/// Where a revision worse than good and better than bad lies between them,
/// from its changes against each (percent): `log(current/good) /
/// log(bad/good)`, 0 at good and 1 at bad.
fn by_position(against_good_pct: f64, against_bad_pct: f64) -> GateVerdict {
    let (from_good, from_bad) = ((1.0 + against_good_pct / 100.0).ln(), (1.0 + against_bad_pct / 100.0).ln());
    let span = from_good - from_bad;
    if !(from_good.is_finite() && from_bad.is_finite()) || span == 0.0 {
        return GateVerdict::Skip;
    }
    match from_good / span {
        p if p < 0.25 => GateVerdict::Good,
        p if p > 0.75 => GateVerdict::Bad,
        _ => GateVerdict::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::doc;
    use crate::vocab::Workload::Stat;

    fn runs(level: f64) -> Vec<f64> {
        (0..10).map(|i| level * (1.0 + 0.002 * (i % 5) as f64)).collect()
    }

    #[test]
    fn like_good_is_good_like_bad_is_bad_and_in_between_noise_is_skipped() {
        let (good, bad) = (doc(&[(Stat, 1, &runs(100.0))]), doc(&[(Stat, 1, &runs(50.0))]));
        let config = CompareConfig::DEFAULT;
        let judge_at = |level: f64, bad: Option<&ResultsFile>| {
            judge(&doc(&[(Stat, 1, &runs(level))]), &good, bad, &config).unwrap().verdict
        };
        assert_eq!(judge_at(100.1, Some(&bad)), GateVerdict::Good);
        assert_eq!(judge_at(50.0, Some(&bad)), GateVerdict::Bad);
        // Slower than good at all: bad, even if faster than bad.
        assert_eq!(judge_at(80.0, Some(&bad)), GateVerdict::Bad);
        assert_eq!(judge_at(100.0, None), GateVerdict::Good);
        // A current result so noisy that it is like neither side.
        let noisy: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 20.0 } else { 130.0 }).collect();
        let decision = judge(&doc(&[(Stat, 1, &noisy)]), &good, Some(&bad), &config).unwrap();
        assert_eq!(decision.verdict, GateVerdict::Skip, "{:?}", decision.points);
        assert_eq!([GateVerdict::Good, GateVerdict::Bad, GateVerdict::Skip].map(GateVerdict::exit_code), [0, 1, 125]);
    }

    #[test]
    fn on_a_busy_machine_both_references_must_agree() {
        let (good, bad) = (doc(&[(Stat, 1, &runs(100.0))]), doc(&[(Stat, 1, &runs(50.0))]));
        let busy = |level: f64| {
            let mut d = doc(&[(Stat, 1, &runs(level))]);
            for run in &mut d.points[0].runs {
                run.noise = Some(crate::results::RunNoise { others_cpu: 0.5, ticks: 10_000, ..Default::default() });
            }
            d.points[0].summarize();
            d
        };
        let config = CompareConfig::DEFAULT;
        // Alone, the comparison with good is too noisy to call: with bad agreeing, it is bad.
        let vs_good = crate::compare::compare(&good, &busy(50.0), "good", "new", &config);
        assert_eq!(vs_good.rows[0].verdict, Verdict::TooNoisy);
        assert_eq!(judge(&busy(50.0), &good, Some(&bad), &config).unwrap().verdict, GateVerdict::Bad);
        assert_eq!(judge(&busy(100.0), &good, Some(&bad), &config).unwrap().verdict, GateVerdict::Good);
        // Between the two, on a busy machine: neither agrees.
        assert_eq!(judge(&busy(75.0), &good, Some(&bad), &config).unwrap().verdict, GateVerdict::Skip);
        // Both comparisons significant and contrary (the busy machine slowed
        // this revision's runs a little, bad is far slower): nearest wins.
        assert_eq!(judge(&busy(93.0), &good, Some(&bad), &config).unwrap().verdict, GateVerdict::Good);
        assert_eq!(judge(&busy(53.0), &good, Some(&bad), &config).unwrap().verdict, GateVerdict::Bad);
        assert_eq!(judge(&busy(70.0), &good, Some(&bad), &config).unwrap().verdict, GateVerdict::Skip);
        assert_eq!(by_position(-6.9, 160.9), GateVerdict::Good, "the case seen in a bisection beside other tests");
        // Without a bad reference nothing resolves the noise.
        assert_eq!(judge(&busy(50.0), &good, None, &config).unwrap().verdict, GateVerdict::Skip);
    }

    #[test]
    fn results_with_no_point_in_common_are_an_error() {
        let good = doc(&[(Stat, 1, &runs(100.0))]);
        let other = doc(&[(Stat, 2, &runs(100.0))]);
        let error = judge(&other, &good, None, &CompareConfig::DEFAULT).unwrap_err().to_string();
        assert!(error.contains("share no measured point"), "{error}");
    }
}
