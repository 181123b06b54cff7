//! Why a compared point changed, in words: the lock-wait and sleep sites
//! and CPU functions whose share moved most (see [`crate::compare::attribute`]).

use super::profile::percent;
use crate::compare::{Attribution, Comparison, Row, SiteDelta};
use crate::render::format::format_ns;

/// `+9.1`, `-0.40`: a change of a share, in points of percent.
fn points(change: f64) -> String {
    let p = 100.0 * change;
    match p.abs() {
        a if a >= 10.0 => format!("{p:+.0}"),
        a if a >= 1.0 => format!("{p:+.1}"),
        _ => format!("{p:+.2}"),
    }
}

fn mean_wait(seconds: f64) -> String {
    if seconds > 0.0 {
        format_ns(seconds * 1e9)
    } else {
        "-".into()
    }
}

/// The lines under a compared point whose sides both had profiles:
/// indented for the terminal, plain for Markdown (which indents them as a list).
pub fn lines(row: &Row) -> Vec<String> {
    let Some(a) = &row.attribution else { return Vec::new() };
    let heading = format!(
        "why at {} {} x{}, from the profiles (base → new; change in points of percent):",
        row.mode_text(),
        row.share_text(),
        row.workers
    );
    attribution_lines(a, heading)
}

/// `heading`, then what moved: lock sites, sleep sites, CPU functions.
pub(crate) fn attribution_lines(a: &Attribution, heading: String) -> Vec<String> {
    let mut out = vec![heading];
    out.extend(lock_lines(a));
    out.extend(sleep_lines(a));
    out.extend(cpu_lines(a));
    out
}

fn lock_lines(a: &Attribution) -> Vec<String> {
    let Some(shares) = a.waiting else { return Vec::new() };
    site_lines("waiting on kernel locks", shares, &a.locks, "waits")
}

fn sleep_lines(a: &Attribution) -> Vec<String> {
    let Some(shares) = a.asleep else { return Vec::new() };
    site_lines("asleep", shares, &a.sleeps, "sleeps")
}

/// A whole share's change, then each site's: `+9.1  SITE: 2.0% → 11%, 10 → 900 waits of 1.2µs → 8.0µs`.
fn site_lines(what: &str, (base, new): (f64, f64), deltas: &[SiteDelta], noun: &str) -> Vec<String> {
    let mut out =
        vec![format!("  {what}: {} → {} of worker time ({})", percent(base), percent(new), points(new - base))];
    for d in deltas {
        out.push(format!(
            "    {:>6}  {}: {} → {}, {} → {} {noun} of {} → {}",
            points(d.change()),
            d.site,
            percent(d.base.share),
            percent(d.new.share),
            d.base.waits,
            d.new.waits,
            mean_wait(d.base.mean_wait_s),
            mean_wait(d.new.mean_wait_s)
        ));
    }
    out
}

fn cpu_lines(a: &Attribution) -> Vec<String> {
    if a.cpu.is_empty() {
        return Vec::new();
    }
    let mut out = vec!["  CPU, share of samples in the function itself (with what it called):".to_string()];
    for f in &a.cpu {
        out.push(format!(
            "    {:>6}  {}: {} → {} ({} → {})",
            points(f.change()),
            f.name,
            percent(f.self_share.0),
            percent(f.self_share.1),
            percent(f.inclusive_share.0),
            percent(f.inclusive_share.1)
        ));
    }
    out
}

/// When a change was found and no profile explains it: how to record them.
pub(crate) fn hint_lines(c: &Comparison) -> Vec<String> {
    let Some((base, new)) = &c.profile_hint else { return Vec::new() };
    let mut out =
        vec!["why: neither side recorded a profile; these record where the workers wait and spend CPU:".into()];
    if base == new {
        out.push(format!("  {base}"));
    } else {
        out.push(format!("  base: {base}"));
        out.push(format!("  new:  {new}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, CompareConfig, FunctionDelta, SiteDelta, SiteSide};
    use crate::report::{render_comparisons, CompareFormat};
    use crate::results::fixtures::{doc, point, run, rwsem_site};
    use crate::results::{LockProfile, ResultsFile};
    use crate::vocab::{Share, Workload};

    /// creat-unlink at 1 worker: three 1-second runs near `rate`, each
    /// waiting `wait_s` at the directory's rwsem when `wait_s` is given.
    fn side(rate: u64, wait_s: Option<f64>, argv: &str) -> ResultsFile {
        let runs = (0..3)
            .map(|i| {
                let mut r = run(i, &[rate + i as u64], 1.0);
                r.sections.locks = wait_s
                    .map(|w| LockProfile::from_sites(100, 0, vec![rwsem_site("down_write ← filename_create", 100, w)]));
                r
            })
            .collect();
        let mut d = doc(3, 1.0, vec![point(Workload::CreatUnlink, Share::Private, 1, runs)]);
        d.command_line = argv.split(' ').map(String::from).collect();
        d
    }

    #[test]
    fn every_format_says_why_or_how_to_find_out() {
        let render = |base: &ResultsFile, new: &ResultsFile, format| {
            let c = compare(base, new, "a", "b", &CompareConfig::DEFAULT);
            render_comparisons(std::slice::from_ref(&c), format, false)
        };
        let (a, b) = ("fsscale run creat-unlink -o a.json", "fsscale run creat-unlink --share shared");
        let text = render(&side(1000, None, a), &side(800, None, b), CompareFormat::Text);
        assert!(text.contains("why: neither side recorded a profile;"), "{text}");
        assert!(
            text.contains("  new:  fsscale run creat-unlink --share shared --profile locks,cpu,offcpu\n"),
            "{text}"
        );
        let (base, new) = (side(1000, Some(0.01), a), side(800, Some(0.2), b));
        let text = render(&base, &new, CompareFormat::Text);
        assert!(text.contains("  why at process private x1, from the profiles (base → new;"), "{text}");
        assert!(text.contains("      +19  down_write ← filename_create (rwsem write): 1.0% → 20%"), "{text}");
        assert!(!text.contains("neither side recorded"), "{text}");
        let markdown = render(&base, &new, CompareFormat::Markdown);
        assert!(markdown.contains("\n  - +19  down_write ← filename_create (rwsem write): 1.0% → 20%"), "{markdown}");
        let json: serde_json::Value = serde_json::from_str(&render(&base, &new, CompareFormat::Json)).unwrap();
        let site = &json[0]["rows"][0]["attribution"]["locks"][0];
        assert_eq!(
            (site["site"].as_str(), site["new"]["waits"].as_u64()),
            (Some("down_write ← filename_create (rwsem write)"), Some(300))
        );
    }

    #[test]
    fn the_site_that_grew_is_named_with_both_sides_figures() {
        let a = Attribution {
            waiting: Some((0.003, 0.094)),
            locks: vec![SiteDelta {
                site: "down_write ← filename_create ← do_mkdirat (rwsem write)".into(),
                base: SiteSide { share: 0.002, waits: 120, mean_wait_s: 2.1e-6 },
                new: SiteSide { share: 0.093, waits: 4300, mean_wait_s: 8.4e-6 },
            }],
            asleep: Some((0.40, 0.25)),
            sleeps: vec![SiteDelta {
                site: "schedule ← jbd2_log_wait_commit ← ext4_sync_file (uninterruptible)".into(),
                base: SiteSide { share: 0.30, waits: 900, mean_wait_s: 330e-6 },
                new: SiteSide { share: 0.12, waits: 400, mean_wait_s: 300e-6 },
            }],
            cpu: vec![FunctionDelta {
                name: "_raw_spin_lock".into(),
                self_share: (0.01, 0.042),
                inclusive_share: (0.02, 0.06),
            }],
            stacks: None,
            sleep_stacks: None,
        };
        let mut rendered = Vec::new();
        rendered.extend(lock_lines(&a));
        rendered.extend(sleep_lines(&a));
        rendered.extend(cpu_lines(&a));
        assert_eq!(
            rendered,
            [
                "  waiting on kernel locks: 0.30% → 9.4% of worker time (+9.1)",
                "      +9.1  down_write ← filename_create ← do_mkdirat (rwsem write): 0.20% → 9.3%, 120 → 4300 waits of 2.10µs → 8.40µs",
                "  asleep: 40% → 25% of worker time (-15)",
                "       -18  schedule ← jbd2_log_wait_commit ← ext4_sync_file (uninterruptible): 30% → 12%, 900 → 400 sleeps of 330µs → 300µs",
                "  CPU, share of samples in the function itself (with what it called):",
                "      +3.2  _raw_spin_lock: 1.0% → 4.2% (2.0% → 6.0%)",
            ]
        );
    }
}
