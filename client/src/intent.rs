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
//! Several staged puts committed at once (a group commit, `crate::group`) are one intent of
//! several changes, in the order the provider applies them: the provider applies or refuses
//! each, and makes the applied ones durable together, so its state is the old root or the old
//! root plus the applied ones. The lookup of the first name settles "none applied"; otherwise
//! the last commit's stored outcomes must verify, one per change, as a chain from the old
//! root, each applied one exactly its change. `last-commit` names every change's attempt.
//!
//! Encoding ([`Intent::to_bytes`]): `"vouchIN\x03" || postcard(stored intent: the old root
//! and each change with its attempt) || SHA-256 of the preceding bytes`. Intents of one change
//! written before still read: version 2, `"vouchIN\x02" || postcard(the old root, the name,
//! the change) || attempt (16 bytes) || SHA-256`, and version 1, the same without an attempt
//! (the all-zero attempt).

use crate::error::ClientError;
use crate::root::Root;
use crate::verify::{self, lookup_from_wire, update_from_wire};
use crate::violation::ViolationKind;
use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;
use vouch_core::envelope;
use vouch_core::namespace::{verify_lookup, Change, VersionRecord};
use vouch_core::{verify_multi_update_len, Block, Digest, Edit};
use vouch_proto::{Attempt, Committed, LastCommit, Outcome};

const MAGIC: &[u8; 8] = b"vouchIN\x03";
const MAGIC_V2: &[u8; 8] = b"vouchIN\x02";
const MAGIC_V1: &[u8; 8] = b"vouchIN\x01";

/// A change the client has sent, or is about to send, and not yet settled. Opaque: a
/// [`crate::StateStore`] keeps it as [`Intent::to_bytes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intent {
    /// The root the change starts from.
    pub(crate) old: Root,
    /// The changes, in the order the provider applies them: one, or several staged puts
    /// committed at once. Never empty.
    pub(crate) changes: Vec<Intended>,
}

/// One change of an intent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Intended {
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

impl Intended {
    /// The namespace change the commit makes (an edit's record needs the answer's list proof).
    pub(crate) fn change(&self, answer: &Committed) -> Result<Change, ClientError> {
        Ok(match &self.change {
            Planned::Put(record) => Change::Append(*record),
            Planned::Edit(plan) => Change::Append(plan.record(answer)?),
            Planned::Prune(positions) => Change::Prune(positions.clone()),
            Planned::Remove => Change::Remove,
        })
    }
}

impl Intent {
    /// An intent of one change.
    pub(crate) fn one(old: Root, name: &str, change: Planned, attempt: Attempt) -> Intent {
        Intent { old, changes: vec![Intended { name: name.into(), change, attempt }] }
    }

    /// Settles the intent with the provider's `last-commit` answer (pure).
    pub(crate) fn settle(&self, answer: &LastCommit) -> Result<Settled, ClientError> {
        let lookup = lookup_from_wire(&answer.lookup)?;
        if verify_lookup(&self.old.digest, self.old.len, self.name(), &lookup).is_ok() {
            return Ok(Settled::NotApplied);
        }
        let neither = |why: &dyn std::fmt::Display| {
            ClientError::violation(
                ViolationKind::NeitherOldNorNew,
                format!("the interrupted change of {}: {why}", self.name()),
            )
        };
        // What did not check out in the last commit, as the check that failed saw it.
        let why = |e: ClientError| match e {
            ClientError::Misbehaved(v) => neither(&format_args!("{} ({})", v, v.kind)),
            e => e,
        };
        match answer.committed.len() {
            0 => return Err(neither(&"no commit to show")),
            n if n != self.changes.len() => {
                return Err(neither(&format_args!("the last commit made {n} changes, not {}", self.changes.len())))
            }
            _ => {}
        }
        let mut root = self.old;
        for (intended, outcome) in self.changes.iter().zip(&answer.committed) {
            // A change refused changed nothing; the next one is proven over the same root.
            if let Outcome::Committed(committed) = outcome {
                let change = intended.change(committed).map_err(why)?;
                root = verify::commit(&root, &intended.name, None, &change, committed).map_err(why)?.0;
            }
        }
        if root == self.old {
            return Err(neither(&"the last commit shows none of the changes applied"));
        }
        Ok(Settled::Applied(root))
    }

    /// The name the change is about (the first one's, of several committed at once).
    pub fn name(&self) -> &str {
        &self.changes[0].name
    }

    /// Every change's attempt, for `last-commit`.
    pub(crate) fn attempts(&self) -> Vec<Attempt> {
        self.changes.iter().map(|c| c.attempt).collect()
    }

    /// The intent's encoding (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let stored = StoredIntent {
            old_root: self.old.digest.0,
            old_len: self.old.len,
            changes: self
                .changes
                .iter()
                .map(|c| StoredIntended {
                    name: c.name.clone(),
                    change: StoredChange::from(&c.change),
                    attempt: c.attempt.0,
                })
                .collect(),
        };
        envelope::seal(MAGIC, &vouch_proto::encode(&stored))
    }

    /// An intent from [`Intent::to_bytes`] (or of the layouts before it); `None` when the
    /// bytes are damaged.
    pub fn from_bytes(bytes: &[u8]) -> Option<Intent> {
        let (layout, body) = envelope::open(bytes, &[MAGIC_V1, MAGIC_V2, MAGIC]).ok()?;
        if layout == 2 {
            let stored = vouch_proto::decode::<StoredIntent>(body).ok()?;
            let old = Root { digest: Digest(stored.old_root), len: stored.old_len };
            let changes = stored
                .changes
                .into_iter()
                .map(|c| Some(Intended { name: c.name, change: c.change.into_planned()?, attempt: Attempt(c.attempt) }))
                .collect::<Option<Vec<_>>>()?;
            return (!changes.is_empty()).then_some(Intent { old, changes });
        }
        let (stored, rest) = vouch_proto::decode_prefix::<Stored>(body).ok()?;
        let attempt = match (layout, rest) {
            (1, rest) => Attempt(rest.try_into().ok()?),
            (_, []) => Attempt::default(),
            _ => return None,
        };
        let old = Root { digest: Digest(stored.old_root), len: stored.old_len };
        Some(Intent::one(old, &stored.name, stored.change.into_planned()?, attempt))
    }
}

// ---- the file's encoding ----

/// Version 3: the old root and each change with its attempt.
#[derive(Serialize, Deserialize)]
struct StoredIntent {
    old_root: [u8; 32],
    old_len: u64,
    changes: Vec<StoredIntended>,
}

#[derive(Serialize, Deserialize)]
struct StoredIntended {
    name: String,
    change: StoredChange,
    attempt: [u8; 16],
}

/// Versions 1 and 2: one change (its attempt, in version 2, after it).
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

impl From<&Planned> for StoredChange {
    fn from(change: &Planned) -> Self {
        let block = |b: &Block| StoredBlock { tag: b.tag.0, length: b.length, block_ref: b.block_ref };
        let record = |r: &VersionRecord| ByteBuf::from(r.to_bytes().to_vec());
        match change {
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
        }
    }
}

impl StoredChange {
    fn into_planned(self) -> Option<Planned> {
        let block = |b: StoredBlock| Block::new(Digest(b.tag), b.length, b.block_ref);
        let record = |b: &ByteBuf| VersionRecord::from_bytes(b).ok();
        Some(match self {
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
        })
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
            let intent = Intent::one(old, "a/b.txt", change, new_attempt());
            assert_eq!(Intent::from_bytes(&intent.to_bytes()).as_ref(), Some(&intent));
        }
        // A group commit's puts, in their order.
        let group = Intent {
            old,
            changes: (1..=3)
                .map(|n| Intended { name: format!("f-{n}"), change: Planned::Put(version(n)), attempt: new_attempt() })
                .collect(),
        };
        assert_eq!(Intent::from_bytes(&group.to_bytes()).as_ref(), Some(&group));
        assert_eq!((group.name(), group.attempts().len()), ("f-1", 3));
        let mut bytes = Intent::one(old, "x", Planned::Remove, new_attempt()).to_bytes();
        bytes[10] ^= 1;
        assert_eq!(Intent::from_bytes(&bytes), None);
        assert_eq!(Intent::from_bytes(b"vouchIN"), None);
        // An intent of no change is damage.
        let empty = StoredIntent { old_root: [1; 32], old_len: 2, changes: Vec::new() };
        assert_eq!(Intent::from_bytes(&envelope::seal(MAGIC, &vouch_proto::encode(&empty))), None);
    }

    /// Re-seals `body` (magic and contents) with its checksum.
    fn sealed(body: Vec<u8>) -> Vec<u8> {
        vouch_core::envelope::seal(body[..8].try_into().unwrap(), &body[8..])
    }

    #[test]
    fn intents_of_versions_1_and_2_read_and_a_wrong_attempt_length_is_damage() {
        let old = Root { digest: Digest([1; 32]), len: 2 };
        let intent = Intent::one(old, "a", Planned::Prune(vec![1]), new_attempt());
        let stored = vouch_proto::encode(&Stored {
            old_root: old.digest.0,
            old_len: old.len,
            name: "a".into(),
            change: StoredChange::from(&Planned::Prune(vec![1])),
        });
        let attempt = intent.changes[0].attempt;
        let v1 = sealed([MAGIC_V1.as_slice(), &stored].concat());
        assert_eq!(Intent::from_bytes(&v1), Some(Intent::one(old, "a", Planned::Prune(vec![1]), Attempt::default())));
        let v2 = sealed([MAGIC_V2.as_slice(), &stored, &attempt.0].concat());
        assert_eq!(Intent::from_bytes(&v2), Some(intent));
        // Version 1 with an attempt, version 2 without one or with a short one: damaged.
        assert_eq!(Intent::from_bytes(&sealed([MAGIC_V1.as_slice(), &stored, &attempt.0].concat())), None);
        assert_eq!(Intent::from_bytes(&sealed([MAGIC_V2.as_slice(), &stored].concat())), None);
        assert_eq!(Intent::from_bytes(&sealed([MAGIC_V2.as_slice(), &stored, &[7; 15]].concat())), None);
        // Version 3 is not a change with an attempt after it.
        assert_eq!(Intent::from_bytes(&sealed([MAGIC.as_slice(), &stored, &[7; 16]].concat())), None);
        assert_eq!(Intent::from_bytes(&sealed([b"vouchIN\x04".as_slice(), &stored, &[7; 16]].concat())), None);
    }
}
