//! `vouch gateway`'s configuration (TOML): where it listens and which access keys the local
//! applications sign their requests with (SigV4, headers or presigned URLs).
//!
//! ```toml
//! listen = "127.0.0.1:9000"
//! cache_mb = 256          # verified data the portal keeps (Iris Sec. 7.2); 0 turns it off
//! metrics_listen = "127.0.0.1:9100"   # GET /metrics (Prometheus); none by default
//! por = false             # store each object with retrievability (a PoR copy)
//! keep_replaced_secs = 30 # a replaced version stays readable this long (reads in flight)
//! tls_cert = "cert.pem"   # serve https:// (both or neither; `vouch tls-cert` makes a pair)
//! tls_key = "key.pem"
//! header_read_timeout_secs = 30 # a connection that sends no request head (or TLS handshake)
//!                         # in this long is closed, and an idle one after this long
//! max_connections = 512   # connections served at once; more wait to be accepted
//! body_idle_timeout_secs = 30 # a request body that pauses this long is refused
//! body_min_rate_kib = 16  # ... and one slower than this (KiB/s, on average) past that time
//! # group = "team"        # serve the VICOS group `team` (a membership in the state directory,
//! #                       # `vouch group init/join`) instead of this client's own namespace
//! [[keys]]
//! access_key = "AKIAEXAMPLE"
//! secret_key = "a long random secret"
//! [audit]                 # background audits; none without this table
//! every_secs = 3600
//! objects = 100           # objects a round challenges (possession), picked at random
//! blocks = 460            # blocks challenged per object
//! por_lambda = 128        # PoR challenge size per level (when objects have PoR copies)
//! repair_threshold = 1    # failed PoR parts at which the round repairs the log
//! reports = "audits"      # a JSON report per round goes here
//! ```

use serde::Deserialize;
use std::path::Path;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Address and port to listen on (loopback by default: the portal is on the user's side).
    #[serde(default = "default_listen")]
    pub listen: String,
    /// MiB of verified answers (lookups, listings, blocks) the portal keeps to serve reads
    /// without the provider (Iris Sec. 7.2); 0 turns the cache off.
    #[serde(default = "default_cache_mb")]
    pub cache_mb: u64,
    /// Where `GET /metrics` (Prometheus text) is served; not at all when absent. A port of
    /// its own, so that no bucket name is taken.
    #[serde(default)]
    pub metrics_listen: Option<String>,
    /// Objects are stored with retrievability: each gets a copy in the client's
    /// erasure-coded PoR log, audited and repaired by the background audits.
    #[serde(default)]
    pub por: bool,
    /// Seconds a replaced version stays readable before it is pruned, so that a long read
    /// that began before an overwrite still ends; 0 prunes it at once.
    #[serde(default = "default_keep_replaced_secs")]
    pub keep_replaced_secs: u64,
    /// Serve `https://` with this certificate chain and private key (PEM files).
    #[serde(default)]
    pub tls_cert: Option<std::path::PathBuf>,
    #[serde(default)]
    pub tls_key: Option<std::path::PathBuf>,
    /// Seconds a connection has to finish its TLS handshake, and then each request's head
    /// (and the wait for it: an idle connection is closed after this long), so that a client
    /// that connects and sends nothing, or a byte at a time, holds no connection for long.
    #[serde(default = "default_header_read_timeout_secs")]
    pub header_read_timeout_secs: u64,
    /// Connections served at once (on each listener); past it, the next connection is
    /// accepted when one ends, so that no client can exhaust the gateway's file descriptors
    /// (its provider connections need some).
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Seconds a request body (a put's, a part's) may pause; and the time it has before
    /// [`GatewayConfig::body_min_rate_kib`] counts. A body is read into a spool before any
    /// lock is taken, but it holds a connection and a spool as long as it trickles.
    #[serde(default = "default_body_idle_timeout_secs")]
    pub body_idle_timeout_secs: u64,
    /// KiB per second a request body must arrive at, on average, once its first
    /// `body_idle_timeout_secs` are over (a slower one is refused, RequestTimeout).
    #[serde(default = "default_body_min_rate_kib")]
    pub body_min_rate_kib: u64,
    /// Background audits; none when absent.
    #[serde(default)]
    pub audit: Option<AuditConfig>,
    /// Serve the VICOS group NAME (a membership in the state directory, `vouch group
    /// init/join`) instead of this client's own namespace: gateways that are members of one
    /// group serve one object store, each checking that the provider shows them all one
    /// history. `por` and `[audit]` apply to the own namespace and are refused with it;
    /// `cache_mb` does not apply (every read is checked against the group's history).
    #[serde(default)]
    pub group: Option<String>,
    /// Virtual-hosted-style addressing under this domain: a request to
    /// `BUCKET.<domain>` is for BUCKET (beside path style, `<domain>/BUCKET/KEY`, which every
    /// other host name is served as). Point `*.<domain>` at the gateway (a DNS wildcard, or
    /// `/etc/hosts` lines). Path style only when absent.
    #[serde(default)]
    pub virtual_host_domain: Option<String>,
    /// The applications' access keys; a request signed with any other is refused.
    pub keys: Vec<AccessKey>,
}

/// The background audits' schedule and sizes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Seconds between the starts of two rounds.
    pub every_secs: u64,
    /// Objects a round challenges for possession (picked at random; all when fewer).
    #[serde(default = "default_audit_objects")]
    pub objects: usize,
    /// Blocks challenged per object (the DPDP paper's 460 catch a 1% corruption with 99%).
    #[serde(default = "default_audit_blocks")]
    pub blocks: u32,
    /// Slots challenged per level of the PoR log.
    #[serde(default = "default_por_lambda")]
    pub por_lambda: u32,
    /// Failed PoR parts in a round at which it repairs the log.
    #[serde(default = "default_repair_threshold")]
    pub repair_threshold: usize,
    /// A directory for one JSON report per round; reports are only logged when absent.
    #[serde(default)]
    pub reports: Option<std::path::PathBuf>,
}

fn default_audit_objects() -> usize {
    100
}

fn default_audit_blocks() -> u32 {
    460
}

fn default_por_lambda() -> u32 {
    128
}

fn default_repair_threshold() -> usize {
    1
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessKey {
    pub access_key: String,
    pub secret_key: String,
}

fn default_listen() -> String {
    "127.0.0.1:9000".into()
}

fn default_cache_mb() -> u64 {
    256
}

fn default_keep_replaced_secs() -> u64 {
    30
}

fn default_header_read_timeout_secs() -> u64 {
    30
}

fn default_max_connections() -> usize {
    512
}

fn default_body_idle_timeout_secs() -> u64 {
    30
}

fn default_body_min_rate_kib() -> u64 {
    16
}

impl GatewayConfig {
    /// Listening on `listen` for applications signing with `keys`; the rest as by default.
    pub fn new(listen: impl Into<String>, keys: Vec<AccessKey>) -> GatewayConfig {
        GatewayConfig {
            listen: listen.into(),
            cache_mb: default_cache_mb(),
            metrics_listen: None,
            por: false,
            keep_replaced_secs: default_keep_replaced_secs(),
            tls_cert: None,
            tls_key: None,
            header_read_timeout_secs: default_header_read_timeout_secs(),
            max_connections: default_max_connections(),
            body_idle_timeout_secs: default_body_idle_timeout_secs(),
            body_min_rate_kib: default_body_min_rate_kib(),
            virtual_host_domain: None,
            audit: None,
            group: None,
            keys,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {detail}")]
    Invalid { path: String, detail: String },
}

impl GatewayConfig {
    pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        GatewayConfig::parse(&text).map_err(|detail| ConfigError::Invalid { path: shown, detail })
    }

    pub fn parse(text: &str) -> Result<GatewayConfig, String> {
        let config: GatewayConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if config.keys.is_empty() {
            return Err("no access keys: add at least one [[keys]] with access_key and secret_key".into());
        }
        if config.keys.iter().any(|k| k.access_key.is_empty() || k.secret_key.len() < 8) {
            return Err("each access key needs a name and a secret of at least 8 characters".into());
        }
        if config.header_read_timeout_secs == 0 || config.max_connections == 0 || config.body_idle_timeout_secs == 0 {
            return Err(
                "header_read_timeout_secs, max_connections and body_idle_timeout_secs must be at least 1".into()
            );
        }
        if config.tls_cert.is_some() != config.tls_key.is_some() {
            return Err("tls_cert and tls_key go together".into());
        }
        if let Some(domain) = &config.virtual_host_domain {
            if !crate::hosts::is_domain(domain) {
                return Err(format!(
                    "virtual_host_domain = {domain:?} is no domain name (labels of letters, digits and '-', \
                     joined by '.', without a port)"
                ));
            }
        }
        if let Some(group) = &config.group {
            if config.por {
                return Err(format!(
                    "por = true and group = {group:?} do not go together: PoR copies are of this client's own \
                     namespace, which a group gateway does not serve"
                ));
            }
            if config.audit.is_some() {
                return Err(format!(
                    "[audit] and group = {group:?} do not go together: the audits challenge this client's own \
                     namespace, which a group gateway does not serve"
                ));
            }
        }
        if let Some(audit) = &config.audit {
            if audit.every_secs == 0 || audit.objects == 0 || audit.blocks == 0 || audit.por_lambda == 0 {
                return Err("[audit]: every_secs, objects, blocks and por_lambda must be at least 1".into());
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_needs_keys_and_refuses_what_it_does_not_know() {
        let good = GatewayConfig::parse("[[keys]]\naccess_key = \"app\"\nsecret_key = \"secret-123\"\n").unwrap();
        assert_eq!((good.listen.as_str(), good.keys.len()), ("127.0.0.1:9000", 1));
        assert!(GatewayConfig::parse("listen = \"127.0.0.1:1\"\nkeys = []\n").is_err());
        assert!(GatewayConfig::parse("[[keys]]\naccess_key = \"app\"\nsecret_key = \"short\"\n").is_err());
        assert!(GatewayConfig::parse("typo = 1\n[[keys]]\naccess_key = \"a\"\nsecret_key = \"secret-123\"\n").is_err());
        let keys = "[[keys]]\naccess_key = \"app\"\nsecret_key = \"secret-123\"\n";
        let audited = GatewayConfig::parse(&format!("{keys}[audit]\nevery_secs = 60\nreports = \"r\"\n")).unwrap();
        let audit = audited.audit.unwrap();
        assert_eq!((audit.every_secs, audit.objects, audit.blocks, audit.repair_threshold), (60, 100, 460, 1));
        assert!(GatewayConfig::parse(&format!("{keys}[audit]\nevery_secs = 0\n")).is_err());
        assert!(GatewayConfig::parse(&format!("{keys}[audit]\nevery = 60\n")).is_err(), "a typo");
        assert_eq!((good.header_read_timeout_secs, good.max_connections), (30, 512));
        assert!(GatewayConfig::parse(&format!("max_connections = 0\n{keys}")).is_err());
        assert!(GatewayConfig::parse(&format!("header_read_timeout_secs = 0\n{keys}")).is_err());
        assert_eq!((good.body_idle_timeout_secs, good.body_min_rate_kib), (30, 16));
        assert!(GatewayConfig::parse(&format!("body_idle_timeout_secs = 0\n{keys}")).is_err());
    }

    #[test]
    fn a_group_gateway_refuses_what_applies_to_the_own_namespace() {
        let keys = "[[keys]]\naccess_key = \"app\"\nsecret_key = \"secret-123\"\n";
        let group = GatewayConfig::parse(&format!("group = \"team\"\n{keys}")).unwrap();
        assert_eq!(group.group.as_deref(), Some("team"));
        assert_eq!(GatewayConfig::parse(keys).unwrap().group, None);
        let por = GatewayConfig::parse(&format!("group = \"team\"\npor = true\n{keys}")).unwrap_err();
        assert!(por.contains("por = true and group"), "{por}");
        let audit = GatewayConfig::parse(&format!("group = \"team\"\n{keys}[audit]\nevery_secs = 60\n")).unwrap_err();
        assert!(audit.contains("[audit] and group"), "{audit}");
        // Each alone is fine.
        assert!(GatewayConfig::parse(&format!("por = true\n{keys}[audit]\nevery_secs = 60\n")).is_ok());
    }
}
