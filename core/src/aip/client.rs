//! AIP's client (paper 003, Alg. 1–2): `aip-invoke`, the REPLY and UPDATE-AUTH handlers,
//! `check-view`, `check-pending` and `extend-chain`.

use super::{
    auth_statement, chain, commit_statement, invoke_statement, separate_pending, ClientId, Commit, CommitAuth,
    Committed, Functionality, Invoke, Keyring, Reply, Signed, Status, UpdateAuth, Violation,
};
use crate::hash::Digest;
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
    chain: BTreeMap<u64, Digest>,
    /// `Z`: the status of this client's own operations that are not cleared yet (an
    /// authenticated one stays pending in the replies until the server applied it).
    status: BTreeMap<u64, Status>,
    /// `u`: the operation invoked and not completed.
    current: Option<F::Op>,
}

impl<F: Functionality> Client<F> {
    pub fn new(me: ClientId, keys: Keyring, functionality: F) -> Client<F> {
        Client {
            me,
            keys,
            functionality,
            cleared: 0,
            chain: BTreeMap::from([(0, Digest::ZERO)]),
            status: BTreeMap::new(),
            current: None,
        }
    }

    pub fn id(&self) -> ClientId {
        self.me
    }

    /// `c`.
    pub fn cleared(&self) -> u64 {
        self.cleared
    }

    fn sign(&self, statement: &[u8]) -> Result<Vec<u8>, Violation> {
        self.keys.sign(self.me, statement).map_err(|_| Violation::Malformed("this client cannot sign"))
    }

    fn check(&self, ok: bool, what: &'static str, client: ClientId, at: u64) -> Result<(), Violation> {
        match ok {
            true => Ok(()),
            false => Err(Violation::Signature { what, client, at }),
        }
    }

    /// `aip-invoke(o)`: the INVOKE message; one operation at a time.
    pub fn invoke(&mut self, op: F::Op) -> Result<Invoke<F::Op>, Violation> {
        if self.current.is_some() {
            return Err(Violation::Malformed("an operation is already in progress"));
        }
        let tau = self.sign(&invoke_statement(&F::op_bytes(&op), self.me))?;
        self.current = Some(op.clone());
        Ok(Invoke { op, tau, cleared: self.cleared })
    }

    /// `extend-chain(o, l, j)`: `H[l]` is computed, or checked when it is known already.
    fn extend_chain(&mut self, op: &[u8], l: u64, client: ClientId) -> Result<(), Violation> {
        if l == 0 {
            return Ok(()); // the genesis: H[0] is fixed
        }
        let previous = self.chain.get(&(l - 1)).ok_or(Violation::Malformed("a gap in the history"))?;
        let next = chain(previous, op, l, client);
        match self.chain.get(&l) {
            None => {
                self.chain.insert(l, next);
                Ok(())
            }
            Some(known) if *known == next => Ok(()),
            Some(_) => Err(Violation::Chain(l)),
        }
    }

    /// `check-view(δ, b, a, ψ)`: clears the operations authenticated since the last one.
    fn check_view(&mut self, delta: &[Committed<F::Op>], b: u64, alpha: &Signed<F::Auth>) -> Result<(), Violation> {
        let Some(last) = delta.last() else { return Err(Violation::Malformed("no authenticated operation")) };
        // When nothing new was authenticated, δ repeats the last cleared operation.
        let before = match b == self.cleared {
            true => self.cleared.checked_sub(1),
            false => Some(self.cleared),
        };
        let first = before.map_or(0, |d| d + 1);
        if first + delta.len() as u64 - 1 != b {
            return Err(Violation::Malformed("the authenticated operations do not end at b"));
        }
        for (k, committed) in delta.iter().enumerate() {
            let l = first + k as u64;
            let op = F::op_bytes(&committed.op);
            self.extend_chain(&op, l, committed.client)?;
            let statement = commit_statement(l, &op, committed.client, committed.status, &self.chain[&l]);
            self.check(self.keys.verify(committed.client, &statement, &committed.phi), "COMMIT", committed.client, l)?;
        }
        let statement = auth_statement(&F::op_bytes(&last.op), b, &self.chain[&b], &F::auth_bytes(&alpha.auth));
        self.check(self.keys.verify(last.client, &statement, &alpha.psi), "AUTH", last.client, b)?;
        self.cleared = b;
        Ok(())
    }

    /// `check-pending(ω)`: every pending operation was invoked by its client, on this chain,
    /// and the last is this client's current one.
    fn check_pending(&mut self, omega: &[super::Invoked<F::Op>]) -> Result<(), Violation> {
        let Some(last) = omega.last() else { return Err(Violation::Pending("none, not even this client's own")) };
        for (k, invoked) in omega.iter().enumerate() {
            let l = self.cleared + 1 + k as u64;
            let op = F::op_bytes(&invoked.op);
            self.extend_chain(&op, l, invoked.client)?;
            let statement = invoke_statement(&op, invoked.client);
            self.check(self.keys.verify(invoked.client, &statement, &invoked.tau), "INVOKE", invoked.client, l)?;
        }
        match (last.client == self.me, Some(&last.op) == self.current.as_ref()) {
            (true, true) => Ok(()),
            _ => Err(Violation::Pending("the last is not this client's current operation")),
        }
    }

    /// The REPLY handler: the response (or ABORT), and the COMMIT message to send.
    pub fn on_reply(&mut self, reply: Reply<F>) -> Result<Replied<F>, Violation> {
        let Some(op) = self.current.clone() else { return Err(Violation::Malformed("a reply with nothing invoked")) };
        self.check_view(&reply.delta, reply.b, &reply.alpha)?;
        self.check_pending(&reply.omega)?;
        let t = reply.b + reply.omega.len() as u64;
        if reply.t != t {
            return Err(Violation::Pending("the sequence number does not follow the pending operations"));
        }
        let status = |k: usize| self.status.get(&(reply.b + 1 + k as u64)).copied();
        let (mine, others) = separate_pending(self.me, &reply.omega, status);
        let (outcome, status) = match self.functionality.compatible(&others, &op) {
            true => {
                F::authexec(&mine, &reply.alpha.auth, &reply.response, &reply.aux).ok_or(Violation::Response)?;
                (Outcome::Done(reply.response), Status::Success)
            }
            false => (Outcome::Abort, Status::Abort),
        };
        self.status.insert(t, status);
        let phi = self.sign(&commit_statement(t, &F::op_bytes(&op), self.me, status, &self.chain[&t]))?;
        self.current = None;
        self.forget_old();
        Ok((outcome, Commit { op, t, status, phi }))
    }

    /// The UPDATE-AUTH handler: this client authenticates its operation `q` on top of the
    /// signed authenticator of `q - 1`.
    pub fn on_update_auth(&mut self, m: UpdateAuth<F>) -> Result<CommitAuth<F::Auth>, Violation> {
        let q = m.q;
        let (Some(&status), Some(chain_q), Some(chain_before)) =
            (self.status.get(&q), self.chain.get(&q), q.checked_sub(1).and_then(|p| self.chain.get(&p)))
        else {
            return Err(Violation::Malformed("an UPDATE-AUTH for no operation of this client"));
        };
        let op = F::op_bytes(&m.op);
        let mine = commit_statement(q, &op, self.me, status, chain_q);
        self.check(self.keys.verify(self.me, &mine, &m.phi), "COMMIT", self.me, q)?;
        let statement =
            auth_statement(&F::op_bytes(&m.previous.op), q - 1, chain_before, &F::auth_bytes(&m.alpha.auth));
        self.check(self.keys.verify(m.previous.client, &statement, &m.alpha.psi), "AUTH", m.previous.client, q - 1)?;
        let auth = match (status, &m.response, &m.aux) {
            (Status::Success, Some(response), Some(aux)) => {
                F::authexec(std::slice::from_ref(&m.op), &m.alpha.auth, response, aux).ok_or(Violation::Response)?
            }
            (Status::Success, _, _) => return Err(Violation::Malformed("an update without its proof")),
            (Status::Abort, _, _) => m.alpha.auth.clone(),
        };
        let psi = self.sign(&auth_statement(&op, q, chain_q, &F::auth_bytes(&auth)))?;
        Ok(CommitAuth { q, signed: Signed { auth, psi } })
    }

    /// Drops what no later message can need: the status of cleared operations, and the chain
    /// below the last cleared operation and below the oldest own operation not cleared.
    fn forget_old(&mut self) {
        self.status = self.status.split_off(&(self.cleared + 1));
        let oldest_own = self.status.keys().next().copied().unwrap_or(u64::MAX);
        let keep_from = self.cleared.min(oldest_own).saturating_sub(1);
        self.chain = self.chain.split_off(&keep_from);
    }
}
