//! `vouch gateway`: the S3 endpoint on the user's side (the trusted portal), serving this
//! client's namespace to unchanged S3 applications until interrupted.

use crate::Failure;
use anyhow::Context;
use std::path::PathBuf;
use std::sync::Arc;
use vouch_client::Client;
use vouch_gateway::GatewayConfig;

#[derive(clap::Args)]
pub struct Gateway {
    /// The gateway's configuration (TOML): `listen`, `cache_mb`, `metrics_listen`, `por`,
    /// `[[keys]]` with `access_key` and `secret_key` for each local application, and an
    /// optional `[audit]` schedule (see the README).
    #[arg(long)]
    config: PathBuf,
    /// Listen here instead of the configuration's `listen`.
    #[arg(long)]
    listen: Option<String>,
}

pub async fn gateway(args: Gateway, state: PathBuf) -> Result<(), Failure> {
    let mut config = GatewayConfig::load(&args.config).context("the gateway's configuration")?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    let client = Arc::new(Client::open(&state)?);
    let running =
        vouch_gateway::start(&config, client).await.with_context(|| format!("listening on {}", config.listen))?;
    eprintln!("vouch gateway: serving S3 on http://{} (Ctrl-C stops it)", running.addr);
    if let Some(metrics) = running.metrics_addr {
        eprintln!("vouch gateway: metrics on http://{metrics}/metrics");
    }
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    running.shutdown().await;
    Ok(())
}
