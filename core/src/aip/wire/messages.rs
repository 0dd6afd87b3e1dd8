//! The layouts of AIP's messages (Alg. 1–3) and of the records they carry (`I[l]`, `O[l]`,
//! `A[l]`), with the fields of Sec. 3.7: each struct's fields in their declared order, each
//! enum a tag byte (numbered from 1 in declaration order) then its fields.

use super::{
    bytes, list, put_bytes, put_list, put_option, tag, Wire, WireError, MAX_DELTA, MAX_OPERATIONS, MAX_PENDING,
    MAX_SIGNATURE_LEN,
};
use crate::aip::{
    Commit, CommitAuth, Committed, Functionality, HistoryPage, Invoke, Invoked, Pending, Reply, Signature, Signed,
    Status, TakeOver, ToAuthenticate, ToClient, ToServer, UpdateAuth, View, ViewParts,
};
use crate::codec::Reader;

/// A signature's bytes (HMAC-SHA256 or Ed25519; the keyring checks which length it needs).
fn signature_bytes(r: &mut Reader<'_>) -> Result<Vec<u8>, WireError> {
    Ok(bytes(r, "signature bytes", MAX_SIGNATURE_LEN)?.to_vec())
}

impl Wire for Status {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.byte());
    }

    fn decode(r: &mut Reader<'_>) -> Result<Status, WireError> {
        match r.u8()? {
            1 => Ok(Status::Success),
            2 => Ok(Status::Abort),
            tag => Err(WireError::UnknownTag { what: "status", tag }),
        }
    }
}

impl Wire for Signature {
    fn encode(&self, out: &mut Vec<u8>) {
        self.by.encode(out);
        put_bytes(out, &self.bytes);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Signature, WireError> {
        Ok(Signature { by: u32::decode(r)?, bytes: signature_bytes(r)? })
    }
}

impl<O: Wire> Wire for Invoked<O> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.op.encode(out);
        put_bytes(out, &self.tau);
        self.client.encode(out);
        self.counter.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Invoked<O>, WireError> {
        Ok(Invoked { op: O::decode(r)?, tau: signature_bytes(r)?, client: u32::decode(r)?, counter: u64::decode(r)? })
    }
}

impl<O: Wire> Wire for Committed<O> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.op.encode(out);
        self.status.encode(out);
        self.phi.encode(out);
        self.client.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Committed<O>, WireError> {
        Ok(Committed {
            op: O::decode(r)?,
            status: Status::decode(r)?,
            phi: Signature::decode(r)?,
            client: u32::decode(r)?,
        })
    }
}

impl<A: Wire> Wire for Signed<A> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.auth.encode(out);
        self.psi.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Signed<A>, WireError> {
        Ok(Signed { auth: A::decode(r)?, psi: Signature::decode(r)? })
    }
}

/// `[INVOKE, o, τ, c, n]`.
impl<O: Wire> Wire for Invoke<O> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.op.encode(out);
        put_bytes(out, &self.tau);
        self.cleared.encode(out);
        self.counter.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Invoke<O>, WireError> {
        Ok(Invoke { op: O::decode(r)?, tau: signature_bytes(r)?, cleared: u64::decode(r)?, counter: u64::decode(r)? })
    }
}

impl<O: Wire> Wire for Pending<O> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.invoked.encode(out);
        self.aborted.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Pending<O>, WireError> {
        Ok(Pending { invoked: Invoked::decode(r)?, aborted: Option::decode(r)? })
    }
}

/// `δ, b, O[d], A[d], ω`.
impl<F: Functionality> ViewParts<'_, F> {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_list(out, &self.delta, |out, c| c.encode(out));
        self.b.encode(out);
        self.authenticated.encode(out);
        self.alpha.encode(out);
        // As `Pending` is: `I[l]`, then its abort mark as an `Option`.
        put_list(out, &self.omega, |out, &(invoked, aborted)| {
            invoked.encode(out);
            put_option(out, aborted);
        });
    }
}

impl<F: Functionality> Wire for View<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        ViewParts::of(self).encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<View<F>, WireError> {
        Ok(View {
            delta: list(r, "authenticated operations", MAX_DELTA, Committed::decode)?,
            b: u64::decode(r)?,
            authenticated: Committed::decode(r)?,
            alpha: Signed::decode(r)?,
            omega: list(r, "pending operations", MAX_PENDING, Pending::decode)?,
        })
    }
}

/// `first, O[first..], more`.
impl<O: Wire> Wire for HistoryPage<O> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.first.encode(out);
        put_list(out, &self.delta, |out, c| c.encode(out));
        self.more.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<HistoryPage<O>, WireError> {
        Ok(HistoryPage {
            first: u64::decode(r)?,
            delta: list(r, "operations of a page of the history", MAX_DELTA, Committed::decode)?,
            more: bool::decode(r)?,
        })
    }
}

/// `[REPLY, δ, b, α, ω, t, r, σ_o]`.
impl<F: Functionality> Wire for Reply<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.view.encode(out);
        self.t.encode(out);
        self.response.encode(out);
        self.aux.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Reply<F>, WireError> {
        Ok(Reply {
            view: View::decode(r)?,
            t: u64::decode(r)?,
            response: F::Response::decode(r)?,
            aux: F::Aux::decode(r)?,
        })
    }
}

/// `[COMMIT, o, t, z, φ]`, with the operation's client (a taker's COMMIT is for another).
impl<O: Wire> Wire for Commit<O> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.op.encode(out);
        self.t.encode(out);
        self.status.encode(out);
        self.client.encode(out);
        self.phi.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Commit<O>, WireError> {
        Ok(Commit {
            op: O::decode(r)?,
            t: u64::decode(r)?,
            status: Status::decode(r)?,
            client: u32::decode(r)?,
            phi: Signature::decode(r)?,
        })
    }
}

impl<F: Functionality> Wire for ToAuthenticate<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.q.encode(out);
        self.committed.encode(out);
        self.response.encode(out);
        self.aux.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<ToAuthenticate<F>, WireError> {
        Ok(ToAuthenticate {
            q: u64::decode(r)?,
            committed: Committed::decode(r)?,
            response: Option::decode(r)?,
            aux: Option::decode(r)?,
        })
    }
}

/// `[UPDATE-AUTH, d, O[d], A[d], batch]`.
impl<F: Functionality> Wire for UpdateAuth<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.base.encode(out);
        self.previous.encode(out);
        self.alpha.encode(out);
        put_list(out, &self.ops, |out, o| o.encode(out));
    }

    fn decode(r: &mut Reader<'_>) -> Result<UpdateAuth<F>, WireError> {
        Ok(UpdateAuth {
            base: u64::decode(r)?,
            previous: Committed::decode(r)?,
            alpha: Signed::decode(r)?,
            ops: list(r, "operations to authenticate", MAX_OPERATIONS, ToAuthenticate::decode)?,
        })
    }
}

/// `[COMMIT-AUTH, q, a', ψ']`.
impl<A: Wire> Wire for CommitAuth<A> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.q.encode(out);
        self.signed.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<CommitAuth<A>, WireError> {
        Ok(CommitAuth { q: u64::decode(r)?, signed: Signed::decode(r)? })
    }
}

impl<F: Functionality> Wire for TakeOver<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.failed.encode(out);
        self.view.encode(out);
        put_list(out, &self.hanging, |out, l| l.encode(out));
    }

    fn decode(r: &mut Reader<'_>) -> Result<TakeOver<F>, WireError> {
        Ok(TakeOver {
            failed: u32::decode(r)?,
            view: View::decode(r)?,
            hanging: list(r, "hanging operations", MAX_OPERATIONS, u64::decode)?,
        })
    }
}

/// A client's message: `1` INVOKE, `2` COMMIT, `3` COMMIT-AUTH.
impl<F: Functionality> Wire for ToServer<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ToServer::Invoke(m) => {
                out.push(1);
                m.encode(out);
            }
            ToServer::Commit(m) => {
                out.push(2);
                m.encode(out);
            }
            ToServer::CommitAuth(m) => {
                out.push(3);
                m.encode(out);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<ToServer<F>, WireError> {
        Ok(match tag(r, "message to the server", 3)? {
            1 => ToServer::Invoke(Invoke::decode(r)?),
            2 => ToServer::Commit(Commit::decode(r)?),
            _ => ToServer::CommitAuth(CommitAuth::decode(r)?),
        })
    }
}

/// The server's message: `1` REPLY, `2` UPDATE-AUTH, `3` a takeover's view.
impl<F: Functionality> Wire for ToClient<F> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ToClient::Reply(m) => {
                out.push(1);
                m.encode(out);
            }
            ToClient::UpdateAuth(m) => {
                out.push(2);
                m.encode(out);
            }
            ToClient::TakeOver(m) => {
                out.push(3);
                m.encode(out);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<ToClient<F>, WireError> {
        Ok(match tag(r, "message to a client", 3)? {
            1 => ToClient::Reply(Box::new(Reply::decode(r)?)),
            2 => ToClient::UpdateAuth(Box::new(UpdateAuth::decode(r)?)),
            _ => ToClient::TakeOver(Box::new(TakeOver::decode(r)?)),
        })
    }
}
