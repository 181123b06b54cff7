//! What an open-loop table's points say together: each point's curve of
//! response time against rate with its knee, and each `--slo` search's
//! answer with the bracket it is known to. Pure functions of the points.

use super::chart::TimeSeries;
use crate::render::format::{format_ns, thousands};
use crate::render::table::{Align, Table};
use crate::results::objective::{self, PointSearch};
use crate::results::{Point, ResultsFile};
use crate::stats::knee::kneedle;
use crate::vocab::{Objective, Rate, Workload};

/// One point's open-loop rates in rate order: the same workload, mode,
/// sharing level, workers, filesystem, cache state and variant.
pub struct Curve<'a> {
    pub points: Vec<&'a Point>,
    /// Each point's asked rate and its runs' response p99 (ns), merged.
    pub p99: Vec<(f64, f64)>,
    /// Index into `points` of the knee (see [`kneedle`]).
    pub knee: Option<usize>,
}

impl Curve<'_> {
    /// `x2 shared`, `x2 shared on ext4`: what tells the curve from the others.
    pub fn name(&self) -> String {
        name(self.points[0])
    }
}

/// The open-loop curves among `points`, each with its knee: on the asked
/// rate, not the achieved one, which stops growing where it falls behind;
/// the knee is a rate every run kept up with.
pub fn curves<'a>(points: &[&'a Point]) -> Vec<Curve<'a>> {
    let open = points.iter().copied().filter(|p| p.rate.is_some());
    let keyed = open.map(|p| ((p.mode, p.share, p.workers, &p.fs, p.cache, &p.variant), p));
    crate::results::grouped(keyed)
        .into_iter()
        .map(|(_, mut points)| {
            points.sort_by_key(|p| p.rate);
            points.retain(|p| p99_ns(p).is_some());
            let p99: Vec<(f64, f64)> =
                points.iter().filter_map(|p| Some((p.rate?.ops_per_s(), p99_ns(p)? as f64))).collect();
            // A rate the workers fell behind is no knee: its queue grew without bound.
            let kept_up = |i: usize| points[i].behind_runs().is_some_and(|(behind, _)| behind == 0);
            let knee = kneedle(&p99, kept_up);
            Curve { points, p99, knee }
        })
        .filter(|c| !c.points.is_empty())
        .collect()
}

fn p99_ns(point: &Point) -> Option<u64> {
    point.open_loop_times(|o| &o.response).filter(|h| h.count > 0).map(|h| h.quantile(0.99))
}

/// The chart of `workload`'s open-loop curves in every file: response
/// p99 against the rate asked, a line per curve, its knee ringed; `None`
/// where no point of it is an open loop.
pub fn curve_chart(files: &[(String, ResultsFile)], workload: Workload) -> Option<String> {
    let mut series = Vec::new();
    let mut knees = Vec::new();
    for (label, doc) in files {
        let points: Vec<&Point> = doc.points.iter().filter(|p| p.workload == workload).collect();
        for curve in curves(&points) {
            let us: Vec<(f64, f64)> = curve.p99.iter().map(|&(rate, ns)| (rate, ns / 1e3)).collect();
            knees.extend(curve.knee.map(|k| us[k]));
            let name = match files.len() {
                1 => curve.name(),
                _ => format!("{label} {}", curve.name()),
            };
            series.push(TimeSeries { label: name, points: us, dashed: false });
        }
    }
    (!series.is_empty()).then(|| {
        super::chart::rate_chart(
            &format!("{workload}: response time against rate"),
            "response p99 (µs, log scale)",
            &series,
            &knees,
        )
    })
}

/// `analyze`'s view of a file's open loops: each curve as a table of its
/// rates (asked, achieved, response p50/p99/p99.9, service p99), the knee
/// marked, then the knees and searches in words. Empty without open loops.
pub fn render_curves(label: &str, doc: &ResultsFile) -> String {
    let objectives = doc.settings.objectives();
    let mut out = String::new();
    for (workload, points) in crate::results::grouped(doc.points.iter().map(|p| (p.workload, p))) {
        let found = curves(&points);
        for curve in &found {
            out.push_str(&format!("{label}: {workload} {} (open loops)\n", curve.name()));
            let mut table = Table::new(&[
                ("asked", Align::Right),
                ("ops/s", Align::Right),
                ("resp p50", Align::Right),
                ("resp p99", Align::Right),
                ("resp p99.9", Align::Right),
                ("svc p99", Align::Right),
                ("", Align::Left),
            ]);
            for (i, point) in curve.points.iter().enumerate() {
                let response = point.open_loop_times(|o| &o.response).unwrap_or_default();
                let service = point.open_loop_times(|o| &o.service).unwrap_or_default();
                let at = |h: &crate::stats::histogram::Histogram, q: f64| format_ns(h.quantile(q) as f64);
                let mark = match (curve.knee == Some(i), point.behind_runs()) {
                    (true, _) => "knee".to_string(),
                    (false, Some((behind, runs))) if behind > 0 => format!("!behind {behind}/{runs}"),
                    _ => String::new(),
                };
                let achieved = point.summary.as_ref().map_or(0.0, |s| s.ops_per_s.median);
                table.row(vec![
                    point.rate.map(|r| r.to_string()).unwrap_or_default(),
                    thousands(achieved.round() as u64),
                    at(&response, 0.5),
                    at(&response, 0.99),
                    at(&response, 0.999),
                    at(&service, 0.99),
                    mark,
                ]);
            }
            out.push_str(&table.render());
        }
        if !found.is_empty() {
            out.push_str(&lines(&points, objectives));
            out.push('\n');
        }
    }
    out
}

/// The lines under an open-loop table: each knee, then each search.
pub(super) fn lines(points: &[&Point], objectives: &[Objective]) -> String {
    let mut out = String::new();
    for curve in curves(points) {
        let Some(k) = curve.knee else { continue };
        let rate = |i: usize| curve.points[i].rate.map(|r| r.to_string()).unwrap_or_default();
        let after = curve.p99.get(k + 1).map(|(_, p)| format!("; {} at {}/s", format_ns(*p), rate(k + 1)));
        out.push_str(&format!(
            "  knee {}: {}/s, response p99 {}{}\n",
            curve.name(),
            rate(k),
            format_ns(curve.p99[k].1),
            after.unwrap_or_default()
        ));
    }
    if objectives.is_empty() {
        return out;
    }
    let wanted: Vec<String> = objectives.iter().map(Objective::to_string).collect();
    for found in objective::searches(points, objectives) {
        out.push_str(&format!(
            "  slo {} {}: {}\n",
            wanted.join(","),
            name(points[found.closed]),
            answer(points, &found, objectives)
        ));
    }
    out
}

/// `x2 shared`, then its mode where threads, filesystem, cold cache and variant where set.
fn name(point: &Point) -> String {
    let mut words = format!("x{} {}", point.workers, point.share);
    if point.mode == crate::vocab::Mode::Thread {
        words.push_str(" threads");
    }
    if let Some(fs) = &point.fs {
        words.push_str(&format!(" on {fs}"));
    }
    if point.cache == Some(crate::vocab::Cache::Cold) {
        words.push_str(" cold");
    }
    if let Some(variant) = &point.variant {
        words.push_str(&format!(" variant {variant}"));
    }
    words
}

/// A search's answer in words: the rate met and the rate missed (the
/// bracket the answer lies in), each with the objectives' figures there.
fn answer(points: &[&Point], found: &PointSearch, objectives: &[Objective]) -> String {
    let search = &found.search;
    let figures = |rate: Rate| {
        let Some(response) = found.response(points, rate) else { return String::new() };
        let each: Vec<String> = objectives
            .iter()
            .map(|o| format!("{} {}", o.quantile, format_ns(response.quantile(o.quantile.fraction()) as f64)))
            .collect();
        match found.probe(points, rate).and_then(|p| p.behind_runs()).filter(|(behind, _)| *behind > 0) {
            Some((behind, runs)) => format!(" ({}; behind in {behind} of {runs} runs)", each.join(", ")),
            None => format!(" ({})", each.join(", ")),
        }
    };
    let closed = format!("below the closed loop's {}/s", thousands(search.capacity.round() as u64));
    let probes = match search.probes {
        1 => "1 rate probed".to_string(),
        n => format!("{n} rates probed"),
    };
    let mut text = match (search.met, search.missed) {
        (_, _) if search.probes == 0 => format!("not searched yet ({closed})"),
        (Some(met), None) => {
            format!("met at {met}/s{}, the closed loop's throughput: no higher rate is sustained", figures(met))
        }
        (Some(met), Some(missed)) => format!(
            "{met}/s, to within {missed}/s: met at {met}/s{}, missed at {missed}/s{}; {probes} {closed}",
            figures(met),
            figures(missed)
        ),
        (None, Some(missed)) => {
            format!("missed at every rate probed, down to {missed}/s{}; {probes} {closed}", figures(missed))
        }
        (None, None) => format!("no rate judged yet; {probes} {closed}"),
    };
    if search.next.is_some() && search.probes > 0 {
        text.push_str(&format!(" (unfinished: {} next)", search.next.map(|r| format!("{r}/s")).unwrap_or_default()));
    }
    if search.unordered {
        text.push_str("; a rate above it met too: run-to-run noise as large as the search's steps");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use crate::vocab::{parse_objectives, Share, Workload};

    /// A closed loop of 2 workers at 100k ops/s and its probes: `(rate, p99 us, behind)`.
    fn search_points(probes: &[(f64, u64, bool)]) -> Vec<Point> {
        let closed =
            fixtures::point(Workload::CreatUnlink, Share::Shared, 2, vec![fixtures::run(0, &[50_000, 50_000], 1.0)]);
        let probe = |&(asked, us, behind): &(f64, u64, bool)| {
            let runs = (0..2).map(|run| fixtures::open_run(run, asked, &[us * 1000; 100], behind)).collect();
            let mut p = fixtures::point(Workload::CreatUnlink, Share::Shared, 2, runs);
            p.rate = Rate::new(asked);
            p
        };
        std::iter::once(closed).chain(probes.iter().map(probe)).collect()
    }

    #[test]
    fn a_finished_search_says_its_bracket_with_the_figures_at_each_end() {
        let owned = search_points(&[
            (100e3, 9000, true),
            (50e3, 500, false),
            (75e3, 2000, false),
            (62.5e3, 700, false),
            (68.8e3, 1500, false),
            (65.6e3, 900, false),
            (67.2e3, 1200, false),
        ]);
        let points: Vec<&Point> = owned.iter().collect();
        let text = lines(&points, &parse_objectives("p99=1ms").unwrap());
        let slo = text.lines().find(|l| l.starts_with("  slo")).unwrap();
        assert_eq!(
            slo,
            "  slo p99=1ms x2 shared: 65.6k/s, to within 67.2k/s: met at 65.6k/s (p99 900µs), missed at 67.2k/s \
             (p99 1.20ms); 7 rates probed below the closed loop's 100,000/s"
        );
    }

    #[test]
    fn searches_that_end_at_either_end_say_so() {
        let objectives = parse_objectives("p99=1ms").unwrap();
        let owned = search_points(&[(100e3, 900, false)]);
        let text = lines(&owned.iter().collect::<Vec<_>>(), &objectives);
        assert!(text.contains("met at 100k/s (p99 900µs), the closed loop's throughput: no higher rate"), "{text}");
        let owned = search_points(&[(100e3, 9000, true), (50e3, 5000, false)]);
        let text = lines(&owned.iter().collect::<Vec<_>>(), &objectives);
        assert!(
            text.contains("missed at every rate probed, down to 50k/s (p99 5.00ms); 2 rates probed below the closed loop's 100,000/s (unfinished: 25k/s next)"),
            "{text}"
        );
    }

    #[test]
    fn analyze_tables_each_curve_with_its_knee_and_falls() {
        let points = search_points(&[(25e3, 10, false), (50e3, 12, false), (75e3, 20, false), (100e3, 900, true)]);
        let doc = fixtures::doc(2, 1.0, points);
        let text = render_curves("r.json", &doc);
        let expected = "\
r.json: creat-unlink x2 shared (open loops)
  asked  ops/s  resp p50  resp p99  resp p99.9  svc p99
    25k    100    10.0µs    10.0µs      10.0µs   10.0µs
    50k    100    12.0µs    12.0µs      12.0µs   12.0µs
    75k    100    20.0µs    20.0µs      20.0µs   20.0µs  knee
   100k    100     900µs     900µs       900µs    900µs  !behind 2/2
  knee x2 shared: 75k/s, response p99 20.0µs; 900µs at 100k/s

";
        assert_eq!(text, expected);
        assert_eq!(render_curves("r.json", &fixtures::doc(1, 1.0, Vec::new())), "");
    }

    #[test]
    fn a_curves_name_says_what_sets_its_point_apart() {
        let mut point = search_points(&[]).remove(0);
        assert_eq!(name(&point), "x2 shared");
        point.mode = crate::vocab::Mode::Thread;
        point.fs = Some("ext4:noatime".into());
        point.variant = Some("patched".into());
        assert_eq!(name(&point), "x2 shared threads on ext4:noatime variant patched");
    }

    #[test]
    fn a_curve_of_open_loop_points_marks_its_knee() {
        let owned = search_points(&[(25e3, 10, false), (50e3, 12, false), (75e3, 20, false), (100e3, 900, true)]);
        let points: Vec<&Point> = owned.iter().collect();
        let found = curves(&points);
        assert_eq!(found.len(), 1, "the closed loop is no curve's");
        assert_eq!(found[0].points.len(), 4);
        assert_eq!(found[0].knee, Some(2));
        let text = lines(&points, &[]);
        assert_eq!(text, "  knee x2 shared: 75k/s, response p99 20.0µs; 900µs at 100k/s\n");
    }
}
