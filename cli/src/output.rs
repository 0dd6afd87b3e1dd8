//! What commands print: text for people, one JSON object with `--json`, progress on stderr.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;

#[derive(Clone, Copy, Debug)]
pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints `value` as JSON, or `text()` for people.
    pub fn print<T: Serialize>(&self, value: &T, text: impl FnOnce() -> String) {
        if self.json {
            println!("{}", serde_json::to_string_pretty(value).expect("serialisable"));
        } else {
            let text = text();
            if !text.is_empty() {
                println!("{text}");
            }
        }
    }

    /// A byte-progress bar on stderr; hidden when stderr is not a terminal.
    pub fn bar(&self, total: Option<u64>, what: &str) -> ProgressBar {
        let target =
            if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(total, target);
        let style = ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_string());
        bar
    }
}

/// Bytes as a short human figure.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
