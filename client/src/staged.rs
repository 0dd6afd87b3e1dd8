//! A put in two steps, so that many puts of one client run at once on its one root (Iris's
//! portal serves many applications): the upload is staged outside the commit lock, and only
//! the commit, a short request, is serialised.
//!
//! 1. The name's latest version is proven against the root of the moment; the new version
//!    continues its nonces. Puts of one name wait for each other ([`NameLocks`]): two at
//!    once would build on the same version and one would be refused at its commit.
//! 2. The blocks are tagged and sent (`stage`); the provider stores them and checks them
//!    against the record, holding no lock.
//! 3. Under the commit lock: when the root moved since step 1 (another name's commit), the
//!    name's state is proven again at the root now. A name whose latest version changed
//!    meanwhile (an edit or remove of it by this client; a prune of older versions is no
//!    change to it) is a conflict: the staged upload is dropped, nothing is committed. Then the intent is recorded and `commit-staged` sent, and its
//!    answer is checked like a put's.
//!
//! A crash between the steps leaves a staged upload that never commits (the provider drops
//! it); a crash after the intent is settled like any change.

use crate::chunking::Cutting;
use crate::error::ClientError;
use crate::intent::{new_attempt, Intent, Planned};
use crate::ledger::Committing;
use crate::root::Root;
use crate::upload::Transfer;
use crate::upload::{NewVersion, PutUpload};
use crate::verify::{self, Verified};
use crate::Client;
use serde_bytes::ByteBuf;
use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use vouch_core::namespace::{Change, Found, VersionRecord};
use vouch_core::por::copy::is_por_file;
use vouch_proto::{CommitStagedRequest, Committed, ErrorCode, Located, LookupRequest, Op, StagedUpload};

/// One async lock per name that has a put in progress.
#[derive(Debug, Default)]
pub(crate) struct NameLocks {
    held: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A name's lock, held; the name's entry goes when its last holder or waiter is done.
pub(crate) struct NameGuard<'a> {
    locks: &'a NameLocks,
    name: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl NameLocks {
    pub(crate) async fn lock(&self, name: &str) -> NameGuard<'_> {
        let lock = self.held.lock().expect("name locks").entry(name.to_string()).or_default().clone();
        let guard = Some(lock.clone().lock_owned().await);
        NameGuard { locks: self, name: name.to_string(), lock, guard }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().expect("name locks").len()
    }
}

impl Drop for NameGuard<'_> {
    fn drop(&mut self) {
        self.guard.take();
        let mut held = self.locks.held.lock().expect("name locks");
        // Clones are made under this map's lock: two strong counts are the map's and ours.
        if Arc::strong_count(&self.lock) == 2 {
            held.remove(&self.name);
        }
    }
}

/// What a conditional put ([`Client::put_expecting`]) expects of its name's latest version.
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

impl Client {
    /// [`Client::put`] (see the module documentation). A name that is a PoR file takes the
    /// locked path: its copy in the PoR log is written under the commit lock.
    pub(crate) async fn put_staged(
        &self,
        name: &str,
        reader: impl Read + Send + 'static,
        (cutting, expected): (Cutting, Option<Expected>),
        progress: impl Fn(u64) + Send + 'static,
        started: Instant,
    ) -> Result<Transfer, ClientError> {
        self.settle().await?;
        let _one_put_of_this_name = self.uploading.lock(name).await;
        let (found, latest, basis) = self.proven_latest(name).await?;
        if latest.as_ref().is_some_and(|v| is_por_file(&v.entry.file)) {
            let commit = self.begin_commit().await?;
            return self.put_locked(&commit, name, reader, (cutting, false, expected), progress, started).await;
        }
        // Checked under the name's lock; the commit holds it to this state, since it refuses
        // a name whose latest version changed since this lookup (`proven_again`).
        Expected::check(expected.as_ref(), name, latest.as_ref())?;
        self.same_scheme(name, latest.as_ref().map(|v| &v.record))?;
        let attempt = new_attempt();
        let (tx, rx) = tokio::sync::mpsc::channel(2048);
        let upload = PutUpload {
            keys: self.keys.clone(),
            ledger: self.ledger.clone(),
            name: name.into(),
            old: basis,
            version: NewVersion::after(latest.as_ref(), false),
            cutting,
            frames: tx,
            attempt,
            keep_blocks: self.cache.written_limit(),
            commits: false,
        };
        let producer = tokio::task::spawn_blocking(move || upload.run(reader, progress));
        let staged = self
            .remote
            .call_streaming::<StagedUpload>(Op::Stage, tokio_stream::wrappers::ReceiverStream::new(rx))
            .await;
        let produced =
            producer.await.map_err(|e| ClientError::Io { what: "upload".into(), source: std::io::Error::other(e) })?;
        staged?;
        let (record, blocks, kept) = produced?;

        let commit = self.begin_commit().await?;
        let found = self.proven_again(&commit, name, (basis, found), latest.as_ref()).await?;
        let intent = Intent { old: self.ledger.root(), name: name.into(), change: Planned::Put(record), attempt };
        self.ledger.intend(intent)?;
        let request =
            CommitStagedRequest { name: name.into(), attempt, record: ByteBuf::from(record.to_bytes().to_vec()) };
        let answer: Committed = self.remote.call(&request).await.map_err(|e| e.absence_unproven(name))?;
        self.accept_commit(&commit, name, &found, &Change::Append(record), &answer)?;
        self.cache.keep_written(&record, &kept);
        Ok(Transfer {
            name: name.into(),
            version: record.number,
            bytes: record.len,
            blocks,
            proof_bytes: crate::upload::committed_proof_bytes(&answer),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The proven latest version of `name` (`None`: proven absent), its lookup, and the root
    /// they were proven against.
    async fn proven_latest(&self, name: &str) -> Result<(Found, Option<Verified>, Root), ClientError> {
        let view = self.reading();
        let asked = self.remote.call(&LookupRequest { name: name.into(), version: None }).await;
        let located: Located = asked.map_err(|e| e.absence_unproven(name))?;
        let ((found, latest), root) =
            self.check(&view, |root| verify::located(root, name, None, &located).map(|v| (v, *root))).await?;
        Ok((found, latest, root))
    }

    /// The lookup of `name` at the root now, the commit lock held: the one proven before the
    /// upload when the root is still the one it was proven against, else proven again and
    /// required to show the same latest version.
    async fn proven_again(
        &self,
        _commit: &Committing<'_>,
        name: &str,
        (root, found): (Root, Found),
        latest: Option<&Verified>,
    ) -> Result<Found, ClientError> {
        if self.ledger.root() == root {
            return Ok(found);
        }
        let asked = self.remote.call(&LookupRequest { name: name.into(), version: None }).await;
        let located: Located = asked.map_err(|e| e.absence_unproven(name))?;
        let (found_now, latest_now) = verify::located(&self.ledger.root(), name, None, &located)?;
        // What the upload built on: the file, the version's number and its first nonce (a
        // prune of older versions changes the entry, not these).
        let basis = |v: Option<&Verified>| v.map(|v| (v.entry.file, v.entry.next_version, v.record.next_nonce));
        if basis(latest_now.as_ref()) != basis(latest) {
            return Err(ClientError::Refused {
                code: ErrorCode::Conflict,
                message: format!("{name} changed while its new version was uploading; put it again"),
            });
        }
        Ok(found_now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_lock_excludes_its_name_only_and_goes_when_released() {
        let locks = NameLocks::default();
        let a = locks.lock("a").await;
        let _b = locks.lock("b").await;
        assert_eq!(locks.len(), 2);
        let waiter = tokio::time::timeout(std::time::Duration::from_millis(50), locks.lock("a")).await;
        assert!(waiter.is_err(), "a second holder of one name must wait");
        assert_eq!(locks.len(), 2, "a waiter that gave up leaves the entry to its holder");
        drop(a);
        assert_eq!(locks.len(), 1);
        let again = locks.lock("a").await;
        drop(again);
        assert_eq!(locks.len(), 1);
    }
}
