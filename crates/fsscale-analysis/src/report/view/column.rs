//! Every figure a point can have: its title in tables, its key in exports,
//! when a table shows it, and its cell. Each is one exhaustive match, so a
//! new column cannot compile until it says all of them.

use super::super::format::{format_rate, format_sd};
use super::super::table::Align;
use super::{Cell, Layout, PointView};
use crate::render::format::format_ns;
use crate::results::Point;
use crate::stats::Sample;
use crate::vocab::{DeviceIo, Share as Sharing, Workload as W};

crate::vocab::words! {
    /// A figure of a point (see the module's docs).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Column {
        Workload => "workload",
        Mode => "mode",
        Share => "share",
        Filesystem => "filesystem",
        Cache => "cache",
        Variant => "variant",
        Workers => "workers",
        Unit => "unit",
        Runs => "runs",
        Median => "median",
        Mean => "mean",
        RateSd => "sd",
        PerWorker => "ops_per_s_per_worker",
        Efficiency => "efficiency",
        PerCpu => "ops_per_cpu_s",
        MegabytesPerS => "mb_per_s",
        P50 => "p50_ns",
        P90 => "p90_ns",
        P99 => "p99_ns",
        P999 => "p999_ns",
        Max => "max_ns",
        Asked => "asked_ops_per_s",
        ResponseP50 => "response_p50_ns",
        ResponseP99 => "response_p99_ns",
        ResponseP999 => "response_p999_ns",
        ServiceP99 => "service_p99_ns",
        LagP99 => "lag_p99_ns",
        Time => "time_s",
        TimeSd => "time_sd",
        Rate => "rate",
        Concurrency => "effective_concurrency",
        Spread => "spread",
        WorkShare => "work_share",
        UserS => "user_s",
        SysS => "sys_s",
        SyncS => "sync_s",
        DeviceReadInJob => "device_mb_read_in_job",
        DeviceInJob => "device_mb_in_job",
        DeviceInSync => "device_mb_in_sync",
        Runq => "runq_share",
        Asleep => "asleep_share",
        Note => "notes",
    }
}

impl Column {
    /// The columns that say which point a row is of.
    pub(crate) const IDENTITY: [Column; 8] = [
        Column::Workload,
        Column::Mode,
        Column::Share,
        Column::Filesystem,
        Column::Cache,
        Column::Variant,
        Column::Workers,
        Column::Unit,
    ];

    /// Its key in exports (CSV header, JSON field).
    pub fn key(self) -> &'static str {
        self.name()
    }

    /// Its heading in tables.
    pub fn title(self, views: &[PointView<'_>]) -> String {
        use Column::*;
        let title = match self {
            Workload | Mode | Share | Filesystem | Cache | Variant | Workers | Unit | Runs | Mean => self.name(),
            Median => "ops/s",
            RateSd | TimeSd => "sd",
            PerWorker => "ops/s/worker",
            Efficiency => "efficiency",
            PerCpu => "ops/cpu-s",
            MegabytesPerS => "MB/s",
            P50 => "p50",
            P90 => "p90",
            P99 => "p99",
            P999 => "p99.9",
            Max => "max",
            Asked => "asked",
            ResponseP50 => "resp p50",
            ResponseP99 => "resp p99",
            ResponseP999 => "resp p99.9",
            ServiceP99 => "svc p99",
            LagP99 => "lag p99",
            Time => "time s",
            // A command copy is one unit of work; untar and traverse count entries.
            Rate => match views.first().is_some_and(|v| v.point.workload == W::Command) {
                true => "runs/s",
                false => "entries/s",
            },
            Concurrency => "eff. concurrency",
            Spread => "spread",
            WorkShare => "work share",
            UserS => "user s",
            SysS => "sys s",
            SyncS => "sync s",
            DeviceReadInJob => "dev MB read",
            DeviceInJob => "dev MB in job",
            DeviceInSync => "dev MB in sync",
            Runq => "runq",
            Asleep => "asleep",
            Note => "",
        };
        title.to_string()
    }

    pub fn align(self) -> Align {
        use Column::*;
        match self {
            Workload | Mode | Share | Filesystem | Cache | Variant | Unit | Note => Align::Left,
            Workers | Runs | Median | Mean | RateSd | PerWorker | Efficiency | PerCpu | MegabytesPerS | P50 | P90
            | P99 | P999 | Max | Asked | ResponseP50 | ResponseP99 | ResponseP999 | ServiceP99 | LagP99 | Time
            | TimeSd | Rate | Concurrency | Spread | WorkShare | UserS | SysS | SyncS | DeviceReadInJob
            | DeviceInJob | DeviceInSync | Runq | Asleep => Align::Right,
        }
    }

    /// Whether a table of `layout` shows it for `points`: what only some
    /// runs measure (latency, device I/O, scheduler shares...) only where one did.
    pub(crate) fn is_shown(self, layout: Layout, points: &[&Point]) -> bool {
        use Column::*;
        let any = |f: &dyn Fn(&Point) -> bool| points.iter().any(|p| f(p));
        match self {
            PerCpu => any(&|p| !p.workload.is_fixed_work() && summary_has(p, |s| s.ops_per_cpu_s.is_some())),
            // Bytes only where the work moves file data (a fixed job: untar, not a walk).
            MegabytesPerS => match layout {
                Layout::FixedWork => any(&|p| p.runs.iter().any(|r| r.bytes.unwrap_or(0) > 0)),
                Layout::Loops | Layout::OpenLoop | Layout::Export => any(&|p| p.runs.iter().any(|r| r.bytes.is_some())),
            },
            P50 | P90 | P99 | P999 | Max => any(&|p| summary_has(p, |s| s.latency.is_some())),
            Asked | ResponseP50 | ResponseP99 | ResponseP999 | ServiceP99 | LagP99 => any(&|p| p.rate.is_some()),
            // A walk shared between the workers: how the work split between them.
            WorkShare => any(&|p| p.workload == W::Traverse && p.share == Sharing::Shared),
            // Device writes only where there is a device (a made filesystem on one).
            DeviceInJob | DeviceInSync => any(&|p| p.runs.iter().any(|r| r.device_io.is_some())),
            // Reads where the job read from the device (a cold walk, an extraction past the cache).
            DeviceReadInJob => any(&|p| p.runs.iter().any(|r| r.device_io.is_some_and(|io| io.read_bytes > 0))),
            Runq | Asleep => any(&|p| p.runs.iter().any(|r| !r.sched.is_empty())),
            Variant => any(&|p| p.variant.is_some()),
            Workload | Mode | Share | Filesystem | Cache | Workers | Unit | Runs | Median | Mean | RateSd
            | PerWorker | Efficiency | Time | TimeSd | Rate | Concurrency | Spread | UserS | SysS | SyncS | Note => {
                true
            }
        }
    }

    /// Its cell for one point.
    pub fn cell(self, view: &PointView<'_>) -> Cell {
        use Column::*;
        let p = view.point;
        let summary = p.summary.as_ref();
        let runs = |f: &dyn Fn(&crate::results::RunRecord) -> f64| median(p.runs.iter().map(f).collect());
        let seconds = |s: f64| format!("{s:.3}");
        match self {
            Workload => Cell::Text(p.workload.name().to_string()),
            Mode => Cell::Text(p.mode.to_string()),
            Share => Cell::Text(p.share.to_string()),
            Filesystem => Cell::Text(view.filesystem.clone()),
            Cache => p.cache.map_or(Cell::Missing, |c| Cell::Text(c.to_string())),
            Variant => p.variant.as_ref().map_or(Cell::Missing, |v| Cell::Text(v.clone())),
            Workers => Cell::Count(p.workers as u64),
            Unit => Cell::Text(p.unit()),
            Runs => Cell::Count(p.runs.len() as u64),
            Median => Cell::figure(summary.map(|s| s.ops_per_s.median), format_rate),
            Mean => Cell::figure(summary.map(|s| s.ops_per_s.mean), format_rate),
            RateSd => match summary {
                Some(s) => Cell::Figure { value: s.ops_per_s.stddev, shown: format_sd(&s.ops_per_s) },
                None => Cell::Missing,
            },
            PerWorker => Cell::figure(summary.map(|s| s.ops_per_s_per_worker_median), format_rate),
            Efficiency => Cell::figure(view.efficiency, |e| format!("{:.1}%", 100.0 * e)),
            PerCpu => Cell::figure(summary.and_then(|s| s.ops_per_cpu_s.as_ref()).map(|s| s.median), format_rate),
            MegabytesPerS => megabytes_per_s(p),
            P50 | P90 | P99 | P999 | Max => {
                let latency = summary.and_then(|s| s.latency.as_ref()).filter(|l| l.count > 0);
                let ns = latency.map(|l| match self {
                    P50 => l.p50_ns,
                    P90 => l.p90_ns,
                    P99 => l.p99_ns,
                    P999 => l.p999_ns,
                    _ => l.max_ns,
                });
                ns.map_or(Cell::Missing, |ns| Cell::Figure { value: ns as f64, shown: format_ns(ns as f64) })
            }
            Asked => Cell::figure(p.rate.map(|r| r.ops_per_s()), format_rate),
            ResponseP50 | ResponseP99 | ResponseP999 | ServiceP99 | LagP99 => {
                // Only the histogram this column reads, merged over the runs.
                let (times, q): (fn(&crate::results::OpenLoop) -> &crate::stats::histogram::Histogram, f64) = match self
                {
                    ResponseP50 => (|o| &o.response, 0.5),
                    ResponseP99 => (|o| &o.response, 0.99),
                    ResponseP999 => (|o| &o.response, 0.999),
                    ServiceP99 => (|o| &o.service, 0.99),
                    _ => (|o| &o.lag, 0.99),
                };
                let ns = p.open_loop_times(times).filter(|h| h.count > 0).map(|h| h.quantile(q));
                ns.map_or(Cell::Missing, |ns| Cell::Figure { value: ns as f64, shown: format_ns(ns as f64) })
            }
            Time => Cell::figure(Some(runs(&|r| r.elapsed_s)), seconds),
            TimeSd => {
                let times: Vec<f64> = p.runs.iter().map(|r| r.elapsed_s).collect();
                crate::stats::Summary::of(&times)
                    .map_or(Cell::Missing, |s| Cell::Figure { value: s.stddev, shown: format_sd(&s) })
            }
            Rate => Cell::figure(Some(runs(&|r| r.ops_per_s)), format_rate),
            Concurrency => Cell::figure(view.speedup, |x| format!("{x:.2}")),
            Spread => spread(p),
            WorkShare => work_share(p),
            UserS => Cell::figure(Some(runs(&|r| r.worker_cpu.user_s)), seconds),
            SysS => Cell::figure(Some(runs(&|r| r.worker_cpu.sys_s)), seconds),
            SyncS => Cell::figure(Some(runs(&|r| r.writeback.map_or(0.0, |w| w.sync_s))), seconds),
            DeviceReadInJob => {
                Cell::figure(Some(runs(&|r| r.device_io.map_or(0.0, |io| io.read_bytes as f64 / 1e6))), |mb| {
                    format!("{mb:.1}")
                })
            }
            DeviceInJob => Cell::figure(Some(runs(&|r| written(r.device_io))), |mb| format!("{mb:.1}")),
            DeviceInSync => {
                Cell::figure(Some(runs(&|r| written(r.writeback.and_then(|w| w.device_io)))), |mb| format!("{mb:.1}"))
            }
            // A worker that runs a command only waits for it: its own shares say nothing of the command's.
            Runq | Asleep if view.workers_run_commands() => Cell::Missing,
            Runq => sched_share(p, |s| s.runqueue),
            Asleep => sched_share(p, |s| s.asleep),
            Note => {
                let note = super::super::marks::run_note(p, view.settings, view.paired_base);
                let impossible = view.above_cpus().map(|a| a.mark());
                Cell::Text(
                    [Some(note.as_str()), impossible]
                        .into_iter()
                        .flatten()
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            }
        }
    }
}

fn summary_has(p: &Point, f: impl Fn(&crate::results::PointSummary) -> bool) -> bool {
    p.summary.as_ref().is_some_and(f)
}

/// The median of a point's per-run values (runs are never empty here).
fn median(values: Vec<f64>) -> f64 {
    Sample::new(&values).map_or(f64::NAN, |s| s.median())
}

/// Megabytes the device wrote.
fn written(io: Option<DeviceIo>) -> f64 {
    io.map_or(0.0, |io| io.write_bytes as f64 / 1e6)
}

/// Median over the runs of bytes moved per second, in MB/s; missing without data.
fn megabytes_per_s(point: &Point) -> Cell {
    match point.runs.iter().all(|r| r.bytes.unwrap_or(0) > 0) {
        true => Cell::figure(
            Some(median(point.runs.iter().map(|r| r.bytes.unwrap_or(0) as f64 / r.elapsed_s / 1e6).collect())),
            |mb| format!("{mb:.1}"),
        ),
        false => Cell::Missing,
    }
}

/// Slowest over fastest worker's completion time, median over the runs.
fn spread(point: &Point) -> Cell {
    let ratios: Vec<f64> = point
        .runs
        .iter()
        .filter_map(|r| {
            let c = r.completion_s.as_ref()?;
            let (lo, hi) = c.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            (lo > 0.0).then_some(hi / lo)
        })
        .collect();
    match ratios.is_empty() {
        true => Cell::Missing,
        false => Cell::figure(Some(median(ratios)), |x| format!("{x:.2}")),
    }
}

/// A cooperative walk's split of the work: the smallest and largest share
/// of the entries one worker listed, medians of the runs (`12–41%`).
fn work_share(point: &Point) -> Cell {
    if point.share != Sharing::Shared || point.workload != W::Traverse || point.workers < 2 {
        return Cell::Missing;
    }
    let (lows, highs): (Vec<f64>, Vec<f64>) = point
        .runs
        .iter()
        .filter(|r| r.ops > 0)
        .map(|r| {
            let shares = r.per_worker_ops.iter().map(|&o| o as f64 / r.ops as f64);
            shares.fold((f64::MAX, 0.0f64), |(lo, hi), s| (lo.min(s), hi.max(s)))
        })
        .unzip();
    if lows.is_empty() {
        return Cell::Missing;
    }
    let (low, high) = (median(lows), median(highs));
    Cell::Text(format!("{:.0}–{:.0}%", 100.0 * low, 100.0 * high))
}

/// A scheduler share of the workers' windows (runnable but not running, or
/// asleep): the median over the runs of the workers' mean shares.
fn sched_share(point: &Point, of: impl Fn(&crate::results::SchedShares) -> f64) -> Cell {
    let shares: Vec<f64> = point.runs.iter().filter_map(|r| r.sched_shares()).map(|s| of(&s)).collect();
    match shares.is_empty() {
        true => Cell::Missing,
        false => Cell::figure(Some(median(shares)), |s| format!("{:.0}%", 100.0 * s)),
    }
}
