//! Command templates: shell-like word splitting without a shell, and the
//! `{dir}`, `{worker}`, `{workers}`, `{scratch}` placeholders.

use std::path::Path;

/// The values a template's placeholders stand for.
#[derive(Debug, Clone, Copy)]
pub struct Placeholders<'a> {
    pub dir: &'a Path,
    pub worker: usize,
    pub workers: usize,
    pub scratch: &'a Path,
}

impl Placeholders<'_> {
    fn expand(&self, text: &str, quote: impl Fn(&str) -> String) -> String {
        // Only the known names: `{}` (find -exec) and other braces stay as they are.
        text.replace("{dir}", &quote(&self.dir.display().to_string()))
            .replace("{workers}", &self.workers.to_string())
            .replace("{worker}", &self.worker.to_string())
            .replace("{scratch}", &quote(&self.scratch.display().to_string()))
    }
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
    pub fn build(template: &str, shell: bool, values: &Placeholders<'_>) -> Result<CommandLine, String> {
        if shell {
            return Ok(CommandLine::Shell(values.expand(template, sh_quote)));
        }
        let words = split_words(template)?;
        if words.is_empty() {
            return Err("the command is empty".into());
        }
        Ok(CommandLine::Argv(words.iter().map(|w| values.expand(w, str::to_string)).collect()))
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
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
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
                        None => return Err(format!("unterminated ' in `{text}`; close the quote or use --shell")),
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
                            None => return Err(format!("unterminated \" in `{text}`; close the quote or use --shell")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unterminated \" in `{text}`; close the quote or use --shell")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(format!("`{text}` ends with a lone backslash")),
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
        Placeholders { dir: Path::new("/s/x y/w3"), worker: 3, workers: 8, scratch: Path::new("/s/x y") }
    }

    #[test]
    fn splits_like_sh() {
        assert_eq!(split_words("  a  b\tc ").unwrap(), ["a", "b", "c"]);
        assert_eq!(split_words(r#"sh -c 'echo "$1" | wc' x"#).unwrap(), ["sh", "-c", "echo \"$1\" | wc", "x"]);
        assert_eq!(split_words(r#"a "b \"c\" \n" d\ e ''"#).unwrap(), ["a", "b \"c\" \\n", "d e", ""]);
        assert_eq!(split_words("").unwrap(), Vec::<String>::new());
        assert!(split_words("echo 'oops").unwrap_err().starts_with("unterminated '"));
        assert!(split_words("echo \"oops").unwrap_err().starts_with("unterminated \""));
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
        assert_eq!(shell, CommandLine::Shell("cd '/s/x y/w3' && make -j8".into()));
        assert_eq!(CommandLine::build("  ", false, &values()).unwrap_err(), "the command is empty");
    }

    #[test]
    fn displays_quoted_where_needed() {
        let cmd = CommandLine::Argv(vec!["ls".into(), "a b".into(), "it's".into()]);
        assert_eq!(cmd.display(), r"ls 'a b' 'it'\''s'");
        assert_eq!(split_words(&cmd.display()).unwrap(), ["ls", "a b", "it's"]);
    }
}
