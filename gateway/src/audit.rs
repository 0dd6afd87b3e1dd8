//! Background audits: the portal checks, on a schedule, that the provider still holds what it
//! was given (possession: a DPDP challenge of `blocks` blocks of each of up to `objects`
//! objects picked at random) and that it can still be recovered (retrievability: every level
//! of the PoR log and C challenged). Each round is one JSON report, logged and written to the
//! reports directory; a round whose PoR audit fails `repair_threshold` parts or more repairs
//! the log from C and H.
//!
//! An audit that cannot run (the provider unreachable or busy) is not a failure: only an
//! answer that fails verification is.

use crate::config::AuditConfig;
use crate::metrics::Metrics;
use crate::names;
use crate::status::RoundSummary;
use rand::seq::SliceRandom;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use vouch_client::{unix_now, Client, ClientError, PorAuditReport, PorCopyReport};

/// One round's report.
#[derive(Debug, Serialize)]
pub struct AuditRound {
    /// When it started (Unix seconds) and how long it took.
    pub time: u64,
    pub seconds: f64,
    /// Objects in the namespace; those challenged are in `possession`.
    pub objects: usize,
    pub possession: Vec<ObjectAudit>,
    /// The PoR log's audit; `None` when there is none (no object was stored with `por`).
    pub retrievability: Option<PorAuditReport>,
    /// Why the PoR audit could not run, when it could not.
    pub retrievability_problem: Option<String>,
    pub repairs: Vec<Repair>,
    /// Checks that failed verification (possession objects and PoR parts).
    pub failures: u64,
}

#[derive(Debug, Serialize)]
pub struct ObjectAudit {
    pub name: String,
    /// `passed`, `failed` (the answer did not verify), or `not-run` (see `problem`).
    pub outcome: &'static str,
    pub version: Option<u64>,
    pub challenged_blocks: usize,
    pub proof_bytes: usize,
    pub problem: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Repair {
    pub name: String,
    pub report: Option<PorCopyReport>,
    pub problem: Option<String>,
}

/// Runs a round every `config.every_secs` until `stop` says so; the first one after a period.
pub fn spawn(
    client: Arc<Client>,
    config: AuditConfig,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_secs(config.every_secs));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = stop.changed() => return,
            }
            let report = round(&client, &config, &metrics).await;
            keep(&config, &report);
        }
    })
}

/// One audit round.
pub async fn round(client: &Client, config: &AuditConfig, metrics: &Metrics) -> AuditRound {
    let started = Instant::now();
    let time = unix_now();
    let mut report = AuditRound {
        time,
        seconds: 0.0,
        objects: 0,
        possession: Vec::new(),
        retrievability: None,
        retrievability_problem: None,
        repairs: Vec::new(),
        failures: 0,
    };
    let mut objects: Vec<String> = match client.list().await {
        Ok(listing) => listing.into_iter().map(|e| e.name).filter(|n| names::bucket_of(n).is_none()).collect(),
        Err(e) => {
            report.failures += u64::from(e.violation_kind().is_some());
            report.retrievability_problem = Some(format!("the namespace could not be listed: {e}"));
            return finish(report, started, metrics);
        }
    };
    report.objects = objects.len();
    objects.shuffle(&mut rand::thread_rng());
    for name in objects.iter().take(config.objects) {
        let audit = possession(client, name, config.blocks).await;
        if audit.outcome != "not-run" {
            metrics.audit("pdp", audit.outcome == "passed");
        }
        report.failures += u64::from(audit.outcome == "failed");
        report.possession.push(audit);
    }
    match client.por().audit(config.por_lambda).await {
        Ok(por) => {
            let failed = por.parts.iter().filter(|p| !p.verified).count();
            metrics.audit("por", failed == 0);
            report.failures += failed as u64;
            report.retrievability = Some(por);
            if failed >= config.repair_threshold.max(1) {
                report.repairs = repair(client, &objects).await;
            }
        }
        Err(ClientError::NotFound(_)) => {}
        Err(e) => {
            if e.violation_kind().is_some() {
                metrics.audit("por", false);
                report.failures += 1;
            }
            report.retrievability_problem = Some(e.to_string());
        }
    }
    finish(report, started, metrics)
}

fn finish(mut report: AuditRound, started: Instant, metrics: &Metrics) -> AuditRound {
    report.seconds = started.elapsed().as_secs_f64();
    let por_parts = report.retrievability.as_ref().map(|por| {
        let failed = por.parts.iter().filter(|p| !p.verified).count();
        (por.parts.len() - failed, failed)
    });
    metrics.audit_round(RoundSummary {
        time: unix_now(),
        seconds: report.seconds,
        objects_passed: report.possession.iter().filter(|o| o.outcome == "passed").count(),
        objects_failed: report.possession.iter().filter(|o| o.outcome == "failed").count(),
        por_parts,
        repairs: report.repairs.iter().filter(|r| r.report.is_some()).count(),
        failures: report.failures,
    });
    report
}

async fn possession(client: &Client, name: &str, blocks: u32) -> ObjectAudit {
    let mut audit = ObjectAudit {
        name: name.to_string(),
        outcome: "passed",
        version: None,
        challenged_blocks: 0,
        proof_bytes: 0,
        problem: None,
    };
    match client.audit(name, None, blocks).await {
        Ok(r) => {
            audit.version = Some(r.version);
            audit.challenged_blocks = r.challenged_blocks;
            audit.proof_bytes = r.proof_bytes;
            if !r.verified {
                audit.outcome = "failed";
            }
        }
        Err(e) => {
            audit.outcome = if e.violation_kind().is_some() { "failed" } else { "not-run" };
            audit.problem = Some(e.to_string());
        }
    }
    audit
}

/// Repairs the PoR copy of every object that has one (the repair of the first restores the
/// log's damaged slots from C and H; the rest find theirs whole).
async fn repair(client: &Client, objects: &[String]) -> Vec<Repair> {
    let mut repairs = Vec::new();
    for name in objects {
        match client.por().repair(name).await {
            Ok(report) => repairs.push(Repair { name: name.clone(), report: Some(report), problem: None }),
            // Stored without a PoR copy, or removed since the listing.
            Err(ClientError::BadInput(_) | ClientError::NotFound(_)) => {}
            Err(e) => repairs.push(Repair { name: name.clone(), report: None, problem: Some(e.to_string()) }),
        }
    }
    repairs
}

/// Logs the round and writes its JSON report to the reports directory.
fn keep(config: &AuditConfig, report: &AuditRound) {
    let json = match serde_json::to_string_pretty(report) {
        Ok(json) => json,
        Err(e) => return tracing::error!("an audit report could not be written: {e}"),
    };
    match report.failures {
        0 => tracing::info!(objects = report.possession.len(), "audit round passed"),
        n => tracing::error!(failures = n, "audit round FAILED: the provider does not hold what it was given"),
    }
    let Some(dir) = &config.reports else { return };
    let path = dir.join(format!("audit-{}.json", report.time));
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, json)) {
        tracing::error!("the audit report {} could not be written: {e}", path.display());
    }
}
