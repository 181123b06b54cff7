//! Runs a [`RunConfig`]: every point, every repetition, each in a fresh
//! scratch directory, saving the results document after every run.

mod cpu;
mod measure;
mod progress;
mod shared;
mod signals;
mod worker;

use std::time::SystemTime;

use anyhow::{bail, Context, Result};

pub use progress::{Progress, Silent};
pub use signals::Interrupted;

use crate::archive;
use crate::plan::{MacroOptions, RunConfig};
use crate::results::{self, Host, Point, ResultsFile, Settings, Status, Target, Tool, UntarSettings, SCHEMA_VERSION};
use crate::scratch::Scratch;
use crate::sys;
use crate::tree::{write_tar_file, TreeSpec};
use crate::workloads::TreeSource;

/// Runs every point of `config` and returns the finished document, which is
/// also on disk at `config.output`. On failure or interruption the document
/// on disk still holds every finished run, with the status saying why it stopped.
pub fn run(config: &RunConfig, progress: &mut dyn Progress) -> Result<ResultsFile> {
    config.validate()?;
    signals::install();
    sys::raise_fd_limit();
    // A probe scratch directory gives the clear "--dir ..." errors before anything else.
    Scratch::create(&config.dir)?.remove()?;
    if let Some(parent) = config.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create the results directory {}", parent.display()))?;
    }
    let untar = if config.workloads.iter().any(|w| w.is_fixed_work()) {
        Some(prepare_untar(&config.macro_options, progress)?)
    } else {
        None
    };
    let mut doc = new_document(config);
    doc.settings.untar = untar.as_ref().map(|u| UntarSettings {
        tarball: u.tarball.display().to_string(),
        scale: config.macro_options.tarball.is_none().then_some(config.macro_options.scale),
        seed: config.macro_options.tarball.is_none().then_some(config.macro_options.seed),
        extract_cmd: u.command.clone(),
        entries: u.contents.entries(),
        bytes: u.contents.bytes,
    });
    doc.save(&config.output)?;
    progress.saved();

    let cpus = config.pin.then(allowed_cpus);
    let timing = measure::Timing {
        warmup: config.warmup,
        duration: config.duration,
        sample_interval: config.sample_interval,
        drop_caches: config.macro_options.cold_cache,
    };
    if config.macro_options.cold_cache && config.workloads.iter().any(|w| w.is_fixed_work()) {
        // Fail before anything runs rather than at the first point.
        measure::drop_caches()?;
    }
    let points = config.points();
    progress.plan(points.len(), config.runs);
    for (index, spec) in points.iter().enumerate() {
        doc.points.push(Point {
            workload: spec.workload,
            op: spec.workload.describe().op.to_string(),
            mode: spec.mode,
            share: spec.share,
            workers: spec.workers,
            complete: false,
            runs: Vec::new(),
            summary: None,
        });
        let pinned: Option<Vec<usize>> = cpus.as_ref().map(|c| (0..spec.workers).map(|i| c[i % c.len()]).collect());
        for run in 0..config.runs {
            progress.run_started(spec, index, run);
            let outcome = signals::check()
                .map_err(anyhow::Error::from)
                .and_then(|()| measure::run_once(spec, &config.dir, &timing, pinned.as_deref(), untar.as_ref(), run));
            let record = match outcome {
                Ok(record) => record,
                Err(error) => {
                    let error = error.context(format!(
                        "{} ({}, {}, {} workers), run {} of {}",
                        spec.workload,
                        spec.mode,
                        spec.share,
                        spec.workers,
                        run + 1,
                        config.runs
                    ));
                    let interrupted = error.downcast_ref::<Interrupted>().is_some();
                    finish(&mut doc, if interrupted { Status::Interrupted } else { Status::Failed }, Some(&error));
                    doc.save(&config.output)?;
                    progress.saved();
                    return Err(error);
                }
            };
            progress.run_finished(spec, &record);
            let point = doc.points.last_mut().expect("pushed above");
            point.runs.push(record);
            point.summarize();
            doc.save(&config.output)?;
            progress.saved();
        }
        let point = doc.points.last_mut().expect("pushed above");
        point.complete = true;
        progress.point_finished(point);
    }
    finish(&mut doc, Status::Complete, None);
    doc.save(&config.output)?;
    progress.saved();
    Ok(doc)
}

fn new_document(config: &RunConfig) -> ResultsFile {
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool { name: "fsscale".into(), version: env!("CARGO_PKG_VERSION").into() },
        command_line: config.command_line.clone(),
        started_at: results::rfc3339(SystemTime::now()),
        finished_at: None,
        status: Status::Running,
        error: None,
        host: Host::detect(),
        target: Target::detect(&config.dir),
        settings: Settings {
            duration_s: config.duration.as_secs_f64(),
            warmup_s: config.warmup.as_secs_f64(),
            runs: config.runs,
            sample_interval_s: config.sample_interval.as_secs_f64(),
            pin: config.pin,
            untar: None,
        },
        points: Vec::new(),
    }
}

/// The tarball `untar` extracts: `--tarball`, or the generated tree at
/// `--scale`, made once and kept in the cache directory. Scanning it counts
/// its entries and reads it into the page cache before anything is timed.
fn prepare_untar(options: &MacroOptions, progress: &mut dyn Progress) -> Result<TreeSource> {
    if let Some(tree) = &options.tree {
        if !tree.is_dir() {
            bail!("--tree {} is not a directory", tree.display());
        }
    }
    let tarball = match &options.tarball {
        Some(path) => path.clone(),
        None => {
            let spec = TreeSpec { scale: options.scale, seed: options.seed };
            spec.validate()?;
            let path = options.cache_dir.join(format!("tree-v1-scale{}-seed{}.tar", options.scale, options.seed));
            if !path.is_file() {
                progress.preparing(&format!(
                    "generating the scale-{} tree tarball in {}",
                    options.scale,
                    path.display()
                ));
                std::fs::create_dir_all(&options.cache_dir)
                    .with_context(|| format!("cannot create the cache directory {}", options.cache_dir.display()))?;
                write_tar_file(&spec, &path)?;
            }
            path
        }
    };
    let mut file =
        std::fs::File::open(&tarball).with_context(|| format!("cannot open tarball {}", tarball.display()))?;
    let contents = archive::scan(&mut file).with_context(|| format!("tarball {}", tarball.display()))?;
    Ok(TreeSource {
        tarball,
        contents,
        command: options.extract_cmd.clone(),
        walk_tree: options.tree.clone(),
        stat: options.stat,
    })
}

fn finish(doc: &mut ResultsFile, status: Status, error: Option<&anyhow::Error>) {
    doc.status = status;
    doc.error = error.map(|e| format!("{e:#}"));
    doc.finished_at = Some(results::rfc3339(SystemTime::now()));
}

/// The CPUs this process may run on (respecting `taskset` and cgroups), in order.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data filled by the kernel.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer and size.
    let ok = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == 0;
    let cpus: Vec<usize> = if ok {
        // SAFETY: CPU_ISSET reads within the set for i < CPU_SETSIZE.
        (0..libc::CPU_SETSIZE as usize).filter(|&i| unsafe { libc::CPU_ISSET(i, &set) }).collect()
    } else {
        Vec::new()
    };
    if cpus.is_empty() {
        (0..sys::online_cpus()).collect()
    } else {
        cpus
    }
}
