//! What the client caught a provider doing: a [`Violation`] is the kind of check that failed
//! and the details. Kinds are named by what the client observed, never by a guess at why the
//! provider did it (a rollback and a damaged disk can look alike; the client reports what it
//! saw). Nothing from an answer that violates a check is handed out, written or recorded.

use std::fmt;

/// A provider answer that does not check out against the client's root and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// What exactly did not check out (offsets, versions, the failed verification's error).
    pub detail: String,
}

impl Violation {
    pub fn new(kind: ViolationKind, detail: impl fmt::Display) -> Violation {
        Violation { kind, detail: detail.to_string() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.description(), self.detail)
    }
}

/// The kinds of [`Violation`], each one check of the client. Fieldless and stable: logs, JSON
/// output and protocol gateways map a kind by its [`ViolationKind::name`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// A served block's bytes do not match its tag under the client's key, or its length or
    /// (nonce, tag) do not match the leaf its proof opens.
    AlteredBlock,
    /// A read chunk carried fewer blocks than the offsets its proof opens.
    MissingBlock,
    /// A proven block does not start where the one before it ended (or the first one of a
    /// chunk does not hold the byte the read had reached).
    MisplacedBlock,
    /// A read stream ended (cleanly or inside a frame) before the end of the range.
    ShortStream,
    /// A read sent blocks that start past the end of the range asked for.
    BlocksPastRange,
    /// A block list (for `sync`) whose offsets, (nonce, tag) entries or extent do not match
    /// the blocks its proof opens under the version's root.
    BlockListMismatch,
    /// A name's lookup (present or absent) does not verify against the client's namespace
    /// root and size.
    BadLookupProof,
    /// A version record's proof does not verify against its name's proven entry.
    BadVersionProof,
    /// A version proven under the name's entry, but not the one asked for: not the latest
    /// when the latest was asked for, or another number.
    WrongVersion,
    /// A read chunk's multi-proof does not verify against the version's root.
    BadReadProof,
    /// A block list's multi-proof does not verify against the version's root.
    BadBlockListProof,
    /// A listing's proof does not verify against the client's namespace root, or it names
    /// more names than the root holds.
    BadListingProof,
    /// A listing that leaves out a name: fewer names than the client's root holds.
    HiddenName,
    /// A version log's proof does not verify against the name's proven entry.
    BadLogProof,
    /// A version the client has proven exists was hidden: "not found" for a version the
    /// name's proven log lists or the read's verified header had just proven, or a log with
    /// fewer versions than the proven entry holds.
    HiddenVersion,
    /// A bare "not found" where the protocol owes a proof of absence (a name, the namespace,
    /// the latest version, the last commit), or about a name the client had just proven
    /// present.
    UnprovenNotFound,
    /// A commit's proofs do not verify from the client's root as exactly the change it asked
    /// for: an update proof that does not yield the root the client computes from its own
    /// change (a count changed otherwise than asked, an edit made twice or not at all), or a
    /// commit that started from another state of the name than the one the client proved.
    BadCommitProof,
    /// A possession proof (audit) that does not verify for the client's fresh challenge
    /// against the version's root and the client's tag key.
    BadAuditProof,
    /// The provider reported its stored data lost or damaged (`DataLost`): it failed to
    /// keep what it acknowledged.
    DataLost,
    /// After an interrupted change, the provider's last commit proves neither the state
    /// before the change nor the state after exactly this change.
    NeitherOldNorNew,
    /// An answer that is not a message of the protocol: undecodable, larger than the
    /// protocol allows, frames out of place, a part that no honest answer lacks or has.
    MalformedAnswer,
    /// The context of a PoR write (U's leaves and proof, the levels a rebuild consumes, their
    /// sealed checksums) does not verify against the client's schedule, U's root and keys: a
    /// skipped, faked or stale rebuild; or the log's status after a batch is not the one the
    /// batch makes.
    BadPorWrite,
    /// Slots of U read back do not verify against U's root and their sealed checksums.
    BadPorRead,
    /// A version's PoR copy is not that version: its slots hold other blocks, tags that do
    /// not check, or blocks that make another root; or it lies outside the slots written.
    BadPorCopy,
    /// A part of a PoR audit (a level of H, or C) does not verify for the client's fresh
    /// challenge, or the answer has other parts than the client's schedule.
    BadPorAudit,
    /// An answer of the group's AIP sequencer (VICOS) that does not check: a history that
    /// disagrees with this client's hash chain (a fork), a forged or replayed operation, a
    /// signature that does not verify, a response that does not verify against the last
    /// authenticator, pending operations other than announced.
    BadAipAnswer,
    /// A VICOS object whose bytes do not hash to the value the group's history holds for its
    /// key.
    AlteredObject,
}

impl ViolationKind {
    /// Every kind, in declaration order.
    pub const ALL: [ViolationKind; 27] = [
        ViolationKind::AlteredBlock,
        ViolationKind::MissingBlock,
        ViolationKind::MisplacedBlock,
        ViolationKind::ShortStream,
        ViolationKind::BlocksPastRange,
        ViolationKind::BlockListMismatch,
        ViolationKind::BadLookupProof,
        ViolationKind::BadVersionProof,
        ViolationKind::WrongVersion,
        ViolationKind::BadReadProof,
        ViolationKind::BadBlockListProof,
        ViolationKind::BadListingProof,
        ViolationKind::HiddenName,
        ViolationKind::BadLogProof,
        ViolationKind::HiddenVersion,
        ViolationKind::UnprovenNotFound,
        ViolationKind::BadCommitProof,
        ViolationKind::BadAuditProof,
        ViolationKind::DataLost,
        ViolationKind::NeitherOldNorNew,
        ViolationKind::MalformedAnswer,
        ViolationKind::BadPorWrite,
        ViolationKind::BadPorRead,
        ViolationKind::BadPorCopy,
        ViolationKind::BadPorAudit,
        ViolationKind::BadAipAnswer,
        ViolationKind::AlteredObject,
    ];

    /// The kind's stable kebab-case name (logs, JSON output, error-code mappings).
    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::AlteredBlock => "altered-block",
            ViolationKind::MissingBlock => "missing-block",
            ViolationKind::MisplacedBlock => "misplaced-block",
            ViolationKind::ShortStream => "short-stream",
            ViolationKind::BlocksPastRange => "blocks-past-range",
            ViolationKind::BlockListMismatch => "block-list-mismatch",
            ViolationKind::BadLookupProof => "bad-lookup-proof",
            ViolationKind::BadVersionProof => "bad-version-proof",
            ViolationKind::WrongVersion => "wrong-version",
            ViolationKind::BadReadProof => "bad-read-proof",
            ViolationKind::BadBlockListProof => "bad-block-list-proof",
            ViolationKind::BadListingProof => "bad-listing-proof",
            ViolationKind::HiddenName => "hidden-name",
            ViolationKind::BadLogProof => "bad-log-proof",
            ViolationKind::HiddenVersion => "hidden-version",
            ViolationKind::UnprovenNotFound => "unproven-not-found",
            ViolationKind::BadCommitProof => "bad-commit-proof",
            ViolationKind::BadAuditProof => "bad-audit-proof",
            ViolationKind::DataLost => "data-lost",
            ViolationKind::NeitherOldNorNew => "neither-old-nor-new",
            ViolationKind::MalformedAnswer => "malformed-answer",
            ViolationKind::BadPorWrite => "bad-por-write",
            ViolationKind::BadPorRead => "bad-por-read",
            ViolationKind::BadPorCopy => "bad-por-copy",
            ViolationKind::BadPorAudit => "bad-por-audit",
            ViolationKind::BadAipAnswer => "bad-aip-answer",
            ViolationKind::AlteredObject => "altered-object",
        }
    }

    /// What the client observed, in a few words (the start of a violation's message).
    pub fn description(self) -> &'static str {
        match self {
            ViolationKind::AlteredBlock => "a block does not match its tag or proven leaf",
            ViolationKind::MissingBlock => "a read chunk lacks blocks its proof opens",
            ViolationKind::MisplacedBlock => "a block is not the one that follows",
            ViolationKind::ShortStream => "the read stream ended before the range's end",
            ViolationKind::BlocksPastRange => "blocks past the end of the range",
            ViolationKind::BlockListMismatch => "the block list does not match its proof",
            ViolationKind::BadLookupProof => "a lookup proof does not verify against the root",
            ViolationKind::BadVersionProof => "a version proof does not verify",
            ViolationKind::WrongVersion => "not the version asked for",
            ViolationKind::BadReadProof => "a read proof does not verify against the version",
            ViolationKind::BadBlockListProof => "a block list proof does not verify against the version",
            ViolationKind::BadListingProof => "a listing proof does not verify against the root",
            ViolationKind::HiddenName => "the listing leaves out a name",
            ViolationKind::BadLogProof => "a version log proof does not verify",
            ViolationKind::HiddenVersion => "a proven version was hidden",
            ViolationKind::UnprovenNotFound => "\"not found\" without the proof it owes",
            ViolationKind::BadCommitProof => "a commit proof does not verify as the change asked for",
            ViolationKind::BadAuditProof => "a possession proof does not verify",
            ViolationKind::DataLost => "it reports its stored data lost or damaged",
            ViolationKind::NeitherOldNorNew => "the state after an interrupted change is neither before nor after it",
            ViolationKind::MalformedAnswer => "a malformed answer",
            ViolationKind::BadPorWrite => "a PoR write's context does not verify against the log",
            ViolationKind::BadPorRead => "slots of U do not verify against U's root",
            ViolationKind::BadPorCopy => "a PoR copy is not the version it should hold",
            ViolationKind::BadPorAudit => "a PoR audit does not verify",
            ViolationKind::BadAipAnswer => "an AIP answer does not check against the group's history",
            ViolationKind::AlteredObject => "an object does not hash to the group's value for its key",
        }
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_kind_has_a_distinct_kebab_case_name_and_a_description() {
        let names: HashSet<&str> = ViolationKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), ViolationKind::ALL.len(), "two kinds share a name");
        let kinds: HashSet<ViolationKind> = ViolationKind::ALL.into_iter().collect();
        assert_eq!(kinds.len(), ViolationKind::ALL.len(), "a kind is listed twice");
        for k in ViolationKind::ALL {
            let name = k.name();
            assert!(
                !name.is_empty() && name.split('-').all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())),
                "{name} is not kebab-case"
            );
            assert!(!k.description().is_empty());
        }
        let v = Violation::new(ViolationKind::AlteredBlock, "block at byte 4096");
        assert_eq!(v.to_string(), "a block does not match its tag or proven leaf: block at byte 4096");
    }
}
