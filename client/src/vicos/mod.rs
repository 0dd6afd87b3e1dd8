//! The VICOS client (paper 003, Alg. 6): a group of clients shares one object store through
//! an untrusted provider, and each client knows that every object it reads is the one the
//! group's history says, and that the provider shows all of them one history (fork
//! linearizability), or it catches the provider.
//!
//! Each object's hash lives in ADICT, run through AIP by the provider's sequencer; its bytes
//! live in the provider's object store (COS) under a translated key `k || x`, `x` a fresh
//! nonce per put, so that two puts of one key never overwrite each other's bytes (Sec. 4.3).
//!
//! * put: `cos-put(k||x, v)` streamed while `h = H(v)` and `v`'s length `n` are computed,
//!   then `adict-put(k, x || n || h)`; on ABORT `cos-del(k||x)`. Once committed, the object it
//!   replaced is queued to go (`cos-del(k||x')`, `x'` by its REPLY: [`Adict::replaced`], in
//!   batches: see [`retire`]), where Alg. 6 leaves it for good.
//! * get: `adict-get(k)`, then `cos-get(k||x)` streamed into the output and hashed, read up
//!   to `n` bytes and no further; a hash that is not `h`, or a stream that runs past `n` or
//!   ends short of it, is a violation (the bytes written are then not to be used). The value
//!   holds `n` (Alg. 6's is `x || h`) so that a provider cannot stream without end into an
//!   output before the hash check at its end.
//! * del: `adict-del(k)`, then `cos-del(k||x')` of the object it replaced (not `k||*`: see
//!   [`Group::delete`]). list: `adict-list()`.
//!
//! An operation is one AIP round (INVOKE, REPLY, COMMIT), then the passive phase: the
//! provider hands this client the updates it may authenticate (its own and, delegated, any
//! before it: Sec. 3.7), so the group never waits on a member that went away. An update
//! with nothing pending before it is authenticated from its own REPLY, and its COMMIT-AUTH
//! travels with its COMMIT ([`aip::Client::own_update`]): no passive round trip of its own.
//! The provider answers a COMMIT before its journal write (one durable write per operation,
//! the INVOKE's, not two): the member keeps it and carries it in its next INVOKE until a
//! REPLY proves it durable, so a provider crash in between loses nothing (as the paper's
//! client, Alg. 1, returns once its COMMIT is sent).
//! ABORT (an incompatible operation of another member was pending) is an answer, not an
//! error: the caller retries.

mod caught;
mod direct;
mod files;
mod retire;
#[cfg(test)]
mod tests;

pub use direct::{DirectObjects, S3Access};
pub use files::{check_name, groups, GroupFile, Signatures};

use crate::error::ClientError;
use crate::remote::Remote;
use crate::violation::ViolationKind;
use bytes::Bytes;
pub use caught::Caught;
use serde_bytes::ByteBuf;
use std::io::{Read, Write};
use vouch_core::adict::{key_path, Tree};
use vouch_core::aip::{
    self, Adict, Admission, ClientId, CommitAuth, DictOp, DictResponse, HistoryPage, Keyring, Mode, Outcome, Reply,
    UpdateAuth, Wire,
};
use vouch_proto::vicos::object_name;
use vouch_proto::vicos::{
    AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipHistoryPage, AipInvoke, AipReply, AipWork,
    AipWorkRequest, CosDelete, CosGetFrame, CosObject, CosPutFrame, MAX_CARRIED_COMMITS, MAX_COMMIT_AUTHS,
};
use vouch_proto::{encode_frame, ErrorCode, Op};

/// Bytes of an object per `cos-put` frame.
const PUT_FRAME_BYTES: usize = 1 << 20;
/// Times a get asks the history again when the object it named was deleted meanwhile.
const MAX_GET_TRIES: usize = 4;
/// Times an INVOKE is sent again after reading the history in pages (the group may have
/// moved on by more than a REPLY shows meanwhile).
const MAX_CATCH_UPS: usize = 4;
/// Most batches one passive phase authenticates before it leaves the rest to others.
const MAX_PASSIVE_ROUNDS: usize = 1024;
/// Bytes of a nonce `x`, of a length `n` and of a hash `h`: ADICT's value is `x || n || h`
/// ([`Named`]).
const NONCE_LEN: usize = 16;
const LENGTH_LEN: usize = 8;
const HASH_LEN: usize = 32;
/// An older vouch's value, `x || h`: no length, so no reader takes it.
const UNLENGTHED_VALUE_LEN: usize = NONCE_LEN + HASH_LEN;

/// The object a key's ADICT value names: `x || n || h`, the nonce of its name, its length
/// (little-endian) and its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Named {
    nonce: [u8; NONCE_LEN],
    len: u64,
    hash: [u8; HASH_LEN],
}

impl Named {
    const VALUE_LEN: usize = NONCE_LEN + LENGTH_LEN + HASH_LEN;

    fn value(&self) -> Vec<u8> {
        [&self.nonce[..], &self.len.to_le_bytes(), &self.hash].concat()
    }

    /// The object `value` names; `None` when it is no `x || n || h`.
    fn parse(value: &[u8]) -> Option<Named> {
        let (nonce, rest) = value.split_first_chunk::<NONCE_LEN>()?;
        let (len, hash) = rest.split_first_chunk::<LENGTH_LEN>()?;
        Some(Named { nonce: *nonce, len: u64::from_le_bytes(*len), hash: hash.try_into().ok()? })
    }
}

/// An output that counts what reached it: a get may ask the history again after a failed
/// read only while nothing of that read reached its output.
struct Counted<'a, W> {
    out: &'a mut W,
    written: u64,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// An object's bytes as they come: hashed and written to the output, never past the length
/// the group's history holds for it (what runs past it is a violation, caught before it is
/// read on), and checked to reach that length at the end.
pub(super) struct Incoming<'a, W> {
    out: &'a mut W,
    hasher: blake3::Hasher,
    got: u64,
    len: u64,
    what: &'a str,
}

impl<'a, W: Write> Incoming<'a, W> {
    pub(super) fn new(out: &'a mut W, len: u64, what: &'a str) -> Incoming<'a, W> {
        Incoming { out, hasher: object_hasher(), got: 0, len, what }
    }

    pub(super) fn take(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        if bytes.len() as u64 > self.len - self.got {
            return Err(ClientError::violation(
                ViolationKind::AlteredObject,
                format!("{} runs past its length in the group's history, {} bytes", self.what, self.len),
            ));
        }
        self.hasher.update(bytes);
        self.got += bytes.len() as u64;
        self.out.write_all(bytes).map_err(ClientError::io("writing the output"))
    }

    /// The object's hash, once the stream ended at its length.
    pub(super) fn end(self) -> Result<[u8; HASH_LEN], ClientError> {
        if self.got < self.len {
            return Err(ClientError::violation(
                ViolationKind::ShortStream,
                format!("{} ended after {} of its {} bytes", self.what, self.got, self.len),
            ));
        }
        Ok(*self.hasher.finalize().as_bytes())
    }
}

/// `h`, the hash of an object's contents: BLAKE3 keyed for VICOS objects (see
/// `vouch_core::hash`), fed as the bytes go by.
fn object_hasher() -> blake3::Hasher {
    vouch_core::hash::keyed_hasher(vouch_core::hash::Keyed::VicosObject)
}
/// The keys a page of a listing asks for: a REPLY of 1,000 keys of up to 1 KiB each stays
/// near a megabyte, and a listing of a million keys takes a thousand operations.
pub const LIST_PAGE: u32 = 1_000;

/// The member's AIP state, held by one operation.
type Held<'a> = tokio::sync::MutexGuard<'a, aip::Client<Adict>>;

/// An operation's outcome, settled once its REPLY is accepted, and the value a put or a
/// delete replaced (see [`Adict::replaced`]).
struct Settled {
    outcome: Outcome<DictResponse>,
    replaced: Option<Vec<u8>>,
    /// The COMMIT-AUTH of this member's update, made from its REPLY when nothing was pending
    /// before it ([`aip::Client::own_update`]), with the position it is for: it goes with the
    /// COMMIT.
    early: Option<(u64, ByteBuf)>,
}

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
    /// When set: objects are read and written in the provider's bucket by this member itself
    /// (see [`direct`]); only AIP goes through the provider.
    direct: Option<DirectObjects>,
    /// The group's admission secret, shown to the provider before this member first speaks
    /// in this process (see [`Admission`]); `None`: the member is admitted already.
    admission: Option<Admission>,
    admitted: std::sync::atomic::AtomicBool,
    /// This member's id (its AIP client's, kept here to be read without the client's lock).
    me: ClientId,
    /// Replaced objects not deleted yet (see [`retire`]).
    retired: retire::RetireQueue,
    /// An INVOKE left since the last save: saved before the next leaves, so that a member
    /// restored after a crash never signs its counter again (#43 item 9).
    unsaved_invoke: std::sync::atomic::AtomicBool,
    /// The positions of the COMMITs the provider answered in this process and no later
    /// answer has proven durable yet (it answers a COMMIT before its journal write: see
    /// [`AipCommit`]). Each stays in [`aip::Client::unsent`], saved, and rides in the next
    /// INVOKE ([`AipInvoke::commits`]) until a REPLY (or `aip-work`'s answer) proves it.
    answered: std::sync::Mutex<std::collections::BTreeSet<u64>>,
    /// A lie caught in the group's history (see [`caught`]): every later operation refuses.
    caught: std::sync::Mutex<Option<Caught>>,
    /// Where the member keeps it, when opened from a state directory.
    caught_file: Option<std::path::PathBuf>,
}

impl Group {
    /// Member `me` of the group `name` (created already), with the group's keys. In an HMAC
    /// group the admission secret comes from the key; an Ed25519 group's is given
    /// ([`Group::with_admission`]).
    pub fn join(remote: Remote, name: &str, me: ClientId, keys: Keyring, mode: Mode) -> Group {
        Group::with_client(remote, name, aip::Client::new(me, keys, Adict { mode }))
    }

    /// The member whose AIP state is `client` (restored from a save, see [`files`]).
    fn with_client(remote: Remote, name: &str, client: aip::Client<Adict>) -> Group {
        let admission = match client.keys() {
            Keyring::Hmac(key) => Some(Admission::of_group_key(key.bytes(), name)),
            Keyring::Ed25519 { .. } => None,
        };
        Group {
            remote,
            name: name.to_string(),
            me: client.id(),
            aip: tokio::sync::Mutex::new(client),
            state: None,
            direct: None,
            admission,
            admitted: false.into(),
            retired: Default::default(),
            unsaved_invoke: false.into(),
            answered: Default::default(),
            caught: Default::default(),
            caught_file: None,
        }
    }

    /// The member with `admission` as the group's admission secret.
    pub fn with_admission(mut self, admission: Admission) -> Group {
        self.admission = Some(admission);
        self
    }

    /// Creates the group `name` on the provider, `me` its creator (it signs the genesis), and
    /// joins it. The group's admission secret: an HMAC group's comes from its key; an
    /// Ed25519 group's is `admission` (required there).
    pub async fn create(
        remote: Remote,
        name: &str,
        me: ClientId,
        keys: Keyring,
        mode: Mode,
        admission: Option<Admission>,
    ) -> Result<Group, ClientError> {
        let (genesis, auth) = aip::genesis::<Adict>(&keys, me, DictOp::List, &Tree::new())
            .map_err(|e| ClientError::BadInput(e.to_string()))?;
        let mut group = Group::join(remote, name, me, keys, mode);
        if let Some(admission) = admission {
            group.admission = Some(admission);
        }
        let Some(admission) = &group.admission else {
            return Err(ClientError::BadInput("an Ed25519 group is created with an admission secret".into()));
        };
        let hash = ByteBuf::from(admission.hash().to_vec());
        let create = AipCreate { group: name.into(), genesis: wire(&genesis), auth: wire(&auth), admission: hash };
        let _: AipAck = group.remote.call(&create).await?;
        // The creator is bound at creation.
        group.admitted = true.into();
        Ok(group)
    }

    /// Shows the group's admission secret to the provider, once per process, before this
    /// member's first message or object: from then on it speaks through the provider client
    /// it speaks through now.
    async fn admit(&self) -> Result<(), ClientError> {
        use std::sync::atomic::Ordering;
        let Some(admission) = &self.admission else { return Ok(()) };
        if self.admitted.load(Ordering::Acquire) {
            return Ok(());
        }
        let secret = ByteBuf::from(admission.0.to_vec());
        let asked = AipAdmit { group: self.name.clone(), member: self.me, admission: secret };
        let _: AipAck = self.remote.call(&asked).await?;
        self.admitted.store(true, Ordering::Release);
        Ok(())
    }

    /// This member reaches the group's objects itself, in the provider's bucket (the one it
    /// keeps its blobs in), with its own credentials.
    pub fn with_direct_objects(mut self, objects: DirectObjects) -> Group {
        self.direct = Some(objects);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `vicos-put(k, v)`: the bytes of `reader` under `key`.
    pub async fn put(&self, key: &[u8], reader: impl Read + Send + 'static) -> Result<Outcome<()>, ClientError> {
        self.guarded(|| format!("a put of {}", show(key)), self.put_unguarded(key, reader)).await
    }

    async fn put_unguarded(&self, key: &[u8], reader: impl Read + Send + 'static) -> Result<Outcome<()>, ClientError> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let object = CosObject { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce };
        let (len, hash) = self.cos_put(object, reader).await?;
        let value = Named { nonce, len, hash }.value();
        let (settled, committed) = self.run(DictOp::Put { key: key.to_vec(), value }).await?;
        match settled.outcome {
            Outcome::Done(_) => {
                if committed {
                    self.retire(key, settled.replaced, Some(nonce)).await;
                }
                Ok(Outcome::Done(()))
            }
            Outcome::Abort => {
                // The bytes were never named by ADICT: clean them up (Alg. 6), best effort.
                if let Err(e) = self.cos_delete(key, nonce).await {
                    tracing::warn!("an aborted put's object stays behind: {e}");
                }
                Ok(Outcome::Abort)
            }
        }
    }

    /// `vicos-get(k)`: streams the object into `out` and returns its length; `None` when the
    /// group's history proves the key absent. On a violation, what was written is not the
    /// object (the caller discards it).
    ///
    /// The object is fetched while the COMMIT of the `adict-get` goes out: the REPLY settled
    /// the value (and the COMMIT is saved), so the two need not wait for each other.
    ///
    /// A "not found" for the object is a lie while the key still names it; once another
    /// member replaced or deleted it, it is an honest store's answer, and the get asks the
    /// history again, but only when nothing of the object reached `out`: bytes written
    /// there before the "not found" were never verified, and the next object must not
    /// follow them. Then the get fails with [`ClientError::Changed`], and the caller
    /// discards its output (and may read again into a fresh one).
    pub async fn get(&self, key: &[u8], out: &mut (impl Write + Send)) -> Result<Outcome<Option<u64>>, ClientError> {
        self.guarded(|| format!("a get of {}", show(key)), self.get_unguarded(key, out)).await
    }

    async fn get_unguarded(
        &self,
        key: &[u8],
        out: &mut (impl Write + Send),
    ) -> Result<Outcome<Option<u64>>, ClientError> {
        let mut named = self.adict_get(key).await?;
        for _ in 0..MAX_GET_TRIES {
            let (outcome, mut aip) = named;
            let found = match outcome {
                Outcome::Done(Some(found)) => found,
                Outcome::Done(None) => return self.finish(&mut aip).await.map(|_| Outcome::Done(None)),
                Outcome::Abort => return self.finish(&mut aip).await.map(|_| Outcome::Abort),
            };
            let object = CosObject { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce: found.nonce };
            // The member's state is let go as soon as the COMMIT is out, so that another
            // operation of this member (a gateway's) need not wait for the object's bytes.
            let finish = async move { self.finish(&mut aip).await };
            let mut counted = Counted { out: &mut *out, written: 0 };
            let (finished, fetched) = tokio::join!(finish, self.cos_get(&object, found.len, &mut counted));
            let written = counted.written;
            // A lie caught in the object is reported over a failure to deliver the COMMIT: a
            // provider that drops that connection must not turn a caught lie into an outage.
            let lie_in_object = match &fetched {
                Ok(hash) => *hash != found.hash,
                Err(e) => e.violation_kind().is_some(),
            };
            match finished {
                Err(e) if e.violation_kind().is_some() || !lie_in_object => return Err(e),
                _ => {}
            }
            match fetched {
                Ok(hash) if hash == found.hash => return Ok(Outcome::Done(Some(found.len))),
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
                    let (now, mut aip) = self.adict_get(key).await?;
                    if matches!(&now, Outcome::Done(Some(now)) if *now == found) {
                        self.finish(&mut aip).await?;
                        return Err(e);
                    }
                    if written > 0 {
                        self.finish(&mut aip).await?;
                        return Err(ClientError::Changed(format!("object {} of group {}", show(key), self.name)));
                    }
                    named = (now, aip);
                }
                Err(e) => return Err(e),
            }
        }
        let (_, mut aip) = named;
        self.finish(&mut aip).await?;
        Err(ClientError::Refused {
            code: ErrorCode::Conflict,
            message: format!("object {} of group {} kept changing while it was read", show(key), self.name),
        })
    }

    /// `adict-get(k)`, settled ([`Group::settle`]): the object the group's history names for
    /// `key`, and the member's AIP state to finish the operation with.
    async fn adict_get(&self, key: &[u8]) -> Result<(Outcome<Option<Named>>, Held<'_>), ClientError> {
        let (settled, mut aip) = self.settle(DictOp::Get { key: key.to_vec() }).await?;
        let value = match settled.outcome {
            Outcome::Abort => Ok(Outcome::Abort),
            Outcome::Done(DictResponse::Value(None)) => Ok(Outcome::Done(None)),
            Outcome::Done(DictResponse::Value(Some(value))) if value.len() == Named::VALUE_LEN => {
                Ok(Outcome::Done(Named::parse(&value)))
            }
            // Put by a member (the provider cannot sign one), of an older vouch: no lie.
            Outcome::Done(DictResponse::Value(Some(value))) if value.len() == UNLENGTHED_VALUE_LEN => {
                Err(ClientError::State(format!(
                    "object {} of group {} was stored by an older vouch, without its length, which this one \
                     needs to read it: read it with that version, or make the group again",
                    show(key),
                    self.name
                )))
            }
            Outcome::Done(DictResponse::Value(Some(_))) => {
                Err(malformed("the key's value is not a nonce, a length and a hash".into()))
            }
            Outcome::Done(other) => Err(malformed(format!("a get answered with {other:?}"))),
        };
        match value {
            Ok(value) => Ok((value, aip)),
            Err(e) => {
                // The COMMIT still goes out (the outcome is settled); the error is reported.
                if let Err(other) = self.finish(&mut aip).await {
                    tracing::debug!("group {}: after a malformed value: {other}", self.name);
                }
                Err(e)
            }
        }
    }

    /// `vicos-del(k)`: the key's object goes once the delete is committed.
    ///
    /// Only the object the delete replaced goes, not every `k||*` as in Alg. 6: a put of the
    /// key by another member may have stored its object and not yet invoked its `adict-put`,
    /// which then names that object after this delete.
    pub async fn delete(&self, key: &[u8]) -> Result<Outcome<()>, ClientError> {
        self.guarded(|| format!("a delete of {}", show(key)), self.delete_unguarded(key)).await
    }

    async fn delete_unguarded(&self, key: &[u8]) -> Result<Outcome<()>, ClientError> {
        let (settled, committed) = self.run(DictOp::Delete { key: key.to_vec() }).await?;
        if let Outcome::Abort = settled.outcome {
            return Ok(Outcome::Abort);
        }
        if committed {
            self.retire(key, settled.replaced, None).await;
        }
        Ok(Outcome::Done(()))
    }

    /// `vicos-list()`: every key, in byte order. Read in pages of [`LIST_PAGE`] keys in the
    /// dictionary's own order (by `H(key)`), each page a query of its own whose keys are
    /// proven complete for its range under the authenticated root, so that no listing needs
    /// a message of its own size. Like an S3 listing, it is no snapshot: a key put or
    /// deleted while the listing runs may be in it or not. ABORT when a page is.
    pub async fn list(&self) -> Result<Outcome<Vec<Vec<u8>>>, ClientError> {
        let (mut keys, mut after) = (Vec::new(), None);
        loop {
            let Outcome::Done((page, more)) = self.list_page(after, LIST_PAGE).await? else {
                return Ok(Outcome::Abort);
            };
            // A page with more after it holds a key (the check of its proof makes sure).
            after = page.last().map(|k| key_path(k));
            keys.extend(page);
            if !more {
                keys.sort();
                return Ok(Outcome::Done(keys));
            }
        }
    }

    /// One page of a listing: at most `limit` keys whose paths `H(key)` come after `after`
    /// (none: from the first), in path order, and whether keys follow them (the next page
    /// starts after the last one's path).
    pub async fn list_page(
        &self,
        after: Option<vouch_core::hash::Digest>,
        limit: u32,
    ) -> Result<Outcome<(Vec<Vec<u8>>, bool)>, ClientError> {
        let page = async {
            match self.run(DictOp::ListPage { after, limit }).await?.0.outcome {
                Outcome::Done(DictResponse::Page { keys, more }) => Ok(Outcome::Done((keys, more))),
                Outcome::Done(other) => Err(malformed(format!("a page of a listing answered with {other:?}"))),
                Outcome::Abort => Ok(Outcome::Abort),
            }
        };
        self.guarded(|| "a listing".to_string(), page).await
    }

    /// One AIP operation: INVOKE, the REPLY checked, COMMIT, then the passive phase.
    ///
    /// A COMMIT is kept until the provider has it durably ([`aip::Client::unsent`]): one lost
    /// with a connection is sent again before the next INVOKE; one the provider answered rides
    /// in the next INVOKE, whose REPLY proves it durable (the provider answers a COMMIT before
    /// its journal write, and a crash in between loses it); and a member opened from a state
    /// directory saves its state after the REPLY and before the COMMIT leaves, so that a
    /// crash in between neither loses a COMMIT the provider may have nor leaves an operation
    /// hanging for good (the next REPLY shows it, with no status here, and this member
    /// aborts it itself).
    ///
    /// An operation signed by a member this one has not imported yet is abandoned; a member
    /// opened from a state directory reads its roster again first (a long-running gateway
    /// then picks up `vouch group roster --import` without a restart) and, when that names
    /// the member, runs the operation again.
    ///
    /// Also returns whether every COMMIT it sent was taken by the provider.
    async fn run(&self, op: DictOp) -> Result<(Settled, bool), ClientError> {
        let (mut settled, mut aip) = self.settle(op).await?;
        let committed = self.finish_with(&mut aip, settled.early.take()).await?;
        Ok((settled, committed))
    }

    /// The first half of [`Group::run`], up to the operation's outcome: settled once the
    /// REPLY is checked and its COMMIT saved. The member's AIP state stays held for
    /// [`Group::finish`], which delivers the COMMIT.
    async fn settle(&self, op: DictOp) -> Result<(Settled, Held<'_>), ClientError> {
        let mut aip = self.aip.lock().await;
        let settled = match self.attempt(&mut aip, op.clone()).await {
            Err(ClientError::UnknownMember { member, .. }) if self.reload_roster(&mut aip, member)? => {
                self.attempt(&mut aip, op).await
            }
            other => other,
        }?;
        Ok((settled, aip))
    }

    /// The second half of [`Group::run`]: the COMMIT delivered, then the passive phase. The
    /// outcome is settled already: the passive phase is help for the group, and only a lie
    /// it catches fails the operation. Returns whether every COMMIT sent was taken.
    async fn finish(&self, aip: &mut aip::Client<Adict>) -> Result<bool, ClientError> {
        self.finish_with(aip, None).await
    }

    /// [`Group::finish`], the COMMIT of position `early.0` sent with its COMMIT-AUTH.
    async fn finish_with(
        &self,
        aip: &mut aip::Client<Adict>,
        early: Option<(u64, ByteBuf)>,
    ) -> Result<bool, ClientError> {
        let (work, taken) = self.deliver(aip, early).await?;
        if let Err(e) = self.passive(aip, work.unwrap_or_default()).await {
            if e.violation_kind().is_some() {
                return Err(e);
            }
            tracing::warn!("group {}: passive work left to other members: {e}", self.name);
        }
        Ok(taken)
    }

    /// INVOKE, and the REPLY checked and saved with its COMMIT (write-ahead).
    async fn attempt(&self, aip: &mut aip::Client<Adict>, op: DictOp) -> Result<Settled, ClientError> {
        let me = aip.id();
        let never_sent = aip.unsent().iter().any(|c| !self.answered().contains(&c.t));
        if never_sent || self.unsaved_invoke.load(std::sync::atomic::Ordering::Acquire) {
            // Left by an operation whose write-ahead save failed (a full disk): saved before
            // they leave, or a crash after sending them could bring back a state that aborts
            // an operation this member did commit.
            self.persist(aip)?;
        }
        self.admit().await?;
        self.deliver(aip, None).await?;
        let mut catch_ups = 0;
        let reply = loop {
            let invoke = aip.invoke(op.clone()).map_err(|v| aip_violation(&self.name, v))?;
            self.unsaved_invoke.store(true, std::sync::atomic::Ordering::Release);
            let (carried, commits) = self.carried(aip);
            let asked = AipInvoke { group: self.name.clone(), from: me, invoke: wire(&invoke), commits };
            let answered: Result<AipReply, _> = self.remote.call(&asked).await;
            match answered {
                Ok(r) => {
                    // Answered after the carried COMMITs' journal write, whatever the REPLY says.
                    self.proven_durable(aip, &carried);
                    break Reply::<Adict>::from_wire(&r.reply).map_err(|e| malformed(e.to_string()))?;
                }
                // Further behind than one REPLY shows (#43 item 10): the history in pages, then
                // the operation again. A refusal changes nothing at the provider.
                Err(ClientError::Refused { code: ErrorCode::TooLarge, .. }) if catch_ups < MAX_CATCH_UPS => {
                    aip.abandon();
                    catch_ups += 1;
                    self.catch_up(aip).await?;
                }
                // Refused, or unknown whether it was invoked: this client goes on with its next
                // operation, which aborts this one if the provider did order it.
                Err(e) => {
                    aip.abandon();
                    return Err(e);
                }
            }
        };
        let replaced = Adict::replaced(&reply).map(<[u8]>::to_vec);
        let own = aip.own_update(&reply);
        let replied = aip.on_reply(reply);
        if let Err(aip::Violation::UnknownMember { .. }) = &replied {
            aip.abandon(); // nothing accepted: the next operation, with the key, checks it again
        }
        let (outcome, commit) = replied.map_err(|v| aip_violation(&self.name, v))?;
        self.persist(aip)?;
        let early = match own {
            Some(own) => aip.authenticate_own(own, &commit).map_err(|v| aip_violation(&self.name, v))?,
            None => None,
        };
        Ok(Settled { outcome, replaced, early: early.map(|auth| (commit.t, wire(&auth))) })
    }

    /// Reads the history in pages from the last operation this member cleared (#43 item 10),
    /// each checked as a REPLY's `δ` and saved, until the provider says none follows. A
    /// page that does not check is a violation like a REPLY's; the pages taken stay.
    async fn catch_up(&self, aip: &mut aip::Client<Adict>) -> Result<(), ClientError> {
        loop {
            let asked = AipHistory { group: self.name.clone(), from: aip.id(), first: aip.cleared() + 1 };
            let answer: AipHistoryPage = self.remote.call(&asked).await?;
            let page = HistoryPage::<DictOp>::from_wire(&answer.page).map_err(|e| malformed(e.to_string()))?;
            let more = aip.on_history(page).map_err(|v| aip_violation(&self.name, v))?;
            self.persist(aip)?;
            if !more {
                return Ok(());
            }
        }
    }

    /// Sends the COMMITs the provider has not answered yet, oldest first; the work the last
    /// answer hands over, and whether every one was taken. One the provider refuses (it has
    /// it, or has moved past it) counts as answered too: sending it again would change
    /// nothing. Each answered one rides in the next INVOKE until an answer proves it durable
    /// ([`Group::carried`]).
    async fn deliver(
        &self,
        aip: &mut aip::Client<Adict>,
        mut early: Option<(u64, ByteBuf)>,
    ) -> Result<(Option<AipWork>, bool), ClientError> {
        let (mut work, mut taken) = (None, true);
        let answered = self.answered().clone();
        for commit in aip.unsent().iter().filter(|c| !answered.contains(&c.t)).cloned().collect::<Vec<_>>() {
            let commit_auth = early.take_if(|(t, _)| *t == commit.t).map(|(_, auth)| auth);
            let sent = AipCommit { group: self.name.clone(), from: aip.id(), commit: wire(&commit), commit_auth };
            match self.remote.call(&sent).await {
                Ok(answer) => work = Some(answer),
                Err(ClientError::Refused { code, message }) => {
                    tracing::debug!("a COMMIT of group {} was refused ({code:?}): {message}", self.name);
                    taken = false;
                }
                Err(e) => return Err(e),
            }
            self.answered().insert(commit.t);
        }
        Ok((work, taken))
    }

    fn answered(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<u64>> {
        self.answered.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The COMMITs the next INVOKE carries (the oldest [`MAX_CARRIED_COMMITS`] answered but
    /// not proven durable): their positions, and their encodings.
    fn carried(&self, aip: &aip::Client<Adict>) -> (Vec<u64>, Vec<ByteBuf>) {
        let answered = self.answered();
        let carried = aip.unsent().iter().filter(|c| answered.contains(&c.t)).take(MAX_CARRIED_COMMITS);
        carried.map(|c| (c.t, wire(c))).unzip()
    }

    /// An answer computed after the COMMITs at `positions` were taken came back: they are
    /// durable at the provider (it answers nothing before everything it was computed on is,
    /// but a COMMIT), and leave the member's state at its next save.
    fn proven_durable(&self, aip: &mut aip::Client<Adict>, positions: &[u64]) {
        let mut answered = self.answered();
        for t in positions {
            aip.delivered(*t);
            answered.remove(t);
        }
    }

    /// Proves this member's answered COMMITs durable with one `aip-work` (its answer waits for
    /// everything the provider applied), does the work it hands over, and saves the state
    /// without them: for a member about to stop (see [`Group::flush_retired`]), whose next
    /// INVOKE may never come, and before objects their operations replaced are deleted.
    /// Whether they are proven: a COMMIT not proven stays in the saved state, and rides in
    /// the next INVOKE (of this process, or the next one's). A lie caught in the work is kept
    /// as any operation's is.
    pub(super) async fn prove_commits(&self) -> bool {
        let proving = async {
            let mut aip = self.aip.lock().await;
            let positions: Vec<u64> = self.answered().iter().copied().collect();
            if positions.is_empty() {
                return Ok(());
            }
            let asked = AipWorkRequest { group: self.name.clone(), from: aip.id() };
            let work: AipWork = self.remote.call(&asked).await?;
            self.proven_durable(&mut aip, &positions);
            self.persist(&aip)?;
            // Handed the group's work (and its lease) with the answer: done, not dropped.
            self.passive(&mut aip, work).await
        };
        match self.guarded(|| "proving its COMMITs durable".to_string(), proving).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("group {}: COMMITs not proven durable: {e}", self.name);
                false
            }
        }
    }

    /// Does the passive-phase work the provider has for this member now: updates of others
    /// delegated to it (Sec. 3.7), so that a member that went away holds up no one. A member
    /// that runs for long (a gateway) calls this now and then; each operation does it anyway.
    /// Then the replaced objects this member queued go ([`Group::flush_retired`]): the answer
    /// proved its COMMITs durable, so that takes no request of its own.
    pub async fn help(&self) -> Result<(), ClientError> {
        self.guarded(|| "the help a member gives the group".to_string(), self.help_unguarded()).await
    }

    async fn help_unguarded(&self) -> Result<(), ClientError> {
        let helped = async {
            let mut aip = self.aip.lock().await;
            self.admit().await?;
            let asked = AipWorkRequest { group: self.name.clone(), from: aip.id() };
            let positions: Vec<u64> = self.answered().iter().copied().collect();
            let work: AipWork = self.remote.call(&asked).await?;
            self.proven_durable(&mut aip, &positions);
            self.passive(&mut aip, work).await
        };
        let helped = helped.await;
        self.flush_retired().await;
        helped
    }

    /// The passive phase: authenticates what the provider hands over, until nothing is left.
    async fn passive(&self, aip: &mut aip::Client<Adict>, mut work: AipWork) -> Result<(), ClientError> {
        // Bounded: a provider that hands over work without end holds up no operation.
        for _ in 0..MAX_PASSIVE_ROUNDS {
            let Some(bytes) = work.update_auth.take() else { break };
            let update = UpdateAuth::<Adict>::from_wire(&bytes).map_err(|e| malformed(e.to_string()))?;
            let auths: Vec<CommitAuth<_>> = aip.on_update_auth(update).map_err(|v| aip_violation(&self.name, v))?;
            // The whole batch in one message (Sec. 3.7 batching): one round trip, however
            // many updates.
            let mut next = None;
            for chunk in auths.chunks(MAX_COMMIT_AUTHS) {
                let commit_auths = chunk.iter().map(wire).collect();
                let sent = AipCommitAuth { group: self.name.clone(), from: aip.id(), commit_auths };
                match self.remote.call(&sent).await {
                    Ok(more) => next = more.update_auth,
                    // The operation's outcome is settled already; this is help for the group.
                    // Another member was faster with these updates, or the provider was not
                    // reached: whoever commits next is handed what is left.
                    Err(e) if e.violation_kind().is_none() => {
                        tracing::debug!("updates of group {} left to others: {e}", self.name);
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
            }
            work.update_auth = next;
        }
        Ok(())
    }

    /// `cos-del(k||x)`.
    async fn cos_delete(&self, key: &[u8], nonce: [u8; NONCE_LEN]) -> Result<(), ClientError> {
        match &self.direct {
            Some(direct) => direct.delete(&object_name(&self.name, key, &nonce)).await,
            None => {
                self.admit().await?;
                let delete =
                    CosDelete { group: self.name.clone(), key: ByteBuf::from(key.to_vec()), nonce: Some(nonce) };
                self.remote.call(&delete).await.map(|_| ())
            }
        }
    }

    /// Streams `reader` to the store as object `object`; returns its length and hash.
    async fn cos_put(
        &self,
        object: CosObject,
        reader: impl Read + Send + 'static,
    ) -> Result<(u64, [u8; HASH_LEN]), ClientError> {
        if let Some(direct) = &self.direct {
            return direct.put(&object_name(&object.group, &object.key, &object.nonce), reader).await;
        }
        self.admit().await?;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let producer = tokio::task::spawn_blocking(move || send_object(object, reader, &tx));
        let stored: Result<AipAck, _> =
            self.remote.call_streaming(Op::CosPut, tokio_stream::wrappers::ReceiverStream::new(rx)).await;
        let hash =
            producer.await.map_err(|e| ClientError::Io { what: "upload".into(), source: std::io::Error::other(e) })?;
        stored?;
        hash
    }

    /// Streams object `object`, of `len` bytes by the group's history, into `out` (never
    /// more: see [`Incoming`]); returns its hash.
    async fn cos_get(
        &self,
        object: &CosObject,
        len: u64,
        out: &mut (impl Write + Send),
    ) -> Result<[u8; HASH_LEN], ClientError> {
        if let Some(direct) = &self.direct {
            return direct.get(&object_name(&object.group, &object.key, &object.nonce), len, out).await;
        }
        self.admit().await?;
        let what = format!("object {} of group {}", show(&object.key), object.group);
        let mut frames = self
            .remote
            .frames(Op::CosGet, object)
            .await
            .map_err(|e| e.not_found_is(ViolationKind::UnprovenNotFound, &what))?;
        let mut incoming = Incoming::new(out, len, &what);
        loop {
            match frames.next::<CosGetFrame>().await? {
                Some(CosGetFrame::Data(bytes)) => incoming.take(&bytes)?,
                Some(CosGetFrame::End) => return incoming.end(),
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

/// The producer half of a `cos-put`: frames of `reader`'s bytes, counted and hashed as they
/// go.
fn send_object(
    object: CosObject,
    reader: impl Read,
    tx: &tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
) -> Result<(u64, [u8; HASH_LEN]), ClientError> {
    let send = |frame: &CosPutFrame| {
        tx.blocking_send(Ok(Bytes::from(encode_frame(frame)))).map_err(|_| ClientError::Io {
            what: "upload".into(),
            source: std::io::Error::other("the provider closed the upload"),
        })
    };
    send(&CosPutFrame::Head(object))?;
    // A frame's buffer grows with what the input has: a small object does not pay for a
    // whole frame's worth.
    let mut parts = Parts::new(reader, PUT_FRAME_BYTES, 0);
    while let Some(frame) = parts.next()? {
        send(&CosPutFrame::Data(ByteBuf::from(frame)))?;
    }
    send(&CosPutFrame::End)?;
    Ok(parts.finish())
}

/// An object's bytes read from its input in parts of at most `part` bytes, counted and
/// hashed ([`object_hasher`]) as they go.
pub(super) struct Parts<R> {
    reader: R,
    part: usize,
    capacity: usize,
    hasher: blake3::Hasher,
    len: u64,
    ended: bool,
}

impl<R: Read> Parts<R> {
    /// Parts of `part` bytes, each read into a buffer of `capacity` bytes to begin with.
    pub(super) fn new(reader: R, part: usize, capacity: usize) -> Parts<R> {
        Parts { reader, part, capacity, hasher: object_hasher(), len: 0, ended: false }
    }

    /// The next part, never empty; `None` once the input ended.
    pub(super) fn next(&mut self) -> Result<Option<Vec<u8>>, ClientError> {
        if self.ended {
            return Ok(None);
        }
        let mut part = Vec::with_capacity(self.capacity);
        let n = (&mut self.reader)
            .take(self.part as u64)
            .read_to_end(&mut part)
            .map_err(ClientError::io("reading the input"))?;
        self.ended = n < self.part;
        if n == 0 {
            return Ok(None);
        }
        self.hasher.update(&part);
        self.len += n as u64;
        Ok(Some(part))
    }

    /// The length and hash of what was read.
    pub(super) fn finish(self) -> (u64, [u8; HASH_LEN]) {
        (self.len, *self.hasher.finalize().as_bytes())
    }
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
        // Not the provider's doing: two members took one id, or this one lost its state.
        v @ aip::Violation::IdTaken { .. } => ClientError::State(format!("group {group}: {v}")),
        v => ClientError::violation(ViolationKind::BadAipAnswer, v),
    }
}

/// A key for messages: as text when it is, else hex.
fn show(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
        _ => base16ct::lower::encode_string(key),
    }
}

/// Whether `e` is the provider's "try again" (a full pending list, Sec. 5.2).
pub fn is_busy(e: &ClientError) -> bool {
    matches!(e, ClientError::Refused { code: ErrorCode::Conflict, .. })
}
