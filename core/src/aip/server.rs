//! AIP's server (paper 003, Alg. 3): it orders operations, answers each INVOKE from its state,
//! and applies operations in their order as their clients authenticate them.

use super::{
    auth_statement, commit_statement, separate_pending, ClientId, Commit, CommitAuth, Committed, Functionality, Invoke,
    Invoked, Keyring, KeyringError, Reply, Signed, Status, UpdateAuth,
};
use crate::hash::Digest;
use std::collections::BTreeMap;

/// Why the server refused a client's message (a client out of step, or a buggy one; never a
/// reason to change state).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("client {client} says it cleared operation {cleared}, past the last applied one ({applied})")]
    ClearedTooFar { client: ClientId, cleared: u64, applied: u64 },
    #[error("client {client} has no operation {q} to commit (or committed it already)")]
    NoSuchOperation { client: ClientId, q: u64 },
    #[error("operation {q} is not the next to authenticate (that is {next}), or not client {client}'s")]
    NotNext { client: ClientId, q: u64, next: u64 },
    #[error("the authenticator for operation {q} is not the state's after it")]
    WrongAuthenticator { q: u64 },
    #[error("operation {0} is no longer kept")]
    Forgotten(u64),
}

/// The server's state: `t`, `b`, the maps `I`, `O`, `A`, and `s`.
#[derive(Debug)]
pub struct Server<F: Functionality> {
    /// `t`: the last invoked operation's sequence number.
    invoked_up_to: u64,
    /// `b`: the last applied (authenticated) operation's.
    applied: u64,
    /// `I[b+1..=t]`.
    invoked: BTreeMap<u64, Invoked<F::Op>>,
    /// `O`, from the oldest any client may still need.
    committed: BTreeMap<u64, Committed<F::Op>>,
    /// `A[b]` (older authenticators are never sent again).
    auth: Signed<F::Auth>,
    state: F::State,
}

impl<F: Functionality> Server<F> {
    /// A server starting from the group's genesis: operation 0, committed and authenticated by
    /// the group's creator over `state`.
    pub fn new(genesis: Committed<F::Op>, auth: Signed<F::Auth>, state: F::State) -> Server<F> {
        Server {
            invoked_up_to: 0,
            applied: 0,
            invoked: BTreeMap::new(),
            committed: BTreeMap::from([(0, genesis)]),
            auth,
            state,
        }
    }

    /// A new group's server: operation 0 (`op`, a no-op) committed and authenticated over
    /// `state` by the group's creator, whose keyring signs both.
    pub fn genesis(keys: &Keyring, creator: ClientId, op: F::Op, state: F::State) -> Result<Server<F>, KeyringError> {
        let bytes = F::op_bytes(&op);
        let chain = Digest::ZERO;
        let phi = keys.sign(creator, &commit_statement(0, &bytes, creator, Status::Success, &chain))?;
        let auth = F::auth_of(&state);
        let psi = keys.sign(creator, &auth_statement(&bytes, 0, &chain, &F::auth_bytes(&auth)))?;
        let genesis = Committed { op, status: Status::Success, phi, client: creator };
        Ok(Server::new(genesis, Signed { auth, psi }, state))
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

    /// The INVOKE handler: assigns the next sequence number and answers with the REPLY.
    pub fn on_invoke(&mut self, from: ClientId, m: Invoke<F::Op>) -> Result<Reply<F>, ServerError> {
        let (b, c) = (self.applied, m.cleared);
        if c > b {
            return Err(ServerError::ClearedTooFar { client: from, cleared: c, applied: b });
        }
        let from_l = if b == c { b } else { c + 1 };
        let delta: Vec<_> = (from_l..=b)
            .map(|l| self.committed.get(&l).cloned().ok_or(ServerError::Forgotten(l)))
            .collect::<Result<_, _>>()?;
        self.invoked_up_to += 1;
        let t = self.invoked_up_to;
        self.invoked.insert(t, Invoked { op: m.op, tau: m.tau, client: from });
        let omega: Vec<_> = self.invoked.range(b + 1..=t).map(|(_, i)| i.clone()).collect();
        // The client committed its earlier operations before this one (FIFO): their status.
        let status = |k: usize| self.committed.get(&(b + 1 + k as u64)).map(|c| c.status);
        let (mine, _) = separate_pending(from, &omega, status);
        let (response, aux) = F::query(&self.state, &mine);
        Ok(Reply { delta, b, alpha: self.auth.clone(), omega, t, response, aux })
    }

    /// The COMMIT handler: `O[q]`.
    pub fn on_commit(&mut self, from: ClientId, m: Commit<F::Op>) -> Result<(), ServerError> {
        let Commit { op, t: q, status, phi } = m;
        match self.invoked.get(&q) {
            Some(i) if i.client == from && i.op == op && !self.committed.contains_key(&q) => {
                self.committed.insert(q, Committed { op, status, phi, client: from });
                Ok(())
            }
            _ => Err(ServerError::NoSuchOperation { client: from, q }),
        }
    }

    /// "upon `O[b+1] ≠ ⊥ ∧ A[b+1] = ⊥`": the UPDATE-AUTH for the next operation to apply, and
    /// the client to send it to; `None` until that operation is committed. Asking again
    /// gives the same message (for a client that reconnects).
    pub fn update_auth(&self) -> Option<(ClientId, UpdateAuth<F>)> {
        let q = self.applied + 1;
        let next = self.committed.get(&q)?;
        let (response, aux) = match next.status {
            Status::Success => {
                let (r, aux) = F::query(&self.state, std::slice::from_ref(&next.op));
                (Some(r), Some(aux))
            }
            Status::Abort => (None, None),
        };
        let previous = self.committed.get(&self.applied).cloned()?;
        let m = UpdateAuth {
            op: next.op.clone(),
            response,
            aux,
            phi: next.phi.clone(),
            q,
            previous,
            alpha: self.auth.clone(),
        };
        Some((next.client, m))
    }

    /// The COMMIT-AUTH handler: `b ← b + 1`, `A[b]`, and the operation applied when it
    /// succeeded. An authenticator that is not the state's after the operation is refused.
    pub fn on_commit_auth(&mut self, from: ClientId, m: CommitAuth<F::Auth>) -> Result<(), ServerError> {
        let q = self.applied + 1;
        let next = match self.committed.get(&q) {
            Some(c) if m.q == q && c.client == from => c,
            _ => return Err(ServerError::NotNext { client: from, q: m.q, next: q }),
        };
        let mut state = self.state.clone();
        if next.status == Status::Success {
            F::refresh(&mut state, &next.op);
        }
        if F::auth_of(&state) != m.signed.auth {
            return Err(ServerError::WrongAuthenticator { q });
        }
        self.state = state;
        self.applied = q;
        self.auth = m.signed;
        self.invoked.remove(&q);
        Ok(())
    }
}
