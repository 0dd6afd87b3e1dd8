//! The VICOS part of `vouch bench aip` (paper 003, Sec. 6): a COSBench-like closed loop of
//! members of one VICOS group over a real provider, beside the same workload run by as many
//! `object_store` clients straight on the same S3 server (native COS, a key prefix of its own).
//!
//! A provider (its blobs on S3 when `VOUCH_S3_*` names a server, else local); per object size
//! and mode one group of members (HMAC keys, each its own [`Group`]) over [`KEYS`] keys written
//! once before (untimed). Each client then runs its share of a fixed number of operations:
//! a read with probability `reads_pct`, else a write, of a key drawn from a Zipf distribution
//! of factor θ (Gray et al., as YCSB). An ABORT (or a full pending list) is retried until the
//! operation is done; success rate = done / attempted, per kind. Latency counts the retries.
//!
//! Every object carries its seed in its first 8 bytes; a read must return exactly the bytes
//! of a seed written to that key.
//!
//! Over N, a floor beside native ([`Target::Floor`]): the native operation after the two
//! messages an AIP operation sends at the least, each a request to the provider that does
//! nothing. On one machine it shows what the messages alone cost, whatever the protocol does.

mod workload;

pub use workload::{Kind, Point, Run};
pub(crate) use workload::{Zipf, KEYS};

use crate::measure::SelfCheckFailed;
use object_store::path::Path as Key;
use serde::Serialize;
use std::collections::HashMap;
use vouch_client::vicos::{DirectObjects, S3Access};
use vouch_core::aip::Mode;
use workload::*;

/// The VICOS figures of `vouch bench aip`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Where the provider keeps its blobs: `s3` or `local`.
    pub provider_backend: &'static str,
    /// The native baseline, when there is one.
    pub native: Option<String>,
    pub skipped: Vec<String>,
    pub key_space: usize,
    /// 10 KB objects, 80% reads, θ = 0, compatible: VICOS and native over N (Figs. 5, 6),
    /// reads and writes on disjoint halves of the objects as in the paper (no conflicts).
    pub scaling: Vec<Point>,
    /// Each object size, 50% reads, θ = 0 (Fig. 5), reads and writes on disjoint halves.
    pub sizes: Vec<Point>,
    /// 10 KB, 20% reads, each mode and θ (Fig. 8); VICOS alone (native never aborts).
    pub success: Vec<Point>,
}

/// How much each part does.
#[derive(Clone, Debug)]
pub(crate) struct Sizes {
    pub clients: Vec<usize>,
    pub object_bytes: Vec<usize>,
    pub size_clients: usize,
    /// Operations per point for 10 KB objects (fewer for larger ones).
    pub ops: usize,
    pub success_clients: usize,
    pub thetas: Vec<f64>,
}

impl Sizes {
    pub(crate) fn of(quick: bool) -> Sizes {
        Sizes {
            clients: if quick { vec![1, 4] } else { vec![1, 4, 16, 64, 128] },
            object_bytes: if quick { vec![10_000, 1_000_000] } else { vec![1_000, 10_000, 100_000, 1_000_000] },
            size_clients: 4,
            ops: if quick { 400 } else { 2000 },
            success_clients: if quick { 4 } else { 16 },
            thetas: vec![0.0, 0.5, 0.75, 0.99],
        }
    }

    /// The member counts of the in-memory protocol part: those of the scaling part.
    pub(crate) fn protocol_members(&self) -> &[usize] {
        &self.clients
    }

    fn ops_for(&self, len: usize, clients: usize) -> usize {
        (self.ops * 10_000 / len.max(10_000)).max(40).max(clients * 4)
    }
}

const TOKEN: &str = "bench";
const SMALL: usize = 10_000;

pub(crate) fn run_with(
    rt: &tokio::runtime::Runtime,
    sizes: &Sizes,
    s3: Result<vouch_store::S3Config, String>,
    progress: &mut impl FnMut(&str),
) -> Result<Report, SelfCheckFailed> {
    let fail = |e: &dyn std::fmt::Display| SelfCheckFailed(format!("vicos: {e}"));
    let scratch = tempfile::tempdir().map_err(|e| fail(&e))?;
    let mut skipped = Vec::new();
    let mut direct = None;
    let (blocks, native) = match s3 {
        Ok(config) => {
            let prefix = format!("bench-aip-{:08x}/", rand::random::<u32>());
            let access = S3Access {
                endpoint: config.endpoint.clone(),
                bucket: config.bucket.clone(),
                region: config.region.clone(),
                access_key: config.access_key.clone(),
                secret_key: config.secret_key.clone(),
            };
            direct = Some(DirectObjects::s3(&access).map_err(|e| fail(&e))?);
            (vouch_server::Blocks::S3(config.clone()), Some((crate::store::raw_s3(&config)?, prefix, config.bucket)))
        }
        Err(why) => {
            skipped.push(format!("native COS comparison: {why} (e.g. eval \"$(scripts/minio.sh start DIR)\")"));
            (vouch_server::Blocks::Local, None)
        }
    };
    let native_text =
        native.as_ref().map(|(_, p, b)| format!("object_store on the same S3, bucket {b}, keys under {p}"));
    rt.block_on(async {
        let provider = vouch_server::Provider::open_dir(scratch.path(), &blocks).map_err(|e| fail(&e))?;
        let clients = HashMap::from([(vouch_server::token_hash(TOKEN), "bench".to_string())]);
        let server = vouch_server::start("127.0.0.1:0", provider, clients, std::future::pending())
            .await
            .map_err(|e| fail(&e))?;
        let url = format!("http://{}", server.addr);
        let mut natives = HashMap::new();
        let mut native_for = async |len: usize, clients: usize| -> Result<Option<(Target, Written)>, SelfCheckFailed> {
            let Some((store, prefix, _)) = &native else { return Ok(None) };
            if let Some(n) = natives.get(&len) {
                return Ok(Some(n).cloned());
            }
            let (t, w) = (Target::Native(store.clone(), format!("{prefix}{len}/")), fresh_written());
            preload(&t, clients, len, &w).await?;
            natives.insert(len, (t.clone(), w.clone()));
            Ok(Some((t, w)))
        };
        let point = async |target: &Target,
                           written: &Written,
                           native: Option<&(Target, Written)>,
                           mode: Mode,
                           spec: Spec|
               -> Result<Point, SelfCheckFailed> {
            let vicos = workload(target, &spec, written).await?;
            let native = match native {
                Some((t, w)) => Some(workload(t, &spec, w).await?),
                None => None,
            };
            let Spec { clients, len, reads_pct, theta, .. } = spec;
            Ok(Point {
                mode: mode_name(mode),
                clients,
                object_bytes: len,
                reads_pct,
                theta,
                vicos,
                direct: None,
                native,
                floor: None,
            })
        };
        let most = sizes.clients.iter().copied().max().unwrap_or(1);
        progress(&format!("vicos: {KEYS} objects of 10 KB, 1-{most} clients, VICOS and native"));
        let g = group(&url, TOKEN, "scaling", most, Mode::Compatible, None).await?;
        let w = fresh_written();
        preload(&g, most.min(16), SMALL, &w).await?;
        let n = native_for(SMALL, most.min(16)).await?;
        // The paper's architecture (Fig. 3): members reach the object store themselves.
        let mut on_their_own = None;
        if let Some(direct) = &direct {
            let g = group(&url, TOKEN, "scaling-direct", most, Mode::Compatible, Some(direct)).await?;
            let w = fresh_written();
            preload(&g, most.min(16), SMALL, &w).await?;
            on_their_own = Some((g, w));
        }
        // The floor: native, after the messages an AIP operation sends at the least.
        let floor = match &n {
            Some((Target::Native(store, prefix), w)) => {
                let provider = vouch_client::Remote::new(&url, TOKEN).map_err(|e| fail(&e))?;
                Some((Target::Floor(store.clone(), prefix.clone(), std::sync::Arc::new(provider)), w.clone()))
            }
            _ => None,
        };
        let mut scaling = Vec::new();
        for &clients in &sizes.clients {
            progress(&format!("vicos: 10 KB, 80% reads, {clients} clients"));
            let spec = || Spec {
                clients,
                ops: sizes.ops_for(SMALL, clients),
                len: SMALL,
                reads_pct: 80,
                theta: 0.0,
                seed: 1 + clients as u64,
                split: true,
            };
            let mut p = point(&g, &w, n.as_ref(), Mode::Compatible, spec()).await?;
            if let Some((g, w)) = &on_their_own {
                p.direct = Some(workload(g, &spec(), w).await?);
            }
            if let Some((t, w)) = &floor {
                p.floor = Some(workload(t, &spec(), w).await?);
            }
            scaling.push(p);
        }
        let mut by_size = Vec::new();
        for &len in &sizes.object_bytes {
            progress(&format!("vicos: {len} B objects, 50% reads, {} clients", sizes.size_clients));
            let c = sizes.size_clients;
            let g = group(&url, TOKEN, &format!("size-{len}"), c, Mode::Compatible, None).await?;
            let w = fresh_written();
            preload(&g, c, len, &w).await?;
            let n = native_for(len, c).await?;
            let spec =
                Spec { clients: c, ops: sizes.ops_for(len, c), len, reads_pct: 50, theta: 0.0, seed: 7, split: true };
            by_size.push(point(&g, &w, n.as_ref(), Mode::Compatible, spec).await?);
        }
        let mut success = Vec::new();
        for mode in [Mode::Compatible, Mode::Commutative] {
            let c = sizes.success_clients;
            let g = group(&url, TOKEN, &format!("success-{}", mode_name(mode)), c, mode, None).await?;
            let w = fresh_written();
            preload(&g, c, SMALL, &w).await?;
            for &theta in &sizes.thetas {
                progress(&format!("vicos: success rate, {}, θ = {theta}, {c} clients", mode_name(mode)));
                let spec = Spec {
                    clients: c,
                    ops: sizes.ops_for(SMALL, c),
                    len: SMALL,
                    reads_pct: 20,
                    theta,
                    seed: 11,
                    split: false,
                };
                success.push(point(&g, &w, None, mode, spec).await?);
            }
        }
        if let Some((store, prefix, _)) = &native {
            use futures::StreamExt;
            let listed =
                store.list(Some(&Key::from(prefix.trim_end_matches('/')))).map(|m| m.map(|m| m.location)).boxed();
            let mut deleted = store.delete_stream(listed);
            while deleted.next().await.is_some() {}
        }
        server.shutdown().await.map_err(|e| fail(&e))?;
        let provider_backend = if native.is_some() { "s3" } else { "local" };
        Ok(Report { provider_backend, native: native_text, skipped, key_space: KEYS, scaling, sizes: by_size, success })
    })
}

impl Report {
    /// 1 − VICOS / native throughput at the largest N, with members reaching the object store
    /// themselves (the paper's setup) when that was measured; NaN without a baseline.
    pub fn overhead(&self) -> (usize, f64) {
        let last = self.scaling.last();
        let value =
            last.and_then(|p| p.native.map(|n| 1.0 - p.direct.unwrap_or(p.vicos).ops_s / n.ops_s)).unwrap_or(f64::NAN);
        (last.map_or(0, |p| p.clients), value)
    }

    /// The write success rate in compatible mode at θ = 0.99.
    pub fn compatible_writes_at_99(&self) -> f64 {
        let p = self.success.iter().find(|p| p.mode == "compatible" && p.theta == 0.99);
        p.map_or(f64::NAN, |p| p.vicos.writes.success_rate)
    }

    pub fn to_text(&self) -> String {
        let mut out = format!(
            "VICOS, {} objects, provider blobs on {}; native baseline: {}\n",
            self.key_space,
            self.provider_backend,
            self.native.as_deref().unwrap_or("none")
        );
        let run = |r: &Run| {
            let cpu = match (r.machine_cpu_us_per_op, r.own_cpu_us_per_op) {
                (Some(machine), Some(own)) => format!(", CPU/op {machine:.0} µs (this process {own:.0})"),
                _ => String::new(),
            };
            format!("{:>7.0} ops/s, p50 {:>7.2} ms, p99 {:>7.2} ms{cpu}", r.ops_s, r.p50_ms, r.p99_ms)
        };
        let line = |p: &Point| {
            let mut native = p.native.as_ref().map_or(String::new(), |n| {
                format!("\n      native {} -> VICOS/native {:.2}x", run(n), p.vicos.ops_s / n.ops_s)
            });
            if let (Some(d), Some(n)) = (&p.direct, &p.native) {
                native += &format!("\n      VICOS, objects direct {} -> /native {:.2}x", run(d), d.ops_s / n.ops_s);
            }
            if let (Some(f), Some(n)) = (&p.floor, &p.native) {
                native += &format!(
                    "\n      floor (native + {FLOOR_ROUND_TRIPS} no-op provider requests) {} -> /native {:.2}x",
                    run(f),
                    f.ops_s / n.ops_s
                );
            }
            format!(
                "  {:>3} clients, {:>7} B, {}% reads, θ {}: VICOS {} ({} ops){native}\n",
                p.clients,
                p.object_bytes,
                p.reads_pct,
                p.theta,
                run(&p.vicos),
                p.vicos.ops
            )
        };
        out += "throughput and latency over N, 10 KB, half the objects read and half written (Sec. 6) [VICOS Figs. \
                5, 6: +16-24% latency]:\n";
        self.scaling.iter().for_each(|p| out += &line(p));
        out += "object sizes (half the objects read, half written):\n";
        self.sizes.iter().for_each(|p| out += &line(p));
        out += "success rate (done / attempted), 20% reads [VICOS Fig. 8: compatible writes 100%]:\n";
        for p in &self.success {
            let (r, w) = (&p.vicos.reads, &p.vicos.writes);
            out += &format!(
                "  {:<11} θ {:<4}: reads {:.3} ({}/{}), writes {:.3} ({}/{}), {} clients\n",
                p.mode, p.theta, r.success_rate, r.done, r.attempted, w.success_rate, w.done, w.attempted, p.clients
            );
        }
        for s in &self.skipped {
            out += &format!("not measured: {s}\n");
        }
        out
    }
}
