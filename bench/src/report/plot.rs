//! A figure drawn as SVG with `plotters`: no browser or font needed to produce it.
//!
//! Log axes are drawn on linear coordinates over log10 of the values (one chart type for
//! both), with the ticks labelled by the values themselves. vouch's series are solid with
//! round markers, the baselines dashed, the paper's values red crosses.

use super::figure::{Axis, Body, Figure, Series, Source};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

const SIZE: (u32, u32) = (720, 420);
const VOUCH: [RGBColor; 4] = [BLUE, GREEN, MAGENTA, CYAN];
const GREY_600: RGBColor = RGBColor(117, 117, 117);
const PAPERS: [RGBColor; 3] = [ORANGE_700, RGBColor(198, 40, 40), RGBColor(255, 183, 77)];
const BASELINES: [RGBColor; 3] = [GREY_600, RGBColor(121, 85, 72), RGBColor(38, 50, 56)];
const ORANGE_700: RGBColor = RGBColor(245, 124, 0);

/// The figure as a standalone SVG document, or `None` for a table (the page shows it as one).
pub fn svg(figure: &Figure) -> Result<Option<String>, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        match &figure.body {
            Body::Lines { x, y, series } => lines(&root, x, y, series).map_err(|e| e.to_string())?,
            Body::Bars { categories, y, series } => bars(&root, categories, y, series).map_err(|e| e.to_string())?,
            Body::Table { .. } => return Ok(None),
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(Some(out))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Drawn = Result<(), Box<dyn std::error::Error>>;

/// A value on an axis: log10 of it on a log axis (values ≤ 0 cannot be drawn there).
fn on(axis: &Axis, v: f64) -> Option<f64> {
    match axis.log {
        true => (v > 0.0).then(|| v.log10()),
        false => v.is_finite().then_some(v),
    }
}

/// A tick's label: the value, in two or three significant digits.
fn tick(axis: &Axis, v: f64) -> String {
    let v = if axis.log { 10f64.powf(v) } else { v };
    let a = v.abs();
    match a {
        _ if a < 1e-9 => "0".into(),
        _ if a >= 1e6 => format!("{}M", short(v / 1e6)),
        _ if a >= 1e4 => format!("{}k", short(v / 1e3)),
        _ => short(v),
    }
}

/// `v` in at most three significant digits, without trailing zeros.
fn short(v: f64) -> String {
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.digits$}");
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').into(),
        false => text,
    }
}

/// The range of the drawn values, with a margin, and never empty.
fn range(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    if from_zero && !log {
        lo = lo.min(0.0);
    }
    let pad = match hi - lo {
        d if d > 0.0 => d * 0.08,
        _ => lo.abs().max(1.0) * 0.1,
    };
    hi += pad;
    if !(from_zero && !log && lo == 0.0) {
        lo -= pad;
    }
    lo..hi
}

fn lines(root: &Area, x: &Axis, y: &Axis, series: &[Series]) -> Drawn {
    let drawn: Vec<(&Series, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| (s, s.points.iter().filter_map(|&(a, b)| Some((on(x, a)?, on(y, b)?))).collect()))
        .collect();
    let xs = range(drawn.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)), x.log, false);
    let ys = above_legend(range(drawn.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)), y.log, true), series.len());
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(xs.clone(), ys.clone())?;
    chart
        .configure_mesh()
        .x_labels(labels(x, &xs))
        .y_labels(labels(y, &ys))
        .x_desc(axis_label(x))
        .y_desc(axis_label(y))
        .x_label_formatter(&|v| tick(x, *v))
        .y_label_formatter(&|v| tick(y, *v))
        .draw()?;
    let mut vouch = VOUCH.iter().cycle();
    let mut baseline = BASELINES.iter().cycle();
    for (s, points) in drawn {
        match s.source {
            Source::Vouch => {
                let color = *vouch.next().unwrap_or(&BLUE);
                let style = color.stroke_width(2);
                chart
                    .draw_series(LineSeries::new(points.clone(), style).point_size(3))?
                    .label(&s.name)
                    .legend(move |(a, b)| PathElement::new(vec![(a, b), (a + 18, b)], style));
            }
            Source::Baseline => {
                let style = baseline.next().unwrap_or(&GREY_600).stroke_width(2);
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, style)))?;
                chart
                    .draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))?
                    .label(&s.name)
                    .legend(move |(a, b)| PathElement::new(vec![(a, b), (a + 18, b)], style));
            }
            Source::Paper => {
                let style = RED.stroke_width(2);
                chart
                    .draw_series(points.iter().map(|&p| Cross::new(p, 6, style)))?
                    .label(&s.name)
                    .legend(move |(a, b)| Cross::new((a + 9, b), 5, style));
                if points.len() > 1 {
                    chart.draw_series(DashedLineSeries::new(points, 3, 5, RED.mix(0.5).stroke_width(1)))?;
                }
            }
        }
    }
    legend(&mut chart)
}

/// `ys` raised so that the legend, in the upper left, covers no data: its rows take their
/// share of the plot's height above the highest value.
fn above_legend(ys: std::ops::Range<f64>, rows: usize) -> std::ops::Range<f64> {
    let plot_height = f64::from(SIZE.1) - 64.0;
    let share = ((rows as f64 * 17.0 + 18.0) / plot_height).min(0.6);
    ys.start..ys.start + (ys.end - ys.start) / (1.0 - share)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn legend<'a>(chart: &mut Chart<'a, 'a>) -> Drawn {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

/// How many ticks an axis gets: one a decade on a log axis (so that they fall on 1, 10, 100
/// rather than between), plotters' default else.
fn labels(axis: &Axis, range: &std::ops::Range<f64>) -> usize {
    match axis.log {
        true => ((range.end - range.start).ceil() as usize + 1).clamp(2, 12),
        false => 10,
    }
}

fn axis_label(axis: &Axis) -> String {
    match axis.log {
        true => format!("{} (log)", axis.label),
        false => axis.label.clone(),
    }
}

type BarSeries = (Source, String, Vec<Option<f64>>);

fn bars(root: &Area, categories: &[String], y: &Axis, series: &[BarSeries]) -> Drawn {
    let values = series.iter().flat_map(|(_, _, v)| v.iter().flatten().filter_map(|&v| on(y, v)));
    let mut ys = above_legend(range(values, y.log, true), series.len());
    if y.log {
        // Bars rise from the bottom of a log axis.
        ys.start = ys.start.floor();
    }
    let n = categories.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), ys.clone())?;
    let name = |v: &f64| {
        let i = v.round();
        match (v - i).abs() < 1e-6 && i >= 0.0 {
            true => categories.get(i as usize).cloned().unwrap_or_default(),
            false => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .y_labels(labels(y, &ys))
        .x_label_formatter(&name)
        .y_desc(axis_label(y))
        .y_label_formatter(&|v| tick(y, *v))
        .draw()?;
    let width = 0.8 / series.len().max(1) as f64;
    let mut vouch = VOUCH.iter().cycle();
    let mut baseline = BASELINES.iter().cycle();
    let mut paper = PAPERS.iter().cycle();
    for (k, (source, label, values)) in series.iter().enumerate() {
        let color = match source {
            Source::Vouch => *vouch.next().unwrap_or(&BLUE),
            Source::Baseline => *baseline.next().unwrap_or(&GREY_600),
            Source::Paper => *paper.next().unwrap_or(&ORANGE_700),
        };
        let left = |i: usize| i as f64 - 0.4 + k as f64 * width;
        let drawn = values.iter().enumerate().filter_map(|(i, v)| Some((i, on(y, (*v)?)?)));
        let rects =
            drawn.map(|(i, v)| Rectangle::new([(left(i), ys.start), (left(i) + width * 0.92, v)], color.filled()));
        chart
            .draw_series(rects)?
            .label(label)
            .legend(move |(a, b)| Rectangle::new([(a, b - 5), (a + 12, b + 5)], color.filled()));
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(body: Body) -> Figure {
        Figure { id: "t", paper: "P", title: "t".into(), body, note: String::new() }
    }

    #[test]
    fn a_line_figure_draws_each_series_and_skips_what_a_log_axis_cannot_show() {
        let series = vec![
            Series::new(Source::Vouch, "vouch", vec![(1.0, 2.0), (10.0, 20.0), (100.0, 0.0)]),
            Series::new(Source::Baseline, "raw", vec![(1.0, 4.0), (100.0, 40.0)]),
            Series::new(Source::Paper, "paper", vec![(10.0, 30.0)]),
        ];
        let body = Body::Lines { x: Axis::log("blocks"), y: Axis::log("s"), series };
        let svg = svg(&figure(body)).unwrap().unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        for label in ["vouch", "raw", "paper", "blocks (log)"] {
            assert!(svg.contains(label), "{label} missing");
        }
        assert!(svg.contains("<polyline"), "no line drawn");
    }

    #[test]
    fn a_bar_figure_names_its_categories_and_a_table_is_no_plot() {
        let series = vec![
            (Source::Vouch, "vouch".into(), vec![Some(3.0), None]),
            (Source::Paper, "paper".into(), vec![Some(5.0), Some(1.0)]),
        ];
        let body = Body::Bars { categories: vec!["sign".into(), "verify".into()], y: Axis::linear("ms"), series };
        let svg = svg(&figure(body)).unwrap().unwrap();
        assert!(svg.contains("sign") && svg.contains("verify"));
        assert!(svg.matches("<rect").count() >= 4, "three bars, a background, a legend: {svg}");
        let table = Body::Table { header: vec!["a".into()], rows: vec![vec!["1".into()]] };
        assert!(super::svg(&figure(table)).unwrap().is_none());
    }

    #[test]
    fn ticks_read_as_values() {
        assert_eq!(tick(&Axis::log("x"), 3.0), "1000");
        assert_eq!(tick(&Axis::log("x"), -0.5), "0.316");
        assert_eq!(tick(&Axis::linear("x"), 2.5), "2.5");
        assert_eq!(tick(&Axis::linear("x"), 12.0), "12");
        assert_eq!(tick(&Axis::linear("x"), 250_000.0), "250k");
        assert_eq!(tick(&Axis::linear("x"), 0.0), "0");
    }
}
