//! AIP's server (paper 003, Alg. 3): it orders operations, answers each INVOKE from its state,
//! and applies operations in their order as they are authenticated. The passive phase, its
//! delegation and the takeover of a failed client (Sec. 3.7) are in [`passive`].

mod passive;

use super::{
    auth_statement, commit_statement, own_pending,
    wire::{DELTA_BYTES, MAX_DELTA},
    ClientId, Commit, Committed, Functionality, HistoryPage, Invoke, Invoked, Keyring, KeyringError, Reply, Signature,
    Signed, Status, ViewParts, Wire,
};
use crate::hash::Digest;
use std::collections::{BTreeMap, BTreeSet};

/// Why the server refused a client's message (a client out of step, a buggy one, or one to
/// retry later; never a reason to change state). `E` is the functionality's
/// [`Functionality::StateError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServerError<E> {
    #[error("client {client} says it cleared operation {cleared}, past the last applied one ({applied})")]
    ClearedTooFar { client: ClientId, cleared: u64, applied: u64 },
    #[error("client {client} has no operation {q} to commit (or committed it already)")]
    NoSuchOperation { client: ClientId, q: u64 },
    #[error("operation {q} is not the next to authenticate (that is {next})")]
    NotNext { client: ClientId, q: u64, next: u64 },
    #[error("operation {q} is authenticated already (another member was faster)")]
    AlreadyAuthenticated { q: u64 },
    #[error("the authenticator for operation {q} is not the state's after it")]
    WrongAuthenticator { q: u64 },
    #[error("operation {0} is no longer kept")]
    Forgotten(u64),
    /// The operations `client` has not cleared are more than one message shows (#43 item
    /// 10): it reads them in pages first ([`Server::history`]), then invokes again.
    #[error("client {client} cleared operation {cleared} of {applied}: more than one message shows; it reads the history in pages first")]
    Behind { client: ClientId, cleared: u64, applied: u64 },
    #[error("a message from client {client} carries a signature of client {by}")]
    SignedByAnother { client: ClientId, by: ClientId },
    #[error("client {client}'s INVOKE counter {counter} is not past its last one ({last}): a replay, or another process speaking as this member (join again with another --id)")]
    CounterReused { client: ClientId, counter: u64, last: u64 },
    #[error("the pending list is full ({pending} of {max}): retry once operations have completed")]
    PendingFull { pending: u64, max: u64 },
    #[error("client {0} was taken over: it may not take part any more")]
    Retired(ClientId),
    #[error("client {client} cannot take over for client {failed}")]
    CannotTakeOver { client: ClientId, failed: ClientId },
    /// The functionality cannot answer operation `q` (an operation no state takes) or apply
    /// it (a state that does not hold together).
    #[error("the functionality cannot answer or apply operation {q}: {error}")]
    Functionality { q: u64, error: E },
}

/// A new group's genesis, made by its creator: operation 0 (`op`, a no-op) committed, and
/// `state`'s authenticator signed after it; `O[0]` and `A[0]`, what [`Server::new`] starts from.
pub fn genesis<F: Functionality>(
    keys: &Keyring,
    creator: ClientId,
    op: F::Op,
    state: &F::State,
) -> Result<Genesis<F>, KeyringError> {
    let bytes = op.to_wire();
    let chain = Digest::ZERO;
    let phi = keys.sign(creator, &commit_statement(0, &bytes, creator, Status::Success, &chain))?;
    let auth = F::auth_of(state);
    let psi = keys.sign(creator, &auth_statement(&bytes, 0, &chain, &auth.to_wire()))?;
    let genesis =
        Committed { op, status: Status::Success, phi: Signature { by: creator, bytes: phi }, client: creator };
    Ok((genesis, Signed { auth, psi: Signature { by: creator, bytes: psi } }))
}

/// `O[0]` and `A[0]`: a group's first operation, committed, and the authenticator after it.
pub type Genesis<F> = (Committed<<F as Functionality>::Op>, Signed<<F as Functionality>::Auth>);

/// A message the server refused, for functionality `F`.
pub type Refusal<F> = ServerError<<F as Functionality>::StateError>;

/// How the server runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The most operations that may be pending (`t - b`, at least 1); an INVOKE beyond is
    /// refused with [`ServerError::PendingFull`] (Sec. 5.2 "Bounded pending list": 128 in the
    /// paper).
    pub max_pending: u64,
    /// The group's members. Known, the server forgets the committed operations every member
    /// has cleared (Sec. 3.3); unknown (`None`), it keeps them all, since a member it has not
    /// heard from yet may need the whole history.
    pub members: Option<BTreeSet<ClientId>>,
    /// The most bytes of committed operations one answer shows (a REPLY's or a takeover's
    /// `δ`, a page of the history), besides [`MAX_DELTA`] operations; an INVOKE whose `δ`
    /// would be larger is refused with [`ServerError::Behind`].
    pub delta_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig { max_pending: 128, members: None, delta_bytes: DELTA_BYTES }
    }
}

/// What an accepted INVOKE's REPLY carries: its view (as the caller shows it), the position
/// `t`, the response and `σ_o`.
struct Answer<V, F: Functionality> {
    view: V,
    t: u64,
    response: F::Response,
    aux: F::Aux,
}

/// The server's state: `t`, `b`, `d`, the maps `I`, `O`, `A`, and `s`.
#[derive(Clone, Debug)]
pub struct Server<F: Functionality> {
    config: ServerConfig,
    /// `t`: the last invoked operation's sequence number.
    invoked_up_to: u64,
    /// `b`: the last applied operation's.
    applied: u64,
    /// `d`: the last applied update's (Sec. 3.7: queries are applied unauthenticated).
    last_update: u64,
    /// `I[b+1..=t]`.
    invoked: BTreeMap<u64, Invoked<F::Op>>,
    /// `O`, from the oldest any member may still need.
    committed: BTreeMap<u64, Committed<F::Op>>,
    /// `A[d]` (older authenticators are never sent again).
    auth: Signed<F::Auth>,
    state: F::State,
    /// Each client's `c` in its last INVOKE; its next one says as much or more.
    cleared: BTreeMap<ClientId, u64>,
    /// Clients taken over (Sec. 3.7), and who took over each.
    retired: BTreeMap<ClientId, ClientId>,
    /// The last position each client sent a COMMIT for: it has seen the history up to there,
    /// so it can authenticate that far (Sec. 3.7 delegation).
    seen_up_to: BTreeMap<ClientId, u64>,
    /// The counter of each client's last INVOKE taken: its next one signs a larger one, so a
    /// repeated counter is a replay (or a second process speaking as the same member), refused
    /// before it takes a position that every member would report as a replay (#43 item 9).
    counters: BTreeMap<ClientId, u64>,
}

impl<F: Functionality> Server<F> {
    /// A server starting from the group's genesis: operation 0, committed and authenticated by
    /// the group's creator over `state`.
    pub fn new(genesis: Committed<F::Op>, auth: Signed<F::Auth>, state: F::State) -> Server<F> {
        Server {
            config: ServerConfig::default(),
            invoked_up_to: 0,
            applied: 0,
            last_update: 0,
            invoked: BTreeMap::new(),
            committed: BTreeMap::from([(0, genesis)]),
            auth,
            state,
            cleared: BTreeMap::new(),
            retired: BTreeMap::new(),
            seen_up_to: BTreeMap::new(),
            counters: BTreeMap::new(),
        }
    }

    /// A new group's server: operation 0 (`op`, a no-op) committed and authenticated over
    /// `state` by the group's creator, whose keyring signs both ([`genesis`]).
    pub fn genesis(keys: &Keyring, creator: ClientId, op: F::Op, state: F::State) -> Result<Server<F>, KeyringError> {
        let (genesis, auth) = genesis::<F>(keys, creator, op, &state)?;
        Ok(Server::new(genesis, auth, state))
    }

    pub fn with_config(mut self, config: ServerConfig) -> Server<F> {
        self.config = config;
        self
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Changes how the server runs from now on (what it keeps is kept).
    pub fn set_config(&mut self, config: ServerConfig) {
        self.config = config;
    }

    /// `b`.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// `t`.
    pub fn invoked(&self) -> u64 {
        self.invoked_up_to
    }

    pub fn state(&self) -> &F::State {
        &self.state
    }

    /// How many operations the server keeps in `O` and `I` (bounded once members are known).
    pub fn retained(&self) -> usize {
        self.committed.len() + self.invoked.len()
    }

    /// Whether the pending list is at its bound: an INVOKE now would be refused.
    pub fn pending_full(&self) -> bool {
        self.invoked_up_to - self.applied >= self.max_pending()
    }

    /// The bound on the pending list; 0 would refuse every operation for ever.
    fn max_pending(&self) -> u64 {
        self.config.max_pending.max(1)
    }

    fn refuse_retired(&self, client: ClientId) -> Result<(), Refusal<F>> {
        match self.retired.contains_key(&client) {
            true => Err(ServerError::Retired(client)),
            false => Ok(()),
        }
    }

    /// `δ` for a client that cleared `c`: `O[c+1..=b]`, or `O[b]`; then `O[d]` and `A[d]`;
    /// borrowed from the maps.
    fn view(&self, client: ClientId, c: u64) -> Result<ViewParts<'_, F>, Refusal<F>> {
        let b = self.applied;
        if c > b {
            return Err(ServerError::ClearedTooFar { client, cleared: c, applied: b });
        }
        let kept = |l: u64| self.committed.get(&l).ok_or(ServerError::Forgotten(l));
        let first = if b == c { b } else { c + 1 };
        let delta: Vec<_> = self.committed.range(first..=b).map(|(_, o)| o).collect();
        if delta.len() as u64 != b - first + 1 {
            // Everything up to `b` was committed: what is missing was forgotten.
            let missing = (first..=b).find(|l| !self.committed.contains_key(l)).unwrap_or(first);
            return Err(ServerError::Forgotten(missing));
        }
        if self.fitting(delta.iter().copied()) < delta.len() {
            return Err(ServerError::Behind { client, cleared: c, applied: b });
        }
        // An aborted operation committed already goes with its COMMIT signature (Sec. 3.7).
        let mark = |l: u64| self.committed.get(&l).filter(|c| c.status == Status::Abort).map(|c| &c.phi);
        let omega = self.invoked.range(b + 1..).map(|(&l, i)| (i, mark(l))).collect();
        Ok(ViewParts { delta, b, authenticated: kept(self.last_update)?, alpha: &self.auth, omega })
    }

    /// How many of `ops`, from the first, one answer shows: at most [`MAX_DELTA`], and at
    /// most [`ServerConfig::delta_bytes`] of their encodings (always one, however large).
    fn fitting<'a>(&self, ops: impl Iterator<Item = &'a Committed<F::Op>>) -> usize
    where
        F::Op: 'a,
    {
        let (mut n, mut bytes, mut scratch) = (0, 0, Vec::new());
        for op in ops.take(MAX_DELTA) {
            scratch.clear();
            op.encode(&mut scratch);
            bytes += scratch.len();
            if n > 0 && bytes > self.config.delta_bytes {
                break;
            }
            n += 1;
        }
        n
    }

    /// A page of the history from operation `first` on, for `client` far behind (#43 item 10):
    /// as many committed operations as one answer shows, up to the last applied one; none
    /// when `first` is past it. Changes nothing.
    pub fn history(&self, client: ClientId, first: u64) -> Result<HistoryPage<F::Op>, Refusal<F>> {
        self.refuse_retired(client)?;
        let b = self.applied;
        if first == 0 {
            return Err(ServerError::ClearedTooFar { client, cleared: first, applied: b });
        }
        if first > b {
            return Ok(HistoryPage { first, delta: Vec::new(), more: false });
        }
        if !self.committed.contains_key(&first) {
            return Err(ServerError::Forgotten(first));
        }
        let n = self.fitting(self.committed.range(first..=b).map(|(_, o)| o));
        let delta: Vec<_> = self.committed.range(first..=b).take(n).map(|(_, o)| o.clone()).collect();
        let more = first + (delta.len() as u64) <= b;
        Ok(HistoryPage { first, delta, more })
    }

    /// The INVOKE handler: assigns the next sequence number and answers with the REPLY. A full
    /// pending list refuses the operation, changing nothing (Sec. 5.2; an [`super::Inbox`]
    /// holds INVOKEs back instead, as the paper's server buffers them); so does an operation
    /// the functionality cannot answer, before it takes a position.
    pub fn on_invoke(&mut self, from: ClientId, m: Invoke<F::Op>) -> Result<Reply<F>, Refusal<F>> {
        let Answer { view, t, response, aux } = self.invoke(from, m, |view| view.to_view())?;
        Ok(Reply { view, t, response, aux })
    }

    /// [`Server::on_invoke`] with the REPLY in its wire encoding (the same bytes), written
    /// straight from the server's maps: the history a REPLY shows is not copied first.
    pub fn on_invoke_wire(&mut self, from: ClientId, m: Invoke<F::Op>) -> Result<Vec<u8>, Refusal<F>> {
        let encode = |view: &ViewParts<'_, F>| {
            // About what an operation with its signature takes, so that the buffer seldom grows.
            let mut out = Vec::with_capacity(1024 + 160 * (view.delta.len() + view.omega.len()));
            view.encode(&mut out);
            out
        };
        let Answer { view: mut out, t, response, aux } = self.invoke(from, m, encode)?;
        t.encode(&mut out);
        response.encode(&mut out);
        aux.encode(&mut out);
        Ok(out)
    }

    /// [`Server::on_invoke`] with no REPLY: an INVOKE accepted before, replayed (its position).
    pub fn replay_invoke(&mut self, from: ClientId, m: Invoke<F::Op>) -> Result<u64, Refusal<F>> {
        self.invoke(from, m, |_| ()).map(|answer| answer.t)
    }

    /// The INVOKE's checks and state change; the REPLY's view as `show` makes it of the view
    /// before the change, `ω` ending with the new operation.
    fn invoke<V>(
        &mut self,
        from: ClientId,
        m: Invoke<F::Op>,
        show: impl FnOnce(&ViewParts<'_, F>) -> V,
    ) -> Result<Answer<V, F>, Refusal<F>> {
        self.refuse_retired(from)?;
        if self.pending_full() {
            let pending = self.invoked_up_to - self.applied;
            return Err(ServerError::PendingFull { pending, max: self.max_pending() });
        }
        if let Some(&last) = self.counters.get(&from) {
            if m.counter <= last {
                return Err(ServerError::CounterReused { client: from, counter: m.counter, last });
            }
        }
        let t = self.invoked_up_to + 1;
        let invoked = Invoked { op: m.op, tau: m.tau, client: from, counter: m.counter };
        let (shown, response, aux) = {
            let mut view = self.view(from, m.cleared)?;
            view.omega.push((&invoked, None));
            // The client committed its earlier operations before this one (FIFO): their status.
            let b = view.b;
            let status = |k: usize| self.committed.get(&(b + 1 + k as u64)).map(|c| c.status);
            let mine = own_pending(from, view.omega.iter().map(|&(i, _)| i), status);
            let (response, aux) =
                F::query(&self.state, &mine).map_err(|error| ServerError::Functionality { q: t, error })?;
            (show(&view), response, aux)
        };
        self.invoked_up_to = t;
        self.counters.insert(from, invoked.counter);
        self.invoked.insert(t, invoked);
        self.cleared.insert(from, m.cleared);
        self.forget_old();
        Ok(Answer { view: shown, t, response, aux })
    }

    /// The COMMIT handler: `O[q]`. A query needs no passive phase (Sec. 3.7): once it is the
    /// next operation, it is applied as it is. A member that took over for a failed client may
    /// commit the failed client's operations, as aborted only.
    pub fn on_commit(&mut self, from: ClientId, m: Commit<F::Op>) -> Result<(), Refusal<F>> {
        self.refuse_retired(from)?;
        let Commit { op, t: q, status, client, phi } = m;
        if phi.by != from {
            return Err(ServerError::SignedByAnother { client: from, by: phi.by });
        }
        let may_commit = client == from || (self.retired.get(&client) == Some(&from) && status == Status::Abort);
        match self.invoked.get(&q) {
            Some(i) if may_commit && i.client == client && i.op == op && !self.committed.contains_key(&q) => {
                self.committed.insert(q, Committed { op, status, phi, client });
                let seen = self.seen_up_to.entry(from).or_insert(q);
                *seen = (*seen).max(q);
                self.apply_queries();
                Ok(())
            }
            _ => Err(ServerError::NoSuchOperation { client: from, q }),
        }
    }

    /// Applies the committed queries next in line (Sec. 3.7): `b` moves past them, `d` and
    /// `A[d]` stay.
    fn apply_queries(&mut self) {
        while let Some(next) = self.committed.get(&(self.applied + 1)) {
            if !F::is_query(&next.op) {
                break;
            }
            self.applied += 1;
        }
        self.forget_old();
    }

    /// Garbage collection (Sec. 3.3): `I` keeps the pending operations only; `O` keeps what
    /// a member's next view may need (from the `c` of its last INVOKE on: its next `c` is no
    /// smaller), `O[d]`, and the pending ones. Members are known from the configuration; one
    /// never heard from needs everything, a retired one nothing.
    fn forget_old(&mut self) {
        let b = self.applied;
        self.invoked = self.invoked.split_off(&(b + 1));
        let Some(members) = &self.config.members else { return };
        let oldest_needed = members
            .iter()
            .filter(|m| !self.retired.contains_key(m))
            .map(|m| self.cleared.get(m).copied().unwrap_or(0))
            .min()
            .unwrap_or(b);
        let keep_from = oldest_needed.min(self.last_update);
        self.committed = self.committed.split_off(&keep_from);
    }
}
