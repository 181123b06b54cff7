//! Scaling analysis of results: for every series (workload × mode × share)
//! the speedup, efficiency and per-worker rate at each worker count, a
//! Universal Scalability Law fit over every run, the regime in words and a
//! collapse flag. Also fits two-column (N, throughput) data from other tools.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::results::ResultsFile;
use crate::stats::scaling::{
    collapse, observed_peak, regime, scaling_points, Collapse, ObservedPeak, Regime, ScalingPoint,
};
use crate::stats::usl::{fit, UslFit};
use crate::stats::Sample;
use crate::vocab::Mode;
use crate::vocab::{Share, Workload};

/// The most `analyze --csv` reads: a million `N,X` lines are about 20 MiB.
pub const MAX_PAIRS_BYTES: u64 = 64 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesAnalysis {
    /// "stat (process, private)", or the CSV file's name.
    pub label: String,
    pub workload: Option<Workload>,
    pub mode: Option<Mode>,
    pub share: Option<Share>,
    /// What else the series was measured on (`on ext4`, `cold cache`): see `Point::condition`.
    #[serde(default, alias = "fs", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// What the throughput is counted in: `ops/s`, `entries/s`, `runs/s`,
    /// a driver metric's name, or `1/(name)` for a smaller-is-better one.
    #[serde(default = "default_unit")]
    pub unit: String,
    pub points: Vec<ScalingPoint>,
    pub fit: Option<UslFit>,
    /// Why there is no fit.
    pub fit_refused: Option<String>,
    /// The regime, only when the fit supports one (see [`regime`]).
    pub regime: Option<Regime>,
    /// Why a fit names no regime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime_refused: Option<String>,
    /// The peak and the end of the series, from the data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedPeak>,
    pub collapse: Option<Collapse>,
}

fn default_unit() -> String {
    "ops/s".to_string()
}

/// Analyzes every series of a results file, in the file's order. Open
/// loops (`--rate`) are no scaling series: their ops/s is the rate asked.
pub fn analyze_results(doc: &ResultsFile) -> Vec<SeriesAnalysis> {
    let mut keys: Vec<(Workload, Mode, Share, Option<String>)> = Vec::new();
    for p in doc.points.iter().filter(|p| p.summary.is_some() && p.rate.is_none()) {
        let k = (p.workload, p.mode, p.share, p.condition());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(workload, mode, share, condition)| {
            let points: Vec<_> = doc
                .points
                .iter()
                .filter(|p| (p.workload, p.mode, p.share) == (workload, mode, share) && p.condition() == condition)
                .filter(|p| p.summary.is_some() && p.rate.is_none())
                .collect();
            let medians: Vec<(usize, f64)> = points
                .iter()
                .map(|p| (p.workers, p.as_throughput(p.summary.as_ref().expect("filtered").ops_per_s.median)))
                .collect();
            let runs: Vec<(f64, f64)> = points
                .iter()
                .flat_map(|p| p.runs.iter().map(|r| (p.workers as f64, p.as_throughput(r.ops_per_s))))
                .collect();
            let on = condition.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
            let mut analysis = analyze_series(&format!("{workload} ({mode}, {share}){on}"), &medians, &runs);
            analysis.unit = points.first().map(|p| p.throughput_unit()).unwrap_or_else(default_unit);
            analysis.condition = condition;
            analysis.workload = Some(workload);
            analysis.mode = Some(mode);
            analysis.share = Some(share);
            analysis
        })
        .collect()
}

/// `medians`: one throughput per worker count (for speedup and collapse);
/// `observations`: every measurement, which the fit uses.
pub(crate) fn analyze_series(label: &str, medians: &[(usize, f64)], observations: &[(f64, f64)]) -> SeriesAnalysis {
    let points = scaling_points(medians);
    let max_workers = points.iter().map(|p| p.workers).max().unwrap_or(1) as f64;
    let (fit, fit_refused) = match fit(observations) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let verdict = fit.as_ref().map(|f| regime(f, max_workers));
    SeriesAnalysis {
        label: label.to_string(),
        condition: None,
        workload: None,
        mode: None,
        share: None,
        unit: default_unit(),
        regime: verdict.clone().and_then(Result::ok),
        regime_refused: verdict.and_then(Result::err).map(|why| why.to_string()),
        observed: observed_peak(&points),
        collapse: collapse(&points).map(|c| c.judged_by(|n| relative_sd(observations, n))),
        points,
        fit,
        fit_refused,
    }
}

/// The relative standard deviation of the observations at `workers`, from two of them on.
fn relative_sd(observations: &[(f64, f64)], workers: usize) -> Option<f64> {
    let at: Vec<f64> = observations.iter().filter(|(n, _)| *n == workers as f64).map(|(_, x)| *x).collect();
    let sample = Sample::new(&at).ok()?;
    (at.len() >= 2 && sample.mean() > 0.0).then(|| sample.stddev() / sample.mean())
}

/// Reads "N, throughput" pairs: one per line, separated by a comma,
/// semicolon, tab or spaces; `#` comments, blank lines and one header line
/// are skipped. N must be a whole number of at least 1.
pub fn parse_pairs(text: &str, name: &str) -> Result<Vec<(usize, f64)>> {
    let mut pairs = Vec::new();
    let mut header_allowed = true;
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> =
            line.split(|c: char| c == ',' || c == ';' || c.is_whitespace()).filter(|f| !f.is_empty()).collect();
        let numbers: Option<Vec<f64>> = fields.iter().map(|f| f.parse::<f64>().ok()).collect();
        match numbers {
            Some(n) if n.len() == 2 => {
                header_allowed = false;
                let (workers, x) = (n[0], n[1]);
                if !(workers >= 1.0 && workers.fract() == 0.0 && workers <= 1e9) {
                    bail!("{name} line {}: N must be a whole number of at least 1, got {workers}", index + 1);
                }
                if !(x.is_finite() && x > 0.0) {
                    bail!("{name} line {}: throughput must be a positive number, got {x}", index + 1);
                }
                pairs.push((workers as usize, x));
            }
            None if header_allowed && fields.len() == 2 => header_allowed = false,
            _ => bail!("{name} line {}: expected two numbers (N and throughput), got \"{line}\"", index + 1),
        }
    }
    if pairs.is_empty() {
        bail!("{name} holds no (N, throughput) pairs");
    }
    Ok(pairs)
}

/// Analyzes pairs from another tool: repeated N are averaged for the
/// speedup table, and every pair goes into the fit.
pub fn analyze_pairs(name: &str, pairs: &[(usize, f64)]) -> SeriesAnalysis {
    let mut medians: Vec<(usize, f64)> = Vec::new();
    let mut counts: Vec<usize> = pairs.iter().map(|p| p.0).collect();
    counts.sort_unstable();
    counts.dedup();
    for n in counts {
        let values: Vec<f64> = pairs.iter().filter(|p| p.0 == n).map(|p| p.1).collect();
        let median = Sample::new(&values).expect("every listed N has a value").median();
        medians.push((n, median));
    }
    let observations: Vec<(f64, f64)> = pairs.iter().map(|&(n, x)| (n as f64, x)).collect();
    analyze_series(name, &medians, &observations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_with_header_comments_and_separators() {
        let text = "load,throughput\n# SPEC SDM91\n1, 64.9\n18;995.9\n36\t1652.4\n\n72 1853.2 # peak-ish\n";
        assert_eq!(parse_pairs(text, "f").unwrap(), [(1, 64.9), (18, 995.9), (36, 1652.4), (72, 1853.2)]);
    }

    #[test]
    fn bad_lines_name_the_line() {
        assert_eq!(
            parse_pairs("1,2\nx,y\n", "f.csv").unwrap_err().to_string(),
            "f.csv line 2: expected two numbers (N and throughput), got \"x,y\""
        );
        assert_eq!(
            parse_pairs("0.5,2\n", "f.csv").unwrap_err().to_string(),
            "f.csv line 1: N must be a whole number of at least 1, got 0.5"
        );
        assert!(parse_pairs("# nothing\n", "f.csv").unwrap_err().to_string().contains("no (N, throughput) pairs"));
    }

    #[test]
    fn analyzes_specsdm91() {
        let pairs = [(1, 64.9), (18, 995.9), (36, 1652.4), (72, 1853.2), (108, 1828.9), (144, 1775.0), (216, 1702.2)];
        let a = analyze_pairs("specsdm91", &pairs);
        assert_eq!(a.regime, Some(Regime::CoherencyBound));
        assert_eq!(a.collapse, None);
        assert!((a.points[1].speedup.unwrap() - 995.9 / 64.9).abs() < 1e-12);
    }

    /// Runs of a series that falls from 1000 at 2 workers to 300 at 4,
    /// each point's runs `spread` apart around its median.
    fn falling(spread: f64) -> SeriesAnalysis {
        let medians = [(1, 600.0), (2, 1000.0), (3, 700.0), (4, 300.0)];
        let runs: Vec<(f64, f64)> = medians
            .iter()
            .flat_map(|&(n, x)| [x * (1.0 - spread), x, x * (1.0 + spread)].map(|v| (n as f64, v)))
            .collect();
        analyze_series("falling", &medians, &runs)
    }

    #[test]
    fn a_collapse_within_the_runs_noise_is_marked_noisy_not_called() {
        let quiet = falling(0.05);
        let collapse = quiet.collapse.as_ref().unwrap();
        assert_eq!((collapse.peak_workers, collapse.last_workers, collapse.noisy_sd), (2, 4, None));
        let line = crate::report::verdict_line(&quiet);
        assert!(line.contains("; COLLAPSE: 300.00 ops/s at 4 workers, 30% of the peak at 2"), "{line}");
        // sd of 70%: as the runs the issue saw.
        let noisy = falling(0.7);
        let sd = noisy.collapse.as_ref().unwrap().noisy_sd.unwrap();
        assert!((sd - 0.7).abs() < 1e-9, "{sd}");
        let line = crate::report::verdict_line(&noisy);
        assert!(!line.contains("COLLAPSE"), "{line}");
        assert!(
            line.contains(
                "falls to 30% of its peak at 4 workers, but its runs are too noisy to call a collapse (sd up to 70%"
            ),
            "{line}"
        );
    }

    #[test]
    fn a_refused_fit_shows_no_parameters() {
        // Noisy, non-monotone data: the fit exists but supports no regime.
        let a = falling(0.7);
        assert!(a.fit.is_some() && a.regime.is_none(), "{a:?}");
        let text = crate::report::render_analysis(&[a]);
        assert!(!text.contains("USL: λ") && !text.contains("Amdahl") && !text.contains("serial fraction"), "{text}");
        assert!(text.contains("no reliable USL fit: "), "{text}");
    }
}
