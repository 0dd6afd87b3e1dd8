//! `vouch gateway`: the S3 endpoint on the user's side (the trusted portal), serving this
//! client's namespace, or with `group = NAME` the VICOS group NAME it is a member of, to
//! unchanged S3 applications until interrupted.

use crate::Failure;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use vouch_client::vicos::Group;
use vouch_client::Client;
use vouch_gateway::{GatewayConfig, RunningGateway};

/// How often a group gateway saves its member's AIP state while it runs (besides at the end),
/// so that a gateway killed without a shutdown loses little of it.
const SAVE_EVERY: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct Gateway {
    /// The gateway's configuration (TOML): `listen`, `cache_mb`, `metrics_listen`, `por`,
    /// `group` (serve a VICOS group this client is a member of), `[[keys]]` with `access_key`
    /// and `secret_key` for each local application, and an optional `[audit]` schedule (see
    /// `docs/gateway.md`).
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
    match config.group.clone() {
        Some(name) => serve_group(&config, &state, &name).await,
        None => {
            let client = Arc::new(Client::open(&state)?);
            let running = vouch_gateway::start(&config, client)
                .await
                .with_context(|| format!("listening on {}", config.listen))?;
            announce(&config, &running, "this client's namespace");
            tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
            running.shutdown().await;
            Ok(())
        }
    }
}

/// Serves the VICOS group `name` (a membership in `state`) until Ctrl-C; the member's AIP
/// state is saved now and then and after the gateway stopped, so that the next run (a
/// gateway or `vouch obj`) goes on from it and still catches a fork.
async fn serve_group(config: &GatewayConfig, state: &Path, name: &str) -> Result<(), Failure> {
    let group = Arc::new(Group::open(state, name)?);
    let running = vouch_gateway::start_group(config, group.clone())
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    announce(config, &running, &format!("VICOS group {name}"));
    let saving = {
        let (group, state) = (group.clone(), state.to_path_buf());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SAVE_EVERY).await;
                if let Err(e) = group.save(&state).await {
                    tracing::warn!("saving the AIP state of group {}: {e}", group.name());
                }
            }
        })
    };
    let stopped = tokio::signal::ctrl_c().await.context("waiting for Ctrl-C");
    running.shutdown().await;
    // Stopped at an await: a save's write has none, so none is cut short.
    saving.abort();
    let _ = saving.await;
    group.flush_retired().await;
    group.save(state).await?;
    eprintln!("vouch gateway: saved the AIP state of group {name}");
    stopped?;
    Ok(())
}

fn announce(config: &GatewayConfig, running: &RunningGateway, serving: &str) {
    let scheme = if config.tls_cert.is_some() { "https" } else { "http" };
    eprintln!("vouch gateway: serving {serving} as S3 on {scheme}://{} (Ctrl-C stops it)", running.addr);
    if let Some(metrics) = running.metrics_addr {
        eprintln!("vouch gateway: metrics on http://{metrics}/metrics");
    }
}
