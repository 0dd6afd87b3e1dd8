//! `vouch serve` and `vouch token`: the provider's side.

use crate::output::Output;
use crate::Failure;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use vouch_server::{hex32, token_hash, Misbehave, Provider, ServerConfig};
use vouch_store::{MetaDb, ObjectBlobs, S3Config};

#[derive(Args)]
pub struct Serve {
    /// TOML configuration (listen, data, s3, [[client]] name + token_sha256).
    #[arg(long, env = "VOUCH_SERVE_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on (default 127.0.0.1:7447; port 0 picks a free one).
    #[arg(long, env = "VOUCH_LISTEN")]
    listen: Option<String>,
    /// Directory for the metadata store, and for blocks unless --s3 is given.
    #[arg(long, env = "VOUCH_DATA")]
    data: Option<PathBuf>,
    /// Keep blocks in S3: a `key = value` settings file, or `env` for VOUCH_S3_* / AWS_*.
    #[arg(long)]
    s3: Option<String>,
    /// Accept a client: NAME=TOKEN (repeatable; for tests and trials: a config file keeps
    /// only token hashes).
    #[arg(long = "client", value_name = "NAME=TOKEN")]
    clients: Vec<String>,
    /// Lie on purpose (to see vouch catch it): corrupt-block, drop-block, swap-blocks,
    /// rollback, old-version, replay-proof, other-challenge, hide-file, truncate-stream.
    #[arg(long, default_value = "none")]
    misbehave: Misbehave,
}

pub async fn serve(args: Serve) -> Result<(), Failure> {
    let config = match &args.config {
        Some(path) => ServerConfig::from_file(path).map_err(anyhow::Error::from)?,
        None => ServerConfig::default(),
    };
    let mut clients = config.credentials().map_err(anyhow::Error::from)?;
    for c in &args.clients {
        let (name, token) = c.split_once('=').context("--client takes NAME=TOKEN")?;
        let extra = ServerConfig {
            clients: vec![vouch_server::ClientCredential {
                name: name.into(),
                token_sha256: hex32(&token_hash(token)),
            }],
            ..ServerConfig::default()
        };
        clients.extend(extra.credentials().map_err(anyhow::Error::from)?);
    }
    if clients.is_empty() {
        eprintln!("vouch serve: no clients configured; add [[client]] entries or --client NAME=TOKEN");
    }
    let listen = args.listen.or(config.listen).unwrap_or_else(|| "127.0.0.1:7447".into());
    let data = args.data.or(config.data).unwrap_or_else(|| PathBuf::from("vouch-data"));
    let s3 = args.s3.or(config.s3.map(|p| p.display().to_string()));
    let provider = open_provider(&data, s3.as_deref(), args.misbehave)?;
    let server = vouch_server::start(&listen, provider, clients, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(anyhow::Error::from)?;
    eprintln!("vouch serve: listening on http://{} (data in {})", server.addr, data.display());
    if args.misbehave != Misbehave::None {
        eprintln!("vouch serve: MISBEHAVING on purpose: {}", args.misbehave);
    }
    server.wait().await.context("server stopped")?;
    eprintln!("vouch serve: stopped");
    Ok(())
}

/// The provider over `data` (metadata, and blocks unless `s3` names where they go).
pub fn open_provider(data: &std::path::Path, s3: Option<&str>, misbehave: Misbehave) -> anyhow::Result<Provider> {
    let blobs = match s3 {
        None => ObjectBlobs::local(&data.join("blobs"))?,
        Some("env") => ObjectBlobs::s3(&S3Config::from_env(None)?)?,
        Some(path) => ObjectBlobs::s3(&S3Config::from_file(std::path::Path::new(path))?)?,
    };
    std::fs::create_dir_all(data).with_context(|| format!("creating {}", data.display()))?;
    let meta = MetaDb::open(&data.join("meta.redb"))?;
    Ok(Provider::open(blobs, meta, misbehave)?)
}

#[derive(Args)]
pub struct Token {
    /// The client's name on the provider.
    #[arg(default_value = "me")]
    name: String,
}

pub fn token(args: Token, out: &Output) -> anyhow::Result<()> {
    let bytes: [u8; 24] = rand::random();
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let hash = hex32(&token_hash(&token));
    #[derive(Serialize)]
    struct Issued {
        name: String,
        token: String,
        token_sha256: String,
    }
    let issued = Issued { name: args.name.clone(), token, token_sha256: hash };
    ServerConfig {
        clients: vec![vouch_server::ClientCredential {
            name: issued.name.clone(),
            token_sha256: issued.token_sha256.clone(),
        }],
        ..ServerConfig::default()
    }
    .credentials()?;
    out.print(&issued, || {
        format!(
            "client token (give it to the client: vouch init --token ...):\n  {}\nserver configuration:\n  [[client]]\n  name = \"{}\"\n  token_sha256 = \"{}\"",
            issued.token, issued.name, issued.token_sha256
        )
    });
    Ok(())
}

/// Clients map for an in-process server: `name` with `token`.
pub fn one_client(name: &str, token: &str) -> HashMap<[u8; 32], String> {
    HashMap::from([(token_hash(token), name.to_string())])
}
