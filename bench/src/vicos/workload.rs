//! The workload of `vouch bench aip`'s VICOS part: the Zipf sampler, the two targets (a
//! VICOS group, native `object_store`), the closed loop, and the self-check of every read.

use crate::e2e::data;
use crate::measure::{ms, CpuClock, SelfCheckFailed};
use bytes::Bytes;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use vouch_client::vicos::{is_busy, DirectObjects, Group};
use vouch_client::Remote;
use vouch_core::aip::{Keyring, Mode, Outcome};

/// The key space (the paper's 64 objects, Sec. 6).
pub(crate) const KEYS: usize = 64;
/// Tries of one native put before the bench gives up on it.
const NATIVE_TRIES: usize = 3;
/// Retries of one operation before the bench gives up on it.
const MAX_TRIES: usize = 10_000;

/// One point: a workload run by VICOS members and, when there is S3, by native clients.
#[derive(Debug, Serialize)]
pub struct Point {
    pub mode: &'static str,
    pub clients: usize,
    pub object_bytes: usize,
    pub reads_pct: u32,
    pub theta: f64,
    pub vicos: Run,
    /// VICOS with members reaching the object store themselves (scaling only, with S3).
    pub direct: Option<Run>,
    pub native: Option<Run>,
    /// Native, each operation after [`FLOOR_ROUND_TRIPS`] round trips to the provider that do
    /// nothing (scaling only): the floor any AIP client sits on here (see [`Target::Floor`]).
    pub floor: Option<Run>,
}

/// The messages an AIP client sends the provider per operation at the least: INVOKE, then
/// COMMIT (Alg. 1); an update's passive phase adds more.
pub const FLOOR_ROUND_TRIPS: usize = 2;

/// Operations done, at what rate, their latency (retries included) and success rates.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Run {
    pub ops: usize,
    pub ops_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub reads: Kind,
    pub writes: Kind,
    /// CPU time per operation, µs: of the whole machine (the S3 server's too), and of this
    /// process (members, provider and S3 clients). With every part on one machine's cores,
    /// the throughput of two runs goes as the inverse of their machine figures.
    pub machine_cpu_us_per_op: Option<f64>,
    pub own_cpu_us_per_op: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Kind {
    pub done: usize,
    pub attempted: usize,
    /// done / attempted; 1 when nothing was attempted.
    pub success_rate: f64,
}

/// A Zipf distribution over ranks `0..n`: P(i) ∝ 1 / (i+1)^θ.
pub(crate) struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub(crate) fn new(n: usize, theta: f64) -> Zipf {
        let weights: Vec<f64> = (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        Zipf {
            cdf: weights
                .iter()
                .map(|w| {
                    acc += w / total;
                    acc
                })
                .collect(),
        }
    }

    pub(crate) fn sample(&self, rng: &mut impl Rng) -> usize {
        let u: f64 = rng.gen();
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

/// The object with `seed` (its first 8 bytes).
fn object(len: usize, seed: u64) -> Bytes {
    let mut v = data(len.max(8), seed);
    v[..8].copy_from_slice(&seed.to_le_bytes());
    Bytes::from(v)
}

fn key_name(k: usize) -> String {
    format!("obj-{k:04}")
}

/// Where a workload runs: the members of a group, or native clients under a prefix.
#[derive(Clone)]
pub(crate) enum Target {
    Vicos(Arc<Vec<Group>>),
    Native(Arc<dyn ObjectStore>, String),
    /// Native, each operation after [`FLOOR_ROUND_TRIPS`] requests to the provider that do
    /// nothing (its health check: no journal, no signature, no dictionary). With the members,
    /// the provider and the S3 server on one machine's cores, no AIP implementation does an
    /// operation for less than this: its distance from native is what the messages alone
    /// cost here, and VICOS's distance from it is what the protocol's work costs.
    Floor(Arc<dyn ObjectStore>, String, Arc<Remote>),
}

/// The seeds written to each key (registered before the write starts).
pub(crate) type Written = Arc<Mutex<HashMap<usize, HashSet<u64>>>>;

impl Target {
    /// One attempt: `Ok(false)` on an ABORT or a busy provider.
    async fn put(&self, client: usize, k: usize, body: Bytes) -> Result<bool, String> {
        match self {
            Target::Vicos(members) => match members[client].put(key_name(k).as_bytes(), Cursor::new(body)).await {
                Ok(Outcome::Done(())) => Ok(true),
                Ok(Outcome::Abort) => Ok(false),
                Err(e) if is_busy(&e) => Ok(false),
                Err(e) => Err(format!("vicos put {}: {e}", key_name(k))),
            },
            Target::Floor(store, prefix, provider) => {
                round_trips(provider).await?;
                native_put(store, prefix, k, body).await
            }
            Target::Native(store, prefix) => native_put(store, prefix, k, body).await,
        }
    }

    /// One attempt: `Ok(None)` on an ABORT or a busy provider.
    async fn get(&self, client: usize, k: usize) -> Result<Option<Bytes>, String> {
        match self {
            Target::Vicos(members) => {
                let mut out = Vec::new();
                match members[client].get(key_name(k).as_bytes(), &mut out).await {
                    Ok(Outcome::Done(Some(_))) => Ok(Some(Bytes::from(out))),
                    Ok(Outcome::Done(None)) => Err(format!("vicos get {}: absent, yet written", key_name(k))),
                    Ok(Outcome::Abort) => Ok(None),
                    Err(e) if is_busy(&e) => Ok(None),
                    Err(e) => Err(format!("vicos get {}: {e}", key_name(k))),
                }
            }
            Target::Floor(store, prefix, provider) => {
                round_trips(provider).await?;
                native_get(store, prefix, k).await
            }
            Target::Native(store, prefix) => native_get(store, prefix, k).await,
        }
    }
}

async fn native_put(store: &Arc<dyn ObjectStore>, prefix: &str, k: usize, body: Bytes) -> Result<bool, String> {
    let key = Key::from(format!("{prefix}{}", key_name(k)));
    // MinIO on loopback now and then answers a put under load with a 400 (IncompleteBody)
    // that object_store does not retry: tried again, as an SDK user would, a few times.
    let mut tries = 0;
    loop {
        tries += 1;
        match store.put(&key, PutPayload::from_bytes(body.clone())).await {
            Ok(_) => return Ok(true),
            Err(e) if tries >= NATIVE_TRIES => return Err(format!("PUT {key}: {e}")),
            Err(_) => {}
        }
    }
}

async fn native_get(store: &Arc<dyn ObjectStore>, prefix: &str, k: usize) -> Result<Option<Bytes>, String> {
    let key = Key::from(format!("{prefix}{}", key_name(k)));
    let got = store.get(&key).await.map_err(|e| format!("GET {key}: {e}"))?;
    Ok(Some(got.bytes().await.map_err(|e| format!("GET {key}: {e}"))?))
}

/// The floor's requests to the provider, one after the other (as INVOKE and COMMIT are).
async fn round_trips(provider: &Remote) -> Result<(), String> {
    for _ in 0..FLOOR_ROUND_TRIPS {
        provider.health().await.map_err(|e| format!("the provider's health: {e}"))?;
    }
    Ok(())
}

/// Writes every key once (untimed), by `clients` clients.
pub(crate) async fn preload(
    target: &Target,
    clients: usize,
    len: usize,
    written: &Written,
) -> Result<(), SelfCheckFailed> {
    let spec = Spec { clients, ops: KEYS, len, reads_pct: 0, theta: 0.0, seed: 0, split: false };
    run_ops(target, &spec, written, move |c, j| (c + j * clients) % KEYS).await.map(|_| ())
}

/// What one closed-loop run does.
#[derive(Clone, Copy)]
pub(crate) struct Spec {
    pub clients: usize,
    /// All clients together.
    pub ops: usize,
    pub len: usize,
    pub reads_pct: u32,
    pub theta: f64,
    pub seed: u64,
    /// The paper's scalability workload (Sec. 6, Fig. 6): half of the objects only read, the
    /// other half only written, "so that operations never conflict" (no aborts).
    pub split: bool,
}

/// The workload of `spec`, keys drawn from Zipf(θ), after a warm-up: each client first reads
/// once, untimed (COSBench's prepare stage), so that the timed run is the steady state. A
/// member that has not spoken since the group's history grew checks all of that history at
/// its next REPLY (every operation since its last view, Alg. 2 check-view); a native client
/// opens its connection. Without it, the members of the larger points that the smaller ones
/// left idle would all catch up on the whole history inside the timed run.
pub(crate) async fn workload(target: &Target, spec: &Spec, written: &Written) -> Result<Run, SelfCheckFailed> {
    let warm_up = Spec { ops: spec.clients, reads_pct: 100, theta: 0.0, split: true, ..*spec };
    run_ops(target, &warm_up, written, |c, _| c).await?;
    let zipf = Arc::new(Zipf::new(KEYS, spec.theta));
    let seed = spec.seed;
    run_ops(target, spec, written, move |c, j| {
        let mut rng = StdRng::seed_from_u64(seed ^ ((c as u64) << 32) ^ j as u64);
        zipf.sample(&mut rng)
    })
    .await
}

/// Per client: latencies, reads (done, attempted), writes (done, attempted).
type ClientTally = (Vec<Duration>, (usize, usize), (usize, usize));

async fn run_ops(
    target: &Target,
    spec: &Spec,
    written: &Written,
    pick: impl Fn(usize, usize) -> usize + Clone + Send + Sync + 'static,
) -> Result<Run, SelfCheckFailed> {
    let each = spec.ops.div_ceil(spec.clients);
    let cpu = CpuClock::now();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..spec.clients {
        let (target, written, pick) = (target.clone(), written.clone(), pick.clone());
        let (len, reads_pct, seed, split) = (spec.len, spec.reads_pct, spec.seed, spec.split);
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(c as u64 * 7919));
            let mut t: ClientTally = (Vec::with_capacity(each), (0, 0), (0, 0));
            for j in 0..each {
                let read = rng.gen_range(0..100) < reads_pct;
                let k = match (split, read) {
                    (false, _) => pick(c, j),
                    (true, true) => pick(c, j) % (KEYS / 2),
                    (true, false) => KEYS / 2 + pick(c, j) % (KEYS / 2),
                };
                // A seed of this write's own, and its bytes, made before the clock starts.
                let s = (seed << 48) ^ ((c as u64) << 32) ^ ((j as u64) << 8) ^ k as u64;
                let body = (!read).then(|| object(len, s));
                if body.is_some() {
                    written.lock().expect("lock").entry(k).or_default().insert(s);
                }
                let began = Instant::now();
                let mut tries = 0;
                loop {
                    tries += 1;
                    if tries > MAX_TRIES {
                        return Err(format!("an operation on {} aborted {MAX_TRIES} times", key_name(k)));
                    }
                    if let Some(body) = &body {
                        t.2 .1 += 1;
                        if target.put(c, k, body.clone()).await? {
                            t.2 .0 += 1;
                            break;
                        }
                    } else {
                        t.1 .1 += 1;
                        if let Some(got) = target.get(c, k).await? {
                            t.1 .0 += 1;
                            verify(&got, k, len, &written)?;
                            break;
                        }
                    }
                }
                t.0.push(began.elapsed());
            }
            Ok::<_, String>(t)
        }));
    }
    let (mut latencies, mut reads, mut writes) = (Vec::new(), (0, 0), (0, 0));
    for task in tasks {
        let (l, r, w) =
            task.await.map_err(|e| SelfCheckFailed(format!("a client failed: {e}")))?.map_err(SelfCheckFailed)?;
        latencies.extend(l);
        (reads.0, reads.1, writes.0, writes.1) = (reads.0 + r.0, reads.1 + r.1, writes.0 + w.0, writes.1 + w.1);
    }
    // The objects the members' puts replaced and still hold queued go inside the clock: native
    // puts overwrite theirs, and each VICOS put pays for the delete of what it replaced.
    if let Target::Vicos(members) = target {
        futures::future::join_all(members.iter().map(|m| m.flush_retired())).await;
    }
    let wall = start.elapsed();
    let cpu = cpu.and_then(|c| c.elapsed());
    // For a profile sliced by run (`RUST_LOG=vouch_bench=debug`): what ran, and when.
    let what = match target {
        Target::Vicos(_) => "vicos",
        Target::Native(..) => "native",
        Target::Floor(..) => "floor",
    };
    tracing::debug!(
        target = what,
        clients = spec.clients,
        ops = latencies.len(),
        seconds = wall.as_secs_f64(),
        "a run ended"
    );
    latencies.sort();
    let per_op = |s: f64| s * 1e6 / latencies.len().max(1) as f64;
    let kind = |(done, attempted): (usize, usize)| Kind {
        done,
        attempted,
        success_rate: if attempted == 0 { 1.0 } else { done as f64 / attempted as f64 },
    };
    Ok(Run {
        ops: latencies.len(),
        ops_s: latencies.len() as f64 / wall.as_secs_f64(),
        p50_ms: percentile(&latencies, 0.50),
        p99_ms: percentile(&latencies, 0.99),
        reads: kind(reads),
        writes: kind(writes),
        machine_cpu_us_per_op: cpu.map(|(machine, _)| per_op(machine)),
        own_cpu_us_per_op: cpu.map(|(_, own)| per_op(own)),
    })
}

/// `got` is exactly an object written to key `k`.
fn verify(got: &[u8], k: usize, len: usize, written: &Written) -> Result<(), String> {
    let seed = got.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let known = seed.is_some_and(|s| written.lock().expect("lock").get(&k).is_some_and(|w| w.contains(&s)));
    if !known || got != &object(len, seed.unwrap_or(0))[..] {
        return Err(format!("{} read back {} bytes that are no object written to it", key_name(k), got.len()));
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    ms(sorted[rank - 1])
}

/// A group of `members` members on the provider at `url`, named `name`, in `mode`.
pub(crate) async fn group(
    url: &str,
    token: &str,
    name: &str,
    members: usize,
    mode: Mode,
    direct: Option<&DirectObjects>,
) -> Result<Target, SelfCheckFailed> {
    let fail = |e: &dyn std::fmt::Display| SelfCheckFailed(format!("group {name}: {e}"));
    let keys = || Keyring::hmac([0x5a; 32]);
    let remote = || Remote::new(url, token).map_err(|e| fail(&e));
    let reach = |g: Group| match direct {
        Some(d) => g.with_direct_objects(d.clone()),
        None => g,
    };
    let first = Group::create(remote()?, name, 0, keys(), mode, None).await.map_err(|e| fail(&e))?;
    let mut all = vec![reach(first)];
    for me in 1..members {
        all.push(reach(Group::join(remote()?, name, me as u32, keys(), mode)));
    }
    Ok(Target::Vicos(Arc::new(all)))
}

pub(crate) fn fresh_written() -> Written {
    Arc::new(Mutex::new(HashMap::new()))
}

pub(crate) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Compatible => "compatible",
        Mode::Commutative => "commutative",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_is_uniform_at_zero_and_skewed_at_point_99() {
        let mut rng = StdRng::seed_from_u64(1);
        let count = |theta: f64, rng: &mut StdRng| {
            let z = Zipf::new(64, theta);
            let mut c = vec![0usize; 64];
            for _ in 0..10_000 {
                c[z.sample(rng)] += 1;
            }
            c
        };
        let uniform = count(0.0, &mut rng);
        assert!(uniform.iter().all(|&n| (100..300).contains(&n)), "{uniform:?}");
        // The paper's Fig. 7: about 20% on the first object, about 0.3% on the last.
        let skewed = count(0.99, &mut rng);
        assert!((1700..2300).contains(&skewed[0]), "{skewed:?}");
        assert!(skewed[63] < 80, "{skewed:?}");
    }
}
