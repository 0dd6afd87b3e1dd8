//! What the report shows: a paper's figure or table redrawn from this run's measurements,
//! with the same run's baseline and the paper's own values beside them.

use serde_json::Value;

/// One figure of a paper, as the report redraws it.
#[derive(Clone, Debug)]
pub struct Figure {
    /// A name for files and anchors: `flexdpdp-fig6`.
    pub id: &'static str,
    /// The paper: `FlexDPDP`, `DPDP`, `PoR`, `VICOS`, `Iris`.
    pub paper: &'static str,
    /// `Fig. 6: ...` or `Table 2: ...`, with what vouch measured in its place.
    pub title: String,
    pub body: Body,
    /// What is compared, and where vouch's measurement differs from the paper's setup.
    pub note: String,
}

/// How a figure is drawn.
#[derive(Clone, Debug)]
pub enum Body {
    /// Curves over a numeric x.
    Lines { x: Axis, y: Axis, series: Vec<Series> },
    /// Grouped bars: one group per category, one bar per series (a value per category,
    /// `None` where a series has none).
    Bars { categories: Vec<String>, y: Axis, series: Vec<(Source, String, Vec<Option<f64>>)> },
    /// A table: its header, then rows of cells.
    Table { header: Vec<String>, rows: Vec<Vec<String>> },
}

#[derive(Clone, Debug)]
pub struct Axis {
    pub label: String,
    pub log: bool,
}

impl Axis {
    pub fn linear(label: &str) -> Self {
        Axis { label: label.into(), log: false }
    }

    pub fn log(label: &str) -> Self {
        Axis { label: label.into(), log: true }
    }
}

/// Whose values a series carries: they are drawn apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Measured on vouch in this run.
    Vouch,
    /// A baseline measured in the same run (raw hashing, a well-known crate, raw S3).
    Baseline,
    /// The paper's figure, as its text or tables give it.
    Paper,
}

#[derive(Clone, Debug)]
pub struct Series {
    pub source: Source,
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(source: Source, name: &str, points: Vec<(f64, f64)>) -> Self {
        Series { source, name: name.into(), points }
    }
}

impl Figure {
    /// How many values the figure plots from this run (vouch's and the baselines'): a figure
    /// with none has nothing to show.
    pub fn measured_values(&self) -> usize {
        let measured = |source: &Source| *source != Source::Paper;
        match &self.body {
            Body::Lines { series, .. } => series.iter().filter(|s| measured(&s.source)).map(|s| s.points.len()).sum(),
            Body::Bars { series, .. } => series
                .iter()
                .filter(|(source, ..)| measured(source))
                .map(|(_, _, values)| values.iter().flatten().count())
                .sum(),
            Body::Table { rows, .. } => rows.len(),
        }
    }
}

/// A measurement the report needs and the suite's output does not have (a field renamed, a
/// suite skipped): the figure is left out and the command says why.
#[derive(Debug, thiserror::Error)]
#[error("{figure}: no {what} in the {suite} suite's output")]
pub struct Missing {
    pub figure: &'static str,
    pub suite: &'static str,
    pub what: String,
}

/// One suite's output as read by a figure: fields by name, with what is missing reported
/// against the figure that needed it.
#[derive(Clone, Copy)]
pub struct Reading<'a> {
    pub figure: &'static str,
    pub suite: &'static str,
    pub value: &'a Value,
}

impl<'a> Reading<'a> {
    fn missing(&self, what: &str) -> Missing {
        Missing { figure: self.figure, suite: self.suite, what: what.into() }
    }

    /// The object at `key`.
    pub fn at(&self, key: &str) -> Result<Reading<'a>, Missing> {
        let value = self.value.get(key).filter(|v| !v.is_null()).ok_or_else(|| self.missing(key))?;
        Ok(Reading { value, ..*self })
    }

    /// The number at `key`.
    pub fn num(&self, key: &str) -> Result<f64, Missing> {
        self.value.get(key).and_then(Value::as_f64).ok_or_else(|| self.missing(key))
    }

    /// The text at `key`.
    pub fn text(&self, key: &str) -> Result<&'a str, Missing> {
        self.value.get(key).and_then(Value::as_str).ok_or_else(|| self.missing(key))
    }

    /// The rows of the list at `key` (none is an error: a figure needs data).
    pub fn rows(&self, key: &str) -> Result<Vec<Reading<'a>>, Missing> {
        let list = self.value.get(key).and_then(Value::as_array).filter(|l| !l.is_empty());
        let list = list.ok_or_else(|| self.missing(&format!("rows of {key}")))?;
        Ok(list.iter().map(|value| Reading { value, ..*self }).collect())
    }

    /// `(x, y)` of each row of `key`.
    pub fn points(&self, key: &str, x: &str, y: &str) -> Result<Vec<(f64, f64)>, Missing> {
        self.rows(key)?.iter().map(|r| Ok((r.num(x)?, r.num(y)?))).collect()
    }
}

/// `(x, y)` of each row, `y` given by `f` (a unit converted, two fields combined).
pub fn points_by(
    rows: &[Reading],
    x: &str,
    f: impl Fn(&Reading) -> Result<f64, Missing>,
) -> Result<Vec<(f64, f64)>, Missing> {
    rows.iter().map(|r| Ok((r.num(x)?, f(r)?))).collect()
}

/// One bar of each group of [`bars_of`]: whose value, its name, and the value of a row.
pub type Column<'f> = (Source, &'f str, &'f dyn Fn(&Reading) -> Result<f64, Missing>);

/// Bars with a group per row of `rows`, named by `category`, and a bar per column.
pub fn bars_of(
    rows: &[Reading],
    category: &dyn Fn(&Reading) -> Result<String, Missing>,
    y: Axis,
    columns: &[Column],
) -> Result<Body, Missing> {
    let categories = rows.iter().map(category).collect::<Result<_, _>>()?;
    let mut series = Vec::new();
    for (source, name, value) in columns {
        let values = rows.iter().map(|r| value(r).map(Some)).collect::<Result<Vec<_>, _>>()?;
        series.push((*source, name.to_string(), values));
    }
    Ok(Body::Bars { categories, y, series })
}

/// One value as a level line across the x range of `over`: a paper's single figure where vouch
/// measures several points, or a baseline measured once.
pub fn level(source: Source, name: &str, value: f64, over: &[(f64, f64)]) -> Series {
    let lo = over.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = over.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let points = match lo.is_finite() {
        true => vec![(lo, value), (hi, value)],
        false => Vec::new(),
    };
    Series::new(source, name, points)
}
