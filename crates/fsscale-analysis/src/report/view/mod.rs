//! One view of a point for every renderer: the figures a point can have
//! ([`Column`], each with its table title, export key, alignment and how it
//! is computed) and the layouts that choose among them: the terminal's
//! tables of fixed-time loops and of fixed work, the HTML report's figures
//! and the export rows (CSV, Markdown, JSON lines, `run --format markdown`).
//! A renderer only writes rows in its dialect; a new statistic is a
//! [`Column`] variant (the compiler asks for its title, key and cell) and
//! its place in the layouts below.

mod column;

use std::collections::BTreeMap;

pub use column::Column;

use crate::results::{Point, ResultsFile, Settings};
use crate::stats::scaling::scaling_points;

/// A point with what is known of it only against its series: computed
/// once, read by every renderer.
pub struct PointView<'a> {
    pub point: &'a Point,
    pub settings: &'a Settings,
    /// The filesystem it ran on: the made one's label, or `--dir`'s type.
    pub filesystem: String,
    /// S(N) = X(N)/X(1) of its series (loops: ops/s; fixed work: its rate,
    /// so N·T(1)/T(N) for untar); `None` without a 1-worker point.
    pub speedup: Option<f64>,
    /// S(N)/N.
    pub efficiency: Option<f64>,
    /// CPUs the run could use (affinity and a cgroup limit counted).
    pub usable_cpus: usize,
    /// The speedup's relative noise: this point's and the 1-worker point's
    /// coefficients of variation, combined; `None` with a single run of either.
    pub speedup_cv: Option<f64>,
    /// With `--variant`s: the same point under the first variant, which
    /// `--until-ci` measured this one's ratio to (itself for the first).
    pub paired_base: Option<&'a Point>,
}

impl PointView<'_> {
    /// Whether each worker ran a command and waited for it (`command`
    /// copies, `untar --extract-cmd`) rather than doing the work itself.
    pub(crate) fn workers_run_commands(&self) -> bool {
        match self.point.workload {
            crate::vocab::Workload::Command => true,
            crate::vocab::Workload::Untar => self.settings.untar.as_ref().is_some_and(|u| u.extract_cmd.is_some()),
            _ => false,
        }
    }

    /// A speedup (effective concurrency) above the CPUs the run could use
    /// (2% spared) while its workers were mostly on a CPU or waiting for
    /// one: more done at once than there were CPUs to do it. Beyond what
    /// the runs' noise explains (two standard deviations of the ratio) only
    /// a mistimed job shows it ([`AboveCpus::Impossible`]); within it, a
    /// 1-worker point that ran slow does ([`AboveCpus::WithinNoise`]).
    /// Workers that mostly sleep (on I/O, on a lock held elsewhere) can
    /// overlap beyond the CPUs, so they are not flagged.
    pub(crate) fn above_cpus(&self) -> Option<AboveCpus> {
        let mut asleep: Vec<f64> = self.point.runs.iter().filter_map(|r| r.sched_shares()).map(|s| s.asleep).collect();
        asleep.sort_by(f64::total_cmp);
        let mostly_asleep = asleep.get(asleep.len() / 2).is_some_and(|&a| a >= 0.5);
        let limit = 1.02 * self.usable_cpus as f64;
        let speedup = self.speedup.filter(|&s| s > limit && !mostly_asleep)?;
        let low = speedup / (1.0 + 2.0 * self.speedup_cv.unwrap_or(0.0));
        Some(if low > limit { AboveCpus::Impossible } else { AboveCpus::WithinNoise })
    }
}

/// How a speedup above the usable CPUs is marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AboveCpus {
    /// `!impossible`: beyond the runs' noise.
    Impossible,
    /// `~above CPUs`: within it.
    WithinNoise,
}

impl AboveCpus {
    pub fn mark(self) -> &'static str {
        self.as_mark().tag()
    }

    pub(crate) fn as_mark(self) -> super::marks::Mark {
        match self {
            AboveCpus::Impossible => super::marks::Mark::Impossible,
            AboveCpus::WithinNoise => super::marks::Mark::AboveCpus,
        }
    }
}

/// What a cell holds: renderers show it, exports write its value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Words (a name, a note); written as a string.
    Text(String),
    /// A count, written as an integer.
    Count(u64),
    /// A figure: its value for data, and how tables show it.
    Figure { value: f64, shown: String },
    /// Not measured here: `-` in tables, empty or null in data.
    Missing,
}

impl Cell {
    /// As a table shows it.
    pub fn shown(&self) -> String {
        match self {
            Cell::Text(text) => text.clone(),
            Cell::Count(n) => n.to_string(),
            Cell::Figure { shown, .. } => shown.clone(),
            Cell::Missing => "-".to_string(),
        }
    }

    /// As data: a JSON value (null where not measured or not finite).
    pub fn value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Cell::Text(text) => Value::from(text.as_str()),
            Cell::Count(n) => Value::from(*n),
            Cell::Figure { value, .. } if value.is_finite() => Value::from(*value),
            Cell::Figure { .. } | Cell::Missing => Value::Null,
        }
    }

    /// A figure shown by `show`, or missing when there is none.
    pub(super) fn figure(value: Option<f64>, show: impl Fn(f64) -> String) -> Cell {
        match value {
            Some(value) => Cell::Figure { value, shown: show(value) },
            None => Cell::Missing,
        }
    }
}

/// Which table a layout is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The terminal's and the report's table of fixed-time loops.
    Loops,
    /// Their table of fixed work (timed to completion).
    FixedWork,
    /// Their table of open loops (`--rate`): the rate asked and got, and the ops' times.
    OpenLoop,
    /// A row per point in `export` (CSV, Markdown, JSON lines) and `run --format markdown`.
    Export,
}

impl Layout {
    /// Its columns, in order. Every column is in one at least (a unit test checks).
    pub fn columns(self) -> &'static [Column] {
        use Column::*;
        match self {
            Layout::Loops => &[
                Workers,
                Mode,
                Share,
                Median,
                RateSd,
                PerWorker,
                Efficiency,
                PerCpu,
                MegabytesPerS,
                P50,
                P90,
                P99,
                P999,
                Max,
                Runq,
                Asleep,
                Note,
            ],
            // No ops per CPU-second: a worker that keeps up spins before its ops.
            Layout::OpenLoop => &[
                Workers,
                Mode,
                Share,
                Asked,
                Median,
                RateSd,
                ResponseP50,
                ResponseP99,
                ResponseP999,
                ServiceP99,
                LagP99,
                Runq,
                Asleep,
                Note,
            ],
            Layout::FixedWork => &[
                Workers,
                Mode,
                Share,
                Time,
                TimeSd,
                Rate,
                MegabytesPerS,
                Concurrency,
                Spread,
                WorkShare,
                UserS,
                SysS,
                SyncS,
                DeviceReadInJob,
                DeviceInJob,
                DeviceInSync,
                Runq,
                Asleep,
                Note,
            ],
            Layout::Export => &[
                Workload,
                Mode,
                Share,
                Filesystem,
                Cache,
                Variant,
                Workers,
                Unit,
                Runs,
                Asked,
                Median,
                Mean,
                RateSd,
                Efficiency,
                PerCpu,
                P50,
                P99,
                P999,
                ResponseP50,
                ResponseP99,
                ResponseP999,
                ServiceP99,
                Runq,
                Asleep,
                Note,
            ],
        }
    }

    /// The columns these points show: the export's always all; a table's
    /// only those some point has a figure for (latency only with `--latency`...).
    pub fn shown(self, views: &[PointView<'_>]) -> Vec<Column> {
        let points: Vec<&Point> = views.iter().map(|v| v.point).collect();
        self.columns().iter().copied().filter(|c| self == Layout::Export || c.is_shown(self, &points)).collect()
    }
}

/// Every point of `doc` that has runs, in document order, in view.
pub(crate) fn views(doc: &ResultsFile) -> Vec<PointView<'_>> {
    let points: Vec<&Point> = doc.points.iter().filter(|p| p.summary.is_some()).collect();
    views_of(&points, doc)
}

/// `point` under `doc`'s first variant: the point that differs from it in its variant alone.
fn paired_base<'a>(doc: &'a ResultsFile, point: &Point) -> Option<&'a Point> {
    let first = Some(doc.settings.variants.first()?.name.as_str());
    let same = |p: &&Point| {
        (p.workload, p.mode, p.share, p.workers, &p.fs, p.cache, p.rate)
            == (point.workload, point.mode, point.share, point.workers, &point.fs, point.cache, point.rate)
    };
    doc.points.iter().filter(same).find(|p| p.variant.as_deref() == first)
}

/// `points` (each with a summary) of `doc`, in view, in their order.
pub(crate) fn views_of<'a>(points: &[&'a Point], doc: &'a ResultsFile) -> Vec<PointView<'a>> {
    // A series: one condition, workload, mode and sharing level, as `analyze` groups them.
    let mut series: BTreeMap<_, Vec<(usize, f64)>> = BTreeMap::new();
    // An open loop's rate is the one asked: it has no speedup.
    for p in points.iter().filter(|p| p.rate.is_none()) {
        let median = p.summary.as_ref().map_or(f64::NAN, |s| s.ops_per_s.median);
        series
            .entry((p.condition(), p.workload, p.mode, p.share))
            .or_default()
            .push((p.workers, p.as_throughput(median)));
    }
    let scaled: BTreeMap<_, Vec<_>> = series.into_iter().map(|(key, s)| (key, scaling_points(&s))).collect();
    // An MPI job's ranks are bound to CPUs of their nodes, rank 0 (whose
    // host this is) often to one: the job could use every node's CPUs,
    // counted as many as rank 0's node has online (nodes' own are not recorded).
    let usable_cpus = match &doc.cluster {
        Some(cluster) => doc.host.online_cpus * cluster.nodes().len(),
        None => doc.host.usable_cpus,
    };
    let cv = |p: &Point| {
        let s = &p.summary.as_ref()?.ops_per_s;
        (s.n >= 2 && s.mean > 0.0).then(|| s.stddev / s.mean)
    };
    let one_worker = |p: &Point| {
        points.iter().find(|q| {
            q.workers == 1
                && q.rate.is_none()
                && (q.condition(), q.workload, q.mode, q.share) == (p.condition(), p.workload, p.mode, p.share)
        })
    };
    points
        .iter()
        .map(|&point| {
            let at = scaled
                .get(&(point.condition(), point.workload, point.mode, point.share))
                .and_then(|s| s.iter().find(|s| s.workers == point.workers))
                .filter(|_| point.rate.is_none());
            PointView {
                point,
                settings: &doc.settings,
                filesystem: point.fs.clone().unwrap_or_else(|| doc.target.fs_type.clone()),
                speedup: at.and_then(|s| s.speedup),
                efficiency: at.and_then(|s| s.efficiency),
                paired_base: paired_base(doc, point),
                usable_cpus: usable_cpus.max(1),
                speedup_cv: cv(point).zip(one_worker(point).and_then(|b| cv(b))).map(|(a, b)| a.hypot(b)),
            }
        })
        .collect()
}

/// `views` as a terminal table of `layout`, sorted by mode, share and workers.
pub fn table(layout: Layout, views: &mut [PointView<'_>]) -> super::Table {
    views.sort_by_key(|v| (v.point.mode, v.point.share, v.point.workers, v.point.rate));
    let columns = layout.shown(views);
    let titles: Vec<(String, super::Align)> = columns.iter().map(|c| (c.title(views), c.align())).collect();
    let titles: Vec<(&str, super::Align)> = titles.iter().map(|(t, a)| (t.as_str(), *a)).collect();
    let mut table = super::Table::new(&titles);
    for view in views.iter() {
        table.row(columns.iter().map(|c| c.cell(view).shown()).collect());
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{doc, point, run};
    use crate::results::{RunNoise, WorkerSched};
    use crate::vocab::{Share, Workload};

    /// `stat` at 1 and 2 workers; the 2-worker runs waited a quarter of their
    /// windows runnable, and one of its two runs was busy with other work.
    fn sample() -> ResultsFile {
        let sched =
            |runq: f64| WorkerSched { window_s: 1.0, on_cpu_s: 1.0 - runq, runqueue_s: runq, ..Default::default() };
        let mut busy = run(0, &[90, 90], 1.0);
        busy.noise = Some(RunNoise { others_cpu: 0.5, ticks: 1000, ..Default::default() });
        let mut runs = vec![busy, run(1, &[110, 110], 1.0)];
        for r in &mut runs {
            r.sched = vec![sched(0.25), sched(0.25)];
        }
        doc(
            2,
            1.0,
            vec![
                point(Workload::Stat, Share::Private, 1, vec![run(0, &[100], 1.0), run(1, &[120], 1.0)]),
                point(Workload::Stat, Share::Private, 2, runs),
            ],
        )
    }

    #[test]
    fn export_rows_begin_with_the_identity_and_carry_what_the_tables_show() {
        assert_eq!(Layout::Export.columns()[..Column::IDENTITY.len()], Column::IDENTITY);
        let doc = sample();
        let views = views(&doc);
        let cell = |v: &PointView<'_>, c: Column| c.cell(v).shown();
        assert_eq!(cell(&views[1], Column::Efficiency), "90.9%");
        assert_eq!(Column::Efficiency.cell(&views[1]).value(), serde_json::json!(200.0 / 2.0 / 110.0));
        // The terminal's marks and scheduler shares reach every output.
        assert_eq!(cell(&views[1], Column::Runq), "25%");
        assert_eq!(cell(&views[1], Column::Note), "!busy 1/2");
        assert_eq!(Column::Runq.cell(&views[0]), Cell::Missing);
        assert_eq!(Column::Runq.cell(&views[0]).value(), serde_json::Value::Null);
        let shown = Layout::Loops.shown(&views);
        assert!(shown.contains(&Column::Runq) && !shown.contains(&Column::P50), "{shown:?}");
    }

    #[test]
    fn the_terminal_table_is_the_loops_layout() {
        let doc = sample();
        let table = table(Layout::Loops, &mut views(&doc)).render();
        let expected = concat!(
            "  workers  mode     share     ops/s     sd  ops/s/worker  efficiency  runq  asleep\n",
            "        1  process  private  110.00  12.9%        110.00      100.0%     -       -\n",
            "        2  process  private  200.00  14.1%        100.00       90.9%   25%      0%  !busy 1/2\n",
        );
        assert_eq!(table, expected);
    }

    #[test]
    fn every_column_is_in_a_layout_and_once_in_each() {
        let all = [Layout::Loops, Layout::FixedWork, Layout::OpenLoop, Layout::Export];
        for column in Column::ALL {
            assert!(all.iter().any(|l| l.columns().contains(&column)), "{column:?} is in no layout");
        }
        for layout in all {
            let columns = layout.columns();
            for c in columns {
                assert_eq!(columns.iter().filter(|d| *d == c).count(), 1, "{c:?} twice in {layout:?}");
            }
        }
    }
}
