//! The provider side of a run: the real [`Provider`] over a directory (on a memory file
//! system where the OS has one), reached through [`SimLink`], which asks the adversary what
//! to do with each message. Copies of the directory are the provider's earlier states (for
//! rollbacks) and the branch of a fork.

use super::strategy::Strategy;
use crate::Rng;
use axum::body::Body;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use vouch_client::{Link, LinkAnswer, LinkRequest};
use vouch_proto::vicos::CosGetFrame;
use vouch_proto::{encode, ErrorBody, ErrorCode, Op, PROTOCOL_VERSION, VERSION_HEADER};
use vouch_server::{in_process, token_hash, Blocks, InProcess, Limits, Provider};

type Served = Arc<InProcess<Provider>>;

/// Where a run's directories go: memory when the OS offers it (fsyncs there cost nothing, and
/// a run's state is small), else the temporary directory.
fn scratch() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::Builder::new().prefix("vouch-sim-").tempdir_in(shm),
        false => tempfile::Builder::new().prefix("vouch-sim-").tempdir(),
    }
}

/// The provider's states: the live one, its copies, and a fork's branch.
pub(super) struct Providers {
    dir: tempfile::TempDir,
    clients: HashMap<[u8; 32], String>,
    /// The live provider; `None` only while it restarts.
    live: Option<Served>,
    /// The state's copies, oldest first.
    snapshots: Vec<PathBuf>,
    /// The branch one member is served from during a fork, and the token it comes with.
    fork: Option<(String, Served)>,
    copies: usize,
}

pub(super) async fn open(dir: &Path, clients: &HashMap<[u8; 32], String>) -> Result<Served, String> {
    let provider = Provider::open_dir(dir, &Blocks::Local).map_err(|e| format!("opening the provider: {e}"))?;
    let served = in_process(provider, clients.clone(), Limits::default())
        .await
        .map_err(|e| format!("starting the provider: {e}"))?;
    Ok(Arc::new(served))
}

impl Providers {
    pub(super) async fn new(tokens: &[(&str, &str)]) -> Result<Providers, String> {
        let dir = scratch().map_err(|e| format!("a scratch directory: {e}"))?;
        let clients: HashMap<[u8; 32], String> =
            tokens.iter().map(|(token, name)| (token_hash(token), name.to_string())).collect();
        let live = open(&dir.path().join("live"), &clients).await?;
        Ok(Providers { dir, clients, live: Some(live), snapshots: Vec::new(), fork: None, copies: 0 })
    }

    fn live_dir(&self) -> PathBuf {
        self.dir.path().join("live")
    }

    /// The provider crashes and restarts: what it held in memory is gone, what it wrote stays.
    pub(super) async fn crash(&mut self) -> Result<(), String> {
        // The routes hold the only handle; dropping them closes the database as a dead process
        // would leave it (no close, no checkpoint).
        self.live = None;
        self.live = Some(open(&self.live_dir(), &self.clients).await?);
        Ok(())
    }

    fn fresh_dir(&mut self) -> PathBuf {
        self.copies += 1;
        self.dir.path().join(format!("copy-{}", self.copies))
    }

    /// Keeps a copy of the live state.
    pub(super) fn snapshot(&mut self) -> Result<(), String> {
        let to = self.fresh_dir();
        copy_dir(&self.live_dir(), &to).map_err(|e| format!("copying the provider's state: {e}"))?;
        self.snapshots.push(to);
        Ok(())
    }

    /// The provider as it was at an earlier copy (the seed picks which), to answer one message.
    async fn rolled_back(&mut self, rng: &mut Rng) -> Result<Option<Served>, String> {
        if self.snapshots.is_empty() {
            return Ok(None);
        }
        let from = self.snapshots[rng.below(self.snapshots.len() as u64) as usize].clone();
        let to = self.fresh_dir();
        copy_dir(&from, &to).map_err(|e| format!("copying a snapshot: {e}"))?;
        Ok(Some(open(&to, &self.clients).await?))
    }

    /// From now on the client of `token` is served from a copy of the live state.
    pub(super) async fn fork(&mut self, token: &str) -> Result<(), String> {
        let to = self.fresh_dir();
        copy_dir(&self.live_dir(), &to).map_err(|e| format!("copying the provider's state: {e}"))?;
        self.fork = Some((token.to_string(), open(&to, &self.clients).await?));
        Ok(())
    }

    /// Every client is served from the live state again.
    pub(super) fn join(&mut self) -> bool {
        self.fork.take().is_some()
    }

    pub(super) fn forked(&self) -> bool {
        self.fork.is_some()
    }

    fn serving(&self, token: &str) -> Result<Served, String> {
        match &self.fork {
            Some((forked, branch)) if forked == token => Ok(branch.clone()),
            _ => self.live.clone().ok_or_else(|| "the provider did not come back from a crash".to_string()),
        }
    }

    /// The files of the live provider's blob store (segments, PoR levels, objects), in a
    /// stable order.
    pub(super) fn blobs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(&self.live_dir().join("blobs"), &mut out);
        out.sort();
        out
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match path.is_dir() {
            true => walk(&path, out),
            false => out.push(path),
        }
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        match entry.file_type()?.is_dir() {
            true => copy_dir(&entry.path(), &target)?,
            false => drop(std::fs::copy(entry.path(), target)?),
        }
    }
    Ok(())
}

/// An answer as the adversary holds it: whole.
#[derive(Clone, Debug)]
struct Held {
    status: u16,
    body: Bytes,
    /// The connection drops after the body.
    cut: bool,
}

/// What the link shares with the run: the providers, the adversary's choices and what it saw.
pub(super) struct Adversary {
    pub(super) providers: Providers,
    pub(super) rng: Rng,
    /// The strategies this run may use besides [`Strategy::Honest`], and how often (percent of
    /// messages).
    pub(super) strategies: Vec<Strategy>,
    pub(super) rate: u64,
    /// The operation this run's adversary goes after (swarm testing): its messages meet a
    /// strategy one time in two.
    pub(super) focus: Option<Op>,
    /// Off: every message is answered honestly (the simulator's own checks of recovery).
    pub(super) active: bool,
    /// Every whole successful answer, by operation: what replays draw from.
    seen: BTreeMap<String, Vec<Bytes>>,
    /// Every request, by operation, with its token.
    asked: BTreeMap<String, Vec<(String, Bytes)>>,
    /// How often each strategy was used.
    pub(super) used: BTreeMap<Strategy, u64>,
    /// Operations the provider was asked, by name.
    pub(super) ops: BTreeMap<String, u64>,
    /// A strategy other than an honest fault was used.
    pub(super) lied: bool,
    /// A crash happened since the flag was last cleared.
    pub(super) crashed: bool,
    /// A group message was answered from another state (a rollback or a replayed answer):
    /// the members may have been shown diverging histories without an explicit fork.
    pub(super) group_forked: bool,
    /// What it did other than answer honestly, since the run last took these lines.
    pub(super) log: Vec<String>,
}

impl Adversary {
    pub(super) fn new(
        providers: Providers,
        rng: Rng,
        strategies: Vec<Strategy>,
        rate: u64,
        focus: Option<Op>,
    ) -> Adversary {
        Adversary {
            providers,
            rng,
            strategies,
            rate,
            focus,
            active: true,
            seen: BTreeMap::new(),
            asked: BTreeMap::new(),
            used: BTreeMap::new(),
            ops: BTreeMap::new(),
            lied: false,
            crashed: false,
            log: Vec::new(),
            group_forked: false,
        }
    }

    fn choose(&mut self, op: Op) -> Strategy {
        let rate = match self.focus == Some(op) {
            true => 50,
            false => self.rate,
        };
        if !self.active || !self.rng.percent(rate) {
            return Strategy::Honest;
        }
        let strategies: Vec<Strategy> = self.strategies.iter().copied().filter(|s| s.applies_to(op)).collect();
        self.rng.pick(&strategies).copied().unwrap_or(Strategy::Honest)
    }
}

/// The client's link to the provider, through the adversary, one message at a time.
#[derive(Clone)]
pub(super) struct SimLink(pub(super) Arc<tokio::sync::Mutex<Adversary>>);

impl Link for SimLink {
    fn exchange(&self, request: LinkRequest) -> BoxFuture<'static, Result<LinkAnswer, std::io::Error>> {
        let adversary = self.0.clone();
        async move {
            let LinkRequest { op, token, body } = request;
            let pieces: Vec<Bytes> = body.collect::<Vec<_>>().await.into_iter().collect::<Result<_, _>>()?;
            let body: Bytes = pieces.concat().into();
            let answer = adversary.lock().await.answer(op, &token, body).await?;
            let mut pieces = vec![Ok(answer.body)];
            if answer.cut {
                pieces.push(Err(dropped()));
            }
            let body = futures::stream::iter(pieces).boxed();
            Ok(LinkAnswer { status: answer.status, server_ms: None, body })
        }
        .boxed()
    }
}

fn dropped() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the connection dropped")
}

fn unavailable() -> Held {
    let body = ErrorBody { code: ErrorCode::Storage, message: "storage unavailable (simulated)".into() };
    Held { status: 503, body: encode(&body).into(), cut: false }
}

impl Adversary {
    async fn answer(&mut self, op: Op, token: &str, body: Bytes) -> Result<Held, std::io::Error> {
        let strategy = self.choose(op);
        *self.used.entry(strategy).or_default() += 1;
        *self.ops.entry(op.to_string()).or_default() += 1;
        self.lied |= !strategy.is_honest();
        let group_message = op.to_string().starts_with("aip-");
        self.group_forked |= group_message && matches!(strategy, Strategy::Rollback | Strategy::ReplayAnswer);
        if strategy != Strategy::Honest {
            self.log.push(format!("  {op} from {token}: {strategy:?}"));
        }
        let fail = |e: String| std::io::Error::other(e);
        match strategy {
            Strategy::Refuse => return Ok(unavailable()),
            Strategy::CrashBefore => {
                self.restart().await.map_err(fail)?;
                return Err(dropped());
            }
            _ => {}
        }
        let served = self.providers.serving(token).map_err(fail)?;
        self.asked.entry(op.to_string()).or_default().push((token.to_string(), body.clone()));
        let held = match strategy {
            Strategy::ReplayAnswer => match self.seen.get(&op.to_string()) {
                Some(old) if !old.is_empty() => {
                    let body = old[self.rng.below(old.len() as u64) as usize].clone();
                    return Ok(Held { status: 200, body, cut: false });
                }
                _ => call(&served, op, token, body).await,
            },
            Strategy::ReplayRequest => {
                if let Some(old) = self.asked.get(&op.to_string()).filter(|old| !old.is_empty()) {
                    let (old_token, old_body) = old[self.rng.below(old.len() as u64) as usize].clone();
                    if let Ok(old_served) = self.providers.serving(&old_token) {
                        call(&old_served, op, &old_token, old_body).await;
                    }
                }
                call(&served, op, token, body.clone()).await
            }
            Strategy::Rollback => match self.providers.rolled_back(&mut self.rng).await.map_err(fail)? {
                Some(old) => call(&old, op, token, body).await,
                None => call(&served, op, token, body).await,
            },
            _ => call(&served, op, token, body).await,
        };
        drop(served);
        if (200..300).contains(&held.status) && !held.cut && strategy == Strategy::Honest {
            self.seen.entry(op.to_string()).or_default().push(held.body.clone());
        }
        match strategy {
            Strategy::LoseAnswer => Err(dropped()),
            Strategy::CrashAfter => {
                self.restart().await.map_err(fail)?;
                Err(dropped())
            }
            Strategy::ApplyThenRefuse => Ok(unavailable()),
            Strategy::Truncate if !held.body.is_empty() => {
                let cut = self.rng.below(held.body.len() as u64) as usize;
                Ok(Held { body: held.body.slice(..cut), ..held })
            }
            Strategy::CutThenNotFound if op == Op::CosGet && held.status == 200 => {
                Ok(Held { body: cut_then_not_found(&held.body, &mut self.rng), ..held })
            }
            Strategy::Corrupt if !held.body.is_empty() => {
                let mut bytes = held.body.to_vec();
                let at = self.rng.below(bytes.len() as u64) as usize;
                bytes[at] ^= 1 << self.rng.below(8);
                Ok(Held { body: bytes.into(), ..held })
            }
            _ => Ok(held),
        }
    }

    pub(super) async fn restart(&mut self) -> Result<(), String> {
        self.crashed = true;
        self.providers.crash().await
    }
}

/// The first frames of an object's stream (as many as the seed says), then a "not found".
fn cut_then_not_found(body: &Bytes, rng: &mut Rng) -> Bytes {
    let mut decoder = vouch_proto::frame::Decoder::new();
    decoder.extend(body);
    let mut frames = Vec::new();
    while let Ok(Some(frame)) = decoder.next_frame() {
        frames.push(frame);
    }
    let keep = rng.below(frames.len() as u64 + 1) as usize;
    let mut out = Vec::new();
    for frame in &frames[..keep.min(frames.len().saturating_sub(1))] {
        vouch_proto::frame::put(&mut out, frame);
    }
    let gone = ErrorBody { code: ErrorCode::NotFound, message: "the object is gone (simulated)".into() };
    out.extend_from_slice(&vouch_proto::encode_frame(&CosGetFrame::Error(gone)));
    out.into()
}

/// One request through `served`'s routes, its whole answer collected.
async fn call(served: &InProcess<Provider>, op: Op, token: &str, body: Bytes) -> Held {
    let builder = match op {
        Op::Health => axum::http::Request::get(op.path()),
        _ => axum::http::Request::post(op.path()),
    };
    let request = builder
        .header(VERSION_HEADER, PROTOCOL_VERSION.to_string())
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body))
        .expect("a request of valid parts");
    let response = served.call(request).await;
    let status = response.status().as_u16();
    match axum::body::to_bytes(response.into_body(), usize::MAX).await {
        Ok(body) => Held { status, body, cut: false },
        // The provider's answer stream failed part way (a read of damaged data): the client
        // sees the connection drop.
        Err(_) => Held { status, body: Bytes::new(), cut: true },
    }
}
