//! AIP's messages (paper 003, Alg. 1–3) and the records the server keeps (`I`, `O`, `A`),
//! with the fields the extensions of Sec. 3.7 add: abort marks on pending operations, the
//! last update `O[d]` an authenticator belongs to, batches of operations to authenticate,
//! and signatures that name their signer (a delegate or a taker may sign for another).

use super::{ClientId, Functionality};

/// Whether an operation took effect (its pending operations of others were compatible with
/// it) or was aborted (it must be retried).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    Abort,
}

impl Status {
    pub(super) fn byte(self) -> u8 {
        match self {
            Status::Success => 1,
            Status::Abort => 2,
        }
    }
}

/// A signature and the member who made it. An operation's own client signs its INVOKE; its
/// COMMIT too, unless another member took over for it (Sec. 3.7 "Tolerate client crashes");
/// its AUTH, any member it was delegated to (Sec. 3.7 "Batching and delegating").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub by: ClientId,
    pub bytes: Vec<u8>,
}

/// `I[l]`: an invoked operation, its INVOKE signature (by its client), and its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoked<O> {
    pub op: O,
    pub tau: Vec<u8>,
    pub client: ClientId,
    /// `n`: how many INVOKEs its client made before this one (signed with it, in `τ`).
    pub counter: u64,
}

/// `O[l]`: a committed operation, its status, its COMMIT signature, and its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed<O> {
    pub op: O,
    pub status: Status,
    pub phi: Signature,
    pub client: ClientId,
}

/// `A[l]`: the authenticator after operation `l`, and the AUTH signature over it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed<A> {
    pub auth: A,
    pub psi: Signature,
}

/// `[INVOKE, o, τ, c, n]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoke<O> {
    pub op: O,
    pub tau: Vec<u8>,
    /// `c`: the sequence number of the client's last cleared operation.
    pub cleared: u64,
    /// `n`: how many INVOKEs the client made before this one (signed in `τ`).
    pub counter: u64,
}

/// An entry of `ω`: `I[l]`, and, once the server holds its COMMIT with status ABORT, that
/// COMMIT's signature, so that a later operation need not be compatible with it (Sec. 3.7
/// "Eliminating aborted operations"). The client checks the signature: a server cannot mark
/// an operation aborted that its client (or its taker) did not commit as aborted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending<O> {
    pub invoked: Invoked<O>,
    pub aborted: Option<Signature>,
}

/// What `check-view` and `check-pending` read: the operations authenticated since the
/// client's last view, the last signed authenticator, and the pending operations.
#[derive(Clone, Debug, PartialEq)]
pub struct View<F: Functionality> {
    /// `δ`: `O[c+1..=b]`, or `O[b]` alone when the client has cleared `b` already.
    pub delta: Vec<Committed<F::Op>>,
    pub b: u64,
    /// `O[d]`: the last update at or before `b`, whose authenticator `α` is (queries have no
    /// passive phase, Sec. 3.7, so `A[b] = A[d]`).
    pub authenticated: Committed<F::Op>,
    /// `α = A[d]`.
    pub alpha: Signed<F::Auth>,
    /// `ω`: every pending operation, `I[b+1..=t]`.
    pub omega: Vec<Pending<F::Op>>,
}

/// A page of the history for a member far behind (#43 item 10): `O[first..]`, committed
/// operations it checks as it checks a REPLY's `δ` (each COMMIT on its hash chain), and clears,
/// so that its next REPLY shows only what follows. `more`: whether operations were applied
/// after the page (a hint: a server that says so wrongly only makes the member ask again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryPage<O> {
    pub first: u64,
    pub delta: Vec<Committed<O>>,
    pub more: bool,
}

/// A [`View`] borrowed from wherever its parts are kept, encoded as the view itself is
/// (`View`'s encoding is this one's): the server answers an INVOKE from its maps without
/// copying the history it shows.
pub(crate) struct ViewParts<'a, F: Functionality> {
    pub(crate) delta: Vec<&'a Committed<F::Op>>,
    pub(crate) b: u64,
    pub(crate) authenticated: &'a Committed<F::Op>,
    pub(crate) alpha: &'a Signed<F::Auth>,
    /// Each pending operation, with its abort mark.
    pub(crate) omega: Vec<(&'a Invoked<F::Op>, Option<&'a Signature>)>,
}

impl<'a, F: Functionality> ViewParts<'a, F> {
    pub(crate) fn of(view: &'a View<F>) -> ViewParts<'a, F> {
        ViewParts {
            delta: view.delta.iter().collect(),
            b: view.b,
            authenticated: &view.authenticated,
            alpha: &view.alpha,
            omega: view.omega.iter().map(|p| (&p.invoked, p.aborted.as_ref())).collect(),
        }
    }

    pub(crate) fn to_view(&self) -> View<F> {
        View {
            delta: self.delta.iter().map(|&c| c.clone()).collect(),
            b: self.b,
            authenticated: self.authenticated.clone(),
            alpha: self.alpha.clone(),
            omega: self
                .omega
                .iter()
                .map(|&(invoked, aborted)| Pending { invoked: invoked.clone(), aborted: aborted.cloned() })
                .collect(),
        }
    }
}

/// `[REPLY, δ, b, α, ω, t, r, σ_o]`; `ω` ends with the client's own operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply<F: Functionality> {
    pub view: View<F>,
    /// `t`: the position the server gave the operation; must be `b + length(ω)`.
    pub t: u64,
    pub response: F::Response,
    pub aux: F::Aux,
}

/// `[COMMIT, o, t, z, φ]`, for `client`'s operation: the sender's own, or, after a
/// takeover (Sec. 3.7), that of the failed client it aborts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit<O> {
    pub op: O,
    pub t: u64,
    pub status: Status,
    pub client: ClientId,
    pub phi: Signature,
}

/// One operation of an UPDATE-AUTH: `O[q]`, and when it succeeded, its response and proof
/// against the state after the operations before it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToAuthenticate<F: Functionality> {
    pub q: u64,
    pub committed: Committed<F::Op>,
    pub response: Option<F::Response>,
    pub aux: Option<F::Aux>,
}

/// `[UPDATE-AUTH, o, r, σ_o, φ, q, O[d], A[d]]`, batched (Sec. 3.7): the updates to
/// authenticate, in order, each on top of the one before, the first on top of `A[d]`. Alg. 3
/// sends one, to its own client; a batch goes to a delegate.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateAuth<F: Functionality> {
    /// `d`: the last update before the first operation of the batch.
    pub base: u64,
    /// `O[d]` and `A[d]`.
    pub previous: Committed<F::Op>,
    pub alpha: Signed<F::Auth>,
    pub ops: Vec<ToAuthenticate<F>>,
}

/// `[COMMIT-AUTH, a', σ'_o, ψ']` for operation `q` (the server keeps the whole structure
/// and applies the operation itself, so no `σ'_o` travels).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitAuth<A> {
    pub q: u64,
    pub signed: Signed<A>,
}

/// What a client needs to take over for a failed one (Sec. 3.7 "Tolerate client crashes"):
/// a fresh view of the history, and the positions of the failed client's operations the
/// server holds no COMMIT for (the taker aborts them).
#[derive(Clone, Debug, PartialEq)]
pub struct TakeOver<F: Functionality> {
    pub failed: ClientId,
    pub view: View<F>,
    pub hanging: Vec<u64>,
}
