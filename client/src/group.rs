//! Group commit of staged puts: the puts whose uploads are staged and that wait for the
//! client's commit lock are committed together when it is free, as one `commit-staged` of
//! several puts. One intent names them all, one request carries them, the provider makes the
//! ones it applies durable in one write, and the client writes one root; each put costs a
//! share of one commit instead of a whole one.
//!
//! Whoever takes the commit lock takes every put waiting then (at most `MAX_GROUP`, each
//! name once) and commits them for all; a put taken by another's group waits for its answer.
//! The provider applies the puts in their order, each over the namespace the ones before it
//! left, and answers each on its own: the client checks the committed ones as a chain of
//! commit proofs from its root (each against the root after the one before, a put's lookup
//! bound to the root its upload began at while the root has not moved), takes a refused one
//! as that put's refusal (it changed nothing), and adopts the root after the last. An answer
//! that does not check out fails every put of the group and leaves the intent to be settled,
//! as a single commit's does (see `crate::intent`); so does a lost one.

use crate::client::Client;
use crate::commit::Commit;
use crate::error::ClientError;
use crate::intent::{Intended, Intent, Planned};
use crate::verify;
use crate::violation::ViolationKind;
use crate::waiting::{Reply, StagedCommit};
use serde_bytes::ByteBuf;
use tokio::sync::oneshot;
use vouch_core::namespace::Change;
use vouch_proto::{CommitStagedRequest, Committed, CommittedPuts, Outcome, StagedPut};

impl Client {
    /// How many staged puts wait for the commit lock now, to be committed together by the
    /// next commit (a gauge).
    pub fn puts_waiting_to_commit(&self) -> usize {
        self.waiting.len()
    }

    /// Commits a staged put with the others waiting when the commit lock is taken (see the
    /// module documentation).
    pub(crate) async fn commit_grouped(&self, put: StagedCommit) -> Result<Committed, ClientError> {
        let (reply, answer) = oneshot::channel();
        let place = self.waiting.join(put, reply);
        // A put still waiting after a group was committed was left for the next one (its
        // name was in that group already): its turn comes at the next taking of the lock.
        while place.is_waiting() {
            match self.take_the_lock_and_commit_a_group().await {
                Ok(()) => {}
                Err(e) if place.withdraw() => return Err(e),
                // Taken by a group already: its answer comes from there.
                Err(_) => {}
            }
        }
        drop(place);
        answer.await.unwrap_or_else(|_| {
            Err(ClientError::Io {
                what: "the commit".into(),
                source: std::io::Error::other("the group commit this put joined failed before its answer"),
            })
        })
    }

    /// Waits for the commit lock and commits the puts waiting then, on a task of its own: a
    /// group's commit goes on when the caller that began it stops waiting (an S3 application
    /// that hung up, say), so the other puts of the group get their outcomes, and its intent
    /// is settled by its own answer. A caller that stops waiting before the group is taken
    /// leaves the queue (its put is not committed); the task then commits what waits, if
    /// anything.
    async fn take_the_lock_and_commit_a_group(&self) -> Result<(), ClientError> {
        let client = self.handle();
        let task = tokio::spawn(async move {
            let commit = Commit::begin(&client).await?;
            let group = client.waiting.take();
            if !group.is_empty() {
                commit.commit_group(group).await;
            }
            Ok(())
        });
        task.await.map_err(|e| ClientError::Io {
            what: "the commit".into(),
            source: std::io::Error::other(format!("the group commit's task: {e}")),
        })?
    }
}

impl Commit<'_> {
    /// Commits `group` and answers each of its puts.
    async fn commit_group(&self, group: Vec<(StagedCommit, Reply)>) {
        let (puts, replies): (Vec<StagedCommit>, Vec<Reply>) = group.into_iter().unzip();
        match self.commit_puts(&puts).await {
            Ok(outcomes) => replies.into_iter().zip(outcomes).for_each(|(reply, outcome)| drop(reply.send(outcome))),
            Err(e) => replies.into_iter().for_each(|reply| drop(reply.send(Err(e.copied())))),
        }
    }

    /// Commits staged puts in one `commit-staged`, the commit lock held: each put's outcome.
    pub(crate) async fn commit_puts(
        &self,
        puts: &[StagedCommit],
    ) -> Result<Vec<Result<Committed, ClientError>>, ClientError> {
        let client = self.client;
        let old = client.ledger.root();
        let changes = puts
            .iter()
            .map(|p| Intended { name: p.name.clone(), change: Planned::Put(p.record), attempt: p.attempt })
            .collect();
        client.ledger.intend(Intent { old, changes })?;
        let request = CommitStagedRequest {
            puts: puts
                .iter()
                .map(|p| StagedPut {
                    name: p.name.clone(),
                    attempt: p.attempt,
                    record: ByteBuf::from(p.record.to_bytes().to_vec()),
                })
                .collect(),
        };
        let first = &puts[0].name;
        let answer: CommittedPuts = client.remote.call(&request).await.map_err(|e| e.absence_unproven(first))?;
        if answer.puts.len() != puts.len() {
            let detail = format!("{} outcomes for a commit of {} puts", answer.puts.len(), puts.len());
            return Err(ClientError::violation(ViolationKind::MalformedAnswer, detail));
        }
        let mut root = old;
        let mut carried = Vec::new();
        let mut outcomes = Vec::with_capacity(puts.len());
        for (put, outcome) in puts.iter().zip(answer.puts) {
            match outcome {
                Outcome::Committed(committed) => {
                    let (found, basis) = &put.proven;
                    let found = (root == *basis).then_some(found);
                    let change = Change::Append(put.record);
                    let (new, entry) = verify::commit(&root, &put.name, found, &change, &committed)?;
                    carried.push((put.name.as_str(), root, new, entry));
                    root = new;
                    outcomes.push(Ok(committed));
                }
                // Refused, it changed nothing: the next put is proven over the same root.
                Outcome::Refused(e) => {
                    outcomes.push(Err(ClientError::from_server(e.code, e.message).absence_unproven(&put.name)))
                }
            }
        }
        match root == old {
            // Nothing applied: the intent goes, and the provider's word that it refused them
            // is all there is to it (a provider that applied one anyway is caught by the next
            // answer, which comes from a root this client never held).
            true => client.ledger.forget(&self.lock)?,
            false => client.ledger.adopt(&self.lock, root)?,
        }
        for (name, from, to, entry) in carried {
            client.cache.carry(&from, &to, name, entry.as_ref());
        }
        Ok(outcomes)
    }
}
