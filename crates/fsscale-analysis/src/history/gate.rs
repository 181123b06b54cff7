//! A verdict `git bisect run` understands: is this revision's result like
//! the known good one's, like the known bad one's, or too noisy to say?
//!
//! One rule, whatever the load: a verdict is a function of the runs'
//! figures alone. No busy mark, drift mark or choice of figure made from
//! the machine's load enters it, so the same results give the same verdict
//! on a quiet and on a busy machine (load only widens the intervals, and a
//! wider interval asks for more runs, never for the other verdict).
//!
//! - With a bad result: at each point where good and bad separate (their
//!   difference significant and beyond the noise threshold), the revision
//!   is placed against the midpoint of the two on a log scale
//!   ([`midpoint_welch`] on the runs' logarithms) and weighed by Wald's
//!   sequential test between "at good's level" and "at bad's"
//!   ([`log_likelihood_ratio`]): a bisection of one step has no revision
//!   between them. Good when good's level is (1 − α)/α times likelier than
//!   bad's, bad the other way round, undecided until then, each round's
//!   runs adding to the last (α = 1 − confidence; 19 to 1 at 95%). A rule
//!   that asked the revision to lie significantly off the midpoint skipped
//!   most revisions of a 10% step beside load (`history::bisections`). Points where
//!   the references do not separate are not judged; where none separates,
//!   the gate cannot judge at all (an error).
//! - Without one: significantly worse than good beyond the noise threshold
//!   is bad; better, or within the threshold, is good; anything else
//!   (no difference proven, too few runs) is undecided.
//! - Any bad point makes the revision bad (bisection looks for the first
//!   revision with the slowdown); good needs every judged point good.
//!   Undecided asks for more runs ([`GateDecision::undecided`]); a point
//!   whose workload is defined differently on the two sides is skipped.
//!
//! The midpoint tests of several points share the error rate (Bonferroni),
//! so more points do not make a wrong "bad" likelier. Each results file is
//! an invocation (a reference given several times, a revision measured in
//! rounds): where invocations differ by more than their runs explain, the
//! test takes the invocation as its unit ([`midpoint_invocations`]), so an
//! invocation's offset is not read as a certainty; elsewhere, the runs.

use anyhow::{bail, Result};

use crate::compare::{compare, CompareConfig, Figure, Row, Verdict};
use crate::results::ResultsFile;
use crate::stats::hypothesis::{log_likelihood_ratio, midpoint_invocations, midpoint_welch};
use crate::stats::Sample;
use crate::vocab::Quantile;

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

/// How the gate judges: the test's confidence, the noise threshold and the figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GateRule {
    /// Confidence level in (0.5, 1).
    pub confidence: f64,
    /// A change inside ±this many percent is no change (compare's threshold).
    pub noise_threshold_pct: f64,
    /// Ops/s, or ops per CPU-second (which other load on the machine moves far less).
    pub figure: Figure,
}

impl GateRule {
    pub const DEFAULT: GateRule = GateRule {
        confidence: 0.95,
        noise_threshold_pct: crate::compare::DEFAULT_NOISE_THRESHOLD_PCT,
        figure: Figure::Throughput,
    };

    /// compare's test without anything read from the machine's load: no
    /// noise veto, no figure switched where a side was busy.
    fn compare_config(&self) -> CompareConfig {
        CompareConfig {
            confidence: self.confidence,
            figure: self.figure,
            noise_threshold_pct: self.noise_threshold_pct,
            noise_veto: false,
            auto_per_cpu: false,
            ..CompareConfig::DEFAULT
        }
    }
}

/// The verdict and, a line per point, why.
#[derive(Clone, Debug)]
pub struct GateDecision {
    pub verdict: GateVerdict,
    pub points: Vec<String>,
    /// A skip that more runs of this revision could turn into a verdict:
    /// some point was undecided (not one defined differently).
    pub undecided: bool,
}

/// One point's call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Good,
    Bad,
    /// The runs do not yet say which: more of them may.
    Undecided,
    /// Not comparable (defined differently): more runs will not help.
    Skip,
    /// Good and bad do not separate here: nothing to place the revision between.
    NotJudged,
}

impl Call {
    fn word(self) -> &'static str {
        match self {
            Call::Good => "good",
            Call::Bad => "bad",
            Call::Undecided => "undecided",
            Call::Skip => "skipped",
            Call::NotJudged => "not judged",
        }
    }
}

/// Judges `current` against the `good` result and, when given, the `bad` one.
pub fn judge(
    current: &[ResultsFile],
    good: &[ResultsFile],
    bad: Option<&[ResultsFile]>,
    rule: &GateRule,
) -> Result<GateDecision> {
    let sides = Sides { current, good, bad: bad.unwrap_or_default() };
    let (current, good) = (&pooled(current)?, &pooled(good)?);
    let bad = bad.map(pooled).transpose()?;
    let config = rule.compare_config();
    let vs_good = compare(good, current, "good", "this revision", &config);
    if vs_good.rows.is_empty() {
        bail!(
            "this revision's results share no measured point with the good results{}; run the plan the good results record (fsscale run --like GOOD.json)",
            figure_note(rule.figure)
        );
    }
    let calls: Vec<(Call, String)> = match bad {
        None => vs_good.rows.iter().map(|row| against_good_only(row, rule.noise_threshold_pct)).collect(),
        Some(bad) => between(current, good, &bad, &vs_good.rows, &sides, rule)?,
    };
    let judged: Vec<Call> = calls.iter().map(|c| c.0).filter(|c| *c != Call::NotJudged).collect();
    let verdict = if judged.contains(&Call::Bad) {
        GateVerdict::Bad
    } else if !judged.is_empty() && judged.iter().all(|c| *c == Call::Good) {
        GateVerdict::Good
    } else {
        GateVerdict::Skip
    };
    let undecided = verdict == GateVerdict::Skip && judged.contains(&Call::Undecided);
    Ok(GateDecision { verdict, points: calls.into_iter().map(|c| c.1).collect(), undecided })
}

/// `--check good|bad`: the revision measured at the start must be what the
/// user says it is, or the bisection cannot be trusted to separate them.
pub fn check(decision: &GateDecision, expected: GateVerdict) -> Result<()> {
    if decision.verdict == expected {
        return Ok(());
    }
    bail!(
        "--check {}: this revision measured {}, not {} ({}); good and bad do not separate on this machine as it is now: measure the references again here, as the bisection will measure (fsscale run --like GOOD.json at each), or give --max-rounds more",
        expected.word(),
        decision.verdict.word(),
        expected.word(),
        decision.points.join("; ")
    )
}

/// Another round of this revision's runs joins the first's: each point's
/// runs are appended to the same point's (numbered on), and its summary
/// made again. Points the first round lacks are left out: a round measures
/// the same plan.
fn add_round(rounds: &mut ResultsFile, more: ResultsFile) {
    let last_position = rounds.points.iter().flat_map(|p| &p.runs).filter_map(|r| r.position).max();
    for point in more.points {
        let Some(into) = rounds.points.iter_mut().find(|p| {
            (p.condition(), p.workload, p.mode, p.share, p.workers)
                == (point.condition(), point.workload, point.mode, point.share, point.workers)
        }) else {
            continue;
        };
        for mut run in point.runs {
            run.run = into.runs.len();
            run.position = run.position.zip(last_position).map(|(p, last)| last + 1 + p);
            into.runs.push(run);
        }
        into.summarize();
    }
}

fn figure_note(figure: Figure) -> &'static str {
    match figure {
        Figure::Throughput => "",
        Figure::OpsPerCpuSecond => " in ops per CPU-second (points without the workers' CPU time have none)",
        Figure::Response(Quantile::P50) => " in response-time p50",
        Figure::Response(Quantile::P99) => " in response-time p99",
        Figure::Response(Quantile::P999) => " in response-time p99.9",
    }
}

fn same_point(a: &Row, b: &Row) -> bool {
    (a.condition.as_ref(), a.workload, a.mode, a.share, a.workers)
        == (b.condition.as_ref(), b.workload, b.mode, b.share, b.workers)
}

/// Without a bad result: worse than good is bad; like or better than good
/// is good, "like" meaning that the interval's worse end stays inside the
/// noise threshold (no difference proven with an interval that reaches past
/// it is undecided: more runs may show the slowdown).
fn against_good_only(row: &Row, threshold_pct: f64) -> (Call, String) {
    let worse_end = row.change_ci_pct.map(|(low, high)| if row.higher_is_better { -low } else { high });
    let call = match row.verdict {
        _ if row.defined_differently.is_some() => Call::Skip,
        Verdict::Worse => Call::Bad,
        Verdict::Better | Verdict::WithinNoise => Call::Good,
        Verdict::NoDifferenceProven if worse_end.is_some_and(|end| end < threshold_pct) => Call::Good,
        Verdict::NoDifferenceProven | Verdict::TooFewRuns | Verdict::TooNoisy => Call::Undecided,
    };
    (
        call,
        format!(
            "{}: {} against good {:+.1}% ({})",
            row.point_words(),
            call.word(),
            row.change_pct,
            row.verdict.words()
        ),
    )
}

/// With a bad result: each point where the references separate places the
/// revision against their midpoint.
fn between(
    current: &ResultsFile,
    good: &ResultsFile,
    bad: &ResultsFile,
    rows: &[Row],
    sides: &Sides,
    rule: &GateRule,
) -> Result<Vec<(Call, String)>> {
    let config = rule.compare_config();
    let references = compare(good, bad, "good", "bad", &config);
    let vs_bad = compare(bad, current, "bad", "this revision", &config);
    let reference_of = |row: &Row| references.rows.iter().find(|r| same_point(r, row));
    let separates = |r: &Row| r.defined_differently.is_none() && matches!(r.verdict, Verdict::Worse | Verdict::Better);
    let separating = rows.iter().filter(|row| reference_of(row).is_some_and(separates)).count();
    if separating == 0 {
        let how: Vec<String> = rows
            .iter()
            .filter_map(|row| reference_of(row).map(|r| (row, r)))
            .map(|(row, r)| {
                format!("{}: bad {:+.1}% against good, {}", row.point_words(), r.change_pct, r.verdict.words())
            })
            .collect();
        bail!(
            "good and bad do not separate at any point this revision measured ({}): there is no step to place it on; measure both again on this machine as it is now, with more runs (-n)",
            if how.is_empty() { "the bad results share none of its points".to_string() } else { how.join("; ") }
        );
    }
    let confidence = 1.0 - (1.0 - rule.confidence) / separating as f64;
    Ok(rows
        .iter()
        .map(|row| {
            let against_bad = vs_bad.rows.iter().find(|r| same_point(r, row));
            let changes = format!(
                "against good {:+.1}%{}",
                row.change_pct,
                against_bad.map_or(String::new(), |r| format!(", against bad {:+.1}%", r.change_pct))
            );
            let point = row.point_words();
            let reference = match reference_of(row) {
                Some(r) if separates(r) => r,
                Some(r) => {
                    let why = format!("bad {:+.1}% against good, {}", r.change_pct, r.verdict.words());
                    return (Call::NotJudged, format!("{point}: not judged, good and bad do not separate here ({why})"));
                }
                None => return (Call::NotJudged, format!("{point}: not judged, the bad results do not measure it")),
            };
            if row.defined_differently.is_some() {
                return (Call::Skip, format!("{point}: skipped, its workload is defined differently ({changes})"));
            }
            let placed = (log_sample(&row.base_runs), log_sample(&reference.new_runs), log_sample(&row.new_runs));
            let (Some(good), Some(bad), Some(this)) = placed else {
                return (Call::Undecided, format!("{point}: undecided, a side has fewer than 2 runs above 0 ({changes})"));
            };
            // Invocations as the unit where a side has several; runs otherwise.
            let invocations = sides.of(row, rule.figure);
            let tested = midpoint_invocations(&invocations[0], &invocations[1], &invocations[2], confidence)
                .or_else(|_| midpoint_welch(&good, &bad, &this, confidence));
            let Ok(t) = tested else {
                return (Call::Undecided, format!("{point}: undecided, too few runs ({changes})"));
            };
            let span = bad.mean() - good.mean();
            // Wald's test between "at good's level" and "at bad's": the
            // chance of the wrong call is 1 − confidence, shared by the points.
            let toward_bad = log_likelihood_ratio(&t, span / 2.0, confidence) * span.signum();
            let bound = (confidence / (1.0 - confidence)).ln();
            let call = if toward_bad >= bound {
                Call::Bad
            } else if toward_bad <= -bound {
                Call::Good
            } else {
                Call::Undecided
            };
            let (low, high) = ((t.difference - t.half_width) / span + 0.5, (t.difference + t.half_width) / span + 0.5);
            // 95, or 97.5 where two points share the 5%.
            let percent = (confidence * 1e5).round() / 1e3;
            (
                call,
                format!(
                    "{point}: {}, {:.2} of the way from good (0) to bad (1), {percent}% interval {:.2} to {:.2}, {}; {changes}",
                    call.word(),
                    t.difference / span + 0.5,
                    low.min(high),
                    low.max(high),
                    odds(toward_bad)
                ),
            )
        })
        .collect())
}

/// How many times likelier bad's level than good's made what was measured.
fn odds(log_ratio: f64) -> String {
    let ratio = log_ratio.abs().exp();
    let ratio = if ratio >= 1e6 { "over a million".to_string() } else { format!("{ratio:.0}") };
    let (likelier, than) = if log_ratio >= 0.0 { ("bad", "good") } else { ("good", "bad") };
    format!("{likelier}'s level {ratio} times likelier than {than}'s")
}

/// Each side's invocations (results files), as measured.
struct Sides<'a> {
    current: &'a [ResultsFile],
    good: &'a [ResultsFile],
    bad: &'a [ResultsFile],
}

impl Sides<'_> {
    /// For `row`'s point, each side's invocations (good, bad, this
    /// revision) as the mean of their runs' logarithms and its variance.
    fn of(&self, row: &Row, figure: Figure) -> [Vec<(f64, f64)>; 3] {
        let side = |files: &[ResultsFile]| -> Vec<(f64, f64)> {
            files
                .iter()
                .flat_map(|f| &f.points)
                .filter(|p| {
                    (p.workload, p.mode, p.share, p.workers) == (row.workload, row.mode, row.share, row.workers)
                        && row.condition.as_ref().is_none_or(|c| p.condition().as_ref() == Some(c))
                })
                .filter_map(|p| {
                    let logs = log_sample(&crate::compare::figures(p, figure)?)?;
                    Some((logs.mean(), logs.variance() / logs.len() as f64))
                })
                .collect()
        };
        [side(self.good), side(self.bad), side(self.current)]
    }
}

/// One side's invocations with their runs pooled point by point.
fn pooled(files: &[ResultsFile]) -> Result<ResultsFile> {
    let Some((first, more)) = files.split_first() else { bail!("a side of the gate has no results file") };
    let mut pooled = first.clone();
    for file in more {
        add_round(&mut pooled, file.clone());
    }
    Ok(pooled)
}

/// The runs' logarithms, where every run is above 0 and there are two.
fn log_sample(runs: &[f64]) -> Option<Sample> {
    if runs.len() < 2 || !runs.iter().all(|v| v.is_finite() && *v > 0.0) {
        return None;
    }
    Sample::new(&runs.iter().map(|v| v.ln()).collect::<Vec<_>>()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::doc;
    use crate::stats::random::SplitMix64;
    use crate::vocab::Workload::{OpenClose, Stat};

    const RULE: GateRule = GateRule::DEFAULT;

    fn runs(level: f64) -> Vec<f64> {
        (0..10).map(|i| level * (1.0 + 0.002 * (i % 5) as f64)).collect()
    }

    fn at(level: f64) -> ResultsFile {
        doc(&[(Stat, 1, &runs(level))])
    }

    /// [`judge`] of one invocation a side.
    fn judge1(
        current: &ResultsFile,
        good: &ResultsFile,
        bad: Option<&ResultsFile>,
        rule: &GateRule,
    ) -> Result<GateDecision> {
        let bad = bad.map(|b| vec![b.clone()]);
        judge(std::slice::from_ref(current), std::slice::from_ref(good), bad.as_deref(), rule)
    }

    fn verdict(current: f64, bad: Option<f64>) -> GateVerdict {
        judge1(&at(current), &at(100.0), bad.map(at).as_ref(), &RULE).unwrap().verdict
    }

    /// The same figures, every run marked as run beside other work.
    fn busy(mut d: ResultsFile) -> ResultsFile {
        for point in &mut d.points {
            for run in &mut point.runs {
                run.noise = Some(crate::results::RunNoise { others_cpu: 0.9, ticks: 10_000, ..Default::default() });
            }
            point.summarize();
        }
        d
    }

    #[test]
    fn a_revision_is_called_by_the_reference_it_is_nearer() {
        assert_eq!(verdict(100.1, Some(50.0)), GateVerdict::Good);
        assert_eq!(verdict(50.0, Some(50.0)), GateVerdict::Bad);
        // 7% slower than good, far faster than bad: good, on any machine.
        assert_eq!(verdict(93.0, Some(50.0)), GateVerdict::Good);
        assert_eq!(verdict(80.0, Some(50.0)), GateVerdict::Good);
        assert_eq!(verdict(60.0, Some(50.0)), GateVerdict::Bad);
        // Exactly between (100 · √0.5): undecided, and more runs could help.
        let middle = judge1(&at(100.0 * 0.5f64.sqrt()), &at(100.0), Some(&at(50.0)), &RULE).unwrap();
        assert_eq!((middle.verdict, middle.undecided), (GateVerdict::Skip, true), "{:?}", middle.points);
        assert!(
            middle.points[0].contains("undecided, 0.50 of the way from good (0) to bad (1)"),
            "{:?}",
            middle.points
        );
        // A current result so noisy that it is like neither side.
        let noisy: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 20.0 } else { 130.0 }).collect();
        let decision = judge1(&doc(&[(Stat, 1, &noisy)]), &at(100.0), Some(&at(50.0)), &RULE).unwrap();
        assert_eq!((decision.verdict, decision.undecided), (GateVerdict::Skip, true), "{:?}", decision.points);
        assert_eq!([GateVerdict::Good, GateVerdict::Bad, GateVerdict::Skip].map(GateVerdict::exit_code), [0, 1, 125]);
    }

    #[test]
    fn without_a_bad_result_worse_than_good_is_bad_and_within_noise_is_good() {
        assert_eq!(verdict(100.1, None), GateVerdict::Good);
        assert_eq!(verdict(101.0, None), GateVerdict::Good);
        assert_eq!(verdict(80.0, None), GateVerdict::Bad);
        let noisy: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 90.0 } else { 110.0 }).collect();
        let decision = judge1(&doc(&[(Stat, 1, &noisy)]), &at(100.0), None, &RULE).unwrap();
        assert_eq!((decision.verdict, decision.undecided), (GateVerdict::Skip, true), "{:?}", decision.points);
    }

    #[test]
    fn busy_marks_do_not_change_a_verdict() {
        for (current, bad) in [(100.1, Some(50.0)), (93.0, Some(50.0)), (55.0, Some(50.0)), (80.0, None), (100.0, None)]
        {
            let quiet = judge1(&at(current), &at(100.0), bad.map(at).as_ref(), &RULE).unwrap();
            let marked =
                judge1(&busy(at(current)), &busy(at(100.0)), bad.map(|b| busy(at(b))).as_ref(), &RULE).unwrap();
            assert_eq!((quiet.verdict, quiet.undecided), (marked.verdict, marked.undecided), "{current} {bad:?}");
            assert_eq!(quiet.points, marked.points);
        }
    }

    #[test]
    fn points_where_good_and_bad_do_not_separate_are_not_judged() {
        let two = |stat: f64, open: f64| doc(&[(Stat, 1, &runs(stat)), (OpenClose, 1, &runs(open))]);
        // Only stat slowed between good and bad; open-close is not judged.
        let decision = judge1(&two(52.0, 100.0), &two(100.0, 100.0), Some(&two(50.0, 100.0)), &RULE).unwrap();
        assert_eq!(decision.verdict, GateVerdict::Bad, "{:?}", decision.points);
        assert!(decision.points[1].contains("not judged, good and bad do not separate here"), "{:?}", decision.points);
        let decision = judge1(&two(99.0, 60.0), &two(100.0, 100.0), Some(&two(50.0, 100.0)), &RULE).unwrap();
        assert_eq!(decision.verdict, GateVerdict::Good, "{:?}", decision.points);
        // Nowhere: the gate cannot judge.
        let error = judge1(&at(90.0), &at(100.0), Some(&at(100.5)), &RULE).unwrap_err().to_string();
        assert!(error.contains("good and bad do not separate at any point"), "{error}");
        assert!(error.contains("stat process private x1: bad +0.5% against good, within noise"), "{error}");
    }

    #[test]
    fn check_passes_what_the_user_said_and_stops_otherwise() {
        let good_again = judge1(&at(100.2), &at(100.0), Some(&at(50.0)), &RULE).unwrap();
        check(&good_again, GateVerdict::Good).unwrap();
        let error = check(&good_again, GateVerdict::Bad).unwrap_err().to_string();
        assert!(
            error.starts_with("--check bad: this revision measured good, not bad (stat process private x1: good"),
            "{error}"
        );
    }

    #[test]
    fn a_round_adds_its_runs_to_the_same_points() {
        let mut rounds = doc(&[(Stat, 1, &runs(100.0)), (Stat, 2, &runs(200.0))]);
        add_round(&mut rounds, doc(&[(Stat, 2, &[190.0, 210.0]), (OpenClose, 1, &[1.0, 2.0])]));
        assert_eq!(rounds.points.len(), 2);
        assert_eq!(rounds.points[0].runs.len(), 10);
        let second = &rounds.points[1];
        assert_eq!(second.runs.len(), 12);
        assert_eq!(second.runs.iter().map(|r| r.run).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());
        assert_eq!(second.runs[11].ops_per_s, 210.0);
        assert_eq!(second.summary.as_ref().map(|s| s.ops_per_s.n), Some(12));
    }

    #[test]
    fn results_with_no_point_in_common_are_an_error() {
        let other = doc(&[(Stat, 2, &runs(100.0))]);
        let error = judge1(&other, &at(100.0), None, &RULE).unwrap_err().to_string();
        assert!(error.contains("share no measured point"), "{error}");
    }

    /// Ten runs at `level` as a machine with `load` (the share of the CPUs
    /// other work takes, 0 to 1) measures them: other work slows every run
    /// by up to half of it and spreads them (0.5% quiet, 3.5% at full load),
    /// and marks them busy.
    fn measured(level: f64, load: f64, rng: &mut SplitMix64) -> ResultsFile {
        let offset = 1.0 + 0.015 * rng.normal();
        let values: Vec<f64> = (0..10)
            .map(|_| {
                let slowed = 1.0 - 0.5 * load * rng.unit();
                level * offset * slowed * (1.0 + (0.005 + 0.03 * load) * rng.normal())
            })
            .collect();
        let d = doc(&[(Stat, 1, &values)]);
        if load > 0.0 {
            busy(d)
        } else {
            d
        }
    }

    /// Over load levels, references measured beside the same load (as
    /// `--check` measures them), 200 seeds each, undecided revisions measured
    /// again up to 3 rounds: a revision 7% slower than
    /// good with bad at half is good at every load; one at bad's level is
    /// bad; one a quarter of the way (a partial slowdown) is bad no more
    /// often than the test's 5%, and one just on good's side of the
    /// midpoint is called good more often than bad.
    #[test]
    fn one_rule_whatever_the_load() {
        for load in [0.0, 0.3, 0.6, 0.9] {
            let tally = |level: f64| {
                let mut rng = SplitMix64::new(7 + (load * 10.0) as u64);
                let mut counts = [0usize; 3];
                for _ in 0..200 {
                    // Each reference measured twice, alternately, as bench/bisect.sh does.
                    let (mut good, mut bad) = (Vec::new(), Vec::new());
                    for _ in 0..2 {
                        good.push(measured(100.0, load, &mut rng));
                        bad.push(measured(50.0, load, &mut rng));
                    }
                    let mut rounds = vec![measured(level, load, &mut rng)];
                    let mut decision = judge(&rounds, &good, Some(&bad), &RULE).unwrap();
                    // As the gate does: up to 3 rounds where undecided, each an invocation.
                    for _ in 1..3 {
                        if !decision.undecided {
                            break;
                        }
                        rounds.push(measured(level, load, &mut rng));
                        decision = judge(&rounds, &good, Some(&bad), &RULE).unwrap();
                    }
                    counts[decision.verdict.exit_code() as usize % 3] += 1;
                }
                counts // [good, bad, skip] (0, 1, 125 % 3 = 2)
            };
            let seven = tally(93.0);
            assert_eq!(seven, [200, 0, 0], "7% slower than good at load {load}: [good, bad, skip]");
            let at_bad = tally(50.0);
            assert_eq!(at_bad, [0, 200, 0], "at bad's level, load {load}");
            let quarter = tally(100.0 * 0.5f64.powf(0.25));
            assert!(quarter[1] <= 10, "a quarter of the way to bad, load {load}: {quarter:?}");
            let near_middle = tally(75.0);
            assert!(near_middle[0] > near_middle[1], "just on good's side of the middle, load {load}: {near_middle:?}");
            // docs/STATISTICS.md's table (with --nocapture).
            let row = |c: [usize; 3]| format!("{} / {} / {}", c[0], c[1], c[2]);
            println!("| {load} | {} | {} | {} | {} |", row(seven), row(at_bad), row(quarter), row(near_middle));
        }
    }

    /// Invocations 3% apart (a shared machine's), runs 0.5%, a 10% step:
    /// judged on its runs alone a good revision is often "bad" (its
    /// invocation's offset looks certain); held to how much the references'
    /// two invocations each differ, it is bad at most as often as the test's 5%.
    #[test]
    fn a_revision_is_held_to_how_much_invocations_differ() {
        let mut rng = SplitMix64::new(31);
        let mut invocation = |level: f64| {
            let offset = (0.03 * rng.normal()).exp();
            let runs: Vec<f64> = (0..10).map(|_| level * offset * (1.0 + 0.005 * rng.normal())).collect();
            doc(&[(Stat, 1, &runs)])
        };
        let (mut wrong_by_runs, mut wrong_by_invocations) = (0, 0);
        for _ in 0..200 {
            let good = vec![invocation(100.0), invocation(100.0)];
            let bad = vec![invocation(90.0), invocation(90.0)];
            let current = vec![invocation(100.0)];
            // References that do not separate stop the gate: never a wrong call.
            let by_invocations = judge(&current, &good, Some(&bad), &RULE);
            wrong_by_invocations += usize::from(by_invocations.is_ok_and(|d| d.verdict == GateVerdict::Bad));
            let by_runs = judge1(&current[0], &good[0], Some(&bad[0]), &RULE);
            wrong_by_runs += usize::from(by_runs.is_ok_and(|d| d.verdict == GateVerdict::Bad));
        }
        assert!(wrong_by_invocations <= 10, "{wrong_by_invocations} of 200 good revisions called bad");
        assert!(
            wrong_by_runs > wrong_by_invocations,
            "runs alone: {wrong_by_runs}, invocations: {wrong_by_invocations}"
        );
    }
}
