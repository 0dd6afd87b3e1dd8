//! AIP's client (paper 003, Alg. 1–2): `aip-invoke`, the REPLY handler, `check-view`,
//! `check-pending` and `extend-chain`. The passive phase (UPDATE-AUTH, delegated batches)
//! and the takeover of a failed client (Sec. 3.7) are in [`passive`]; saving and restoring
//! the state, for a member that runs as one process per operation, in [`state`].

mod chain;
mod passive;
mod state;

pub use passive::OwnUpdate;
pub use state::{RestoreError, MAX_SAVED_LINKS, MAX_SAVED_POSITION};

use super::{
    auth_statement, chain, commit_statement, commit_statement_into, invoke_statement, invoke_statement_into,
    separate_pending,
    wire::{MAX_DELTA, MAX_PENDING},
    ClientId, Commit, Committed, Functionality, HistoryPage, Invoke, Invoked, Keyring, Pending, Reply, Signature,
    Signed, Status, View, Violation, Wire,
};
use crate::hash::Digest;
use chain::{Chain, Link};
use std::collections::BTreeMap;

/// What an operation returned: its response, or ABORT (a pending operation of another client
/// was not compatible with it; it may be retried).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<R> {
    Done(R),
    Abort,
}

/// What a REPLY leads to: the operation's outcome, and the COMMIT to send.
pub type Replied<F> = (Outcome<<F as Functionality>::Response>, Commit<<F as Functionality>::Op>);

/// Client `C_i`'s state: `c`, the hash chain `H`, the status map `Z`, and `u`.
#[derive(Debug)]
pub struct Client<F: Functionality> {
    me: ClientId,
    keys: Keyring,
    functionality: F,
    /// `c`: the sequence number of the last cleared operation.
    cleared: u64,
    /// `H`, from `H[0]` (the genesis, zero) on; entries below what is still needed are dropped.
    chain: Chain,
    /// `d` and `H[d]`: the last update at or before `c` (the genesis counts as one), kept
    /// apart from the chain because the chain below `c` is dropped and `A[d]` may still come.
    authenticated: (u64, Digest),
    /// `Z`: the status of this client's own operations that are not cleared yet (an
    /// authenticated one stays pending in the replies until the server applied it).
    status: BTreeMap<u64, Status>,
    /// `u`: the operation invoked and not completed.
    current: Option<F::Op>,
    /// `n`: how many INVOKEs this client made (the counter its next one signs); the current
    /// operation's, when there is one, is `n - 1`.
    invoked: u64,
    /// Per member (this one too), the position and counter of the last INVOKE of theirs seen
    /// in a pending list: a member's counters grow with the positions of its operations, so
    /// one signed INVOKE shown at a second position is a replay (#43 item 9).
    seen: BTreeMap<ClientId, (u64, u64)>,
    /// Clients taken over (Sec. 3.7), and the last position an operation of theirs may hold.
    retired: BTreeMap<ClientId, u64>,
    /// The operations this client aborted in place of a failed client, until cleared: the
    /// server may show no other COMMIT for them.
    aborted_for: BTreeMap<u64, ClientId>,
    /// This client's COMMITs the server has not acknowledged yet, oldest first (see
    /// [`Client::unsent`]).
    unsent: Vec<Commit<F::Op>>,
    /// Buffers for the encodings checked, one operation of the others' after another.
    scratch: Scratch,
}

/// The two encodings a member makes for each operation of the others' it checks (the
/// operation, and the statement its signature covers), written over the same buffers rather
/// than allocated each time: a REPLY at 128 members shows a few hundred operations.
#[derive(Debug, Default)]
struct Scratch {
    op: Vec<u8>,
    statement: Vec<u8>,
}

impl<F: Functionality> Client<F> {
    pub fn new(me: ClientId, keys: Keyring, functionality: F) -> Client<F> {
        let genesis = Link { hash: Digest::ZERO, update: true };
        Client {
            me,
            keys,
            functionality,
            cleared: 0,
            chain: Chain::new(0, [genesis]),
            authenticated: (0, Digest::ZERO),
            status: BTreeMap::new(),
            current: None,
            invoked: 0,
            seen: BTreeMap::new(),
            retired: BTreeMap::new(),
            aborted_for: BTreeMap::new(),
            unsent: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    pub fn id(&self) -> ClientId {
        self.me
    }

    /// The keys it signs and checks with.
    pub fn keys(&self) -> &Keyring {
        &self.keys
    }

    /// `c`.
    pub fn cleared(&self) -> u64 {
        self.cleared
    }

    /// Whether an operation is invoked and not completed.
    pub fn busy(&self) -> bool {
        self.current.is_some()
    }

    fn sign(&self, statement: &[u8]) -> Result<Signature, Violation> {
        let bytes = self.keys.sign(self.me, statement).map_err(|_| Violation::Malformed("this client cannot sign"))?;
        Ok(Signature { by: self.me, bytes })
    }

    fn check(&self, ok: bool, what: &'static str, client: ClientId, at: u64) -> Result<(), Violation> {
        match ok {
            true => Ok(()),
            false if !self.keys.knows(client) => Err(Violation::UnknownMember { client, at }),
            false => Err(Violation::Signature { what, client, at }),
        }
    }

    /// Takes the keyring `keys` in place of this client's: its member's roster grew (an
    /// imported roster names members this one has not checked yet). The caller trusts
    /// `keys` as it trusted the first keyring: they come from the member's own files.
    pub fn learn_keys(&mut self, keys: Keyring) {
        self.keys = keys;
    }

    /// `aip-invoke(o)`: the INVOKE message; one operation at a time.
    pub fn invoke(&mut self, op: F::Op) -> Result<Invoke<F::Op>, Violation> {
        if self.current.is_some() {
            return Err(Violation::Malformed("an operation is already in progress"));
        }
        let counter = self.invoked;
        let tau = self.sign(&invoke_statement(&op.to_wire(), self.me, counter))?.bytes;
        self.current = Some(op.clone());
        self.invoked += 1;
        Ok(Invoke { op, tau, cleared: self.cleared, counter })
    }

    /// Skips one INVOKE counter: a member restored from a save calls this before it invokes,
    /// since an INVOKE may have left after that save (a crash before the next one), and a
    /// counter signed twice is a replay to every member (#43 item 9). A gap is harmless.
    pub fn skip_counter(&mut self) {
        if self.current.is_none() {
            self.invoked = self.invoked.saturating_add(1);
        }
    }

    /// Gives up the operation in progress without its REPLY (the server refused its INVOKE,
    /// or the answer was lost), so that this client may invoke another. This client's checks
    /// stay sound: an INVOKE the server did order shows up in later replies as this client's
    /// own pending operation with no known status, so it is left out of `μ`, as the server
    /// leaves it out of its responses. But no COMMIT ever follows it, so the server applies
    /// nothing past it until a member takes over for this client (Sec. 3.7) and aborts it.
    pub fn abandon(&mut self) {
        self.current = None;
    }

    /// The COMMITs to deliver, oldest first: each REPLY adds its own, after the aborts of
    /// this client's earlier operations that it never committed (see [`Client::on_reply`]).
    /// They stay until [`Client::delivered`] or until the view clears their position, so a
    /// COMMIT lost with a connection, or with a process that saved this state before
    /// sending it, is sent again and the group does not stall on it.
    pub fn unsent(&self) -> &[Commit<F::Op>] {
        &self.unsent
    }

    /// The server has the COMMIT at position `t` (it acknowledged it, or refused it as one it
    /// has already).
    pub fn delivered(&mut self, t: u64) {
        self.unsent.retain(|c| c.t != t);
    }

    /// This client's own operations in `ω` (before its current one, the last) with no status
    /// here were never committed by it: INVOKEs abandoned without their REPLY (a refusal, a
    /// lost connection, a crash before the REPLY). A replayed one never gets here: its
    /// counter, signed in `τ`, places it once ([`Client::check_counter`]). Each is aborted with a COMMIT of its own, so that the server can apply what
    /// follows it instead of waiting for a takeover. Sound as long as this client's state
    /// outlives every COMMIT it sent: a caller that saves the state saves it after the REPLY
    /// and before sending ([`Client::unsent`]).
    fn abort_abandoned(&mut self, omega: &[Pending<F::Op>], first: u64) -> Result<(), Violation> {
        let own = omega.len().saturating_sub(1);
        for (k, pending) in omega[..own].iter().enumerate() {
            let l = first + k as u64;
            if pending.invoked.client != self.me || self.status.contains_key(&l) {
                continue;
            }
            let op = pending.invoked.op.clone();
            let phi = self.sign(&commit_statement(l, &op.to_wire(), self.me, Status::Abort, &self.chain[l].hash))?;
            self.status.insert(l, Status::Abort);
            self.unsent.push(Commit { op, t: l, status: Status::Abort, client: self.me, phi });
        }
        Ok(())
    }

    /// `H[l]`, from the chain or, for the last cleared update, from where it is kept.
    fn hash_at(&self, l: u64) -> Option<Digest> {
        match self.chain.get(l) {
            Some(link) => Some(link.hash),
            None => (l == self.authenticated.0).then_some(self.authenticated.1),
        }
    }

    /// `extend-chain(o, l, j)`: `H[l]` is computed, or checked when it is known already;
    /// `wire` is `op`'s encoding (made once per operation checked, as the statements take it).
    fn extend_chain(&mut self, op: &F::Op, wire: &[u8], l: u64, client: ClientId) -> Result<(), Violation> {
        if l == 0 {
            return Ok(()); // the genesis: H[0] is fixed
        }
        let previous = self.chain.get(l - 1).ok_or(Violation::Malformed("a gap in the history"))?;
        let next = Link { hash: chain(&previous.hash, wire, l, client), update: !F::is_query(op) };
        match self.chain.get(l) {
            None => {
                self.chain.push(l, next);
                Ok(())
            }
            Some(known) if *known == next => Ok(()),
            Some(_) => Err(Violation::Chain(l)),
        }
    }

    /// `verify_j(φ, COMMIT || l || o || j || z || H[l])`, `H[l]` known. A COMMIT signed by
    /// another member than the operation's client is a takeover's (Sec. 3.7): it may only
    /// abort, and no later operation of the failed client may follow it.
    fn check_commit(&mut self, committed: &Committed<F::Op>, wire: &[u8], l: u64) -> Result<(), Violation> {
        let hash = self.hash_at(l).ok_or(Violation::Malformed("a COMMIT for an operation not in this view"))?;
        let client = committed.client;
        commit_statement_into(&mut self.scratch.statement, l, wire, client, committed.status, &hash);
        let by = committed.phi.by;
        self.check(self.keys.verify(by, &self.scratch.statement, &committed.phi.bytes), "COMMIT", by, l)?;
        if by != client {
            if committed.status != Status::Abort {
                return Err(Violation::Signature { what: "COMMIT (takeover, not an abort)", client: by, at: l });
            }
            let last = self.retired.entry(client).or_insert(l);
            *last = (*last).min(l);
        }
        Ok(())
    }

    /// Until its first REPLY is accepted (it has seen none of its own INVOKEs), this client
    /// has committed nothing: an operation committed under its id (past the genesis, which
    /// its creator commits before speaking) is another member's who took the same id.
    fn check_id_not_taken(&self, committed: &Committed<F::Op>, l: u64) -> Result<(), Violation> {
        let own = committed.client == self.me && committed.phi.by == self.me;
        match own && l > 0 && !self.seen.contains_key(&self.me) {
            true => Err(Violation::IdTaken { client: self.me, at: l }),
            false => Ok(()),
        }
    }

    /// No operation of a client taken over may follow its takeover.
    fn check_not_retired(&self, client: ClientId, l: u64) -> Result<(), Violation> {
        match self.retired.get(&client) {
            Some(&last) if l > last => Err(Violation::TakenOver { client, at: l }),
            _ => Ok(()),
        }
    }

    /// The first half of `check-view`: extends the chain over `δ` and checks each COMMIT;
    /// returns the last update among them, or before them, and its `H` (Sec. 3.7: queries are
    /// never authenticated, so `d` may lie before `b`; this client finds `d` itself).
    fn check_delta(&mut self, view: &View<F>) -> Result<(u64, Digest), Violation> {
        let (delta, b) = (&view.delta, view.b);
        if delta.is_empty() {
            return Err(Violation::Malformed("no authenticated operation"));
        }
        // When nothing new was authenticated, δ repeats the last cleared operation.
        let first = match b == self.cleared {
            true => self.cleared,
            false => self.cleared + 1,
        };
        if b < self.cleared || first + delta.len() as u64 - 1 != b {
            return Err(Violation::Malformed("the authenticated operations do not end at b"));
        }
        self.check_committed(delta, first)
    }

    /// Extends the chain over committed operations, the first at `first`, and checks each
    /// COMMIT; returns the last update among them, or before them, and its `H`. At most
    /// [`MAX_DELTA`] (the saved chain holds at most `δ` and `ω` past `c`: see `state`).
    fn check_committed(&mut self, delta: &[Committed<F::Op>], first: u64) -> Result<(u64, Digest), Violation> {
        if delta.len() > MAX_DELTA {
            return Err(Violation::Malformed("more authenticated operations than a message holds"));
        }
        let mut authenticated = self.authenticated;
        let mut op = std::mem::take(&mut self.scratch.op);
        for (k, committed) in delta.iter().enumerate() {
            let l = first + k as u64;
            self.check_not_retired(committed.client, l)?;
            self.check_id_not_taken(committed, l)?;
            op.clear();
            committed.op.encode(&mut op);
            self.extend_chain(&committed.op, &op, l, committed.client)?;
            self.check_commit(committed, &op, l)?;
            if let Some(&failed) = self.aborted_for.get(&l) {
                if committed.phi.by != self.me || committed.client != failed {
                    return Err(Violation::TakenOver { client: failed, at: l });
                }
            }
            let link = self.chain[l];
            if link.update && l >= authenticated.0 {
                authenticated = (l, link.hash);
            }
        }
        self.scratch.op = op;
        Ok(authenticated)
    }

    /// A page of the history (#43 item 10), for a member further behind than one REPLY shows:
    /// its operations follow the last one this client cleared, and each is checked as in a
    /// REPLY's `δ` (on the hash chain, with its client's COMMIT), then cleared. No AUTH
    /// signature is checked here: the next REPLY's `α` is checked against the last update
    /// this client finds, here or there. All or nothing; between operations only. Returns
    /// whether the page says more follows.
    pub fn on_history(&mut self, page: HistoryPage<F::Op>) -> Result<bool, Violation> {
        if self.current.is_some() {
            return Err(Violation::Malformed("a page of the history while an operation is in progress"));
        }
        if page.first != self.cleared + 1 {
            return Err(Violation::Malformed("a page of the history that does not follow the cleared operations"));
        }
        if page.delta.is_empty() {
            return Ok(false);
        }
        let authenticated = self.all_or_nothing(|me| me.check_committed(&page.delta, page.first))?;
        self.clear_view(page.first + page.delta.len() as u64 - 1, authenticated);
        self.forget_old();
        Ok(page.more)
    }

    /// The checks of `check-view(δ, b, a, ψ)`: the operations authenticated since the last
    /// view ([`Client::check_delta`]), and `α`'s AUTH signature over the last update among
    /// them, `O[d]`. Returns `d` and `H[d]`, for [`Client::clear_view`] once the whole REPLY
    /// checked.
    fn check_view(&mut self, view: &View<F>) -> Result<(u64, Digest), Violation> {
        let (d, hash) = self.check_delta(view)?;
        let op = view.authenticated.op.to_wire();
        let statement = auth_statement(&op, d, &hash, &view.alpha.auth.to_wire());
        let by = view.alpha.psi.by;
        self.check(self.keys.verify(by, &statement, &view.alpha.psi.bytes), "AUTH", by, d)?;
        Ok((d, hash))
    }

    /// The rest of `check-view`: clears the operations up to `b`, `d` the last update.
    fn clear_view(&mut self, b: u64, authenticated: (u64, Digest)) {
        self.cleared = b;
        self.authenticated = authenticated;
        self.aborted_for = self.aborted_for.split_off(&(b + 1));
        // The server applied everything up to b: it had a COMMIT for each.
        self.unsent.retain(|c| c.t > b);
    }

    /// Runs the checks of one message; when one fails, what the checks before it added to
    /// this client's state is taken back (the links they pushed onto `H`, the takeovers they
    /// learned), so that a refused message leaves nothing a save could keep: a REPLY that
    /// shows an operation of a member whose key is not imported yet is checked again, whole,
    /// by the next operation, and a forged one must not lengthen the chain meanwhile.
    fn all_or_nothing<T>(&mut self, checks: impl FnOnce(&mut Self) -> Result<T, Violation>) -> Result<T, Violation> {
        let (end, retired, seen) = (self.chain.end(), self.retired.clone(), self.seen.clone());
        let checked = checks(self);
        if checked.is_err() {
            self.chain.truncate(end);
            self.retired = retired;
            self.seen = seen;
        }
        checked
    }

    /// `check-pending(ω)`: every pending operation (the first at position `first`) was
    /// invoked by its client, on this chain, and each abort mark is its COMMIT with status
    /// ABORT (Sec. 3.7). In a REPLY (`own_last`), the last is this client's current
    /// operation, and is not marked.
    fn check_pending(&mut self, omega: &[Pending<F::Op>], first: u64, own_last: bool) -> Result<(), Violation> {
        if omega.len() > MAX_PENDING {
            return Err(Violation::TooManyPending(omega.len()));
        }
        let mut op = std::mem::take(&mut self.scratch.op);
        for (k, pending) in omega.iter().enumerate() {
            let (l, invoked) = (first + k as u64, &pending.invoked);
            self.check_not_retired(invoked.client, l)?;
            op.clear();
            invoked.op.encode(&mut op);
            self.extend_chain(&invoked.op, &op, l, invoked.client)?;
            invoke_statement_into(&mut self.scratch.statement, &op, invoked.client, invoked.counter);
            let signed = self.keys.verify(invoked.client, &self.scratch.statement, &invoked.tau);
            self.check(signed, "INVOKE", invoked.client, l)?;
            self.check_counter(invoked, l)?;
            if let Some(phi) = &pending.aborted {
                let committed = Committed {
                    op: invoked.op.clone(),
                    status: Status::Abort,
                    phi: phi.clone(),
                    client: invoked.client,
                };
                self.check_commit(&committed, &op, l)?;
            }
        }
        self.scratch.op = op;
        if !own_last {
            return Ok(());
        }
        let Some(last) = omega.last() else { return Err(Violation::Pending("none, not even this client's own")) };
        if last.aborted.is_some() {
            return Err(Violation::Pending("this client's current operation is marked aborted"));
        }
        let own = last.invoked.client == self.me && last.invoked.counter + 1 == self.invoked;
        match (own, Some(&last.invoked.op) == self.current.as_ref()) {
            (true, true) => Ok(()),
            _ => Err(Violation::Pending("the last is not this client's current operation")),
        }
    }

    /// The counter `n` of `invoked`, shown at position `l`, against the last INVOKE seen of
    /// its client: a later position has a larger counter, the same position the same one, an
    /// earlier position a smaller one; else the server replayed a signed INVOKE. This
    /// client's own counters stay below the count it made (no one else signs for its id,
    /// unless two members share it).
    fn check_counter(&mut self, invoked: &Invoked<F::Op>, l: u64) -> Result<(), Violation> {
        let (client, n) = (invoked.client, invoked.counter);
        if client == self.me && n >= self.invoked {
            return Err(Violation::Replayed { client, at: l });
        }
        match self.seen.get(&client) {
            Some(&(at, last)) if l <= at => match (l == at && n == last) || (l < at && n < last) {
                true => Ok(()),
                false => Err(Violation::Replayed { client, at: l }),
            },
            Some(&(_, last)) if n <= last => Err(Violation::Replayed { client, at: l }),
            _ => {
                self.seen.insert(client, (l, n));
                Ok(())
            }
        }
    }

    /// The REPLY handler (Alg. 1, upon REPLY): the response (or ABORT), and the COMMIT
    /// message to send. Every check (`check-view`, `check-pending`, the sequence number,
    /// `authexec`) passes before anything of the REPLY is kept: `extend-chain`'s links go
    /// again when a later check fails ([`Client::all_or_nothing`]), and the view is cleared,
    /// abandoned operations aborted and the status recorded only after the last check.
    pub fn on_reply(&mut self, reply: Reply<F>) -> Result<Replied<F>, Violation> {
        let Some(op) = self.current.clone() else { return Err(Violation::Malformed("a reply with nothing invoked")) };
        let (authenticated, t, status) = self.all_or_nothing(|me| me.check_reply(&reply, &op))?;
        let view = &reply.view;
        self.clear_view(view.b, authenticated);
        self.abort_abandoned(&view.omega, view.b + 1)?;
        self.status.insert(t, status);
        let phi = self.sign(&commit_statement(t, &op.to_wire(), self.me, status, &self.chain[t].hash))?;
        self.current = None;
        self.forget_old();
        let commit = Commit { op, t, status, client: self.me, phi };
        self.unsent.push(commit.clone());
        let outcome = match status {
            Status::Success => Outcome::Done(reply.response),
            Status::Abort => Outcome::Abort,
        };
        Ok((outcome, commit))
    }

    /// The checks of a REPLY to `op`, in the order of Alg. 1: `d` and `H[d]` of its view, its
    /// position `t`, and the status this client gives its operation. Changes nothing but the
    /// links `extend-chain` adds and the takeovers its COMMITs show.
    fn check_reply(&mut self, reply: &Reply<F>, op: &F::Op) -> Result<((u64, Digest), u64, Status), Violation> {
        let view = &reply.view;
        let authenticated = self.check_view(view)?;
        self.check_pending(&view.omega, view.b + 1, true)?;
        let t = view.b + view.omega.len() as u64;
        if reply.t != t {
            return Err(Violation::Pending("the sequence number does not follow the pending operations"));
        }
        // This client's own pending operations with no status here are aborted once the
        // REPLY is kept (`abort_abandoned`): with no status, as aborted, neither is in `μ`.
        let status = |k: usize| match &view.omega[k] {
            p if p.invoked.client == self.me => self.status.get(&(view.b + 1 + k as u64)).copied(),
            p => p.aborted.as_ref().map(|_| Status::Abort),
        };
        let (mine, others) = separate_pending(self.me, view.omega.iter().map(|p| &p.invoked), status);
        let status = match self.functionality.compatible(&others, op) {
            true => {
                F::authexec(&mine, &view.alpha.auth, &reply.response, &reply.aux).map_err(|_| Violation::Response)?;
                Status::Success
            }
            false => Status::Abort,
        };
        Ok((authenticated, t, status))
    }

    /// The signed authenticator `alpha` of update `base`, `O[base]` being `previous`.
    fn check_auth(&self, previous: &F::Op, base: u64, alpha: &Signed<F::Auth>) -> Result<(), Violation> {
        let hash = self.hash_at(base).ok_or(Violation::Malformed("an authenticator of an operation not in view"))?;
        let statement = auth_statement(&previous.to_wire(), base, &hash, &alpha.auth.to_wire());
        self.check(self.keys.verify(alpha.psi.by, &statement, &alpha.psi.bytes), "AUTH", alpha.psi.by, base)
    }

    /// Drops what no later message can need: the status of cleared operations, and the chain
    /// below the last cleared operation and below the oldest own operation not cleared.
    fn forget_old(&mut self) {
        self.status = self.status.split_off(&(self.cleared + 1));
        let oldest_own = self.status.keys().next().copied().unwrap_or(u64::MAX);
        let keep_from = self.cleared.min(oldest_own).saturating_sub(1);
        self.chain.drop_below(keep_from);
    }
}
