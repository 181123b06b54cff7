//! Strings from outside (a received results file, an argument) shown on a
//! terminal as shell words: never a control character raw, so no text can move the
//! cursor, set the title or write the clipboard (OSC 52).

/// `text` as one shell word, quoted only when it must be: bare when it is
/// plain, in single quotes when it holds spaces or shell characters, and as
/// bash's `$'…'` with `\xNN` escapes when it holds a control character.
/// What it returns is safe to print and can be pasted back into a shell.
pub fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%^".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.to_string();
    }
    if !text.chars().any(char::is_control) {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            c if (c as u32) < 0x100 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `text` safe to print on a terminal as it is: every control character
/// (C0, DEL and C1: ESC and CSI begin the sequences that move the cursor,
/// set the title or write the clipboard) shown as an escape, `\x1b` or
/// `\u{9b}`; everything else unchanged. For one-line fields: a newline
/// is shown as `\n` too.
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Everything fsscale's binary writes to stdout or stderr passes here, so
/// that no string it holds (a received file's label, error or frame name; an
/// argument) can drive the terminal: the control characters fsscale's own
/// output uses are kept (newline, tab, carriage return, and the CSI
/// sequences that colour text and erase a line: `ESC [ digits ; m` and
/// `ESC [ K`); every other one (an OSC that sets the title or writes the
/// clipboard, a cursor move, C1 controls) is escaped as [`for_terminal`] does.
pub fn for_output(text: &str) -> std::borrow::Cow<'_, str> {
    let harmless = |c: char| matches!(c, '\n' | '\t' | '\r') || !c.is_control();
    if text.chars().all(harmless) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' {
            if let Some(len) = own_sequence(rest) {
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
        }
        if harmless(c) {
            out.push(c);
        } else {
            out.push_str(&for_terminal(c.encode_utf8(&mut [0; 4])));
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// The length of a colour (`ESC [ 0;32 m`) or erase-line (`ESC [ K`)
/// sequence at the start of `text`, if one is there.
fn own_sequence(text: &str) -> Option<usize> {
    let params = text.strip_prefix("\u{1b}[")?;
    let digits = params.bytes().take_while(|b| b.is_ascii_digit() || *b == b';').count();
    match params.as_bytes().get(digits) {
        Some(b'm') => Some(2 + digits + 1),
        Some(b'K') if digits == 0 => Some(3),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_a_terminal_raw() {
        assert_eq!(for_terminal("plain text / ünïcode"), "plain text / ünïcode");
        let osc = "title\u{1b}]0;owned\u{7}\u{9b}2J\u{7f}";
        assert_eq!(for_terminal(osc), "title\\x1b]0;owned\\x07\\x9b2J\\x7f");
        assert_eq!(for_terminal("a\nb\tc"), "a\\nb\\tc");
        assert!(!for_terminal(osc).chars().any(char::is_control));
    }

    #[test]
    fn output_keeps_fsscales_own_colours_and_escapes_everything_else() {
        let ours = "\r\u{1b}[K[1/2] stat\tx\n  \u{1b}[32mbetter\u{1b}[0m\n";
        assert_eq!(for_output(ours), ours);
        let title = "label \u{1b}]0;pwned\u{7} \u{1b}]52;c;Zm9v\u{1b}\\ \u{1b}[2A \u{9b}31m";
        let shown = for_output(title);
        assert_eq!(shown, "label \\x1b]0;pwned\\x07 \\x1b]52;c;Zm9v\\x1b\\ \\x1b[2A \\x9b31m");
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}') && !shown.contains('\u{9b}'));
    }

    #[test]
    fn words_are_quoted_only_as_much_as_they_need() {
        assert_eq!(shell_word("stat"), "stat");
        assert_eq!(shell_word("a=true"), "a=true");
        assert_eq!(shell_word("a=touch CANARY"), "'a=touch CANARY'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("\x1b]0;owned\x07"), r"$'\x1b]0;owned\x07'");
        assert_eq!(shell_word("a\u{9b}b"), r"$'a\x9bb'");
    }

    proptest::proptest! {
        #[test]
        fn nothing_shown_holds_a_control_character(text in ".*") {
            proptest::prop_assert!(!shell_word(&text).chars().any(char::is_control));
        }
    }
}
