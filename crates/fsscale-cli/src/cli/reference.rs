//! The options reference in Markdown (docs/REFERENCE.md), generated from the
//! same command definition as `--help` and the man pages, so it cannot drift:
//! a test compares the committed file with [`markdown`].

use std::fmt::Write as _;

use clap::{Arg, Command};

/// Every visible command below `command`, at every depth and depth first,
/// with its name below `fsscale` (`history changes`): what the reference
/// and the man pages walk. A command's own `help` subcommand, which clap
/// adds to every command with subcommands, is left out below the top.
pub fn every_command(command: &Command) -> Vec<(String, &Command)> {
    fn walk<'a>(command: &'a Command, prefix: &str, depth: usize, into: &mut Vec<(String, &'a Command)>) {
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            if depth > 0 && sub.get_name() == "help" {
                continue;
            }
            let name = format!("{prefix}{}", sub.get_name());
            into.push((name.clone(), sub));
            walk(sub, &format!("{name} "), depth + 1, into);
        }
    }
    let mut found = Vec::new();
    walk(command, "", 0, &mut found);
    found
}

/// Every visible command's usage and options, one table per help heading.
pub fn markdown() -> String {
    let mut command = <super::Cli as clap::CommandFactory>::command();
    // Value names and defaults are filled in when the definition is built.
    command.build();
    let mut out = String::from(
        "# fsscale command-line reference\n\n\
         Generated from fsscale's command definition by `fsscale manpage --markdown`; a test fails when \
         this file and the definition differ. `fsscale help SUBCOMMAND` prints the same, and \
         `fsscale help marks` what the tables' columns and marks mean.\n\n",
    );
    let commands = every_command(&command);
    for (name, sub) in &commands {
        let indent = "  ".repeat(name.matches(' ').count());
        let anchor = name.replace(' ', "-");
        let _ = writeln!(out, "{indent}- [`fsscale {name}`](#fsscale-{anchor}): {}", one_line(sub.get_about()));
    }
    out.push('\n');
    for (name, sub) in commands {
        out.push_str(&subcommand(sub, &name));
    }
    out
}

/// The section of `sub`, whose name below `fsscale` is `name` (`history changes`).
fn subcommand(sub: &Command, name: &str) -> String {
    let mut out = format!("## fsscale {name}\n\n");
    let about = sub.get_long_about().or(sub.get_about()).map(|a| a.to_string()).unwrap_or_default();
    if !about.is_empty() {
        let _ = writeln!(out, "{}\n", about.trim());
    }
    let usage = sub.clone().bin_name(format!("fsscale {name}")).render_usage().to_string();
    let _ = writeln!(out, "```\n{}\n```\n", usage.trim().trim_start_matches("Usage: "));
    // Options in the order they are defined, grouped by their heading, the ungrouped first.
    let args: Vec<&Arg> = sub
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !["help", "version"].contains(&a.get_id().as_str()))
        .collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &args {
        if !headings.contains(&arg.get_help_heading()) {
            headings.push(arg.get_help_heading());
        }
    }
    headings.sort_by_key(|h| h.is_some());
    for heading in headings {
        if let Some(h) = heading {
            let _ = writeln!(out, "### {h}\n");
        }
        out.push_str("| option | meaning | default |\n|---|---|---|\n");
        for arg in args.iter().filter(|a| a.get_help_heading() == heading) {
            // A pipe splits a cell even inside a code span (GitHub's tables): `<REV\|DATE>`.
            let _ = writeln!(out, "| `{}` | {} | {} |", cell(&spelling(arg)), cell(&meaning(arg)), cell(&default(arg)));
        }
        out.push('\n');
    }
    out
}

/// How the option is written: `-j, --workers <LIST>`, or `[WORKLOAD]...` for a positional one.
fn spelling(arg: &Arg) -> String {
    let value = || {
        let names: Vec<String> = arg.get_value_names().unwrap_or_default().iter().map(|n| n.to_string()).collect();
        match names.as_slice() {
            [] => arg.get_id().as_str().to_uppercase(),
            some => some.join(" "),
        }
    };
    if arg.is_positional() {
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let dots = if many { "..." } else { "" };
        return if arg.is_required_set() { format!("<{}>{dots}", value()) } else { format!("[{}]{dots}", value()) };
    }
    let mut names = Vec::new();
    if let Some(c) = arg.get_short() {
        names.push(format!("-{c}"));
    }
    if let Some(l) = arg.get_long() {
        names.push(format!("--{l}"));
    }
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    match takes_value {
        true => format!("{} <{}>", names.join(", "), value()),
        false => names.join(", "),
    }
}

/// The option's help, and its possible values where its help does not list them.
fn meaning(arg: &Arg) -> String {
    let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
    if !arg.get_num_args().is_some_and(|n| n.takes_values()) {
        return help;
    }
    let shown: Vec<_> = arg.get_possible_values().into_iter().filter(|v| !v.is_hide_set()).collect();
    // Values with help of their own (`--profile`'s instruments) are each said with it.
    if shown.iter().any(|v| v.get_help().is_some()) {
        let each: Vec<String> = shown
            .iter()
            .map(|v| match v.get_help() {
                Some(h) => format!("{}: {h}", v.get_name()),
                None => v.get_name().to_string(),
            })
            .collect();
        return format!("{} Values: {}.", help.trim_end(), each.join("; "));
    }
    let values: Vec<String> = shown.iter().map(|v| v.get_name().to_string()).collect();
    match values.is_empty() || values.iter().all(|v| help.contains(v.as_str())) {
        true => help,
        false => format!("{} (one of: {})", help.trim_end_matches('.'), values.join(", ")),
    }
}

fn default(arg: &Arg) -> String {
    if !arg.get_num_args().is_some_and(|n| n.takes_values()) {
        return String::new();
    }
    arg.get_default_values().iter().map(|v| format!("`{}`", v.to_string_lossy())).collect::<Vec<_>>().join(", ")
}

/// A Markdown table cell: one line, its pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

fn one_line(text: Option<&clap::builder::StyledStr>) -> String {
    text.map(|t| cell(&t.to_string())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_option_of_run_is_in_the_reference_with_its_default() {
        let text = markdown();
        let run = text.split("## fsscale run\n").nth(1).unwrap().split("\n## ").next().unwrap();
        assert!(run.contains("| `-j, --workers <LIST>` |"), "{run}");
        assert!(run.contains("| `--items <N>` |"), "{run}");
        let items = run.lines().find(|l| l.starts_with("| `--items <N>`")).unwrap();
        assert!(items.ends_with("| `50000` |"), "{items}");
        assert!(text.contains("## fsscale compare\n"));
        assert!(!text.contains("scratch-warden"), "hidden subcommands stay out");
        // Every depth: `history changes` has its section, its options, and a line in the list.
        let changes = text.split("## fsscale history changes\n").nth(1).unwrap().split("\n## ").next().unwrap();
        assert!(changes.contains("| `--since <REV\\|DATE>` |"), "{changes}");
        assert!(changes.contains("| `--min-segment <N>` |"), "{changes}");
        assert!(text.contains("  - [`fsscale history changes`](#fsscale-history-changes): "));
        assert!(!text.contains("## fsscale history help"), "clap's own help of a nested command stays out");
    }

    #[test]
    fn a_cell_is_one_line_with_its_pipes_escaped() {
        assert_eq!(cell("a |b\n\n  c"), "a \\|b c");
    }
}
