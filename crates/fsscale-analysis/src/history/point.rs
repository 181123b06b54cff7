//! What a history series is keyed by, and the figure each result adds to it.

use std::fmt::Write;

use crate::instruments::Instrument;
use crate::results::{Point, ResultsFile};
use crate::vocab::{Choice, Quantile, Rate};

/// The form of [`Identity::key`]. A series is found by its key, so a change
/// to what the key holds or how it is written re-keys every stored series:
/// it takes a new version here and a store migration that re-keys them
/// (the key of a fixed identity is pinned by a test).
pub(crate) const KEY_VERSION: u32 = 1;

/// A point's identity across results: two results' points with equal
/// identities on one host measured the same thing, and form a series.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    pub workload: String,
    /// Exactly what one counted op is.
    pub op: String,
    pub mode: String,
    pub share: String,
    pub workers: usize,
    /// The `--fs` configuration with its mount options (`ext4:noatime`), as
    /// asked for: what the kernel reports by default may change with the
    /// kernel under test, which must not split its series.
    pub fs: Option<String>,
    /// `cold` when caches were dropped before each run.
    pub cache: Option<String>,
    pub variant: Option<String>,
    /// `--memory-limit`, in bytes as the kernel took it.
    pub memory_limit: Option<u64>,
    /// An open loop's rate (`--rate`): its series is of response times at it.
    pub rate: Option<Rate>,
}

impl Identity {
    pub fn of(doc: &ResultsFile, point: &Point) -> Identity {
        Identity {
            workload: point.workload.to_string(),
            op: point.op.clone(),
            mode: point.mode.to_string(),
            share: point.share.to_string(),
            workers: point.workers,
            fs: point.fs.clone(),
            cache: point.cache.map(|c| c.to_string()),
            variant: point.variant.clone(),
            memory_limit: doc.settings.memory_limit.as_ref().map(|m| m.bytes),
            rate: point.rate,
        }
    }

    /// `stat process private x2`, then what else sets it apart: `on ext4,
    /// cold cache, variant on, memory limit 256 MiB`.
    pub fn describe(&self) -> String {
        let mut words = format!("{} {} {} x{}", self.workload, self.mode, self.share, self.workers);
        if let Some(rate) = self.rate {
            words.push_str(&format!(" at {rate}/s"));
        }
        let extra: Vec<String> = [
            self.fs.as_ref().map(|f| format!("on {f}")),
            self.cache.as_ref().filter(|c| *c == "cold").map(|_| "cold cache".to_string()),
            self.variant.as_ref().map(|v| format!("variant {v}")),
            self.memory_limit.map(|b| format!("memory limit {}", crate::vocab::format_size(b))),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !extra.is_empty() {
            words.push_str(", ");
            words.push_str(&extra.join(", "));
        }
        words
    }

    /// The rate as a store's column holds it (ops a second).
    pub(crate) fn rate_column(&self) -> Option<f64> {
        self.rate.map(Rate::ops_per_s)
    }

    /// The memory limit as a store's signed 64-bit column holds it.
    pub(crate) fn memory_limit_column(&self) -> anyhow::Result<Option<i64>> {
        self.memory_limit
            .map(i64::try_from)
            .transpose()
            .map_err(|_| anyhow::anyhow!("a memory limit of 8 EiB or more cannot be recorded"))
    }

    /// The store's key of the series: one line of text, equal exactly when
    /// the identities are, written in a form of its own (not a
    /// serialisation of this struct, which a new field or a reordering
    /// would change): `fsscale-series/1`, then `;name=value` for each field
    /// that is set, in a fixed order, with `%`, `;`, `=` and control
    /// characters percent-escaped.
    pub fn key(&self) -> String {
        let mut key = format!("fsscale-series/{KEY_VERSION}");
        let mut field = |name: &str, value: Option<&str>| {
            if let Some(value) = value {
                key.push(';');
                key.push_str(name);
                key.push('=');
                for c in value.chars() {
                    match c {
                        '%' | ';' | '=' | '\u{0}'..='\u{1f}' | '\u{7f}' => {
                            let _ = write!(key, "%{:02X}", c as u32);
                        }
                        c => key.push(c),
                    }
                }
            }
        };
        field("workload", Some(&self.workload));
        field("op", Some(&self.op));
        field("mode", Some(&self.mode));
        field("share", Some(&self.share));
        field("workers", Some(&self.workers.to_string()));
        field("fs", self.fs.as_deref());
        field("cache", self.cache.as_deref());
        field("variant", self.variant.as_deref());
        field("memory_limit", self.memory_limit.map(|b| b.to_string()).as_deref());
        // Exact and canonical (`20k`, `2.5k`): a closed loop's key has no such field, so adding it split no series.
        field("rate", self.rate.map(|r| r.to_string()).as_deref());
        key
    }
}

/// What one result adds to a point's series.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The mean of the runs' figures (ops/s, or a driver's metric), as
    /// compare's verdicts take it.
    pub mean: f64,
    /// The mean of the runs' ops per worker CPU-second, when every run has one.
    pub per_cpu: Option<f64>,
    pub runs: usize,
    /// Each run's figure (ops/s, or the driver's metric), in run order: a
    /// result's spread, which steps are judged with.
    pub run_values: Vec<f64>,
    /// Each run's ops per worker CPU-second, when every run has one.
    pub run_per_cpu: Option<Vec<f64>>,
    /// Other work took the machine in more than a fifth of the runs.
    pub busy: bool,
    /// The workers were CPU-bound (compare's rule): only then does ops per
    /// CPU-second measure what an op costs, where other work took the machine.
    pub cpu_bound: bool,
    /// Why the runs cannot support a verdict (drift, two modes, busy), as compare says it.
    pub noise: Option<String>,
    /// Which profiles the point recorded (`locks`, `cpu`, `offcpu`): what a change can be attributed from.
    pub profiles: Vec<String>,
    pub unit: String,
    pub higher_is_better: bool,
}

impl Figure {
    /// The point's figure, or `None` while it has no finished run.
    pub fn of(point: &Point) -> Option<Figure> {
        if point.rate.is_some() {
            return Figure::of_open_loop(point);
        }
        let summary = point.summary.as_ref()?;
        // What a change can be attributed from: the instruments that attribute, where the point has them.
        let attributes = |i: &&Instrument| {
            let section = i.section();
            section.attributes() && point.runs.iter().any(|r| section.recorded(r))
        };
        Some(Figure {
            mean: summary.ops_per_s.mean,
            per_cpu: summary.ops_per_cpu_s.as_ref().map(|s| s.mean).filter(|v| v.is_finite() && *v > 0.0),
            runs: point.runs.len(),
            run_values: point.runs.iter().map(|r| r.ops_per_s).collect(),
            run_per_cpu: point.ops_per_cpu_s().filter(|v| v.iter().all(|x| x.is_finite() && *x > 0.0)),
            busy: point.mostly_busy(),
            cpu_bound: crate::compare::cpu_bound(point),
            noise: point.noise_problem(),
            profiles: Instrument::ALL.iter().filter(attributes).map(|i| i.name().to_string()).collect(),
            unit: point.unit(),
            higher_is_better: point.higher_is_better(),
        })
        .filter(|f| f.mean.is_finite() && f.run_values.iter().all(|v| v.is_finite()))
    }

    /// An open loop's figure: each run's response p99 in µs (its
    /// throughput is the rate asked), smaller better, as compare judges it.
    fn of_open_loop(point: &Point) -> Option<Figure> {
        let response = crate::compare::Figure::Response(Quantile::P99);
        let run_values = crate::compare::figures(point, response).filter(|v| !v.is_empty())?;
        let mean = run_values.iter().sum::<f64>() / run_values.len() as f64;
        Some(Figure {
            mean,
            per_cpu: None,
            runs: run_values.len(),
            run_values,
            run_per_cpu: None,
            busy: point.mostly_busy(),
            cpu_bound: false,
            noise: point.noise_problem(),
            profiles: Vec::new(),
            unit: crate::compare::response_unit(Quantile::P99),
            higher_is_better: false,
        })
        .filter(|f| f.mean.is_finite() && f.run_values.iter().all(|v| v.is_finite()))
    }

    /// The store's columns of its runs (`run_values`, `run_per_cpu`): JSON
    /// arrays (of finite numbers: [`Figure::of`] makes no other).
    pub(super) fn run_columns(&self) -> (String, Option<String>) {
        let json = |v: &[f64]| serde_json::to_string(v).expect("numbers serialize");
        (json(&self.run_values), self.run_per_cpu.as_deref().map(json))
    }
}

/// Every point of `doc` with a finished run: its identity, its figure, and
/// its index in the document. An open loop's (`--rate`) series is of its
/// response p99 at its rate (see [`Figure::of`]).
pub fn figures(doc: &ResultsFile) -> Vec<(Identity, Figure, usize)> {
    doc.points.iter().enumerate().filter_map(|(i, p)| Some((Identity::of(doc, p), Figure::of(p)?, i))).collect()
}
