//! What a results file must satisfy before any figure of it is shown or
//! compared, and what makes its figures partial.

use anyhow::{bail, Result};

use super::{ResultsFile, Status, SCHEMA_VERSION};
use crate::vocab::{is_valid_variant_name, VARIANT_NAME_RULE};

/// The largest figure a run may carry: 1e8 times what the fastest
/// syscall loop reaches on one core (about 1e7 ops/s), and far below where
/// the statistics' sums overflow.
pub(crate) const MAX_FIGURE: f64 = 1e15;

/// A figure as a person reads it: `1e308`, not 309 digits.
fn shown(value: f64) -> String {
    crate::vocab::readable_number(value)
}

impl ResultsFile {
    /// Refuses a document this version does not understand or whose
    /// figures cannot be measurements (negative, NaN, infinite).
    /// Refuses what no fsscale run writes: another schema version, and
    /// figures that are negative, not finite, or beyond [`MAX_FIGURE`].
    /// Summaries are not trusted but recomputed from the runs when a file
    /// is read (see `ResultsFile::load`).
    pub fn check(&self) -> Result<()> {
        if self.schema_version != SCHEMA_VERSION {
            bail!(
                "schema_version {} is not one this fsscale reads (it reads {SCHEMA_VERSION}); \
                 use the fsscale that wrote it, or a newer one",
                self.schema_version
            );
        }
        let names = self.settings.variants.iter().map(|v| v.name.as_str());
        let points = self.points.iter().filter_map(|p| p.variant.as_deref());
        if let Some(bad) =
            names.chain(points).chain(self.variant_in_effect.as_deref()).find(|n| !is_valid_variant_name(n))
        {
            bail!("a variant is named {}, which no run gives ({VARIANT_NAME_RULE})", crate::escape::shell_word(bad));
        }
        if let Some(open) = &self.settings.open_loop {
            let mut quantiles: Vec<_> = open.objectives.iter().map(|o| o.quantile).collect();
            quantiles.sort_unstable();
            if quantiles.windows(2).any(|w| w[0] == w[1]) {
                bail!("settings.open_loop.objectives bounds one quantile twice, which no --slo gives");
            }
            if let Some(o) = open.objectives.iter().find(|o| o.limit_ns == 0 || o.limit_ns > crate::vocab::MAX_LIMIT_NS)
            {
                bail!("settings.open_loop.objectives: a limit of {} ns, which no --slo gives", o.limit_ns);
            }
        }
        for point in &self.points {
            let name = || format!("{} at {}", point.workload, crate::vocab::workers(point.workers));
            if point.workers == 0 {
                bail!("{}: a point of 0 workers, which no run has", point.workload);
            }
            if let Some(run) =
                point.runs.iter().chain(&point.warmup_runs).find(|r| r.per_worker_ops.len() > point.workers)
            {
                bail!(
                    "{}, run {}: ops of {}, which no run of {} has",
                    name(),
                    run.run + 1,
                    crate::vocab::workers(run.per_worker_ops.len()),
                    crate::vocab::workers(point.workers)
                );
            }
            for run in &point.runs {
                for (what, value) in [
                    ("ops_per_s", run.ops_per_s),
                    ("ops_per_s_per_worker", run.ops_per_s_per_worker),
                    ("elapsed_s", run.elapsed_s),
                    ("worker_cpu.user_s", run.worker_cpu.user_s),
                    ("worker_cpu.sys_s", run.worker_cpu.sys_s),
                ] {
                    // Below MAX_FIGURE every statistic stays finite (sums of
                    // squares of a million runs included).
                    if !(value.is_finite() && (0.0..=MAX_FIGURE).contains(&value)) {
                        bail!(
                            "{}, run {}: {what} is {}, which no measurement gives",
                            name(),
                            run.run + 1,
                            shown(value)
                        );
                    }
                }
                if let Some(bad) = run.completion_s.iter().flatten().find(|t| !(t.is_finite() && **t >= 0.0)) {
                    bail!("{}, run {}: a completion time is {bad}, which no measurement gives", name(), run.run + 1);
                }
            }
            // Paired comparisons pair runs by this index: two runs of one round cannot both be it.
            let mut rounds: Vec<usize> = point.runs.iter().map(|r| r.run).collect();
            rounds.sort_unstable();
            if let Some(twice) = rounds.windows(2).find(|w| w[0] == w[1]) {
                bail!("{}: two runs say they are run {}, which no run writes", name(), twice[0] + 1);
            }
            if let Some(summary) = &point.summary {
                let s = &summary.ops_per_s;
                for (what, value) in
                    [("mean", s.mean), ("median", s.median), ("stddev", s.stddev), ("min", s.min), ("max", s.max)]
                {
                    if !(value.is_finite() && value >= 0.0) {
                        bail!("{}: summary {what} is {value}, which no measurement gives", name());
                    }
                }
            }
        }
        Ok(())
    }

    /// Why this document's figures are partial, if they are: a run that did
    /// not complete, or points with runs missing. Empty when all is whole.
    pub fn completeness_warnings(&self) -> Vec<String> {
        let mut warnings = self.read_notes.clone();
        if self.status != Status::Complete {
            let why = self.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
            warnings.push(format!("its run did not complete (status {}){why}", self.status.name()));
        }
        if let Some(variant) = &self.variant_in_effect {
            warnings.push(format!(
                "its run stopped after --variant {variant}'s setup ran and before its teardown did: the setup \
                 may still be in effect on that machine; undo it by hand"
            ));
        }
        let partial: Vec<String> = self
            .points
            .iter()
            .filter(|p| !p.complete)
            .map(|p| {
                // With --until-ci a point may take more than -n: it stopped before its cap.
                let planned = match self.settings.max_runs.filter(|&max| max > self.settings.runs) {
                    Some(max) if p.runs.len() >= self.settings.runs => {
                        format!("{} runs, up to {max} until precise", p.runs.len())
                    }
                    _ => format!("{} of {} runs", p.runs.len(), self.settings.runs),
                };
                let on = p.condition().map(|c| format!(" {c}")).unwrap_or_default();
                format!("{}{on} ({}, {}, {} workers: {planned})", p.workload, p.mode, p.share, p.workers)
            })
            .collect();
        if !partial.is_empty() {
            warnings.push(format!("incomplete points: {}", partial.join("; ")));
        }
        warnings
    }
}
