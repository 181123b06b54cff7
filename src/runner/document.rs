//! The results document a run fills: its settings as the plan and the
//! prepared inputs say, a point for every planned combination, and how it ended.

use std::time::SystemTime;

use super::sources::Sources;
use crate::fs::FsSpec;
use crate::plan::{Arrivals, Order, PointSpec, RunConfig};
use crate::replay::OpIndex;
use crate::replay::OpKind;
use crate::results::{
    self, CommandSettings, Host, MdtestSettings, MetricInfo, OpenLoopSettings, Point, ReplaySettings, ResultsFile,
    Settings, Status, Target, Tool, UntarSettings, WalkedTree, SCHEMA_VERSION,
};
use crate::sys;
use crate::workloads::OpWords;
use crate::workloads::Workload;

/// A document with no points yet: the plan's settings and what the prepared
/// `sources` and the commands' containment (`contained`) are.
pub(super) fn new_document(config: &RunConfig, sources: &Sources, contained: Option<String>) -> ResultsFile {
    let mut settings = settings(config);
    settings.containment = contained;
    describe_sources(&mut settings, config, sources);
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool { name: "fsscale".into(), version: env!("CARGO_PKG_VERSION").into() },
        command_line: config.command_line.clone(),
        label: config.label.clone(),
        note: config.note.clone(),
        rev: config.rev.clone(),
        started_at: results::rfc3339(SystemTime::now()),
        finished_at: None,
        status: Status::Running,
        error: None,
        read_notes: Vec::new(),
        variant_in_effect: None,
        host: Host::detect(),
        target: Target::detect(&config.dir),
        settings,
        points: Vec::new(),
        run_id: Some(sys::random_hex(8)),
        cluster: None,
        resumed: Vec::new(),
    }
}

fn settings(config: &RunConfig) -> Settings {
    let options = &config.options;
    let open = !config.rates.is_empty() || !config.objectives.is_empty();
    let poisson = open && config.arrivals == Arrivals::Poisson;
    Settings {
        duration_s: config.duration.as_secs_f64(),
        warmup_s: config.warmup.as_secs_f64(),
        runs: config.runs,
        warmup_runs: config.warmup_runs,
        warmup_until_steady: config.steady.filter(|_| config.warmup_runs > 0),
        variants: config.variants.clone(),
        order: Some(config.order),
        // Shuffled rounds and Poisson arrivals draw from it (and --like takes it again).
        order_seed: (config.order == Order::Shuffled || poisson).then_some(config.order_seed),
        until_ci_pct: config.until_ci_pct,
        max_runs: config.until_ci_pct.map(|_| config.max_runs),
        sample_interval_s: config.sample_interval.as_secs_f64(),
        pin: config.pin,
        pin_order: None,
        untar: None,
        latency: config.latency,
        instruments: config.instruments,
        command: config.command.as_ref().map(|c| CommandSettings {
            cmd: c.cmd.clone(),
            setup: c.setup.clone(),
            cleanup: c.cleanup.clone(),
            prepare: c.prepare.clone(),
            shell: c.shell,
            timeout_s: c.timeout.map(|t| t.as_secs_f64()),
            metric: c.driver.as_ref().map(|m| m.describe()),
        }),
        replay: None,
        containment: None,
        fresh: config.filesystems.makes_filesystems().then_some(config.filesystems.fresh),
        walked_tree: None,
        lookup: (!options.lookup.is_default()).then_some(options.lookup),
        grow_bytes: config.workloads.contains(&Workload::AppendGrow).then_some(options.grow_bytes),
        memory_limit: None,
        open_loop: open.then(|| OpenLoopSettings {
            rates: config.rates.clone(),
            per_worker: config.rate_per_worker,
            arrivals: config.arrivals,
            seed: poisson.then_some(config.order_seed),
            objectives: config.objectives.clone(),
        }),
        map_bytes: config.workloads.iter().any(|w| w.maps_a_file()).then_some(options.map_bytes),
        mdtest: config.workloads.iter().any(|w| w.is_mdtest()).then(|| MdtestSettings {
            items: options.mdtest.items,
            write_bytes: options.mdtest.write_bytes,
            stonewall_s: options.mdtest.stonewall.map(|s| s.as_secs_f64()),
        }),
    }
}

/// What the trace, the walked tree and the extracted tarball hold.
fn describe_sources(settings: &mut Settings, config: &RunConfig, sources: &Sources) {
    settings.replay = sources.trace.as_ref().map(|t| {
        let mix = t.mix();
        ReplaySettings {
            trace: t.name.clone(),
            ops_per_pass: OpKind::ALL.iter().filter(|k| mix[k.index()] > 0).map(|k| (*k, mix[k.index()])).collect(),
            bytes_per_pass: t.bytes_per_pass(),
            sha256: t.sha256.clone(),
        }
    });
    let tree = sources.tree.as_ref();
    settings.walked_tree = tree.and_then(|t| {
        t.walk_tree.as_ref().map(|path| WalkedTree {
            path: absolute(path),
            entries: t.walk_contents.entries(),
            bytes: t.walk_contents.bytes,
            digest: t.walk_digest.clone(),
        })
    });
    let generated = config.macro_options.tarball.is_none();
    settings.untar = tree.filter(|_| !sources.walks_only_a_given_tree).map(|u| UntarSettings {
        tarball: match generated {
            true => u.tarball.display().to_string(),
            false => absolute(&u.tarball),
        },
        scale: generated.then_some(config.macro_options.scale),
        seed: generated.then_some(config.macro_options.seed),
        extract_cmd: u.command.clone(),
        entries: u.contents.entries(),
        bytes: u.contents.bytes,
        sha256: u.tarball_sha256.clone(),
    });
}

/// An input's path as recorded: absolute, so a reader knows which file it was.
fn absolute(path: &std::path::Path) -> String {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

/// A point of `spec` on `fs_spec`, with no runs yet.
pub(super) fn new_point(config: &RunConfig, fs_spec: &FsSpec, spec: &PointSpec) -> Point {
    Point {
        workload: spec.workload,
        op: spec.workload.op_words(&config.options),
        mode: spec.mode,
        share: spec.share,
        workers: spec.workers,
        rate: spec.rate,
        complete: false,
        runs: Vec::new(),
        warmup_runs: Vec::new(),
        summary: None,
        fs: fs_spec.made_label(),
        cache: spec.cache,
        variant: spec.variant.map(|v| config.variants[v].name.clone()),
        filesystem: None,
        metric: (spec.workload == Workload::Command)
            .then(|| config.command.as_ref().and_then(|c| c.driver.as_ref()))
            .flatten()
            .map(|m| MetricInfo { name: m.name.clone(), higher_is_better: m.higher_is_better }),
        ranks: None,
    }
}

/// The document of an interrupted or failed run, running again (`--resume`):
/// its runs kept, its end forgotten, the resumption recorded.
pub(super) fn reopen(mut doc: ResultsFile) -> ResultsFile {
    let runs_kept = doc.points.iter().map(|p| p.runs.len() + p.warmup_runs.len()).sum();
    let first_position = doc
        .points
        .iter()
        .flat_map(|p| p.runs.iter().chain(&p.warmup_runs))
        .filter_map(|r| r.position)
        .max()
        .map_or(0, |p| p + 1);
    let here = crate::results::Host::detect();
    let host = doc.host.differs_from(&here).map(|_| here);
    doc.resumed.push(crate::results::Resumed {
        at: results::rfc3339(SystemTime::now()),
        runs_kept,
        first_position,
        host,
    });
    doc.status = Status::Running;
    doc.error = None;
    doc.finished_at = None;
    doc
}

/// Records how the run ended.
pub(super) fn finish(doc: &mut ResultsFile, status: Status, error: Option<&anyhow::Error>) {
    doc.status = status;
    doc.error = error.map(|e| format!("{e:#}"));
    doc.finished_at = Some(results::rfc3339(SystemTime::now()));
}
