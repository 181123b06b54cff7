//! The command line: clap lives here and nowhere else. Each subcommand's
//! arguments turn into a plain configuration for the core: `run`'s in
//! [`run`] and [`workload_args`], the values of enumerated and structured options in [`values`].

#[cfg(test)]
mod documented;
mod history;
pub mod reference;
#[cfg(target_os = "linux")]
mod run;
mod values;
#[cfg(target_os = "linux")]
mod workload_args;

#[cfg(target_os = "linux")]
pub mod like;
#[cfg(target_os = "linux")]
mod recorded;
pub use history::{
    GateArgs, HistoryAddArgs, HistoryArgs, HistoryChangesArgs, HistoryCommand, HistoryQueryArgs, SearchArgs,
    SeriesArgs, StoreArg,
};
#[cfg(target_os = "linux")]
pub use run::{RankOf, RunArgs};
#[cfg(target_os = "linux")]
pub use values::Format;
use values::*;
pub use values::{AnalyzeFormat, CheckArg, ExportFormatArg, FigureArg, WorkloadArg};
#[cfg(target_os = "linux")]
pub use workload_args::cache_dir;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use fsscale::report::CompareFormat;
use fsscale::stats::hypothesis::TestKind;
use fsscale::vocab::{Cache, Mode, Quantile, Share, Workload};

#[derive(Parser, Debug)]
#[command(
    name = "fsscale",
    version,
    about = "Measure how filesystem and VFS operations scale with CPU cores",
    long_about = "Measure how filesystem and VFS operations scale with CPU cores.\n\n\
        fsscale runs classic microbenchmarks (stat, open/close, creat/unlink, ...) over a sweep of \
        worker counts, as processes or threads, in private or shared directories, repeats every \
        point, and records everything in versioned JSON. It then compares systems point by point with \
        significance tests (`compare`), explains where scaling stops with a Universal Scalability Law \
        fit (`analyze`), and includes a byte-compatible ministat (`ministat`).",
    after_help = "Quick start: `fsscale run` runs the default suite in the current directory; `fsscale list` shows every workload; `fsscale help marks` explains the tables' columns and marks.",
    args_override_self = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Parses the command line. A usage error is one line, as every other
/// error of fsscale is (clap's own spans a paragraph with the usage), and
/// exits 2; help and version print as clap prints them.
pub fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => error.exit(),
        Err(error) => {
            eprintln!("fsscale: {}", one_line(&error.render().to_string()));
            // `git bisect run` takes 1 to 127 as "bad": a gate that cannot
            // judge must end the bisection instead (128).
            let gate = std::env::args_os().nth(1).is_some_and(|a| a == "gate");
            std::process::exit(if gate { GATE_ERROR } else { 2 });
        }
    }
}

/// What `fsscale gate` exits with when it cannot judge (a missing file, a
/// wrong argument): `git bisect run` stops on it rather than calling the revision bad.
pub const GATE_ERROR: i32 = 128;

/// Clap's message without its usage and the "For more information" line,
/// folded into one line: `error: invalid value 'x' for '--mode <MODE>'
/// [possible values: process, thread]; see --help`.
pub(crate) fn one_line(rendered: &str) -> String {
    let mut line = String::new();
    for piece in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if piece.starts_with("Usage:") || piece.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') || piece.starts_with('[') { " " } else { "; " });
        }
        line.push_str(piece);
    }
    line.push_str("; see --help");
    line
}

#[cfg(target_os = "linux")]
#[derive(Args, Debug)]
pub struct CleanupArgs {
    /// Also remove scratch directories of killed runs in DIR (only fsscale's own, with their marker, held by no live run; never across a mount). Repeatable.
    #[arg(long, value_name = "DIR")]
    pub scratch: Vec<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    #[cfg(target_os = "linux")]
    /// List every workload: what one op does and what each sharing level shares.
    List,
    #[cfg(target_os = "linux")]
    /// Run workloads over a sweep of worker counts and print a table.
    Run(Box<RunArgs>),
    /// Write a self-contained HTML report (environment, charts, comparisons, findings) of results files.
    Report(ReportArgs),
    /// Draw one workload's scaling chart from results files, as SVG or PNG; for open loops (--rate, --slo), response p99 against the rate asked, each curve's knee ringed.
    Plot(PlotArgs),
    #[cfg(target_os = "linux")]
    /// Remove what a killed run left behind: mounts, loop devices and images of filesystems fsscale made, tracing instances, command cgroups and half-written cache tarballs (only what no live run holds locked); list (and with --scratch DIR remove) its scratch directories.
    Cleanup(CleanupArgs),
    /// Print a shell completion script: `fsscale completions bash > /etc/bash_completion.d/fsscale`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (fsscale.1 and fsscale-SUBCOMMAND.1) into DIR, or print fsscale.1.
    Manpage {
        /// Directory to write every page into (e.g. /usr/local/share/man/man1).
        #[arg(long, value_name = "DIR", conflicts_with = "markdown")]
        dir: Option<PathBuf>,
        /// Print the options reference of every subcommand as Markdown instead (docs/REFERENCE.md is this output).
        #[arg(long)]
        markdown: bool,
    },
    /// Print the help of a subcommand (`fsscale help run`), or what the tables' columns and marks mean (`fsscale help marks`).
    Help {
        /// A subcommand, or `marks`.
        #[arg(value_name = "SUBCOMMAND|marks")]
        topic: Option<String>,
    },
    #[cfg(target_os = "linux")]
    /// Internal: outlives rank 0 of an MPI job to remove its scratch if it is killed.
    #[command(name = "scratch-warden", hide = true)]
    ScratchWarden,
    #[cfg(target_os = "linux")]
    /// Generate the deterministic ports-like source tree, as a directory or an uncompressed tarball.
    Tree(TreeArgs),
    /// Compare results files point by point: change, confidence interval, test, verdict.
    Compare(CompareArgs),
    /// The results history: record results (`add`), print series (`show`), find where they stepped and why (`changes`).
    History(HistoryArgs),
    /// Judge a revision for `git bisect run`: exit 0 if its results are like the good ones, 1 if worse, 125 if too noisy to say (128: the gate itself failed, which ends the bisection).
    Gate(GateArgs),
    /// Scaling analysis: speedup, efficiency, Universal Scalability Law fit, collapse.
    Analyze(AnalyzeArgs),
    /// Print one point's per-run figures, one a line: input for `fsscale ministat` or any other tool.
    Export(ExportArgs),
    /// ministat-compatible statistics on data files (`fsscale ministat --help`).
    #[command(disable_help_flag = true)]
    Ministat {
        /// ministat's own arguments: [-C column] [-c confidence] [-d delimiters] [-Anqs] [-w width] [file ...]
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
}

#[cfg(target_os = "linux")]
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["dir", "tar"])))]
pub struct TreeArgs {
    /// Size factor: 1 = about 94,000 files in 27,000 directories and 265 MB; 0.01 for tests, 10 for big machines.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seed: the same seed and scale give the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the tree into this directory, which must not exist yet.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write an uncompressed tarball to this file, which must not exist yet.
    #[arg(long, value_name = "FILE")]
    pub tar: Option<PathBuf>,
}

#[derive(Args, Debug)]
// The series filters and the search are `history show`'s, and only for --history.
#[command(mut_group("SeriesArgs", |g| g.requires("history")), mut_group("SearchArgs", |g| g.requires("history")))]
pub struct ReportArgs {
    /// Results files; the first is the base that the others are compared with.
    #[arg(value_name = "RESULTS.json", required_unless_present = "history", conflicts_with = "history")]
    pub results: Vec<PathBuf>,
    /// Draw the history instead: each series (as `history show` filters them) with its steps marked and, under each step, why, with differential flame graphs.
    #[arg(long)]
    pub history: bool,
    #[command(flatten)]
    pub store: StoreArg,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "fsscale-report.html")]
    pub output: PathBuf,
    /// Also compare two values of one dimension inside each file, as `compare --between` does (e.g. share=private,shared); repeatable. Each compared point is explained from its profiles, with a differential flame graph.
    #[arg(long, value_name = "DIM=A,B")]
    pub between: Vec<String>,
    // Last: a heading holds for the arguments after it.
    #[command(flatten, next_help_heading = "With --history: which series")]
    pub series: SeriesArgs,
    #[command(flatten, next_help_heading = "With --history: step search")]
    pub search: SearchArgs,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Results files, one or more series each.
    #[arg(value_name = "RESULTS.json", required = true)]
    pub results: Vec<PathBuf>,
    /// The workload to chart.
    #[arg(short = 'w', long, value_parser = parse_workload_arg)]
    pub workload: WorkloadArg,
    /// Output file: .svg or .png.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline results file (from `fsscale run`).
    #[arg(value_name = "BASE.json")]
    pub base: PathBuf,
    /// Results files to compare with the baseline, each on its own.
    #[arg(value_name = "NEW.json", required_unless_present_any = ["between", "variants", "vs"], conflicts_with_all = ["between", "variants"])]
    pub new: Vec<PathBuf>,
    /// Several invocations per side: BASE.json and the NEW.json files before --vs are the base side's invocations, the files after it the new side's (A1.json A2.json A3.json --vs B1.json B2.json B3.json). The invocation is the unit (Kalibera and Jones): runs nested in invocations, the interval Fieller's on the invocation means with Welch's t, each side's spread split between and within invocations (--noise-threshold applies only while a side has one file). Invocations run alternately (A1 B1 A2 B2 ...) pair with --test paired: invocation k of each side, a paired t test on their means' log ratios.
    #[arg(long, value_name = "NEW.json", num_args = 1.., conflicts_with_all = ["between", "variants"])]
    pub vs: Vec<PathBuf>,
    /// Compare two values of one dimension BASE.json sweeps, inside it: DIM=A,B with DIM one of fs, share, mode, cache, variant (e.g. variant=off,on, share=private,shared, fs=ext4,ext4:noatime). Every other dimension is paired point by point and the runs by round (--test paired: a t test on the rounds' log ratios), so what moved the machine between rounds cancels.
    #[arg(long, value_name = "DIM=A,B", conflicts_with = "variants")]
    pub between: Option<String>,
    /// Compare two --variant runs of BASE.json: the same as --between variant=A,B.
    #[arg(long, value_name = "A,B")]
    pub variants: Option<String>,
    /// Compare only this workload's points (or a group's: mdtest, mdtest-dirs), as plot and export take it.
    #[arg(short = 'w', long, value_name = "WORKLOAD", value_parser = parse_workload_arg)]
    pub workload: Option<WorkloadArg>,
    /// Test on the runs' ops/s: welch (unequal variances), student (pooled, as ministat), mann-whitney (ranks, for non-normal data) or paired (the runs of round k of each side paired, or with --vs invocation k: a t test on the log ratios). Default: paired with --between and --variants, else welch.
    #[arg(long, value_parser = choice::<TestKind>())]
    pub test: Option<TestKind>,
    /// Confidence level in percent, for the interval and the verdict.
    #[arg(short = 'c', long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,
    /// Compare each run's ops per second of the workers' own CPU time (user and system) instead of its ops/s: on a machine other work shares, it moves far less with their load. Other work then does not make a point "too noisy"; drift and two modes still do.
    #[arg(long)]
    pub per_cpu: bool,
    /// Open loops (--rate) are judged by each run's response time at this quantile, smaller better: p50, p99 or p99.9 (each run's own quantile is one figure, so the test and interval are over runs).
    #[arg(long, value_name = "QUANTILE", default_value = "p99", value_parser = choice::<Quantile>())]
    pub response: Quantile,
    /// Call a significant change better or worse only when its whole confidence interval lies beyond ±PCT percent; otherwise it is "within noise". Two invocations of one system differ by more than their runs' spread shows (1-2% on a quiet VM); 0 leaves the verdict to the test alone, as ministat does. Default 2, except 0 where that spread is measured or cancels: --vs with two or more files a side, and --between/--variants other than fs (both sides ran in one invocation, round by round).
    #[arg(long, value_name = "PCT")]
    pub noise_threshold: Option<f64>,
    /// The history store whose earlier results of a point, on the host both files ran on, give the point's noise threshold: how much its invocations differ there (6 results or more; one file a side, no --noise-threshold). Default: the history's default store, where it exists; it is only read.
    #[arg(long, value_name = "PATH")]
    pub history_db: Option<PathBuf>,
    /// Do not take thresholds from the history: ±2% (or --noise-threshold) at every point.
    #[arg(long, conflicts_with = "history_db")]
    pub no_history: bool,
    /// Judge each point at the confidence level on its own, as ministat does; otherwise the false discovery rate over the comparison's points is held at 1 − confidence (Benjamini–Hochberg), so that comparing many points does not make chance differences into verdicts.
    #[arg(long)]
    pub no_fdr: bool,
    /// Paired comparisons (--between, --variants): keep ops/s at points where the machine was busy and the workers CPU-bound, instead of comparing their ops per CPU-second.
    #[arg(long)]
    pub no_auto_per_cpu: bool,
    /// With --vs: how many invocations a side a change of PCT percent (e.g. 5% or 5) needs to be found at the confidence level with 80% power, from the spread measured between them; each such point also says the smallest change its invocations could find.
    #[arg(long, value_name = "PCT", value_parser = parse_percent, requires = "vs")]
    pub detect: Option<f64>,
    /// Let a significant change be called better or worse even where a side's runs drift, fall into two groups or ran on a busy machine (the marks are still shown). With --test student --noise-threshold 0 the verdicts are ministat's.
    #[arg(long)]
    pub no_noise_veto: bool,
    /// Compare points whose workload the two sides defined differently (another tarball, other mdtest items, another lookup shape), which is refused otherwise: they measured different work.
    #[arg(long)]
    pub force: bool,
    /// Show a ministat-style dot plot of every point's runs (x = base, + = new).
    #[arg(long)]
    pub plot: bool,
    /// Exit with status 3 when any point is called worse (significant, beyond --noise-threshold) by more than PCT percent (for CI gates).
    #[arg(long, value_name = "PCT")]
    pub fail_if_worse: Option<f64>,
    /// Output format: text, markdown or json.
    #[arg(long, default_value = "text", value_parser = choice::<CompareFormat>())]
    pub format: CompareFormat,
    /// No colours (also when NO_COLOR is set, or output is not a terminal).
    #[arg(long)]
    pub no_color: bool,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Results files from `fsscale run`.
    #[arg(value_name = "RESULTS.json", required_unless_present = "csv")]
    pub results: Vec<PathBuf>,
    /// Fit a file of (N, throughput) pairs instead, e.g. from another benchmark: one pair per line, comma or space separated.
    #[arg(long, value_name = "FILE", conflicts_with = "results")]
    pub csv: Option<PathBuf>,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = choice::<AnalyzeFormat>())]
    pub format: AnalyzeFormat,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A results file from `fsscale run`.
    #[arg(value_name = "RESULTS.json")]
    pub results: PathBuf,
    /// ministat: one point's figure per run, a line each (needs --workload and -j); csv, markdown, json-lines: a row per point (per run with --runs), the options below filtering the points.
    #[arg(long, default_value = "ministat", value_parser = choice::<ExportFormatArg>())]
    pub format: ExportFormatArg,
    /// With --format csv|markdown|json-lines: a row per run instead of per point, with each worker's ops and (fixed work) completion time.
    #[arg(long)]
    pub runs: bool,
    /// The point's workload.
    #[arg(long, value_parser = parse_workload)]
    pub workload: Option<Workload>,
    /// The point's worker count.
    #[arg(long, short = 'j')]
    pub workers: Option<usize>,
    /// The point's mode, when the file has several.
    #[arg(long, value_parser = choice::<Mode>())]
    pub mode: Option<Mode>,
    /// The point's sharing level, when the file has several.
    #[arg(long, value_parser = choice::<Share>())]
    pub share: Option<Share>,
    /// The point's filesystem configuration (`--fs` label), when the file has several.
    #[arg(long)]
    pub fs: Option<String>,
    /// The point's cache state (warm or cold), when the file has both.
    #[arg(long, value_name = "warm|cold", value_parser = choice::<Cache>())]
    pub cache: Option<Cache>,
    /// The point's --variant, when the file has several.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// With --format ministat: which figure of each run (rate: the point's own; elapsed, user, sys, cpu, sync in seconds; runq, asleep as shares of the window; per-worker; ops-per-cpu-s).
    #[arg(long, default_value = "rate", value_parser = choice::<fsscale::results::RunFigure>())]
    pub figure: fsscale::results::RunFigure,
}

/// A shell completion script for `shell`, from the command definition.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "fsscale", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `fsscale help [TOPIC]`: the long help of the command or a subcommand, or the marks' meanings.
pub fn help(topic: Option<&str>) -> Result<String> {
    let mut command = <Cli as clap::CommandFactory>::command();
    match topic {
        Some("marks") => Ok(fsscale::report::marks::MARKS_HELP.to_string()),
        None => Ok(command.render_long_help().to_string()),
        Some(name) => {
            let known: Vec<String> = command
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| s.get_name().to_string())
                .chain(["marks".to_string()])
                .collect();
            match command.find_subcommand_mut(name).filter(|s| !s.is_hide_set()) {
                Some(sub) => {
                    let mut sub = sub.clone().bin_name(format!("fsscale {name}"));
                    Ok(sub.render_long_help().to_string())
                }
                None => anyhow::bail!("no help topic {name:?}; give one of {}", known.join(", ")),
            }
        }
    }
}

/// The man pages: `fsscale.1`, then `fsscale-SUB.1` for every visible subcommand.
pub fn manpages() -> Result<Vec<(String, Vec<u8>)>> {
    let command = <Cli as clap::CommandFactory>::command();
    let mut pages = Vec::new();
    let mut render = |name: String, cmd: clap::Command| -> Result<()> {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        pages.push((format!("{name}.1"), out));
        Ok(())
    };
    render("fsscale".into(), command.clone())?;
    for (name, sub) in reference::every_command(&command) {
        let page_name = format!("fsscale-{}", name.replace(' ', "-"));
        let mut page = sub.clone().display_name(page_name.clone()).bin_name(format!("fsscale {name}"));
        // What the tables' marks and columns mean, as `fsscale help marks` says it, closes run's page.
        if name == "run" {
            page = page.after_long_help(fsscale::report::marks::MARKS_HELP);
        }
        // The version heads the page; the subcommand itself takes no -V.
        render(page_name, page.version(env!("CARGO_PKG_VERSION")).disable_version_flag(true))?;
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn report_history_takes_the_filters_and_search_of_history_show() {
        let mut command = Cli::command();
        command.build();
        let longs = |path: &[&str], heading: &str| -> Vec<String> {
            let mut sub = &command;
            for name in path {
                sub = sub.find_subcommand(name).unwrap();
            }
            let mut longs: Vec<String> = sub
                .get_arguments()
                .filter(|a| a.get_help_heading().is_some_and(|h| h.to_lowercase().ends_with(heading)))
                .filter_map(|a| a.get_long().map(String::from))
                .collect();
            longs.sort();
            longs
        };
        for heading in ["which series", "step search"] {
            let report = longs(&["report"], heading);
            let show = longs(&["history", "show"], heading);
            assert!(report.len() >= 4, "{heading}: {report:?}");
            assert_eq!(report, show, "{heading}");
        }
        // Only with --history.
        let refused = Cli::try_parse_from(["fsscale", "report", "--share", "private"]).unwrap_err().to_string();
        assert!(refused.contains("--history"), "{refused}");
        let cli =
            Cli::try_parse_from(["fsscale", "report", "--history", "--share", "private", "--significance", "0.05"]);
        let Ok(Cli { command: Command::Report(args), .. }) = cli else { panic!("{cli:?}") };
        assert_eq!((args.series.share, args.search.significance), (Some(fsscale::vocab::Share::Private), 0.05));
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn completions_and_man_pages_name_every_subcommand_and_option() {
        let command = Cli::command();
        let pages = manpages().unwrap();
        let page = |name: &str| {
            let found = pages.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no page {name}"));
            String::from_utf8_lossy(&found.1).replace("\\-", "-")
        };
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            let script = completions(shell);
            // `run`'s workloads complete, groups too (clap's fish script completes no positional).
            #[cfg(target_os = "linux")]
            for name in ["creat-unlink", "mdtest-dir-stat", "mdtest-dirs"]
                .iter()
                .filter(|_| shell != clap_complete::Shell::Fish)
            {
                assert!(script.contains(name), "{shell}: {name}");
            }
            for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
                assert!(script.contains(sub.get_name()), "{shell}: {}", sub.get_name());
                for long in sub.get_arguments().filter_map(|a| a.get_long()) {
                    assert!(script.contains(long), "{shell}: {} --{long}", sub.get_name());
                }
            }
        }
        // A page for every command at every depth (`fsscale-history-changes.1`), and no other.
        let every = reference::every_command(&command);
        assert!(every.iter().any(|(name, _)| name == "history changes"), "nested commands are walked");
        assert_eq!(pages.len(), every.len() + 1, "one page each, and fsscale.1");
        for (name, sub) in &every {
            let file = format!("fsscale-{}.1", name.replace(' ', "-"));
            let text = page(&file);
            assert!(text.contains(&format!("fsscale {name}")), "{file} names its command");
            // A subcommand takes no -V, so its page does not offer it.
            assert!(!text.contains("--version"), "{file} lists -V");
            for long in sub.get_arguments().filter_map(|a| a.get_long()) {
                assert!(text.contains(&format!("--{long}")), "{file}: --{long}");
            }
        }
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            assert!(page("fsscale.1").contains(sub.get_name()), "fsscale.1 lists {}", sub.get_name());
        }
        // run's page ends with what every mark and column means, as `fsscale help marks` says it.
        #[cfg(target_os = "linux")]
        for mark in ["!drift", "!2 modes", "~outlier", "!impossible", "eff. concurrency"] {
            assert!(page("fsscale-run.1").contains(mark), "fsscale-run.1 explains {mark}");
        }
        assert!(
            Cli::command().find_subcommand("run").is_none_or(|r| r.get_after_long_help().is_none()),
            "not in --help"
        );
        // The enumerated options list their values for completion.
        assert!(completions(clap_complete::Shell::Fish).contains("process"), "--mode's values");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn builds_a_config_from_arguments() {
        let cli = Cli::try_parse_from([
            "fsscale",
            "run",
            "stat",
            "all",
            "-j",
            "1,3",
            "--mode",
            "process,thread",
            "--share",
            "same",
            "-n",
            "2",
            "--duration",
            "200ms",
            "-o",
            "x.json",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        let config = args.into_config(vec!["fsscale".into()], None).unwrap();
        assert_eq!(config.workloads.len(), Workload::ALL.len() - 1, "all = every built-in workload");
        assert!(!config.workloads.contains(&Workload::Command));
        assert_eq!(config.workloads[0], Workload::Stat);
        assert_eq!(config.workers, [1, 3]);
        assert_eq!(config.modes, [Mode::Process, Mode::Thread]);
        assert_eq!(config.shares, [Share::Same]);
        assert_eq!(config.sample_interval, std::time::Duration::from_millis(20));
        assert_eq!(config.output, PathBuf::from("x.json"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn usage_errors_fold_into_one_line() {
        let err = |args: &[&str]| {
            let error = Cli::try_parse_from(args).unwrap_err();
            assert!(error.use_stderr());
            one_line(&error.render().to_string())
        };
        assert_eq!(
            err(&["fsscale", "run", "--mode", "fork"]),
            "error: invalid value 'fork' for '--mode <MODE>' [possible values: process, thread]; see --help"
        );
        assert_eq!(
            err(&["fsscale", "run", "stat", "--metric", "x"]),
            "error: the following required arguments were not provided: --cmd <CMD>; see --help"
        );
        assert_eq!(
            err(&["fsscale", "run", "command", "--cmd", "true", "--metric-name", "tps"]),
            "error: the following required arguments were not provided: <--driver|--metric <REGEX>|--metric-json <PATH>>; see --help"
        );
    }

    #[test]
    fn unknown_workload_names_the_choices() {
        let err = Cli::try_parse_from(["fsscale", "run", "stats"]).unwrap_err().to_string();
        assert!(err.contains("unknown workload \"stats\"; choose from stat, stat-deep,"), "{err}");
        let err = Cli::try_parse_from(["fsscale", "run", "stat,untar"]).unwrap_err().to_string();
        assert!(err.contains("give workloads as separate words, e.g. `fsscale run stat untar`"), "{err}");
    }
}
