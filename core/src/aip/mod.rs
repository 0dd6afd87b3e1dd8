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
//! The operations are any [`Functionality`]'s (Sec. 2.3–2.4); [`Adict`] is VICOS's
//! dictionary.

mod client;
mod dict;
mod functionality;
mod keys;
mod server;

pub use client::{Client, Outcome, Replied};
pub use dict::{Adict, DictAux, DictOp, DictResponse, DictStep, Mode};
pub use functionality::Functionality;
pub use keys::{Keyring, KeyringError};
pub use server::{Server, ServerError};

use crate::hash::{Digest, Domain};
use sha2::{Digest as _, Sha256};

/// A client's identity in its group.
pub type ClientId = u32;

/// Whether an operation took effect (its pending operations of others were compatible with
/// it) or was aborted (it must be retried).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    Abort,
}

impl Status {
    fn byte(self) -> u8 {
        match self {
            Status::Success => 1,
            Status::Abort => 2,
        }
    }
}

/// `I[l]`: an invoked operation, its INVOKE signature, and its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoked<O> {
    pub op: O,
    pub tau: Vec<u8>,
    pub client: ClientId,
}

/// `O[l]`: a committed operation, its status, its COMMIT signature, and its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed<O> {
    pub op: O,
    pub status: Status,
    pub phi: Vec<u8>,
    pub client: ClientId,
}

/// `A[l]`: the authenticator after operation `l`, and the AUTH signature over it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed<A> {
    pub auth: A,
    pub psi: Vec<u8>,
}

/// `[INVOKE, o, τ, c]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoke<O> {
    pub op: O,
    pub tau: Vec<u8>,
    /// The sequence number of the client's last cleared operation.
    pub cleared: u64,
}

/// `[REPLY, δ, b, α, ω, t, r, σ_o]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply<F: Functionality> {
    /// The operations authenticated since the client's last one (`O[c+1..=b]`, or `O[b]`).
    pub delta: Vec<Committed<F::Op>>,
    pub b: u64,
    pub alpha: Signed<F::Auth>,
    /// Every pending operation, `I[b+1..=t]`, the client's own last.
    pub omega: Vec<Invoked<F::Op>>,
    pub t: u64,
    pub response: F::Response,
    pub aux: F::Aux,
}

/// `[COMMIT, o, t, z, φ]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit<O> {
    pub op: O,
    pub t: u64,
    pub status: Status,
    pub phi: Vec<u8>,
}

/// `[UPDATE-AUTH, o, r, σ_o, φ, q, δ, α]`: the server asks the client of operation `q` to
/// authenticate it on top of `A[q-1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateAuth<F: Functionality> {
    pub op: F::Op,
    pub response: Option<F::Response>,
    pub aux: Option<F::Aux>,
    pub phi: Vec<u8>,
    pub q: u64,
    /// `O[q-1]` and `A[q-1]`.
    pub previous: Committed<F::Op>,
    pub alpha: Signed<F::Auth>,
}

/// `[COMMIT-AUTH, a', σ'_o, ψ']` (the server keeps the whole structure and applies the
/// operation itself, so no `σ'_o` travels).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitAuth<A> {
    pub q: u64,
    pub signed: Signed<A>,
}

/// What a client caught the server doing.
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
    #[error("a message out of order or malformed: {0}")]
    Malformed(&'static str),
}

/// `hash(H[l-1] || o || l || j)`.
fn chain(previous: &Digest, op: &[u8], l: u64, client: ClientId) -> Digest {
    let mut h = Sha256::new();
    h.update([Domain::AipChain as u8]);
    h.update(previous.0);
    h.update((op.len() as u64).to_le_bytes());
    h.update(op);
    h.update(l.to_le_bytes());
    h.update(client.to_le_bytes());
    Digest(h.finalize().into())
}

/// The signed statements, each a distinct kind (its first byte) of length-prefixed fields.
fn statement(kind: u8, fields: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![kind];
    for field in fields {
        out.extend_from_slice(&(field.len() as u64).to_le_bytes());
        out.extend_from_slice(field);
    }
    out
}

/// `INVOKE || o || i`.
fn invoke_statement(op: &[u8], client: ClientId) -> Vec<u8> {
    statement(1, &[op, &client.to_le_bytes()])
}

/// `COMMIT || t || o || i || z || H[t]`.
fn commit_statement(t: u64, op: &[u8], client: ClientId, status: Status, chain: &Digest) -> Vec<u8> {
    statement(2, &[&t.to_le_bytes(), op, &client.to_le_bytes(), &[status.byte()], &chain.0])
}

/// `AUTH || o || q || H[q] || a`.
fn auth_statement(op: &[u8], q: u64, chain: &Digest, auth: &[u8]) -> Vec<u8> {
    statement(3, &[op, &q.to_le_bytes(), &chain.0, auth])
}

/// `separate-pending(i, ω)`: `μ`, the client's own pending operations that succeeded and its
/// current one (last), and `γ`, the other clients' pending operations. `status(k)` is the
/// status of the client's own `k`-th pending operation (it committed it before this one).
fn separate_pending<O: Clone>(
    me: ClientId,
    omega: &[Invoked<O>],
    status: impl Fn(usize) -> Option<Status>,
) -> (Vec<O>, Vec<O>) {
    let (mut mine, mut others) = (Vec::new(), Vec::new());
    for (k, invoked) in omega.iter().enumerate() {
        let last = k + 1 == omega.len();
        if invoked.client != me {
            others.push(invoked.op.clone());
        } else if last || status(k) == Some(Status::Success) {
            mine.push(invoked.op.clone());
        }
    }
    (mine, others)
}

#[cfg(test)]
mod tests;
