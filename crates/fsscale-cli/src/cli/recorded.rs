//! A `fsscale run` command line read as data: each option it gives, named by
//! clap's own definition of `run` (its long and short names, whether it
//! takes a value), so that `-qo FILE`, `--output=FILE` and `-oFILE` are all
//! the output, as clap reads them. [`canonical`] writes the options back as
//! `--long=value`, a form no value can be mistaken in; the caller checks that
//! clap parses it to the same arguments as the original.

use anyhow::{bail, Result};
use clap::CommandFactory;

use super::Cli;

/// One option (or workload) a command line gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Given {
    /// clap's id of the argument: the field's name (`variant_teardown`).
    pub id: String,
    /// Its long name (`variant-teardown`); `None` for a workload (positional).
    pub long: Option<String>,
    /// Its value; `None` for a flag.
    pub value: Option<String>,
}

impl Given {
    /// How it is written on a command line: `--long=value`, `--flag` or the workload.
    pub fn words(&self) -> String {
        match (&self.long, &self.value) {
            (None, Some(value)) => value.clone(),
            (Some(long), Some(value)) => format!("--{long}={value}"),
            (Some(long), None) => format!("--{long}"),
            (None, None) => String::new(),
        }
    }

    /// As the user would type it, quoted for a terminal: `--variant 'a=touch X'`.
    pub fn shown(&self) -> String {
        let word = fsscale::escape::shell_word;
        match (&self.long, &self.value) {
            (None, Some(value)) => word(value),
            (Some(long), Some(value)) => format!("--{long} {}", word(value)),
            (Some(long), None) => format!("--{long}"),
            (None, None) => String::new(),
        }
    }
}

/// What one of `run`'s arguments is, as clap defines it.
struct Spec {
    id: String,
    long: Option<String>,
    short: Option<char>,
    aliases: Vec<String>,
    takes_value: bool,
    positional: bool,
}

fn specs() -> Vec<Spec> {
    let command = Cli::command();
    let run = command.find_subcommand("run").expect("fsscale has a run subcommand");
    run.get_arguments()
        .map(|a| Spec {
            id: a.get_id().as_str().to_string(),
            long: a.get_long().map(str::to_string),
            short: a.get_short(),
            aliases: a.get_all_aliases().unwrap_or_default().into_iter().map(str::to_string).collect(),
            takes_value: a.get_action().takes_values(),
            positional: a.is_positional(),
        })
        .chain(std::iter::once(Spec {
            id: "help".into(),
            long: Some("help".into()),
            short: Some('h'),
            aliases: Vec::new(),
            takes_value: false,
            positional: false,
        }))
        .collect()
}

/// The options and workloads `args` (what follows `run`) gives, in order.
pub fn options(args: &[String]) -> Result<Vec<Given>> {
    let specs = specs();
    let positional = specs.iter().find(|s| s.positional).expect("run takes workloads");
    let by_long =
        |name: &str| specs.iter().find(|s| s.long.as_deref() == Some(name) || s.aliases.iter().any(|a| a == name));
    let by_short = |c: char| specs.iter().find(|s| s.short == Some(c));
    let mut given = Vec::new();
    let mut rest = args.iter();
    let mut only_positionals = false;
    while let Some(arg) = rest.next() {
        let workload = || Given { id: positional.id.clone(), long: None, value: Some(arg.clone()) };
        if only_positionals || arg == "-" || !arg.starts_with('-') {
            given.push(workload());
        } else if arg == "--" {
            only_positionals = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            let Some(spec) = by_long(name) else { bail!("--{name} is not an option of fsscale run") };
            let value = match (spec.takes_value, inline) {
                (true, Some(value)) => Some(value),
                (true, None) => match rest.next() {
                    Some(value) => Some(value.clone()),
                    None => bail!("--{name} lacks its value"),
                },
                (false, None) => None,
                (false, Some(_)) => bail!("--{name} takes no value"),
            };
            given.push(Given { id: spec.id.clone(), long: spec.long.clone(), value });
        } else {
            // A cluster of short options: flags, then at most one that takes
            // the rest of the word (or the next word) as its value.
            for (at, c) in arg[1..].char_indices() {
                let Some(spec) = by_short(c) else { bail!("-{c} is not an option of fsscale run") };
                let long = spec.long.clone();
                if !spec.takes_value {
                    given.push(Given { id: spec.id.clone(), long, value: None });
                    continue;
                }
                let attached = &arg[1 + at + c.len_utf8()..];
                let value = match attached.strip_prefix('=').unwrap_or(attached) {
                    "" => match rest.next() {
                        Some(value) => value.clone(),
                        None => bail!("-{c} lacks its value"),
                    },
                    value => value.to_string(),
                };
                given.push(Given { id: spec.id.clone(), long, value: Some(value) });
                break;
            }
        }
    }
    Ok(given)
}

/// `given` written back as a command line after `program run`: workloads
/// first, then every option as `--long=value`.
pub fn canonical(program: &str, given: &[Given]) -> Vec<String> {
    let (workloads, options): (Vec<&Given>, Vec<&Given>) = given.iter().partition(|g| g.long.is_none());
    let mut argv = vec![program.to_string(), "run".to_string()];
    argv.extend(workloads.iter().chain(&options).map(|g| g.words()));
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Vec<(String, Option<String>)> {
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        options(&args).unwrap().into_iter().map(|g| (g.id, g.value)).collect()
    }

    fn pair(id: &str, value: Option<&str>) -> (String, Option<String>) {
        (id.to_string(), value.map(String::from))
    }

    #[test]
    fn every_spelling_of_an_option_is_that_option() {
        assert_eq!(read("-qo /etc/x"), [pair("quiet", None), pair("output", Some("/etc/x"))]);
        assert_eq!(read("-o/etc/x"), [pair("output", Some("/etc/x"))]);
        assert_eq!(read("-o=/etc/x"), [pair("output", Some("/etc/x"))]);
        assert_eq!(read("--output=/etc/x"), [pair("output", Some("/etc/x"))]);
        assert_eq!(read("--output /etc/x stat"), [pair("output", Some("/etc/x")), pair("workloads", Some("stat"))]);
        assert_eq!(read("-j1,2 -n 3"), [pair("workers", Some("1,2")), pair("runs", Some("3"))]);
        // A value that looks like an option is the option's value.
        assert_eq!(read("--mkfs-opts -b --dir /x"), [pair("mkfs_opts", Some("-b")), pair("dir", Some("/x"))]);
        assert_eq!(read("--variant=a=touch"), [pair("variant", Some("a=touch"))]);
        assert_eq!(read("-- --stat"), [pair("workloads", Some("--stat"))]);
    }

    #[test]
    fn what_run_does_not_take_is_an_error() {
        for (line, says) in [
            ("--no-such", "--no-such is not an option of fsscale run"),
            ("-Z", "-Z is not an option of fsscale run"),
            ("--dir", "--dir lacks its value"),
            ("--pin=yes", "--pin takes no value"),
        ] {
            let args: Vec<String> = line.split(' ').map(String::from).collect();
            assert_eq!(options(&args).unwrap_err().to_string(), says);
        }
    }

    #[test]
    fn the_canonical_form_parses_to_the_same_arguments() {
        let args: Vec<String> = [
            "stat",
            "-qo",
            "out.json",
            "-j",
            "1,2",
            "--variant=a=x",
            "--variant",
            "b=y z",
            "--mkfs-opts",
            "-b",
            "creat-unlink",
            "--pin",
        ]
        .map(String::from)
        .to_vec();
        let given = options(&args).unwrap();
        let canonical = canonical("fsscale", &given);
        let original: Vec<String> = ["fsscale", "run"].iter().map(|s| s.to_string()).chain(args).collect();
        let parse = |argv: &[String]| format!("{:?}", Cli::try_parse_from(argv).unwrap());
        assert_eq!(parse(&canonical), parse(&original));
        assert_eq!(canonical[2..4], ["stat", "creat-unlink"]);
    }

    use clap::Parser;
}
