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
/// argument; a tar member's name) can drive the terminal: only newline and
/// tab pass, and every other control character (a carriage return, the
/// ESC that begins a colour, an erase-line, a cursor move or an OSC that
/// sets the title or writes the clipboard, C1 controls) is escaped as
/// [`for_terminal`] does. fsscale's own sequences (the progress line's
/// carriage return and erase, the verdicts' colours) are added after this,
/// by the binary, to text already passed through it: [`paint_verdicts`].
pub fn for_output(text: &str) -> std::borrow::Cow<'_, str> {
    let harmless = |c: char| matches!(c, '\n' | '\t') || !c.is_control();
    if text.chars().all(harmless) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if harmless(c) {
            out.push(c);
        } else {
            out.push_str(&for_terminal(c.encode_utf8(&mut [0; 4])));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// ANSI green for "better", red for "worse", at the end of a comparison
/// table's lines (after alignment, so the columns stay straight). Takes text
/// already passed through [`for_output`], so these are the only escape
/// sequences in what it returns; a label that ends in "  better" is only coloured.
pub fn paint_verdicts(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
            if let Some(head) = body.strip_suffix("  better") {
                format!("{head}  \x1b[32mbetter\x1b[0m{end}")
            } else if let Some(head) = body.strip_suffix("  worse") {
                format!("{head}  \x1b[31mworse\x1b[0m{end}")
            } else {
                line.to_string()
            }
        })
        .collect()
}

/// `value` as pretty JSON that is safe on a terminal and valid wherever it
/// goes: serde_json escapes C0 controls; DEL and the C1 controls (U+007F to
/// U+009F, which a terminal takes as CSI and its kin) are escaped here too,
/// as `\u007f` … `\u009f`, and so are U+2028 and U+2029 (line breaks to
/// JavaScript). The result parses to the same value.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(4096);
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, SafeJson(serde_json::ser::PrettyFormatter::new()));
    value.serialize(&mut serializer)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// [`json_pretty`] on one line.
pub(crate) fn json_compact<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(4096);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, SafeJson(serde_json::ser::CompactFormatter));
    value.serialize(&mut serializer)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// A formatter that writes string contents with DEL, C1, U+2028 and U+2029 as `\uXXXX`.
struct SafeJson<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for SafeJson<F> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let risky = |c: char| matches!(c as u32, 0x7f..=0x9f | 0x2028 | 0x2029);
        let mut rest = fragment;
        while let Some(at) = rest.find(risky) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let c = rest[at..].chars().next().expect("found at a char boundary");
            write!(writer, "\\u{:04x}", c as u32)?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    // The rest as the inner formatter writes it.
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `text` as one cell or line of Markdown that renders as the text itself
/// and cannot end its cell or row, open HTML, an entity, a code span or a
/// link: a backslash, `|` and a backtick are backslash-escaped, `<` before
/// what could open a tag and `&` before what could name an entity are
/// written as entities, `]` before `(` or `[` is escaped, and line breaks and
/// other control characters are shown as escapes. fsscale's own text
/// (`<0.0001`, `[-2.1%, 0.4%]`, `ops_per_cpu_s`) passes as it is.
pub(crate) fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match c {
            '\\' | '|' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '<' if next.is_some_and(|n| n.is_ascii_alphabetic() || "/!?".contains(n)) => out.push_str("&lt;"),
            '&' if next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '#') => out.push_str("&amp;"),
            ']' if matches!(next, Some('(' | '[')) => out.push_str("\\]"),
            c if c.is_control() => out.push_str(&for_terminal(c.encode_utf8(&mut [0; 4])).replace('\\', "\\\\")),
            c => out.push(c),
        }
    }
    out
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
    fn output_passes_only_newline_and_tab_and_escapes_every_sequence() {
        assert_eq!(for_output("[1/2] stat\tx\n"), "[1/2] stat\tx\n");
        let title = "label \u{1b}]0;pwned\u{7} \u{1b}]52;c;Zm9v\u{1b}\\ \u{1b}[2A \u{9b}31m";
        let shown = for_output(title);
        assert_eq!(shown, "label \\x1b]0;pwned\\x07 \\x1b]52;c;Zm9v\\x1b\\ \\x1b[2A \\x9b31m");
        // What a received label once used to erase an error line and hide a row.
        let erase = "r1\r\u{1b}[Kplan checked \u{1b}[8mhidden\u{1b}[0m";
        assert_eq!(for_output(erase), "r1\\x0d\\x1b[Kplan checked \\x1b[8mhidden\\x1b[0m");
    }

    #[test]
    fn verdicts_are_painted_after_escaping_and_nothing_else_is() {
        let table = "stat  1  +5%  better\nopen  1  -5%  worse\nx  \u{1b}[31mworse\n";
        let painted = paint_verdicts(&for_output(table));
        assert_eq!(
            painted,
            "stat  1  +5%  \u{1b}[32mbetter\u{1b}[0m\nopen  1  -5%  \u{1b}[31mworse\u{1b}[0m\nx  \\x1b[31mworse\n"
        );
    }

    #[test]
    fn json_escapes_del_and_c1_and_still_parses_to_the_same_value() {
        let label = "a\u{7f}b\u{9b}31mc\u{1b}d\u{2028}e\"f";
        let json = json_pretty(&serde_json::json!({ "label": label })).unwrap();
        assert!(!json.chars().any(|c| c.is_control() && c != '\n'), "{json}");
        assert!(json.contains("\\u007f") && json.contains("\\u009b") && json.contains("\\u001b"), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["label"], label);
        assert_eq!(for_output(&json), json, "the terminal filter changes nothing in it");
        let compact = json_compact(&vec![label]).unwrap();
        assert_eq!(serde_json::from_str::<Vec<String>>(&compact).unwrap(), vec![label.to_string()]);
    }

    #[test]
    fn markdown_text_cannot_end_its_cell_or_open_html() {
        assert_eq!(markdown_text("a|b\nc<script>`x`"), "a\\|b\\\\nc&lt;script>\\`x\\`");
        assert_eq!(markdown_text("[click](javascript:x) &amp; &#60;"), "[click\\](javascript:x) &amp;amp; &amp;#60;");
        // fsscale's own text is left as it is.
        assert_eq!(
            markdown_text("<0.0001 [-2.1%, 0.4%] ops_per_cpu_s a < b"),
            "<0.0001 [-2.1%, 0.4%] ops_per_cpu_s a < b"
        );
        assert!(!markdown_text("x\r\ny\u{1b}").contains(['\n', '\r', '\u{1b}']));
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
            proptest::prop_assert!(!for_output(&text).chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            proptest::prop_assert!(!markdown_text(&text).chars().any(char::is_control));
            let json = json_compact(&text).unwrap();
            proptest::prop_assert!(!json.chars().any(char::is_control));
            proptest::prop_assert_eq!(serde_json::from_str::<String>(&json).unwrap(), text);
        }
    }
}
