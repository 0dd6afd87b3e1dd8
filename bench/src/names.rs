//! Namespace scaling, part of `vouch bench e2e`: the provider's lookup and commit time in one
//! namespace of 10 to 1,000,000 names (issue target: flat within 2x).
//!
//! Each size gets a fresh provider whose namespace is written in bulk, and a client given the
//! root of those names: lookups of absent names between two present ones (proven absent), and
//! commits that each put a new one-block file between two names, each verified by the client.
//! (The bulk-written names have no versions, which the provider would report as damage if
//! asked for one: only their lookups and their place in the list are used.) `load_ms` is the first request,
//! which loads the namespace on the provider (one scan).

use crate::measure::SelfCheckFailed;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;
use vouch_client::state::{Root, StateDir};
use vouch_client::{Client, ClientError};
use vouch_core::namespace::{EntryRecord, NamespaceTree};
use vouch_core::pdp::FileId;
use vouch_server::{token_hash, Blocks, Provider};

const CLIENT: &str = "bench";
const LOOKUPS: usize = 400;
const COMMITS: usize = 100;

#[derive(Debug, Serialize)]
pub struct NameScale {
    pub names: u64,
    /// The first request's load of the namespace (one scan).
    pub load_ms: f64,
    /// Medians per call, as the client sees them (a request over loopback HTTP, verified),
    /// and the provider's own time (its `Server-Timing`).
    pub lookup_us: f64,
    pub lookup_server_us: f64,
    pub commit_us: f64,
    pub commit_server_us: f64,
}

fn name(i: u64) -> String {
    format!("dir/file-{i:08}")
}

fn lie(what: impl std::fmt::Display) -> SelfCheckFailed {
    SelfCheckFailed(format!("namespace scaling: {what}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One namespace of `n` names, measured.
pub(crate) async fn measure(n: u64, dir: &Path) -> Result<NameScale, SelfCheckFailed> {
    let provider = Provider::open_dir(dir, &Blocks::Local).map_err(lie)?;
    let entries: Vec<EntryRecord> = (0..n)
        .map(|i| {
            let mut file = [0u8; 16];
            file[..8].copy_from_slice(&i.to_le_bytes());
            EntryRecord::new(name(i), FileId(file))
        })
        .collect();
    provider.files().import_entries(CLIENT, &entries).await.map_err(lie)?;
    // What the client holds: the root and size of these entries.
    let tree = NamespaceTree::load(entries).map_err(lie)?;
    let root = Root { digest: tree.root(), len: tree.len() };
    drop(tree);
    let clients = HashMap::from([(token_hash(CLIENT), CLIENT.to_string())]);
    let server = vouch_server::start("127.0.0.1:0", provider, clients, std::future::pending()).await.map_err(lie)?;
    let state = StateDir::init(&dir.join("client"), &format!("http://{}", server.addr), CLIENT).map_err(lie)?;
    state.save_root(root).map_err(lie)?;
    drop(state);
    let client = Client::open(&dir.join("client")).map_err(lie)?;

    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |below: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % below
    };
    // An absent name between two present ones, proven absent.
    let mut lookup = async |client: &Client| {
        let absent = format!("{}+", name(next(n)));
        let started = Instant::now();
        match client.version(&absent, None).await {
            Err(ClientError::NotFound(_)) => Ok(started.elapsed()),
            other => Err(lie(format!("a lookup of an absent name gave {other:?}"))),
        }
    };
    let load = lookup(&client).await?;
    let (mut lookups, mut lookups_server) = (Vec::new(), Vec::new());
    for _ in 0..LOOKUPS {
        lookups.push(lookup(&client).await?.as_secs_f64() * 1e6);
        lookups_server.push(server_us(&client));
    }
    let (mut commits, mut commits_server) = (Vec::new(), Vec::new());
    for k in 0..COMMITS {
        let new = format!("{}/new-{k}", name(next(n)));
        let started = Instant::now();
        client.put(&new, std::io::Cursor::new(b"x".to_vec()), None, |_| {}).await.map_err(lie)?;
        commits.push(started.elapsed().as_secs_f64() * 1e6);
        commits_server.push(server_us(&client));
    }
    if client.root().len != n + commits.len() as u64 {
        return Err(lie(format!("{} names, not {}", client.root().len, n + commits.len() as u64)));
    }
    drop(client);
    server.shutdown().await.map_err(lie)?;
    Ok(NameScale {
        names: n,
        load_ms: load.as_secs_f64() * 1e3,
        lookup_us: median(lookups),
        lookup_server_us: median(lookups_server),
        commit_us: median(commits),
        commit_server_us: median(commits_server),
    })
}

fn server_us(client: &Client) -> f64 {
    client.remote().last_server_time().map_or(f64::NAN, |t| t.as_secs_f64() * 1e6)
}
