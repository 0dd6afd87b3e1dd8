//! What the VICOS tests share: a provider served over a data directory, the protocol's calls,
//! and members of a group driven by real `aip::Client`s (paper 003, Alg. 1–2), each through
//! the HTTP API as a provider client (a bearer token; several members may share one).

use serde_bytes::ByteBuf;
use std::net::SocketAddr;
use std::path::Path;
use vouch_core::adict::Tree;
use vouch_core::aip::{
    self, Adict, Admission, ClientId, DictOp, DictResponse, Keyring, Mode, Outcome, Reply, UpdateAuth, Wire,
};
use vouch_proto::vicos::{AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipInvoke, AipWork, AipWorkRequest};
use vouch_proto::Rpc;
use vouch_proto::{decode, encode, ErrorBody, ErrorCode, Op, PROTOCOL_VERSION, VERSION_HEADER};
use vouch_server::{Limits, Provider, RunningServer, ServeOptions};
use vouch_testkit::provider;

pub const ALICE: &str = "alice-token";
pub const BOB: &str = "bob-token";

/// The provider over `data`, for two provider clients (alice and bob), without housekeeping.
pub async fn serve(data: &Path, limits: Limits) -> RunningServer {
    let options = ServeOptions { limits, maintenance: None, ..ServeOptions::default() };
    let honest = Provider::open_dir(data, &vouch_server::Blocks::Local).unwrap();
    provider::serve(provider::ANY_PORT, honest, options, &[(ALICE, "alice"), (BOB, "bob")]).await
}

/// One request's raw answer: status and body.
pub async fn post(addr: SocketAddr, token: &str, op: Op, body: Vec<u8>) -> (u16, bytes::Bytes) {
    vouch_proto::tls::install_provider();
    let response = reqwest::Client::new()
        .post(format!("http://{addr}{}", op.path()))
        .bearer_auth(token)
        .header(VERSION_HEADER, PROTOCOL_VERSION.to_string())
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap())
}

/// One request, its answer decoded: the message, or the error body.
/// `req`, sent to its own operation; its answer, or the provider's refusal.
pub async fn call<R: Rpc>(addr: SocketAddr, token: &str, req: &R) -> Result<R::Answer, ErrorBody> {
    let (status, body) = post(addr, token, R::OP, encode(req)).await;
    match status {
        200 => Ok(decode(&body).unwrap()),
        _ => Err(decode(&body).unwrap()),
    }
}

/// Asserts a refusal with `code`; returns its message.
pub fn refused<T: std::fmt::Debug>(answer: Result<T, ErrorBody>, code: ErrorCode) -> String {
    match answer {
        Err(e) if e.code == code => e.message,
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

pub fn keys() -> Keyring {
    Keyring::hmac([42; 32])
}

/// The admission secret of every test group (`group`'s, from [`keys`]).
pub fn admission(group: &str) -> Admission {
    Admission::of_group_key(&[42; 32], group)
}

/// Member `member` shows `secret` as group `group`'s admission secret, through `token`.
pub async fn admit(
    addr: SocketAddr,
    token: &str,
    group: &str,
    member: ClientId,
    secret: &Admission,
) -> Result<AipAck, ErrorBody> {
    let req = AipAdmit { group: group.into(), member, admission: ByteBuf::from(secret.0.to_vec()) };
    call(addr, token, &req).await
}

pub fn put(key: &str, value: &str) -> DictOp {
    DictOp::Put { key: key.into(), value: value.into() }
}

pub fn get(key: &str) -> DictOp {
    DictOp::Get { key: key.into() }
}

pub fn value(v: &str) -> Outcome<DictResponse> {
    Outcome::Done(DictResponse::Value(Some(v.into())))
}

pub const NOTHING: Outcome<DictResponse> = Outcome::Done(DictResponse::Nothing);

/// Creates `group` with member 0's genesis over the empty dictionary.
pub async fn create(addr: SocketAddr, token: &str, group: &str) -> Result<AipAck, ErrorBody> {
    let (genesis, auth) = aip::genesis::<Adict>(&keys(), 0, DictOp::List, &Tree::new()).unwrap();
    let req = AipCreate {
        group: group.into(),
        genesis: ByteBuf::from(genesis.to_wire()),
        auth: ByteBuf::from(auth.to_wire()),
        admission: ByteBuf::from(admission(group).hash().to_vec()),
    };
    call(addr, token, &req).await
}

/// A member of a group: its AIP client, and the provider it talks to as which client. It
/// shows the group's admission secret before its first message (unless told not to).
pub struct Member {
    pub aip: aip::Client<Adict>,
    pub addr: SocketAddr,
    pub token: &'static str,
    pub group: String,
    pub admitted: std::sync::atomic::AtomicBool,
}

impl Member {
    pub fn new(id: ClientId, addr: SocketAddr, token: &'static str, group: &str) -> Member {
        let aip = aip::Client::new(id, keys(), Adict { mode: Mode::Compatible });
        Member { aip, addr, token, group: group.into(), admitted: false.into() }
    }

    /// A member that never shows the admission secret (it may be bound already, or not).
    pub fn unadmitted(self) -> Member {
        self.admitted.store(true, std::sync::atomic::Ordering::Relaxed);
        self
    }

    async fn call<R: Rpc>(&self, req: &R) -> Result<R::Answer, ErrorBody> {
        if !self.admitted.swap(true, std::sync::atomic::Ordering::Relaxed) {
            admit(self.addr, self.token, &self.group, self.aip.id(), &admission(&self.group)).await?;
        }
        call(self.addr, self.token, req).await
    }

    /// INVOKE; the REPLY, checked by the client (a violation panics), and its position `t`.
    pub async fn invoke(&mut self, op: DictOp) -> Result<(Reply<Adict>, u64), ErrorBody> {
        let invoke = self.aip.invoke(op).unwrap();
        let req = AipInvoke {
            group: self.group.clone(),
            from: self.aip.id(),
            invoke: ByteBuf::from(invoke.to_wire()),
            commits: vec![],
        };
        match self.call(&req).await {
            Ok(r) => {
                let reply = Reply::<Adict>::from_wire(&r.reply).unwrap();
                let t = reply.t;
                Ok((reply, t))
            }
            Err(e) => {
                self.aip.abandon();
                Err(e)
            }
        }
    }

    /// The active phase (INVOKE, REPLY, COMMIT): the outcome, its position, and the work the
    /// provider hands over for the passive phase (left undone).
    pub async fn active(&mut self, op: DictOp) -> Result<(Outcome<DictResponse>, u64, AipWork), ErrorBody> {
        let (reply, t) = self.invoke(op).await?;
        let (outcome, commit) = self.aip.on_reply(reply).expect("an honest provider's REPLY verifies");
        let req = AipCommit {
            group: self.group.clone(),
            from: self.aip.id(),
            commit: ByteBuf::from(commit.to_wire()),
            commit_auth: None,
        };
        let work = self.call(&req).await?;
        Ok((outcome, t, work))
    }

    /// The passive phase: authenticates what the provider hands over until nothing is left;
    /// returns how many operations this member authenticated.
    pub async fn passive(&mut self, mut work: AipWork) -> usize {
        let mut done = 0;
        while let Some(bytes) = work.update_auth.take() {
            let update = UpdateAuth::<Adict>::from_wire(&bytes).unwrap();
            let answers = self.aip.on_update_auth(update).expect("an honest provider's UPDATE-AUTH verifies");
            assert!(!answers.is_empty(), "work handed over is never empty");
            for answer in answers {
                let req = AipCommitAuth {
                    group: self.group.clone(),
                    from: self.aip.id(),
                    commit_auths: vec![ByteBuf::from(answer.to_wire())],
                };
                match self.call(&req).await {
                    Ok(next) => {
                        work = next;
                        done += 1;
                    }
                    // Members at once: another was faster with this update.
                    Err(e) if e.code == ErrorCode::Conflict => {}
                    Err(e) => panic!("an honest provider refused a COMMIT-AUTH: {e:?}"),
                }
            }
        }
        done
    }

    /// `aip-work`: what this member may authenticate now.
    pub async fn work(&self) -> AipWork {
        let req = AipWorkRequest { group: self.group.clone(), from: self.aip.id() };
        self.call(&req).await.unwrap()
    }

    /// One operation, both phases.
    pub async fn run(&mut self, op: DictOp) -> Outcome<DictResponse> {
        let (outcome, _, work) = self.active(op).await.unwrap();
        self.passive(work).await;
        outcome
    }
}

/// `(b, t)` of the group at the provider.
pub async fn progress(server: &RunningServer, group: &str) -> (u64, u64) {
    server.provider().groups().progress(group).await.unwrap()
}
