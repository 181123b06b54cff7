//! `compare RESULTS.json --between DIM=A,B`: two values of one dimension a
//! file sweeps (`--share private,shared`, `--fs ext4,xfs`, ...), compared
//! inside that file, every other dimension paired point by point and the
//! runs paired by round. In an interleaved run, round k ran every point's
//! k-th run in one stretch of the machine's time, so a pair's ratio cancels
//! what moved the machine between rounds (warm-up, drift, other load).

use std::collections::BTreeSet;

use super::{compare, CompareConfig, Compared, Comparison};
use crate::results::{Point, ResultsFile};
use crate::vocab::{choice, Cache, Choice, InputError, Mode, Share};

/// A dimension a results file can sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    Fs,
    Share,
    Mode,
    Cache,
    Variant,
}

choice!(Dimension { Fs => "fs", Share => "share", Mode => "mode", Cache => "cache", Variant => "variant" });

/// `DIM=A,B`: the dimension and its two values, A the base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Between {
    pub dimension: Dimension,
    pub base: String,
    pub new: String,
}

impl Between {
    pub fn parse(text: &str) -> Result<Between, InputError> {
        let dims = || Dimension::ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        let malformed = |why: String| InputError::malformed(format!("--between {text}: {why}"));
        let (dim, values) = text
            .split_once('=')
            .ok_or_else(|| malformed(format!("give DIM=A,B, e.g. share=private,shared (DIM: {})", dims())))?;
        let dimension = Dimension::from_name(dim)
            .ok_or_else(|| malformed(format!("'{dim}' is not a dimension; use {}", dims())))?;
        let (base, new) = values.split_once(',').ok_or_else(|| malformed("give two values, base first: A,B".into()))?;
        if base.is_empty() || new.is_empty() || new.contains(',') || base == new {
            return Err(malformed("give two different values, base first: A,B".into()));
        }
        Ok(Between { dimension, base: base.to_string(), new: new.to_string() })
    }
}

impl Between {
    /// The noise threshold unless `--noise-threshold` sets one. Variants,
    /// sharing levels, modes and cache states of one file ran in one
    /// invocation on one filesystem, round by round: what sets two
    /// invocations apart is common to both sides and cancels in the paired
    /// ratio, so the test alone decides. Each `--fs` was made once per
    /// invocation, and what sets one made filesystem apart from the next
    /// (where its blocks fell, its journal) is not measured by its own
    /// rounds, so the threshold stays.
    pub fn default_noise_threshold_pct(&self) -> f64 {
        match self.dimension {
            Dimension::Fs => super::DEFAULT_NOISE_THRESHOLD_PCT,
            Dimension::Share | Dimension::Mode | Dimension::Cache | Dimension::Variant => 0.0,
        }
    }
}

/// A point's value of `dimension`: the made filesystem's label (`dir` for
/// `--dir`), the sharing level, the mode, the cache state (`-` for loops, which have none).
fn value(p: &Point, dimension: Dimension) -> String {
    match dimension {
        Dimension::Fs => p.fs.clone().unwrap_or_else(|| "dir".to_string()),
        Dimension::Share => p.share.name().to_string(),
        Dimension::Mode => p.mode.name().to_string(),
        Dimension::Cache => p.cache.map_or("-", Cache::name).to_string(),
        Dimension::Variant => p.variant.clone().unwrap_or_else(|| "-".to_string()),
    }
}

/// Sets a point's value of `dimension` to `to`, a value another point has.
fn set(p: &mut Point, dimension: Dimension, to: &str) {
    match dimension {
        Dimension::Fs => p.fs = (to != "dir").then(|| to.to_string()),
        Dimension::Share => p.share = Share::from_name(to).unwrap_or(p.share),
        Dimension::Mode => p.mode = Mode::from_name(to).unwrap_or(p.mode),
        Dimension::Cache => p.cache = Cache::from_name(to),
        Dimension::Variant => p.variant = (to != "-").then(|| to.to_string()),
    }
}

/// Compares `between.new`'s points of `doc` against `between.base`'s, paired
/// by every other dimension, and by round with `config.test` paired (see
/// [`TestKind::Paired`](crate::stats::hypothesis::TestKind::Paired), what `compare --between` uses unless told otherwise).
pub fn compare_between(
    doc: &ResultsFile,
    label: &str,
    between: &Between,
    config: &CompareConfig,
) -> Result<Comparison, InputError> {
    let dim = between.dimension;
    let present: BTreeSet<String> = doc.points.iter().filter(|p| !p.runs.is_empty()).map(|p| value(p, dim)).collect();
    for wanted in [&between.base, &between.new] {
        if !present.contains(wanted) {
            let has: Vec<&str> = present.iter().map(String::as_str).collect();
            return Err(InputError::malformed(format!(
                "--between {dim}={},{}: {label} has no point with {dim} {wanted}; its points have {dim} {}",
                between.base,
                between.new,
                has.join(", ")
            )));
        }
    }
    // Each side keeps its points of one value, relabelled with one neutral
    // value so that the points pair on everything else; the rows then name
    // both values (`private→shared`), never the base's for both sides.
    let neutral = match dim {
        Dimension::Fs => "dir",
        Dimension::Cache => "warm",
        Dimension::Variant => "-",
        Dimension::Share | Dimension::Mode => between.base.as_str(),
    };
    let side = |of: &str| {
        let mut side = doc.clone();
        side.points.retain(|p| value(p, dim) == of);
        for p in &mut side.points {
            set(p, dim, neutral);
        }
        side
    };
    let base_label = format!("{label} {dim}={}", between.base);
    let new_label = format!("{label} {dim}={}", between.new);
    let mut c = compare(&side(&between.base), &side(&between.new), &base_label, &new_label, config);
    let compared = Compared { dimension: dim.name().to_string(), base: between.base.clone(), new: between.new.clone() };
    for row in &mut c.rows {
        row.between = Some(compared.clone());
        // The compared filesystem, cache state or variant joins the rest of the condition.
        let words = match dim {
            Dimension::Fs => Some(format!("on {}", compared.arrow())),
            Dimension::Cache => Some(format!("cache {}", compared.arrow())),
            Dimension::Variant => Some(format!("variant {}", compared.arrow())),
            Dimension::Share | Dimension::Mode => None,
        };
        if let Some(words) = words {
            row.condition = Some(match row.condition.take() {
                Some(rest) => format!("{words}, {rest}"),
                None => words,
            });
        }
    }
    c.summaries = super::summarize(&c.rows);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Verdict;
    use crate::results::fixtures::{doc, point, run};
    use crate::stats::hypothesis::TestKind;
    use crate::vocab::Workload;

    #[test]
    fn between_reads_a_dimension_and_two_values_or_says_what_to_give() {
        let b = Between::parse("fs=ext4,ext4:noatime").unwrap();
        assert_eq!((b.dimension, b.base.as_str(), b.new.as_str()), (Dimension::Fs, "ext4", "ext4:noatime"));
        for (text, says) in [
            ("share", "give DIM=A,B"),
            ("color=a,b", "'color' is not a dimension; use fs, share, mode, cache, variant"),
            ("share=private", "give two values"),
            ("share=private,private", "give two different values"),
            ("share=a,b,c", "give two different values"),
        ] {
            let error = Between::parse(text).unwrap_err().to_string();
            assert!(error.starts_with(&format!("--between {text}: ")) && error.contains(says), "{error}");
        }
    }

    /// Runs whose rounds drift together: round k of both sides ran at the
    /// machine's speed `1 + 0.05 k`, the shared side 4% slower each round.
    fn drifting() -> ResultsFile {
        let rates = |level: f64, jitter: [f64; 6]| -> Vec<crate::results::RunRecord> {
            (0..6)
                .map(|k| {
                    let rate = 1000.0 * level * (1.0 + 0.05 * k as f64) * (1.0 + jitter[k]);
                    let mut r = run(k, &[rate as u64], 1.0);
                    r.ops_per_s = rate;
                    r
                })
                .collect()
        };
        let private = rates(1.0, [0.002, -0.003, 0.001, 0.0, -0.002, 0.003]);
        let shared = rates(0.96, [-0.001, 0.002, 0.0, 0.003, -0.002, 0.001]);
        doc(
            6,
            1.0,
            vec![point(Workload::Stat, Share::Private, 1, private), point(Workload::Stat, Share::Shared, 1, shared)],
        )
    }

    #[test]
    fn pairing_by_round_sees_through_drift_that_hides_the_change_from_welch() {
        let config = CompareConfig { test: TestKind::Paired, ..CompareConfig::DEFAULT };
        let d = drifting();
        let between = Between::parse("share=private,shared").unwrap();
        let c = compare_between(&d, "r.json", &between, &config).unwrap();
        assert_eq!((c.base.as_str(), c.new.as_str()), ("r.json share=private", "r.json share=shared"));
        let row = &c.rows[0];
        assert_eq!((row.test, row.verdict), (TestKind::Paired, Verdict::Worse), "{row:?}");
        assert!((row.change_pct + 4.0).abs() < 0.5, "{}", row.change_pct);
        let (lo, hi) = row.change_ci_pct.unwrap();
        assert!(lo < -4.0 && hi > -4.0 && hi < -2.0, "{lo} {hi}");
        // The same runs unpaired: the drift's spread hides the 4% (and trips the drift veto).
        let mut private = d.clone();
        private.points.retain(|p| p.share == Share::Private);
        let mut shared = d;
        shared.points.retain(|p| p.share == Share::Shared);
        shared.points[0].share = Share::Private;
        let unpaired = crate::compare::compare(&private, &shared, "a", "b", &CompareConfig::DEFAULT);
        assert_ne!(unpaired.rows[0].verdict, Verdict::Worse, "{:?}", unpaired.rows[0]);
        // A value the file lacks is named with those it has.
        let missing = Between::parse("share=private,same").unwrap();
        let error = compare_between(&drifting(), "r.json", &missing, &config).unwrap_err().to_string();
        assert_eq!(
            error,
            "--between share=private,same: r.json has no point with share same; its points have share private, shared"
        );
    }
}
