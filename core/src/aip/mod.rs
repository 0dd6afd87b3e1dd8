//! AIP, the ADS integrity protocol of VICOS (paper 003, Sec. 3, Alg. 1–3): many clients run
//! the operations of an authenticated data structure through one untrusted server and detect
//! any deviation from a fork-linearizable execution.
//!
//! * The server ([`Server`]) orders operations (INVOKE gets a sequence number), answers each
//!   with the operations still pending before it and a response computed from its state, and
//!   applies them one at a time as their clients authenticate them (the passive phase:
//!   UPDATE-AUTH, COMMIT-AUTH).
//! * A client ([`Client`]) checks each answer: the operations it missed were committed by
//!   their own clients on the same hash chain of the history (`check-view`), the pending ones
//!   were invoked by theirs (`check-pending`), and, when the pending operations of others are
//!   compatible with its own, the response verifies against the last signed authenticator
//!   (`authexec`); otherwise its operation aborts.
//! * The hash chain `H[l] = hash(H[l-1] || o || l || j)` condenses a client's view of the
//!   history; every signature over it ties two clients' views together, so a server that
//!   shows two clients different histories (a fork) can never show either one an operation of
//!   the other again without being caught.
//!
//! Both sides are message handlers with no I/O: a test can deliver messages in any order.
//! Every message has one canonical encoding ([`wire`]) whose decoders take hostile bytes.
//! The operations are any [`Functionality`]'s (Sec. 2.3–2.4); [`Adict`] is VICOS's
//! dictionary, and [`crate::namespace::NamespaceOps`] vouch's namespace.
//!
//! The extensions of Sec. 3.7 and Sec. 5.2 are built in:
//! * aborted operations: once the server holds an aborted operation's COMMIT, later replies
//!   carry its signature as an abort mark and clients leave it out of the compatibility
//!   test ([`Pending`]);
//! * queries have no passive phase: the server applies a committed query at once, and an
//!   authenticator is the last update's, `A[d]`, sent with `O[d]` ([`View::authenticated`]);
//! * any member may authenticate: the server may delegate a batch of committed updates to
//!   one client ([`Server::delegate_auth`]), which authenticates them one after another;
//! * a member may take over for a failed one ([`Server::take_over`], [`Client::take_over`]):
//!   it aborts the failed client's hanging operations and authenticates in its place;
//! * the server bounds its pending list ([`ServerConfig::max_pending`], 128 as in Sec. 5.2)
//!   and an [`Inbox`] serves COMMIT, UPDATE-AUTH and COMMIT-AUTH before INVOKE and REPLY,
//!   holding INVOKEs back while the pending list is full;
//! * the server forgets `O` and `I` entries once every member has moved past them
//!   (Sec. 3.3), so its memory stays bounded.
//!
//! A client's state saves to bytes and restores ([`Client::save`], [`Client::restore`]), for
//! a member that runs as one process per operation. [`history`] checks recorded histories
//! for linearizability and fork-linearizability (Sec. 2.1), for tests here and elsewhere.

mod admission;
mod client;
mod dict;
mod functionality;
pub mod history;
mod inbox;
mod keys;
mod messages;
mod server;
pub mod wire;

pub use admission::Admission;
pub use client::{Client, Outcome, OwnUpdate, Replied, RestoreError, MAX_SAVED_LINKS, MAX_SAVED_POSITION};
pub use dict::{Adict, DictAux, DictError, DictOp, DictResponse, DictStep, Mode, MAX_PAGE};
pub use functionality::Functionality;
pub use inbox::{Inbox, ToClient, ToServer, Urgency};
pub use keys::{GroupKey, Keyring, KeyringError};
pub(crate) use messages::ViewParts;
pub use messages::{
    Commit, CommitAuth, Committed, HistoryPage, Invoke, Invoked, Pending, Reply, Signature, Signed, Status, TakeOver,
    ToAuthenticate, UpdateAuth, View,
};
pub use server::{genesis, Genesis, Refusal, Server, ServerConfig, ServerError};
pub use wire::{Wire, WireError};

use crate::hash::{self, Digest, Keyed};

/// A client's identity in its group.
pub type ClientId = u32;

/// What a client caught the server doing (or, for `Malformed`, a message it cannot use).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("the server's history disagrees with this client's at operation {0} (a fork, or a changed operation)")]
    Chain(u64),
    #[error("a {what} signature of client {client} at operation {at} does not verify")]
    Signature { what: &'static str, client: ClientId, at: u64 },
    #[error("the pending operations are not as announced: {0}")]
    Pending(&'static str),
    #[error("the response does not verify against the last authenticator")]
    Response,
    #[error("operation {q} is to be authenticated on top of operation {base}, not on the last update before it")]
    Stale { q: u64, base: u64 },
    #[error("operation {at} of client {client} shown after that client was taken over (Sec. 3.7)")]
    TakenOver { client: ClientId, at: u64 },
    /// A signed INVOKE shown again: its counter is not above the last one this client saw of
    /// that member at an earlier position (or not the one it had at the same position).
    #[error("an INVOKE of client {client} replayed at operation {at}")]
    Replayed { client: ClientId, at: u64 },
    /// An operation committed under this member's id before this member committed any: a
    /// second member took the same id (two joiners of one key file), and the provider could
    /// show the two different outcomes on one hash chain.
    #[error("operation {at} was committed as member {client}, this member's id, before this member spoke: another member has this id (join again with another --id)")]
    IdTaken { client: ClientId, at: u64 },
    /// More pending operations than [`wire::MAX_PENDING`]: no honest server keeps that many.
    #[error("{0} pending operations, over the protocol's bound of {max}", max = wire::MAX_PENDING)]
    TooManyPending(usize),
    #[error("a message out of order or malformed: {0}")]
    Malformed(&'static str),
    /// Not the server's doing: this client holds no public key of the member (an Ed25519
    /// group whose roster it has not yet imported). Its operation is abandoned; with the key
    /// imported, the next one checks the same history again.
    #[error("member {client} signed operation {at}, and this client does not know member {client}'s key")]
    UnknownMember { client: ClientId, at: u64 },
}

/// `hash(H[l-1] || o || l || j)`: BLAKE3 keyed for the chain ([`Keyed::AipChain`]). A member
/// hashes one link per operation of the others' it is shown (Alg. 2), so this and the
/// signature check are most of its work.
fn chain(previous: &Digest, op: &[u8], l: u64, client: ClientId) -> Digest {
    let mut h = hash::keyed_hasher(Keyed::AipChain);
    h.update(&previous.0);
    h.update(&(op.len() as u64).to_le_bytes());
    h.update(op);
    h.update(&l.to_le_bytes());
    h.update(&client.to_le_bytes());
    Digest(*h.finalize().as_bytes())
}

/// The signed statements, each a distinct kind (its first byte) of length-prefixed fields,
/// written over `out`: a member builds one per operation of the others' it checks (Alg. 1),
/// each into the one buffer it keeps for them.
fn statement_into(out: &mut Vec<u8>, kind: u8, fields: &[&[u8]]) {
    out.clear();
    out.reserve(1 + fields.iter().map(|f| 8 + f.len()).sum::<usize>());
    out.push(kind);
    for field in fields {
        out.extend_from_slice(&(field.len() as u64).to_le_bytes());
        out.extend_from_slice(field);
    }
}

fn statement(kind: u8, fields: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    statement_into(&mut out, kind, fields);
    out
}

/// `INVOKE || o || i || n`, `n` client `i`'s count of its INVOKEs before this one: the
/// paper's `τ` binds no position, so without `n` the server could show one signed INVOKE at
/// any number of positions (#43 item 9); each member's `n` only grows along the history.
fn invoke_statement(op: &[u8], client: ClientId, counter: u64) -> Vec<u8> {
    let mut out = Vec::new();
    invoke_statement_into(&mut out, op, client, counter);
    out
}

fn invoke_statement_into(out: &mut Vec<u8>, op: &[u8], client: ClientId, counter: u64) {
    statement_into(out, 1, &[op, &client.to_le_bytes(), &counter.to_le_bytes()]);
}

/// `COMMIT || t || o || i || z || H[t]`.
fn commit_statement(t: u64, op: &[u8], client: ClientId, status: Status, chain: &Digest) -> Vec<u8> {
    let mut out = Vec::new();
    commit_statement_into(&mut out, t, op, client, status, chain);
    out
}

fn commit_statement_into(out: &mut Vec<u8>, t: u64, op: &[u8], client: ClientId, status: Status, chain: &Digest) {
    statement_into(out, 2, &[&t.to_le_bytes(), op, &client.to_le_bytes(), &[status.byte()], &chain.0]);
}

/// `AUTH || o || q || H[q] || a`.
fn auth_statement(op: &[u8], q: u64, chain: &Digest, auth: &[u8]) -> Vec<u8> {
    statement(3, &[op, &q.to_le_bytes(), &chain.0, auth])
}

/// `separate-pending(i, ω)`: `μ`, the client's own pending operations that succeeded and its
/// current one (last), and `γ`, the other clients' pending operations, less those known to
/// have aborted (Sec. 3.7 "Eliminating aborted operations"). `status(k)` is what is known of
/// the `k`-th pending operation's status: for the client's own ones, what it committed
/// before this one (FIFO); for the others', a checked abort mark.
fn separate_pending<'a, O: Clone + 'a>(
    me: ClientId,
    omega: impl ExactSizeIterator<Item = &'a Invoked<O>>,
    status: impl Fn(usize) -> Option<Status>,
) -> (Vec<O>, Vec<O>) {
    let (mut mine, mut others) = (Vec::new(), Vec::new());
    let n = omega.len();
    for (k, invoked) in omega.enumerate() {
        match pending_side(me, invoked, k + 1 == n, || status(k)) {
            Some(true) => mine.push(invoked.op.clone()),
            Some(false) => others.push(invoked.op.clone()),
            None => {}
        }
    }
    (mine, others)
}

/// `μ` of [`separate_pending`] alone (what the server answers from).
fn own_pending<'a, O: Clone + 'a>(
    me: ClientId,
    omega: impl ExactSizeIterator<Item = &'a Invoked<O>>,
    status: impl Fn(usize) -> Option<Status>,
) -> Vec<O> {
    let n = omega.len();
    let own =
        omega.enumerate().filter(|&(k, invoked)| pending_side(me, invoked, k + 1 == n, || status(k)) == Some(true));
    own.map(|(_, invoked)| invoked.op.clone()).collect()
}

/// Where a pending operation goes: `μ` (`Some(true)`), `γ` (`Some(false)`), or neither.
fn pending_side<O>(
    me: ClientId,
    invoked: &Invoked<O>,
    last: bool,
    status: impl Fn() -> Option<Status>,
) -> Option<bool> {
    match invoked.client == me {
        false => (status() != Some(Status::Abort)).then_some(false),
        true => (last || status() == Some(Status::Success)).then_some(true),
    }
}

#[cfg(test)]
mod tests;
