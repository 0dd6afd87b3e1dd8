//! Reads whose answers are checked against the roots of a view ([`Reads`]): a read's (the
//! root when it was sent, or one adopted since: [`Client::reads`]) or a commit's (the current
//! root, which cannot move under it: [`Commit::reads`]). The concurrency model they serve is
//! in the crate documentation.
//!
//! The client's reads are here: [`Client::version`], [`Client::get`], [`Client::list`],
//! [`Client::log`] and [`Client::audit`]. Each settles a change left unsettled first, and is
//! served from the cache when it holds the answer under the current root (see
//! [`crate::cache`]).

use crate::client::Client;
use crate::commit::Commit;
use crate::error::ClientError;
use crate::keys::Keys;
use crate::ledger::{Committing, Snapshot};
use crate::root::Root;
use crate::upload::Transfer;
use crate::verify::{self, valid_name, RangeParts, Verified};
use crate::violation::ViolationKind;
use std::io::Write;
use std::ops::Range;
use std::time::Instant;
use vouch_core::namespace::{EntryRecord, VersionRecord};
use vouch_core::pdp::Challenge;
use vouch_proto::{
    AuditAnswer, AuditRequest, ListRequest, Listing, Located, Log, LogRequest, LookupRequest, Op, ReadChunk, ReadFrame,
    ReadRequest,
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

/// A name's absence, proven by the provider (not its bare word).
fn proven_absent(name: &str) -> ClientError {
    ClientError::NotFound(format!("{name} (the provider proved it absent)"))
}

/// Against which roots an answer is checked.
enum View<'a> {
    /// Inside a commit (its lock held): the root cannot move, the current one is the truth.
    Committing,
    /// A read: the root when it was sent, or one adopted since.
    Reading(Snapshot<'a>),
}

/// Reads of the provider's answers checked against the roots of one view: a read's
/// ([`Client::reads`]) or a commit's ([`Commit::reads`]). A read's view holds the roots
/// adopted while it lives: drop it once the answers it checks are in.
pub(crate) struct Reads<'a> {
    client: &'a Client,
    view: View<'a>,
}

impl Client {
    /// A read's view: the root now and those adopted while it runs.
    pub(crate) fn reads(&self) -> Reads<'_> {
        Reads { client: self, view: View::Reading(self.ledger.snapshot()) }
    }

    /// The verified latest (or given) version of `name`.
    pub async fn version(&self, name: &str, want: Option<u64>) -> Result<Verified, ClientError> {
        valid_name(name)?;
        Commit::settle_pending(self).await?;
        if let Some(kept) = self.cache.lookup(&self.ledger.root(), name, want) {
            self.cache.count(true);
            return kept.ok_or_else(|| proven_absent(name));
        }
        self.cache.count(false);
        let (found, checked) = self.reads().version_at(name, want).await?;
        self.cache.keep_lookup(&checked, &self.ledger.root(), name, want, found.as_ref());
        found.ok_or_else(|| proven_absent(name))
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
        Commit::settle_pending(self).await?;
        if let Some(kept) = cached_get(self, name, want, range.clone(), out)? {
            return Ok(Transfer { seconds: started.elapsed().as_secs_f64(), ..kept });
        }
        self.cache.count(false);
        let mut proof_bytes = 0u64;
        let mut blocks = 0u64;
        let (verified, written) = self
            .reads()
            .read_blocks(name, want, range, |chunk_blocks, chunk| {
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

    /// Every name, verified complete.
    pub async fn list(&self) -> Result<Vec<EntryRecord>, ClientError> {
        Commit::settle_pending(self).await?;
        if let Some(kept) = self.cache.listing(&self.ledger.root()) {
            self.cache.count(true);
            return Ok(kept);
        }
        self.cache.count(false);
        let (listing, checked) = self.reads().list_at().await?;
        self.cache.keep_listing(&checked, &self.ledger.root(), &listing);
        Ok(listing)
    }

    /// Every kept version of `name`, oldest first, verified complete.
    pub async fn log(&self, name: &str) -> Result<Vec<VersionRecord>, ClientError> {
        valid_name(name)?;
        Commit::settle_pending(self).await?;
        self.reads().log(name).await
    }

    /// A possession challenge of `count` random offsets over a version of `name`.
    pub async fn audit(&self, name: &str, want: Option<u64>, count: u32) -> Result<AuditReport, ClientError> {
        valid_name(name)?;
        if count == 0 || count > 10_000 {
            return Err(ClientError::BadInput("a challenge has 1 to 10000 offsets".into()));
        }
        let started = Instant::now();
        let seed: [u8; 32] = rand::random();
        Commit::settle_pending(self).await?;
        let reads = self.reads();
        let asked = self.remote.call(&AuditRequest { name: name.into(), version: want, seed, count }).await;
        let answer: AuditAnswer = reads.absent_checked(name, want, asked).await?;
        let v = match reads.check(|root| verify::located(root, name, want, &answer.located)).await? {
            (_, Some(v)) => v,
            (_, None) => return Err(proven_absent(name)),
        };
        drop(reads);
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

impl Commit<'_> {
    /// Reads under this commit: checked against the current root alone.
    pub(crate) fn reads(&self) -> Reads<'_> {
        Reads::committed(self.client, &self.lock)
    }
}

impl<'a> Reads<'a> {
    /// Reads of `client` while its commit lock is held (`lock`, by a [`Commit`] or a step of
    /// the PoR log under one): the current root is the truth.
    pub(crate) fn committed(client: &'a Client, _lock: &Committing<'_>) -> Reads<'a> {
        Reads { client, view: View::Committing }
    }

    /// `check` of an answer under the roots of the view, newest first: the first that does not
    /// fail as a violation wins; when every one does, the newest one's violation is the
    /// answer's. A read whose answer fails while the root may have moved under it (a commit
    /// adopted since, in flight, or unsettled) waits for that commit, settles it, and checks
    /// again with the roots adopted by then: an answer from the provider's state after a
    /// concurrent commit is not a lie.
    pub(crate) async fn check<T>(&self, check: impl Fn(&Root) -> Result<T, ClientError>) -> Result<T, ClientError> {
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
        match &self.view {
            View::Committing => under_roots(&[self.client.ledger.root()]),
            View::Reading(snapshot) => match under_roots(&snapshot.roots()) {
                Err(e) if e.violation_kind().is_some() && snapshot.moved() => {
                    let _settled = Commit::begin(self.client).await?;
                    under_roots(&snapshot.roots())
                }
                done => done,
            },
        }
    }

    /// The verified latest (or given) version of `name`.
    pub(crate) async fn version(&self, name: &str, want: Option<u64>) -> Result<Verified, ClientError> {
        self.version_at(name, want).await?.0.ok_or_else(|| proven_absent(name))
    }

    /// The version of `name` (`None`: proven absent), and the root it was checked against.
    async fn version_at(&self, name: &str, want: Option<u64>) -> Result<(Option<Verified>, Root), ClientError> {
        let asked = self.client.remote.call(&LookupRequest { name: name.into(), version: want }).await;
        let located: Located = self.absent_checked(name, want, asked).await?;
        let ((_, found), root) =
            self.check(|root| verify::located(root, name, want, &located).map(|v| (v, *root))).await?;
        Ok((found, root))
    }

    /// The provider's bare "not found" (an error, not a proof) for a version of `name`. The
    /// latest version is never missing (an existing name has one; an absent name is proven
    /// absent), so that answer is a lie. A version asked by number is checked against the
    /// name's log, which is proven complete: a version the log lists was hidden.
    async fn absent_checked<T>(
        &self,
        name: &str,
        want: Option<u64>,
        result: Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        match (result, want) {
            (Err(e @ ClientError::NotFound(_)), None) => {
                Err(e.absence_unproven(&format!("the latest version of {name}")))
            }
            (Err(ClientError::NotFound(_)), Some(v)) => Err(verify::unlisted_version(name, v, &self.log(name).await?)),
            (result, _) => result,
        }
    }

    /// Every name, verified complete.
    pub(crate) async fn list(&self) -> Result<Vec<EntryRecord>, ClientError> {
        Ok(self.list_at().await?.0)
    }

    /// Every name, verified complete, and the root it was checked against.
    async fn list_at(&self) -> Result<(Vec<EntryRecord>, Root), ClientError> {
        let listing: Listing =
            self.client.remote.call(&ListRequest {}).await.map_err(|e| e.absence_unproven("the namespace"))?;
        self.check(|root| verify::listing(root, &listing).map(|l| (l, *root))).await
    }

    /// Every kept version of `name`, oldest first, verified complete.
    pub(crate) async fn log(&self, name: &str) -> Result<Vec<VersionRecord>, ClientError> {
        let log: Log =
            self.client.remote.call(&LogRequest { name: name.into() }).await.map_err(|e| e.absence_unproven(name))?;
        self.check(|root| verify::log(root, name, &log)).await
    }

    /// The verified blocks covering `range`, chunk by chunk: `each` gets, per block, the part of
    /// it inside the range and the block's (start, whole data). The view is let go once the
    /// header is verified: the chunks are checked against the version's own root.
    pub(crate) async fn read_blocks(
        self,
        name: &str,
        want: Option<u64>,
        range: Option<Range<u64>>,
        mut each: impl FnMut(RangeParts<'_>, &ReadChunk) -> Result<(), ClientError>,
    ) -> Result<(Verified, u64), ClientError> {
        valid_name(name)?;
        let client = self.client;
        let key = client.keys.owner()?;
        let (start, end) = range.map_or((0, u64::MAX), |r| (r.start, r.end));
        if start > end {
            return Err(ClientError::BadInput(format!("empty range {start}..{end}")));
        }
        let req = ReadRequest { name: name.into(), version: want, start, end };
        let opened = async {
            let mut frames = client.remote.frames(Op::Read, &req).await?;
            match frames.next::<ReadFrame>().await? {
                Some(ReadFrame::Located(l)) => Ok((frames, l)),
                Some(ReadFrame::Error(e)) => Err(ClientError::from_server(e.code, e.message)),
                _ => Err(ClientError::violation(
                    ViolationKind::MalformedAnswer,
                    "a read must begin with the version's proof",
                )),
            }
        };
        let (frames, located) = self.absent_checked(name, want, opened.await).await?;
        let ((_, found), checked) =
            self.check(|root| verify::located(root, name, want, &located).map(|v| (v, *root))).await?;
        drop(self);
        client.cache.keep_lookup(&checked, &client.ledger.root(), name, want, found.as_ref());
        let verified = found.ok_or_else(|| proven_absent(name))?;
        let mut read = verify::ReadCheck::new(verified.record, start, end)?;
        let mut frames = frames.read_ahead::<ReadFrame>();
        while let Some(frame) = frames.next().await? {
            let chunk = match frame {
                ReadFrame::Chunk(c) => c,
                ReadFrame::Error(e) => return Err(read.stream_error(name, e)),
                ReadFrame::Located(_) => {
                    return Err(ClientError::violation(ViolationKind::MalformedAnswer, "a second header in a read"))
                }
            };
            let parts = read.chunk(key, &chunk)?;
            client.cache.keep_blocks(&verified.record, &parts);
            each(parts, &chunk)?;
        }
        Ok((verified, read.finish()?))
    }
}

/// [`Client::get`] from the cache, when it holds the version's lookup under the current root
/// and every block of the range; `None` (nothing written) otherwise.
fn cached_get(
    client: &Client,
    name: &str,
    want: Option<u64>,
    range: Option<Range<u64>>,
    out: &mut (impl Write + Send),
) -> Result<Option<Transfer>, ClientError> {
    valid_name(name)?;
    let cache = &client.cache;
    let Some(kept) = cache.lookup(&client.ledger.root(), name, want) else { return Ok(None) };
    let Some(verified) = kept else {
        cache.count(true);
        return Err(proven_absent(name));
    };
    let range = range.unwrap_or(0..u64::MAX);
    let mut parts = Vec::new();
    let Some(blocks) = cache.read(&verified, &range, &mut parts) else { return Ok(None) };
    cache.count(true);
    let mut bytes = 0;
    for part in parts {
        out.write_all(&part).map_err(ClientError::io("writing the output"))?;
        bytes += part.len() as u64;
    }
    let version = verified.record.number;
    Ok(Some(Transfer { name: name.into(), version, bytes, blocks, proof_bytes: 0, seconds: 0.0 }))
}
