//! A group sequencer's journal: every message that changed its AIP server, durable before
//! the message is answered, and replayed into a fresh server when the group is next used
//! after a restart (or after a step that was cut short).
//!
//! Why a journal and not the server's state: `aip::Server` is a deterministic state machine
//! (Alg. 3 is written reactively: a state changes only by a message it accepts; a refused
//! one changes nothing), so the accepted messages in their order rebuild it exactly: the
//! same `t`, `b`, `I`, `O`, `A` and ADICT state. After a restart the next INVOKE therefore
//! gets the next sequence number and the REPLYs continue the same history; reusing a
//! sequence number would show a member two operations at one position, which its hash chain
//! catches as a fork (Sec. 3.6), so an honest provider must never forget an accepted
//! message it answered.
//!
//! Bound: a replay reads and re-runs the whole history, so opening a group costs time and
//! memory linear in its number of operations (and `aip::Server` keeps every committed
//! operation, since the provider does not know the members: `ServerConfig::members`).
//! Future work: a snapshot of the server's state at some `n` (it needs an export of
//! `aip::Server` from core), after which the entries before `n` are deleted.

use super::{refused, GroupError};
use crate::keys;
use crate::provider::ProviderError;
use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;
use std::collections::HashMap;
use std::future::Future;
use vouch_core::adict::Tree;
use vouch_core::aip::{self, Adict, Commit, CommitAuth, Committed, DictOp, Invoke, ServerConfig, Signed, Wire};
use vouch_core::Digest;
use vouch_store::{Repository, StoreError};

/// The bound on a group's pending list (Sec. 5.2 "Bounded pending list": 128 in the paper);
/// an INVOKE beyond is refused, and retried by its client (the paper's "more robust
/// solution": signal the clients to wait, instead of buffering at the server).
pub(crate) const MAX_PENDING: u64 = 128;

/// An accepted message, as it arrived (each byte field is its canonical `aip::wire`
/// encoding, checked when it arrived and again when replayed).
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Entry {
    /// The genesis of a group journaled while VICOS hashed with SHA-256 (its dictionary, its
    /// hash chain, its objects): its members signed SHA-256 roots and chain links, which no
    /// longer match, so it is refused at load.
    CreateSha256 {
        genesis: ByteBuf,
        auth: ByteBuf,
    },
    /// An INVOKE journaled before INVOKEs carried their client's counter (#43 item 9): its
    /// members' states and signatures are of the older protocol, so the group is refused at
    /// load, as older.
    Invoke {
        from: u32,
        invoke: ByteBuf,
    },
    Commit {
        from: u32,
        commit: ByteBuf,
    },
    CommitAuth {
        from: u32,
        commit_auth: ByteBuf,
    },
    /// Member `member` speaks through provider client `client` from now on (admitted, or
    /// the genesis's creator; in a group created without an admission hash, its first
    /// accepted message).
    Bind {
        member: u32,
        client: String,
    },
    /// The hash of the group's admission secret (entry 1, after the genesis).
    Admission {
        hash: [u8; 32],
    },
    /// The group's genesis (always entry 0): `Committed<DictOp>` and `Signed<Digest>`. Its
    /// dictionary, hash chain and objects hash with BLAKE3 (`vouch_core::hash::Keyed`).
    Create {
        genesis: ByteBuf,
        auth: ByteBuf,
    },
    /// An INVOKE, its client's counter signed in it.
    InvokeCounted {
        from: u32,
        invoke: ByteBuf,
    },
}

/// Where a group's journal entries go (the repository; a double in the tests).
pub(super) trait Journal {
    /// Makes entries `first..` durable, all or none.
    fn append(&self, first: u64, entries: Vec<Vec<u8>>) -> impl Future<Output = Result<(), ProviderError>> + Send;
}

/// A group's server and the number of its journal's next entry.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) server: aip::Server<Adict>,
    pub(super) next: u64,
    /// Which member the passive-phase work was last handed to, and until when it is its
    /// alone (see `sequencer::work`); not journaled.
    pub(super) lease: Option<(aip::ClientId, std::time::Instant)>,
    /// The provider client each member speaks through ([`Entry::Bind`]).
    pub(super) members: HashMap<aip::ClientId, String>,
    /// The hash of the group's admission secret ([`Entry::Admission`]); `None` in a group
    /// journaled before admission existed, whose members bind at their first message.
    pub(super) admission: Option<[u8; 32]>,
}

impl Loaded {
    /// A group's server from its genesis (entry 0), no member bound yet.
    pub(super) fn new(genesis: Committed<DictOp>, auth: Signed<Digest>) -> Loaded {
        Loaded { server: server(genesis, auth), next: 1, lease: None, members: HashMap::new(), admission: None }
    }
}

/// A group's server from its genesis: an empty dictionary, its members unknown.
pub(super) fn server(genesis: Committed<DictOp>, auth: Signed<Digest>) -> aip::Server<Adict> {
    aip::Server::new(genesis, auth, Tree::new()).with_config(ServerConfig {
        max_pending: MAX_PENDING,
        members: None,
        ..ServerConfig::default()
    })
}

impl Entry {
    /// Applies an accepted message to `loaded` (at replay: it was accepted before, so it is
    /// accepted again, or the journal is damaged).
    fn replay(&self, group: &str, loaded: &mut Loaded) -> Result<(), ProviderError> {
        let malformed = |e: aip::WireError| corrupt(group, e);
        let server = &mut loaded.server;
        let accepted = match self {
            Entry::Create { .. } | Entry::CreateSha256 { .. } => return Err(corrupt(group, "a second genesis")),
            Entry::Bind { member, client } => {
                loaded.members.insert(*member, client.clone());
                return Ok(());
            }
            Entry::Admission { hash } => {
                loaded.admission = Some(*hash);
                return Ok(());
            }
            Entry::Invoke { .. } => return Err(GroupError::Uncounted { group: group.to_string() }.into()),
            Entry::InvokeCounted { from, invoke } => {
                server.replay_invoke(*from, Invoke::from_wire(invoke).map_err(malformed)?).map(drop)
            }
            Entry::Commit { from, commit } => server.on_commit(*from, Commit::from_wire(commit).map_err(malformed)?),
            Entry::CommitAuth { from, commit_auth } => {
                server.on_commit_auth(*from, CommitAuth::from_wire(commit_auth).map_err(malformed)?)
            }
        };
        accepted.map_err(|e| corrupt(group, format!("an accepted message is refused at replay: {}", refused(group, e))))
    }
}

fn corrupt(group: &str, why: impl ToString) -> ProviderError {
    ProviderError::Store(StoreError::Corrupt { at: format!("the journal of group {group}"), detail: why.to_string() })
}

/// Whether the group has been created (its genesis is durable).
pub(super) fn exists(repo: &Repository, group: &str) -> Result<bool, ProviderError> {
    Ok(repo.record(&keys::vicos_log(group, 0))?.is_some())
}

impl Entry {
    pub(super) fn encode(&self) -> Vec<u8> {
        vouch_proto::encode(self)
    }
}

/// A group's journal in the provider's repository: entries are records, a batch one commit.
pub(super) struct InRepository<'a> {
    pub(super) repo: &'a Repository,
    pub(super) group: &'a str,
}

impl Journal for InRepository<'_> {
    async fn append(&self, first: u64, entries: Vec<Vec<u8>>) -> Result<(), ProviderError> {
        let mut commit = self.repo.begin();
        for (k, entry) in entries.into_iter().enumerate() {
            commit.put_record(&keys::vicos_log(self.group, first + k as u64), entry);
        }
        Ok(self.repo.commit(commit).await?)
    }
}

/// The group's server, rebuilt from its journal; `None` when the group was never created.
pub(super) fn load(repo: &Repository, group: &str) -> Result<Option<Loaded>, ProviderError> {
    let started = std::time::Instant::now();
    let entries = repo.records(&keys::vicos_log_prefix(group))?;
    let mut loaded: Option<Loaded> = None;
    for (n, (key, bytes)) in entries.iter().enumerate() {
        if *key != keys::vicos_log(group, n as u64) {
            return Err(corrupt(group, format!("entry {n} is missing")));
        }
        let entry: Entry = vouch_proto::decode(bytes).map_err(|e| corrupt(group, e))?;
        match (&mut loaded, &entry) {
            (None, Entry::Create { genesis, auth }) => {
                let genesis = Committed::from_wire(genesis).map_err(|e| corrupt(group, e))?;
                let auth = Signed::from_wire(auth).map_err(|e| corrupt(group, e))?;
                loaded = Some(Loaded::new(genesis, auth));
            }
            (None, Entry::CreateSha256 { .. }) => {
                return Err(GroupError::OlderSha256 { group: group.to_string() }.into())
            }
            (None, _) => return Err(corrupt(group, "the first entry is not the genesis")),
            (Some(l), entry) => {
                entry.replay(group, l)?;
                l.next += 1;
            }
        }
    }
    if let Some(l) = &loaded {
        tracing::info!(group, entries = l.next, took = ?started.elapsed(), "VICOS group replayed from its journal");
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_core::aip::{Keyring, Wire};
    use vouch_store::{MetaDb, ObjectBlobs};

    /// A repository over a local directory.
    fn repository(dir: &std::path::Path) -> Repository {
        let blobs = ObjectBlobs::local(&dir.join("blobs")).unwrap();
        Repository::open(blobs, MetaDb::open(&dir.join("meta.redb")).unwrap()).unwrap()
    }

    /// A group journaled by an older vouch (its genesis an `Entry::CreateSha256`) is refused
    /// as a request, not reported as damage; the same genesis journaled now loads.
    #[tokio::test]
    async fn a_group_whose_dictionary_hashed_with_sha256_is_refused_as_older_not_as_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repository(dir.path());
        let (genesis, auth) = aip::genesis::<Adict>(&Keyring::hmac([1; 32]), 0, DictOp::List, &Tree::new()).unwrap();
        let (genesis, auth) = (ByteBuf::from(genesis.to_wire()), ByteBuf::from(auth.to_wire()));
        for (group, entry) in [
            ("old", Entry::CreateSha256 { genesis: genesis.clone(), auth: auth.clone() }),
            ("new", Entry::Create { genesis, auth }),
        ] {
            InRepository { repo: &repo, group }.append(0, vec![entry.encode()]).await.unwrap();
        }
        match load(&repo, "old") {
            Err(ProviderError::Groups(why @ GroupError::OlderSha256 { .. })) => {
                assert!(why.to_string().contains("older vouch"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(load(&repo, "new").unwrap().map(|l| l.next), Some(1));
    }

    /// A group whose journal holds an INVOKE of the older protocol (no counter) is refused
    /// as older, not read as damaged.
    #[tokio::test]
    async fn a_group_journaled_with_uncounted_invokes_is_refused_as_older() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repository(dir.path());
        let (genesis, auth) = aip::genesis::<Adict>(&Keyring::hmac([1; 32]), 0, DictOp::List, &Tree::new()).unwrap();
        let create = Entry::Create { genesis: ByteBuf::from(genesis.to_wire()), auth: ByteBuf::from(auth.to_wire()) };
        let invoke = Entry::Invoke { from: 0, invoke: ByteBuf::from(vec![1, 2, 3]) };
        InRepository { repo: &repo, group: "g" }.append(0, vec![create.encode(), invoke.encode()]).await.unwrap();
        match load(&repo, "g") {
            Err(ProviderError::Groups(why @ GroupError::Uncounted { .. })) => {
                assert!(why.to_string().contains("no counter"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }
}
