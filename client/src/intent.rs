//! Commit intents: how a change whose answer was lost is settled from proven state.
//!
//! Before a commit request leaves (put, edit, sync, rm, prune), the client writes `intent` in
//! its state directory, durably: the root it starts from, the name, and the change (enough to
//! rerun the client's normal acceptance of the answer). It removes the file once the answer is
//! accepted, or once the change is proven not applied. A crash of either side, or a broken
//! connection, can leave the change applied by the provider and the answer lost; the provider
//! is single-writer per namespace, so its state is then the old root or the old root plus this
//! change. The next command settles the intent before anything else ([`Intent::settle`]), with
//! the provider's `last-commit` answer:
//!
//! * the lookup of the name verifies against the old root: the change was not applied (the
//!   client keeps its root and drops the intent);
//! * otherwise the last commit's stored answer must verify, from the old root, as exactly this
//!   change (the client adopts the new root): a put's record, an edit's batch of block edits
//!   (the new version's root computed from the list proof), a prune's positions, a removal;
//! * anything else is a violation.
//!
//! The change's request and the `last-commit` request name the intent's random [`Attempt`]:
//! the provider refuses the change should it arrive after it was settled (a request still in
//! transit when its client died), so "not applied" stays true.
//!
//! So an honest crash never looks like a lie, and a provider cannot slip in another change.
//!
//! Where the intent is kept is the [`crate::StateStore`]'s business (a file `intent` in the
//! state directory, or memory); this module is pure: the intent, its encoding, and settling.
//!
//! Encoding ([`Intent::to_bytes`]): `"vouchIN\x02" || postcard(stored intent) || attempt (16
//! bytes) || SHA-256 of the preceding bytes`. An intent of version 1 (no attempt) still reads,
//! with the all-zero attempt.

use crate::error::ClientError;
use crate::root::Root;
use crate::verify::{self, lookup_from_wire, update_from_wire};
use crate::violation::ViolationKind;
use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;
use vouch_core::envelope;
use vouch_core::namespace::{verify_lookup, Change, VersionRecord};
use vouch_core::{verify_multi_update_len, Block, Digest, Edit};
use vouch_proto::{Attempt, Committed, LastCommit};

const MAGIC: &[u8; 8] = b"vouchIN\x02";
const MAGIC_V1: &[u8; 8] = b"vouchIN\x01";

/// A change the client has sent, or is about to send, and not yet settled. Opaque: a
/// [`crate::StateStore`] keeps it as [`Intent::to_bytes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intent {
    /// The root the change starts from.
    pub(crate) old: Root,
    pub(crate) name: String,
    pub(crate) change: Planned,
    /// Named by the change's request and by `last-commit` (see the module documentation).
    pub(crate) attempt: Attempt,
}

/// A fresh attempt for a change about to be sent.
pub(crate) fn new_attempt() -> Attempt {
    Attempt(rand::random())
}

/// The change of an intent, as the client planned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Planned {
    /// A put: the version record the client made (an `Append`).
    Put(VersionRecord),
    /// An edit or sync: a batch of block edits to the latest version (an `Append` whose
    /// record the client completes from the provider's list proof).
    Edit(EditPlan),
    /// Pruning the versions at these positions of the version list.
    Prune(Vec<u64>),
    /// Removing the name.
    Remove,
}

/// A new version made by editing the latest one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EditPlan {
    /// The version edited (proven the latest under the old root).
    pub base: VersionRecord,
    /// The new version's number, next nonce and time.
    pub number: u64,
    pub next_nonce: u64,
    pub time: u64,
    pub edits: Vec<Edit>,
}

impl EditPlan {
    /// The new version's record: the base after the edits, its root and length from the
    /// provider's multiUpdate proof (verifyMultiUpdate against the base's root).
    pub(crate) fn record(&self, answer: &Committed) -> Result<VersionRecord, ClientError> {
        let proof = answer.file_update.as_ref().ok_or_else(|| {
            ClientError::violation(ViolationKind::MalformedAnswer, "an edit's commit without its block-list update")
        })?;
        let (root, len) = verify_multi_update_len(&self.base.root, &self.edits, &update_from_wire(proof)?)
            .map_err(ClientError::caught(ViolationKind::BadCommitProof))?;
        Ok(VersionRecord {
            number: self.number,
            scheme: self.base.scheme,
            file: self.base.file,
            root,
            len,
            next_nonce: self.next_nonce,
            time: self.time,
        })
    }
}

/// What settling an intent established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// The change was applied: this is the root after it.
    Applied(Root),
    /// The provider is still at the old root.
    NotApplied,
}

impl Intent {
    /// The namespace change the commit makes (an edit's record needs the answer's list proof).
    pub(crate) fn change(&self, answer: &Committed) -> Result<Change, ClientError> {
        Ok(match &self.change {
            Planned::Put(record) => Change::Append(*record),
            Planned::Edit(plan) => Change::Append(plan.record(answer)?),
            Planned::Prune(positions) => Change::Prune(positions.clone()),
            Planned::Remove => Change::Remove,
        })
    }

    /// Settles the intent with the provider's `last-commit` answer (pure).
    pub(crate) fn settle(&self, answer: &LastCommit) -> Result<Settled, ClientError> {
        let lookup = lookup_from_wire(&answer.lookup)?;
        if verify_lookup(&self.old.digest, self.old.len, &self.name, &lookup).is_ok() {
            return Ok(Settled::NotApplied);
        }
        let neither = |why: &dyn std::fmt::Display| {
            ClientError::violation(
                ViolationKind::NeitherOldNorNew,
                format!("the interrupted change of {}: {why}", self.name),
            )
        };
        // What did not check out in the last commit, as the check that failed saw it.
        let why = |e: ClientError| match e {
            ClientError::Misbehaved(v) => neither(&format_args!("{} ({})", v, v.kind)),
            e => e,
        };
        let committed = answer.committed.as_ref().ok_or_else(|| neither(&"no commit to show"))?;
        let change = self.change(committed).map_err(why)?;
        let (root, _) = verify::commit(&self.old, &self.name, None, &change, committed).map_err(why)?;
        Ok(Settled::Applied(root))
    }

    /// The name the change is about.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The intent's encoding (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let body = [vouch_proto::encode(&Stored::from(self)), self.attempt.0.to_vec()].concat();
        envelope::seal(MAGIC, &body)
    }

    /// An intent from [`Intent::to_bytes`]; `None` when the bytes are damaged.
    pub fn from_bytes(bytes: &[u8]) -> Option<Intent> {
        let (layout, body) = envelope::open(bytes, &[MAGIC_V1, MAGIC]).ok()?;
        let (stored, rest) = vouch_proto::decode_prefix::<Stored>(body).ok()?;
        let attempt = match (layout, rest) {
            (1, rest) => Attempt(rest.try_into().ok()?),
            (_, []) => Attempt::default(),
            _ => return None,
        };
        stored.into_intent(attempt)
    }
}

// ---- the file's encoding ----

#[derive(Serialize, Deserialize)]
struct Stored {
    old_root: [u8; 32],
    old_len: u64,
    name: String,
    change: StoredChange,
}

#[derive(Serialize, Deserialize)]
enum StoredChange {
    Put { record: ByteBuf },
    Edit { base: ByteBuf, number: u64, next_nonce: u64, time: u64, edits: Vec<StoredEdit> },
    Prune { positions: Vec<u64> },
    Remove,
}

#[derive(Serialize, Deserialize)]
enum StoredEdit {
    Insert { at: u64, block: StoredBlock },
    Modify { at: u64, block: StoredBlock },
    Remove { at: u64 },
}

#[derive(Serialize, Deserialize)]
struct StoredBlock {
    tag: [u8; 32],
    length: u32,
    block_ref: u64,
}

impl From<&Intent> for Stored {
    fn from(i: &Intent) -> Self {
        let block = |b: &Block| StoredBlock { tag: b.tag.0, length: b.length, block_ref: b.block_ref };
        let record = |r: &VersionRecord| ByteBuf::from(r.to_bytes().to_vec());
        let change = match &i.change {
            Planned::Put(r) => StoredChange::Put { record: record(r) },
            Planned::Edit(p) => StoredChange::Edit {
                base: record(&p.base),
                number: p.number,
                next_nonce: p.next_nonce,
                time: p.time,
                edits: p
                    .edits
                    .iter()
                    .map(|e| match e {
                        Edit::Insert { at, block: b } => StoredEdit::Insert { at: *at, block: block(b) },
                        Edit::Modify { at, block: b } => StoredEdit::Modify { at: *at, block: block(b) },
                        Edit::Remove { at } => StoredEdit::Remove { at: *at },
                    })
                    .collect(),
            },
            Planned::Prune(p) => StoredChange::Prune { positions: p.clone() },
            Planned::Remove => StoredChange::Remove,
        };
        Stored { old_root: i.old.digest.0, old_len: i.old.len, name: i.name.clone(), change }
    }
}

impl Stored {
    fn into_intent(self, attempt: Attempt) -> Option<Intent> {
        let block = |b: StoredBlock| Block::new(Digest(b.tag), b.length, b.block_ref);
        let record = |b: &ByteBuf| VersionRecord::from_bytes(b).ok();
        let change = match self.change {
            StoredChange::Put { record: r } => Planned::Put(record(&r)?),
            StoredChange::Edit { base, number, next_nonce, time, edits } => Planned::Edit(EditPlan {
                base: record(&base)?,
                number,
                next_nonce,
                time,
                edits: edits
                    .into_iter()
                    .map(|e| match e {
                        StoredEdit::Insert { at, block: b } => Edit::Insert { at, block: block(b) },
                        StoredEdit::Modify { at, block: b } => Edit::Modify { at, block: block(b) },
                        StoredEdit::Remove { at } => Edit::Remove { at },
                    })
                    .collect(),
            }),
            StoredChange::Prune { positions } => Planned::Prune(positions),
            StoredChange::Remove => Planned::Remove,
        };
        let old = Root { digest: Digest(self.old_root), len: self.old_len };
        Some(Intent { old, name: self.name, change, attempt })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_core::pdp::{FileId, SchemeId};

    fn version(number: u64) -> VersionRecord {
        VersionRecord {
            number,
            scheme: SchemeId::Linear,
            file: FileId([3; 16]),
            root: Digest([4; 32]),
            len: 1000,
            next_nonce: 9,
            time: 77,
        }
    }

    #[test]
    fn intents_round_trip_and_damage_is_detected() {
        let old = Root { digest: Digest([1; 32]), len: 2 };
        let block = Block::new(Digest([5; 32]), 100, 9);
        let edits = vec![Edit::Insert { at: 0, block }, Edit::Modify { at: 500, block }, Edit::Remove { at: 900 }];
        let changes = [
            Planned::Put(version(1)),
            Planned::Edit(EditPlan { base: version(1), number: 2, next_nonce: 10, time: 78, edits }),
            Planned::Prune(vec![0, 2]),
            Planned::Remove,
        ];
        for change in changes {
            let intent = Intent { old, name: "a/b.txt".into(), change, attempt: new_attempt() };
            assert_eq!(Intent::from_bytes(&intent.to_bytes()).as_ref(), Some(&intent));
        }
        let mut bytes = Intent { old, name: "x".into(), change: Planned::Remove, attempt: new_attempt() }.to_bytes();
        bytes[10] ^= 1;
        assert_eq!(Intent::from_bytes(&bytes), None);
        assert_eq!(Intent::from_bytes(b"vouchIN"), None);
    }

    /// Re-seals `body` (magic and contents) with its checksum.
    fn sealed(body: Vec<u8>) -> Vec<u8> {
        vouch_core::envelope::seal(body[..8].try_into().unwrap(), &body[8..])
    }

    #[test]
    fn an_intent_of_version_1_reads_with_no_attempt_and_a_wrong_attempt_length_is_damage() {
        let old = Root { digest: Digest([1; 32]), len: 2 };
        let intent = Intent { old, name: "a".into(), change: Planned::Prune(vec![1]), attempt: new_attempt() };
        let stored = vouch_proto::encode(&Stored::from(&intent));
        let v1 = sealed([MAGIC_V1.as_slice(), &stored].concat());
        assert_eq!(Intent::from_bytes(&v1), Some(Intent { attempt: Attempt::default(), ..intent.clone() }));
        // Version 1 with an attempt, version 2 without one or with a short one: damaged.
        assert_eq!(Intent::from_bytes(&sealed([MAGIC_V1.as_slice(), &stored, &intent.attempt.0].concat())), None);
        assert_eq!(Intent::from_bytes(&sealed([MAGIC.as_slice(), &stored].concat())), None);
        assert_eq!(Intent::from_bytes(&sealed([MAGIC.as_slice(), &stored, &[7; 15]].concat())), None);
        assert_eq!(Intent::from_bytes(&sealed([b"vouchIN\x03".as_slice(), &stored, &[7; 16]].concat())), None);
    }
}
