//! A flame graph of folded stacks as a self-contained SVG: root at the
//! bottom, each frame as wide as its samples, a tooltip (`<title>`) on
//! every frame; no script needed to read it.

use super::markup::Html;
use crate::{html, html_of};
use std::collections::BTreeMap;

const WIDTH: f64 = 1000.0;
const ROW: f64 = 16.0;
/// Frames narrower than this (px) are left out: unreadable and many.
const MIN_WIDTH: f64 = 0.5;

/// A frame and those called from it, named by slices of the folded stacks (no copies).
#[derive(Default)]
struct Node<'a> {
    samples: u64,
    children: BTreeMap<&'a str, Node<'a>>,
}

/// What a graph's widths count, and its palette.
#[derive(Clone, Copy)]
pub struct Kind {
    /// `samples`, `µs asleep`.
    unit: &'static str,
    /// Blues (time off the CPU, by convention) instead of warm colours (time on it).
    cool: bool,
}

/// CPU samples, in warm colours.
pub(crate) const ON_CPU: Kind = Kind { unit: "samples", cool: false };
/// Time asleep, in blues.
pub(crate) const OFF_CPU: Kind = Kind { unit: "µs asleep", cool: true };

impl Kind {
    /// What its widths count: `samples`, `time asleep`.
    pub fn widths(self) -> &'static str {
        if self.cool {
            "time asleep"
        } else {
            "samples"
        }
    }
}

/// A colour from the name, so a function keeps its colour across graphs.
fn colour(name: &str, kind: Kind) -> String {
    let hash = name.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
    let (a, b, c) = (205 + (hash % 50), 80 + ((hash >> 8) % 150), (hash >> 16) % 55);
    if kind.cool {
        format!("rgb({c},{b},{a})")
    } else {
        format!("rgb({a},{b},{c})")
    }
}

fn tree(folded: &BTreeMap<String, u64>) -> Node<'_> {
    let mut root = Node::default();
    for (stack, &n) in folded {
        root.samples += n;
        let mut node = &mut root;
        for frame in stack.split(';') {
            node = node.children.entry(frame).or_default();
            node.samples += n;
        }
    }
    root
}

/// The flame graph of `folded` (`root;...;leaf` → samples, or µs asleep for [`OFF_CPU`]).
pub(crate) fn flame_graph_svg(folded: &BTreeMap<String, u64>, title: &str, kind: Kind) -> Html {
    graph(&tree(folded), None, title, kind)
}

/// A differential flame graph (Gregg's): `new`'s stacks as widths, each
/// frame coloured by how its share of the samples changed from `base`:
/// red where it grew, blue where it shrank, the deeper the larger the
/// change; white where it stayed. Shares, not counts, so a side that took
/// more samples does not look grown everywhere.
pub(crate) fn differential_flame_graph_svg(
    base: &BTreeMap<String, u64>,
    new: &BTreeMap<String, u64>,
    title: &str,
    kind: Kind,
) -> Html {
    graph(&tree(new), Some(&tree(base)), title, kind)
}

/// A change of this many points of share (20) gets a differential graph's
/// deepest colour: on an absolute scale, so a 1.4-point change is pale
/// whatever else changed, and two graphs' colours compare.
const FULL_COLOUR_CHANGE: f64 = 0.20;

/// How a differential graph colours a frame: by the change in its share of samples.
fn change_colour(change: f64) -> String {
    let k = (change.abs() / FULL_COLOUR_CHANGE).min(1.0);
    let fade = (255.0 * (1.0 - 0.8 * k)).round() as u8;
    match change {
        c if c > 0.0 => format!("rgb(255,{fade},{fade})"),
        c if c < 0.0 => format!("rgb({fade},{fade},255)"),
        _ => "rgb(255,255,255)".into(),
    }
}

fn graph(root: &Node, base: Option<&Node>, title: &str, kind: Kind) -> Html {
    let depth = drawn_depth(root, root.samples.max(1) as f64);
    let height = ROW * (depth as f64 + 1.0) + 30.0;
    let mut out = html_of!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"flame\" width=\"{}\" height=\"{}\" \
         viewBox=\"0 0 {} {}\" font-family=\"monospace\" font-size=\"11\">\
         <text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
        WIDTH,
        height,
        WIDTH,
        height,
        WIDTH / 2.0,
        title
    );
    let total = root.samples.max(1) as f64;
    let bottom = height - ROW;
    html!(
        out,
        "<g><title>all: {} {}</title><rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" \
         fill=\"{}\"/><text x=\"3\" y=\"{}\">all</text></g>",
        root.samples,
        kind.unit,
        bottom,
        WIDTH,
        ROW - 1.0,
        // The root is 100% on both sides of a differential graph: unchanged, white.
        match (base, kind.cool) {
            (Some(_), _) => change_colour(0.0),
            (None, true) => "rgb(40,120,220)".to_string(),
            (None, false) => "rgb(220,120,40)".to_string(),
        },
        bottom + 11.5
    );
    let diff = base.map(|b| Diff { base_total: b.samples.max(1) as f64 });
    draw(&mut out, root, base, diff.as_ref(), Place { x: 0.0, level: 1, total, bottom, kind });
    out.push_static("</svg>");
    out
}

/// A differential graph's base: its samples.
struct Diff {
    base_total: f64,
}

/// Where a node's children go: their left edge, row, and the graph's total and bottom.
#[derive(Clone, Copy)]
struct Place {
    x: f64,
    level: usize,
    total: f64,
    bottom: f64,
    kind: Kind,
}

/// How many rows of frames are drawn: frames too narrow to draw (and all
/// above them) take no height, so a graph is as tall as what it shows.
fn drawn_depth(node: &Node, total: f64) -> usize {
    node.children
        .values()
        .filter(|c| WIDTH * c.samples as f64 / total >= MIN_WIDTH)
        .map(|c| 1 + drawn_depth(c, total))
        .max()
        .unwrap_or(0)
}

fn draw(out: &mut Html, node: &Node, base: Option<&Node>, diff: Option<&Diff>, place: Place) {
    let Place { x, level, total, bottom, kind } = place;
    let mut at = x;
    for (name, child) in &node.children {
        let width = WIDTH * child.samples as f64 / total;
        let before = base.and_then(|b| b.children.get(name));
        if width >= MIN_WIDTH {
            let y = bottom - ROW * level as f64;
            let share = 100.0 * child.samples as f64 / total;
            let (fill, was) = match diff {
                Some(d) => {
                    let base_share = before.map_or(0.0, |b| b.samples as f64 / d.base_total);
                    let change = child.samples as f64 / total - base_share;
                    let was = format!("; base {:.1}%, {:+.1} points", 100.0 * base_share, 100.0 * change);
                    (change_colour(change), was)
                }
                None => (colour(name, kind), String::new()),
            };
            html!(
                out,
                "<g><title>{} ({} {}, {}%{})</title><rect x=\"{}\" y=\"{}\" width=\"{}\" \
                 height=\"{}\" fill=\"{}\"/>",
                name,
                child.samples,
                kind.unit,
                format!("{share:.1}"),
                was,
                format!("{at:.2}"),
                y,
                format!("{:.2}", (width - 0.3).max(0.1)),
                ROW - 1.0,
                fill
            );
            // About 6.6 px per character at 11 px monospace.
            let fits = ((width - 6.0) / 6.6).floor() as usize;
            if fits >= 3 {
                let label: String = if name.chars().count() > fits {
                    name.chars().take(fits.saturating_sub(2)).collect::<String>() + ".."
                } else {
                    name.to_string()
                };
                html!(out, "<text x=\"{}\" y=\"{}\">{}</text>", format!("{:.2}", at + 3.0), y + 11.5, label);
            }
            out.push_static("</g>");
            draw(out, child, before, diff, Place { x: at, level: level + 1, total, bottom, kind });
        }
        at += width;
    }
}

/// A flame graph of `folded` with its caption, as a figure.
pub(crate) fn figure(out: &mut Html, folded: &BTreeMap<String, u64>, title: &str, kind: Kind, caption: &str) {
    html!(
        out,
        "<figure class=\"flame\">{}<figcaption>{}</figcaption></figure>\n",
        flame_graph_svg(folded, title, kind),
        caption
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_as_wide_as_their_samples() {
        let mut folded = BTreeMap::new();
        folded.insert("main;stat;vfs_statx".to_string(), 3);
        folded.insert("main;open<&>".to_string(), 1);
        let svg = flame_graph_svg(&folded, "x2 <shared>", ON_CPU).into_string();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("x2 &lt;shared&gt;"));
        assert!(svg.contains("<title>main (4 samples, 100.0%)</title>"));
        assert!(svg.contains("<title>vfs_statx (3 samples, 75.0%)</title>"));
        // Siblings in name order: open<&> (escaped) first, a quarter of the width, then stat.
        assert!(svg
            .contains("<title>open&lt;&amp;&gt; (1 samples, 25.0%)</title><rect x=\"0.00\" y=\"46\" width=\"249.70\""));
        assert!(svg.contains("<title>stat (3 samples, 75.0%)</title><rect x=\"250.00\""));
        assert!(!svg.contains("open<&>"));
    }

    #[test]
    fn a_differential_graph_colours_what_grew_red_and_what_shrank_blue() {
        let folded = |pairs: &[(&str, u64)]| pairs.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        // spin grows from 10% to 50% of the samples; open's own part shrinks.
        let base = folded(&[("entry;open;spin", 10), ("entry;open", 90)]);
        let new = folded(&[("entry;open;spin", 100), ("entry;open", 100)]);
        let svg = differential_flame_graph_svg(&base, &new, "b vs a", ON_CPU).into_string();
        assert!(svg.contains("<title>spin (100 samples, 50.0%; base 10.0%, +40.0 points)</title>"), "{svg}");
        // 40 points is past the full scale (20): full red. The root, entry and open stayed at 100%: white.
        assert!(svg.contains("fill=\"rgb(255,51,51)\"/>"), "{svg}");
        assert!(svg.contains("<title>open (200 samples, 100.0%; base 100.0%, +0.0 points)</title>"));
        assert_eq!(svg.matches("fill=\"rgb(255,255,255)\"").count(), 3, "{svg}");
        assert!(svg.contains("<title>all: 200 samples</title><rect x=\"0\" y=\"78\" width=\"1000\" height=\"15\" fill=\"rgb(255,255,255)\""));
        // Reversed, spin shrank: full blue.
        let svg = differential_flame_graph_svg(&new, &base, "a vs b", ON_CPU).into_string();
        assert!(svg.contains("fill=\"rgb(51,51,255)\"/>"), "{svg}");
        // A small change is pale on the absolute scale, even where it is the largest: 1.4 points is 7% of it.
        let base = folded(&[("entry;open;spin", 100), ("entry;open", 900)]);
        let new = folded(&[("entry;open;spin", 86), ("entry;open", 914)]);
        let svg = differential_flame_graph_svg(&base, &new, "c vs d", ON_CPU).into_string();
        assert!(svg.contains("<title>spin (86 samples, 8.6%; base 10.0%, -1.4 points)</title>"), "{svg}");
        assert!(svg.contains("fill=\"rgb(241,241,255)\"/>"), "{svg}");
    }

    #[test]
    fn a_graph_is_as_tall_as_the_frames_it_draws() {
        // A 1-sample stack 50 frames deep beside 9,999 samples of a 2-frame
        // one: 0.1 px wide, so neither it nor its height is drawn.
        let deep: Vec<String> = (0..50).map(|i| format!("f{i}")).collect();
        let folded = BTreeMap::from([(deep.join(";"), 1), ("main;stat".to_string(), 9_999)]);
        let svg = flame_graph_svg(&folded, "t", ON_CPU).into_string();
        // Title, the root's row and two rows: 16 * 3 + 30.
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"flame\" width=\"1000\" height=\"78\""),
            "{svg}"
        );
        assert!(!svg.contains("f0"), "{svg}");
        // Wide enough, the deep stack is drawn whole, and the graph grows to hold it.
        let folded = BTreeMap::from([(deep.join(";"), 1_000), ("main;stat".to_string(), 9_000)]);
        let svg = flame_graph_svg(&folded, "t", ON_CPU).into_string();
        assert!(svg.contains("height=\"846\""), "{}", &svg[..200]);
        assert!(svg.contains("<title>f49 (1000 samples, 10.0%)</title>"));
    }

    #[test]
    fn an_empty_profile_is_just_the_root() {
        let svg = flame_graph_svg(&BTreeMap::new(), "none", ON_CPU).into_string();
        assert!(svg.contains("all: 0 samples"));
    }
}
