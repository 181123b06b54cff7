//! The `fsscale` binary: parse, build a plain config, run, render.

// The doc comments of clap's arguments are `--help` text, written for a
// terminal (`<timestamp>`, `s<D-1>`), not HTML.
#![allow(rustdoc::invalid_html_tags)]

// The standard `eprintln!`/`eprint!` panic when stderr is closed (`2>&1 |
// true`): a warning would then kill a run and leave its results "running".
// These shadow them in every module of the binary and drop what cannot be written.
// They also pass what they write through `escape::for_output`: no string
// from a received file or an argument can drive the terminal.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", fsscale::escape::for_output(&text));
    }};
}
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = write!(std::io::stderr(), "{}", fsscale::escape::for_output(&text));
    }};
}

mod cli;
mod commands;
mod history_command;
#[cfg(target_os = "linux")]
mod measure;
mod terminal;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Arguments are bytes: a path need not be UTF-8 (clap takes them as
    // such). Only a run, which records its command line as text, refuses one.
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv: Vec<String> = raw.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let not_utf8 = raw.iter().position(|a| a.to_str().is_none());
    let cli = cli::parse();
    if let cli::Command::Ministat { args } = &cli.command {
        return ministat(args);
    }
    let outcome = match (not_utf8, &cli.command) {
        #[cfg(target_os = "linux")]
        (Some(at), cli::Command::Run(_)) => Err(anyhow::anyhow!(
            "argument {at} ({}) is not valid UTF-8, and a run records its command line as text; give that path another name, or a link to it with a UTF-8 name",
            fsscale::escape::for_terminal(&argv[at])
        )),
        _ => run(cli.command, argv),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            #[cfg(target_os = "linux")]
            if let Some(measure::QuietFailure(code)) = error.downcast_ref::<measure::QuietFailure>() {
                return ExitCode::from(*code);
            }
            if let Some(GateVerdictExit(code)) = error.downcast_ref::<GateVerdictExit>() {
                return ExitCode::from(*code);
            }
            if let Some(GateFailed(why)) = error.downcast_ref::<GateFailed>() {
                eprintln!("fsscale: error: {why}; the bisection stops (exit {})", cli::GATE_ERROR);
                return ExitCode::from(cli::GATE_ERROR as u8);
            }
            if let Some(regressed) = error.downcast_ref::<commands::Regressed>() {
                eprintln!("fsscale: {regressed}");
                return ExitCode::from(3);
            }
            eprintln!("fsscale: error: {error:#}");
            #[cfg(target_os = "linux")]
            if let Some(interrupted) = error.downcast_ref::<fsscale::runner::Interrupted>() {
                return ExitCode::from(interrupted.exit_code() as u8);
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
fn run(command: cli::Command, argv: Vec<String>) -> anyhow::Result<()> {
    match command {
        #[cfg(target_os = "linux")]
        cli::Command::List => print(&fsscale::workloads::render_catalogue()),
        #[cfg(target_os = "linux")]
        cli::Command::ScratchWarden => fsscale::scratch::warden::serve(),
        cli::Command::Completions { shell } => print(&cli::completions(shell)),
        cli::Command::Help { topic } => print(&cli::help(topic.as_deref())?),
        cli::Command::Manpage { markdown: true, .. } => print(&cli::reference::markdown()),
        cli::Command::Manpage { dir: None, .. } => {
            let pages = cli::manpages()?;
            print(&String::from_utf8_lossy(&pages[0].1))
        }
        cli::Command::Manpage { dir: Some(dir), .. } => {
            for (name, page) in cli::manpages()? {
                fsscale::atomic_file::write(&dir.join(&name), &page)?;
                eprintln!("wrote {}", dir.join(name).display());
            }
            Ok(())
        }
        cli::Command::Ministat { .. } => unreachable!("handled in main"),
        cli::Command::Compare(args) => {
            let (text, regressed, warnings) = commands::compare_command(&args)?;
            print_escaped(&text)?;
            for warning in warnings {
                eprintln!("fsscale: warning: {warning}");
            }
            regressed.map_or(Ok(()), |r| Err(r.into()))
        }
        cli::Command::History(args) => match &args.command {
            cli::HistoryCommand::Add(add) => print(&history_command::add_command(add)?),
            cli::HistoryCommand::Show(query) => print(&history_command::show_command(query)?),
            cli::HistoryCommand::Changes(changes) => {
                let (text, alert) = history_command::changes_command(changes)?;
                print(&text)?;
                alert.map_or(Ok(()), |a| Err(a.into()))
            }
        },
        cli::Command::Gate(args) => {
            let (verdict, text) = history_command::gate_command(&args).map_err(|e| GateFailed(format!("{e:#}")))?;
            eprint!("{text}");
            match verdict.exit_code() {
                0 => Ok(()),
                code => Err(GateVerdictExit(code).into()),
            }
        }
        cli::Command::Analyze(args) => print(&commands::analyze_command(&args)?),
        cli::Command::Export(args) => print(&commands::export_command(&args)?),
        #[cfg(target_os = "linux")]
        cli::Command::Tree(args) => print(&commands::tree_command(&args)?),
        cli::Command::Report(args) => print(&commands::report_command(&args)?),
        cli::Command::Plot(args) => print(&commands::plot_command(&args)?),
        #[cfg(target_os = "linux")]
        cli::Command::Cleanup(args) => {
            let (text, refused) = commands::cleanup_command(&args)?;
            print(&text)?;
            match refused {
                0 => Ok(()),
                n => {
                    Err(anyhow::anyhow!("{n} leftover(s) refused (listed above); they are not provably fsscale's own"))
                }
            }
        }
        #[cfg(target_os = "linux")]
        cli::Command::Run(args) => measure::run_command(*args, argv),
    }
}

/// `fsscale gate`'s verdict, as its exit status (0 included: it is not an error).
#[derive(Debug, thiserror::Error)]
#[error("gate verdict {0}")]
struct GateVerdictExit(u8);

/// `fsscale gate` could not judge: `git bisect run` must stop, not call the revision bad.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct GateFailed(String);

/// `fsscale ministat`: a drop-in, so its failures print exactly ministat's
/// text and exit codes rather than fsscale's error line.
fn ministat(args: &[String]) -> ExitCode {
    let outcome = match fsscale::ministat::parse_args(args) {
        Ok(fsscale::ministat::Request::Help) => Ok(fsscale::ministat::HELP.to_string()),
        Ok(fsscale::ministat::Request::Run(options)) => {
            fsscale::ministat::run(&options, terminal::ministat_default_width(), &mut std::io::stdin().lock())
        }
        Err(failure) => Err(failure),
    };
    match outcome {
        Ok(text) => match print(&text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fsscale: error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Err(failure) => {
            eprint!("{}", failure.stderr);
            ExitCode::from(failure.code as u8)
        }
    }
}

/// Writes to stdout (see `escape::for_output`); a closed pipe (`fsscale
/// list | head`) is not an error.
fn print(text: &str) -> anyhow::Result<()> {
    print_escaped(&fsscale::escape::for_output(text))
}

/// [`print()`] for text already passed through `escape::for_output` (and
/// then given fsscale's own colours).
fn print_escaped(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
