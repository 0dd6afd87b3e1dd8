//! The adversary in the link: per message, what the provider does (a [`Strategy`]), and the
//! run's view of what it did. Whole requests and answers pass through it, so that it can
//! replay, cut or corrupt them.

use super::providers::Providers;
use super::strategy::Strategy;
use super::views::Views;
use crate::Rng;
use axum::body::Body;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use std::collections::BTreeMap;
use std::sync::Arc;
use vouch_client::{Link, LinkAnswer, LinkRequest};
use vouch_proto::vicos::CosGetFrame;
use vouch_proto::{decode, encode, CommitStagedRequest, ErrorBody, ErrorCode, Op, PROTOCOL_VERSION, VERSION_HEADER};
use vouch_server::{InProcess, Provider};

/// An answer as the adversary holds it: whole.
#[derive(Clone, Debug)]
pub(super) struct Held {
    pub(super) status: u16,
    pub(super) body: Bytes,
    /// The connection drops after the body.
    pub(super) cut: bool,
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
    /// A blob was lost or damaged on disk since the provider last started: it may still
    /// answer from what it holds in memory.
    pub(super) damaged_on_disk: bool,
    /// A group message was answered from another state (a rollback or a replayed answer):
    /// the members may have been shown diverging histories without an explicit fork.
    pub(super) group_forked: bool,
    /// What it did other than answer honestly, since the run last took these lines.
    pub(super) log: Vec<String>,
    /// Another member's operation, armed by the run, that a [`Strategy::Delay`] of the next
    /// INVOKE of the client with this token runs first.
    pub(super) interleave: Option<(String, BoxFuture<'static, ()>)>,
    /// Other puts of a file owner, armed by the run, to start before that owner's next
    /// `commit-staged` goes on (they stage while it waits, and commit together after it).
    pub(super) before_commit: Option<(String, BoxFuture<'static, ()>)>,
    /// The positions of the INVOKEs each member was shown.
    pub(super) views: Views,
    /// The members whose read of an object it cut, until their next INVOKE.
    cut_reads: std::collections::HashSet<String>,
    /// The choices of [`Strategy::HoldBatch`], apart from `rng`.
    pub(super) hold: Rng,
    /// Whether [`Strategy::HoldBatch`] names free slots when asked, apart from `hold`.
    pub(super) free_answers: Rng,
    /// Percent of those answers that name no free slot while no batch is kept.
    pub(super) names_none: u64,
    /// A copy of the state where a kept batch was applied, to splice in after the client's
    /// batch at hand ([`Adversary::splice_kept`]).
    pub(super) splice_from: Option<std::path::PathBuf>,
    /// The clients whose last question for free slots it answered with none.
    pub(super) named_none: std::collections::BTreeSet<String>,
    /// Each client's PoR upload parts (`por-stage`) since its last batch.
    pub(super) staging: BTreeMap<String, Vec<Bytes>>,
    /// Each client's refused PoR batch it keeps.
    pub(super) kept: BTreeMap<String, Kept>,
    /// The labels of every batch it refused and kept, by client and key: what it may serve.
    pub(super) kept_labels: BTreeMap<(String, Vec<u8>), Vec<u8>>,
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
            damaged_on_disk: false,
            log: Vec::new(),
            group_forked: false,
            interleave: None,
            before_commit: None,
            views: Views::default(),
            cut_reads: Default::default(),
            hold: Rng::new(0),
            free_answers: Rng::new(0),
            names_none: 30,
            named_none: Default::default(),
            splice_from: None,
            staging: BTreeMap::new(),
            kept: BTreeMap::new(),
            kept_labels: BTreeMap::new(),
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
        let strategies: Vec<Strategy> =
            self.strategies.iter().copied().filter(|s| !s.is_scheduled() && s.applies_to(op)).collect();
        // A strategy made for a few operations meets only their messages: it is chosen for
        // them half the time, or it would hardly ever run.
        let specific: Vec<Strategy> = strategies.iter().copied().filter(|s| s.is_specific()).collect();
        if !specific.is_empty() && self.rng.percent(50) {
            return self.rng.pick(&specific).copied().unwrap_or(Strategy::Honest);
        }
        self.rng.pick(&strategies).copied().unwrap_or(Strategy::Honest)
    }

    /// The puts to start before this message, when it is the `commit-staged` of the owner
    /// they were armed for (a schedule an honest provider also sees: no lie, no choice).
    fn before_commit(&mut self, op: Op, token: &str) -> Option<BoxFuture<'static, ()>> {
        let armed = matches!(&self.before_commit, Some((armed_for, _)) if armed_for == token);
        match armed && op == Op::CommitStaged {
            true => self.before_commit.take().map(|(_, puts)| puts),
            false => None,
        }
    }

    /// The operation to run before this message ([`Strategy::Delay`]), when one is armed for
    /// its client and the seed says so.
    fn delay(&mut self, op: Op, token: &str) -> Option<BoxFuture<'static, ()>> {
        let armed = matches!(&self.interleave, Some((armed_for, _)) if armed_for == token);
        if !self.active || !armed || !Strategy::Delay.applies_to(op) {
            return None;
        }
        // The adversary's own tactic: a member whose read it cut asks the group again, and
        // that INVOKE waits until the other member replaced the object.
        let after_cut = self.cut_reads.remove(token);
        if !after_cut && !self.rng.percent(30) {
            return None;
        }
        *self.used.entry(Strategy::Delay).or_default() += 1;
        self.log.push(format!("  {op} from {token}: Delay"));
        self.interleave.take().map(|(_, other)| other)
    }
}

/// How the coverage counts a `commit-staged` of several puts.
pub const GROUP_COMMIT: &str = "commit-staged of several puts";

/// The client's link to the provider, through the adversary, one message at a time.
#[derive(Clone)]
pub(super) struct SimLink(pub(super) Arc<tokio::sync::Mutex<Adversary>>);

impl Link for SimLink {
    fn exchange(&self, request: LinkRequest) -> BoxFuture<'static, Result<LinkAnswer, std::io::Error>> {
        let adversary = self.0.clone();
        async move {
            let (op, token, body) = whole(request).await?;
            // Outside the lock: the other member's messages come through this link too.
            let delayed = adversary.lock().await.delay(op, &token);
            if let Some(other) = delayed {
                other.await;
            }
            let started = adversary.lock().await.before_commit(op, &token);
            if let Some(puts) = started {
                puts.await;
            }
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

/// A request with its body gathered: the simulated provider answers whole messages.
pub(super) async fn whole(request: LinkRequest) -> Result<(Op, String, Bytes), std::io::Error> {
    let LinkRequest { op, token, body } = request;
    let pieces: Vec<Bytes> = body.collect::<Vec<_>>().await.into_iter().collect::<Result<_, _>>()?;
    Ok((op, token, pieces.concat().into()))
}

fn dropped() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the connection dropped")
}

pub(super) fn unavailable() -> Held {
    let body = ErrorBody { code: ErrorCode::Storage, message: "storage unavailable (simulated)".into() };
    Held { status: 503, body: encode(&body).into(), cut: false }
}

impl Adversary {
    async fn answer(&mut self, op: Op, token: &str, body: Bytes) -> Result<Held, std::io::Error> {
        self.splice_from = None;
        let released = op == Op::PorWrite && self.apply_kept(token).await.map_err(std::io::Error::other)?;
        if let Some(label) = self.kept_label(op, token, &body).await.map_err(std::io::Error::other)? {
            return Ok(label);
        }
        if let Some(none) = self.names_no_free(op, token) {
            return Ok(none);
        }
        let strategy = self.choose(op);
        *self.used.entry(strategy).or_default() += 1;
        *self.ops.entry(op.to_string()).or_default() += 1;
        if op == Op::CommitStaged && decode::<CommitStagedRequest>(&body).is_ok_and(|r| r.puts.len() > 1) {
            *self.ops.entry(GROUP_COMMIT.to_string()).or_default() += 1;
        }
        self.lied |= !strategy.is_honest();
        let group_message = op.to_string().starts_with("aip-");
        self.group_forked |= group_message && matches!(strategy, Strategy::Rollback | Strategy::ReplayAnswer);
        if strategy != Strategy::Honest {
            self.log.push(format!("  {op} from {token}: {strategy:?}"));
        }
        let fail = |e: String| std::io::Error::other(e);
        self.stage_seen(op, token, &body);
        if !released && self.keeps(op, token, &body) {
            return Ok(self.keep(token, body));
        }
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
        if let Some(from) = self.splice_from.take() {
            self.splice_kept(from, held.status).await.map_err(fail)?;
        }
        if (200..300).contains(&held.status) && !held.cut && strategy == Strategy::Honest {
            self.seen.entry(op.to_string()).or_default().push(held.body.clone());
        }
        let intact = matches!(strategy, Strategy::Honest | Strategy::ReplayRequest);
        if op == Op::AipInvoke && held.status == 200 && !held.cut && intact {
            self.views.shown(token, &held.body);
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
                self.cut_reads.insert(token.to_string());
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
        self.damaged_on_disk = false;
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
pub(super) async fn call(served: &InProcess<Provider>, op: Op, token: &str, body: Bytes) -> Held {
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

/// What the adversary does with a batch it keeps, chosen when it keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// Its labels served later; the batch itself let go at the client's next one.
    Labels,
    /// Applied later, past the client's fence.
    Apply,
    /// Applied on a copy of the state beside the client's next batch, its levels spliced
    /// into the live state over that batch's: two authentic versions of a level mixed
    /// (#43 item 3).
    Splice,
}

/// A client's PoR batch the adversary refused and keeps.
pub(super) struct Kept {
    /// Its staged upload parts, then the batch itself.
    pub(super) parts: Vec<Bytes>,
    pub(super) batch: Bytes,
    pub(super) plan: Plan,
}
