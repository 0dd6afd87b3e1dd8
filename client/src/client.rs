//! The client's operations: transport and orchestration around the pure checks of
//! [`crate::verify`]. Each answer is verified against the namespace root before anything is
//! returned, written or saved; the concurrency model is in the crate documentation.

use crate::cache::{CacheStats, ReadCache};
use crate::chunking::Cutting;
use crate::error::ClientError;
use crate::intent::{new_attempt, Intent, Planned};
use crate::keys::{ClientKey, Keys};
use crate::keys::{KeyChoice, SecretKey};
use crate::ledger::{Committing, Ledger, Snapshot};
use crate::persist::{MemoryState, StateStore};
use crate::remote::Remote;
use crate::root::Root;
use crate::staged::{Expected, NameLocks};
use crate::state::StateDir;
use crate::transport::Transport;
use crate::upload::{committed_proof_bytes, NewVersion, PutUpload, Transfer};
use crate::verify::{self, valid_name, RangeParts, Verified};
use crate::violation::ViolationKind;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use vouch_core::namespace::{Change, EntryRecord, Found, VersionRecord};
use vouch_core::pdp::Challenge;
use vouch_core::por::copy::is_por_file;
use vouch_proto::Op;
use vouch_proto::{
    AuditAnswer, AuditRequest, Committed, ListRequest, Listing, Located, Log, LogRequest, LookupRequest, PruneRequest,
    ReadChunk, ReadFrame, ReadRequest, RemoveRequest,
};

#[derive(Clone, Debug, serde::Serialize)]
pub struct AuditReport {
    pub name: String,
    pub version: u64,
    pub file_bytes: u64,
    pub challenged_offsets: u32,
    pub challenged_blocks: usize,
    pub proof_bytes: usize,
    pub verified: bool,
    pub seconds: f64,
}

/// What a client is made of, without a directory: its key and where its root and intent
/// persist (see [`Client::new`]).
#[derive(Debug)]
pub struct ClientState {
    pub key: ClientKey,
    pub store: Arc<dyn StateStore>,
}

impl ClientState {
    /// A new client's state, in memory: `key` and the empty namespace.
    pub fn in_memory(key: ClientKey) -> ClientState {
        ClientState { key, store: Arc::new(MemoryState::new(Root::empty())) }
    }
}

/// A client: `Send + Sync`, to be shared (`Arc<Client>`) by every task of a process; see the
/// crate documentation for what concurrent calls see.
pub struct Client {
    pub(crate) remote: Remote,
    pub(crate) keys: Arc<Keys>,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) cache: ReadCache,
    /// Names with a put in progress (see `crate::staged`).
    pub(crate) uploading: NameLocks,
    dir: Option<PathBuf>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("dir", &self.dir).field("remote", &self.remote).finish()
    }
}

/// A name's absence, proven by the provider (not its bare word).
fn proven_absent(name: &str) -> ClientError {
    ClientError::NotFound(format!("{name} (the provider proved it absent)"))
}

/// Against which roots an answer is checked.
pub(crate) enum View<'a> {
    /// Inside a commit (its lock held): the root cannot move, the current one is the truth.
    Committing,
    /// A read: the root when it was sent, or one adopted since.
    Reading(Snapshot<'a>),
}

impl Client {
    /// A client over `state`, talking to `remote`: no directory (the state's store keeps the
    /// root and intent, see [`StateStore`]).
    pub fn new(state: ClientState, remote: Remote) -> Result<Client, ClientError> {
        Self::assemble(Keys::Owner(state.key), state.store, remote, None)
    }

    pub(crate) fn assemble(
        keys: Keys,
        store: Arc<dyn StateStore>,
        remote: Remote,
        dir: Option<PathBuf>,
    ) -> Result<Client, ClientError> {
        let ledger = Arc::new(Ledger::load(store)?);
        Ok(Client {
            remote,
            keys: Arc::new(keys),
            ledger,
            cache: ReadCache::default(),
            uploading: NameLocks::default(),
            dir,
        })
    }

    /// Opens the client whose state is in `dir` (and holds its lock while it lives). Open a
    /// directory once per process and share the client: two clients opened on one directory
    /// share its lock but not their roots, so one's commits look like lies to the other.
    pub fn open(dir: &Path) -> Result<Client, ClientError> {
        let state = StateDir::open(dir)?;
        let transport = crate::transport::Transport::from_config(&state.dir, &state.config)?;
        let remote = Remote::with(&state.config.server, &state.secret.token, &transport)?;
        let key = ClientKey::from_secret(&state.secret.key)?;
        let dir = state.dir.clone();
        Self::assemble(Keys::Owner(key), Arc::new(state), remote, Some(dir))
    }

    /// Creates a client state in `dir` (fresh linear key) for the provider at `server`.
    pub fn init(dir: &Path, server: &str, token: &str) -> Result<Client, ClientError> {
        Remote::new(server, token)?;
        StateDir::init(dir, server, token)?;
        Client::open(dir)
    }

    /// The namespace root as saved (before a change left unsettled by a crash is settled: every
    /// operation that talks to the provider settles it first).
    pub fn root(&self) -> Root {
        self.ledger.root()
    }

    /// The namespace root after settling a change left unsettled, if there is one (asks the
    /// provider then): the root to hand to a third-party auditor.
    pub async fn settled_root(&self) -> Result<Root, ClientError> {
        self.settle().await?;
        Ok(self.root())
    }

    /// The owner's key (`None` for a public auditor's client).
    pub fn key(&self) -> Option<&ClientKey> {
        self.keys.owner().ok()
    }

    /// The provider's reported time for the last request (measurements only; not verified).
    pub fn last_server_time(&self) -> Option<std::time::Duration> {
        self.remote.last_server_time()
    }

    /// The provider's URL.
    pub fn server(&self) -> &str {
        self.remote.url()
    }

    pub async fn health(&self) -> Result<vouch_proto::Health, ClientError> {
        self.remote.health().await
    }

    /// A read's view: the root now and those adopted while it runs.
    pub(crate) fn reading(&self) -> View<'_> {
        View::Reading(self.ledger.snapshot())
    }

    /// Waits for the commit lock and settles a change left unsettled: a commit starts from
    /// a settled root.
    pub(crate) async fn begin_commit(&self) -> Result<Committing<'_>, ClientError> {
        let commit = self.ledger.lock().await;
        self.settle_locked(&commit).await?;
        Ok(commit)
    }

    /// `check` of an answer under the roots of `view`, newest first: the first that does not
    /// fail as a violation wins; when every one does, the newest one's violation is the
    /// answer's. A read whose answer fails while the root may have moved under it (a commit
    /// adopted since, in flight, or unsettled) waits for that commit, settles it, and checks
    /// again with the roots adopted by then: an answer from the provider's state after a
    /// concurrent commit is not a lie.
    pub(crate) async fn check<T>(
        &self,
        view: &View<'_>,
        check: impl Fn(&Root) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let under_roots = |roots: &[Root]| {
            let mut first = None;
            for root in roots {
                match check(root) {
                    Err(e) if e.violation_kind().is_some() => first = first.or(Some(e)),
                    done => return done,
                }
            }
            Err(first.expect("a view has at least one root"))
        };
        match view {
            View::Committing => under_roots(&[self.ledger.root()]),
            View::Reading(snapshot) => match under_roots(&snapshot.roots()) {
                Err(e) if e.violation_kind().is_some() && snapshot.moved() => {
                    let commit = self.ledger.lock().await;
                    self.settle_locked(&commit).await?;
                    under_roots(&snapshot.roots())
                }
                done => done,
            },
        }
    }

    /// The verified latest (or given) version of `name`.
    pub async fn version(&self, name: &str, want: Option<u64>) -> Result<Verified, ClientError> {
        valid_name(name)?;
        self.settle().await?;
        if let Some(kept) = self.cache.lookup(&self.ledger.root(), name, want) {
            self.cache.count(true);
            return kept.ok_or_else(|| proven_absent(name));
        }
        self.cache.count(false);
        let (found, checked) = self.version_at(&self.reading(), name, want).await?;
        self.cache.keep_lookup(&checked, &self.ledger.root(), name, want, found.as_ref());
        found.ok_or_else(|| proven_absent(name))
    }

    pub(crate) async fn version_in(
        &self,
        view: &View<'_>,
        name: &str,
        want: Option<u64>,
    ) -> Result<Verified, ClientError> {
        self.version_at(view, name, want).await?.0.ok_or_else(|| proven_absent(name))
    }

    /// The version of `name` (`None`: proven absent), and the root it was checked against.
    async fn version_at(
        &self,
        view: &View<'_>,
        name: &str,
        want: Option<u64>,
    ) -> Result<(Option<Verified>, Root), ClientError> {
        let asked = self.remote.call(&LookupRequest { name: name.into(), version: want }).await;
        let located: Located = self.absent_checked(view, name, want, asked).await?;
        let ((_, found), root) =
            self.check(view, |root| verify::located(root, name, want, &located).map(|v| (v, *root))).await?;
        Ok((found, root))
    }

    /// Keeps up to `bytes` of verified answers (blocks, lookups, the listing) to serve reads
    /// without the provider: the portal's cache (Iris Sec. 7.2); 0, the default, turns it
    /// off. Sound for a client that is its root's only writer, as one opened on a directory
    /// is (see [`crate::cache`]).
    pub fn set_cache(&self, bytes: u64) {
        self.cache.resize(bytes);
    }

    /// The cache's hits, misses and size.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The provider's bare "not found" (an error, not a proof) for a version of `name`. The
    /// latest version is never missing (an existing name has one; an absent name is proven
    /// absent), so that answer is a lie. A version asked by number is checked against the
    /// name's log, which is proven complete: a version the log lists was hidden.
    pub(crate) async fn absent_checked<T>(
        &self,
        view: &View<'_>,
        name: &str,
        want: Option<u64>,
        result: Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        match (result, want) {
            (Err(e @ ClientError::NotFound(_)), None) => {
                Err(e.absence_unproven(&format!("the latest version of {name}")))
            }
            (Err(ClientError::NotFound(_)), Some(v)) => {
                Err(verify::unlisted_version(name, v, &self.log_in(view, name).await?))
            }
            (result, _) => result,
        }
    }

    /// Checks a commit's proofs and, when they hold, records the new root (and forgets the
    /// commit's intent: the change is settled).
    pub(crate) fn accept_commit(
        &self,
        commit: &Committing<'_>,
        name: &str,
        found: &Found,
        change: &Change,
        answer: &Committed,
    ) -> Result<Option<EntryRecord>, ClientError> {
        let old = self.ledger.root();
        let (root, entry) = verify::commit(&old, name, Some(found), change, answer)?;
        self.ledger.adopt(commit, root)?;
        self.cache.carry(&old, &root, name, entry.as_ref());
        Ok(entry)
    }

    /// Stores `reader`'s bytes as a new version of `name` (the first, for a new name).
    pub async fn put(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        block_size: Option<usize>,
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        self.put_as(name, reader, block_size, (false, None), progress).await
    }

    /// [`Client::put`] with retrievability: the version also gets a copy in the client's PoR
    /// log (created at the first use). A new name becomes a PoR file, whose every later
    /// version gets one too; an existing file must be one already.
    pub async fn put_por(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        block_size: Option<usize>,
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        self.put_as(name, reader, block_size, (true, None), progress).await
    }

    /// [`Client::put`] (with retrievability when `por`, as [`Client::put_por`]) that commits
    /// only while `name`'s latest version is the one `expected` says: a conditional write.
    /// Otherwise it is refused (a [`ErrorCode::Conflict`](vouch_proto::ErrorCode::Conflict),
    /// nothing committed): checked under the name's lock before the upload, and held to the
    /// commit, where a name changed meanwhile is refused too.
    pub async fn put_expecting(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        block_size: Option<usize>,
        (por, expected): (bool, Expected),
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        self.put_as(name, reader, block_size, (por, Some(expected)), progress).await
    }

    async fn put_as(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        block_size: Option<usize>,
        (por, expected): (bool, Option<Expected>),
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        let started = Instant::now();
        valid_name(name)?;
        let cutting = Cutting::from_option(block_size).map_err(ClientError::BadInput)?;
        if !por {
            return self.put_staged(name, reader, (cutting, expected), progress, started).await;
        }
        let commit = self.begin_commit().await?;
        self.put_locked(&commit, name, reader, (cutting, por, expected), progress, started).await
    }

    /// A put, the commit lock held: the name's proven state, the upload, the commit's check.
    pub(crate) async fn put_locked(
        &self,
        commit: &Committing<'_>,
        name: &str,
        reader: impl Read + Send + 'static,
        (cutting, por, expected): (Cutting, bool, Option<Expected>),
        progress: impl Fn(u64) + Send + 'static,
        started: Instant,
    ) -> Result<Transfer, ClientError> {
        let located: Located = self
            .remote
            .call(&LookupRequest { name: name.into(), version: None })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let (found, latest) = verify::located(&self.ledger.root(), name, None, &located)?;
        // The commit lock is held from here to the commit: the state checked is the one
        // committed over.
        Expected::check(expected.as_ref(), name, latest.as_ref())?;
        self.same_scheme(name, latest.as_ref().map(|v| &v.record))?;
        let por_file = match &latest {
            Some(v) if por && !is_por_file(&v.entry.file) => {
                return Err(ClientError::BadInput(format!(
                    "{name} was stored without --por; a file has a PoR copy from its first version on \
                     (remove it, or put under another name)"
                )))
            }
            Some(v) => is_por_file(&v.entry.file),
            None => por,
        };
        if por_file {
            self.por().owe_copy(commit, name).await?;
        }
        // Counted in frame parts (about two per block): a few frames in flight.
        let (tx, rx) = tokio::sync::mpsc::channel(2048);
        let upload = PutUpload {
            keys: self.keys.clone(),
            ledger: self.ledger.clone(),
            name: name.into(),
            old: self.ledger.root(),
            version: NewVersion::after(latest.as_ref(), por_file),
            cutting,
            frames: tx,
            attempt: new_attempt(),
            // A PoR copy of a version that fits in memory is made from its blocks as sent (a
            // larger one is read back a batch at a time); the cache takes a version that fits it.
            keep_blocks: match por_file {
                true => Some(crate::por::POR_KEEP_BYTES.max(self.cache.written_limit().unwrap_or(0))),
                false => self.cache.written_limit(),
            },
            commits: true,
        };
        let producer = tokio::task::spawn_blocking(move || upload.run(reader, progress));
        let answer =
            self.remote.call_streaming::<Committed>(Op::Put, tokio_stream::wrappers::ReceiverStream::new(rx)).await;
        let produced =
            producer.await.map_err(|e| ClientError::Io { what: "upload".into(), source: std::io::Error::other(e) })?;
        let answer = answer.map_err(|e| e.absence_unproven(name))?;
        let (record, blocks, kept) = produced?;
        self.accept_commit(commit, name, &found, &Change::Append(record), &answer)?;
        self.cache.keep_written(&record, &kept);
        if por_file {
            self.por().pay_copy(commit, name, &record, Some(kept)).await?;
        }
        Ok(Transfer {
            name: name.into(),
            version: record.number,
            bytes: record.len,
            blocks,
            proof_bytes: committed_proof_bytes(&answer),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// A new version of `name` is tagged like the versions before it (a key never changes
    /// scheme; a record of another is not this client's).
    pub(crate) fn same_scheme(&self, name: &str, latest: Option<&VersionRecord>) -> Result<(), ClientError> {
        match latest {
            Some(r) if r.scheme != self.keys.scheme() => Err(ClientError::BadInput(format!(
                "{name} is tagged with the {:?} scheme, this client's key is {:?}",
                r.scheme,
                self.keys.scheme()
            ))),
            _ => Ok(()),
        }
    }

    /// Streams the verified bytes `range` of a version of `name` into `out`. Each chunk is
    /// checked (list proof, tags, lengths, order) before it is written; a cut-short stream is
    /// an error after the verified prefix.
    pub async fn get(
        &self,
        name: &str,
        want: Option<u64>,
        range: Option<Range<u64>>,
        out: &mut (impl Write + Send),
    ) -> Result<Transfer, ClientError> {
        let started = Instant::now();
        self.settle().await?;
        if let Some(kept) = self.cached_get(name, want, range.clone(), out)? {
            return Ok(Transfer { seconds: started.elapsed().as_secs_f64(), ..kept });
        }
        self.cache.count(false);
        let mut proof_bytes = 0u64;
        let mut blocks = 0u64;
        let (verified, written) = self
            .read_blocks(self.reading(), name, want, range, |chunk_blocks, chunk| {
                proof_bytes += chunk.proof.len() as u64;
                for (slice, _) in chunk_blocks {
                    out.write_all(slice).map_err(ClientError::io("writing the output"))?;
                    blocks += 1;
                }
                Ok(())
            })
            .await?;
        Ok(Transfer {
            name: name.into(),
            version: verified.record.number,
            bytes: written,
            blocks,
            proof_bytes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// [`Client::get`] from the cache, when it holds the version's lookup under the current root
    /// and every block of the range; `None` (nothing written) otherwise.
    fn cached_get(
        &self,
        name: &str,
        want: Option<u64>,
        range: Option<Range<u64>>,
        out: &mut (impl Write + Send),
    ) -> Result<Option<Transfer>, ClientError> {
        valid_name(name)?;
        let Some(kept) = self.cache.lookup(&self.ledger.root(), name, want) else { return Ok(None) };
        let Some(verified) = kept else {
            self.cache.count(true);
            return Err(proven_absent(name));
        };
        let range = range.unwrap_or(0..u64::MAX);
        let mut parts = Vec::new();
        let Some(blocks) = self.cache.read(&verified, &range, &mut parts) else { return Ok(None) };
        self.cache.count(true);
        let mut bytes = 0;
        for part in parts {
            out.write_all(&part).map_err(ClientError::io("writing the output"))?;
            bytes += part.len() as u64;
        }
        let version = verified.record.number;
        Ok(Some(Transfer { name: name.into(), version, bytes, blocks, proof_bytes: 0, seconds: 0.0 }))
    }

    /// The verified blocks covering `range`, chunk by chunk: `each` gets, per block, the part of
    /// it inside the range and the block's (start, whole data). The view is let go once the
    /// header is verified: the chunks are checked against the version's own root.
    pub(crate) async fn read_blocks(
        &self,
        view: View<'_>,
        name: &str,
        want: Option<u64>,
        range: Option<Range<u64>>,
        mut each: impl FnMut(RangeParts<'_>, &ReadChunk) -> Result<(), ClientError>,
    ) -> Result<(Verified, u64), ClientError> {
        valid_name(name)?;
        let key = self.keys.owner()?;
        let (start, end) = range.map_or((0, u64::MAX), |r| (r.start, r.end));
        if start > end {
            return Err(ClientError::BadInput(format!("empty range {start}..{end}")));
        }
        let req = ReadRequest { name: name.into(), version: want, start, end };
        let opened = async {
            let mut frames = self.remote.frames(Op::Read, &req).await?;
            match frames.next::<ReadFrame>().await? {
                Some(ReadFrame::Located(l)) => Ok((frames, l)),
                Some(ReadFrame::Error(e)) => Err(ClientError::from_server(e.code, e.message)),
                _ => Err(ClientError::violation(
                    ViolationKind::MalformedAnswer,
                    "a read must begin with the version's proof",
                )),
            }
        };
        let (mut frames, located) = self.absent_checked(&view, name, want, opened.await).await?;
        let ((_, found), checked) =
            self.check(&view, |root| verify::located(root, name, want, &located).map(|v| (v, *root))).await?;
        drop(view);
        self.cache.keep_lookup(&checked, &self.ledger.root(), name, want, found.as_ref());
        let verified = found.ok_or_else(|| proven_absent(name))?;
        let mut read = verify::ReadCheck::new(verified.record, start, end)?;
        while let Some(frame) = frames.next::<ReadFrame>().await? {
            let chunk = match frame {
                ReadFrame::Chunk(c) => c,
                ReadFrame::Error(e) => return Err(read.stream_error(name, e)),
                ReadFrame::Located(_) => {
                    return Err(ClientError::violation(ViolationKind::MalformedAnswer, "a second header in a read"))
                }
            };
            let parts = read.chunk(key, &chunk)?;
            self.cache.keep_blocks(&verified.record, &parts);
            each(parts, &chunk)?;
        }
        Ok((verified, read.finish()?))
    }

    /// Every name, verified complete.
    pub async fn list(&self) -> Result<Vec<EntryRecord>, ClientError> {
        self.settle().await?;
        if let Some(kept) = self.cache.listing(&self.ledger.root()) {
            self.cache.count(true);
            return Ok(kept);
        }
        self.cache.count(false);
        let (listing, checked) = self.list_at(&self.reading()).await?;
        self.cache.keep_listing(&checked, &self.ledger.root(), &listing);
        Ok(listing)
    }

    pub(crate) async fn list_in(&self, view: &View<'_>) -> Result<Vec<EntryRecord>, ClientError> {
        Ok(self.list_at(view).await?.0)
    }

    /// Every name, verified complete, and the root it was checked against.
    async fn list_at(&self, view: &View<'_>) -> Result<(Vec<EntryRecord>, Root), ClientError> {
        let listing: Listing =
            self.remote.call(&ListRequest {}).await.map_err(|e| e.absence_unproven("the namespace"))?;
        self.check(view, |root| verify::listing(root, &listing).map(|l| (l, *root))).await
    }

    /// Every kept version of `name`, oldest first, verified complete.
    pub async fn log(&self, name: &str) -> Result<Vec<VersionRecord>, ClientError> {
        valid_name(name)?;
        self.settle().await?;
        self.log_in(&self.reading(), name).await
    }

    pub(crate) async fn log_in(&self, view: &View<'_>, name: &str) -> Result<Vec<VersionRecord>, ClientError> {
        let log: Log =
            self.remote.call(&LogRequest { name: name.into() }).await.map_err(|e| e.absence_unproven(name))?;
        self.check(view, |root| verify::log(root, name, &log)).await
    }

    /// Removes `name` and all its versions.
    pub async fn remove(&self, name: &str) -> Result<(), ClientError> {
        valid_name(name)?;
        let commit = self.begin_commit().await?;
        // Proven present: a "not found" from here on is a lie.
        let latest = self.version_in(&View::Committing, name, None).await?;
        let freed = match is_por_file(&latest.entry.file) {
            true => {
                Some(self.por().owe_delete(&commit, name, &self.log_in(&View::Committing, name).await?, &[]).await?)
            }
            false => None,
        };
        let attempt = new_attempt();
        self.ledger.intend(Intent { old: self.root(), name: name.into(), change: Planned::Remove, attempt })?;
        let answer: Committed = self
            .remote
            .call(&RemoveRequest { name: name.into(), attempt })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let found = Found::At { index: verify::lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        self.accept_commit(&commit, name, &found, &Change::Remove, &answer)?;
        match freed {
            Some(freed) => self.por().pay_delete(freed).await,
            None => Ok(()),
        }
    }

    /// Drops old versions of `name` (never the latest).
    pub async fn prune(&self, name: &str, versions: &[u64]) -> Result<(), ClientError> {
        valid_name(name)?;
        let commit = self.begin_commit().await?;
        let all = self.log_in(&View::Committing, name).await?;
        let latest = self.version_in(&View::Committing, name, None).await?;
        let mut positions = Vec::new();
        for v in versions {
            let p = all
                .iter()
                .position(|r| r.number == *v)
                .ok_or_else(|| ClientError::NotFound(format!("version {v} of {name}")))?;
            if p + 1 == all.len() {
                return Err(ClientError::BadInput("the latest version cannot be pruned".into()));
            }
            positions.push(p as u64);
        }
        let freed = match is_por_file(&latest.entry.file) {
            true => {
                let (mut gone, mut kept) = (Vec::new(), Vec::new());
                for (p, v) in all.iter().enumerate() {
                    let side = if positions.contains(&(p as u64)) { &mut gone } else { &mut kept };
                    side.push(*v);
                }
                Some(self.por().owe_delete(&commit, name, &gone, &kept).await?)
            }
            false => None,
        };
        // Every version pruned is in the proven log: a "not found" from here on is a lie.
        let attempt = new_attempt();
        self.ledger.intend(Intent {
            old: self.root(),
            name: name.into(),
            change: Planned::Prune(positions.clone()),
            attempt,
        })?;
        let answer: Committed = self
            .remote
            .call(&PruneRequest { name: name.into(), versions: versions.to_vec(), attempt })
            .await
            .map_err(|e| e.absence_unproven(&format!("{name} or a version of it")))?;
        let found = Found::At { index: verify::lookup_from_wire(&answer.lookup)?.index, entry: latest.entry };
        self.accept_commit(&commit, name, &found, &Change::Prune(positions), &answer)?;
        match freed {
            Some(freed) => self.por().pay_delete(freed).await,
            None => Ok(()),
        }
    }

    /// A possession challenge of `count` random offsets over a version of `name`.
    pub async fn audit(&self, name: &str, want: Option<u64>, count: u32) -> Result<AuditReport, ClientError> {
        valid_name(name)?;
        if count == 0 || count > 10_000 {
            return Err(ClientError::BadInput("a challenge has 1 to 10000 offsets".into()));
        }
        let started = Instant::now();
        let seed: [u8; 32] = rand::random();
        self.settle().await?;
        let view = self.reading();
        let asked = self.remote.call(&AuditRequest { name: name.into(), version: want, seed, count }).await;
        let answer: AuditAnswer = self.absent_checked(&view, name, want, asked).await?;
        let v = match self.check(&view, |root| verify::located(root, name, want, &answer.located)).await? {
            (_, Some(v)) => v,
            (_, None) => return Err(proven_absent(name)),
        };
        drop(view);
        if let Keys::Public(key) = &*self.keys {
            // Proven under the root, so not the provider's doing: this key cannot audit it.
            if v.record.scheme != key.scheme() {
                return Err(ClientError::BadInput(format!(
                    "{name} version {} is tagged with the {:?} scheme: this public key ({:?}) cannot audit it",
                    v.record.number,
                    v.record.scheme,
                    key.scheme()
                )));
            }
        }
        let blocks = verify::possession(&*self.keys, &v.record, &Challenge::new(seed, count), &answer.proof)?;
        Ok(AuditReport {
            name: name.into(),
            version: v.record.number,
            file_bytes: v.record.len,
            challenged_offsets: count,
            challenged_blocks: blocks,
            proof_bytes: answer.proof.len(),
            verified: true,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

impl Client {
    /// [`Client::init`], and over `https://` trust only the certificate (or CA) in the PEM
    /// file `ca`, copied into the state directory.
    pub fn init_pinned(dir: &Path, server: &str, token: &str, ca: &Path) -> Result<Client, ClientError> {
        Client::create(dir, server, token, Some(ca), KeyChoice::Linear)
    }

    /// Creates a client state in `dir` with a fresh key of the scheme `choice` (an RSA key
    /// takes seconds to generate) for the provider at `server`; over `https://` with `ca`,
    /// trusting only the certificate (or CA) in that PEM file, copied into the directory.
    pub fn create(
        dir: &Path,
        server: &str,
        token: &str,
        ca: Option<&Path>,
        choice: KeyChoice,
    ) -> Result<Client, ClientError> {
        let pem = match ca {
            Some(ca) => Some(std::fs::read(ca).map_err(ClientError::io(format!("reading {}", ca.display())))?),
            None => None,
        };
        let transport = Transport { ca_pem: pem, ..Transport::default() };
        crate::remote::Remote::with(server, token, &transport)?;
        crate::state::check_token(token)?;
        if dir.join("state").exists() {
            return Err(ClientError::State(format!(
                "{}: already initialised (remove it first to start over)",
                dir.display()
            )));
        }
        StateDir::create(dir, server, token, transport.ca_pem.as_deref(), SecretKey::generate(choice)?)?;
        Client::open(dir)
    }
}
