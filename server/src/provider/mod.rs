//! The provider's logic over the store, without HTTP: namespaces, versions, blocks, proofs.
//!
//! Every answer carries what the client needs to check it against its one root digest; the
//! provider is trusted with nothing. Changes are serialised by one write lock and committed to
//! the repository ([`vouch_store::Repository`]) as one commit each; how blocks and records are
//! laid out there is the repository's business (`crate::keys` says how they are named).
//!
//! This is the honest provider: it has no lie in it. The `vouch-misbehave` crate wraps it to
//! lie on purpose, through the same steps (see `commit`), and only tests and `vouch demo`
//! serve that.

use crate::keys;
use serde_bytes::ByteBuf;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use vouch_core::namespace::{
    commit_edits, proof_bytes, Change, EntryRecord, Found, LookupProof, NamespaceTree, VersionRecord,
};
use vouch_core::pdp::{self, Challenge, FileId, Held, PossessionProof, SchemeId};
use vouch_core::{hash, Block, Edit, FlexList};
use vouch_proto::{
    Attempt, AuditAnswer, AuditRequest, BlockList, BlockMeta, Committed, EditRequest, ErrorCode, HealBlocksRequest,
    HealedBlocks, Listing, Located, Log, PruneRequest, ReadChunk, RemoveRequest, StagedUpload, WireBlock, WireEdit,
    WireLookup, WireVersion, READ_CHUNK_BYTES,
};
use vouch_store::{Commit, MetaDb, ObjectBlobs, Repository, StoreError, StoredBlocks, Upload};

mod commit;
mod error;
mod por;
mod read;
mod settle;
mod staged;
#[cfg(test)]
mod staged_tests;
mod vicos;
mod write;

pub use crate::request_error::RequestError;
pub use crate::vicos::GroupError;
pub use commit::{committed_puts, only_outcome, Batch, Planned, Prepared, Proven, Steps};
use commit::{Holding, Staged};
pub use error::FilesError;
pub use por::{PorError, PorLogs};
pub use read::ReadPlan;
pub use read::{Challenged, HeldBlocks};
pub use vicos::Groups;
pub use write::PutState;

/// Most offsets one audit may ask for.
pub const MAX_CHALLENGE: u32 = 10_000;
/// Block lists kept in memory between requests.
const LIST_CACHE: usize = 16;

/// Why the provider cannot answer: a refusal by one of its three services or by the HTTP
/// front, each saying what was wrong with the request, or a failure of its store.
///
/// A service's refusal is said with its kind first ("not found: version 3 of f"); the front's
/// and the store's are said as they are.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{kind}: {0}", kind = .0.refusal())]
    Files(#[from] FilesError),
    #[error("{kind}: {0}", kind = .0.refusal())]
    Por(#[from] PorError),
    #[error("{kind}: {0}", kind = .0.refusal())]
    Groups(#[from] GroupError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ProviderError {
    /// The protocol's code of the error answer.
    pub fn code(&self) -> ErrorCode {
        match self {
            ProviderError::Files(e) => e.code(),
            ProviderError::Por(e) => e.code(),
            ProviderError::Groups(e) => e.code(),
            ProviderError::Request(e) => e.code(),
            ProviderError::Store(StoreError::Corrupt { .. }) => ErrorCode::DataLost,
            ProviderError::Store(_) => ErrorCode::Storage,
        }
    }
}

/// How a service refuses a request: the kinds of [`ErrorCode`] that are the request's own
/// fault (what the store fails at is a [`ProviderError::Store`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    BadRequest,
    NotFound,
    Conflict,
    /// The caller is known but may not do this (a VICOS member another client speaks as).
    Forbidden,
    /// The request is past one of the provider's limits (see `Limits`).
    TooLarge,
}

impl Refusal {
    pub(crate) fn code(self) -> ErrorCode {
        match self {
            Refusal::BadRequest => ErrorCode::BadRequest,
            Refusal::NotFound => ErrorCode::NotFound,
            Refusal::Conflict => ErrorCode::Conflict,
            Refusal::Forbidden => ErrorCode::Unauthorized,
            Refusal::TooLarge => ErrorCode::TooLarge,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::BadRequest => "bad request",
            Refusal::NotFound => "not found",
            Refusal::Conflict => "conflict",
            Refusal::Forbidden => "forbidden",
            Refusal::TooLarge => "too large",
        })
    }
}

/// Damage found in what the store holds (data lost, to the client).
fn corrupt(at: &str, why: impl ToString) -> ProviderError {
    ProviderError::Store(StoreError::Corrupt { at: at.to_string(), detail: why.to_string() })
}

/// A version found for a request: its entry, record and block list.
struct Version {
    entry: EntryRecord,
    record: VersionRecord,
    list: Arc<FlexList>,
}

/// A name's lookup, its version records and their list, of one state.
type LookedUp = (LookupProof, Found, Vec<VersionRecord>, FlexList);

/// The provider: one repository, and the three services over it (the namespaces of files,
/// the PoR logs, the VICOS groups), each with its own state.
pub struct Provider {
    repo: Arc<Repository>,
    files: Files,
    por: PorLogs,
    groups: Groups,
}

/// Each client's namespace: names, their versions, each a FlexList of PDP-tagged blocks.
pub struct Files {
    repo: Arc<Repository>,
    write: tokio::sync::Mutex<()>,
    lists: Mutex<HashMap<String, Arc<FlexList>>>,
    /// Per client, its namespace (see [`Files::namespace`]).
    namespaces: Mutex<HashMap<String, Arc<RwLock<NamespaceTree>>>>,
    /// Per client: held for reading by each change in flight, for writing by `last-commit`
    /// (see `settle`).
    changes: Mutex<HashMap<String, Arc<tokio::sync::RwLock<settle::Gate>>>>,
    /// Per client: held for writing by a commit from its durable write to its namespace
    /// update, for reading by each read of a name and its versions ([`Files::reading`]).
    applying: Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>,
    /// Per client, the uploads waiting for their commits (see `staged`).
    staged: staged::StagedUploads,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("repo", &self.repo).finish()
    }
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files").field("repo", &self.repo).finish()
    }
}

impl Provider {
    pub fn open(blobs: ObjectBlobs, meta: MetaDb) -> Result<Self, StoreError> {
        Self::over(Repository::open(blobs, meta)?)
    }

    /// The provider over a repository.
    pub fn over(repo: Repository) -> Result<Self, StoreError> {
        check_format(&repo)?;
        let repo = Arc::new(repo);
        Ok(Provider {
            files: Files::over(repo.clone()),
            por: PorLogs::over(repo.clone()),
            groups: Groups::over(repo.clone()),
            repo,
        })
    }

    /// The clients' namespaces of files and versions.
    pub fn files(&self) -> &Files {
        &self.files
    }

    /// The clients' PoR logs.
    pub fn por(&self) -> &PorLogs {
        &self.por
    }

    /// The VICOS groups.
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// PoR logs of `width`-element slots whose objects are cut into segments of
    /// `segment_bytes`, instead of the heap's slots and the store's segments: logs of millions
    /// of small slots, to drill the PoR machinery at scale (the heap's ⊥ writes need its own
    /// slots, so files' PoR copies do not fit such logs).
    pub fn with_por_shape(mut self, width: usize, segment_bytes: usize) -> Self {
        self.por.with_shape(width, segment_bytes);
        self
    }

    /// Deletes the segments that no committed entry names (what a crash or a failed commit left
    /// behind); returns how many. Only while nothing is being written: the server runs it
    /// before it serves.
    pub async fn sweep_orphans(&self) -> Result<usize, ProviderError> {
        Ok(self.repo.sweep_orphans().await?)
    }

    /// Background housekeeping: compaction as `policy` says (see `crate::Maintenance`).
    pub async fn maintain(
        &self,
        policy: &vouch_store::CompactionPolicy,
    ) -> Result<vouch_store::Compaction, ProviderError> {
        Ok(self.repo.maintain(policy).await?)
    }

    /// Makes the VICOS COMMITs answered before they were durable durable, then copies what
    /// only the local metadata log holds to the blob store (a clean shutdown).
    pub async fn close(&self) -> Result<(), ProviderError> {
        self.groups.flush().await;
        Ok(self.repo.close().await?)
    }
}

impl Files {
    fn over(repo: Arc<Repository>) -> Self {
        Files {
            repo,
            write: tokio::sync::Mutex::new(()),
            lists: Mutex::new(HashMap::new()),
            namespaces: Mutex::new(HashMap::new()),
            changes: Mutex::new(HashMap::new()),
            applying: Mutex::new(HashMap::new()),
            staged: staged::StagedUploads::default(),
        }
    }

    // ---- reading the namespace ----

    /// Held while a read looks up a name and its versions: a commit makes its records durable
    /// and then updates the namespace in memory, and no such read runs between the two, so
    /// it sees both before the commit or both after it, never the old entry with the new
    /// records (an answer that verifies under no root the client ever holds).
    pub async fn reading(&self, client: &str) -> tokio::sync::OwnedRwLockReadGuard<()> {
        self.applying_gate(client).read_owned().await
    }

    pub(crate) fn applying_gate(&self, client: &str) -> Arc<tokio::sync::RwLock<()>> {
        self.applying.lock().expect("applying gates").entry(client.to_string()).or_default().clone()
    }

    /// The namespace of `client`, loaded from the store at its first use in this process (one
    /// scan), then kept in memory and changed by each commit once the commit is durable.
    fn namespace(&self, client: &str) -> Result<Arc<RwLock<NamespaceTree>>, ProviderError> {
        // Loaded under the map's lock: no commit can land between the scan and the insert
        // (a commit gets its tree here first), so a loaded tree is never stale.
        let mut namespaces = self.namespaces.lock().expect("namespaces");
        if let Some(tree) = namespaces.get(client) {
            return Ok(tree.clone());
        }
        let entries = self
            .repo
            .records(&keys::entry_prefix(client))?
            .into_iter()
            .map(|(k, v)| EntryRecord::from_bytes(&v).map_err(|e| corrupt(&String::from_utf8_lossy(&k), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let tree = NamespaceTree::load(entries).map_err(|e| corrupt("namespace", e))?;
        let tree = Arc::new(RwLock::new(tree));
        namespaces.insert(client.to_string(), tree.clone());
        Ok(tree)
    }

    /// Writes `entries` into the namespace of `client` without commits, proofs or versions
    /// (for benchmarks that need a namespace of a million names in seconds; an untrusted
    /// provider can always write what it likes, and the client's root decides what is true).
    pub async fn import_entries(&self, client: &str, entries: &[EntryRecord]) -> Result<(), ProviderError> {
        for part in entries.chunks(100_000) {
            let mut commit = self.repo.begin();
            for entry in part {
                commit.put_record(&keys::entry(client, &entry.name), entry.to_bytes());
            }
            self.repo.commit(commit).await?;
        }
        self.forget_namespace(client);
        Ok(())
    }

    /// Forgets the namespace of `client` kept in memory; the next use loads it again.
    fn forget_namespace(&self, client: &str) {
        self.namespaces.lock().expect("namespaces").remove(client);
    }

    /// The lookup proof of `name` in the namespace of `client`, and what it found.
    fn lookup(&self, client: &str, name: &str) -> Result<(LookupProof, Found), ProviderError> {
        let tree = self.namespace(client)?;
        let tree = tree.read().expect("namespace");
        tree.lookup(name).map_err(|e| corrupt("namespace", e))
    }

    /// The lookup of `name` and its version records, of one state: callers that answer a
    /// client hold [`Files::reading`] around it. A pair that disagrees means the namespace
    /// in memory fell behind the store: it is loaded again once; a pair that still disagrees
    /// is refused as a storage failure, never answered. Also the records' version list,
    /// built once for the check and the proofs.
    fn lookup_with_versions(&self, client: &str, name: &str) -> Result<LookedUp, ProviderError> {
        if let Some(agreed) = self.lookup_with_versions_once(client, name)? {
            return Ok(agreed);
        }
        tracing::warn!("the namespace of {client} in memory disagreed with the store at {name}: loaded again");
        self.forget_namespace(client);
        self.lookup_with_versions_once(client, name)?.ok_or_else(|| {
            ProviderError::Store(StoreError::Backend {
                at: format!("the versions of {name}"),
                detail: "the stored namespace and the stored versions disagree".into(),
            })
        })
    }

    /// [`Files::lookup_with_versions`] of the namespace in memory; `None` when it disagrees
    /// with the stored records.
    fn lookup_with_versions_once(&self, client: &str, name: &str) -> Result<Option<LookedUp>, ProviderError> {
        let (answer, found) = self.lookup(client, name)?;
        let Found::At { entry, .. } = &found else { return Ok(Some((answer, found, Vec::new(), FlexList::new()))) };
        let records = self.versions(client, &entry.file)?;
        let list = version_list(&records)?;
        let agree = records.len() as u64 == entry.versions && list.root() == entry.versions_root;
        Ok(agree.then_some((answer, found, records, list)))
    }

    fn versions(&self, client: &str, file: &FileId) -> Result<Vec<VersionRecord>, ProviderError> {
        self.repo
            .records(&keys::version_prefix(client, file))?
            .into_iter()
            .map(|(k, v)| VersionRecord::from_bytes(&v).map_err(|e| corrupt(&String::from_utf8_lossy(&k), e)))
            .collect()
    }

    fn list(&self, client: &str, record: &VersionRecord) -> Result<Arc<FlexList>, ProviderError> {
        let name = keys::list(client, &record.file, record.number);
        if let Some(list) = self.lists.lock().expect("list cache").get(&name) {
            return Ok(list.clone());
        }
        let list = self.repo.load_list(&name)?;
        let list = Arc::new(list);
        self.cache_list(name, list.clone());
        Ok(list)
    }

    fn cache_list(&self, name: String, list: Arc<FlexList>) {
        let mut cache = self.lists.lock().expect("list cache");
        if cache.len() >= LIST_CACHE {
            cache.clear();
        }
        cache.insert(name, list);
    }

    /// Where `name` is and, when it exists, the version asked for (`None`: the latest).
    fn locate(&self, client: &str, name: &str, want: Option<u64>) -> Result<(Located, Option<Version>), ProviderError> {
        let (answer, found, records, versions) = self.lookup_with_versions(client, name)?;
        let Found::At { entry, .. } = found else {
            return Ok((Located { lookup: wire_lookup(&answer), version: None }, None));
        };
        let position = match want {
            None => records.len().checked_sub(1).ok_or_else(|| corrupt(name, "a name without versions"))?,
            Some(n) => records
                .iter()
                .position(|r| r.number == n)
                .ok_or_else(|| FilesError::NoSuchVersion { name: name.to_string(), version: n })?,
        };
        let record = records[position];
        let proof = versions.prove(&[position as u64]).map_err(FilesError::Proof)?;
        let version = WireVersion {
            index: position as u64,
            record: ByteBuf::from(record.to_bytes().to_vec()),
            proof: ByteBuf::from(proof.as_bytes().to_vec()),
        };
        let list = self.list(client, &record)?;
        Ok((Located { lookup: wire_lookup(&answer), version: Some(version) }, Some(Version { entry, record, list })))
    }

    pub fn located(&self, client: &str, name: &str, want: Option<u64>) -> Result<Located, ProviderError> {
        Ok(self.locate(client, name, want)?.0)
    }

    pub fn listing(&self, client: &str) -> Result<Listing, ProviderError> {
        let tree = self.namespace(client)?;
        let tree = tree.read().expect("namespace");
        let entries = tree.entries().map(|e| e.map(|e| ByteBuf::from(e.to_bytes()))).collect::<Result<_, _>>();
        let proof = tree.listing_proof();
        let at = |e| corrupt("namespace", e);
        Ok(Listing { entries: entries.map_err(at)?, proof: ByteBuf::from(proof_bytes(proof.map_err(at)?.as_ref())) })
    }

    pub fn log(&self, client: &str, name: &str) -> Result<Log, ProviderError> {
        let (answer, found, records, list) = self.lookup_with_versions(client, name)?;
        let (versions, proof) = match found {
            Found::At { .. } => {
                let indices: Vec<u64> = (0..records.len() as u64).collect();
                let proof = if indices.is_empty() {
                    Vec::new()
                } else {
                    list.prove(&indices).map_err(FilesError::Proof)?.as_bytes().to_vec()
                };
                (records.iter().map(|r| ByteBuf::from(r.to_bytes().to_vec())).collect(), proof)
            }
            Found::Absent { .. } => (Vec::new(), Vec::new()),
        };
        Ok(Log { lookup: wire_lookup(&answer), versions, proof: ByteBuf::from(proof) })
    }
}

/// The layout of what the provider keeps (node hashes, tags, records). Format 2 binds every
/// rank and length into the node hashes and carries a salt in each linear tag; data in another
/// format is refused at open, never misread.
const FORMAT: &[u8] = b"vouch provider format 2";
const FORMAT_KEY: &[u8] = b"format";

fn check_format(repo: &Repository) -> Result<(), StoreError> {
    let refuse = |detail: String| Err(StoreError::Corrupt { at: "the metadata store".into(), detail });
    match repo.record(FORMAT_KEY)? {
        Some(found) if found == FORMAT => Ok(()),
        Some(found) => refuse(format!(
            "written as {:?}, this provider reads {:?}",
            String::from_utf8_lossy(&found),
            String::from_utf8_lossy(FORMAT)
        )),
        None if !repo.records(b"ns/")?.is_empty() => {
            refuse("written by an older vouch (format 1): start from an empty data directory".into())
        }
        None => {
            let mut stamp = repo.begin();
            stamp.put_record(FORMAT_KEY, FORMAT);
            repo.commit_sync(stamp)
        }
    }
}

fn version_list(records: &[VersionRecord]) -> Result<FlexList, ProviderError> {
    FlexList::build(&records.iter().map(VersionRecord::leaf).collect::<Vec<_>>()).map_err(|e| corrupt("versions", e))
}

fn wire_lookup(answer: &LookupProof) -> WireLookup {
    WireLookup {
        index: answer.index,
        entries: answer.entries.iter().map(|e| ByteBuf::from(e.to_bytes())).collect(),
        proof: ByteBuf::from(proof_bytes(answer.proof.as_ref())),
    }
}
