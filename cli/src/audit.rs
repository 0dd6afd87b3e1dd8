//! Audits: the owner's (`vouch audit`), a third party's with only the public key and the root
//! (`vouch audit --public`), and what the owner hands that third party (`vouch root`, `vouch
//! key export-public`).

use crate::output::{human, Output};
use crate::Failure;
use clap::Args;
use serde::Serialize;
use std::path::Path;
use std::path::PathBuf;
use vouch_client::public::read_public_key;
use vouch_client::state::write_atomic;
use vouch_client::{
    key_id, AuditReport, AuditRoot, Client, ClientError, PublicAuditor, Remote, Transport, MIN_POR_LAMBDA,
};
use vouch_core::pdp::SchemeId;

#[derive(Args)]
pub struct Audit {
    /// One name (default: every name).
    pub(crate) name: Option<String>,
    /// A version number (default: the latest).
    #[arg(long)]
    pub(crate) version: Option<u64>,
    /// Offsets challenged: 460 catch a provider missing 1% of a file with probability 99%.
    #[arg(long, default_value_t = 460)]
    pub(crate) blocks: u32,
    /// Audit as a third party, with no state directory: only this public key (from the
    /// owner's `vouch key export-public`), the root (--root), and the provider (--server,
    /// --token).
    #[arg(long, value_name = "KEYFILE", requires = "root")]
    pub(crate) public: Option<PathBuf>,
    /// With --public: the root to audit under, as the owner's `vouch root` printed it.
    #[arg(long, requires = "public")]
    pub(crate) root: Option<String>,
    /// With --public: the provider's URL.
    #[arg(long, env = "VOUCH_SERVER")]
    pub(crate) server: Option<String>,
    /// Audit the client's whole PoR log instead (every level of H and C; a JSON report per
    /// level with --json).
    #[arg(long)]
    pub(crate) por: bool,
    /// With --por: slots challenged per level (a level missing half its slots passes with
    /// probability 2^-lambda).
    #[arg(long, default_value_t = 128)]
    pub(crate) lambda: u32,
    /// With --public: a bearer token the provider accepts for the owner's namespace.
    #[arg(long, env = "VOUCH_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// With --public, over https://: trust only this PEM certificate (the provider's or its CA).
    #[arg(long, value_name = "FILE", requires = "public")]
    pub(crate) ca: Option<PathBuf>,
}

/// A scheme as users name it.
pub fn scheme_name(scheme: Option<SchemeId>) -> &'static str {
    match scheme {
        Some(SchemeId::Linear) => "linear",
        Some(SchemeId::Rsa1024) => "rsa-1024",
        Some(SchemeId::Rsa2048) => "rsa-2048",
        None => "none",
    }
}

fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

fn print_reports(reports: &[AuditReport], out: Output) {
    out.print(&reports, || {
        reports
            .iter()
            .map(|r| {
                format!(
                    "{} v{}: possession proven ({} blocks challenged, proof {}, {:.1} ms)",
                    r.name,
                    r.version,
                    r.challenged_blocks,
                    human(r.proof_bytes as u64),
                    r.seconds * 1e3
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
}

/// `vouch audit --por`: every level of the PoR log and C challenged; a report per part, and
/// exit 3 when any fails.
pub async fn por(client: &Client, args: Audit, out: Output) -> Result<(), Failure> {
    if args.name.is_some() || args.public.is_some() {
        return Err(
            ClientError::BadInput("--por audits the client's whole PoR log: no NAME, no --public".into()).into()
        );
    }
    if !(MIN_POR_LAMBDA..=4096).contains(&args.lambda) {
        return Err(ClientError::BadInput(format!(
            "--lambda is {MIN_POR_LAMBDA} to 4096: a part missing half its slots passes an audit with probability \
             2^-lambda, and below {MIN_POR_LAMBDA} that is no proof"
        ))
        .into());
    }
    let report = client.por().audit(args.lambda).await?;
    out.print(&report, || {
        let mut lines = vec![format!(
            "PoR log: 2^{} slots, time {}, {} slots used; {} picks per part (a part missing half its slots \
             passes with probability 2^-{}), proof {}",
            report.log_capacity,
            report.time,
            report.slots_used,
            report.lambda,
            report.lambda,
            human(report.proof_bytes as u64)
        )];
        for p in report.parts.iter().chain(&report.copy) {
            let verdict = match &p.problem {
                None => "verified".to_string(),
                Some(problem) => format!("FAILED: {problem}"),
            };
            lines.push(format!("  {} ({} slots, {} picks): {verdict}", p.region, p.slots, p.picks));
        }
        lines.join("\n")
    });
    report.into_result()?;
    Ok(())
}

/// `vouch audit`: the owner's audit of one name or of every name.
pub async fn owner(client: &Client, args: Audit, out: Output) -> Result<(), Failure> {
    let names = match &args.name {
        Some(n) => vec![n.clone()],
        None => client.list().await?.into_iter().map(|e| e.name).collect(),
    };
    let mut reports = Vec::new();
    for name in &names {
        reports.push(client.audit(name, args.version, args.blocks).await?);
    }
    print_reports(&reports, out);
    Ok(())
}

/// `vouch audit --public KEYFILE --root ROOT`: a third party's audit, no state directory.
pub async fn public(args: Audit, out: Output) -> Result<(), Failure> {
    let need = |what: &str| ClientError::BadInput(format!("a public audit needs {what}"));
    let root: AuditRoot = args.root.as_deref().ok_or_else(|| need("--root"))?.parse()?;
    let key = read_public_key(args.public.as_deref().ok_or_else(|| need("--public"))?)?;
    let server = args.server.as_deref().ok_or_else(|| need("--server (or VOUCH_SERVER)"))?;
    let token = args.token.as_deref().ok_or_else(|| need("--token (or VOUCH_TOKEN)"))?;
    let ca_pem = match &args.ca {
        Some(ca) => Some(std::fs::read(ca).map_err(ClientError::io(format!("reading {}", ca.display())))?),
        None => None,
    };
    let remote = Remote::with(server, token, &Transport { ca_pem, ..Transport::default() })?;
    let auditor = PublicAuditor::new(remote, key, &root)?;
    let names = match &args.name {
        Some(n) => vec![n.clone()],
        None => auditor.list().await?.into_iter().map(|e| e.name).collect(),
    };
    let mut reports = Vec::new();
    for name in &names {
        reports.push(auditor.audit(name, args.version, args.blocks).await?);
    }
    print_reports(&reports, out);
    Ok(())
}

/// `vouch root`.
pub async fn root(client: &Client, out: Output) -> Result<(), Failure> {
    let root = client.audit_root().await?;
    #[derive(Serialize)]
    struct Shown {
        root: String,
        digest: String,
        names: u64,
        key_id: Option<String>,
        scheme: &'static str,
    }
    let shown = Shown {
        root: root.to_string(),
        digest: root.root.digest.to_hex(),
        names: root.root.len,
        key_id: root.key_id.as_ref().map(|id| hex(id)),
        scheme: scheme_name(client.key().map(|k| k.scheme())),
    };
    out.print(&shown, || shown.root.clone());
    Ok(())
}

/// `vouch key export-public FILE`.
pub fn export_public(client: &Client, file: &Path, out: Output) -> Result<(), Failure> {
    let key = client.key().and_then(|k| k.public_key()).ok_or_else(|| {
        ClientError::BadInput(
            "this client's key is of the linear scheme, which has no public key (`vouch init --scheme rsa` makes \
             a client that anyone can audit)"
                .into(),
        )
    })?;
    write_atomic(file, &key.to_bytes(), false)?;
    #[derive(Serialize)]
    struct Exported {
        public_key: String,
        key_id: String,
        scheme: &'static str,
    }
    let shown = Exported {
        public_key: file.display().to_string(),
        key_id: hex(&key_id(key)),
        scheme: scheme_name(Some(key.scheme())),
    };
    out.print(&shown, || format!("wrote the {} public key {} (id {})", shown.scheme, shown.public_key, shown.key_id));
    Ok(())
}
