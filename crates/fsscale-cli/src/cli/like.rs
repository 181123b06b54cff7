//! `fsscale run --like A.json` and `fsscale run --resume A.json`: the plan a
//! results file records, run again (another kernel, after a reboot) or
//! finished. A results file may come from anyone, so its command line is
//! data: it is read with the CLI's own definition of `run` (see
//! [`recorded`]), and only what describes the measurement
//! is taken from it. The commands and places it records are never run or
//! used unless the user gives them again or accepts them with
//! `--trust-recorded`; the output, label and note are always this run's own;
//! what the plan read from outside (`--tarball`, `--tree`) must have the
//! content it had.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Parser;

use super::recorded::{self, Given};
use super::{Cli, Command, RunArgs};
use fsscale::escape::shell_word;
use fsscale::results::{ResultsFile, Status};

/// Which of the two reads of a recorded plan.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Use {
    /// `--like`: the plan again, into a file of this run's own.
    Like,
    /// `--resume`: the rest of the plan, into the file itself.
    Resume,
}

impl Use {
    fn flag(self) -> &'static str {
        match self {
            Use::Like => "--like",
            Use::Resume => "--resume",
        }
    }
}

/// The run a recorded plan stands for.
pub struct Expanded {
    pub args: RunArgs,
    /// The command line this run records (what a later `--like` reads).
    pub argv: Vec<String>,
    /// The plan, in lines for the terminal (already escaped), printed before anything runs.
    pub plan: Vec<String>,
    /// `--resume`: the document to continue.
    pub resumed: Option<ResultsFile>,
}

/// What an option of a recorded command line is to this run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Describes the measurement: taken.
    Measurement,
    /// This invocation's own (output, label, note, how it prints): never taken.
    Own,
    /// A command it would run, or a place it would write or format: taken
    /// only when given again or accepted with `--trust-recorded`.
    Trusted,
    /// `--like` or `--resume` inside a recorded plan: refused.
    Nested,
}

fn kind(given: &Given) -> Kind {
    match given.id.as_str() {
        "output" | "label" | "note" | "rev" | "history" | "history_db" | "quiet" | "format" | "force"
        | "trust_recorded" | "help" => Kind::Own,
        "like" | "resume" => Kind::Nested,
        "variant"
        | "variant_teardown"
        | "cmd"
        | "setup"
        | "cleanup"
        | "prepare"
        | "extract_cmd"
        | "dir"
        | "backing"
        | "mkfs_opts"
        | "destroy_device_data" => Kind::Trusted,
        // Filesystem kinds describe the measurement; their mount options are the user's to accept.
        "fs" if given.value.as_deref().is_some_and(|v| v.contains(':')) => Kind::Trusted,
        _ => Kind::Measurement,
    }
}

/// `run --like FILE` or `run --resume FILE`: the run FILE's plan stands for.
/// `argv` is this command line, which may add only this run's own options
/// and the commands and places it gives again.
pub fn expand(file: &Path, argv: &[String], used: Use) -> Result<Expanded> {
    let context = || format!("{} {}", used.flag(), shell_word(&file.display().to_string()));
    let at = argv.iter().position(|a| a == "run").map_or(argv.len(), |i| i + 1);
    let mine = recorded::options(&argv[at..]).with_context(context)?;
    let trust = mine.iter().any(|g| g.id == "trust_recorded");
    for g in &mine {
        let allowed = match (kind(g), used) {
            (Kind::Trusted, _) | (Kind::Nested, _) => true,
            (Kind::Own, Use::Like) => true,
            (Kind::Own, Use::Resume) => !matches!(g.id.as_str(), "output" | "label" | "note" | "rev"),
            (Kind::Measurement, _) => false,
        };
        if !allowed {
            bail!(
                "{}: {} would change the plan it records; besides it, give only -o, --label, --note, --rev, \
                 --history, --history-db, -q, --format, --force, --trust-recorded, or the commands and places it records (run without {} to \
                 change the plan)",
                context(),
                g.shown(),
                used.flag()
            );
        }
    }
    let doc = ResultsFile::load(file).with_context(context)?;
    if used == Use::Resume {
        check_resumable(&doc).with_context(context)?;
    }
    let Some(run) = doc.command_line.iter().position(|a| a == "run") else {
        bail!("{}: its command line is not a `fsscale run`", context());
    };
    let theirs = recorded::options(&doc.command_line[run + 1..])
        .map_err(|e| anyhow::anyhow!("its recorded command line does not parse: {e}"))
        .with_context(context)?;
    let program = argv.first().map_or("fsscale", String::as_str);
    same_meaning(program, &doc.command_line[run + 1..], &theirs).with_context(context)?;
    let mut taken = Vec::new();
    let (mut untrusted, mut replaced, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
    for g in &theirs {
        match kind(g) {
            Kind::Nested => bail!("{}: it records a nested {}, which is refused", context(), g.shown()),
            Kind::Own => dropped.push(g.shown()),
            Kind::Measurement => taken.push(g.clone()),
            Kind::Trusted if mine.iter().any(|m| m.id == g.id) => replaced.push(g.shown()),
            Kind::Trusted if trust => taken.push(g.clone()),
            Kind::Trusted => untrusted.push(g.shown()),
        }
    }
    if !untrusted.is_empty() {
        bail!(
            "{}: it records commands or places that are never taken from a file unless given again or accepted \
             with --trust-recorded: {}",
            context(),
            untrusted.join(", ")
        );
    }
    let seed = doc.settings.order_seed.filter(|_| !taken.iter().any(|g| g.id == "order_seed"));
    taken.extend(seed.map(|s| Given {
        id: "order_seed".into(),
        long: Some("order-seed".into()),
        value: Some(s.to_string()),
    }));
    let given_again: Vec<Given> = mine.iter().filter(|g| kind(g) == Kind::Trusted).cloned().collect();
    let own: Vec<Given> = mine.iter().filter(|g| kind(g) == Kind::Own).cloned().collect();
    let mut all: Vec<Given> = taken.iter().chain(&given_again).chain(&own).cloned().collect();
    if used == Use::Resume {
        let output = file.to_str().context("--resume: name the file with a UTF-8 path")?;
        all.push(Given { id: "output".into(), long: Some("output".into()), value: Some(output.to_string()) });
    }
    let new_argv = recorded::canonical(program, &all);
    let args = parse_run(&new_argv).with_context(context)?;
    check_inputs(&doc, &args).with_context(context)?;
    if used == Use::Like {
        if let Some(output) = &args.output.output {
            refuse_same_file(file, output)?;
        }
    }
    let plan = describe_plan(file, used, &doc, &taken, &given_again, (&replaced, &dropped), &new_argv);
    let resumed = (used == Use::Resume).then_some(doc);
    Ok(Expanded { args, argv: new_argv, plan, resumed })
}

/// The recorded words and their canonical form parse to the same arguments:
/// what is taken from the file is what clap read in it.
fn same_meaning(program: &str, recorded: &[String], given: &[Given]) -> Result<()> {
    let original: Vec<String> =
        [program, "run"].iter().map(|s| s.to_string()).chain(recorded.iter().cloned()).collect();
    let original = parse_run(&original)?;
    let canonical = parse_run(&recorded::canonical(program, given))?;
    if format!("{original:?}") != format!("{canonical:?}") {
        bail!("its recorded command line reads two ways; refused");
    }
    Ok(())
}

fn parse_run(argv: &[String]) -> Result<RunArgs> {
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        anyhow::anyhow!("its recorded arguments do not parse: {}", super::one_line(&e.render().to_string()))
    })?;
    match cli.command {
        Command::Run(args) => Ok(*args),
        _ => bail!("its command line is not a `fsscale run`"),
    }
}

/// A file to resume is one whose run ended before its plan did.
fn check_resumable(doc: &ResultsFile) -> Result<()> {
    match doc.status {
        Status::Complete => bail!("its run finished every point: there is nothing to resume"),
        Status::Interrupted | Status::Failed | Status::Running => Ok(()),
    }
}

/// `-o` is not the file the plan came from (the same inode, however named).
fn refuse_same_file(like: &Path, output: &Path) -> Result<()> {
    let (Ok(a), Ok(b)) = (std::fs::metadata(like), std::fs::metadata(output)) else { return Ok(()) };
    if (a.dev(), a.ino()) == (b.dev(), b.ino()) {
        bail!("-o {}: it is the --like file itself, which this run would replace; give another -o", output.display());
    }
    Ok(())
}

/// What the plan reads from outside has the content it had when recorded.
/// Keyed on the command line, not on the settings, so that a file whose
/// settings were edited cannot skip the check.
fn check_inputs(doc: &ResultsFile, args: &RunArgs) -> Result<()> {
    if let Some(tarball) = &args.macros.tarball {
        let recorded = doc.settings.untar.as_ref().and_then(|u| u.sha256.as_deref());
        check_file_hash("--tarball", "tarball", tarball, recorded)?;
    }
    if let Some(tree) = &args.macros.tree {
        let walked = doc.settings.walked_tree.as_ref();
        let Some((recorded, entries)) = walked.and_then(|t| Some((t.digest.as_deref()?, t.entries))) else {
            bail!(
                "it records --tree {} without the tree's digest (a file of an older fsscale, or edited): the tree \
                 cannot be checked; run A again with this fsscale",
                shell_word(&tree.display().to_string())
            );
        };
        let dir = fsscale::sys::open_dir_input(tree).with_context(|| format!("--tree {}", tree.display()))?;
        // Walked no further than the entries it held then: a file that
        // names `/` costs no walk of the whole system.
        let now = fsscale::archive::tally_with_digest_within(std::os::fd::AsFd::as_fd(&dir), entries)
            .with_context(|| format!("--tree {}", tree.display()))?;
        let Some((_, now)) = now else {
            bail!(
                "--tree {} holds more than the {entries} entries it held when it was recorded: the walk would not be the same",
                shell_word(&tree.display().to_string())
            );
        };
        if now != recorded {
            bail!(
                "--tree {} holds other entries now than when it was recorded (digest {} → {}): the walk would not \
                 be the same",
                shell_word(&tree.display().to_string()),
                recorded.get(..12).unwrap_or(recorded),
                &now[..12]
            );
        }
    }
    if let Some(trace) = &args.macros.trace {
        // Hashed, never parsed, before it matches: a parse error would
        // quote what a file the sender chose holds.
        let recorded = doc.settings.replay.as_ref().and_then(|r| r.sha256.as_deref());
        check_file_hash("--trace", "loadfile", trace, recorded)?;
    }
    Ok(())
}

/// The file an `option` names (a `what`) has the sha256 recorded for it;
/// without one recorded it is refused, not read.
fn check_file_hash(option: &str, what: &str, path: &Path, recorded: Option<&str>) -> Result<()> {
    let shown = shell_word(&path.display().to_string());
    let Some(recorded) = recorded else {
        bail!(
            "it records {option} {shown} without the {what}'s content hash (a file of an older fsscale, or \
             edited): the {what} cannot be checked, and is not read; run A again with this fsscale"
        );
    };
    let now = fsscale::archive::file_sha256(path).with_context(|| format!("{option} {}", path.display()))?;
    if now != recorded {
        bail!(
            "{option} {shown} has sha256 {} now, {} when it was recorded: it is not the same {what}, so the run \
             would not be the same",
            &now[..12],
            recorded.get(..12).unwrap_or(recorded)
        );
    }
    Ok(())
}

/// The plan as the terminal shows it before anything runs: what the file
/// records, what of it this run takes, and every command, place, input and
/// limit by name.
fn describe_plan(
    file: &Path,
    used: Use,
    doc: &ResultsFile,
    taken: &[Given],
    given_again: &[Given],
    (replaced, dropped): (&[String], &[String]),
    argv: &[String],
) -> Vec<String> {
    let file = shell_word(&file.display().to_string());
    let mut lines = Vec::new();
    let runs: usize = doc.points.iter().map(|p| p.runs.len()).sum();
    let warmups: usize = doc.points.iter().map(|p| p.warmup_runs.len()).sum();
    lines.push(match used {
        Use::Like => format!("--like {file}: running the plan it records, read as data:"),
        Use::Resume => {
            format!("--resume {file}: continuing its plan ({runs} runs and {warmups} warm-up runs kept), read as data:")
        }
    });
    let named = |ids: &[&str]| -> Vec<String> {
        taken.iter().chain(given_again).filter(|g| ids.contains(&g.id.as_str())).map(Given::shown).collect()
    };
    let sections = [
        ("commands", named(&["variant", "variant_teardown", "cmd", "setup", "cleanup", "prepare", "extract_cmd"])),
        ("places", named(&["dir", "fs", "backing", "mkfs_opts", "destroy_device_data"])),
        ("inputs", named(&["tarball", "tree", "trace"])),
        ("memory", named(&["memory_limit"])),
    ];
    for (what, list) in sections {
        if !list.is_empty() {
            lines.push(format!("  {what}: {}", list.join(", ")));
        }
    }
    if !replaced.is_empty() {
        lines.push(format!("  given here in place of the file's: {}", replaced.join(", ")));
    }
    if !dropped.is_empty() {
        lines.push(format!("  not taken (this run's own): {}", dropped.join(", ")));
    }
    let shown: Vec<String> = argv.iter().map(|a| shell_word(a)).collect();
    lines.push(format!("  runs: {}", shown.join(" ")));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(line: &str) -> Vec<Given> {
        recorded::options(&line.split(' ').map(String::from).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn commands_and_places_are_trusted_only_and_the_output_is_never_taken() {
        let kinds: Vec<(String, Kind)> = given(
            "stat -qo /x --variant a=x --dir /d --fs ext4 --fs ext4:data=journal --backing ram --mkfs-opts -b \
             --destroy-device-data --label l --note n --like a.json -j 2",
        )
        .into_iter()
        .map(|g| (g.shown(), kind(&g)))
        .collect();
        let of = |shown: &str| kinds.iter().find(|(s, _)| s == shown).map(|(_, k)| *k).unwrap();
        assert_eq!(of("stat"), Kind::Measurement);
        assert_eq!(of("--quiet"), Kind::Own);
        assert_eq!(of("--output /x"), Kind::Own);
        assert_eq!(of("--variant a=x"), Kind::Trusted);
        assert_eq!(of("--dir /d"), Kind::Trusted);
        assert_eq!(of("--fs ext4"), Kind::Measurement);
        assert_eq!(of("--fs ext4:data=journal"), Kind::Trusted);
        assert_eq!(of("--backing ram"), Kind::Trusted);
        assert_eq!(of("--mkfs-opts -b"), Kind::Trusted);
        assert_eq!(of("--destroy-device-data"), Kind::Trusted);
        assert_eq!(of("--label l"), Kind::Own);
        assert_eq!(of("--note n"), Kind::Own);
        assert_eq!(of("--like a.json"), Kind::Nested);
        assert_eq!(of("--workers 2"), Kind::Measurement);
    }
}
