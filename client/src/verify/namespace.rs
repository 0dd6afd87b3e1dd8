//! Checks of namespace answers: lookups and versions, listings, logs, commits.

use crate::error::ClientError;
use crate::root::Root;
use crate::violation::ViolationKind;
use serde_bytes::ByteBuf;
use vouch_core::namespace::{
    proof_from_bytes, verify_commit, verify_listing, verify_log, verify_lookup, verify_version, verify_versions,
    Change, CommitProof, EntryRecord, Found, LookupProof, VersionProof, VersionRecord,
};
use vouch_core::{MultiProof, UpdateProof};
use vouch_proto::{Committed, Listing, Located, Log, WireLookup};

/// A verified version: its entry and record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub entry: EntryRecord,
    pub record: VersionRecord,
}

pub fn lookup_from_wire(w: &WireLookup) -> Result<LookupProof, ClientError> {
    Ok(LookupProof {
        index: w.index,
        entries: w
            .entries
            .iter()
            .map(|e| EntryRecord::from_bytes(e))
            .collect::<Result<_, _>>()
            .map_err(ClientError::caught(ViolationKind::BadLookupProof))?,
        proof: proof_from_bytes(w.proof.to_vec()).map_err(ClientError::caught(ViolationKind::BadLookupProof))?,
    })
}

pub fn update_from_wire(bytes: &ByteBuf) -> Result<UpdateProof, ClientError> {
    UpdateProof::from_bytes(bytes).map_err(ClientError::caught(ViolationKind::BadCommitProof))
}

/// A located answer under `root`: the name's lookup, then the version asked for (`want`;
/// `None`: the latest). A name proven absent has no version.
pub fn located(
    root: &Root,
    name: &str,
    want: Option<u64>,
    located: &Located,
) -> Result<(Found, Option<Verified>), ClientError> {
    let lookup = lookup_from_wire(&located.lookup)?;
    let found = verify_lookup(&root.digest, root.len, name, &lookup)
        .map_err(ClientError::caught(ViolationKind::BadLookupProof))?;
    let Found::At { entry, .. } = &found else {
        if located.version.is_some() {
            return Err(ClientError::violation(ViolationKind::MalformedAnswer, "a version of a name proven absent"));
        }
        return Ok((found, None));
    };
    let wire = located.version.as_ref().ok_or_else(|| {
        ClientError::violation(ViolationKind::MalformedAnswer, "the version of a name proven present is missing")
    })?;
    let bad = ViolationKind::BadVersionProof;
    let answer = VersionProof {
        index: wire.index,
        record: VersionRecord::from_bytes(&wire.record).map_err(ClientError::caught(bad))?,
        proof: MultiProof::from_bytes(wire.proof.to_vec()).map_err(ClientError::caught(bad))?,
    };
    verify_version(entry, want, &answer).map_err(|e| {
        // A proof that holds for another version than the one asked for (an older one as
        // the latest) is told apart from one that does not hold at all.
        let proven = verify_versions(entry, &[answer.index], std::slice::from_ref(&answer.record), &answer.proof);
        if proven.is_ok() {
            let asked = want.map_or_else(|| "the latest".to_string(), |n| format!("version {n}"));
            let got = format!("version {} ({} of {})", answer.record.number, answer.index + 1, entry.versions);
            ClientError::violation(ViolationKind::WrongVersion, format!("{asked} asked for, {got} proven"))
        } else {
            ClientError::violation(ViolationKind::BadVersionProof, e)
        }
    })?;
    let verified = Verified { entry: entry.clone(), record: answer.record };
    Ok((found, Some(verified)))
}

/// A listing under `root`: every name, none left out.
pub fn listing(root: &Root, listing: &Listing) -> Result<Vec<EntryRecord>, ClientError> {
    let (listed, held) = (listing.entries.len() as u64, root.len);
    if listed < held {
        return Err(ClientError::violation(
            ViolationKind::HiddenName,
            format!("the listing has {listed} of the {held} names the client's root holds"),
        ));
    }
    let bad = ViolationKind::BadListingProof;
    let entries: Vec<EntryRecord> = listing
        .entries
        .iter()
        .map(|e| EntryRecord::from_bytes(e))
        .collect::<Result<_, _>>()
        .map_err(ClientError::caught(bad))?;
    let proof = proof_from_bytes(listing.proof.to_vec()).map_err(ClientError::caught(bad))?;
    verify_listing(&root.digest, root.len, &entries, proof.as_ref()).map_err(ClientError::caught(bad))?;
    Ok(entries)
}

/// The log of `name` under `root`: every kept version, oldest first, none left out.
pub fn log(root: &Root, name: &str, log: &Log) -> Result<Vec<VersionRecord>, ClientError> {
    // A log always comes with the name's lookup, proving it present or absent.
    let lookup = lookup_from_wire(&log.lookup)?;
    let found = verify_lookup(&root.digest, root.len, name, &lookup)
        .map_err(ClientError::caught(ViolationKind::BadLookupProof))?;
    let Found::At { entry, .. } = found else {
        return Err(ClientError::NotFound(format!("{name} (the provider proved it absent)")));
    };
    let (logged, held) = (log.versions.len() as u64, entry.versions);
    if logged < held {
        return Err(ClientError::violation(
            ViolationKind::HiddenVersion,
            format!("the log has {logged} of the {held} versions of {name} its proven entry holds"),
        ));
    }
    let bad = ViolationKind::BadLogProof;
    let records: Vec<VersionRecord> = log
        .versions
        .iter()
        .map(|r| VersionRecord::from_bytes(r))
        .collect::<Result<_, _>>()
        .map_err(ClientError::caught(bad))?;
    let proof = MultiProof::from_bytes(log.proof.to_vec()).map_err(ClientError::caught(bad))?;
    verify_log(&entry, &records, &proof).map_err(ClientError::caught(bad))?;
    Ok(records)
}

/// The provider's bare "not found" for version `number` of `name`, judged by the name's
/// proven (complete) log: a version the log lists was hidden; one it does not list is
/// plainly not found.
pub fn unlisted_version(name: &str, number: u64, log: &[VersionRecord]) -> ClientError {
    if log.iter().any(|r| r.number == number) {
        return ClientError::violation(
            ViolationKind::HiddenVersion,
            format!("it says version {number} of {name} is not found; its own proven log lists it"),
        );
    }
    ClientError::NotFound(format!("version {number} of {name} (not in its proven log)"))
}

/// The provider's answer to a commit of `change` to `name` from the root `old`: the lookup
/// the commit started from (equal to the client's own proven view `found`, when it has one),
/// then the update of each level. Returns the root after the change and the name's entry
/// (`None` once removed). A commit just answered and one settled after a crash
/// ([`crate::Intent`]) are checked alike.
pub fn commit(
    old: &Root,
    name: &str,
    found: Option<&Found>,
    change: &Change,
    answer: &Committed,
) -> Result<(Root, Option<EntryRecord>), ClientError> {
    let lookup = lookup_from_wire(&answer.lookup)?;
    let seen = verify_lookup(&old.digest, old.len, name, &lookup)
        .map_err(ClientError::caught(ViolationKind::BadLookupProof))?;
    if found.is_some_and(|f| *f != seen) {
        return Err(ClientError::violation(
            ViolationKind::BadCommitProof,
            "the commit started from another state of the name than the one the client proved",
        ));
    }
    let proof = CommitProof {
        versions: answer.versions_update.as_ref().map(update_from_wire).transpose()?,
        namespace: update_from_wire(&answer.namespace_update)?,
    };
    let done = verify_commit(&old.digest, old.len, name, &seen, change, &proof)
        .map_err(ClientError::caught(ViolationKind::BadCommitProof))?;
    Ok((Root { digest: done.ns_root, len: done.ns_len }, done.entry))
}
