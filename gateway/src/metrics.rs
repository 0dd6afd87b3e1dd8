//! The gateway's metrics, in Prometheus' text format on `GET /metrics` of the metrics
//! listener: requests and their latency, verification failures by kind, background audits,
//! and the portal cache's hits and misses; and what the status page ([`crate::status`]) on
//! the same listener shows of them.

use crate::status::{RoundSummary, Status};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use vouch_client::Client;

type Labels = Vec<(&'static str, String)>;

/// Every figure the gateway exports; shared by the S3 service, the audits and the scraper.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    latency: Family<Labels, Histogram, fn() -> Histogram>,
    violations: Family<Labels, Counter>,
    audits: Family<Labels, Counter>,
    last_audit_failures: Gauge,
    last_audit_time: Gauge,
    connections: Gauge,
    answered: AtomicU64,
    status: Mutex<Status>,
    /// The client whose portal cache is shown; `None` in group mode.
    cached: Option<Arc<Client>>,
}

fn latency_histogram() -> Histogram {
    // 100 µs to about 100 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

impl Metrics {
    /// The figures of a gateway over `client`'s own namespace, with its portal cache's.
    pub fn new(client: Arc<Client>) -> Metrics {
        Metrics::with_cache(Some(client))
    }

    /// The figures of a group gateway: no portal cache (every read is checked against the
    /// group's history), no audits.
    pub fn without_cache() -> Metrics {
        Metrics::with_cache(None)
    }

    fn with_cache(client: Option<Arc<Client>>) -> Metrics {
        let mut registry = Registry::with_prefix("vouch_gateway");
        let requests = Family::<Labels, Counter>::default();
        let latency = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let violations = Family::<Labels, Counter>::default();
        let audits = Family::<Labels, Counter>::default();
        let (last_audit_failures, last_audit_time) = (Gauge::default(), Gauge::default());
        let connections = Gauge::default();
        registry.register("requests", "S3 requests answered, by method and HTTP status", requests.clone());
        registry.register("request_seconds", "Time to an S3 request's response headers, by method", latency.clone());
        registry.register(
            "verification_failures",
            "Provider answers that failed verification, by violation kind",
            violations.clone(),
        );
        registry.register("audits", "Background audits, by kind (pdp, por) and result", audits.clone());
        registry.register(
            "last_audit_failures",
            "Failed checks in the last background audit round",
            last_audit_failures.clone(),
        );
        registry.register(
            "last_audit_timestamp_seconds",
            "When the last background audit round ended (Unix time)",
            last_audit_time.clone(),
        );
        registry.register("connections", "S3 connections open", connections.clone());
        if let Some(client) = &client {
            registry.register_collector(Box::new(CacheCollector(client.clone())));
        }
        Metrics {
            registry,
            requests,
            latency,
            violations,
            audits,
            last_audit_failures,
            last_audit_time,
            connections,
            answered: AtomicU64::new(0),
            status: Mutex::new(Status::new()),
            cached: client,
        }
    }

    /// A request answered: its method's label is one of a fixed few ([`method_label`]), so
    /// that no client can grow the metrics without bound with methods of its own.
    pub fn request(&self, method: &http::Method, status: u16, seconds: f64) {
        let method = method_label(method);
        self.requests.get_or_create(&vec![("method", method.to_string()), ("status", status.to_string())]).inc();
        self.latency.get_or_create(&vec![("method", method.to_string())]).observe(seconds);
        self.answered.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection opened (`1`) or closed (`-1`).
    pub(crate) fn connections(&self, change: i64) {
        self.connections.inc_by(change);
    }

    pub fn violation(&self, kind: &str) {
        self.violations.get_or_create(&vec![("kind", kind.to_string())]).inc();
        self.status().violation(kind);
    }

    pub fn audit(&self, kind: &'static str, passed: bool) {
        let result = if passed { "passed" } else { "failed" };
        self.audits.get_or_create(&vec![("kind", kind.to_string()), ("result", result.to_string())]).inc();
    }

    /// An audit round ended (at `round.time`).
    pub fn audit_round(&self, round: RoundSummary) {
        self.last_audit_failures.set(round.failures as i64);
        self.last_audit_time.set(round.time as i64);
        self.status().round(round);
    }

    /// Samples the portal cache's counters for the status page's plot.
    pub fn sample_cache(&self) {
        if let Some(client) = &self.cached {
            let stats = client.cache().stats();
            self.status().sample(stats.hits, stats.misses);
        }
    }

    /// The status page (HTML).
    pub fn status_page(&self) -> String {
        let cache = self.cached.as_ref().map(|client| {
            let stats = client.cache().stats();
            (stats.hits, stats.misses, stats.bytes, stats.capacity)
        });
        self.status().page(cache, self.answered.load(Ordering::Relaxed), self.connections.get())
    }

    fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The text a scrape gets.
    pub fn render(&self) -> String {
        let mut text = String::new();
        match prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            Ok(()) => text,
            Err(e) => format!("# the metrics could not be written: {e}\n"),
        }
    }
}

/// `method` as a metric label: the methods S3 uses, and `other` for any else.
pub fn method_label(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "GET",
        http::Method::HEAD => "HEAD",
        http::Method::PUT => "PUT",
        http::Method::POST => "POST",
        http::Method::DELETE => "DELETE",
        http::Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The portal cache's figures, read from the client at each scrape.
#[derive(Debug)]
struct CacheCollector(Arc<Client>);

impl Collector for CacheCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.cache().stats();
        let counters = [
            ("cache_hits", "Reads, lookups and listings answered from the portal cache", stats.hits),
            ("cache_misses", "Reads, lookups and listings that went to the provider", stats.misses),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)?;
        }
        let gauges = [
            ("cache_bytes", "Bytes of verified blocks the portal cache holds", stats.bytes),
            ("cache_capacity_bytes", "The most the portal cache holds", stats.capacity),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value as i64);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}
