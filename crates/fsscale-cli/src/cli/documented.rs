//! The README's commands, parsed by the command definition they document:
//! an option renamed or a value no longer taken fails here, not in a new
//! user's first hour.

/// Splits one shell command line into words as `sh` would for these
/// examples: whitespace, '...' and "..." quotes, backslash escapes; it ends
/// at an unquoted `#` (a comment), `|`, `>`, `<`, `;` or `&` (what follows
/// is another command's or the shell's).
fn words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&q| q != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '#' if !in_word => break,
            '|' | '>' | '<' | ';' | '&' => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The `fsscale` command lines of `markdown`'s shell blocks (and its `$ `
/// lines), continuation lines joined, each from its `fsscale` on: after
/// `sudo`, `git bisect run`, or `cargo run --release --`.
fn commands(markdown: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let (mut in_block, mut pending) = (false, String::new());
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_block = trimmed == "```sh";
            continue;
        }
        // A continued line is the command's, whatever it starts with.
        let line = match (in_block || !pending.is_empty(), trimmed.strip_prefix("$ ")) {
            (_, Some(command)) => command,
            (true, None) => trimmed,
            (false, None) => continue,
        };
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        let whole = std::mem::take(&mut pending) + line;
        let words = words(&whole);
        // The command's own name: first, or after `sudo` or `git bisect run`
        // (not `--bin fsscale`, say).
        let named = |(at, w): &(usize, &String)| {
            *w == "fsscale" && (*at == 0 || ["sudo", "run"].contains(&words[at - 1].as_str()))
        };
        let from = match words.iter().enumerate().find(named).map(|(at, _)| at) {
            Some(at) => Some(at),
            None if words.starts_with(&["cargo".into(), "run".into()]) => words.iter().position(|w| w == "--"),
            None => None,
        };
        if let Some(at) = from {
            let mut command = vec!["fsscale".to_string()];
            // A shell function's "$@" stands for the arguments it is given: none here.
            command.extend(words[at + 1..].iter().filter(|w| *w != "$@").cloned());
            found.push(command);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn shell_words_are_split_as_sh_splits_them() {
        assert_eq!(words("a 'b c' \"d \\\" e\" f\\ g # comment"), ["a", "b c", "d \" e", "f g"]);
        assert_eq!(words("fsscale manpage --markdown > docs/REFERENCE.md"), ["fsscale", "manpage", "--markdown"]);
        assert_eq!(words("x --metric 'a:\\s*([0-9.]+)'"), ["x", "--metric", "a:\\s*([0-9.]+)"]);
        let md = "```sh\nsudo fsscale run a \\\n    -j 1\ncargo run --release -- run --dir /dev/shm   # x\nls\ncargo build --bin fsscale\n```\n$ fsscale list\n";
        assert_eq!(
            commands(md),
            [
                vec!["fsscale", "run", "a", "-j", "1"],
                vec!["fsscale", "run", "--dir", "/dev/shm"],
                vec!["fsscale", "list"]
            ]
        );
    }

    /// Every command of `markdown` (named `doc`) parses; at least `least` of them.
    fn all_parse(doc: &str, markdown: &str, least: usize) {
        let commands = commands(markdown);
        assert!(commands.len() >= least, "read {doc}'s commands: {commands:?}");
        let failed: Vec<String> = commands
            .iter()
            .filter_map(|c| crate::cli::Cli::try_parse_from(c).err().map(|e| format!("`{}`: {e}", c.join(" "))))
            .collect();
        assert!(failed.is_empty(), "{doc}: commands that do not parse:\n{}", failed.join("\n"));
    }

    #[test]
    fn every_command_in_the_readme_parses() {
        all_parse("README.md", include_str!("../../../../README.md"), 15);
    }

    #[test]
    fn the_readmes_commands_name_no_directory_a_fresh_machine_lacks() {
        let commands = commands(include_str!("../../../../README.md"));
        let dirs: Vec<&str> =
            commands.iter().flat_map(|c| c.windows(2).filter(|w| w[0] == "--dir").map(|w| w[1].as_str())).collect();
        assert!(dirs.len() >= 5, "{dirs:?}");
        assert!(dirs.iter().all(|d| *d == "/dev/shm"), "every --dir is one every Linux has: {dirs:?}");
    }

    #[test]
    fn every_command_in_the_guide_parses() {
        all_parse("docs/GUIDE.md", include_str!("../../../../docs/GUIDE.md"), 35);
    }
}
