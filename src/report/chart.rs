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

pub const WIDTH: u32 = 760;
pub const HEIGHT: u32 = 420;

/// Throughput against workers; `ideal` adds each series' linear extrapolation from 1 worker.
pub fn scaling_chart(title: &str, y_label: &str, series: &[ChartSeries], ideal: bool) -> String {
    let max_n = series.iter().flat_map(|s| s.points.iter().map(|p| p.workers)).fold(1.0, f64::max);
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.ci.map_or(p.value, |c| c.1.max(p.value))))
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.15;
    draw(title, "workers", y_label, max_n, max_y, |chart| {
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            if ideal {
                if let Some(one) = s.points.iter().find(|p| p.workers == 1.0) {
                    // The ideal line, clipped to the plot: N·X(1) up to the top.
                    let top_n = (max_y / one.value).min(max_n);
                    chart.draw_series(LineSeries::new(
                        vec![(1.0, one.value), (top_n, one.value * top_n)],
                        color.mix(0.35).stroke_width(1),
                    ))?;
                }
            }
            if let Some(fit) = &s.fit {
                let steps = 60;
                let curve: Vec<(f64, f64)> = (0..=steps)
                    .map(|k| 1.0 + (max_n - 1.0) * k as f64 / steps as f64)
                    .map(|n| (n, predict(fit.lambda, fit.sigma, fit.kappa, n).min(max_y)))
                    .collect();
                chart.draw_series(DashedLineSeries::new(curve, 6, 4, color.stroke_width(1)))?;
            }
            draw_measured(chart, s, color)?;
        }
        Ok(())
    })
}

/// Efficiency (speedup per worker, percent) against workers.
pub fn efficiency_chart(title: &str, series: &[ChartSeries]) -> String {
    let max_n = series.iter().flat_map(|s| s.points.iter().map(|p| p.workers)).fold(1.0, f64::max);
    let max_y = series.iter().flat_map(|s| s.points.iter().map(|p| p.value)).fold(100.0, f64::max) * 1.1;
    draw(title, "workers", "efficiency (%)", max_n, max_y, |chart| {
        for (i, s) in series.iter().enumerate() {
            draw_measured(chart, s, PALETTE[i % PALETTE.len()])?;
        }
        Ok(())
    })
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// The measured line, its markers, error bars and legend entry.
fn draw_measured(chart: &mut Chart<'_, '_>, s: &ChartSeries, color: RGBColor) -> DrawResult {
    let line: Vec<(f64, f64)> = s.points.iter().map(|p| (p.workers, p.value)).collect();
    chart
        .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
        .label(s.label.clone())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
    chart.draw_series(line.iter().map(|&(x, y)| Circle::new((x, y), 3, color.filled())))?;
    for p in &s.points {
        if let Some((lo, hi)) = p.ci {
            chart.draw_series(std::iter::once(PathElement::new(vec![(p.workers, lo), (p.workers, hi)], color)))?;
        }
    }
    Ok(())
}

fn draw(
    title: &str,
    x_label: &str,
    y_label: &str,
    max_n: f64,
    max_y: f64,
    series: impl FnOnce(&mut Chart<'_, '_>) -> DrawResult,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let outcome = (|| -> DrawResult {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(42)
                .y_label_area_size(78)
                .build_cartesian_2d(0f64..max_n * 1.05, 0f64..max_y)?;
            // Worker counts are whole: label whole numbers only, no minor grid.
            let x_labels = (max_n.ceil() as usize + 1).min(12);
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .x_labels(x_labels)
                .x_label_formatter(&|v| if v.fract().abs() < 1e-9 { format!("{v:.0}") } else { String::new() })
                .y_label_formatter(&|v| short_number(*v))
                .light_line_style(TRANSPARENT)
                .bold_line_style(BLACK.mix(0.12))
                .label_style(("sans-serif", 13))
                .draw()?;
            series(&mut chart)?;
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 12))
                .draw()?;
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

/// Rasterizes an SVG chart to PNG with the system's fonts.
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>, String> {
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
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| format!("reading the chart: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("the chart has no size")?;
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("encoding PNG: {e}"))
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
        assert!(svg.contains("workers") && svg.contains("ops/s"));
    }

    #[test]
    fn png_has_the_chart_size() {
        let svg = efficiency_chart("e", &[series("a", &[(1.0, 100.0), (2.0, 90.0)])]);
        let png = svg_to_png(&svg).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(u32::from_be_bytes([png[16], png[17], png[18], png[19]]), WIDTH);
    }
}
