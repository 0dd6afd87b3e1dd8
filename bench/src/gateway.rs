//! `vouch bench gateway`: the S3 gateway (Iris, paper 004) beside the same S3 client talking
//! to the raw backend, in the same run.
//!
//! A provider (its blobs on S3 when `VOUCH_S3_*` names a server, e.g. after
//! `eval "$(scripts/minio.sh start DIR)"`, else in a local directory), a vouch client of it and
//! the gateway in front, on loopback. Applications are `object_store` S3 clients; the baseline
//! is the same client on the same S3 server, under a key prefix of its own. Without S3 the
//! gateway is still measured and the comparisons are reported as skipped.
//!
//! * Sequential (Fig. 5): 1, 10 and 100 clients each write whole objects of a few MiB, then
//!   read them back; aggregate MB/s (bytes over wall time), best of several rounds.
//! * Random: 64 KiB ranged GETs at random offsets of a large object, and 64 KiB PUTs, with 1
//!   and 10 clients: ops/s, p50 and p99 latency.
//! * Latency (Fig. 7): one client's sequential 10 KB PUTs and GETs; GETs hot (cache on, the
//!   object read before) and cold (a gateway started with its cache off, each object's first
//!   read).
//! * Cache sweep (Fig. 4): gateways with caches of several sizes reading one working set of
//!   10 KB objects, 80% of the reads on 20% of the keys.
//!
//! Every object read back is compared with what was written.

use crate::e2e::data;
use crate::measure::{check, ms, targets_text, CpuClock, Options, SelfCheckFailed, Target};
use crate::store::raw_s3;
use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_client::Client;
use vouch_gateway::{AccessKey, GatewayConfig, RunningGateway};
use vouch_server::{token_hash, Blocks, Provider, RunningServer};
use vouch_store::S3Config;

const ACCESS_KEY: &str = "bench-app";
const SECRET_KEY: &str = "bench-app-secret";
const TOKEN: &str = "bench";
const BUCKET: &str = "bench";
/// The size of a random read or write.
const RANDOM_BYTES: usize = 64 << 10;
/// The objects of the latency figures and of the cache sweep (the paper's 10 KB).
const SMALL_BYTES: usize = 10_000;
/// In the cache sweep, this share of the reads goes to [`HOT_KEYS`] of the keys.
const HOT_READS: f64 = 0.8;
const HOT_KEYS: f64 = 0.2;
/// Clients reading at once in the cache sweep.
const SWEEP_CLIENTS: usize = 10;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    /// Where the provider keeps its blobs: `s3` or `local`.
    pub provider_backend: &'static str,
    /// The raw baseline, when there is one: the same S3 server, bucket and client.
    pub raw: Option<String>,
    /// What was not measured, and why.
    pub skipped: Vec<String>,
    pub sequential: Vec<Sequential>,
    /// The sequential passes again with large objects (16 MiB): the CPU per MB once a fixed
    /// cost per object is spread over many bytes.
    pub large: Vec<Sequential>,
    pub random: Vec<Random>,
    pub small: Vec<Small>,
    pub latency: Latency,
    pub cache_sweep: CacheSweep,
    pub targets: Vec<Target>,
}

/// Small whole objects (1-100 KB) put and then read back by [`SMALL_CLIENTS`] clients: PUTs
/// and GETs per second through the gateway beside the same S3 client on the raw backend.
#[derive(Debug, Serialize)]
pub struct Small {
    pub object_bytes: usize,
    pub clients: usize,
    pub put: Ops,
    pub get: Ops,
    pub raw_put: Option<Ops>,
    pub raw_get: Option<Ops>,
}

/// Clients of the small-object figure.
const SMALL_CLIENTS: usize = 10;
/// The small objects' sizes.
const SMALL_SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// N clients writing whole objects, then reading them back (best of `rounds`).
#[derive(Debug, Serialize)]
pub struct Sequential {
    pub clients: usize,
    pub object_bytes: usize,
    /// Objects per round, all clients together.
    pub objects: usize,
    pub rounds: usize,
    pub gateway: Throughput,
    /// The same client on the raw backend, when there is one.
    pub raw: Option<Throughput>,
    /// The same client through a pass-through S3 proxy to the raw backend (see
    /// `gateway_proxy` module): what the extra hop alone costs on this machine.
    pub proxy: Option<Throughput>,
}

/// One side's sequential figures.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Throughput {
    pub write_mb_s: f64,
    pub read_mb_s: f64,
    /// CPU time of the whole machine (every process: the S3 server's too) per MB moved, over
    /// all rounds: what bounds the throughput when every part shares the machine's cores.
    pub cpu_ms_per_mb: Option<CpuPerMb>,
    /// The same of this process alone: the S3 application's client, and for the gateway side
    /// the gateway, its client and the provider (not the S3 server). Steadier from run to run
    /// than the machine's, which takes in the S3 server's own variation.
    pub own_cpu_ms_per_mb: Option<CpuPerMb>,
}

/// Machine CPU ms per MB written and read.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CpuPerMb {
    pub write: f64,
    pub read: f64,
}

#[derive(Debug, Serialize)]
pub struct Random {
    pub clients: usize,
    /// The object the ranged GETs read from.
    pub object_bytes: usize,
    pub op_bytes: usize,
    pub get: Ops,
    pub put: Ops,
    pub raw_get: Option<Ops>,
    pub raw_put: Option<Ops>,
}

/// Requests of one kind: how many, at what rate, and their latency.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Ops {
    pub ops: usize,
    pub ops_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Latency {
    pub object_bytes: usize,
    /// Requests of each kind, one at a time.
    pub requests: usize,
    pub put: Ops,
    /// The portal's cache on, each object read once before.
    pub get_hot: Ops,
    /// A gateway started with `cache_mb = 0`, each object's first read.
    pub get_cold: Ops,
    pub raw_put: Option<Ops>,
    pub raw_get: Option<Ops>,
}

#[derive(Debug, Serialize)]
pub struct CacheSweep {
    pub objects: usize,
    pub object_bytes: usize,
    pub clients: usize,
    /// Timed reads per cache size, after a quarter as many untimed ones to fill the cache.
    pub reads: usize,
    pub sizes: Vec<CachePoint>,
    /// The same reads straight to the raw backend.
    pub raw_ops_s: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct CachePoint {
    pub cache_mb: u64,
    pub ops_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Hits over hits and misses of the portal client's cache (lookups and block reads alike)
    /// during the timed reads; `None` when it counted nothing.
    pub hit_rate: Option<f64>,
}

/// How much each part does.
#[derive(Clone, Debug)]
pub(crate) struct Sizes {
    seq_clients: Vec<usize>,
    seq_object: usize,
    /// Each sequential pass moves at least this much (a single client writes several objects).
    seq_min_bytes: usize,
    seq_rounds: usize,
    large_clients: Vec<usize>,
    large_object: usize,
    large_min_bytes: usize,
    random_clients: Vec<usize>,
    random_object: usize,
    /// Per client count: ranged GETs and PUTs, all clients together.
    random_gets: usize,
    random_puts: usize,
    /// Objects of each small size, all clients together.
    small_objects: usize,
    latency_requests: usize,
    sweep_objects: usize,
    sweep_reads: usize,
    sweep_cache_mb: Vec<u64>,
}

impl Sizes {
    fn of(opts: Options) -> Sizes {
        if opts.quick {
            Sizes {
                seq_clients: vec![1, 10, 100],
                seq_object: 1 << 20,
                seq_min_bytes: 16 << 20,
                seq_rounds: 2,
                large_clients: vec![1, 10],
                large_object: 16 << 20,
                large_min_bytes: 64 << 20,
                random_clients: vec![1, 10],
                random_object: 16 << 20,
                random_gets: 200,
                random_puts: 100,
                small_objects: 200,
                latency_requests: 200,
                sweep_objects: 500,
                sweep_reads: 1000,
                sweep_cache_mb: vec![0, 1, 16],
            }
        } else {
            Sizes {
                seq_clients: vec![1, 10, 100],
                seq_object: 4 << 20,
                seq_min_bytes: 64 << 20,
                seq_rounds: 3,
                large_clients: vec![1, 10, 100],
                large_object: 16 << 20,
                large_min_bytes: 256 << 20,
                random_clients: vec![1, 10],
                random_object: 64 << 20,
                random_gets: 1000,
                random_puts: 400,
                small_objects: 1000,
                latency_requests: 1000,
                sweep_objects: 2000,
                sweep_reads: 10_000,
                sweep_cache_mb: vec![0, 1, 4, 16, 64],
            }
        }
    }
}

/// Runs every measurement; S3 when `VOUCH_S3_*` names a server.
pub fn run(opts: Options, progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let s3 = S3Config::from_env(Some("vouch")).map_err(|why| why.to_string());
    run_with(opts.quick, &Sizes::of(opts), s3, progress)
}

pub(crate) fn run_with(
    quick: bool,
    sizes: &Sizes,
    s3: Result<S3Config, String>,
    mut progress: impl FnMut(&str),
) -> Result<Report, SelfCheckFailed> {
    let rt = crate::measure::runtime()?;
    let scratch = tempfile::tempdir().map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    let mut skipped = Vec::new();
    let (blocks, raw, raw_text) = match s3 {
        Ok(config) => {
            // A prefix of this run's own: runs against one server never read each other's keys.
            let prefix = format!("bench-gateway-{:08x}/", rand::random::<u32>());
            let text = format!("the same client on S3, bucket {}, keys under {prefix}", config.bucket);
            let proxy_store = crate::store::s3_builder(&config)
                .with_unsigned_payload(true)
                .build()
                .map_err(|e| SelfCheckFailed(e.to_string()))?;
            let raw = Side { name: "raw", store: raw_s3(&config)?, prefix };
            (Blocks::S3(config), Some((raw, Arc::new(proxy_store) as Arc<dyn ObjectStore>)), Some(text))
        }
        Err(why) => {
            skipped.push(format!(
                "raw S3 comparison: {why} (e.g. eval \"$(scripts/minio.sh start DIR)\"); the gateway is measured over the local backend alone"
            ));
            (Blocks::Local, None, None)
        }
    };
    let provider_backend = if raw.is_some() { "s3" } else { "local" };
    let figures = rt.block_on(async {
        let portal = Portal::start(&blocks, scratch.path()).await?;
        let mut baselines = Vec::new();
        if let Some((raw, proxy_store)) = &raw {
            let proxied = format!("{}proxy/", raw.prefix);
            let addr = crate::gateway_proxy::start(proxy_store.clone(), proxied, ACCESS_KEY, SECRET_KEY)
                .await
                .map_err(|e| SelfCheckFailed(format!("proxy: {e}")))?;
            baselines = vec![raw.clone(), Side { name: "proxy", store: s3_client(addr)?, prefix: String::new() }];
        }
        let measured = measure(sizes, &portal, &baselines, &mut progress).await;
        if let Some((raw, _)) = &raw {
            raw.remove_all().await;
        }
        portal.server.shutdown().await.map_err(|e| SelfCheckFailed(e.to_string()))?;
        measured
    })?;
    let Figures { sequential, large, random, small, latency, cache_sweep } = figures;

    let measured = |target: Target| if raw.is_some() { target } else { target.unmeasured() };
    let mut targets = Vec::new();
    if let Some(most) = sequential.iter().max_by_key(|s| s.clients) {
        let ratio = |of: fn(&Throughput) -> f64| most.raw.as_ref().map_or(f64::NAN, |r| of(&most.gateway) / of(r));
        for (what, value) in [("write", ratio(|t| t.write_mb_s)), ("read", ratio(|t| t.read_mb_s))] {
            let name = format!("sequential {what}, {} clients x {} MiB, vs raw", most.clients, most.object_bytes >> 20);
            targets.push(measured(Target::at_least(&name, value, 0.9, "x", None)));
        }
    }
    // #47: the machine's CPU per MB through the gateway against raw S3's, the same run's.
    let cpu_ratio = |s: &Sequential, of: fn(&CpuPerMb) -> f64| match (s.gateway.cpu_ms_per_mb, &s.raw) {
        (Some(g), Some(Throughput { cpu_ms_per_mb: Some(r), .. })) => of(&g) / of(r),
        _ => f64::NAN,
    };
    for (passes, limit) in [(&sequential, 1.5), (&large, 1.25)] {
        for s in passes.iter() {
            let name = format!("write CPU per MB, {} clients x {} MiB, vs raw", s.clients, s.object_bytes >> 20);
            targets.push(measured(Target::at_most(&name, cpu_ratio(s, |c| c.write), limit, "x", None)));
        }
    }
    if let Some(most) = sequential.iter().max_by_key(|s| s.clients) {
        let name = format!("read CPU per MB, {} clients x {} MiB, vs raw", most.clients, most.object_bytes >> 20);
        targets.push(measured(Target::at_most(&name, cpu_ratio(most, |c| c.read), 1.5, "x", None)));
    }
    for f in &small {
        let ratio = |of: fn(&Small) -> Option<Ops>, gateway: Ops| of(f).map_or(f64::NAN, |r| gateway.ops_s / r.ops_s);
        for (what, value) in [("PUT", ratio(|f| f.raw_put, f.put)), ("GET", ratio(|f| f.raw_get, f.get))] {
            let name = format!("{} B {what}s per second, {} clients, vs raw", f.object_bytes, f.clients);
            targets.push(measured(Target::at_least(&name, value, 0.8, "x", None)));
        }
    }
    let overhead = latency.raw_get.map_or(f64::NAN, |r| latency.get_hot.p50_ms - r.p50_ms);
    targets.push(measured(Target::at_most("10 KB GET p50 overhead over raw, hot cache", overhead, 1.0, "ms", None)));
    Ok(Report {
        quick,
        provider_backend,
        raw: raw_text,
        skipped,
        sequential,
        large,
        random,
        small,
        latency,
        cache_sweep,
        targets,
    })
}

/// What [`measure`] measures, before the targets.
struct Figures {
    sequential: Vec<Sequential>,
    large: Vec<Sequential>,
    random: Vec<Random>,
    small: Vec<Small>,
    latency: Latency,
    cache_sweep: CacheSweep,
}

async fn measure(
    sizes: &Sizes,
    portal: &Portal,
    baselines: &[Side],
    progress: &mut impl FnMut(&str),
) -> Result<Figures, SelfCheckFailed> {
    let raw = baselines.iter().find(|s| s.name == "raw");
    // The gateway as configured by default (its cache on) for all but the cold reads and the sweep.
    let default_cache_mb = GatewayConfig::new("127.0.0.1:0", keys()).cache_mb;
    let mut gateway = portal.gateway(default_cache_mb).await?;
    let mut sequential = Vec::new();
    for &clients in &sizes.seq_clients {
        progress(&format!("gateway: sequential, {clients} clients"));
        let pass = Pass { clients, object: sizes.seq_object, min_bytes: sizes.seq_min_bytes };
        sequential.push(sequential_figure(sizes, pass, &gateway.side(), baselines).await?);
    }
    let mut large = Vec::new();
    for &clients in &sizes.large_clients {
        progress(&format!("gateway: sequential, {clients} clients, {} MiB objects", sizes.large_object >> 20));
        let pass = Pass { clients, object: sizes.large_object, min_bytes: sizes.large_min_bytes };
        large.push(sequential_figure(sizes, pass, &gateway.side(), baselines).await?);
    }
    let mut random = Vec::new();
    for &clients in &sizes.random_clients {
        progress(&format!("gateway: random 64 KiB, {clients} clients"));
        random.push(random_figure(sizes, clients, &gateway.side(), raw).await?);
    }

    let mut small = Vec::new();
    for object_bytes in SMALL_SIZES {
        progress(&format!("gateway: {object_bytes} B objects, {SMALL_CLIENTS} clients"));
        small.push(small_figure(sizes, object_bytes, &gateway.side(), raw).await?);
    }

    progress("gateway: latency of 10 KB objects");
    let n = sizes.latency_requests;
    let objects: Vec<Bytes> = (0..n).map(|i| Bytes::from(data(SMALL_BYTES, 0x1a7e_0000 + i as u64))).collect();
    let key = |i: usize| format!("latency/{i}");
    let puts = |side: &Side| vec![(0..n).map(|i| Op::Put(side.key(&key(i)), objects[i].clone())).collect()];
    let gets = |side: &Side| vec![(0..n).map(|i| Op::Get(side.key(&key(i)), objects[i].clone())).collect()];
    let put = drive(&gateway.side(), puts(&gateway.side())).await?.ops();
    drive(&gateway.side(), gets(&gateway.side())).await?; // fills the cache
    let get_hot = drive(&gateway.side(), gets(&gateway.side())).await?.ops();
    let (mut raw_put, mut raw_get) = (None, None);
    if let Some(raw) = raw {
        raw_put = Some(drive(raw, puts(raw)).await?.ops());
        raw_get = Some(drive(raw, gets(raw)).await?.ops());
    }
    gateway = gateway.restart(portal, 0).await?;
    let get_cold = drive(&gateway.side(), gets(&gateway.side())).await?.ops();
    let latency = Latency { object_bytes: SMALL_BYTES, requests: n, put, get_hot, get_cold, raw_put, raw_get };

    progress(&format!("gateway: cache sweep over {} objects of 10 KB", sizes.sweep_objects));
    let (cache_sweep, gateway) = cache_sweep(sizes, portal, gateway, raw, progress).await?;
    gateway.running.shutdown().await;
    Ok(Figures { sequential, large, random, small, latency, cache_sweep })
}

/// [`SMALL_CLIENTS`] clients put `sizes.small_objects` objects of `object_bytes` (each its
/// share), then read them back, through `gateway` and then `raw`.
async fn small_figure(
    sizes: &Sizes,
    object_bytes: usize,
    gateway: &Side,
    raw: Option<&Side>,
) -> Result<Small, SelfCheckFailed> {
    let n = sizes.small_objects.max(SMALL_CLIENTS);
    let objects = objects(n, object_bytes, 0x5a11_0000 + object_bytes as u64);
    let key = |i: usize| format!("small-{object_bytes}/{i}");
    let per_client = |side: &Side, op: fn(Key, Bytes) -> Op| -> Vec<Vec<Op>> {
        (0..SMALL_CLIENTS)
            .map(|c| (c..n).step_by(SMALL_CLIENTS).map(|i| op(side.key(&key(i)), objects[i].clone())).collect())
            .collect()
    };
    let run = async |side: &Side| -> Result<(Ops, Ops), SelfCheckFailed> {
        let put = drive(side, per_client(side, Op::Put)).await?.ops();
        let get = drive(side, per_client(side, Op::Get)).await?.ops();
        Ok((put, get))
    };
    let (put, get) = run(gateway).await?;
    let (raw_put, raw_get) = match raw {
        Some(raw) => run(raw).await.map(|(p, g)| (Some(p), Some(g)))?,
        None => (None, None),
    };
    Ok(Small { object_bytes, clients: SMALL_CLIENTS, put, get, raw_put, raw_get })
}

fn keys() -> Vec<AccessKey> {
    vec![AccessKey { access_key: ACCESS_KEY.into(), secret_key: SECRET_KEY.into() }]
}

/// The provider and the state of the client behind the gateway. Each gateway gets a client
/// opened afresh from that state, so its cache starts empty.
struct Portal {
    server: RunningServer,
    state: PathBuf,
}

impl Portal {
    async fn start(blocks: &Blocks, dir: &Path) -> Result<Portal, SelfCheckFailed> {
        let fail = |e: &dyn std::fmt::Display| SelfCheckFailed(e.to_string());
        let provider_dir = dir.join("provider");
        std::fs::create_dir_all(&provider_dir).map_err(|e| fail(&e))?;
        let provider = Provider::open_dir(&provider_dir, blocks).map_err(|e| fail(&e))?;
        let clients = HashMap::from([(token_hash(TOKEN), "bench".to_string())]);
        let server = vouch_server::start("127.0.0.1:0", provider, clients, std::future::pending())
            .await
            .map_err(|e| fail(&e))?;
        let state = dir.join("client");
        let client = Client::init(&state, &format!("http://{}", server.addr), TOKEN).map_err(|e| fail(&e))?;
        // The bucket, made the way the gateway's CreateBucket makes it.
        let empty = std::io::Cursor::new(Vec::new());
        client.put(&vouch_gateway::names::bucket_name(BUCKET), empty, None, |_| {}).await.map_err(|e| fail(&e))?;
        Ok(Portal { server, state })
    }

    async fn gateway(&self, cache_mb: u64) -> Result<Gateway, SelfCheckFailed> {
        let fail = |e: &dyn std::fmt::Display| SelfCheckFailed(format!("gateway: {e}"));
        let client = Arc::new(Client::open(&self.state).map_err(|e| fail(&e))?);
        let config = GatewayConfig { cache_mb, ..GatewayConfig::new("127.0.0.1:0", keys()) };
        let running = vouch_gateway::start(&config, client.clone()).await.map_err(|e| fail(&e))?;
        let store = s3_client(running.addr)?;
        Ok(Gateway { running, client, store })
    }
}

/// An S3 client of the endpoint at `addr` (a gateway or the proxy), bucket [`BUCKET`].
fn s3_client(addr: std::net::SocketAddr) -> Result<Arc<dyn ObjectStore>, SelfCheckFailed> {
    vouch_proto::tls::install_provider();
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(format!("http://{addr}"))
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(BUCKET)
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .build()
        .map_err(|e| SelfCheckFailed(format!("an S3 client of {addr}: {e}")))?;
    Ok(Arc::new(store))
}

struct Gateway {
    running: RunningGateway,
    /// The client behind it, for its cache's counters.
    client: Arc<Client>,
    store: Arc<dyn ObjectStore>,
}

impl Gateway {
    fn side(&self) -> Side {
        Side { name: "gateway", store: self.store.clone(), prefix: String::new() }
    }

    /// This gateway stopped and another started over the same state with `cache_mb`.
    async fn restart(self, portal: &Portal, cache_mb: u64) -> Result<Gateway, SelfCheckFailed> {
        self.running.shutdown().await;
        portal.gateway(cache_mb).await
    }
}

/// Where one side's requests go: the gateway's bucket, or the raw bucket under this run's prefix.
#[derive(Clone)]
struct Side {
    name: &'static str,
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

impl Side {
    fn key(&self, key: &str) -> Key {
        Key::from(format!("{}{key}", self.prefix))
    }

    /// Removes what this run wrote (best effort: the numbers are already taken).
    async fn remove_all(&self) {
        let prefix = Key::from(self.prefix.trim_end_matches('/'));
        let listed = self.store.list(Some(&prefix)).map(|meta| meta.map(|m| m.location)).boxed();
        let mut deleted = self.store.delete_stream(listed);
        while deleted.next().await.is_some() {}
    }
}

/// One request, with what it must return.
enum Op {
    Put(Key, Bytes),
    Get(Key, Bytes),
    Range(Key, Range<u64>, Bytes),
}

impl Op {
    async fn run(&self, store: &dyn ObjectStore) -> Result<(), String> {
        let got = match self {
            Op::Put(key, body) => {
                store.put(key, PutPayload::from_bytes(body.clone())).await.map_err(|e| format!("PUT {key}: {e}"))?;
                return Ok(());
            }
            Op::Get(key, _) => {
                let got = store.get(key).await.map_err(|e| format!("GET {key}: {e}"))?;
                got.bytes().await.map_err(|e| format!("GET {key}: {e}"))?
            }
            Op::Range(key, range, _) => {
                store.get_range(key, range.clone()).await.map_err(|e| format!("GET {key} {range:?}: {e}"))?
            }
        };
        let (Op::Get(key, want) | Op::Range(key, _, want)) = self else { unreachable!("a read") };
        if got != want {
            return Err(format!("{key} read back {} bytes that differ from the {} written", got.len(), want.len()));
        }
        Ok(())
    }
}

/// Requests made, the time they took, and the CPU seconds meanwhile: the machine's, and this
/// process's.
struct Timed {
    wall: Duration,
    latencies: Vec<Duration>,
    cpu_s: Option<(f64, f64)>,
}

impl Timed {
    fn ops(&self) -> Ops {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        Ops {
            ops: sorted.len(),
            ops_s: sorted.len() as f64 / self.wall.as_secs_f64(),
            p50_ms: percentile(&sorted, 0.50),
            p99_ms: percentile(&sorted, 0.99),
        }
    }
}

/// The nearest-rank percentile of `sorted`, in ms.
fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    ms(sorted[rank - 1])
}

/// Runs each list of requests as one client (its own task, one request at a time), all
/// clients at once; the wall time runs until the last one is done.
async fn drive(side: &Side, clients: Vec<Vec<Op>>) -> Result<Timed, SelfCheckFailed> {
    let cpu = CpuClock::now();
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|ops| {
            let store = side.store.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(ops.len());
                for op in &ops {
                    let t = Instant::now();
                    op.run(&*store).await?;
                    latencies.push(t.elapsed());
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        let done = task.await.map_err(|e| SelfCheckFailed(format!("{}: a client failed: {e}", side.name)))?;
        latencies.extend(done.map_err(|e| SelfCheckFailed(format!("{}: {e}", side.name)))?);
    }
    let wall = start.elapsed();
    // For a profile sliced by pass (`RUST_LOG=vouch_bench=debug`): which side ran, and when.
    tracing::debug!(side = side.name, requests = latencies.len(), seconds = wall.as_secs_f64(), "a pass ended");
    Ok(Timed { wall, latencies, cpu_s: cpu.and_then(|c| c.elapsed()) })
}

/// Objects of `len` bytes, each different (no block is shared, so none is stored once for two).
fn objects(count: usize, len: usize, seed: u64) -> Vec<Bytes> {
    (0..count).map(|i| Bytes::from(data(len, seed.wrapping_mul(1_000_003).wrapping_add(i as u64)))).collect()
}

fn mb_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

/// One sequential pass: `clients` clients, objects of `object` bytes, at least `min_bytes`
/// moved (a single client writes several objects).
#[derive(Clone, Copy)]
struct Pass {
    clients: usize,
    object: usize,
    min_bytes: usize,
}

async fn sequential_figure(
    sizes: &Sizes,
    Pass { clients, object, min_bytes }: Pass,
    gateway: &Side,
    baselines: &[Side],
) -> Result<Sequential, SelfCheckFailed> {
    let per_client = min_bytes.div_ceil(clients * object).max(1);
    let count = clients * per_client;
    let sides: Vec<&Side> = std::iter::once(gateway).chain(baselines).collect();
    // Per side: the best write and read, and the CPU seconds of every round's writes and
    // reads (the machine's, and this process's).
    let mut best = vec![(Duration::MAX, Duration::MAX); sides.len()];
    let mut cpu = Some(vec![[(0.0f64, 0.0f64); 2]; sides.len()]);
    for round in 0..sizes.seq_rounds {
        // Fresh bytes and keys each round; which side goes first turns with the rounds.
        let bodies = objects(count, object, (clients * 100 + round) as u64);
        let passes = |side: &Side| -> (Vec<Vec<Op>>, Vec<Vec<Op>>) {
            let key = |c: usize, j: usize| side.key(&format!("seq/{object}/{clients}/{round}/{c}-{j}"));
            let body = |c: usize, j: usize| bodies[c * per_client + j].clone();
            let each = |op: &dyn Fn(usize, usize) -> Op| -> Vec<Vec<Op>> {
                (0..clients).map(|c| (0..per_client).map(|j| op(c, j)).collect()).collect()
            };
            (each(&|c, j| Op::Put(key(c, j), body(c, j))), each(&|c, j| Op::Get(key(c, j), body(c, j))))
        };
        for turn in 0..sides.len() {
            let at = (round + turn) % sides.len();
            let side = sides[at];
            let (puts, gets) = passes(side);
            let (w, r) = (drive(side, puts).await?, drive(side, gets).await?);
            cpu = match (cpu, w.cpu_s, r.cpu_s) {
                (Some(mut sums), Some(cw), Some(cr)) => {
                    for (sum, (machine, own)) in sums[at].iter_mut().zip([cw, cr]) {
                        sum.0 += machine;
                        sum.1 += own;
                    }
                    Some(sums)
                }
                _ => None,
            };
            best[at] = (best[at].0.min(w.wall), best[at].1.min(r.wall));
        }
    }
    let bytes = count * object;
    let per_mb = |cpu_s: f64| cpu_s * 1e3 / (bytes as f64 * sizes.seq_rounds as f64 / 1e6);
    let figures = |at: usize| Throughput {
        write_mb_s: mb_s(bytes, best[at].0),
        read_mb_s: mb_s(bytes, best[at].1),
        cpu_ms_per_mb: cpu.as_ref().map(|sums| CpuPerMb { write: per_mb(sums[at][0].0), read: per_mb(sums[at][1].0) }),
        own_cpu_ms_per_mb: cpu
            .as_ref()
            .map(|sums| CpuPerMb { write: per_mb(sums[at][0].1), read: per_mb(sums[at][1].1) }),
    };
    let baseline = |name: &str| sides.iter().position(|s| s.name == name).map(figures);
    Ok(Sequential {
        clients,
        object_bytes: object,
        objects: count,
        rounds: sizes.seq_rounds,
        gateway: figures(0),
        raw: baseline("raw"),
        proxy: baseline("proxy"),
    })
}

async fn random_figure(
    sizes: &Sizes,
    clients: usize,
    gateway: &Side,
    raw: Option<&Side>,
) -> Result<Random, SelfCheckFailed> {
    let big = Bytes::from(data(sizes.random_object, 0xb16 + clients as u64));
    let big_key = format!("random/{clients}/big");
    let mut rng = StdRng::seed_from_u64(clients as u64);
    let gets_each = sizes.random_gets.div_ceil(clients);
    let offsets: Vec<Vec<u64>> = (0..clients)
        .map(|_| (0..gets_each).map(|_| rng.gen_range(0..=(big.len() - RANDOM_BYTES) as u64)).collect())
        .collect();
    let puts_each = sizes.random_puts.div_ceil(clients);
    let small = objects(clients * puts_each, RANDOM_BYTES, 0x5e11 + clients as u64);
    let small_key = |c: usize, j: usize| format!("random/{clients}/put/{c}-{j}");

    let mut figures = Vec::new();
    for side in std::iter::once(gateway).chain(raw) {
        drive(side, vec![vec![Op::Put(side.key(&big_key), big.clone())]]).await?;
        let gets = offsets
            .iter()
            .map(|offs| {
                offs.iter()
                    .map(|&at| {
                        let range = at..at + RANDOM_BYTES as u64;
                        Op::Range(side.key(&big_key), range, big.slice(at as usize..at as usize + RANDOM_BYTES))
                    })
                    .collect()
            })
            .collect();
        let get = drive(side, gets).await?.ops();
        let each = |op: &dyn Fn(Key, Bytes) -> Op| -> Vec<Vec<Op>> {
            (0..clients)
                .map(|c| {
                    (0..puts_each).map(|j| op(side.key(&small_key(c, j)), small[c * puts_each + j].clone())).collect()
                })
                .collect()
        };
        let put = drive(side, each(&Op::Put)).await?.ops();
        drive(side, each(&Op::Get)).await?; // untimed: what was put is there
        figures.push((get, put));
    }
    let (get, put) = figures[0];
    Ok(Random {
        clients,
        object_bytes: big.len(),
        op_bytes: RANDOM_BYTES,
        get,
        put,
        raw_get: figures.get(1).map(|f| f.0),
        raw_put: figures.get(1).map(|f| f.1),
    })
}

/// Reads of `objects` keys by `clients` clients, [`HOT_READS`] of them on [`HOT_KEYS`] of the
/// keys (chosen at random), the same for the same seed.
fn skewed_reads(objects: usize, reads: usize, clients: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..objects).collect();
    order.shuffle(&mut rng);
    let hot = ((objects as f64 * HOT_KEYS) as usize).max(1);
    let mut pick = move || {
        if rng.gen_bool(HOT_READS) {
            order[rng.gen_range(0..hot)]
        } else {
            order[rng.gen_range(hot.min(objects - 1)..objects)]
        }
    };
    (0..clients).map(|_| (0..reads.div_ceil(clients)).map(|_| pick()).collect()).collect()
}

async fn cache_sweep(
    sizes: &Sizes,
    portal: &Portal,
    mut gateway: Gateway,
    raw: Option<&Side>,
    progress: &mut impl FnMut(&str),
) -> Result<(CacheSweep, Gateway), SelfCheckFailed> {
    let n = sizes.sweep_objects;
    let bodies = objects(n, SMALL_BYTES, 0xcac4e);
    let key = |i: usize| format!("sweep/{i}");
    let writes = |side: &Side| -> Vec<Vec<Op>> {
        (0..SWEEP_CLIENTS)
            .map(|c| (c..n).step_by(SWEEP_CLIENTS).map(|i| Op::Put(side.key(&key(i)), bodies[i].clone())).collect())
            .collect()
    };
    let reads = |side: &Side, picks: &[Vec<usize>]| -> Vec<Vec<Op>> {
        picks.iter().map(|p| p.iter().map(|&i| Op::Get(side.key(&key(i)), bodies[i].clone())).collect()).collect()
    };
    let warm = skewed_reads(n, sizes.sweep_reads / 4, SWEEP_CLIENTS, 1);
    let timed = skewed_reads(n, sizes.sweep_reads, SWEEP_CLIENTS, 2);
    drive(&gateway.side(), writes(&gateway.side())).await?;
    let mut points = Vec::new();
    for &cache_mb in &sizes.sweep_cache_mb {
        progress(&format!("gateway: cache sweep, {cache_mb} MB"));
        gateway = gateway.restart(portal, cache_mb).await?;
        drive(&gateway.side(), reads(&gateway.side(), &warm)).await?;
        let before = gateway.client.cache().stats();
        let ops = drive(&gateway.side(), reads(&gateway.side(), &timed)).await?.ops();
        let after = gateway.client.cache().stats();
        let (hits, misses) = (after.hits - before.hits, after.misses - before.misses);
        let hit_rate = (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64);
        points.push(CachePoint { cache_mb, ops_s: ops.ops_s, p50_ms: ops.p50_ms, p99_ms: ops.p99_ms, hit_rate });
    }
    let mut raw_ops_s = None;
    if let Some(raw) = raw {
        drive(raw, writes(raw)).await?;
        drive(raw, reads(raw, &warm)).await?;
        raw_ops_s = Some(drive(raw, reads(raw, &timed)).await?.ops().ops_s);
    }
    let reads_done: usize = timed.iter().map(Vec::len).sum();
    check(reads_done >= sizes.sweep_reads, || format!("the sweep made {reads_done} reads"))?;
    let sweep = CacheSweep {
        objects: n,
        object_bytes: SMALL_BYTES,
        clients: SWEEP_CLIENTS,
        reads: reads_done,
        sizes: points,
        raw_ops_s,
    };
    Ok((sweep, gateway))
}

impl crate::Shown for Report {
    fn to_text(&self) -> String {
        let mut out = format!(
            "Gateway benchmark ({} run): provider blobs on {}; baseline: {}\n",
            if self.quick { "quick" } else { "full" },
            self.provider_backend,
            self.raw.as_deref().unwrap_or("none")
        );
        out += "sequential, whole objects, best of the rounds [Iris Fig. 5: 250-280 MB/s with 100 clients]:\n";
        for s in self.sequential.iter().chain(&self.large) {
            let side = |name: &str, t: &Throughput| {
                let cpu = match (t.cpu_ms_per_mb, t.own_cpu_ms_per_mb) {
                    (Some(c), Some(own)) => format!(
                        "; machine CPU per MB: write {:.2} ms, read {:.2} ms (this process {:.2}, {:.2})",
                        c.write, c.read, own.write, own.read
                    ),
                    _ => String::new(),
                };
                let ratio = |of: fn(&Throughput) -> f64| {
                    s.raw.as_ref().map_or(String::new(), |r| format!(" ({:.2}x)", of(t) / of(r)))
                };
                format!(
                    "      {name:<8} write {:.1} MB/s{}, read {:.1} MB/s{}{cpu}\n",
                    t.write_mb_s,
                    ratio(|t| t.write_mb_s),
                    t.read_mb_s,
                    ratio(|t| t.read_mb_s)
                )
            };
            out += &format!("  {:>3} client(s), {} x {} MiB:\n", s.clients, s.objects, s.object_bytes >> 20);
            out += &side("gateway", &s.gateway);
            for (name, t) in [("proxy", &s.proxy), ("raw", &s.raw)] {
                if let Some(t) = t {
                    out += &side(name, t);
                }
            }
        }
        let ops = |o: &Ops| format!("{:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms", o.ops_s, o.p50_ms, o.p99_ms);
        let raw_ops = |o: Option<Ops>| o.map_or(String::new(), |o| format!(" (raw {})", ops(&o)));
        for r in &self.random {
            out += &format!(
                "random, {} client(s): {} KiB ranged GETs of a {} MiB object {}{}; {} KiB PUTs {}{}\n",
                r.clients,
                r.op_bytes >> 10,
                r.object_bytes >> 20,
                ops(&r.get),
                raw_ops(r.raw_get),
                r.op_bytes >> 10,
                ops(&r.put),
                raw_ops(r.raw_put)
            );
        }
        for f in &self.small {
            let vs = |gateway: &Ops, raw: Option<Ops>| {
                raw.map_or(String::new(), |r| format!(" (raw {:.0}/s, {:.2}x)", r.ops_s, gateway.ops_s / r.ops_s))
            };
            out += &format!(
                "small objects, {} B, {} clients: PUT {:.0}/s{}, GET {:.0}/s{}\n",
                f.object_bytes,
                f.clients,
                f.put.ops_s,
                vs(&f.put, f.raw_put),
                f.get.ops_s,
                vs(&f.get, f.raw_get)
            );
        }
        let l = &self.latency;
        let p = |o: &Ops| format!("p50 {:.2} ms, p99 {:.2} ms", o.p50_ms, o.p99_ms);
        let raw_p = |o: Option<Ops>| o.map_or(String::new(), |o| format!(" (raw {})", p(&o)));
        out += &format!(
            "latency, {} B objects, one client, {} requests each [Iris Fig. 7]:\n  PUT {}{}\n  GET hot {}; cold {}{}\n",
            l.object_bytes,
            l.requests,
            p(&l.put),
            raw_p(l.raw_put),
            p(&l.get_hot),
            p(&l.get_cold),
            raw_p(l.raw_get)
        );
        if let Some(raw) = l.raw_get {
            out += &format!(
                "  p50 GET overhead over raw: hot {:+.2} ms, cold {:+.2} ms; PUT {:+.2} ms\n",
                l.get_hot.p50_ms - raw.p50_ms,
                l.get_cold.p50_ms - raw.p50_ms,
                l.raw_put.map_or(f64::NAN, |r| l.put.p50_ms - r.p50_ms)
            );
        }
        let c = &self.cache_sweep;
        out += &format!(
            "cache sweep, {} objects of {} B, {} reads by {} clients, {:.0}% on {:.0}% of the keys [Iris Fig. 4]:\n",
            c.objects,
            c.object_bytes,
            c.reads,
            c.clients,
            HOT_READS * 100.0,
            HOT_KEYS * 100.0
        );
        for s in &c.sizes {
            let hits = s.hit_rate.map_or(String::new(), |h| format!(", cache hits {:.0}%", h * 100.0));
            out += &format!(
                "  cache {:>3} MB: {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms{hits}\n",
                s.cache_mb, s.ops_s, s.p50_ms, s.p99_ms
            );
        }
        if let Some(r) = c.raw_ops_s {
            out += &format!("  raw: {r:.0} ops/s\n");
        }
        for s in &self.skipped {
            out += &format!("not measured: {s}\n");
        }
        out + &targets_text(&self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shown;

    #[test]
    fn a_tiny_run_over_the_local_backend_has_every_part() {
        let sizes = Sizes {
            seq_clients: vec![1, 3],
            seq_object: 64 << 10,
            seq_min_bytes: 128 << 10,
            seq_rounds: 1,
            large_clients: vec![2],
            large_object: 96 << 10,
            large_min_bytes: 96 << 10,
            random_clients: vec![2],
            random_object: 256 << 10,
            random_gets: 4,
            random_puts: 2,
            small_objects: 12,
            latency_requests: 3,
            sweep_objects: 5,
            sweep_reads: 8,
            sweep_cache_mb: vec![0, 1],
        };
        let report = run_with(true, &sizes, Err("no S3 here".into()), |_| {}).unwrap();
        assert_eq!(report.provider_backend, "local");
        assert_eq!(report.sequential.iter().map(|s| s.clients).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(report.sequential[0].objects, 2);
        assert_eq!(
            report.large.iter().map(|s| (s.clients, s.objects, s.object_bytes)).collect::<Vec<_>>(),
            [(2, 2, 96 << 10)]
        );
        assert!(report.sequential.iter().all(|s| s.gateway.write_mb_s > 0.0 && s.raw.is_none() && s.proxy.is_none()));
        // Where the machine's CPU is measured, this process's is too.
        for t in report.sequential.iter().map(|s| &s.gateway) {
            assert_eq!(t.cpu_ms_per_mb.is_some(), t.own_cpu_ms_per_mb.is_some(), "{t:?}");
            assert!(t.own_cpu_ms_per_mb.is_none_or(|c| c.write >= 0.0 && c.read >= 0.0), "{t:?}");
        }
        assert_eq!((report.random.len(), report.random[0].get.ops, report.random[0].put.ops), (1, 4, 2));
        assert_eq!(report.latency.get_cold.ops, 3);
        assert_eq!(report.small.iter().map(|f| f.object_bytes).collect::<Vec<_>>(), SMALL_SIZES);
        assert!(report.small.iter().all(|f| f.put.ops == 12 && f.get.ops == 12 && f.raw_get.is_none()));
        assert_eq!(report.cache_sweep.sizes.len(), 2);
        assert_eq!(report.skipped.len(), 1);
        // Sequential write and read, 10 KB latency; per pass its write CPU; the read CPU.
        assert_eq!(report.targets.len(), 3 + 2 * SMALL_SIZES.len() + 2 + 1 + 1);
        assert!(report.targets.iter().all(|t| t.met.is_none()));
        assert!(report.to_text().contains("targets:"));
    }
}
