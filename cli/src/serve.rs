//! `vouch serve` and `vouch token`: the provider's side.

use crate::output::Output;
use crate::Failure;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use vouch_server::{
    hex32, token_hash, Blocks, LimitSettings, Limits, Misbehave, Misbehaving, Provider, ServeOptions, ServerConfig,
};

#[derive(Args)]
pub struct Serve {
    /// TOML configuration (listen, data, s3, tls_cert, tls_key, [limits], [[client]] name +
    /// token_sha256).
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
    /// Serve https:// with this PEM certificate chain (with --tls-key; `vouch tls-cert` makes
    /// a self-signed pair). Without TLS, bearer tokens cross the network in cleartext.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Most bytes of block data one put may upload (default 256 GiB).
    #[arg(long, value_name = "BYTES")]
    max_put_bytes: Option<u64>,
    /// Most blocks one put may upload (default 16777216).
    #[arg(long, value_name = "N")]
    max_put_blocks: Option<u64>,
    /// Most bytes of challenged blocks one audit may hold in memory (default 512 MiB).
    #[arg(long, value_name = "BYTES")]
    max_audit_bytes: Option<u64>,
    /// A stream (upload or read) that stalls this long loses its connection (default 60).
    #[arg(long, value_name = "SECONDS")]
    stream_idle_secs: Option<u64>,
}

impl Serve {
    /// The limits: the configuration file's over the defaults, then the flags over those.
    fn limits(&self, config: &ServerConfig) -> anyhow::Result<Limits> {
        let flags = LimitSettings {
            max_put_bytes: self.max_put_bytes,
            max_put_blocks: self.max_put_blocks,
            max_audit_bytes: self.max_audit_bytes,
            stream_idle_secs: self.stream_idle_secs,
        };
        Ok(flags.over(config.limits.over(Limits::default())?)?)
    }
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
    let limits = args.limits(&config)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some((cert.as_path(), key.as_path())),
        _ => config.tls_files().map_err(anyhow::Error::from)?,
    };
    let tls = tls.map(|(cert, key)| vouch_server::tls::load(cert, key)).transpose().map_err(anyhow::Error::from)?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let listen = args.listen.or(config.listen).unwrap_or_else(|| "127.0.0.1:7447".into());
    let data = args.data.or(config.data).unwrap_or_else(|| PathBuf::from("vouch-data"));
    let s3 = args.s3.or(config.s3.map(|p| p.display().to_string()));
    let provider = open_provider(&data, s3.as_deref(), args.misbehave)?;
    let options = ServeOptions { limits, tls };
    let server = vouch_server::start_with(&listen, provider, clients, options, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(anyhow::Error::from)?;
    eprintln!("vouch serve: listening on {scheme}://{} (data in {})", server.addr, data.display());
    if scheme == "http" && !server.addr.ip().is_loopback() {
        eprintln!("vouch serve: WARNING: bearer tokens travel in cleartext over http://; use --tls-cert/--tls-key");
    }
    if args.misbehave != Misbehave::None {
        eprintln!("vouch serve: MISBEHAVING on purpose: {}", args.misbehave);
    }
    server.wait().await.context("server stopped")?;
    eprintln!("vouch serve: stopped");
    Ok(())
}

/// The provider over `data` (metadata, and blocks unless `s3` names where they go).
pub fn open_provider(data: &std::path::Path, s3: Option<&str>, misbehave: Misbehave) -> anyhow::Result<Misbehaving> {
    Ok(Misbehaving::new(Provider::open_dir(data, &Blocks::from_setting(s3)?)?, misbehave))
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

#[derive(Args)]
pub struct TlsCert {
    /// A name clients reach the provider by: a DNS name or an IP address (repeatable).
    #[arg(long = "host", value_name = "NAME", required = true)]
    hosts: Vec<String>,
    /// Directory for cert.pem and key.pem (created if missing; existing files are never
    /// overwritten).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Writes a self-signed certificate and its key for `vouch serve --tls-cert/--tls-key`.
pub fn tls_cert(args: TlsCert, out: &Output) -> anyhow::Result<()> {
    let (cert, key) = vouch_server::tls::self_signed(&args.hosts)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let cert_path = args.out.join("cert.pem");
    let key_path = args.out.join("key.pem");
    for path in [&cert_path, &key_path] {
        anyhow::ensure!(!path.exists(), "{} exists; remove it or choose another --out", path.display());
    }
    write_new(&key_path, key.as_bytes(), 0o600)?;
    write_new(&cert_path, cert.as_bytes(), 0o644)?;
    #[derive(Serialize)]
    struct Written {
        cert: PathBuf,
        key: PathBuf,
    }
    let written = Written { cert: cert_path, key: key_path };
    out.print(&written, || {
        format!(
            "wrote {} and {} (keep the key private)\nprovider: vouch serve --tls-cert {} --tls-key {} ...\nclient:   vouch init --server https://{}:7447 --token ... --ca {}",
            written.cert.display(),
            written.key.display(),
            written.cert.display(),
            written.key.display(),
            args.hosts[0],
            written.cert.display()
        )
    });
    Ok(())
}

/// Creates `path` (never over an existing file) holding `bytes`, with `mode` on Unix.
fn write_new(path: &std::path::Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| format!("writing {}", path.display()))
}

/// Clients map for an in-process server: `name` with `token`.
pub fn one_client(name: &str, token: &str) -> HashMap<[u8; 32], String> {
    HashMap::from([(token_hash(token), name.to_string())])
}
