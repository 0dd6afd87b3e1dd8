//! The file owners' steps (FlexList, DPDP): puts, edits, reads, removes, listings and
//! possession audits, each checked against the owner's truth.

use super::model::Value;
use super::report::{Invariant, SimFailure};
use super::run::{describe, ended, owner_client, Ended, Run, BLOCK, FILES, POR_FILES};
use futures::FutureExt;
use std::io::Cursor;
use std::sync::Arc;
use vouch_client::{ByteEdit, Client, ClientError, PutOptions};

impl Run {
    // ---- files (FlexList, DPDP) ----

    pub(super) fn owner_and_name(&mut self, names: &[&'static str]) -> (usize, &'static str) {
        (self.rng.below(self.owners.len() as u64) as usize, *self.rng.pick(names).unwrap_or(&names[0]))
    }

    pub(super) async fn file_step(&mut self) -> Result<(), SimFailure> {
        let (o, name) = self.owner_and_name(&FILES);
        match self.rng.below(100) {
            0..=29 if self.group_puts.as_mut().is_some_and(|r| r.percent(50)) => self.put_together(o, name).await,
            0..=29 => self.put(o, name, false).await,
            30..=44 => self.edit(o, name).await,
            45..=69 => self.get(o, name).await,
            70..=77 => self.remove(o, name).await,
            78..=84 => self.list(o).await,
            85..=94 => self.audit(o, name).await,
            _ => self.restart_client(o),
        }
    }

    pub(super) fn restart_client(&mut self, o: usize) -> Result<(), SimFailure> {
        let owner = &mut self.owners[o];
        owner.client =
            owner_client(&self.link, owner.token, owner.secret, &owner.store).map(Arc::new).map_err(|e| {
                SimFailure {
                    seed: self.seed,
                    step: self.step,
                    invariant: Invariant::HonestFaultsAreNotLies,
                    detail: e,
                    trace: self.trace.clone(),
                }
            })?;
        self.note(format!("{}: client restarted", self.owners[o].token));
        Ok(())
    }

    pub(super) async fn put(&mut self, o: usize, name: &str, por: bool) -> Result<(), SimFailure> {
        let len = self.rng.below(6000) as usize;
        let data = self.rng.bytes(len);
        let options = PutOptions { block_size: BLOCK, por, ..PutOptions::default() };
        let result = self.owners[o].client.put_with(name, Cursor::new(data.clone()), options, |_| {}).await;
        self.written(o, "put", name, Some(data), result.map(|_| ())).await
    }

    /// Puts of two or three names at once by one owner: the first one's commit waits at the
    /// provider while the others stage, and they commit together after it (a group commit:
    /// the adversary's strategies meet one `commit-staged` of several puts). Its choices come
    /// from the run's own stream for them.
    pub(super) async fn put_together(&mut self, o: usize, first: &'static str) -> Result<(), SimFailure> {
        let Some(choices) = self.group_puts.as_mut() else { return Ok(()) };
        let mut names = vec![first];
        let more = 1 + choices.below(2) as usize;
        for name in FILES.iter().filter(|n| **n != first).take(more) {
            names.push(name);
        }
        let puts: Vec<(&'static str, Vec<u8>)> = names
            .into_iter()
            .map(|name| {
                let len = choices.below(6000) as usize;
                (name, choices.bytes(len))
            })
            .collect();
        let client = self.owners[o].client.clone();
        let later: Vec<(String, Vec<u8>)> = puts[1..].iter().map(|(n, d)| (n.to_string(), d.clone())).collect();
        let started = Arc::new(std::sync::Mutex::new(Vec::new()));
        let start = start_while_committing(client.clone(), later, started.clone());
        self.adversary.lock().await.before_commit = Some((self.owners[o].token.to_string(), start.boxed()));
        let options = PutOptions { block_size: BLOCK, ..PutOptions::default() };
        let (name, data) = &puts[0];
        let result = client.put_with(name, Cursor::new(data.clone()), options, |_| {}).await.map(drop);
        // Not started: the first put never reached its commit.
        self.adversary.lock().await.before_commit = None;
        let handles = std::mem::take(&mut *started.lock().unwrap_or_else(|e| e.into_inner()));
        let mut results = vec![result];
        for handle in handles {
            results.push(handle.await.unwrap_or_else(|e| Err(ClientError::BadInput(format!("a put's task: {e}")))));
        }
        self.coverage.outcome(&format!("grouped-puts:{}", results.len()));
        for ((name, data), result) in puts.iter().zip(results) {
            self.written(o, "put", name, Some(data.clone()), result).await?;
        }
        Ok(())
    }

    /// The truth after a write of `value` to `name` ended as `result`.
    pub(super) async fn written(
        &mut self,
        o: usize,
        what: &str,
        name: &str,
        value: Value,
        result: Result<(), ClientError>,
    ) -> Result<(), SimFailure> {
        let outcome = ended(result);
        let label = format!("{} {what} {name}", self.owners[o].token);
        match outcome {
            Ended::Ok(()) => {
                self.coverage.outcome(&format!("{what}:ok"));
                self.note(format!("{label}: ok"));
                self.owners[o].model.settle(name, value);
            }
            Ended::NotFound(message) => {
                self.coverage.outcome(&format!("{what}:not-found"));
                self.note(format!("{label}: not found: {message}"));
                self.check(o, &label, name, &None)?;
            }
            Ended::Violation(message) => {
                self.coverage.outcome(&format!("{what}:violation"));
                self.owners[o].model.maybe(name, value);
                self.caught(&label, &message).await?;
            }
            Ended::Fault(message) => {
                self.coverage.outcome(&format!("{what}:fault"));
                self.note(format!("{label}: {message}"));
                self.owners[o].model.maybe(name, value);
            }
        }
        Ok(())
    }

    /// `seen` was accepted as `name`'s value: the truth must allow it (invariant 1, or 5
    /// when the value acknowledged before a crash is the one missing).
    pub(super) fn check(&mut self, o: usize, label: &str, name: &str, seen: &Value) -> Result<(), SimFailure> {
        let model = &self.owners[o].model;
        if model.allows(name, seen) {
            self.owners[o].model.settle(name, seen.clone());
            return Ok(());
        }
        let invariant = match model.acked_before_crash.contains_key(name) {
            true => Invariant::AcknowledgedSurvivesCrashes,
            false => Invariant::AcceptsOnlyTheTruth,
        };
        let allowed: Vec<String> = model.possible(name).iter().map(describe).collect();
        Err(self.fail(
            invariant,
            format!("{label} accepted {}; the history allows {}", describe(seen), allowed.join(" or ")),
        ))
    }

    pub(super) async fn edit(&mut self, o: usize, name: &str) -> Result<(), SimFailure> {
        let Some(Some(old)) = self.owners[o].model.certain(name) else { return Ok(()) };
        let at = self.rng.below(old.len() as u64 + 1);
        let len = 1 + self.rng.below(1500) as usize;
        let data = self.rng.bytes(len);
        let (change, new) = match self.rng.below(3) {
            0 => (
                ByteEdit::Insert { at, data: data.clone() },
                [&old[..at as usize], &data, &old[at as usize..]].concat(),
            ),
            1 if at < old.len() as u64 => {
                let end = (at + data.len() as u64).min(old.len() as u64);
                (ByteEdit::Delete { range: at..end }, [&old[..at as usize], &old[end as usize..]].concat())
            }
            _ => {
                let at = at.min(old.len() as u64);
                let mut new = old.clone();
                new.truncate(at as usize);
                new.extend_from_slice(&data);
                if old.len() > at as usize + data.len() {
                    new.extend_from_slice(&old[at as usize + data.len()..]);
                }
                (ByteEdit::Replace { at, data }, new)
            }
        };
        let result = self.owners[o].client.edit(name, &change, BLOCK).await;
        self.written(o, "edit", name, Some(new), result.map(|_| ())).await
    }

    pub(super) async fn get(&mut self, o: usize, name: &str) -> Result<(), SimFailure> {
        let mut out = Vec::new();
        let result = self.owners[o].client.get(name, None, None, &mut out).await;
        self.read(o, "get", name, result.map(|_| out)).await
    }

    /// A read of `name` that ended as `result`.
    pub(super) async fn read(
        &mut self,
        o: usize,
        what: &str,
        name: &str,
        result: Result<Vec<u8>, ClientError>,
    ) -> Result<(), SimFailure> {
        let label = format!("{} {what} {name}", self.owners[o].token);
        match ended(result) {
            Ended::Ok(bytes) => {
                self.coverage.outcome(&format!("{what}:ok"));
                self.note(format!("{label}: {} bytes", bytes.len()));
                self.check(o, &label, name, &Some(bytes))
            }
            Ended::NotFound(_) => {
                self.coverage.outcome(&format!("{what}:not-found"));
                self.note(format!("{label}: not found"));
                self.check(o, &label, name, &None)
            }
            Ended::Violation(message) => {
                self.coverage.outcome(&format!("{what}:violation"));
                self.caught(&label, &message).await
            }
            Ended::Fault(message) => {
                self.coverage.outcome(&format!("{what}:fault"));
                self.note(format!("{label}: {message}"));
                Ok(())
            }
        }
    }

    pub(super) async fn remove(&mut self, o: usize, name: &str) -> Result<(), SimFailure> {
        let result = self.owners[o].client.remove(name).await;
        self.written(o, "remove", name, None, result.map(|_| ())).await
    }

    pub(super) async fn list(&mut self, o: usize) -> Result<(), SimFailure> {
        let result = self.owners[o].client.list().await;
        let label = format!("{} list", self.owners[o].token);
        match ended(result) {
            Ended::Ok(entries) => {
                self.coverage.outcome("list:ok");
                let names: Vec<String> = entries
                    .into_iter()
                    .map(|e| e.name)
                    .filter(|n| FILES.contains(&n.as_str()) || POR_FILES.contains(&n.as_str()))
                    .collect();
                self.note(format!("{label}: {names:?}"));
                let (certain, possible) = self.owners[o].model.listing_bounds();
                if let Some(missing) = certain.iter().find(|n| !names.contains(n)) {
                    return Err(self.fail(
                        Invariant::AcceptsOnlyTheTruth,
                        format!("{label} accepted a listing without {missing}, which the history says is present"),
                    ));
                }
                if let Some(extra) = names.iter().find(|n| !possible.contains(n)) {
                    return Err(self.fail(
                        Invariant::AcceptsOnlyTheTruth,
                        format!("{label} accepted a listing with {extra}, which the history says is absent"),
                    ));
                }
                Ok(())
            }
            Ended::Violation(message) => {
                self.coverage.outcome("list:violation");
                self.caught(&label, &message).await
            }
            Ended::NotFound(_) | Ended::Fault(_) => {
                self.coverage.outcome("list:fault");
                Ok(())
            }
        }
    }

    /// A possession audit; one that passes must leave the file readable (invariant 2).
    pub(super) async fn audit(&mut self, o: usize, name: &str) -> Result<(), SimFailure> {
        let result = self.owners[o].client.audit(name, None, 460).await;
        let label = format!("{} audit {name}", self.owners[o].token);
        match ended(result) {
            Ended::Ok(report) if report.verified => {
                self.coverage.outcome("audit:passed");
                self.note(format!("{label}: passed"));
                self.recoverable(o, name, false).await
            }
            Ended::Ok(_) => {
                self.coverage.outcome("audit:failed");
                self.caught(&label, "the audit failed").await
            }
            Ended::NotFound(_) => {
                self.coverage.outcome("audit:not-found");
                self.check(o, &label, name, &None)
            }
            Ended::Violation(message) => {
                self.coverage.outcome("audit:violation");
                self.caught(&label, &message).await
            }
            Ended::Fault(_) => {
                self.coverage.outcome("audit:fault");
                Ok(())
            }
        }
    }

    /// After a passed audit: the data it covered reads back, with nothing in the way; a PoR
    /// copy may need a repair first.
    pub(super) async fn recoverable(&mut self, o: usize, name: &str, por: bool) -> Result<(), SimFailure> {
        self.adversary.lock().await.active = false;
        let client = &self.owners[o].client;
        let mut out = Vec::new();
        let mut result = match por {
            false => client.get(name, None, None, &mut out).await.map(|_| ()),
            true => client.por().get(name, None, &mut out).await.map(|_| ()),
        };
        if por && result.is_err() {
            out.clear();
            let _ = client.por().repair(name).await;
            result = client.por().get(name, None, &mut out).await.map(|_| ());
        }
        self.adversary.lock().await.active = true;
        match ended(result) {
            Ended::Ok(()) => self.check(o, &format!("recovery of {name}"), name, &Some(out)),
            Ended::NotFound(_) => self.check(o, &format!("recovery of {name}"), name, &None),
            Ended::Violation(e) | Ended::Fault(e) => Err(self.fail(
                Invariant::AuditMeansRecoverable,
                format!(
                    "an audit of {name} passed, but the data cannot be read back from what the provider holds: {e}"
                ),
            )),
        }
    }
}

/// How long (on the run's clock) a put started beside a commit may take to join the group.
const HELD_UP: std::time::Duration = std::time::Duration::from_secs(5);

/// A put's task, run beside the run's own step.
type PutTask = tokio::task::JoinHandle<Result<(), ClientError>>;

/// Starts `puts` of `client` one after another, each once it is waiting for the commit lock
/// the put in its commit holds (or once it ended before that, or is held up: a lookup caught
/// in a lie waits for that commit to settle): their order in the group is the order given.
/// Their tasks go to `started`. The clock is the run's paused one: it moves only while every
/// task waits, so a put held up is told from one at work.
async fn start_while_committing(
    client: Arc<Client>,
    puts: Vec<(String, Vec<u8>)>,
    started: Arc<std::sync::Mutex<Vec<PutTask>>>,
) {
    for (name, data) in puts {
        let waiting = client.puts_waiting_to_commit();
        let putting = client.clone();
        let task = tokio::spawn(async move {
            let options = PutOptions { block_size: BLOCK, ..PutOptions::default() };
            putting.put_with(&name, Cursor::new(data), options, |_| {}).await.map(drop)
        });
        let held_up = tokio::time::Instant::now() + HELD_UP;
        while !task.is_finished() && client.puts_waiting_to_commit() == waiting && tokio::time::Instant::now() < held_up
        {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        started.lock().unwrap_or_else(|e| e.into_inner()).push(task);
    }
}
