//! Puts: `reader`'s bytes as a new version of a name ([`Client::put`], [`Client::put_with`]).
//! A put takes one of two paths:
//!
//! * staged (`crate::staged`): the upload runs outside the commit lock, and only the commit,
//!   a short request, is serialised;
//! * under the commit lock (`Commit::put`, here): the name's proven state, the upload and
//!   the commit's check, in one commit. A PoR file's put takes it, since its copy in the PoR
//!   log is written under the lock; so does a sync of a name not stored yet.

use crate::chunking::Cutting;
use crate::client::Client;
use crate::commit::Commit;
use crate::error::ClientError;
use crate::intent::new_attempt;
use crate::upload::{committed_proof_bytes, frame_channel, stage, NewVersion, PutUpload, Transfer};
use crate::verify::{self, valid_name, Verified};
use std::io::Read;
use std::time::Instant;
use vouch_core::namespace::VersionRecord;
use vouch_core::por::copy::is_por_file;
use vouch_proto::{ErrorCode, Located, LookupRequest};

/// How [`Client::put_with`] stores a version; the default is [`Client::put`]'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PutOptions {
    /// Blocks of this many bytes (1 byte to 1 MiB); `None`, content-defined blocks.
    pub block_size: Option<usize>,
    /// With retrievability: the version also gets a copy in the client's PoR log (created at
    /// the first use). A new name becomes a PoR file, whose every later version gets one too;
    /// an existing file must be one already.
    pub por: bool,
    /// A conditional write: commit only while the name's latest version is the one this says.
    /// Otherwise the put is refused (a [`ErrorCode::Conflict`], nothing committed): checked
    /// under the name's lock before the upload, and held to the commit, where a name changed
    /// meanwhile is refused too.
    pub expected: Option<Expected>,
}

/// What a conditional put ([`PutOptions::expected`]) expects of its name's latest version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// None: the name is absent.
    Absent,
    /// This one (a name removed and stored again numbers its versions from 1 again: the whole
    /// record, its file and root with its number, tells them apart).
    Latest(VersionRecord),
}

impl Expected {
    /// Refuses a put whose name's proven latest version is `latest` when `expected` says
    /// otherwise (a `Conflict`, as the provider refuses an edit of a version not the latest).
    pub(crate) fn check(expected: Option<&Expected>, name: &str, latest: Option<&Verified>) -> Result<(), ClientError> {
        let holds = match (expected, latest) {
            (None, _) | (Some(Expected::Absent), None) => true,
            (Some(Expected::Latest(want)), Some(v)) => *want == v.record,
            _ => false,
        };
        match holds {
            true => Ok(()),
            false => Err(ClientError::Refused {
                code: ErrorCode::Conflict,
                message: format!("{name} is not in the state the put expected; nothing was stored"),
            }),
        }
    }
}

/// One put of a client: the name and how it is stored.
pub(crate) struct Put<'a> {
    pub(crate) client: &'a Client,
    pub(crate) name: &'a str,
    pub(crate) options: PutOptions,
}

impl Client {
    /// Stores `reader`'s bytes as a new version of `name` (the first, for a new name).
    pub async fn put(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        block_size: Option<usize>,
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        self.put_with(name, reader, PutOptions { block_size, ..PutOptions::default() }, progress).await
    }

    /// [`Client::put`] as `options` say: with retrievability ([`PutOptions::por`]), and
    /// conditional ([`PutOptions::expected`]).
    pub async fn put_with(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        options: PutOptions,
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        Put { client: self, name, options }.run(reader, progress).await
    }
}

impl Put<'_> {
    /// The put, staged unless it makes a PoR copy.
    async fn run(
        self,
        reader: impl Read + Send + 'static,
        progress: impl Fn(u64) + Send + 'static,
    ) -> Result<Transfer, ClientError> {
        let started = Instant::now();
        valid_name(self.name)?;
        let cutting = Cutting::from_option(self.options.block_size).map_err(ClientError::BadInput)?;
        let PutOptions { por, expected, .. } = self.options;
        if !por {
            return self.staged(reader, cutting, progress, started).await;
        }
        let commit = Commit::begin(self.client).await?;
        commit.put(self.name, reader, (cutting, por, expected), progress, started).await
    }
}

impl Commit<'_> {
    /// A put, the commit lock held: the name's proven state, the upload, the commit's check.
    pub(crate) async fn put(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        (cutting, por, expected): (Cutting, bool, Option<Expected>),
        progress: impl Fn(u64) + Send + 'static,
        started: Instant,
    ) -> Result<Transfer, ClientError> {
        let client = self.client;
        let located: Located = client
            .remote
            .call(&LookupRequest { name: name.into(), version: None })
            .await
            .map_err(|e| e.absence_unproven(name))?;
        let (found, latest) = verify::located(&client.ledger.root(), name, None, &located)?;
        // The commit lock is held from here to the commit: the state checked is the one
        // committed over.
        Expected::check(expected.as_ref(), name, latest.as_ref())?;
        client.keys.same_scheme(name, latest.as_ref().map(|v| &v.record))?;
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
            client.por().owe_copy(&self.lock, name).await?;
        }
        let attempt = new_attempt();
        let (frames, sent) = frame_channel();
        let upload = PutUpload {
            keys: client.keys.clone(),
            name: name.into(),
            version: NewVersion::after(latest.as_ref(), por_file),
            cutting,
            frames,
            attempt,
            // A PoR copy of a version that fits in memory is made from its blocks as sent (a
            // larger one is read back a batch at a time); the cache takes a version that fits it.
            keep_blocks: match por_file {
                true => Some(crate::por::POR_KEEP_BYTES.max(client.cache.written_limit().unwrap_or(0))),
                false => client.cache.written_limit(),
            },
        };
        // Staged and committed under the commit lock: the root cannot move in between.
        let (record, blocks, kept) = stage(&client.remote, upload, sent, reader, progress).await?;
        let answer = self.commit_staged(name, &found, record, attempt).await?;
        client.cache.keep_written(&record, &kept);
        if por_file {
            client.por().pay_copy(&self.lock, name, &record, Some(kept)).await?;
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
}
