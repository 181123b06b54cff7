//! What `fsscale history ...`, `fsscale gate` and `run --history` do
//! between parsing and printing.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::cli::AnalyzeFormat;
use crate::cli::{
    CheckArg, GateArgs, HistoryAddArgs, HistoryChangesArgs, HistoryQueryArgs, SearchArgs, SeriesArgs, StoreArg,
    WorkloadArg,
};
use fsscale::compare::{Figure, DEFAULT_NOISE_THRESHOLD_PCT};
use fsscale::history::{
    changes, check, judge, Added, ChangeConfig, ChangesFound, GateRule, GateVerdict, SeriesFigure, SeriesFilter, Store,
};
use fsscale::results::ResultsFile;

fn store_path(arg: &StoreArg) -> Result<PathBuf> {
    match &arg.history_db {
        Some(path) => Ok(path.clone()),
        None => Store::default_path(),
    }
}

/// The workload names a filter admits: `None` for all.
pub fn workload_names(arg: Option<&WorkloadArg>) -> Option<Vec<String>> {
    match arg? {
        WorkloadArg::All => None,
        WorkloadArg::One(w) => Some(vec![w.to_string()]),
        WorkloadArg::Group(phases) => Some(phases.iter().map(|w| w.to_string()).collect()),
    }
}

/// `history add`: a line per file, then how many were recorded.
pub fn add_command(args: &HistoryAddArgs) -> Result<String> {
    let path = store_path(&args.store)?;
    let mut store = Store::open(&path)?;
    let mut out = String::new();
    let (mut new, mut already) = (0, 0);
    for file in &args.results {
        let doc = ResultsFile::load(file)?;
        match store.add(&doc, args.rev.as_deref()).with_context(|| format!("recording {}", file.display()))? {
            Added::New { series } => {
                new += 1;
                out.push_str(&format!("recorded {} ({series} series)\n", file.display()));
            }
            Added::Updated { series } => {
                new += 1;
                out.push_str(&format!(
                    "updated {} (recorded before with fewer runs; {series} series)\n",
                    file.display()
                ));
            }
            Added::Already => {
                already += 1;
                out.push_str(&format!("already recorded {} (its run id is in the store)\n", file.display()));
            }
        }
    }
    out.push_str(&format!(
        "{new} recorded, {already} already there; {} results in {}\n",
        store.len()?,
        store.location()
    ));
    Ok(out)
}

/// `run --history`: records the run's document, saying where.
#[cfg(target_os = "linux")]
pub fn add_run(doc: &ResultsFile, results: &std::path::Path, db: Option<&std::path::Path>) -> Result<String> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => Store::default_path()?,
    };
    let recorded = Store::open(&path).and_then(|mut store| store.add(doc, None));
    match recorded {
        Ok(Added::New { series }) => Ok(format!("history: recorded in {} ({series} series)", path.display())),
        Ok(Added::Updated { series }) => {
            Ok(format!("history: updated in {} (the run had been recorded unfinished; {series} series)", path.display()))
        }
        Ok(Added::Already) => Ok(format!("history: already in {}", path.display())),
        Err(e) => Err(e.context(format!(
            "the results are saved in {}, but recording them in the history failed; record them with `fsscale history add {}`",
            results.display(),
            results.display()
        ))),
    }
}

/// The series a query's filters take.
fn filter(args: &SeriesArgs) -> SeriesFilter {
    SeriesFilter {
        workloads: workload_names(args.workload.as_ref()),
        workers: args.workers,
        host: args.host.clone(),
        mode: args.mode.map(|m| m.to_string()),
        share: args.share.map(|s| s.to_string()),
        fs: args.fs.clone(),
        variant: args.variant.clone(),
        rate: args.rate,
    }
}

/// The store a query reads: it must exist (a query never makes one).
fn existing_store(arg: &StoreArg) -> Result<Store> {
    let path = store_path(arg)?;
    if !Store::exists(&path) {
        bail!(
            "no history store at {}; record results with `fsscale history add FILE...` or `fsscale run --history`, or give --history-db",
            path.display()
        );
    }
    Store::open(&path)
}

/// The store `compare` reads thresholds from: `path`, else the default
/// one; `None` where there is none (compare makes no store).
pub fn store_to_read(path: Option<&std::path::Path>) -> Result<Option<Store>> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => Store::default_path()?,
    };
    if !Store::exists(&path) {
        return Ok(None);
    }
    Store::open(&path).map(Some)
}

/// How a query searches: its flags over [`ChangeConfig::DEFAULT`].
fn change_config(args: &SearchArgs) -> ChangeConfig {
    let d = ChangeConfig::DEFAULT;
    ChangeConfig {
        last: args.last as usize,
        significance: args.significance,
        min_segment: args.min_segment as usize,
        figure: match args.figure {
            crate::cli::FigureArg::Ops => SeriesFigure::Rate,
            crate::cli::FigureArg::Cpu => SeriesFigure::PerCpu,
        },
        ..d
    }
}

/// The steps of the series `series` takes from `store`, searched as `search` says.
fn search(store: &StoreArg, series: &SeriesArgs, search: &SearchArgs) -> Result<(ChangesFound, ChangeConfig)> {
    let store = existing_store(store)?;
    let series = store.series(&filter(series))?;
    let config = change_config(search);
    Ok((changes(&store, &series, &config)?, config))
}

/// `history show`.
pub fn show_command(args: &HistoryQueryArgs) -> Result<String> {
    let (found, _) = search(&args.store, &args.series, &args.search)?;
    Ok(match args.format {
        AnalyzeFormat::Json => fsscale::escape::json_pretty(&fsscale::report::series_json(&found))? + "\n",
        AnalyzeFormat::Text => fsscale::report::render_series(&found),
    })
}

/// `history changes`: the text, and with `--since` the steps to worse
/// that began after it, as the alert's failure.
pub fn changes_command(args: &HistoryChangesArgs) -> Result<(String, Option<crate::commands::Regressed>)> {
    let query = &args.query;
    let (found, config) = search(&query.store, &query.series, &query.search)?;
    let since = args.since.as_deref().map(|s| fsscale::history::Since::resolve(s, &found)).transpose()?;
    let text = match args.query.format {
        AnalyzeFormat::Json => fsscale::report::changes_json(&found, since.as_ref())? + "\n",
        AnalyzeFormat::Text => fsscale::report::render_changes(&found, config.confidence, since.as_ref()),
    };
    let alert = since.as_ref().and_then(|since| {
        let new = since.worse_steps(&found);
        (!new.is_empty()).then(|| {
            crate::commands::Regressed(format!(
                "{} step{} to worse since {}: {}",
                new.len(),
                if new.len() == 1 { "" } else { "s" },
                fsscale::escape::for_terminal(&since.asked),
                // Hosts, revisions and points come from received files.
                fsscale::escape::for_terminal(&new.join("; "))
            ))
        })
    });
    Ok((text, alert))
}

/// `report --history`: the page of every matching series.
pub fn history_report(store: &StoreArg, series: &SeriesArgs, search_args: &SearchArgs) -> Result<String> {
    let (found, config) = search(store, series, search_args)?;
    Ok(fsscale::report::render_history_html(&found.series, config.confidence))
}

/// `fsscale gate`: the verdict and why, a line per point. A revision too
/// noisy to call is measured again, up to `--max-rounds` rounds, its runs
/// pooled; `--check` turns a verdict other than the one the user names
/// into the gate's own failure (128).
pub fn gate_command(args: &GateArgs) -> Result<(GateVerdict, String)> {
    let good = args.good.iter().map(|p| ResultsFile::load(p)).collect::<Result<Vec<_>>>()?;
    let bad = args.bad.iter().map(|p| ResultsFile::load(p)).collect::<Result<Vec<_>>>()?;
    let bad = (!bad.is_empty()).then_some(bad);
    let threshold = args.noise_threshold.unwrap_or(DEFAULT_NOISE_THRESHOLD_PCT);
    if !((0.0..100.0).contains(&threshold) && args.confidence > 50.0 && args.confidence < 100.0) {
        bail!("give --noise-threshold in [0, 100) and -c in (50, 100), e.g. --noise-threshold 2 -c 95");
    }
    let expected = args.check.map(|c| match c {
        CheckArg::Good => GateVerdict::Good,
        CheckArg::Bad => GateVerdict::Bad,
    });
    if expected == Some(GateVerdict::Bad) && bad.is_none() {
        bail!("--check bad needs the bad results to check against: give --bad BAD.json");
    }
    let figure = if args.per_cpu { Figure::OpsPerCpuSecond } else { Figure::Throughput };
    let rule = GateRule { confidence: args.confidence / 100.0, noise_threshold_pct: threshold, figure };
    let max_rounds = if args.results.is_some() { 1 } else { args.max_rounds };
    let first = match &args.results {
        Some(path) => ResultsFile::load(path)?,
        None => match measure(&args.run)? {
            Some(doc) => doc,
            None if expected.is_some() => {
                bail!("the run failed after it began measuring, so this revision cannot be checked")
            }
            None => {
                return Ok((
                    GateVerdict::Skip,
                    "the run failed after it began measuring: this revision cannot be measured\n".into(),
                ))
            }
        },
    };
    // Each round is an invocation of its own: the gate holds a revision to
    // how much invocations differ, where a side has several.
    let mut rounds = vec![first];
    let mut decision = judge(&rounds, &good, bad.as_deref(), &rule)?;
    while decision.verdict == GateVerdict::Skip && decision.undecided && (rounds.len() as u32) < max_rounds {
        // A round that fails leaves the verdict to the rounds measured.
        let Some(more) = measure(&args.run)? else { break };
        rounds.push(more);
        decision = judge(&rounds, &good, bad.as_deref(), &rule)?;
    }
    let mut text = decision.points.join("\n");
    if rounds.len() > 1 {
        text.push_str(&format!("\n{} rounds measured, each an invocation (--max-rounds {max_rounds})", rounds.len()));
    }
    if let Some(expected) = expected {
        check(&decision, expected)?;
        text.push_str(&format!("\nthis revision: {}, as --check says\n", decision.verdict.word()));
        return Ok((GateVerdict::Good, text));
    }
    text.push_str(&format!("\nthis revision: {}\n", decision.verdict.word()));
    Ok((decision.verdict, text))
}

/// Runs `fsscale run ARGS -o TMP` and reads its results; `None` if the
/// revision ran but could not be measured through (125: skip it). What is
/// the gate's own failure ends the bisection (an error, 128): a run that
/// failed before its first measurement (a usage error, a refused plan, a
/// missing `--dir`), and a signal, whether the run or the gate got it. A
/// signal to the gate is passed on to the run, which cleans up; the gate
/// waits for it and removes its directory.
fn measure(run_args: &[String]) -> Result<Option<ResultsFile>> {
    if run_args.iter().any(|a| a == "-o" || a.starts_with("--output") || a == "--format") {
        bail!("the gate keeps the run's results itself: drop -o and --format from the run's arguments (add --history to keep them)");
    }
    gate_signals::install();
    let dir = GateDir::new()?;
    let output = dir.0.join("results.json");
    let exe = std::env::current_exe().context("finding fsscale's own binary")?;
    let mut command = std::process::Command::new(exe);
    command.arg("run").args(run_args).arg("-o").arg(&output).stdout(std::process::Stdio::null());
    gate_signals::die_with_parent(&mut command);
    let mut child = command.spawn().context("starting fsscale run")?;
    let status = gate_signals::wait_passing_signals(&mut child).context("waiting for fsscale run")?;
    if let Some(signal) = gate_signals::received() {
        bail!("the gate was stopped by signal {signal}; the run was stopped with it");
    }
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(Some(ResultsFile::load(&output)?)),
        // Ctrl-C and its kin (128 + SIGHUP, SIGINT, SIGQUIT, SIGTERM), or a
        // signal that killed it: stop the bisection, not skip the revision.
        (Some(code @ (129 | 130 | 131 | 143)), _) => bail!("the run was interrupted (exit {code})"),
        (None, signal) => bail!("the run was killed by signal {}", signal.unwrap_or(0)),
        (Some(code), _) => {
            let measured = ResultsFile::load(&output).is_ok_and(|doc| doc.points.iter().any(|p| !p.runs.is_empty()));
            if measured {
                Ok(None)
            } else {
                bail!("the run failed (exit {code}) before its first measurement (its error is above): a plan refused here is refused at every revision, so mend the run's arguments")
            }
        }
    }
}

/// The gate's signals: SIGINT, SIGTERM and SIGHUP are recorded (the
/// handler only stores the number), passed on to the measuring run, and end
/// the gate with 128 once the run has cleaned up.
mod gate_signals {
    use std::sync::atomic::{AtomicI32, Ordering};

    static RECEIVED: AtomicI32 = AtomicI32::new(0);

    extern "C" fn record(signal: libc::c_int) {
        RECEIVED.store(signal, Ordering::SeqCst);
    }

    pub fn install() {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = record as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }

    pub fn received() -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal),
        }
    }

    /// The run gets SIGTERM if the gate dies (SIGKILL included), so it never outlives it.
    pub fn die_with_parent(command: &mut std::process::Command) {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: prctl and getppid are async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    if libc::getppid() != parent {
                        libc::_exit(128);
                    }
                    Ok(())
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }

    /// Waits for `child`, passing on the first signal the gate gets (once).
    pub fn wait_passing_signals(child: &mut std::process::Child) -> std::io::Result<std::process::ExitStatus> {
        let mut passed = false;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if let (Some(signal), false) = (received(), passed) {
                // SAFETY: kill with the child's pid, which is not yet reaped.
                unsafe { libc::kill(child.id() as libc::pid_t, signal) };
                passed = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A directory of the gate's own (unique name, mode 0700) for the run's
/// results; what it holds is removed with it, by name.
struct GateDir(PathBuf);

impl GateDir {
    fn new() -> Result<GateDir> {
        use std::os::unix::fs::DirBuilderExt;
        let name = format!("fsscale-gate-{}-{}", std::process::id(), fsscale::sys::random_hex(4));
        let dir = std::env::temp_dir().join(name);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).with_context(|| format!("making {}", dir.display()))?;
        Ok(GateDir(dir))
    }
}

impl Drop for GateDir {
    fn drop(&mut self) {
        let results = self.0.join("results.json");
        let _ = std::fs::remove_file(fsscale::results::journal_path(&results));
        let _ = std::fs::remove_file(&results);
        let _ = std::fs::remove_dir(&self.0);
    }
}
