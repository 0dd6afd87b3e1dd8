//! The status page on the metrics listener (`GET /` or `/status`): what an operator would
//! rather look at than read in logs or scrape. The audit rounds of the last hours, the repairs
//! they made, the provider's answers that failed verification by kind, and the portal cache's
//! hit rate over time (sampled every [`SAMPLE_EVERY`]), as one small HTML page with an inline
//! SVG plot and no script, which refreshes itself.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;
use std::time::{Duration, Instant};

/// How often the cache's counters are sampled for the plot.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Samples kept: an hour.
const SAMPLES: usize = 360;
/// Audit rounds kept.
const ROUNDS: usize = 48;

/// One audit round, as the page shows it.
#[derive(Clone, Debug, Default)]
pub struct RoundSummary {
    /// When it ended (Unix seconds), and how long it took.
    pub time: u64,
    pub seconds: f64,
    pub objects_passed: usize,
    pub objects_failed: usize,
    /// PoR parts verified and failed; `None` without a PoR log.
    pub por_parts: Option<(usize, usize)>,
    pub repairs: usize,
    pub failures: u64,
}

/// What the page shows, kept beside the Prometheus figures.
#[derive(Debug)]
pub(crate) struct Status {
    started: Instant,
    rounds: VecDeque<RoundSummary>,
    repairs: u64,
    violations: BTreeMap<String, u64>,
    /// (seconds since start, cache hits, cache misses), cumulative.
    samples: VecDeque<(u64, u64, u64)>,
}

impl Status {
    pub(crate) fn new() -> Status {
        Status {
            started: Instant::now(),
            rounds: VecDeque::new(),
            repairs: 0,
            violations: BTreeMap::new(),
            samples: VecDeque::new(),
        }
    }

    pub(crate) fn round(&mut self, round: RoundSummary) {
        self.repairs += round.repairs as u64;
        if self.rounds.len() == ROUNDS {
            self.rounds.pop_front();
        }
        self.rounds.push_back(round);
    }

    pub(crate) fn violation(&mut self, kind: &str) {
        *self.violations.entry(kind.to_string()).or_default() += 1;
    }

    pub(crate) fn sample(&mut self, hits: u64, misses: u64) {
        if self.samples.len() == SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back((self.started.elapsed().as_secs(), hits, misses));
    }

    /// The page; `cache` is the cache's figures now (hits, misses, bytes, capacity), `None` for
    /// a gateway without a cache (group mode).
    pub(crate) fn page(&self, cache: Option<(u64, u64, u64, u64)>, requests: u64, connections: i64) -> String {
        let mut html = String::with_capacity(8 << 10);
        html.push_str(
            "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"10\">\
             <title>vouch gateway status</title><style>body{font:14px sans-serif;margin:2em;max-width:60em}\
             table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}\
             th{background:#eee}.bad{color:#b00;font-weight:bold}.ok{color:#070}</style></head><body>",
        );
        let up = self.started.elapsed().as_secs();
        let _ = write!(
            html,
            "<h1>vouch gateway</h1><p>Up {}; {requests} requests answered; {connections} connections open.</p>",
            duration(up)
        );
        self.violations_table(&mut html);
        self.rounds_table(&mut html);
        self.cache_section(&mut html, cache);
        html.push_str("<p><a href=\"/metrics\">/metrics</a> has every figure for Prometheus.</p></body></html>\n");
        html
    }

    fn violations_table(&self, html: &mut String) {
        html.push_str("<h2 id=\"violations\">Verification failures</h2>");
        if self.violations.is_empty() {
            html.push_str("<p class=\"ok\">None: every answer of the provider verified.</p>");
            return;
        }
        let total: u64 = self.violations.values().sum();
        let _ = write!(
            html,
            "<p class=\"bad\">{total} answers of the provider failed verification: it lied, or its storage \
             is damaged. Each reached the application as VouchIntegrityViolation.</p>\
             <table><tr><th>kind</th><th>count</th></tr>"
        );
        for (kind, count) in &self.violations {
            let _ = write!(html, "<tr><td>{}</td><td>{count}</td></tr>", escape(kind));
        }
        html.push_str("</table>");
    }

    fn rounds_table(&self, html: &mut String) {
        let _ = write!(
            html,
            "<h2 id=\"audits\">Audit rounds</h2><p>{} rounds shown (the last {ROUNDS} are kept); {} repairs \
             made since the start.</p>",
            self.rounds.len(),
            self.repairs
        );
        if self.rounds.is_empty() {
            html.push_str("<p>No round yet (background audits are configured in <code>[audit]</code>).</p>");
            return;
        }
        html.push_str(
            "<table><tr><th>ended (UTC)</th><th>seconds</th><th>objects passed</th><th>objects failed</th>\
             <th>PoR parts verified</th><th>PoR parts failed</th><th>repairs</th><th>result</th></tr>",
        );
        for r in self.rounds.iter().rev() {
            let (por_ok, por_bad) = match r.por_parts {
                Some((ok, bad)) => (ok.to_string(), bad.to_string()),
                None => ("-".into(), "-".into()),
            };
            let result = match r.failures {
                0 => "<span class=\"ok\">passed</span>".to_string(),
                n => format!("<span class=\"bad\">{n} failed</span>"),
            };
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{por_ok}</td><td>{por_bad}</td>\
                 <td>{}</td><td>{result}</td></tr>",
                httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(r.time)),
                r.seconds,
                r.objects_passed,
                r.objects_failed,
                r.repairs
            );
        }
        html.push_str("</table>");
    }

    fn cache_section(&self, html: &mut String, cache: Option<(u64, u64, u64, u64)>) {
        html.push_str("<h2 id=\"cache\">Portal cache</h2>");
        let Some((hits, misses, bytes, capacity)) = cache else {
            html.push_str("<p>None in group mode: every read is checked against the group's history.</p>");
            return;
        };
        let rate = |h: u64, m: u64| if h + m == 0 { None } else { Some(h as f64 / (h + m) as f64) };
        let _ = write!(
            html,
            "<p>{hits} hits, {misses} misses ({}); {} of {} held.</p>",
            rate(hits, misses).map_or("no reads yet".to_string(), |r| format!("{:.1}% hit rate", r * 100.0)),
            mib(bytes),
            mib(capacity)
        );
        // The hit rate of each interval between two samples.
        let points: Vec<(u64, f64)> = self
            .samples
            .iter()
            .zip(self.samples.iter().skip(1))
            .filter_map(|(a, b)| rate(b.1 - a.1.min(b.1), b.2 - a.2.min(b.2)).map(|r| (b.0, r)))
            .collect();
        html.push_str(&hit_rate_plot(&points, SAMPLE_EVERY.as_secs()));
    }
}

/// An SVG plot of the hit rate (0 to 1) at each time (seconds since the start).
fn hit_rate_plot(points: &[(u64, f64)], every: u64) -> String {
    let (w, h, pad) = (600.0, 160.0, 30.0);
    let mut svg = format!(
        "<svg id=\"hit-rate\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\"><rect width=\"{w}\" height=\"{h}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\
         <text x=\"4\" y=\"{pad}\" font-size=\"11\">100%</text><text x=\"4\" y=\"{}\" font-size=\"11\">0%</text>",
        h - pad + 4.0
    );
    if points.is_empty() {
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\">no reads in an interval of {every} s yet</text></svg>",
            w / 3.0,
            h / 2.0
        );
        return svg;
    }
    let (first, last) = (points[0].0 as f64, points[points.len() - 1].0 as f64);
    let span = (last - first).max(1.0);
    let x = |t: u64| pad + 10.0 + (t as f64 - first) / span * (w - 2.0 * pad - 10.0);
    let y = |r: f64| h - pad - r * (h - 2.0 * pad);
    let path: Vec<String> = points.iter().map(|&(t, r)| format!("{:.1},{:.1}", x(t), y(r))).collect();
    let _ = write!(
        svg,
        "<polyline fill=\"none\" stroke=\"#06c\" stroke-width=\"2\" points=\"{}\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\">hit rate per {every} s, the last {} intervals</text></svg>",
        path.join(" "),
        pad + 10.0,
        h - 8.0,
        points.len()
    );
    svg
}

fn duration(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{:.1} h", s as f64 / 3600.0),
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Text for HTML (violation kinds are fixed names; escaped all the same).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_shows_rounds_repairs_violations_and_the_hit_rate() {
        let mut status = Status::new();
        let empty = status.page(Some((0, 0, 0, 1 << 20)), 0, 0);
        assert!(empty.contains("No round yet") && empty.contains("None: every answer"), "{empty}");
        assert!(empty.contains("no reads in an interval"));
        status.violation("altered-block");
        status.violation("altered-block");
        status.violation("hidden-name");
        status.round(RoundSummary {
            time: 1_700_000_000,
            objects_passed: 3,
            por_parts: Some((4, 0)),
            ..Default::default()
        });
        status.round(RoundSummary {
            time: 1_700_000_060,
            objects_passed: 2,
            objects_failed: 1,
            por_parts: Some((3, 1)),
            repairs: 2,
            failures: 2,
            ..Default::default()
        });
        for (hits, misses) in [(0, 0), (5, 5), (15, 5), (15, 5)] {
            status.sample(hits, misses);
        }
        let page = status.page(Some((15, 5, 3 << 20, 8 << 20)), 42, 1);
        assert!(page.contains("<td>altered-block</td><td>2</td>") && page.contains("<td>hidden-name</td><td>1</td>"));
        assert!(page.contains("3 answers of the provider failed verification"), "{page}");
        assert!(page.contains("2 rounds shown") && page.contains("2 repairs made"), "{page}");
        assert!(page.contains("2 failed") && page.contains("Tue, 14 Nov 2023 22:13:20 GMT"), "{page}");
        assert!(page.contains("75.0% hit rate") && page.contains("42 requests"), "{page}");
        // Two intervals had reads (50%, then 100%); the last had none and is not drawn.
        let plot = &page[page.find("<svg").unwrap()..page.find("</svg>").unwrap()];
        let points = plot.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(points.split(' ').count(), 2, "{plot}");
        assert!(status.page(None, 0, 0).contains("None in group mode"));
        assert_eq!(escape("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
    }
}
