//! The server's passive phase (paper 003, Alg. 3: UPDATE-AUTH, COMMIT-AUTH), with the
//! delegation of batches to any member (Sec. 3.7 "Batching and delegating operation
//! authentication") and the takeover of a failed client (Sec. 3.7 "Tolerate client crashes").

use super::{Refusal, Server, ServerError};
use crate::aip::{ClientId, CommitAuth, Functionality, Status, TakeOver, ToAuthenticate, UpdateAuth};

impl<F: Functionality> Server<F> {
    /// The committed updates from `b + 1` up to `up_to`, each with its response and proof
    /// against the state after the ones before it, on top of `O[d]`, `A[d]`. Committed
    /// queries in between are applied already or will be (no passive phase); the batch stops
    /// at the first operation not committed yet (its status is unknown).
    fn batch(&self, up_to: u64) -> Result<Option<UpdateAuth<F>>, Refusal<F>> {
        let mut state = self.state.clone();
        let mut ops = Vec::new();
        for q in self.applied + 1..=up_to {
            let Some(committed) = self.committed.get(&q) else { break };
            if F::is_query(&committed.op) {
                continue;
            }
            let (response, aux) = match committed.status {
                Status::Success => {
                    let failed = |error| ServerError::Functionality { q, error };
                    let (response, aux) = F::query(&state, std::slice::from_ref(&committed.op)).map_err(failed)?;
                    F::refresh(&mut state, &committed.op).map_err(failed)?;
                    (Some(response), Some(aux))
                }
                Status::Abort => (None, None),
            };
            ops.push(ToAuthenticate { q, committed: committed.clone(), response, aux });
        }
        if ops.is_empty() {
            return Ok(None);
        }
        let previous = self.committed.get(&self.last_update).ok_or(ServerError::Forgotten(self.last_update))?.clone();
        Ok(Some(UpdateAuth { base: self.last_update, previous, alpha: self.auth.clone(), ops }))
    }

    /// "upon `O[b+1] ≠ ⊥ ∧ A[b+1] = ⊥`": the UPDATE-AUTH for the next operation to apply, and
    /// the client to send it to (its own, or the member that took over for it); `None` until
    /// that operation is committed. Asking again gives the same message (for a client that
    /// reconnects). The next operation is never a committed query: those are applied at once.
    /// An error: the functionality cannot prove an update on the server's state.
    pub fn update_auth(&self) -> Result<Option<(ClientId, UpdateAuth<F>)>, Refusal<F>> {
        let q = self.applied + 1;
        let Some(committed) = self.committed.get(&q) else { return Ok(None) };
        let to = self.retired.get(&committed.client).copied().unwrap_or(committed.client);
        Ok(self.batch(q)?.map(|m| (to, m)))
    }

    /// Sec. 3.7: delegates to `to` the authentication of every committed update from `b + 1`
    /// up to the last operation `to` committed (the paper's server does so as that COMMIT
    /// arrives; `to` has seen every operation up to there, and had handled their REPLY before
    /// this UPDATE-AUTH can reach it). `None` when there is none, or `to` was taken over.
    /// Members may answer for the same operation: the first answer counts, the others are
    /// refused as [`ServerError::AlreadyAuthenticated`] and need no more help.
    pub fn delegate_auth(&self, to: ClientId) -> Result<Option<UpdateAuth<F>>, Refusal<F>> {
        match self.seen_up_to.get(&to) {
            Some(&up_to) if !self.retired.contains_key(&to) => self.batch(up_to),
            _ => Ok(None),
        }
    }

    /// The COMMIT-AUTH handler: `b ← b + 1`, `A[b]`, and the operation applied when it
    /// succeeded, from any member (delegation). An authenticator that is not the state's after
    /// the operation is refused. Committed queries next in line are applied after it.
    pub fn on_commit_auth(&mut self, from: ClientId, m: CommitAuth<F::Auth>) -> Result<(), Refusal<F>> {
        self.refuse_retired(from)?;
        if m.signed.psi.by != from {
            return Err(ServerError::SignedByAnother { client: from, by: m.signed.psi.by });
        }
        if m.q <= self.applied {
            return Err(ServerError::AlreadyAuthenticated { q: m.q });
        }
        let q = self.applied + 1;
        let next = match self.committed.get(&q) {
            Some(c) if m.q == q => c,
            _ => return Err(ServerError::NotNext { client: from, q: m.q, next: q }),
        };
        let mut state = self.state.clone();
        if next.status == Status::Success {
            F::refresh(&mut state, &next.op).map_err(|error| ServerError::Functionality { q, error })?;
        }
        if F::auth_of(&state) != m.signed.auth {
            return Err(ServerError::WrongAuthenticator { q });
        }
        self.state = state;
        self.applied = q;
        self.last_update = q;
        self.auth = m.signed;
        self.apply_queries();
        Ok(())
    }

    /// Sec. 3.7: `taker` takes over for `failed`, which the group has reliably found crashed.
    /// From now on the server refuses every message of `failed`, sends its passive phases to
    /// `taker`, and lets `taker` commit its operations as aborted. The answer gives `taker` a
    /// view of the whole history (`cleared` is its `c`, as in an INVOKE; the view clears
    /// nothing, so `taker` may have an operation in flight) and the positions of `failed`'s
    /// operations no COMMIT came for: [`crate::aip::Client::take_over`] aborts them. Deliver
    /// it to `taker` before the UPDATE-AUTHs now routed to it: they concern that history.
    pub fn take_over(&mut self, failed: ClientId, taker: ClientId, cleared: u64) -> Result<TakeOver<F>, Refusal<F>> {
        let member = |c: &ClientId| self.config.members.as_ref().is_none_or(|m| m.contains(c));
        if failed == taker || self.retired.contains_key(&taker) || !member(&failed) || !member(&taker) {
            return Err(ServerError::CannotTakeOver { client: taker, failed });
        }
        let view = self.view(taker, cleared)?.to_view();
        let hanging = self
            .invoked
            .range(view.b + 1..)
            .filter(|(l, i)| i.client == failed && !self.committed.contains_key(l))
            .map(|(&l, _)| l)
            .collect();
        self.retired.insert(failed, taker);
        self.forget_old();
        Ok(TakeOver { failed, view, hanging })
    }
}
