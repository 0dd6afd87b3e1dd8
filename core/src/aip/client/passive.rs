//! The client's passive phase (paper 003, Alg. 1, UPDATE-AUTH), for its own updates or for
//! a batch delegated to it (Sec. 3.7 "Batching and delegating operation authentication"), and
//! the takeover of a failed client (Sec. 3.7 "Tolerate client crashes").

use super::{Client, Link};
use crate::aip::{
    auth_statement, commit_statement, ClientId, Commit, CommitAuth, Committed, Functionality, Reply, Signed, Status,
    TakeOver, ToAuthenticate, UpdateAuth, Violation, Wire,
};
use crate::hash::Digest;

impl<F: Functionality> Client<F> {
    /// The last update before `q` and its `H`: the authenticator `q` builds on. `None` when
    /// `q` is not in this client's view, or cleared already (authenticated by someone).
    fn previous_update(&self, q: u64) -> Option<(u64, Digest)> {
        if q <= self.cleared || !self.chain.contains(q) {
            return None;
        }
        // Every position after `c` is in the chain; at or before it, `d` is the last update.
        let later = self.chain.last_update_in(self.cleared + 1, q);
        Some(later.map_or(self.authenticated, |(p, link)| (p, link.hash)))
    }

    /// The UPDATE-AUTH handler (Alg. 1), for a batch (Sec. 3.7): each update is checked
    /// against its COMMIT (signed on this client's chain), executed with `authexec` on top of
    /// the one before it (the first on top of `A[d]`, whose AUTH signature is checked), and
    /// its new authenticator signed by this client, whoever's operation it is. The server
    /// cannot skip an update: each must build on the last update before it in this client's
    /// view. Queries never come here (they have no passive phase).
    pub fn on_update_auth(&mut self, m: UpdateAuth<F>) -> Result<Vec<CommitAuth<F::Auth>>, Violation> {
        let (mut base, mut auth) = (m.base, m.alpha.auth.clone());
        let mut out = Vec::with_capacity(m.ops.len());
        for entry in m.ops {
            let (q, committed) = (entry.q, &entry.committed);
            if F::is_query(&committed.op) {
                return Err(Violation::Malformed("an UPDATE-AUTH for a query (queries have no passive phase)"));
            }
            let (previous, _) = self
                .previous_update(q)
                .ok_or(Violation::Malformed("an UPDATE-AUTH for an operation not pending in this view"))?;
            if previous != base {
                return Err(Violation::Stale { q, base });
            }
            if out.is_empty() {
                // Only now is `d` known to be the right base: this client may have dropped an
                // older one's `H`.
                self.check_auth(&m.previous.op, m.base, &m.alpha)?;
            }
            self.check_commit(committed, &committed.op.to_wire(), q)?;
            let next = match (committed.status, &entry.response, &entry.aux) {
                (Status::Success, Some(response), Some(aux)) => {
                    F::authexec(std::slice::from_ref(&committed.op), &auth, response, aux)
                        .map_err(|_| Violation::Response)?
                }
                (Status::Success, _, _) => return Err(Violation::Malformed("an update without its proof")),
                (Status::Abort, _, _) => auth,
            };
            let hash = self.chain[q].hash;
            let psi = self.sign(&auth_statement(&committed.op.to_wire(), q, &hash, &next.to_wire()))?;
            out.push(CommitAuth { q, signed: Signed { auth: next.clone(), psi } });
            (base, auth) = (q, next);
        }
        Ok(out)
    }

    /// What authenticating this client's own update takes, kept from its REPLY when nothing
    /// was pending before it (`ω` is the operation alone, so `t = b + 1`): `O[d]`, `A[d]`,
    /// and the response with its proof against the state after `b`, which is `A[d]`'s
    /// (queries change nothing). That is everything the UPDATE-AUTH for `t` would carry, so
    /// the client can authenticate its update at once ([`Client::authenticate_own`]) and send
    /// the COMMIT-AUTH with its COMMIT: Sec. 3.7's batching, at its smallest, saves the
    /// passive phase its round trip. `None` for a query, or with other operations pending.
    pub fn own_update(&self, reply: &Reply<F>) -> Option<OwnUpdate<F>> {
        let [own] = &reply.view.omega[..] else { return None };
        if F::is_query(&own.invoked.op) || reply.t != reply.view.b + 1 {
            return None;
        }
        Some(OwnUpdate {
            t: reply.t,
            previous: reply.view.authenticated.clone(),
            alpha: reply.view.alpha.clone(),
            response: reply.response.clone(),
            aux: reply.aux.clone(),
        })
    }

    /// The COMMIT-AUTH of this client's own update, made from its REPLY ([`Client::own_update`])
    /// once [`Client::on_reply`] accepted it and made `commit`: the UPDATE-AUTH the server
    /// would send is built here and handled as one from the server ([`Client::on_update_auth`]),
    /// with all of its checks. `None` when the operation aborted, or `own` is not its.
    pub fn authenticate_own(
        &mut self,
        own: OwnUpdate<F>,
        commit: &Commit<F::Op>,
    ) -> Result<Option<CommitAuth<F::Auth>>, Violation> {
        if own.t != commit.t || commit.status != Status::Success || commit.client != self.me {
            return Ok(None);
        }
        let Some((base, _)) = self.previous_update(commit.t) else { return Ok(None) };
        let committed =
            Committed { op: commit.op.clone(), status: commit.status, phi: commit.phi.clone(), client: commit.client };
        let entry = ToAuthenticate { q: commit.t, committed, response: Some(own.response), aux: Some(own.aux) };
        let m = UpdateAuth { base, previous: own.previous, alpha: own.alpha, ops: vec![entry] };
        Ok(self.on_update_auth(m)?.pop())
    }

    /// Takes over for `m.failed`, which the group has reliably found crashed (Sec. 3.7):
    /// extends this client's chain over the history in `m.view` (checking it as a REPLY's,
    /// but without clearing it, so that an operation this client has in flight is not
    /// disturbed), then aborts the failed client's hanging operations in its place (a COMMIT
    /// with status ABORT, signed by this client); the server then sends this client the
    /// failed client's passive phases (its committed updates and these aborts).
    ///
    /// Reliability assumption: the failed client never sends another message. A client that
    /// may come back needs a new identity; this client refuses any operation of the failed
    /// one placed after this view (and so does every client that clears one of these aborts).
    /// The taker relies on the server for which operations are hanging: a server that hides a
    /// COMMIT the failed client sent gets that operation aborted, which this client catches
    /// if the server later shows it that COMMIT, but others need not (the paper leaves crashes
    /// outside its model).
    pub fn take_over(&mut self, m: TakeOver<F>) -> Result<Vec<Commit<F::Op>>, Violation> {
        if m.failed == self.me {
            return Err(Violation::Malformed("a takeover of this client itself"));
        }
        let (b, t) = (m.view.b, m.view.b + m.view.omega.len() as u64);
        let hanging = |l: u64| l.checked_sub(b + 1).and_then(|k| m.view.omega.get(k as usize));
        // Every check first: a refused takeover leaves the chain as it was.
        self.all_or_nothing(|me| {
            me.check_delta(&m.view)?;
            me.check_pending(&m.view.omega, b + 1, false)?;
            for &l in &m.hanging {
                let pending = hanging(l).ok_or(Violation::Malformed("a hanging operation outside the pending ones"))?;
                if pending.invoked.client != m.failed || pending.aborted.is_some() {
                    return Err(Violation::Malformed("a hanging operation not the failed client's, or committed"));
                }
            }
            Ok(())
        })?;
        let mut commits = Vec::with_capacity(m.hanging.len());
        for &l in &m.hanging {
            let pending = hanging(l).ok_or(Violation::Malformed("a hanging operation outside the pending ones"))?;
            let Link { hash, .. } = self.chain[l];
            let op = pending.invoked.op.clone();
            let phi = self.sign(&commit_statement(l, &op.to_wire(), m.failed, Status::Abort, &hash))?;
            self.aborted_for.insert(l, m.failed);
            commits.push(Commit { op, t: l, status: Status::Abort, client: m.failed, phi });
        }
        let last = self.retired.entry(m.failed).or_insert(t);
        *last = (*last).min(t);
        self.forget_old();
        Ok(commits)
    }

    /// Whether this client knows `client` was taken over.
    pub fn knows_taken_over(&self, client: ClientId) -> bool {
        self.retired.contains_key(&client)
    }
}

/// What a REPLY holds for authenticating the replied update at once: see
/// [`Client::own_update`].
#[derive(Clone, Debug)]
pub struct OwnUpdate<F: Functionality> {
    t: u64,
    previous: Committed<F::Op>,
    alpha: Signed<F::Auth>,
    response: F::Response,
    aux: F::Aux,
}
