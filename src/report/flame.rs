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

#[derive(Default)]
struct Node {
    samples: u64,
    children: BTreeMap<String, Node>,
}

/// A warm colour from the name, so a function keeps its colour across graphs.
fn colour(name: &str) -> String {
    let hash = name.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
    let (r, g) = (205 + (hash % 50), 80 + ((hash >> 8) % 150));
    format!("rgb({r},{g},{})", (hash >> 16) % 55)
}

/// The flame graph of `folded` (`root;...;leaf` → samples).
pub fn flame_graph_svg(folded: &BTreeMap<String, u64>, title: &str) -> Html {
    let mut root = Node::default();
    for (stack, &n) in folded {
        root.samples += n;
        let mut node = &mut root;
        for frame in stack.split(';') {
            node = node.children.entry(frame.to_string()).or_default();
            node.samples += n;
        }
    }
    let depth = max_depth(&root);
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
        "<g><title>all: {} samples</title><rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" \
         fill=\"rgb(220,120,40)\"/><text x=\"3\" y=\"{}\">all</text></g>",
        root.samples,
        bottom,
        WIDTH,
        ROW - 1.0,
        bottom + 11.5
    );
    draw(&mut out, &root, 0.0, 1, total, bottom);
    out.push_static("</svg>");
    out
}

fn max_depth(node: &Node) -> usize {
    node.children.values().map(|c| 1 + max_depth(c)).max().unwrap_or(0)
}

fn draw(out: &mut Html, node: &Node, x: f64, level: usize, total: f64, bottom: f64) {
    let mut at = x;
    for (name, child) in &node.children {
        let width = WIDTH * child.samples as f64 / total;
        if width >= MIN_WIDTH {
            let y = bottom - ROW * level as f64;
            let share = 100.0 * child.samples as f64 / total;
            html!(
                out,
                "<g><title>{} ({} samples, {}%)</title><rect x=\"{}\" y=\"{}\" width=\"{}\" \
                 height=\"{}\" fill=\"{}\"/>",
                name,
                child.samples,
                format!("{share:.1}"),
                format!("{at:.2}"),
                y,
                format!("{:.2}", (width - 0.3).max(0.1)),
                ROW - 1.0,
                colour(name)
            );
            // About 6.6 px per character at 11 px monospace.
            let fits = ((width - 6.0) / 6.6).floor() as usize;
            if fits >= 3 {
                let label: String = if name.chars().count() > fits {
                    name.chars().take(fits.saturating_sub(2)).collect::<String>() + ".."
                } else {
                    name.clone()
                };
                html!(out, "<text x=\"{}\" y=\"{}\">{}</text>", format!("{:.2}", at + 3.0), y + 11.5, label);
            }
            out.push_static("</g>");
            draw(out, child, at, level + 1, total, bottom);
        }
        at += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_as_wide_as_their_samples() {
        let mut folded = BTreeMap::new();
        folded.insert("main;stat;vfs_statx".to_string(), 3);
        folded.insert("main;open<&>".to_string(), 1);
        let svg = flame_graph_svg(&folded, "x2 <shared>").into_string();
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
    fn an_empty_profile_is_just_the_root() {
        let svg = flame_graph_svg(&BTreeMap::new(), "none").into_string();
        assert!(svg.contains("all: 0 samples"));
    }
}
