//! `vouch serve` and `vouch token`: the provider's side.

use crate::output::Output;
use crate::Failure;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_server::{
    hex32, token_hash, Blocks, CompactionPolicy, LimitSettings, Limits, Maintenance, OpenError, Provider, ServeOptions,
    ServerConfig, Service,
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
    /// Lie on purpose, to see vouch catch it (for tests and trials): corrupt-block, rollback,
    /// ... (an unknown name lists them all; `docs/cli.md` says what each does).
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
    /// Verify every segment against the index (checksums, tables, bookkeeping, lists), print
    /// a JSON report and exit: nonzero if anything is wrong. Serves nothing.
    #[arg(long, conflicts_with = "rebuild_index")]
    check: bool,
    /// Rebuild the metadata store from the blobs (the old one is moved aside, never deleted),
    /// print a JSON report and exit. Serves nothing. The clients' roots then decide whether
    /// the rebuilt state is right.
    #[arg(long)]
    rebuild_index: bool,
    /// Run compaction every this many seconds in the background (default 60; 0: never, and no
    /// snapshots of the metadata's log copies either).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    compact_every_secs: u64,
    /// Compaction rewrites segments whose live bytes are below this fraction (default 0.5)...
    #[arg(long, value_name = "FRACTION", default_value_t = CompactionPolicy::default().min_live)]
    compact_min_live: f64,
    /// ...once they hold this many bytes of garbage together (default 64 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = CompactionPolicy::default().min_garbage)]
    compact_min_garbage: u64,
}

impl Serve {
    /// The limits: the configuration file's over the defaults, then the flags over those.
    fn limits(&self, config: &ServerConfig) -> anyhow::Result<Limits> {
        let flags = LimitSettings {
            max_put_bytes: self.max_put_bytes,
            max_put_blocks: self.max_put_blocks,
            max_audit_bytes: self.max_audit_bytes,
            stream_idle_secs: self.stream_idle_secs,
            ..LimitSettings::default()
        };
        Ok(flags.over(config.limits.over(Limits::default())?)?)
    }

    /// The background compaction the flags ask for.
    fn maintenance(&self) -> anyhow::Result<Option<Maintenance>> {
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.compact_min_live),
            "--compact-min-live takes a fraction from 0 to 1, not {}",
            self.compact_min_live
        );
        let policy = CompactionPolicy {
            min_live: self.compact_min_live,
            min_garbage: self.compact_min_garbage,
            ..CompactionPolicy::default()
        };
        let every = std::time::Duration::from_secs(self.compact_every_secs);
        Ok((self.compact_every_secs > 0).then_some(Maintenance { every, policy }))
    }
}

pub async fn serve(args: Serve) -> Result<(), Failure> {
    let config = match &args.config {
        Some(path) => ServerConfig::from_file(path).map_err(anyhow::Error::from)?,
        None => ServerConfig::default(),
    };
    if args.check || args.rebuild_index {
        let data = args.data.or(config.data).unwrap_or_else(|| PathBuf::from("vouch-data"));
        let s3 = args.s3.or(config.s3.map(|p| p.display().to_string()));
        return repair(&data, s3.as_deref(), args.rebuild_index).await;
    }
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
    let maintenance = args.maintenance()?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some((cert.as_path(), key.as_path())),
        _ => config.tls_files().map_err(anyhow::Error::from)?,
    };
    let tls = tls.map(|(cert, key)| vouch_server::tls::load(cert, key)).transpose().map_err(anyhow::Error::from)?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let listen = args.listen.or(config.listen).unwrap_or_else(|| "127.0.0.1:7447".into());
    let data = args.data.or(config.data).unwrap_or_else(|| PathBuf::from("vouch-data"));
    let s3 = args.s3.or(config.s3.map(|p| p.display().to_string()));
    let options = ServeOptions { limits, tls, maintenance };
    let shown = format!("{scheme}://{{addr}} (data in {})", data.display());
    match args.misbehave {
        // A real server serves the provider itself: no lie is in its path.
        Misbehave::None => {
            let provider = open_provider(&data, s3.as_deref())?;
            serve_until_stopped(&listen, provider, clients, options, &shown).await?
        }
        lie => {
            eprintln!("vouch serve: MISBEHAVING on purpose: {lie}");
            let blocks = Blocks::from_setting(s3.as_deref()).map_err(anyhow::Error::from)?;
            let provider = Misbehaving::open_dir(&data, &blocks, lie).map_err(hinted)?;
            serve_until_stopped(&listen, provider, clients, options, &shown).await?
        }
    }
    eprintln!("vouch serve: stopped");
    Ok(())
}

/// Serves `provider` until Ctrl-C; `shown` says where (`{addr}` becomes the bound address).
async fn serve_until_stopped(
    listen: &str,
    provider: impl Service,
    clients: HashMap<[u8; 32], String>,
    options: ServeOptions,
    shown: &str,
) -> anyhow::Result<()> {
    let plain = options.tls.is_none();
    let server = vouch_server::start_with(listen, provider, clients, options, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(anyhow::Error::from)?;
    eprintln!("vouch serve: listening on {}", shown.replace("{addr}", &server.addr.to_string()));
    if plain && !server.addr.ip().is_loopback() {
        eprintln!("vouch serve: WARNING: bearer tokens travel in cleartext over http://; use --tls-cert/--tls-key");
    }
    server.wait().await.context("server stopped")
}

/// `vouch serve --check` (or, with `rebuild`, `--rebuild-index`): prints the report as JSON;
/// fails if it lists problems.
async fn repair(data: &std::path::Path, s3: Option<&str>, rebuild: bool) -> Result<(), Failure> {
    let blocks = Blocks::from_setting(s3).map_err(anyhow::Error::from)?;
    let (json, problems) = if rebuild {
        let report = vouch_server::rebuild_dir(data, &blocks).await.map_err(anyhow::Error::from)?;
        (serde_json::to_string_pretty(&report), report.problems.len())
    } else {
        let report = vouch_server::check_dir(data, &blocks).await.map_err(hinted)?;
        (serde_json::to_string_pretty(&report), report.problems.len())
    };
    println!("{}", json.context("encoding the report")?);
    match (problems, rebuild) {
        (0, _) => Ok(()),
        (n, false) => Err(anyhow::anyhow!("the check found {n} problems (listed above)").into()),
        (n, true) => {
            Err(anyhow::anyhow!("rebuilt, with {n} problems (listed above): the clients' roots decide what is right")
                .into())
        }
    }
}

/// The provider over `data` (metadata, and blocks unless `s3` names where they go).
pub fn open_provider(data: &std::path::Path, s3: Option<&str>) -> anyhow::Result<Provider> {
    Provider::open_dir(data, &Blocks::from_setting(s3)?).map_err(hinted)
}

/// The error, with what to do about damaged storage.
pub fn hinted(e: OpenError) -> anyhow::Error {
    let hint = e.is_corrupt().then_some(
        "\n(`vouch serve --rebuild-index` rebuilds the metadata store from the blobs; the clients' roots then \
         decide whether the rebuilt state is right)",
    );
    anyhow::anyhow!("{e}{}", hint.unwrap_or_default())
}

#[derive(Args)]
pub struct Token {
    /// The client's name on the provider.
    #[arg(default_value = "me")]
    name: String,
}

pub fn token(args: Token, out: &Output) -> anyhow::Result<()> {
    let bytes: [u8; 24] = rand::random();
    let token = base16ct::lower::encode_string(&bytes);
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
