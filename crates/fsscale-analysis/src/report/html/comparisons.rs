//! The report's comparison tables, each point's explanation from the
//! profiles and its differential flame graph.

use super::super::format::{format_pct, format_rate};
use super::super::markup::Html;
use crate::compare::{Comparison, Row, Verdict};
use crate::html;
use crate::vocab::Workload;

pub(super) fn comparison_tables(out: &mut Html, comparisons: &[Comparison], workload: Workload) {
    for c in comparisons {
        let rows: Vec<_> = c.rows.iter().filter(|r| r.workload == workload).collect();
        if rows.is_empty() {
            continue;
        }
        html!(
            out,
            "<h3>{} against {}</h3>\n<table class=\"comparison\"><tr><th>workers</th><th>mode</th><th>share</th>\
             <th>base {}</th><th>new {}</th><th>change</th><th>95% CI</th><th>p ({})</th><th>verdict</th></tr>\n",
            c.new,
            c.base,
            rows[0].figure_kind.word(),
            rows[0].figure_kind.word(),
            rows[0].test.name()
        );
        for r in &rows {
            let class = Html::from_static(match r.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                _ => "",
            });
            let ci = r.change_ci_pct.map(|(lo, hi)| format!("[{lo:+.1}%, {hi:+.1}%]")).unwrap_or_else(|| "-".into());
            let p = r.p_value.map(|p| format!("{p:.4}")).unwrap_or_else(|| "-".into());
            let on = r.condition.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
            html!(
                out,
                "<tr><td class=\"num\">{}</td><td>{}</td><td>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"{}\">{}</td></tr>\n",
                r.workers,
                r.mode_text(),
                r.share_text(),
                on,
                format_rate(r.base_figure),
                format_rate(r.new_figure),
                format_pct(r.change_pct, true),
                ci,
                p,
                class,
                r.verdict.words()
            );
        }
        out.push_static("</table>\n");
        for r in &rows {
            explain_change(out, c, r);
            moved_stats(out, r, 1.0 - c.confidence);
        }
        // Under the table whose rows it explains, not under every workload's.
        if let Some(note) = c.within_noise_note(rows.iter().copied()) {
            html!(out, "<p class=\"legend\">{}</p>\n", note);
        }
        if let Some(note) = &c.invocations_note {
            html!(out, "<p class=\"legend\">{}</p>\n", note);
        }
    }
}

/// Under a compared point whose sides both had profiles: what changed, and
/// differential flame graphs of its CPU samples and of its time asleep
/// beside the two sides' own.
fn explain_change(out: &mut Html, c: &Comparison, r: &Row) {
    let Some(why) = &r.attribution else { return };
    let lines = super::super::attribution::lines(r);
    let Some((first, rest)) = lines.split_first() else { return };
    html!(out, "<p>{}</p>\n<pre class=\"why\">", first);
    for line in rest {
        html!(out, "{}\n", line);
    }
    out.push_static("</pre>\n");
    let flames = [(&why.stacks, super::super::flame::ON_CPU), (&why.sleep_stacks, super::super::flame::OFF_CPU)];
    for (stacks, kind) in flames {
        let Some((base, new)) = stacks else { continue };
        // Nothing recorded on either side (no worker slept): no graph of nothing.
        if base.is_empty() && new.is_empty() {
            continue;
        }
        let what = r.point_words();
        let widths = kind.widths();
        html!(
            out,
            "<figure class=\"flame\">{}<figcaption>{}: {} against {}, differential: widths are {}'s {}; red \
             frames took a larger share of the {} than in {}, blue a smaller one, white the same (hover a frame for \
             both shares).</figcaption></figure>\n",
            super::super::flame::differential_flame_graph_svg(
                base,
                new,
                &format!("{what}: {} against {}", c.new, c.base),
                kind
            ),
            what,
            c.new,
            c.base,
            c.new,
            widths,
            widths,
            c.base
        );
        for (side, folded) in [(&c.base, base), (&c.new, new)].into_iter().filter(|(_, f)| !f.is_empty()) {
            html!(
                out,
                "<figure class=\"flame\">{}<figcaption>{}: {} alone, {}.</figcaption></figure>\n",
                super::super::flame::flame_graph_svg(folded, &format!("{what}: {side}"), kind),
                what,
                side,
                widths
            );
        }
    }
}

/// Under a compared point: the stats that moved, LKP's list, as a table.
fn moved_stats(out: &mut Html, r: &Row, alpha: f64) {
    use super::super::moved::{cells, heading, HEADINGS};
    if r.moved.is_empty() {
        return;
    }
    html!(out, "<p>{}</p>\n<table class=\"moved\"><tr>", heading(r, alpha));
    for title in HEADINGS {
        html!(out, "<th>{}</th>", title);
    }
    out.push_static("</tr>\n");
    for m in &r.moved {
        let [base, base_sd, change, new, new_sd, stat] = cells(m);
        html!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{}</td><td>{}</td></tr>\n",
            base,
            base_sd,
            change,
            new,
            new_sd,
            stat
        );
    }
    out.push_static("</table>\n");
}
