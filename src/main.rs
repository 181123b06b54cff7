//! The `fsscale` binary: parse, build a plain config, run, render.

mod cli;
mod commands;
mod terminal;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use fsscale::report::{render_catalogue, render_results_with};
use fsscale::results::ResultsFile;
use fsscale::runner::{self, Interrupted};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = cli::Cli::parse();
    if let cli::Command::Ministat { args } = &cli.command {
        return ministat(args);
    }
    match run(cli.command, argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if let Some(regressed) = error.downcast_ref::<commands::Regressed>() {
                eprintln!("fsscale: {regressed}");
                return ExitCode::from(3);
            }
            eprintln!("fsscale: error: {error:#}");
            match error.downcast_ref::<Interrupted>() {
                Some(interrupted) => ExitCode::from(interrupted.exit_code() as u8),
                None => ExitCode::FAILURE,
            }
        }
    }
}

fn run(command: cli::Command, argv: Vec<String>) -> anyhow::Result<()> {
    match command {
        cli::Command::List => print(&render_catalogue()),
        cli::Command::Ministat { .. } => unreachable!("handled in main"),
        cli::Command::Compare(args) => {
            let (text, regressed, warnings) = commands::compare_command(&args)?;
            print(&text)?;
            for warning in warnings {
                eprintln!("fsscale: warning: {warning}");
            }
            regressed.map_or(Ok(()), |r| Err(r.into()))
        }
        cli::Command::Analyze(args) => print(&commands::analyze_command(&args)?),
        cli::Command::Export(args) => print(&commands::export_command(&args)?),
        cli::Command::Tree(args) => print(&commands::tree_command(&args)?),
        cli::Command::Report(args) => print(&commands::report_command(&args)?),
        cli::Command::Plot(args) => print(&commands::plot_command(&args)?),
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
        cli::Command::Run(args) => {
            let named_output = args.output.is_some();
            let explain_all = args.explain_all;
            let config = (*args).into_config(argv)?;
            let mut progress = terminal::TerminalProgress::new();
            let outcome = runner::run(&config, &mut progress);
            progress.clear();
            match outcome {
                Ok(doc) => {
                    print(&render_results_with(&doc, explain_all))?;
                    eprintln!("results: {}", config.output.display());
                    Ok(())
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
                            print(&render_results_with(&doc, explain_all))?;
                            eprintln!("results so far: {}", config.output.display());
                        }
                    }
                    Err(error)
                }
            }
        }
    }
}

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

/// Writes to stdout; a closed pipe (`fsscale list | head`) is not an error.
fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
