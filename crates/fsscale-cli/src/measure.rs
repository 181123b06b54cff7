//! `fsscale run`: the measuring command (Linux only), from its arguments
//! to the tables on stdout, on one machine or as ranks of an MPI job.

use fsscale::report::{render_results_with, TextOptions};
use fsscale::results::ResultsFile;
use fsscale::runner::{self, Interrupted};

use crate::{cli, print, terminal};

/// This binary's transport for MPI jobs (the `mpi` feature).
#[cfg(feature = "mpi")]
const MPI: Option<fsscale::cluster::Connect> = Some(|| Ok(Box::new(fsscale_mpi::Mpi::init()?)));
/// Built without MPI: a launcher's job of several ranks is refused.
#[cfg(not(feature = "mpi"))]
const MPI: Option<fsscale::cluster::Connect> = None;

pub fn run_command(args: cli::RunArgs, argv: Vec<String>) -> anyhow::Result<()> {
    // `--like FILE` and `--resume FILE`: FILE's recorded plan, read as data,
    // stands in for these arguments (and is what this run records); it is
    // shown whole before anything runs, -q or not.
    let recorded = match (&args.output.like, &args.output.resume) {
        (Some(like), _) => Some(cli::like::expand(like, &argv, cli::like::Use::Like)?),
        (None, Some(resume)) => Some(cli::like::expand(resume, &argv, cli::like::Use::Resume)?),
        (None, None) => None,
    };
    let (args, argv, resumed, plan) = match recorded {
        Some(expanded) => (expanded.args, expanded.argv, expanded.resumed, expanded.plan),
        None => (args, argv, None, Vec::new()),
    };
    let placement = args.sweep.placement;
    let cluster = fsscale::cluster::from_launcher(placement.unwrap_or_default(), MPI)?;
    if cluster.is_none() && placement.is_some() {
        anyhow::bail!(
            "--placement picks the ranks of an MPI run (`mpirun -np R fsscale run ...`); \
             no MPI launcher started this one"
        );
    }
    let named_output = args.output.output.is_some();
    // `--history [--history-db PATH]`: where the finished run is recorded.
    let history = args.output.history.then(|| args.output.history_db.clone());
    let quiet = args.output.quiet;
    let explain_all = args.instruments.explain_all;
    // mpirun forwards a rank's stdout and stderr apart, so a line on stderr
    // can land inside a table: under MPI the text's "results:" line follows it on stdout.
    let one_stream = cluster.is_some() && args.output.format == cli::Format::Text;
    let tables = Tables { format: args.output.format, explain_all, legend: !quiet, one_stream };
    let job = cluster.as_ref().map(|c| cli::RankOf { rank: c.rank(), ranks: c.size() });
    let follower = job.is_some_and(|j| j.rank != 0);
    // A run continues on the machine it began on: figures from two
    // machines in one document would pass for one machine's.
    if let (Some(doc), false) = (&resumed, args.output.force) {
        if let Some(how) = doc.host.differs_from(&fsscale::results::Host::detect()) {
            anyhow::bail!(
                "--resume: that run began on {how}; continue it there, run its plan here with --like FILE -o NEW, or give --force to continue here (the resumption records this machine)"
            );
        }
    }
    // Rank 0 alone shows the recorded plan (every rank read the same file).
    for line in plan.iter().filter(|_| !follower) {
        eprintln!("fsscale: {line}");
    }
    if resumed.is_some() && cluster.is_some() {
        anyhow::bail!("--resume continues a run of one machine; under MPI, run the job again with another -o");
    }
    // Every rank finds the same fault in the same arguments: rank 0 says it.
    let mut config = args.into_config(argv, job).map_err(|e| if follower { QuietFailure(0).into() } else { e })?;
    // `--resume` continues the file it names, which is `-o`.
    config.replace_output |= resumed.is_some();
    let Some(cluster) = cluster else {
        let mut progress = terminal::TerminalProgress::new(quiet);
        let outcome = match resumed {
            Some(doc) => runner::resume(&config, doc, &mut progress),
            None => runner::run(&config, &mut progress),
        };
        return show_run(outcome, &config, named_output, tables, progress, history.as_ref());
    };
    if !cluster.is_root() {
        // Only rank 0 speaks: it reports every rank's failure, and the job's exit
        // status is its own (a non-zero one here would make mpirun kill rank 0 mid-report).
        return runner::run_on_ranks(&config, cluster, &mut runner::Silent).map(|_| ()).map_err(|e| {
            let code = e.downcast_ref::<Interrupted>().map_or(0, |i| i.exit_code() as u8);
            QuietFailure(code).into()
        });
    }
    let mut progress = terminal::TerminalProgress::new(quiet);
    let outcome = runner::run_on_ranks(&config, cluster, &mut progress)
        .and_then(|doc| doc.ok_or_else(|| anyhow::anyhow!("rank 0 returned no results (internal error)")));
    show_run(outcome, &config, named_output, tables, progress, history.as_ref())
}

/// A rank other than 0 failed: rank 0 says why; this one only exits, with status 0 unless a signal ended it.
#[derive(Debug, thiserror::Error)]
#[error("failed (exit status {0})")]
pub struct QuietFailure(pub u8);

/// How `run` prints its end-of-run tables.
#[derive(Clone, Copy)]
struct Tables {
    format: cli::Format,
    explain_all: bool,
    /// What the columns and marks mean (not with `-q`).
    legend: bool,
    /// The "results:" line goes to stdout after the tables, not to stderr.
    one_stream: bool,
}

impl Tables {
    fn render(self, doc: &ResultsFile) -> anyhow::Result<String> {
        Ok(match self.format {
            cli::Format::Text => {
                render_results_with(doc, TextOptions { explain_all: self.explain_all, legend: self.legend })
                    + &profile_cost(doc, fsscale::report::CompareFormat::Text)
            }
            cli::Format::Markdown => {
                fsscale::report::export(doc, fsscale::report::ExportFormat::Markdown, false)
                    + &profile_cost(doc, fsscale::report::CompareFormat::Markdown)
            }
            cli::Format::Json => fsscale::escape::json_pretty(doc)? + "\n",
        })
    }

    /// The tables, then where the results are (`what`: "results", "results so far").
    fn show(self, doc: &ResultsFile, what: &str, path: &std::path::Path) -> anyhow::Result<()> {
        let tables = self.render(doc)?;
        let line = format!("{what}: {}", path.display());
        match self.one_stream {
            true => print(&format!("{tables}{line}\n")),
            false => {
                print(&tables)?;
                eprintln!("{line}");
                Ok(())
            }
        }
    }
}

/// Prints a run's tables, or its error with whatever finished before it.
fn show_run(
    outcome: anyhow::Result<ResultsFile>,
    config: &fsscale::plan::RunConfig,
    named_output: bool,
    tables: Tables,
    mut progress: terminal::TerminalProgress,
    history: Option<&Option<std::path::PathBuf>>,
) -> anyhow::Result<()> {
    progress.clear();
    // The results are on disk before the history is written: a failure there loses nothing.
    let record = |doc: &ResultsFile| -> anyhow::Result<()> {
        if let Some(db) = history {
            eprintln!("{}", crate::history_command::add_run(doc, &config.output, db.as_deref())?);
        }
        Ok(())
    };
    match outcome {
        Ok(doc) => {
            tables.show(&doc, "results", &config.output)?;
            record(&doc)
        }
        Err(error) => {
            // The default results file is made (empty, exclusively) before the
            // run; a run that failed before saving anything leaves none behind.
            if !named_output && !progress.saved {
                let empty = std::fs::metadata(&config.output).is_ok_and(|m| m.len() == 0);
                if empty {
                    let _ = std::fs::remove_file(&config.output);
                }
            }
            // Show whatever finished before the failure (it is on disk too),
            // but never a file this invocation did not write.
            let ours = progress.saved.then(|| ResultsFile::load(&config.output).ok()).flatten();
            if let Some(doc) = ours {
                if doc.points.iter().any(|p| !p.runs.is_empty()) {
                    tables.show(&doc, "results so far", &config.output)?;
                    // What finished is data: recorded with its status, the error still reported.
                    if let Err(e) = record(&doc) {
                        eprintln!("fsscale: error: {e:#}");
                    }
                }
            }
            Err(error)
        }
    }
}

/// `--profile-cost`: what the instruments cost, profiled against
/// unprofiled paired by round, as `compare --between
/// variant=unprofiled,profiled` prints it; empty for any other run, or one
/// whose points did not both finish.
fn profile_cost(doc: &ResultsFile, format: fsscale::report::CompareFormat) -> String {
    use fsscale::compare::{compare_between, Between, CompareConfig};
    if !doc.settings.variants.iter().any(|v| v.unprofiled) {
        return String::new();
    }
    let Ok(between) = Between::parse("variant=unprofiled,profiled") else { return String::new() };
    let config = CompareConfig {
        test: fsscale::stats::hypothesis::TestKind::Paired,
        noise_threshold_pct: between.default_noise_threshold_pct(),
        ..CompareConfig::DEFAULT
    };
    match compare_between(doc, "this run", &between, &config) {
        Ok(mut c) if !c.rows.is_empty() => {
            // Its cost is the question here, not where the time went.
            c.profile_hint = None;
            let heading = match format {
                fsscale::report::CompareFormat::Markdown => "\n## What the instruments cost\n\n",
                _ => "\nwhat the instruments cost (--profile-cost; the same as compare --between variant=unprofiled,profiled):\n",
            };
            heading.to_string() + &fsscale::report::render_comparisons(&[c], format, false)
        }
        _ => String::new(),
    }
}
