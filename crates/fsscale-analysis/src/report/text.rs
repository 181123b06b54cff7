//! The terminal view of a results document: one table per workload.

use super::analyze::verdict_line;
use super::format::sparkline;
use super::latency::driver_table;
use super::marks::{self, run_note, Mark};
use super::view::{self, Column, Layout};
use crate::analyze::analyze_results;
use crate::results::{Point, ResultsFile, Settings};
use crate::vocab::Workload;

/// Renders every point with a summary, grouped by workload in catalogue order.
pub fn render_results(doc: &ResultsFile) -> String {
    render_results_with(doc, TextOptions { explain_all: false, legend: true })
}

/// How `run` and `show` print the tables.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// The instruments' tables under every point, not only under points whose efficiency falls.
    pub explain_all: bool,
    /// What the columns and the marks shown mean, under the tables (`-q`: none).
    pub legend: bool,
}

/// [`render_results`] with `options`.
pub fn render_results_with(doc: &ResultsFile, options: TextOptions) -> String {
    let explain_all = options.explain_all;
    // One table per condition (filesystem configuration, cache state) and
    // workload, in the order they ran in the plan (the order given).
    let by_workload = Groups(crate::results::grouped(
        doc.points.iter().filter(|p| p.summary.is_some()).map(|p| ((p.condition(), p.workload), p)),
    ));
    let mut out = String::new();
    let analyses = analyze_results(doc);
    let mut unfitted = false;
    for ((condition, workload), points) in by_workload.iter() {
        out.push_str(&group(doc, condition, *workload, points, explain_all));
        for a in
            analyses.iter().filter(|a| a.workload == Some(*workload) && a.condition == *condition && a.points.len() > 1)
        {
            // A refused fit is said once below, not under every table.
            unfitted |= a.fit.is_none();
            let (mode, share) = (a.mode.expect("from results"), a.share.expect("from results"));
            let trend = sparkline(&a.points.iter().map(|p| p.throughput).collect::<Vec<_>>());
            let verdict =
                if a.fit.is_some() || a.collapse.is_some() { format!(": {}", verdict_line(a)) } else { String::new() };
            out.push_str(&format!("  scaling {mode}/{share} {trend}{verdict}\n"));
        }
        out.push('\n');
    }
    out.push_str(&legends(doc, &by_workload, unfitted, options));
    out
}

/// The points of each table: by condition and workload, in the order each first appears.
struct Groups<'a>(Vec<(TableKey, Vec<&'a Point>)>);

/// A table's key: its condition and workload.
type TableKey = (Option<String>, Workload);

impl<'a> Groups<'a> {
    fn iter(&self) -> impl Iterator<Item = (&TableKey, &Vec<&'a Point>)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    fn keys(&self) -> impl Iterator<Item = &TableKey> {
        self.0.iter().map(|(k, _)| k)
    }

    fn values(&self) -> impl Iterator<Item = &Vec<&'a Point>> {
        self.0.iter().map(|(_, v)| v)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One condition's and workload's table, with what explains it under it.
fn group(
    doc: &ResultsFile,
    condition: &Option<String>,
    workload: Workload,
    points: &[&Point],
    explain_all: bool,
) -> String {
    let mut out = String::new();
    let on = condition.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
    out.push_str(&format!("{workload}{on}: {}\n", points[0].op));
    if let Some(made) = &points[0].filesystem {
        let how = doc.settings.fresh.map(|f| format!(", {}", f.words())).unwrap_or_default();
        out.push_str(&format!("  filesystem: {}{how}\n", made.describe()));
    }
    if let Some(source) = source_line(&doc.settings, workload) {
        out.push_str(&format!("  {source}\n"));
    }
    let missing = |p: &Point| run_note(p, &doc.settings, None);
    let table = match (points[0].metric.is_some(), workload.is_fixed_work()) {
        (true, _) => driver_table(points, missing),
        (false, true) => view::table(Layout::FixedWork, &mut view::views_of(points, doc)),
        (false, false) if points.iter().any(|p| p.rate.is_some()) => {
            view::table(Layout::OpenLoop, &mut view::views_of(points, doc))
        }
        (false, false) => view::table(Layout::Loops, &mut view::views_of(points, doc)),
    };
    out.push_str(&table.render());
    let objectives = doc.settings.objectives();
    out.push_str(&super::open_loop::lines(points, objectives));
    if workload == Workload::Replay {
        out.push_str(&super::replay::text(points, doc.settings.replay.as_ref(), doc.settings.duration_s));
    }
    out.push_str(&super::ranks::lines(points));
    out.push_str(&super::walk::lines(points));
    // Said once per point: at a series' largest point above its waits, at another explained one above its tables.
    let mut said_cpus: Vec<&Point> = Vec::new();
    for (_, mut series) in crate::results::grouped(points.iter().map(|p| ((p.mode, p.share, p.rate), *p))) {
        series.sort_by_key(|p| p.workers);
        // Out of CPUs comes first where it outweighs the locks: a lock that grows then is not why it stopped.
        if let Some(cpus) = super::profile::series_out_of_cpus(&series, doc.host.usable_cpus) {
            out.push_str(&format!("  why at {}/{}: {cpus}\n", series[0].mode, series[0].share));
            said_cpus.extend(series.last());
        }
        if let Some(growth) = super::profile::fastest_growing_site(&series) {
            out.push_str(&format!("  waits at {}/{}: {growth}\n", series[0].mode, series[0].share));
        }
    }
    for point in super::profile::points_to_explain(points, explain_all) {
        let said = said_cpus.iter().any(|p| std::ptr::eq(*p, point));
        if let Some(cpus) = super::profile::out_of_cpus(point, doc.host.usable_cpus).filter(|_| !said) {
            out.push_str(&format!("  {} {} x{}: {cpus}\n", point.mode, point.share, point.workers));
        }
        out.push_str(&super::profile::explain(point));
    }
    out
}

/// Which input a macro workload's table ran on: the tree walked or
/// extracted, or the trace replayed.
pub(super) fn source_line(settings: &Settings, workload: Workload) -> Option<String> {
    let size =
        |entries: u64, bytes: u64| format!("{} entries, {}", super::format::thousands(entries), megabytes(bytes));
    let generated = |u: &crate::results::UntarSettings| match (u.scale, u.seed) {
        (Some(scale), Some(seed)) => format!("the generated tree, --scale {scale} --seed {seed}"),
        _ => format!("--tarball {}", u.tarball),
    };
    match workload {
        Workload::Traverse => match (&settings.walked_tree, &settings.untar) {
            (Some(tree), _) => Some(format!("tree: --tree {}: {}", tree.path, size(tree.entries, tree.bytes))),
            (None, Some(u)) => Some(format!("tree: {}: {}", generated(u), size(u.entries, u.bytes))),
            (None, None) => None,
        },
        Workload::Untar => settings.untar.as_ref().map(|u| {
            let with = u.extract_cmd.as_ref().map(|c| format!(", extracted by `{c}`")).unwrap_or_default();
            format!("tarball: {}: {}{with}", generated(u), size(u.entries, u.bytes))
        }),
        Workload::Replay => settings.replay.as_ref().map(|r| {
            format!(
                "trace: {}: {} operations, {} read and written per pass",
                r.trace,
                super::format::thousands(r.ops_per_pass.values().sum()),
                megabytes(r.bytes_per_pass)
            )
        }),
        _ => None,
    }
}

/// 2.8 MB, 12.3 kB: decimal units, as the tables' MB/s.
fn megabytes(bytes: u64) -> String {
    match bytes {
        b if b < 1_000_000 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{:.1} MB", b as f64 / 1e6),
    }
}

/// Under all the tables: what the run was (its order, limit, variants,
/// instruments), and unless `-q`, what the columns and the marks shown
/// mean, each in one line, said once.
fn legends(doc: &ResultsFile, by_workload: &Groups<'_>, unfitted: bool, options: TextOptions) -> String {
    let mut out = String::new();
    if options.legend {
        out.push_str(&column_legend(doc, by_workload, unfitted));
    }
    if by_workload.is_empty() {
        return out;
    }
    out.push_str(&runs_line(doc));
    if let Some(limit) = &doc.settings.memory_limit {
        out.push_str(&format!(
            "memory limit: the workers and their commands ran in a memory cgroup of {} ({}): what they cached \
             beyond it was evicted.\n",
            crate::vocab::format_size(limit.bytes),
            limit.cgroup
        ));
    }
    out.push_str(&variants_line(&doc.settings));
    out.push_str(&instruments_line(doc));
    if !options.legend {
        return out;
    }
    let explained: Vec<&Point> = by_workload
        .values()
        .flat_map(|points| super::profile::points_to_explain(points, options.explain_all))
        .collect();
    out.push_str(&super::profile::explain_legend(&explained));
    let mut shown: std::collections::BTreeSet<Mark> =
        by_workload.values().flatten().flat_map(|p| marks::noise_marks_of(p).into_iter().map(|(m, _)| m)).collect();
    for points in by_workload.values() {
        shown.extend(view::views_of(points, doc).iter().filter_map(|v| v.above_cpus()).map(|a| a.as_mark()));
    }
    out.push_str(&marks::legend(&shown));
    out
}

/// What the columns of the tables shown mean, one short line each.
fn column_legend(doc: &ResultsFile, by_workload: &Groups<'_>, unfitted: bool) -> String {
    let mut out = String::new();
    let is_driver = |p: &&Point| p.metric.is_some();
    let drivers = by_workload.values().any(|points| points.iter().any(is_driver));
    let copies = by_workload.iter().any(|((_, w), points)| w.is_fixed_work() && !points.iter().any(is_driver));
    if copies {
        out.push_str(
            "fixed work: time = the slowest worker's, median of the runs; eff. concurrency = N x T(1) / T(N) \
             (a rate: at N over at 1); spread = slowest / fastest worker.\n",
        );
    }
    if drivers {
        out.push_str(
            "command driver: the median of the runs' figures; speedup = against the fewest workers; \
             efficiency = speedup over the rise in workers.\n",
        );
    }
    if by_workload.values().flatten().any(|p| p.summary.as_ref().is_some_and(|s| s.latency.is_some())) {
        out.push_str(
            "p50 ... max: latency of single ops in every run's window (log-linear histogram, within 6.25%).\n",
        );
    }
    if by_workload.values().flatten().any(|p| p.rate.is_some()) {
        out.push_str(
            "asked: the ops a second asked of all workers (--rate), ops/s what they did; resp: from when each op \
             was due to its end, the queue included; svc: from when it began; lag: how late it began.\n",
        );
    }
    let per_cpu = by_workload.values().any(|points| Column::PerCpu.is_shown(Layout::Loops, points));
    let runq = by_workload.values().any(|points| Column::Runq.is_shown(Layout::Loops, points));
    // "-" in those columns: the workers only waited for the commands they ran.
    let only_wait = match runq {
        true if by_workload
            .values()
            .any(|points| view::views_of(points, doc).iter().any(|v| v.workers_run_commands())) =>
        {
            " (- where workers only wait for a command they ran)"
        }
        _ => "",
    };
    match (per_cpu, runq) {
        (true, true) => out.push_str(&format!(
            "ops/cpu-s = ops per second of the workers' own CPU time; runq, asleep = share of the window \
             waiting for a CPU, and blocked{only_wait}.\n"
        )),
        (true, false) => out.push_str("ops/cpu-s = ops per second of the workers' own CPU time.\n"),
        (false, true) => out.push_str(&format!(
            "runq, asleep = share of each worker's window waiting for a CPU, and blocked{only_wait}.\n"
        )),
        (false, false) => {}
    }
    if by_workload.is_empty() {
        return out;
    }
    if unfitted {
        out.push_str(
            "scaling: a Universal Scalability Law fit needs at least 4 distinct worker counts; \
             run more (e.g. -j 1..8) for one (see fsscale analyze).\n",
        );
    }
    if by_workload.keys().any(|(_, w)| !w.is_fixed_work()) {
        out.push_str(&format!(
            "ops/s: median of {}{} run{} of {} s each; sd: of the runs, relative to their mean; efficiency: per \
             worker against 1 worker (every column and mark: fsscale help marks).\n",
            if doc.settings.until_ci_pct.is_some() { "at least " } else { "" },
            doc.settings.runs,
            if doc.settings.runs == 1 { "" } else { "s" },
            trim_float(doc.settings.duration_s)
        ));
    } else {
        out.push_str("every column and mark: fsscale help marks.\n");
    }
    out
}

/// Which instruments were on (their cost is in every figure), and what `--verify` found.
fn instruments_line(doc: &ResultsFile) -> String {
    let on = doc.settings.instruments;
    if !on.any() {
        return String::new();
    }
    let mut line = format!(
        "instruments: {} on in every run: their cost is in these figures (see fsscale's docs/INSTRUMENTS.md)",
        on.names().join(", ")
    );
    for finding in on.on.iter().filter_map(|i| i.section().finding(doc)) {
        line.push_str("; ");
        line.push_str(&finding);
    }
    line.push_str(".\n");
    line
}

/// How the runs were ordered and warmed up, and what `--until-ci` asked.
fn runs_line(doc: &ResultsFile) -> String {
    let settings = &doc.settings;
    let order = match (settings.order, settings.order_seed) {
        (Some(order), Some(seed)) => format!("{order} (seed {seed})"),
        (Some(order), None) => order.to_string(),
        (None, _) => return String::new(),
    };
    let warmups = match settings.warmup_runs {
        0 => "no warm-up runs".to_string(),
        1 => "after 1 warm-up run of every point, in no figure".to_string(),
        k => format!("after {k} warm-up runs of every point, in no figure"),
    };
    let until = settings
        .until_ci_pct
        .map(|pct| match settings.variants.first() {
            Some(first) => format!(
                "; rounds went on until each variant's ratio to {}, paired by round, had its 95% interval \
                 within ±{pct}% (at most {} rounds)",
                first.name,
                settings.max_runs.unwrap_or(0)
            ),
            None => format!(
                "; repeated until the mean's 95% CI was within ±{pct}% (at most {} runs)",
                settings.max_runs.unwrap_or(0)
            ),
        })
        .unwrap_or_default();
    let steady = steady_clause(doc).map(|c| format!("; {c}")).unwrap_or_default();
    format!("runs: {order} order, {warmups}{steady}{until}.\n")
}

/// `--variant`: what each variant ran before (and after) its runs.
pub(super) fn variants_line(settings: &Settings) -> String {
    if settings.variants.is_empty() {
        return String::new();
    }
    let each: Vec<String> = settings
        .variants
        .iter()
        .map(|v| {
            let set = match v.setup.trim().is_empty() {
                true => "no command".to_string(),
                false => format!("`{}`", v.setup),
            };
            let undo = v.teardown.as_ref().map(|t| format!(", undone by `{t}`")).unwrap_or_default();
            format!("{} ({set}{undo})", v.name)
        })
        .collect();
    format!(
        "variants: {}; each point ran under each in every round, in an order rotated round by round \
         (compare --between variant=A,B pairs them by round).\n",
        each.join(", ")
    )
}

/// How long the warm-ups that ran until steady took, and which never got there.
pub(super) fn steady_clause(doc: &ResultsFile) -> Option<String> {
    let steady = doc.settings.warmup_until_steady?;
    let warmed: Vec<(f64, bool)> = doc.points.iter().filter_map(|p| p.warmup_until_steady()).collect();
    if warmed.is_empty() {
        return None;
    }
    let (least, most) = warmed.iter().fold((f64::INFINITY, 0.0f64), |(l, m), (s, _)| (l.min(*s), m.max(*s)));
    let unsteady = warmed.iter().filter(|(_, reached)| !reached).count();
    let rule = steady.rule;
    let verdict = match unsteady {
        0 if warmed.len() == 1 => "steady".to_string(),
        0 => format!("all {} steady", warmed.len()),
        k => format!(
            "{k} of {} not steady within --warmup-max {}s: their first runs may still be ramping (see the drift marks)",
            warmed.len(),
            steady.max_s
        ),
    };
    Some(format!(
        "fixed-time loops warmed until steady (two {} s blocks within {}%): {}, {verdict}",
        rule.block as f64 * rule.window_s,
        100.0 * rule.tolerance,
        match (most - least) < 0.05 {
            true => format!("{least:.1} s"),
            false => format!("{least:.1}–{most:.1} s"),
        }
    ))
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures::{self, run as record};
    use crate::results::{Point, RunRecord};
    use crate::vocab::Share;

    fn point(workload: Workload, share: Share, runs: Vec<RunRecord>) -> Point {
        let workers = runs[0].per_worker_ops.len();
        fixtures::point(workload, share, workers, runs)
    }

    #[test]
    fn renders_the_classic_table_exactly() {
        let mut doc = fixtures::doc(
            3,
            0.5,
            vec![
                point(
                    Workload::OpenClose,
                    Share::Private,
                    vec![record(0, &[192_000], 0.5), record(1, &[190_000], 0.5), record(2, &[194_000], 0.5)],
                ),
                point(
                    Workload::OpenClose,
                    Share::Private,
                    vec![
                        record(0, &[100_000, 100_000], 0.5),
                        record(1, &[101_000, 99_000], 0.5),
                        record(2, &[99_000, 99_000], 0.5),
                    ],
                ),
                point(Workload::CreatUnlink, Share::Shared, vec![record(0, &[6], 0.5), record(1, &[7], 0.5)]),
            ],
        );
        // The op's words are the catalogue's (the measuring crate's): the table prints what each point holds.
        for p in &mut doc.points {
            p.op = match p.workload {
                Workload::OpenClose => "openat(O_RDONLY) of a regular file, then close()",
                _ => "openat(O_CREAT|O_WRONLY|O_TRUNC) of a new file, close(), unlinkat() of it",
            }
            .into();
        }
        let expected = "\
open-close: openat(O_RDONLY) of a regular file, then close()
  workers  mode     share     ops/s    sd  ops/s/worker  efficiency
        1  process  private  384000  1.0%        384000      100.0%
        2  process  private  400000  0.6%        200000       52.1%
  scaling process/private ██

creat-unlink: openat(O_CREAT|O_WRONLY|O_TRUNC) of a new file, close(), unlinkat() of it
  workers  mode     share   ops/s     sd  ops/s/worker  efficiency
        1  process  shared  13.00  10.9%         13.00      100.0%  (2 of 3 runs)

scaling: a Universal Scalability Law fit needs at least 4 distinct worker counts; run more (e.g. -j 1..8) for one (see fsscale analyze).
ops/s: median of 3 runs of 0.5 s each; sd: of the runs, relative to their mean; efficiency: per worker against 1 worker (every column and mark: fsscale help marks).
";
        assert_eq!(render_results(&doc), expected);
        // -q: the tables without what their columns mean.
        let quiet = render_results_with(&doc, TextOptions { explain_all: false, legend: false });
        assert_eq!(quiet, expected.split("\nscaling: ").next().unwrap().to_string() + "\n");
    }

    #[test]
    fn short_fixed_work_and_an_impossible_concurrency_are_marked_and_explained() {
        // mdtest-stat: 12 ms at one worker, 9 ms at four: "3.9 times" the
        // work at once on a host of two usable CPUs.
        let mut doc = fixtures::doc(
            2,
            0.0,
            vec![
                point(Workload::MdtestCreate, Share::Private, vec![record(0, &[1000], 0.2), record(1, &[1000], 0.2)]),
                point(Workload::MdtestStat, Share::Private, vec![record(0, &[1000], 0.012), record(1, &[1000], 0.012)]),
                point(
                    Workload::MdtestStat,
                    Share::Private,
                    vec![record(0, &[1000; 4], 0.0123), record(1, &[1000; 4], 0.0123)],
                ),
            ],
        );
        doc.host.usable_cpus = 2;
        let text = render_results(&doc);
        let rows: Vec<&str> =
            text.lines().filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())).collect();
        // mdtest-create's table comes first (the order it ran in).
        assert!(!rows[0].contains('!'), "{text}");
        assert!(rows[1].ends_with("!short") && !rows[1].contains("!impossible"), "{text}");
        assert!(rows[2].ends_with("!short !impossible"), "{text}");
        // Each mark shown is explained in a line of its own; the others are not.
        assert!(text.contains("\n!short: fixed work under 50 ms"), "{text}");
        assert!(text.contains("\n!impossible: a speedup above the usable CPUs"), "{text}");
        assert!(!text.contains("~above CPUs:") && !text.contains("!drift:"), "{text}");
        // And compare keeps the short points out of its verdicts.
        let problem = doc.points[1].noise_problem().unwrap();
        assert_eq!(problem, "jobs of 12 ms, too short to time (under 50 ms)");
        assert_eq!(doc.points[0].noise_problem(), None);
        // As an MPI job of two nodes of two CPUs, rank 0 bound to one: four CPUs, 3.9 is possible.
        doc.host.usable_cpus = 1;
        doc.host.online_cpus = 2;
        doc.cluster = Some(crate::results::cluster::ClusterInfo {
            library: "Open MPI".into(),
            ranks: 4,
            hosts: vec!["a".into(), "a".into(), "b".into(), "b".into()],
            placement: Default::default(),
        });
        let text = render_results(&doc);
        assert!(!text.lines().any(|l| l.ends_with("!impossible")), "{text}");
    }

    #[test]
    fn a_speedup_above_the_cpus_within_the_runs_noise_is_marked_apart() {
        // stat on 2 CPUs: 2 workers 2.08 times one worker's rate. With the
        // runs 10% apart that is noise; with identical runs it is not.
        let rates = |base: f64, spread: f64| {
            vec![record(0, &[(base * (1.0 - spread)) as u64], 1.0), record(1, &[(base * (1.0 + spread)) as u64], 1.0)]
        };
        let two = |base: f64, spread: f64| {
            rates(base, spread).into_iter().map(|mut r| {
                let half = r.per_worker_ops[0] / 2;
                r.per_worker_ops = vec![half, half];
                r
            })
        };
        for (spread, mark) in [(0.1, "~above CPUs"), (0.0, "!impossible")] {
            let mut doc = fixtures::doc(
                2,
                1.0,
                vec![
                    point(Workload::Stat, Share::Private, rates(1000.0, spread)),
                    point(Workload::Stat, Share::Private, two(2080.0, spread).collect()),
                ],
            );
            doc.host.usable_cpus = 2;
            let text = render_results(&doc);
            let row = text.lines().find(|l| l.trim_start().starts_with("2 ")).unwrap();
            assert!(row.ends_with(mark), "{spread}: {text}");
        }
    }

    #[test]
    fn a_cold_walk_shows_what_it_read_from_the_device() {
        let with_reads = |run: usize| {
            let mut r = record(run, &[1000], 0.2);
            r.device_io = Some(crate::vocab::DeviceIo { read_ios: 40, read_bytes: 5_000_000, ..Default::default() });
            r
        };
        let doc =
            fixtures::doc(2, 0.0, vec![point(Workload::Traverse, Share::Private, vec![with_reads(0), with_reads(1)])]);
        let text = render_results(&doc);
        let header = text.lines().find(|l| l.trim_start().starts_with("workers")).unwrap();
        assert!(header.contains("dev MB read"), "{text}");
        let row = text.lines().find(|l| l.trim_start().starts_with("1 ")).unwrap();
        assert!(row.contains("  5.0  "), "{text}");
        // Without reads from the device, no such column.
        let doc = fixtures::doc(2, 0.0, vec![point(Workload::Traverse, Share::Private, vec![record(0, &[1000], 0.2)])]);
        assert!(!render_results(&doc).contains("dev MB read"));
    }

    #[test]
    fn tables_follow_the_order_the_workloads_ran_in() {
        let doc = fixtures::doc(
            2,
            1.0,
            vec![
                point(Workload::Untar, Share::Private, vec![record(0, &[1000], 0.2)]),
                point(Workload::Stat, Share::Private, vec![record(0, &[1000], 1.0)]),
                point(Workload::Lseek, Share::Private, vec![record(0, &[1000], 1.0)]),
            ],
        );
        let text = render_results(&doc);
        let headings: Vec<&str> = text.lines().filter_map(|l| l.split_once(": ").map(|(w, _)| w)).collect();
        let order: Vec<&str> = headings.into_iter().filter(|w| ["untar", "stat", "lseek"].contains(w)).collect();
        assert_eq!(order, ["untar", "stat", "lseek"], "{text}");
    }

    #[test]
    fn sparkline_scales_to_the_maximum() {
        assert_eq!(sparkline(&[0.0, 1.0, 2.0, 4.0, 8.0]), "▁▂▃▅█");
        assert_eq!(sparkline(&[100.0, 180.0, 120.0, 60.0]), "▅█▆▃");
        assert_eq!(sparkline(&[0.0, 0.0]), "▁▁");
    }

    #[test]
    fn empty_results_render_nothing() {
        let doc = fixtures::doc(1, 1.0, vec![]);
        assert_eq!(render_results(&doc), "");
    }
}
