//! The VICOS client (paper 003, Alg. 6): a group of clients shares one object store through
//! an untrusted provider, and each client knows that every object it reads is the one the
//! group's history says, and that the provider shows all of them one history (fork
//! linearizability), or it catches the provider.
//!
//! Each object's hash lives in ADICT, run through AIP by the provider's sequencer; its bytes
//! live in the provider's object store (COS) under a translated key `k || x`, `x` a fresh
//! nonce per put, so that two puts of one key never overwrite each other's bytes (Sec. 4.3).
//!
//! * put: `cos-put(k||x, v)` streamed while `h = SHA-256(v)` is computed, then
//!   `adict-put(k, x || h)`; on ABORT `cos-del(k||x)`.
//! * get: `adict-get(k)`, then `cos-get(k||x)` streamed into the output and hashed; a hash
//!   that is not `h` is a violation (the bytes written are then not to be used).
//! * del: `adict-del(k)`, then `cos-del(k||*)`. list: `adict-list()`.
//!
//! An operation is one AIP round (INVOKE, REPLY, COMMIT), then the passive phase: the
//! provider hands this client the updates it may authenticate (its own and, delegated, any
//! before it: Sec. 3.7), so the group never waits on a member that went away. ABORT (an
//! incompatible operation of another member was pending) is an answer, not an error: the
//! caller retries.

mod files;

pub use files::{check_name, groups, GroupFile, Signatures};

use crate::error::ClientError;
use crate::remote::Remote;
use crate::violation::ViolationKind;
use bytes::Bytes;
use serde_bytes::ByteBuf;
use sha2::{Digest as _, Sha256};
use std::io::{Read, Write};
use vouch_core::adict::Tree;
use vouch_core::aip::{
    self, Adict, ClientId, CommitAuth, DictOp, DictResponse, Keyring, Mode, Outcome, Reply, UpdateAuth, Wire,
};
use vouch_proto::vicos::{
    AipAck, AipCommit, AipCommitAuth, AipCreate, AipInvoke, AipReply, AipWork, AipWorkRequest, CosDelete, CosGetFrame,
    CosObject, CosPutFrame,
};
use vouch_proto::{encode_frame, ErrorCode, Op};

/// Bytes of an object per `cos-put` frame.
const PUT_FRAME_BYTES: usize = 1 << 20;
/// Times a get asks the history again when the object it named was deleted meanwhile.
const MAX_GET_TRIES: usize = 4;
/// Most batches one passive phase authenticates before it leaves the rest to others.
const MAX_PASSIVE_ROUNDS: usize = 1024;
/// Bytes of a nonce `x` and of a hash `h`: ADICT's value is `x || h`.
const NONCE_LEN: usize = 16;
const HASH_LEN: usize = 32;

/// One member of a VICOS group.
#[derive(Debug)]
pub struct Group {
    remote: Remote,
    name: String,
    /// AIP runs one operation at a time per client.
    aip: tokio::sync::Mutex<aip::Client<Adict>>,
    /// When opened from a state directory: held (with its lock) while the member lives, so
    /// that two processes never run one member's AIP state at once.
    state: Option<crate::state::StateDir>,
}

impl Group {
    /// Member `me` of the group `name` (created already), with the group's keys.
    pub fn join(remote: Remote, name: &str, me: ClientId, keys: Keyring, mode: Mode) -> Group {
        Group::with_client(remote, name, aip::Client::new(me, keys, Adict { mode }))
    }

    /// The member whose AIP state is `client` (restored from a save, see [`files`]).
    fn with_client(remote: Remote, name: &str, client: aip::Client<Adict>) -> Group {
        Group { remote, name: name.to_string(), aip: tokio::sync::Mutex::new(client), state: None }
    }

    /// Creates the group `name` on the provider, `me` its creator (it signs the genesis), and
    /// joins it.
    pub async fn create(
        remote: Remote,
        name: &str,
        me: ClientId,
        keys: Keyring,
        mode: Mode,
    ) -> Result<Group, ClientError> {
        let (genesis, auth) = aip::genesis::<Adict>(&keys, me, DictOp::List, &Tree::new())
            .map_err(|e| ClientError::BadInput(e.to_string()))?;
        let create = AipCreate { group: name.into(), genesis: wire(&genesis), auth: wire(&auth) };
        let _: AipAck = remote.call(Op::AipCreate, &create).await?;
        Ok(Group::join(remote, name, me, keys, mode))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `vicos-put(k, v)`: the bytes of `reader` under `key`.
    pub async fn put(&self, key: &[u8], reader: impl Read + Send + 'static) -> Result<Outcome<()>, ClientError> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let object = CosObject { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce };
        let hash = self.cos_put(object, reader).await?;
        let value = [&nonce[..], &hash[..]].concat();
        match self.run(DictOp::Put { key: key.to_vec(), value }).await? {
            Outcome::Done(_) => Ok(Outcome::Done(())),
            Outcome::Abort => {
                // The bytes were never named by ADICT: clean them up (Alg. 6), best effort.
                let delete =
                    CosDelete { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce: Some(nonce) };
                if let Err(e) = self.remote.call::<_, AipAck>(Op::CosDelete, &delete).await {
                    tracing::warn!("an aborted put's object stays behind: {e}");
                }
                Ok(Outcome::Abort)
            }
        }
    }

    /// `vicos-get(k)`: streams the object into `out` and returns its length; `None` when the
    /// group's history proves the key absent. On a violation, what was written is not the
    /// object (the caller discards it).
    pub async fn get(&self, key: &[u8], out: &mut (impl Write + Send)) -> Result<Outcome<Option<u64>>, ClientError> {
        let mut named = self.adict_get(key).await?;
        for _ in 0..MAX_GET_TRIES {
            let value = match named {
                Outcome::Done(Some(value)) => value,
                Outcome::Done(None) => return Ok(Outcome::Done(None)),
                Outcome::Abort => return Ok(Outcome::Abort),
            };
            let nonce: [u8; NONCE_LEN] = value[..NONCE_LEN].try_into().expect("length checked");
            let object = CosObject { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce };
            match self.cos_get(&object, out).await {
                Ok((len, hash)) if hash[..] == value[NONCE_LEN..] => return Ok(Outcome::Done(Some(len))),
                Ok(_) => {
                    return Err(ClientError::violation(
                        ViolationKind::AlteredObject,
                        format!(
                            "object {} of group {} hashes to another value than the group's history holds",
                            show(key),
                            self.name
                        ),
                    ))
                }
                // A member may have deleted the key, and its objects, since the history named
                // this one: an honest store then has it no more. Only a key that still names
                // it makes the "not found" a lie.
                Err(e) if e.violation_kind() == Some(ViolationKind::UnprovenNotFound) => {
                    named = self.adict_get(key).await?;
                    if matches!(&named, Outcome::Done(Some(now)) if *now == value) {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClientError::Refused {
            code: ErrorCode::Conflict,
            message: format!("object {} of group {} kept changing while it was read", show(key), self.name),
        })
    }

    /// `adict-get(k)`: the value the group's history holds for `key` (a nonce and a hash).
    async fn adict_get(&self, key: &[u8]) -> Result<Outcome<Option<Vec<u8>>>, ClientError> {
        match self.run(DictOp::Get { key: key.to_vec() }).await? {
            Outcome::Abort => Ok(Outcome::Abort),
            Outcome::Done(DictResponse::Value(None)) => Ok(Outcome::Done(None)),
            Outcome::Done(DictResponse::Value(Some(value))) if value.len() == NONCE_LEN + HASH_LEN => {
                Ok(Outcome::Done(Some(value)))
            }
            Outcome::Done(DictResponse::Value(Some(_))) => {
                Err(malformed("the key's value is not a nonce and a hash".into()))
            }
            Outcome::Done(other) => Err(malformed(format!("a get answered with {other:?}"))),
        }
    }

    /// `vicos-del(k)`.
    pub async fn delete(&self, key: &[u8]) -> Result<Outcome<()>, ClientError> {
        if let Outcome::Abort = self.run(DictOp::Delete { key: key.to_vec() }).await? {
            return Ok(Outcome::Abort);
        }
        let delete = CosDelete { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce: None };
        if let Err(e) = self.remote.call::<_, AipAck>(Op::CosDelete, &delete).await {
            tracing::warn!("a deleted key's objects stay behind: {e}");
        }
        Ok(Outcome::Done(()))
    }

    /// `vicos-list()`: every key, in byte order.
    pub async fn list(&self) -> Result<Outcome<Vec<Vec<u8>>>, ClientError> {
        match self.run(DictOp::List).await? {
            Outcome::Done(DictResponse::Keys(keys)) => Ok(Outcome::Done(keys)),
            Outcome::Done(other) => Err(malformed(format!("a list answered with {other:?}"))),
            Outcome::Abort => Ok(Outcome::Abort),
        }
    }

    /// One AIP operation: INVOKE, the REPLY checked, COMMIT, then the passive phase.
    ///
    /// A COMMIT is kept until the provider has it ([`aip::Client::unsent`]): one lost with a
    /// connection is sent again before the next INVOKE, and a member opened from a state
    /// directory saves its state after the REPLY and before the COMMIT leaves, so that a
    /// crash in between neither loses a COMMIT the provider may have nor leaves an operation
    /// hanging for good (the next REPLY shows it, with no status here, and this member
    /// aborts it itself).
    ///
    /// An operation signed by a member this one has not imported yet is abandoned; a member
    /// opened from a state directory reads its roster again first (a long-running gateway
    /// then picks up `vouch group roster --import` without a restart) and, when that names
    /// the member, runs the operation again.
    async fn run(&self, op: DictOp) -> Result<Outcome<DictResponse>, ClientError> {
        let mut aip = self.aip.lock().await;
        match self.attempt(&mut aip, op.clone()).await {
            Err(ClientError::UnknownMember { member, .. }) if self.reload_roster(&mut aip, member)? => {
                self.attempt(&mut aip, op).await
            }
            other => other,
        }
    }

    async fn attempt(&self, aip: &mut aip::Client<Adict>, op: DictOp) -> Result<Outcome<DictResponse>, ClientError> {
        let me = aip.id();
        if !aip.unsent().is_empty() {
            // Left by an operation whose write-ahead save failed (a full disk): saved before
            // they leave, or a crash after sending them could bring back a state that aborts
            // an operation this member did commit.
            self.persist(aip)?;
        }
        self.deliver(aip).await?;
        let invoke = aip.invoke(op).map_err(|v| aip_violation(&self.name, v))?;
        let asked = AipInvoke { group: self.name.clone(), from: me, invoke: wire(&invoke) };
        let answered: Result<AipReply, _> = self.remote.call(Op::AipInvoke, &asked).await;
        let reply = match answered {
            Ok(r) => Reply::<Adict>::from_wire(&r.reply).map_err(|e| malformed(e.to_string()))?,
            Err(e) => {
                // Refused, or unknown whether it was invoked: this client goes on with its next
                // operation, which aborts this one if the provider did order it.
                aip.abandon();
                return Err(e);
            }
        };
        let replied = aip.on_reply(reply);
        if let Err(aip::Violation::UnknownMember { .. }) = &replied {
            aip.abandon(); // nothing accepted: the next operation, with the key, checks it again
        }
        let (outcome, _commit) = replied.map_err(|v| aip_violation(&self.name, v))?;
        self.persist(aip)?;
        let work = self.deliver(aip).await?;
        // The outcome is settled once the COMMIT is delivered: the passive phase is help for
        // the group, and only a lie it catches fails the operation.
        if let Err(e) = self.passive(aip, work.unwrap_or_default()).await {
            if e.violation_kind().is_some() {
                return Err(e);
            }
            tracing::warn!("group {}: passive work left to other members: {e}", self.name);
        }
        Ok(outcome)
    }

    /// Sends the COMMITs the provider does not have yet, oldest first; the work the last
    /// answer hands over. One the provider refuses (it has it, or has moved past it) is
    /// delivered too: sending it again would change nothing.
    async fn deliver(&self, aip: &mut aip::Client<Adict>) -> Result<Option<AipWork>, ClientError> {
        let mut work = None;
        for commit in aip.unsent().to_vec() {
            let sent = AipCommit { group: self.name.clone(), from: aip.id(), commit: wire(&commit) };
            match self.remote.call::<_, AipWork>(Op::AipCommit, &sent).await {
                Ok(answer) => work = Some(answer),
                Err(ClientError::Refused { code, message }) => {
                    tracing::debug!("a COMMIT of group {} was refused ({code:?}): {message}", self.name);
                }
                Err(e) => return Err(e),
            }
            aip.delivered(commit.t);
        }
        Ok(work)
    }

    /// Does the passive-phase work the provider has for this member now: updates of others
    /// delegated to it (Sec. 3.7), so that a member that went away holds up no one. A member
    /// that runs for long (a gateway) calls this now and then; each operation does it anyway.
    pub async fn help(&self) -> Result<(), ClientError> {
        let mut aip = self.aip.lock().await;
        let asked = AipWorkRequest { group: self.name.clone(), from: aip.id() };
        let work: AipWork = self.remote.call(Op::AipWork, &asked).await?;
        self.passive(&mut aip, work).await
    }

    /// The passive phase: authenticates what the provider hands over, until nothing is left.
    async fn passive(&self, aip: &mut aip::Client<Adict>, mut work: AipWork) -> Result<(), ClientError> {
        // Bounded: a provider that hands over work without end holds up no operation.
        for _ in 0..MAX_PASSIVE_ROUNDS {
            let Some(bytes) = work.update_auth.take() else { break };
            let update = UpdateAuth::<Adict>::from_wire(&bytes).map_err(|e| malformed(e.to_string()))?;
            let auths: Vec<CommitAuth<_>> = aip.on_update_auth(update).map_err(|v| aip_violation(&self.name, v))?;
            let mut next = None;
            for auth in auths {
                let sent = AipCommitAuth { group: self.name.clone(), from: aip.id(), commit_auth: wire(&auth) };
                match self.remote.call::<_, AipWork>(Op::AipCommitAuth, &sent).await {
                    Ok(more) => next = more.update_auth,
                    // The operation's outcome is settled already; this is help for the group.
                    // Another member may have been faster with this update (the provider
                    // refuses a second answer; the next ones still build on the same
                    // authenticator), or the provider was not reached (whoever commits next
                    // is handed the same updates).
                    Err(e) if e.violation_kind().is_none() => {
                        tracing::debug!("an update of group {} left to others: {e}", self.name);
                    }
                    Err(e) => return Err(e),
                }
            }
            work.update_auth = next;
        }
        Ok(())
    }

    /// Streams `reader` to the store as object `object`; returns its SHA-256.
    async fn cos_put(
        &self,
        object: CosObject,
        reader: impl Read + Send + 'static,
    ) -> Result<[u8; HASH_LEN], ClientError> {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let producer = tokio::task::spawn_blocking(move || send_object(object, reader, &tx));
        let stored: Result<AipAck, _> =
            self.remote.call_streaming(Op::CosPut, tokio_stream::wrappers::ReceiverStream::new(rx)).await;
        let hash =
            producer.await.map_err(|e| ClientError::Io { what: "upload".into(), source: std::io::Error::other(e) })?;
        stored?;
        hash
    }

    /// Streams object `object` into `out`; returns its length and SHA-256.
    async fn cos_get(
        &self,
        object: &CosObject,
        out: &mut (impl Write + Send),
    ) -> Result<(u64, [u8; HASH_LEN]), ClientError> {
        let what = format!("object {} of group {}", show(&object.key), object.group);
        let mut frames = self
            .remote
            .frames(Op::CosGet, object)
            .await
            .map_err(|e| e.not_found_is(ViolationKind::UnprovenNotFound, &what))?;
        let (mut hasher, mut len) = (Sha256::new(), 0u64);
        loop {
            match frames.next::<CosGetFrame>().await? {
                Some(CosGetFrame::Data(bytes)) => {
                    hasher.update(&bytes);
                    len += bytes.len() as u64;
                    out.write_all(&bytes).map_err(ClientError::io("writing the output"))?;
                }
                Some(CosGetFrame::End) => return Ok((len, hasher.finalize().into())),
                // The history names this object: "not found", first or midway, is no answer.
                Some(CosGetFrame::Error(e)) => {
                    return Err(ClientError::from_server(e.code, e.message)
                        .not_found_is(ViolationKind::UnprovenNotFound, &what))
                }
                None => {
                    return Err(ClientError::violation(
                        ViolationKind::ShortStream,
                        format!("{what} ended before its end"),
                    ))
                }
            }
        }
    }
}

/// The producer half of a `cos-put`: frames of `reader`'s bytes, hashed as they go.
fn send_object(
    object: CosObject,
    mut reader: impl Read,
    tx: &tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
) -> Result<[u8; HASH_LEN], ClientError> {
    let send = |frame: &CosPutFrame| {
        tx.blocking_send(Ok(Bytes::from(encode_frame(frame)))).map_err(|_| ClientError::Io {
            what: "upload".into(),
            source: std::io::Error::other("the provider closed the upload"),
        })
    };
    send(&CosPutFrame::Head(object))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; PUT_FRAME_BYTES];
    loop {
        let n = read_full(&mut reader, &mut buf).map_err(ClientError::io("reading the input"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        send(&CosPutFrame::Data(ByteBuf::from(buf[..n].to_vec())))?;
    }
    send(&CosPutFrame::End)?;
    Ok(hasher.finalize().into())
}

/// Fills `buf` as far as the input goes; the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn wire(value: &impl Wire) -> ByteBuf {
    ByteBuf::from(value.to_wire())
}

fn malformed(detail: String) -> ClientError {
    ClientError::violation(ViolationKind::MalformedAnswer, detail)
}

/// A REPLY or UPDATE-AUTH that failed this member's checks: the provider's lie, unless it
/// was signed by a member whose key this one has not imported yet.
fn aip_violation(group: &str, v: aip::Violation) -> ClientError {
    match v {
        aip::Violation::UnknownMember { client, .. } => {
            ClientError::UnknownMember { group: group.into(), member: client }
        }
        v => ClientError::violation(ViolationKind::BadAipAnswer, v),
    }
}

/// A key for messages: as text when it is, else hex.
fn show(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
        _ => key.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Whether `e` is the provider's "try again" (a full pending list, Sec. 5.2).
pub fn is_busy(e: &ClientError) -> bool {
    matches!(e, ClientError::Refused { code: ErrorCode::Conflict, .. })
}
