//! `vouch bench report`: every suite run once, then each paper's figures redrawn from the
//! measurements beside the same run's baselines and the paper's own values, as one HTML page
//! with its SVG plots.
//!
//! What it writes under `--out DIR`:
//! * `DIR/index.html`: every figure inline (plain SVG, no script), the values behind each plot,
//!   and each suite's targets;
//! * `DIR/FIGURE.svg`: each plot on its own (for docs and slides);
//! * `DIR/data/SUITE.json`: each suite's output as `vouch bench SUITE --json` prints it, from
//!   which `--from DIR/data` draws the page again without measuring.
//!
//! The figures read the suites' JSON by field name; a figure whose fields are missing is left
//! out, named on the page and in the command's error, never drawn empty.

mod dpdp;
mod figure;
mod flexdpdp;
mod iris;
mod page;
mod plot;
mod por;
mod vicos;

pub use figure::{Body, Figure, Missing, Source};

use crate::measure::{Options, SelfCheckFailed};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The suites the report runs, in this order (the gateway's last: it takes longest).
pub const SUITES: [&str; 6] = ["flexlist", "pdp", "por", "e2e", "aip", "gateway"];

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("vouch bench {suite}: {source}")]
    Suite { suite: &'static str, source: SelfCheckFailed },
    #[error("cannot read {path}: {source} (write it with `vouch bench report --out DIR`, then pass DIR/data)")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a suite's JSON output: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot draw {figure}: {message}")]
    Plot { figure: &'static str, message: String },
}

/// What the report wrote.
#[derive(Debug)]
pub struct Written {
    pub index: PathBuf,
    /// Figures drawn, with how many values from this run each plots.
    pub figures: Vec<(&'static str, usize)>,
    /// Figures left out, each with the data it lacked.
    pub missing: Vec<Missing>,
}

/// Runs every suite (or reads their saved output from `from`) and writes the page to `out`.
pub fn run(
    options: Options,
    from: Option<&Path>,
    out: &Path,
    mut progress: impl FnMut(&str),
) -> Result<Written, ReportError> {
    let suites = match from {
        Some(dir) => read(dir)?,
        None => measure(options, &mut progress)?,
    };
    let data = out.join("data");
    std::fs::create_dir_all(&data).map_err(|source| ReportError::Write { path: data.clone(), source })?;
    for (suite, value) in &suites {
        let pretty = serde_json::to_string_pretty(value).expect("a suite's output is plain data");
        write(&data.join(format!("{suite}.json")), &pretty)?;
    }
    progress("drawing the figures");
    let quick = suites.iter().any(|(_, v)| v.get("quick").and_then(Value::as_bool) == Some(true));
    let (figures, missing) = figures(&suites);
    let mut drawn = Vec::new();
    for figure in figures {
        let svg = plot::svg(&figure).map_err(|message| ReportError::Plot { figure: figure.id, message })?;
        if let Some(svg) = &svg {
            write(&out.join(format!("{}.svg", figure.id)), svg)?;
        }
        drawn.push((figure, svg));
    }
    let when = std::time::SystemTime::now();
    let run = page::Run {
        quick,
        when: httpdate::fmt_http_date(when),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        suites: &suites,
        missing: &missing.iter().map(ToString::to_string).collect::<Vec<_>>(),
    };
    let index = out.join("index.html");
    write(&index, &page::html(&run, &drawn))?;
    let figures = drawn.iter().map(|(f, _)| (f.id, f.measured_values())).collect();
    Ok(Written { index, figures, missing })
}

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Write { path: path.into(), source })
}

/// Each suite run in turn, its report as the JSON `vouch bench SUITE --json` prints.
fn measure(options: Options, progress: &mut impl FnMut(&str)) -> Result<Vec<(&'static str, Value)>, ReportError> {
    let mut out = Vec::new();
    for suite in SUITES {
        progress(&format!("suite {suite}"));
        let failed = |source| ReportError::Suite { suite, source };
        let value = match suite {
            "flexlist" => json(crate::flexlist::run(options, &mut *progress).map_err(failed)?),
            "pdp" => json(crate::pdp::run(options, &mut *progress).map_err(failed)?),
            "por" => json(crate::por::run(options, &mut *progress).map_err(failed)?),
            "e2e" => json(crate::e2e::run(options, None, &mut *progress).map_err(failed)?),
            "aip" => json(crate::aip::run(options, &mut *progress).map_err(failed)?),
            _ => json(crate::gateway::run(options, &mut *progress).map_err(failed)?),
        };
        out.push((suite, value));
    }
    Ok(out)
}

fn json(report: impl serde::Serialize) -> Value {
    serde_json::to_value(report).expect("a suite's report is plain data")
}

/// The saved outputs, `DIR/SUITE.json` for each suite.
fn read(dir: &Path) -> Result<Vec<(&'static str, Value)>, ReportError> {
    SUITES
        .iter()
        .map(|&suite| {
            let path = dir.join(format!("{suite}.json"));
            let text =
                std::fs::read_to_string(&path).map_err(|source| ReportError::Read { path: path.clone(), source })?;
            let value = serde_json::from_str(&text).map_err(|source| ReportError::Parse { path, source })?;
            Ok((suite, value))
        })
        .collect()
}

/// Every paper's figures, in the papers' order; those whose data is missing apart.
fn figures(suites: &[(&'static str, Value)]) -> (Vec<Figure>, Vec<Missing>) {
    let suite = |name: &str| suites.iter().find(|(s, _)| *s == name).map(|(_, v)| v).unwrap_or(&Value::Null);
    let data = Suites { suite: &suite };
    let all = [
        flexdpdp::figures(&data),
        dpdp::figures(&data),
        por::figures(&data),
        vicos::figures(&data),
        iris::figures(&data),
    ];
    let mut drawn = Vec::new();
    let mut missing = Vec::new();
    for result in all.into_iter().flatten() {
        match result {
            Ok(figure) if figure.measured_values() > 0 => drawn.push(figure),
            Ok(figure) => missing.push(Missing { figure: figure.id, suite: "any", what: "measured value".into() }),
            Err(m) => missing.push(m),
        }
    }
    (drawn, missing)
}

/// The suites' outputs, as the figures read them.
pub(crate) struct Suites<'a> {
    suite: &'a dyn Fn(&str) -> &'a Value,
}

impl<'a> Suites<'a> {
    /// `suite`'s output, read for `figure`.
    pub(crate) fn read(&self, figure: &'static str, suite: &'static str) -> figure::Reading<'a> {
        figure::Reading { figure, suite, value: (self.suite)(suite) }
    }
}
