//! `fsscale run --like A.json [-o B.json]`: the plan a results file records,
//! run again exactly (its arguments, its order's seed), so that the other
//! side of an A/B (another kernel, after a reboot) is one command. What the
//! plan read from outside (a `--tarball`, a `--tree`) must be as it was:
//! the arguments alone would otherwise measure other work under the same name.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;

use super::{Cli, Command, RunArgs};
use fsscale::results::ResultsFile;

/// The arguments `--like` stands for: the recorded command line without its
/// output, `--order-seed` where the order was shuffled, and `output` (if given).
fn recorded_argv(
    recorded: &[String],
    order_seed: Option<u64>,
    program: &str,
    output: Option<&Path>,
) -> Result<Vec<String>> {
    let Some(at) = recorded.iter().position(|a| a == "run") else {
        bail!("its command line ({}) is not a `fsscale run`", recorded.join(" "));
    };
    let mut argv = vec![program.to_string(), "run".to_string()];
    let mut rest = recorded[at + 1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            // The output is this run's own; the recorded one is skipped with its value.
            "-o" | "--output" => {
                rest.next();
            }
            a if a.starts_with("--output=") || (a.starts_with("-o") && a.len() > 2) => {}
            _ => argv.push(arg.clone()),
        }
    }
    if let Some(seed) = order_seed.filter(|_| !argv.iter().any(|a| a.starts_with("--order-seed"))) {
        argv.extend(["--order-seed".to_string(), seed.to_string()]);
    }
    if let Some(output) = output {
        argv.extend(["-o".to_string(), output.display().to_string()]);
    }
    Ok(argv)
}

/// What the recorded run read from outside is still what it was.
fn check_inputs(doc: &ResultsFile) -> Result<()> {
    if let Some(untar) = doc.settings.untar.as_ref().filter(|u| u.scale.is_none()) {
        let mut file = std::fs::File::open(&untar.tarball).with_context(|| format!("--tarball {}", untar.tarball))?;
        let now = fsscale::archive::scan(&mut file).with_context(|| format!("--tarball {}", untar.tarball))?.contents;
        if (now.entries(), now.bytes) != (untar.entries, untar.bytes) {
            bail!(
                "--tarball {} holds {} entries and {} bytes now, {} and {} when it was recorded: it is not the same \
                 tarball, so the run would not be the same",
                untar.tarball,
                now.entries(),
                now.bytes,
                untar.entries,
                untar.bytes
            );
        }
    }
    if let Some(tree) = &doc.settings.walked_tree {
        let dir = std::fs::File::open(&tree.path).with_context(|| format!("--tree {}", tree.path))?;
        let now = fsscale::archive::tally(std::os::fd::AsRawFd::as_raw_fd(&dir))
            .with_context(|| format!("--tree {}", tree.path))?;
        if (now.entries(), now.bytes) != (tree.entries, tree.bytes) {
            bail!(
                "--tree {} holds {} entries and {} bytes now, {} and {} when it was recorded: the walk would not be \
                 the same",
                tree.path,
                now.entries(),
                now.bytes,
                tree.entries,
                tree.bytes
            );
        }
    }
    Ok(())
}

/// `run --like FILE`: the run's arguments as FILE records them. `argv` is
/// this command line, which may name only `--like` and `-o`.
pub fn expand(like: &Path, argv: &[String]) -> Result<(RunArgs, Vec<String>)> {
    let context = || format!("--like {}", like.display());
    let mut output: Option<PathBuf> = None;
    let mut given = argv.iter().skip_while(|a| *a != "run").skip(1);
    while let Some(arg) = given.next() {
        match arg.as_str() {
            "--like" => {
                given.next();
            }
            "-o" | "--output" => output = given.next().map(PathBuf::from),
            a if a.starts_with("--like=") => {}
            a if a.starts_with("--output=") => output = Some(PathBuf::from(&a["--output=".len()..])),
            other => bail!(
                "--like {} runs exactly the plan it records, so it takes only -o besides; {other} would change it \
                 (run without --like to change the plan)",
                like.display()
            ),
        }
    }
    let doc = ResultsFile::load(like).with_context(context)?;
    let program = argv.first().map_or("fsscale", String::as_str);
    let argv =
        recorded_argv(&doc.command_line, doc.settings.order_seed, program, output.as_deref()).with_context(context)?;
    check_inputs(&doc).with_context(context)?;
    let cli = Cli::try_parse_from(&argv)
        .map_err(|e| {
            anyhow::anyhow!("its recorded arguments no longer parse: {}", super::one_line(&e.render().to_string()))
        })
        .with_context(context)?;
    match cli.command {
        Command::Run(args) => Ok((*args, argv)),
        _ => bail!("{}: its command line is not a `fsscale run`", like.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_arguments_lose_their_output_and_gain_the_order_seed() {
        let recorded =
            ["/usr/bin/fsscale", "run", "stat", "-j", "1,2", "-o", "a.json", "--order", "shuffled"].map(String::from);
        let argv = recorded_argv(&recorded, Some(42), "fsscale", Some(Path::new("b.json"))).unwrap();
        assert_eq!(
            argv,
            ["fsscale", "run", "stat", "-j", "1,2", "--order", "shuffled", "--order-seed", "42", "-o", "b.json"]
        );
        let recorded = ["fsscale", "run", "--output=a.json", "-oa.json", "stat"].map(String::from);
        assert_eq!(recorded_argv(&recorded, None, "fsscale", None).unwrap(), ["fsscale", "run", "stat"]);
        assert!(recorded_argv(&["fsscale".into(), "compare".into()], None, "fsscale", None).is_err());
    }
}
