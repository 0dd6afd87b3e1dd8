//! The report's page: one HTML file with every figure inline (plain SVG, no script), the
//! values behind each plot as a table, and each suite's targets met or missed.

use super::figure::{Body, Figure, Source};
use serde_json::Value;
use std::fmt::Write;

/// What the page says about the run itself.
pub struct Run<'a> {
    pub quick: bool,
    pub when: String,
    pub cores: usize,
    /// Each suite's output, by name, in the order run.
    pub suites: &'a [(&'static str, Value)],
    /// Figures left out for missing data, with why.
    pub missing: &'a [String],
}

pub fn html(run: &Run, figures: &[(Figure, Option<String>)]) -> String {
    let mut page = String::from(HEAD);
    let size = if run.quick { "quick (--quick: small sizes, few runs)" } else { "full" };
    let _ = write!(
        page,
        "<h1>vouch: the papers' figures, measured</h1>\n<p>Run {} on {} cores, {size}. Each figure sets what \
         vouch measured (solid, round markers) beside a baseline measured in the same run (dashed, grey) and \
         the paper's own figure where its text gives one (red crosses). The papers ran on other machines, \
         with other sizes: read the ratio to the same-run baseline first.</p>\n",
        esc(&run.when),
        run.cores
    );
    if !run.missing.is_empty() {
        page += "<p class=\"missing\">Left out for missing data:</p><ul>";
        for m in run.missing {
            let _ = write!(page, "<li>{}</li>", esc(m));
        }
        page += "</ul>\n";
    }
    page += "<nav><ul>";
    for (figure, _) in figures {
        let _ = write!(page, "<li><a href=\"#{}\">{}: {}</a></li>", figure.id, figure.paper, esc(&figure.title));
    }
    page += "</ul></nav>\n";
    let mut paper = "";
    for (figure, svg) in figures {
        if figure.paper != paper {
            paper = figure.paper;
            let _ = writeln!(page, "<h2>{paper}</h2>");
        }
        section(&mut page, figure, svg.as_deref());
    }
    page += "<h2>Targets</h2>\n";
    for (suite, value) in run.suites {
        targets(&mut page, suite, value);
    }
    page += "</body>\n</html>\n";
    page
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<title>vouch bench report</title>\n<style>\nbody{font-family:sans-serif;max-width:960px;margin:2em auto;\
padding:0 1em;color:#222}\nfigure{margin:1.5em 0;border-top:1px solid #ddd;padding-top:.5em}\n\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\ntd,th{border:1px solid #ccc;padding:2px 6px;\
text-align:right}\nth{background:#f4f4f4}\n.met{color:#060}.missed{color:#b00}.missing{color:#b00}\n\
svg{max-width:100%;height:auto}\n</style>\n</head>\n<body>\n";

fn section(page: &mut String, figure: &Figure, svg: Option<&str>) {
    let _ = write!(
        page,
        "<figure id=\"{}\" data-values=\"{}\">\n<h3>{}</h3>\n",
        figure.id,
        figure.measured_values(),
        esc(&figure.title)
    );
    if let Some(svg) = svg {
        let _ = writeln!(page, "<div class=\"plot\">{svg}</div>");
    }
    let _ = writeln!(page, "<figcaption>{}</figcaption>", esc(&figure.note));
    let (header, rows) = values(&figure.body);
    table(page, &header, &rows);
    page.push_str("</figure>\n");
}

/// The values behind a figure, as a table: x then one column per series; categories then one
/// column per series; or the table itself.
fn values(body: &Body) -> (Vec<String>, Vec<Vec<String>>) {
    match body {
        Body::Table { header, rows } => (header.clone(), rows.clone()),
        Body::Bars { categories, series, .. } => {
            let mut header = vec![String::new()];
            header.extend(series.iter().map(|(source, name, _)| labelled(*source, name)));
            let rows = categories
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let mut row = vec![c.clone()];
                    row.extend(series.iter().map(|(_, _, v)| v.get(i).copied().flatten().map(num).unwrap_or_default()));
                    row
                })
                .collect();
            (header, rows)
        }
        Body::Lines { x, series, .. } => {
            let mut xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            let mut header = vec![x.label.clone()];
            header.extend(series.iter().map(|s| labelled(s.source, &s.name)));
            let rows = xs
                .iter()
                .map(|&at| {
                    let mut row = vec![num(at)];
                    row.extend(
                        series
                            .iter()
                            .map(|s| s.points.iter().find(|p| p.0 == at).map(|p| num(p.1)).unwrap_or_default()),
                    );
                    row
                })
                .collect();
            (header, rows)
        }
    }
}

fn labelled(source: Source, name: &str) -> String {
    match source {
        Source::Vouch => name.to_string(),
        Source::Baseline => format!("{name} (baseline)"),
        Source::Paper => format!("{name} (paper)"),
    }
}

fn table(page: &mut String, header: &[String], rows: &[Vec<String>]) {
    page.push_str("<table><tr>");
    for h in header {
        let _ = write!(page, "<th>{}</th>", esc(h));
    }
    page.push_str("</tr>\n");
    for row in rows {
        page.push_str("<tr>");
        for cell in row {
            let _ = write!(page, "<td>{}</td>", esc(cell));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

/// A suite's targets, each met or missed, with the paper's figure beside it.
fn targets(page: &mut String, suite: &str, value: &Value) {
    let Some(list) = value.get("targets").and_then(Value::as_array) else { return };
    let _ = writeln!(page, "<h3>vouch bench {suite}</h3>");
    page.push_str("<table><tr><th>target</th><th>value</th><th>limit</th><th></th><th>paper</th></tr>\n");
    for t in list {
        let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let number = |k: &str| t.get(k).and_then(Value::as_f64).map(num).unwrap_or_default();
        let (class, verdict) = match t.get("met").and_then(Value::as_bool) {
            Some(true) => ("met", "met"),
            Some(false) => ("missed", "missed"),
            None => ("", "not measured here"),
        };
        let _ = writeln!(
            page,
            "<tr><td style=\"text-align:left\">{}</td><td>{} {}</td><td>{} {}</td><td class=\"{class}\">{verdict}</td><td>{}</td></tr>",
            esc(&text("name")),
            number("value"),
            esc(&text("unit")),
            esc(&text("op")),
            number("limit"),
            esc(&text("paper"))
        );
    }
    page.push_str("</table>\n");
}

/// A number in as many digits as it needs (four significant ones at most).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        return format!("{v:.0}");
    }
    let digits = match a {
        _ if a >= 1000.0 || a == 0.0 => 0,
        _ if a >= 100.0 => 1,
        _ if a >= 1.0 => 2,
        _ if a >= 0.01 => 4,
        _ => return format!("{v:.3e}"),
    };
    format!("{v:.digits$}")
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::figure::{Axis, Series};

    #[test]
    fn the_page_escapes_text_and_lists_each_value_under_its_series() {
        let series = vec![
            Series::new(Source::Vouch, "a<b", vec![(1.0, 2.0), (2.0, 3.5)]),
            Series::new(Source::Paper, "p", vec![(2.0, 4.0)]),
        ];
        let figure = Figure {
            id: "x-fig1",
            paper: "X",
            title: "Fig. 1 & all".into(),
            body: Body::Lines { x: Axis::linear("n"), y: Axis::linear("s"), series },
            note: "n".into(),
        };
        let suites = [(
            "x",
            serde_json::json!({"targets": [{"name": "t", "value": 1.0, "op": ">=", "limit": 2.0, "unit": "x", "met": false, "paper": null}]}),
        )];
        let run = Run { quick: true, when: "now".into(), cores: 2, suites: &suites, missing: &[] };
        let page = html(&run, &[(figure, Some("<svg></svg>".into()))]);
        assert!(page.contains("Fig. 1 &amp; all") && page.contains("a&lt;b"));
        assert!(page.contains("<tr><td>2</td><td>3.50</td><td>4</td></tr>"), "{page}");
        assert!(page.contains("data-values=\"2\""));
        assert!(page.contains("class=\"missed\">missed"));
    }
}
