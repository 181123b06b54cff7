//! Charts as SVG text, drawn with plotters: throughput against workers with
//! confidence-interval error bars, the ideal linear line and the USL fit;
//! efficiency against workers. Pure: data in, SVG string out.

use plotters::prelude::*;

use crate::stats::usl::{predict, UslFit};

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct ChartSeries {
    pub label: String,
    pub points: Vec<ChartPoint>,
    /// Drawn dashed over the measured range.
    pub fit: Option<UslFit>,
}

#[derive(Debug, Clone, Copy)]
pub struct ChartPoint {
    pub workers: f64,
    pub value: f64,
    /// The value's 95% confidence interval, drawn as an error bar.
    pub ci: Option<(f64, f64)>,
}

/// Colours that stay apart on screen and on paper (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub(crate) const WIDTH: u32 = 760;
pub(crate) const HEIGHT: u32 = 420;

/// How worker counts are laid out: evenly, or by doublings. A sweep of
/// 1, 2, 4 ... 32 on a linear axis crams half its points into the left
/// fifth; on a log₂ axis each doubling gets the same room.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum WorkerAxis {
    Linear { min: f64, max: f64 },
    Log2 { min: f64, max: f64 },
}

impl WorkerAxis {
    /// Log₂ when the counts are all powers of two (at least three of them)
    /// or span more than a factor of 8; linear otherwise.
    fn for_counts(counts: impl IntoIterator<Item = f64>) -> WorkerAxis {
        let mut counts: Vec<f64> = counts.into_iter().filter(|n| *n >= 1.0).collect();
        counts.sort_by(f64::total_cmp);
        counts.dedup();
        let (min, max) = (counts.first().copied().unwrap_or(1.0), counts.last().copied().unwrap_or(1.0));
        let powers_of_two =
            counts.len() >= 3 && counts.iter().all(|n| (*n as u64).is_power_of_two() && n.fract() == 0.0);
        if powers_of_two || max / min > 8.0 {
            WorkerAxis::Log2 { min, max }
        } else {
            WorkerAxis::Linear { min, max }
        }
    }

    fn of_series(series: &[ChartSeries]) -> WorkerAxis {
        WorkerAxis::for_counts(series.iter().flat_map(|s| s.points.iter().map(|p| p.workers)))
    }

    /// Where `workers` sits on the drawn axis.
    fn position(self, workers: f64) -> f64 {
        match self {
            WorkerAxis::Linear { .. } => workers,
            WorkerAxis::Log2 { .. } => workers.log2(),
        }
    }

    fn range(self) -> std::ops::Range<f64> {
        match self {
            // From the fewest workers drawn, not 0: no worker count lies below them.
            WorkerAxis::Linear { min, max } => {
                let pad = ((max - min) * 0.05).max(0.25);
                min - pad..max + pad
            }
            WorkerAxis::Log2 { min, max } => {
                let (lo, hi) = (min.log2(), max.log2());
                let pad = ((hi - lo) * 0.05).max(0.25);
                lo - pad..hi + pad
            }
        }
    }

    /// Worker counts are whole: label whole numbers only (log₂: whole powers of two).
    fn label(self, position: f64) -> String {
        let whole = |v: f64| (v - v.round()).abs() < 1e-9;
        match self {
            WorkerAxis::Linear { .. } if whole(position) => format!("{position:.0}"),
            WorkerAxis::Log2 { .. } if whole(position) => format!("{:.0}", position.round().exp2()),
            _ => String::new(),
        }
    }

    fn ticks(self) -> usize {
        let r = self.range();
        (r.end.floor() - r.start.ceil()) as usize + 1
    }

    pub fn name(self) -> &'static str {
        match self {
            WorkerAxis::Linear { .. } => "workers",
            WorkerAxis::Log2 { .. } => "workers (log₂ scale)",
        }
    }

    /// `f` sampled evenly along the drawn axis from `from` to `to` workers.
    fn curve(self, from: f64, to: f64, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        let (a, b) = (self.position(from), self.position(to));
        let steps = 60;
        (0..=steps)
            .map(|k| a + (b - a) * k as f64 / steps as f64)
            .map(|x| {
                let n = match self {
                    WorkerAxis::Linear { .. } => x,
                    WorkerAxis::Log2 { .. } => x.exp2(),
                };
                (x, f(n))
            })
            .collect()
    }
}

/// Throughput against workers; `ideal` adds each series' linear extrapolation from 1 worker.
pub fn scaling_chart(title: &str, y_label: &str, series: &[ChartSeries], ideal: bool) -> String {
    let axis = WorkerAxis::of_series(series);
    let max_n = series.iter().flat_map(|s| s.points.iter().map(|p| p.workers)).fold(1.0, f64::max);
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.ci.map_or(p.value, |c| c.1.max(p.value))))
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.15;
    draw(title, XAxis::Workers(axis), y_label, YAxis::Linear { max: max_y }, &legend(series), |chart| {
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            if ideal {
                if let Some(one) = s.points.iter().find(|p| p.workers == 1.0) {
                    // The ideal line, clipped to the plot: N·X(1) up to the top.
                    let top_n = (max_y / one.value).min(max_n);
                    chart.draw_series(LineSeries::new(
                        axis.curve(1.0, top_n, |n| one.value * n),
                        color.mix(0.35).stroke_width(1),
                    ))?;
                }
            }
            if let Some(fit) = &s.fit {
                let from = s.points.iter().map(|p| p.workers).fold(max_n, f64::min);
                let curve = axis.curve(from, max_n, |n| predict(fit.lambda, fit.sigma, fit.kappa, n).min(max_y));
                chart.draw_series(DashedLineSeries::new(curve, 6, 4, color.stroke_width(1)))?;
            }
            draw_measured(chart, axis, s, color)?;
        }
        Ok(())
    })
}

/// Efficiency (speedup per worker, percent) against workers, with the 100% line.
pub(crate) fn efficiency_chart(title: &str, series: &[ChartSeries]) -> String {
    let axis = WorkerAxis::of_series(series);
    let max_y = series.iter().flat_map(|s| s.points.iter().map(|p| p.value)).fold(100.0, f64::max) * 1.1;
    draw(title, XAxis::Workers(axis), "efficiency (%)", YAxis::Linear { max: max_y }, &legend(series), |chart| {
        let r = axis.range();
        chart.draw_series(LineSeries::new(vec![(r.start, 100.0), (r.end, 100.0)], BLACK.mix(0.35).stroke_width(1)))?;
        for (i, s) in series.iter().enumerate() {
            draw_measured(chart, axis, s, PALETTE[i % PALETTE.len()])?;
        }
        Ok(())
    })
}

/// One line of a chart: `(seconds, value)` over a window, or `(ops/s, value)` over rates.
#[derive(Debug, Clone)]
pub struct TimeSeries {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (a second figure of the same run).
    pub dashed: bool,
}

/// Values over the seconds of a window (a run's per-interval latency).
pub(crate) fn time_chart(title: &str, y_label: &str, series: &[TimeSeries]) -> String {
    let last_s = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(0.0, f64::max);
    let max_y =
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max).max(f64::MIN_POSITIVE) * 1.15;
    let legend: Vec<(String, RGBColor)> =
        series.iter().enumerate().map(|(i, s)| (s.label.clone(), PALETTE[(i / 2) % PALETTE.len()])).collect();
    draw(
        title,
        XAxis::Seconds { last: last_s.max(f64::MIN_POSITIVE) },
        y_label,
        YAxis::Linear { max: max_y },
        &legend,
        |chart| {
            for (s, (_, color)) in series.iter().zip(&legend) {
                if s.dashed {
                    chart.draw_series(DashedLineSeries::new(s.points.clone(), 6, 4, color.stroke_width(2)))?;
                } else {
                    chart.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))?;
                }
            }
            Ok(())
        },
    )
}

/// Response time against the rate asked (an open loop's curve): a line per
/// series, `(ops/s, value)`, and a ring at each of `knees`. The values on
/// a log scale: a curve spans microseconds below its knee and seconds past it.
pub fn rate_chart(title: &str, y_label: &str, series: &[TimeSeries], knees: &[(f64, f64)]) -> String {
    let points = || series.iter().flat_map(|s| s.points.iter());
    let last = points().map(|p| p.0).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let positive = || points().map(|p| p.1).filter(|v| *v > 0.0 && v.is_finite());
    let low = positive().fold(f64::INFINITY, f64::min);
    let high = positive().fold(0.0, f64::max);
    let (low, high) = if low <= high {
        (low.log10().floor(), high.log10().ceil().max(low.log10().floor() + 1.0))
    } else {
        (0.0, 1.0)
    };
    let on_scale = |(x, y): (f64, f64)| (x, y.max(10f64.powf(low)).log10());
    let legend: Vec<(String, RGBColor)> =
        series.iter().enumerate().map(|(i, s)| (s.label.clone(), PALETTE[i % PALETTE.len()])).collect();
    draw(title, XAxis::Rate { last }, y_label, YAxis::Log10 { low, high }, &legend, |chart| {
        for (s, (_, color)) in series.iter().zip(&legend) {
            let line: Vec<(f64, f64)> = s.points.iter().copied().map(on_scale).collect();
            chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?;
            chart.draw_series(line.iter().map(|&(x, y)| Circle::new((x, y), 3, color.filled())))?;
        }
        let rings = knees.iter().copied().map(on_scale);
        chart.draw_series(rings.map(|(x, y)| Circle::new((x, y), 8, BLACK.stroke_width(2))))?;
        Ok(())
    })
}

/// The vertical axis: from 0 to `max`, or powers of ten from `10^low` to `10^high`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum YAxis {
    Linear { max: f64 },
    Log10 { low: f64, high: f64 },
}

impl YAxis {
    fn range(self) -> std::ops::Range<f64> {
        match self {
            YAxis::Linear { max } => 0.0..max,
            YAxis::Log10 { low, high } => low..high,
        }
    }

    /// A tick's label: the value, or on a log scale the power of ten at each whole exponent.
    fn label(self, position: f64) -> String {
        match self {
            YAxis::Linear { .. } => short_number(position),
            YAxis::Log10 { .. } if (position - position.round()).abs() < 1e-9 => {
                short_number(10f64.powf(position.round()))
            }
            YAxis::Log10 { .. } => String::new(),
        }
    }
}

/// The horizontal axis: worker counts, seconds of a window, or a rate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum XAxis {
    Workers(WorkerAxis),
    Seconds { last: f64 },
    Rate { last: f64 },
}

impl XAxis {
    fn range(self) -> std::ops::Range<f64> {
        match self {
            XAxis::Workers(axis) => axis.range(),
            XAxis::Seconds { last } => 0.0..last * 1.02,
            XAxis::Rate { last } => 0.0..last * 1.05,
        }
    }

    fn name(self) -> &'static str {
        match self {
            XAxis::Workers(axis) => axis.name(),
            XAxis::Seconds { .. } => "seconds into the window",
            XAxis::Rate { .. } => "ops/s asked",
        }
    }

    fn ticks(self) -> usize {
        match self {
            XAxis::Workers(axis) => axis.ticks(),
            XAxis::Seconds { .. } | XAxis::Rate { .. } => 10,
        }
    }

    fn label(self, position: f64) -> String {
        match self {
            XAxis::Workers(axis) => axis.label(position),
            XAxis::Seconds { .. } | XAxis::Rate { .. } => short_number(position),
        }
    }
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Each series' label and colour, in the order drawn.
fn legend(series: &[ChartSeries]) -> Vec<(String, RGBColor)> {
    series.iter().enumerate().map(|(i, s)| (s.label.clone(), PALETTE[i % PALETTE.len()])).collect()
}

/// Height of the legend under the plot: a row per series.
const LEGEND_ROW: u32 = 18;

/// The measured line, its markers and error bars.
fn draw_measured(chart: &mut Chart<'_, '_>, axis: WorkerAxis, s: &ChartSeries, color: RGBColor) -> DrawResult {
    let line: Vec<(f64, f64)> = s.points.iter().map(|p| (axis.position(p.workers), p.value)).collect();
    chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?;
    chart.draw_series(line.iter().map(|&(x, y)| Circle::new((x, y), 3, color.filled())))?;
    for p in &s.points {
        if let Some((lo, hi)) = p.ci {
            let x = axis.position(p.workers);
            chart.draw_series(std::iter::once(PathElement::new(vec![(x, lo), (x, hi)], color)))?;
        }
    }
    Ok(())
}

fn draw(
    title: &str,
    axis: XAxis,
    y_label: &str,
    y_axis: YAxis,
    legend: &[(String, RGBColor)],
    series: impl FnOnce(&mut Chart<'_, '_>) -> DrawResult,
) -> String {
    // XML 1.0 has no place for control characters, not even as references:
    // a label's are drawn as visible escapes (`\x1b`), so the chart stays
    // well-formed XML whatever a results file names its series.
    let visible = |text: &str| crate::escape::for_terminal(text).into_owned();
    let (title, y_label) = (visible(title), visible(y_label));
    let legend: Vec<(String, RGBColor)> = legend.iter().map(|(label, color)| (visible(label), *color)).collect();
    let mut svg = String::new();
    {
        // The legend goes under the plot, never over its lines.
        let legend_height = if legend.is_empty() { 0 } else { LEGEND_ROW * legend.len() as u32 + 8 };
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + legend_height)).into_drawing_area();
        let outcome = (|| -> DrawResult {
            root.fill(&WHITE)?;
            let (plot, below) = root.split_vertically(HEIGHT);
            let mut chart = ChartBuilder::on(&plot)
                .caption(&title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(42)
                .y_label_area_size(78)
                .build_cartesian_2d(axis.range(), y_axis.range())?;
            chart
                .configure_mesh()
                .x_desc(axis.name())
                .y_desc(&y_label)
                .x_labels(axis.ticks().clamp(2, 12))
                .x_label_formatter(&|v| axis.label(*v))
                .y_label_formatter(&|v| y_axis.label(*v))
                .light_line_style(TRANSPARENT)
                .bold_line_style(BLACK.mix(0.12))
                .label_style(("sans-serif", 13))
                .draw()?;
            series(&mut chart)?;
            for (row, (label, color)) in legend.iter().enumerate() {
                let y = (LEGEND_ROW * row as u32 + LEGEND_ROW / 2) as i32;
                below.draw(&PathElement::new(vec![(90, y), (108, y)], color.stroke_width(2)))?;
                below.draw(&Text::new(label.clone(), (116, y - 7), ("sans-serif", 12)))?;
            }
            root.present()
        })();
        // Drawing into a String cannot fail for I/O reasons; an error here is a bug.
        outcome.expect("drawing an SVG chart into memory");
    }
    svg
}

/// 1.2M, 350k, 12.5: axis labels that stay short.
fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Rasterizes an SVG chart to PNG: this build has no rasterizer (cargo feature `png`).
#[cfg(not(feature = "png"))]
pub fn svg_to_png(_svg: &str) -> anyhow::Result<Vec<u8>> {
    anyhow::bail!(
        "this fsscale was built without PNG output (cargo feature `png`); write a .svg file, \
         or build with `cargo build --release --features png`"
    )
}

/// Rasterizes an SVG chart to PNG with the system's fonts.
#[cfg(feature = "png")]
pub fn svg_to_png(svg: &str) -> anyhow::Result<Vec<u8>> {
    let mut options = resvg::usvg::Options::default();
    let db = options.fontdb_mut();
    db.load_system_fonts();
    // "sans-serif" must name an installed family, or text silently vanishes.
    let family = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"]
        .into_iter()
        .find(|f| db.faces().any(|face| face.families.iter().any(|(name, _)| name == f)))
        .map(String::from)
        .or_else(|| db.faces().next().and_then(|face| face.families.first().map(|(n, _)| n.clone())));
    if let Some(family) = family {
        db.set_sans_serif_family(family.clone());
        options.font_family = family;
    }
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| anyhow::anyhow!("reading the chart: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| anyhow::anyhow!("the chart has no size"))?;
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| anyhow::anyhow!("encoding PNG: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(label: &str, values: &[(f64, f64)]) -> ChartSeries {
        ChartSeries {
            label: label.into(),
            points: values
                .iter()
                .map(|&(workers, value)| ChartPoint { workers, value, ci: Some((value * 0.9, value * 1.1)) })
                .collect(),
            fit: None,
        }
    }

    #[test]
    fn a_rate_chart_draws_each_point_its_knee_rings_and_powers_of_ten() {
        let curve = TimeSeries {
            label: "x2 shared".into(),
            points: vec![(1e4, 12.0), (5e4, 90.0), (9e4, 25_000.0)],
            dashed: false,
        };
        let svg = rate_chart("creat-unlink", "response p99 (µs, log scale)", &[curve], &[(5e4, 90.0)]);
        assert_eq!(svg.matches("<circle").count(), 4, "three points and a ring");
        // From 10 us to 100 ms: a label at each power of ten, none between.
        for label in ["\n10.0\n", "\n100\n", "\n1000\n", "\n100k\n"] {
            assert!(svg.contains(label), "{label:?} in {svg}");
        }
        assert!(!svg.contains("\n1.0M\n"), "the scale ends at the decade above the largest value");
        assert!(!svg.contains("\n31.6\n"), "no label between powers of ten");
    }

    #[test]
    fn draws_every_series_and_point() {
        let svg = scaling_chart(
            "stat",
            "ops/s",
            &[series("a", &[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0)]), series("b", &[(1.0, 8.0), (2.0, 9.0)])],
            true,
        );
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<circle").count(), 5, "one marker per point");
        assert!(svg.contains(">\na\n</text>") || svg.contains(">a</text>"), "legend names the series");
        // The legend sits under the plot: every label's baseline below the plot's height.
        for label in ["a", "b"] {
            let at = svg.find(&format!(">\n{label}\n</text>")).unwrap();
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let y: f64 = tag.split(" y=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            assert!(y > f64::from(HEIGHT), "{label} at y {y}, over the plot");
        }
        assert!(svg.contains(&format!("height=\"{}\"", HEIGHT + 2 * LEGEND_ROW + 8)), "room for two rows");
        assert!(svg.contains("workers") && svg.contains("ops/s"));
    }

    #[test]
    fn doublings_and_wide_spans_get_a_log2_axis() {
        let axis = |counts: &[f64]| WorkerAxis::for_counts(counts.iter().copied());
        assert_eq!(axis(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]), WorkerAxis::Log2 { min: 1.0, max: 32.0 });
        assert_eq!(axis(&[1.0, 2.0, 4.0]), WorkerAxis::Log2 { min: 1.0, max: 4.0 });
        assert_eq!(axis(&[1.0, 3.0, 12.0]), WorkerAxis::Log2 { min: 1.0, max: 12.0 }, "more than 8×");
        assert_eq!(axis(&[1.0, 2.0, 3.0, 4.0]), WorkerAxis::Linear { min: 1.0, max: 4.0 });
        assert_eq!(axis(&[1.0, 2.0]), WorkerAxis::Linear { min: 1.0, max: 2.0 }, "two points gain nothing");
        assert_eq!(axis(&[2.0, 6.0, 16.0]), WorkerAxis::Linear { min: 2.0, max: 16.0 });
        // -j 1,2 starts at 1, not at 0 workers: its ticks are 1 and 2 alone.
        let range = axis(&[1.0, 2.0]).range();
        assert!(range.start > 0.5 && range.start < 1.0 && range.end > 2.0 && range.end < 2.5, "{range:?}");
        assert_eq!(axis(&[1.0, 2.0]).ticks(), 2);
    }

    #[test]
    fn a_log2_axis_labels_the_doublings_evenly() {
        let svg =
            scaling_chart("x", "ops/s", &[series("a", &[(1.0, 1.0), (2.0, 2.0), (4.0, 3.0), (32.0, 4.0)])], false);
        assert!(svg.contains("log₂"), "the axis says it is logarithmic");
        for label in ["1", "2", "4", "8", "16", "32"] {
            assert!(
                svg.contains(&format!(">{label}</text>")) || svg.contains(&format!(">\n{label}\n</text>")),
                "{label}"
            );
        }
        // Markers of 1, 2 and 4 workers sit equal distances apart.
        let xs: Vec<f64> =
            svg.split("<circle cx=\"").skip(1).map(|rest| rest[..rest.find('"').unwrap()].parse().unwrap()).collect();
        assert_eq!(xs.len(), 4);
        assert!(((xs[1] - xs[0]) - (xs[2] - xs[1])).abs() <= 1.0, "{xs:?}");
        assert!(((xs[3] - xs[2]) - 3.0 * (xs[1] - xs[0])).abs() <= 2.0, "4 to 32 is three doublings: {xs:?}");
    }

    #[cfg(feature = "png")]
    #[test]
    fn png_has_the_chart_size() {
        let svg = efficiency_chart("e", &[series("a", &[(1.0, 100.0), (2.0, 90.0)])]);
        let png = svg_to_png(&svg).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(u32::from_be_bytes([png[16], png[17], png[18], png[19]]), WIDTH);
    }
}
