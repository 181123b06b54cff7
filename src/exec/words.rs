//! Command templates: shell-like word splitting without a shell, and the
//! `{dir}`, `{worker}`, `{workers}`, `{scratch}` (and `{tarball}`)
//! placeholders.
//!
//! Without a shell a placeholder's value goes into its word as it is. For
//! `sh -c` a path is never pasted into the script, where a quote or `$(...)`
//! in a crafted `--dir` would be code: each placeholder is rewritten to a
//! reference to its environment variable (`FSSCALE_DIR`, ...) quoted for the
//! context it stands in (bare, inside "...", inside '...', inside `$(...)`),
//! and the values travel in the environment.

use std::path::Path;

use crate::vocab::InputError;

/// The values a template's placeholders stand for.
#[derive(Debug, Clone, Copy)]
pub struct Placeholders<'a> {
    pub dir: &'a Path,
    pub worker: usize,
    pub workers: usize,
    pub scratch: &'a Path,
    /// `untar --extract-cmd`: the tarball.
    pub tarball: Option<&'a Path>,
    /// `--variant`: the name of the variant the run is under.
    pub variant: Option<&'a str>,
}

impl Placeholders<'_> {
    /// (placeholder, environment variable, value) of every placeholder that has a value.
    fn table(&self) -> Vec<(&'static str, &'static str, String)> {
        let mut all = vec![
            ("{dir}", "FSSCALE_DIR", self.dir.display().to_string()),
            ("{workers}", "FSSCALE_WORKERS", self.workers.to_string()),
            ("{worker}", "FSSCALE_WORKER", self.worker.to_string()),
            ("{scratch}", "FSSCALE_SCRATCH", self.scratch.display().to_string()),
        ];
        if let Some(tarball) = self.tarball {
            all.push(("{tarball}", "FSSCALE_TARBALL", tarball.display().to_string()));
        }
        if let Some(variant) = self.variant {
            all.push(("{variant}", "FSSCALE_VARIANT", variant.to_string()));
        }
        all
    }

    /// The values as environment variables, which `--shell` scripts read.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        self.table().into_iter().map(|(_, var, value)| (var, value)).collect()
    }

    /// A word with every placeholder replaced by its value (no shell).
    fn expand(&self, text: &str) -> String {
        // Only the known names: `{}` (find -exec) and other braces stay as they are.
        let mut out = text.to_string();
        for (name, _, value) in self.table() {
            out = out.replace(name, &value);
        }
        out
    }

    /// A script with every path placeholder replaced by a reference to its
    /// variable, quoted for where it stands (see the module docs); numbers
    /// (`{worker}`, `{workers}`) cannot carry code and are pasted as they are.
    fn expand_for_shell(&self, script: &str) -> String {
        let numbers = [("{workers}", self.workers), ("{worker}", self.worker)];
        let table: Vec<_> =
            self.table().into_iter().filter(|(name, _, _)| !numbers.iter().any(|(n, _)| n == name)).collect();
        let mut out = String::with_capacity(script.len());
        let mut contexts = vec![ShellContext::Bare];
        let mut rest = script;
        while let Some(c) = rest.chars().next() {
            let context = *contexts.last().expect("never empty");
            if let Some((name, value)) = numbers.iter().find(|(name, _)| rest.starts_with(name)) {
                out.push_str(&value.to_string());
                rest = &rest[name.len()..];
                continue;
            }
            if context != ShellContext::Single {
                if let Some((name, var, _)) = table.iter().find(|(name, _, _)| rest.starts_with(name)) {
                    out.push_str(&match context {
                        ShellContext::Double | ShellContext::Arithmetic(_) => format!("${{{var}}}"),
                        _ => format!("\"${{{var}}}\""),
                    });
                    rest = &rest[name.len()..];
                    continue;
                }
            } else if let Some((name, var, _)) = table.iter().find(|(name, _, _)| rest.starts_with(name)) {
                // Close the single quotes, expand in double quotes, reopen.
                out.push_str(&format!("'\"${{{var}}}\"'"));
                rest = &rest[name.len()..];
                continue;
            }
            let mut taken = c.len_utf8();
            match (context, c) {
                (ShellContext::Single, '\'') => {
                    contexts.pop();
                }
                (ShellContext::Single, _) => {}
                (_, '\\') => taken += rest[1..].chars().next().map_or(0, char::len_utf8),
                (ShellContext::Double, '"') => {
                    contexts.pop();
                }
                (_, '"') => contexts.push(ShellContext::Double),
                (ShellContext::Double, '\'') => {}
                (_, '\'') => contexts.push(ShellContext::Single),
                (_, '$') if rest[1..].starts_with("((") => {
                    taken += 2;
                    contexts.push(ShellContext::Arithmetic(0));
                }
                (ShellContext::Arithmetic(depth), '(') => {
                    *contexts.last_mut().expect("never empty") = ShellContext::Arithmetic(depth + 1)
                }
                (ShellContext::Arithmetic(0), ')') if rest[1..].starts_with(')') => {
                    taken += 1;
                    contexts.pop();
                }
                (ShellContext::Arithmetic(depth), ')') => {
                    *contexts.last_mut().expect("never empty") = ShellContext::Arithmetic(depth.saturating_sub(1))
                }
                (_, '$') if rest[1..].starts_with('(') => {
                    taken += 1;
                    contexts.push(ShellContext::Substitution(0));
                }
                (ShellContext::Backtick, '`') => {
                    contexts.pop();
                }
                (_, '`') => contexts.push(ShellContext::Backtick),
                (ShellContext::Substitution(depth), '(') => {
                    *contexts.last_mut().expect("never empty") = ShellContext::Substitution(depth + 1)
                }
                (ShellContext::Substitution(0), ')') => {
                    contexts.pop();
                }
                (ShellContext::Substitution(depth), ')') => {
                    *contexts.last_mut().expect("never empty") = ShellContext::Substitution(depth - 1)
                }
                _ => {}
            }
            out.push_str(&rest[..taken]);
            rest = &rest[taken..];
        }
        out
    }
}

/// Where a placeholder stands in a shell script, for quoting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellContext {
    /// Outside quotes (the script's top level).
    Bare,
    /// Inside "...".
    Double,
    /// Inside '...'.
    Single,
    /// Inside $(...), at this depth of inner parentheses: quoting starts afresh.
    Substitution(u32),
    /// Inside `...`.
    Backtick,
    /// Inside $((...)), at this depth of inner parentheses: no quotes allowed.
    Arithmetic(u32),
}

/// What to execute: an argument vector, or a script for `sh -c` (`--shell`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    Argv(Vec<String>),
    Shell(String),
}

impl CommandLine {
    /// Builds the command for one worker: the template is split into words
    /// first and placeholders expanded inside each word, so a directory with
    /// spaces stays one argument; with `shell`, values are quoted for `sh`.
    pub fn build(template: &str, shell: bool, values: &Placeholders<'_>) -> Result<CommandLine, InputError> {
        if shell {
            return Ok(CommandLine::Shell(values.expand_for_shell(template)));
        }
        let words = split_words(template)?;
        if words.is_empty() {
            return Err(InputError::malformed("the command is empty"));
        }
        Ok(CommandLine::Argv(words.iter().map(|w| values.expand(w)).collect()))
    }

    /// The command as a user would type it, for messages.
    pub fn display(&self) -> String {
        match self {
            CommandLine::Shell(script) => script.clone(),
            CommandLine::Argv(words) => words
                .iter()
                .map(|w| {
                    if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
                        sh_quote(w)
                    } else {
                        w.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// Single-quotes `text` for `sh`.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Splits a command line into words as `sh` would, without expanding
/// anything: whitespace separates words, single quotes keep everything,
/// double quotes keep everything but `\"`, `\\`, `\$` and `` \` ``, and a
/// backslash outside quotes keeps the next character.
pub fn split_words(text: &str) -> Result<Vec<String>, InputError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => {
                            return Err(InputError::Malformed(format!(
                                "unterminated ' in `{text}`; close the quote or use --shell"
                            )))
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => {
                                return Err(InputError::Malformed(format!(
                                    "unterminated \" in `{text}`; close the quote or use --shell"
                                )))
                            }
                        },
                        Some(c) => word.push(c),
                        None => {
                            return Err(InputError::Malformed(format!(
                                "unterminated \" in `{text}`; close the quote or use --shell"
                            )))
                        }
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(InputError::Malformed(format!("`{text}` ends with a lone backslash"))),
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
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Placeholders<'static> {
        Placeholders {
            dir: Path::new("/s/x y/w3"),
            worker: 3,
            workers: 8,
            scratch: Path::new("/s/x y"),
            tarball: None,
            variant: None,
        }
    }

    #[test]
    fn splits_like_sh() {
        assert_eq!(split_words("  a  b\tc ").unwrap(), ["a", "b", "c"]);
        assert_eq!(split_words(r#"sh -c 'echo "$1" | wc' x"#).unwrap(), ["sh", "-c", "echo \"$1\" | wc", "x"]);
        assert_eq!(split_words(r#"a "b \"c\" \n" d\ e ''"#).unwrap(), ["a", "b \"c\" \\n", "d e", ""]);
        assert_eq!(split_words("").unwrap(), Vec::<String>::new());
        assert!(split_words("echo 'oops").unwrap_err().to_string().starts_with("unterminated '"));
        assert!(split_words("echo \"oops").unwrap_err().to_string().starts_with("unterminated \""));
    }

    #[test]
    fn placeholders_expand_inside_words() {
        let cmd = CommandLine::build("git -C {dir} diff --stat={worker}/{workers} {} {scratch}", false, &values());
        assert_eq!(
            cmd.unwrap(),
            CommandLine::Argv(vec![
                "git".into(),
                "-C".into(),
                "/s/x y/w3".into(),
                "diff".into(),
                "--stat=3/8".into(),
                "{}".into(),
                "/s/x y".into()
            ])
        );
        let shell = CommandLine::build("cd {dir} && make -j{workers}", true, &values()).unwrap();
        assert_eq!(shell, CommandLine::Shell(r#"cd "${FSSCALE_DIR}" && make -j8"#.into()));
        assert_eq!(CommandLine::build("  ", false, &values()).unwrap_err().to_string(), "the command is empty");
    }

    #[test]
    fn displays_quoted_where_needed() {
        let cmd = CommandLine::Argv(vec!["ls".into(), "a b".into(), "it's".into()]);
        assert_eq!(cmd.display(), r"ls 'a b' 'it'\''s'");
        assert_eq!(split_words(&cmd.display()).unwrap(), ["ls", "a b", "it's"]);
    }
}

#[cfg(test)]
mod shell_tests {
    use super::*;

    /// Runs the script built from `template` with the real `sh`, in the
    /// environment the runner gives it, and returns its stdout.
    fn sh(template: &str, dir: &str) -> String {
        let values = Placeholders {
            dir: Path::new(dir),
            worker: 1,
            workers: 2,
            scratch: Path::new("/s"),
            tarball: None,
            variant: None,
        };
        let CommandLine::Shell(script) = CommandLine::build(template, true, &values).unwrap() else { unreachable!() };
        let out = std::process::Command::new("sh").arg("-c").arg(&script).envs(values.environment()).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn placeholders_are_safe_in_every_quoting_context() {
        let hostile = "/t/a b'c\"d$(touch /tmp/fsscale-pwned)`id`";
        for template in [
            "printf '%s\\n' {dir}",
            "printf '%s\\n' \"{dir}\"",
            "printf '%s\\n' '{dir}'",
            "printf '%s\\n' \"$(printf '%s' {dir})\"",
            "printf '%s\\n' \"x{dir}y\" | sed 's/^x//; s/y$//'",
            "printf '%s\\n' \"`printf '%s' {dir}`\"",
        ] {
            assert_eq!(sh(template, hostile), format!("{hostile}\n"), "{template}");
        }
        assert!(!Path::new("/tmp/fsscale-pwned").exists());
        // Numbers, and text around placeholders, stay as they are.
        assert_eq!(sh("echo {worker}/{workers} '{}' x{dir}x", "/d"), "1/2 {} x/dx\n");
        assert_eq!(sh("echo $(( {workers} * 10 + $(printf 1) ))", "/d"), "21\n");
    }
}
