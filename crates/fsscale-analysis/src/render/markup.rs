//! Markup that cannot run script: [`Html`] is built only from literal
//! markup written in this program and from values that pass [`ToHtml`],
//! which escapes every string. A metric name, a filesystem label, a command
//! line or a unit read from a results file (which anyone can write) thus
//! reaches a page only as text.
//!
//! [`html!`](crate::html) appends to an [`Html`] like `write!`, but its format
//! string must be a literal with plain `{}` placeholders only (checked at
//! compile time): an inline `{name}` would let a string in unescaped.

use std::fmt::Display;

/// A piece of a page, safe as it is.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Html(String);

impl Html {
    pub fn new() -> Html {
        Html::default()
    }

    /// Markup written in the program itself: a literal can hold no user data.
    pub(crate) fn from_static(markup: &'static str) -> Html {
        Html(markup.to_string())
    }

    /// `text`, escaped.
    pub fn text(text: &str) -> Html {
        let mut out = Html::new();
        escape_into(&mut out.0, text);
        out
    }

    /// An SVG drawn by plotters, whose SVG backend escapes every text and
    /// attribute it writes (`SVGBackend::escape_and_push`).
    pub(crate) fn from_plotters_svg(svg: String) -> Html {
        Html(svg)
    }

    /// Appends literal markup.
    pub(crate) fn push_static(&mut self, markup: &'static str) {
        self.0.push_str(markup);
    }

    pub fn push(&mut self, more: &Html) {
        self.0.push_str(&more.0);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// Appends `format` (a literal) with its `{}`s replaced by `args` in order. Use [`html!`](crate::html).
    #[doc(hidden)]
    pub(crate) fn append_format(&mut self, format: &'static str, args: &[&dyn ToHtml]) {
        let mut args = args.iter();
        let mut rest = format;
        while let Some(at) = rest.find(['{', '}']) {
            self.0.push_str(&rest[..at]);
            let tail = &rest[at..];
            if tail.starts_with("{{") || tail.starts_with("}}") {
                self.0.push_str(&tail[..1]);
            } else {
                // `placeholders` proved at compile time that this is a `{}` with an argument.
                args.next().expect("html!: one argument per {}").write_html(&mut self.0);
            }
            rest = &tail[2..];
        }
        self.0.push_str(rest);
    }
}

impl FromIterator<Html> for Html {
    fn from_iter<I: IntoIterator<Item = Html>>(iter: I) -> Html {
        let mut out = Html::new();
        for piece in iter {
            out.push(&piece);
        }
        out
    }
}

/// A value that can stand in a page: markup as it is, anything else as
/// escaped text.
pub(crate) trait ToHtml {
    fn write_html(&self, out: &mut String);
}

impl ToHtml for Html {
    fn write_html(&self, out: &mut String) {
        out.push_str(&self.0);
    }
}

/// Every displayable value (strings, numbers, workload names) is text.
impl<T: Display + ?Sized> ToHtml for T {
    fn write_html(&self, out: &mut String) {
        escape_into(out, &self.to_string());
    }
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // Attributes are always double-quoted here, so `'` is text.
            '"' => out.push_str("&quot;"),
            // XML (an SVG flame graph) allows no control character at all,
            // and HTML none worth keeping: shown as a visible escape, `\x1b`.
            c if c.is_control() && c != '\n' && c != '\t' => {
                out.push_str(&crate::escape::for_terminal(c.encode_utf8(&mut [0; 4])))
            }
            c => out.push(c),
        }
    }
}

/// The number of `{}` in `format`, or `usize::MAX` if it holds any other
/// brace (a `{name}`, a `{:.2}`, a lone `}`): `html!` refuses those at
/// compile time.
pub const fn placeholders(format: &str) -> usize {
    let bytes = format.as_bytes();
    let (mut i, mut count) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'{' if i + 1 < bytes.len() && (bytes[i + 1] == b'}' || bytes[i + 1] == b'{') => {
                count += (bytes[i + 1] == b'}') as usize;
                i += 2;
            }
            b'}' if i + 1 < bytes.len() && bytes[i + 1] == b'}' => i += 2,
            b'{' | b'}' => return usize::MAX,
            _ => i += 1,
        }
    }
    count
}

/// `html!(out, "<td>{}</td>", value)`: appends to the [`Html`] `out`,
/// escaping every argument that is not itself [`Html`].
#[macro_export]
#[doc(hidden)]
macro_rules! html {
    ($out:expr, $format:literal $(, $arg:expr)* $(,)?) => {{
        const _: () = {
            let args: &[&str] = &[$(stringify!($arg)),*];
            assert!(
                $crate::render::markup::placeholders($format) == args.len(),
                "html!: the format needs one plain {{}} per argument and no other braces"
            );
        };
        $out.append_format($format, &[$(&$arg as &dyn $crate::render::markup::ToHtml),*]);
    }};
}

/// [`html!`](crate::html) into a new [`Html`].
#[macro_export]
#[doc(hidden)]
macro_rules! html_of {
    ($format:literal $(, $arg:expr)* $(,)?) => {{
        let mut out = $crate::render::markup::Html::new();
        $crate::html!(out, $format $(, $arg)*);
        out
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_text_and_markup_stays_markup() {
        let payload = "<img src=x onerror=alert(1)>";
        let cell = crate::html_of!("<td>{}</td>", payload);
        assert_eq!(cell.as_str(), "<td>&lt;img src=x onerror=alert(1)&gt;</td>");
        let mut row = Html::from_static("<tr>");
        crate::html!(row, "{}{}<td>{}% {{x}}</td>", cell, String::from("a&b"), 2.5);
        assert_eq!(row.as_str(), "<tr><td>&lt;img src=x onerror=alert(1)&gt;</td>a&amp;b<td>2.5% {x}</td>");
        assert_eq!(Html::text("'\"").as_str(), "'&quot;");
    }

    #[test]
    fn only_plain_placeholders_are_allowed() {
        assert_eq!(placeholders("<b>{}</b>{}"), 2);
        assert_eq!(placeholders("{{}} {}"), 1);
        assert_eq!(placeholders("{name}"), usize::MAX);
        assert_eq!(placeholders("{:.2}"), usize::MAX);
        assert_eq!(placeholders("a } b"), usize::MAX);
    }
}
