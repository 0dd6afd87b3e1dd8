//! A put in two steps, so that many puts of one client run at once on its one root (Iris's
//! portal serves many applications): the upload is staged outside the commit lock, and only
//! the commit, a short request, is serialised.
//!
//! 1. The name's latest version is proven against the root of the moment; the new version
//!    continues its nonces. Puts of one name wait for each other ([`crate::lock::NameLocks`]):
//!    two at once would build on the same version and one would be refused at its commit.
//! 2. The blocks are tagged and sent (`stage`); the provider stores them and checks them
//!    against the record, holding no lock.
//! 3. Under the commit lock, with the other puts waiting for it then (a group commit, see
//!    [`crate::group`]), the intent is recorded and `commit-staged` sent. Its answer
//!    carries the name's lookup at the provider's state before the commit, checked against
//!    the root now (when the root did not move since step 1, it must show the state proven
//!    there); its commit proof is checked like a put's. A name whose latest version changed
//!    meanwhile (an edit or remove of it by this client; a prune of older versions is no
//!    change to it) cannot take the version, which follows the latest it was proven to
//!    have: the provider refuses it as a conflict, and the staged upload is dropped. A
//!    provider that applied it anyway has no proof that checks (the version's number and
//!    file must follow the entry the lookup shows).
//!
//! A crash between the steps leaves a staged upload that never commits (the provider drops
//! it); a crash after the intent is settled like any change.

use crate::chunking::Cutting;
use crate::commit::Commit;
use crate::error::ClientError;
use crate::intent::new_attempt;
use crate::put::{Expected, Put};
use crate::root::Root;
use crate::upload::Transfer;
use crate::upload::{frame_channel, stage, NewVersion, PutUpload};
use crate::verify::{self, Verified};
use crate::waiting::StagedCommit;
use std::io::Read;
use std::time::Instant;
use vouch_core::namespace::Found;
use vouch_core::por::copy::is_por_file;
use vouch_proto::{Located, LookupRequest};

impl Put<'_> {
    /// The put, staged (see the module documentation). A name that is a PoR file takes the
    /// locked path ([`Commit::put`]): its copy in the PoR log is written under the commit lock.
    pub(crate) async fn staged(
        &self,
        reader: impl Read + Send + 'static,
        cutting: Cutting,
        progress: impl Fn(u64) + Send + 'static,
        started: Instant,
    ) -> Result<Transfer, ClientError> {
        let (client, name, expected) = (self.client, self.name, self.options.expected);
        Commit::settle_pending(client).await?;
        let _one_put_of_this_name = client.uploading.lock(name).await;
        let (found, latest, basis) = self.proven_latest().await?;
        if latest.as_ref().is_some_and(|v| is_por_file(&v.entry.file)) {
            let commit = Commit::begin(client).await?;
            return commit.put(name, reader, (cutting, false, expected), progress, started).await;
        }
        // Checked under the name's lock; the commit holds it to this state: a name whose latest
        // version changed since this lookup cannot take the new version (step 3 above).
        Expected::check(expected.as_ref(), name, latest.as_ref())?;
        client.keys.same_scheme(name, latest.as_ref().map(|v| &v.record))?;
        let attempt = new_attempt();
        let (frames, sent) = frame_channel();
        let upload = PutUpload {
            keys: client.keys.clone(),
            name: name.into(),
            version: NewVersion::after(latest.as_ref(), false),
            cutting,
            frames,
            attempt,
            keep_blocks: client.cache.written_limit(),
        };
        let (record, blocks, kept) = stage(&client.remote, upload, sent, reader, progress).await?;
        // Committed with the other puts waiting then (`crate::group`). A root moved since the
        // lookup (another name's commit) proves the name again through the lookup the
        // commit's answer carries: no second lookup before the commit.
        let put = StagedCommit { name: name.into(), record, attempt, proven: (found, basis) };
        let answer = client.commit_grouped(put).await?;
        client.cache.keep_written(&record, &kept);
        Ok(Transfer {
            name: name.into(),
            version: record.number,
            bytes: record.len,
            blocks,
            proof_bytes: crate::upload::committed_proof_bytes(&answer),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The proven latest version of the name (`None`: proven absent), its lookup, and the root
    /// they were proven against.
    async fn proven_latest(&self) -> Result<(Found, Option<Verified>, Root), ClientError> {
        let name = self.name;
        let reads = self.client.reads();
        let asked = self.client.remote.call(&LookupRequest { name: name.into(), version: None }).await;
        let located: Located = asked.map_err(|e| e.absence_unproven(name))?;
        let ((found, latest), root) =
            reads.check(|root| verify::located(root, name, None, &located).map(|v| (v, *root))).await?;
        Ok((found, latest, root))
    }
}
