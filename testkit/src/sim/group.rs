//! The VICOS members' steps: puts, gets, deletes and lists, checked against the group's
//! truth (or, once the adversary may have shown a member a history of its own, against what
//! any member wrote), and the fork a member owes the detection of.

use super::model::Value;
use super::report::{Invariant, SimFailure};
use super::run::{describe, ended, Ended, Run, KEYS, TOKENS};
use super::strategy::Strategy;
use futures::FutureExt;
use std::io::Cursor;
use std::sync::Arc;
use vouch_client::ClientError;
use vouch_core::aip::Outcome;

/// What a group step did: its name, the value it wrote (`None`: a read), and what it read.
type Step = (&'static str, Option<Value>, Result<Outcome<Option<Value>>, ClientError>);

impl Run {
    pub(super) async fn group_step(&mut self) -> Result<(), SimFailure> {
        let m = self.rng.below(2) as usize;
        if self.members[m].done {
            return Ok(());
        }
        let key = *self.rng.pick(&KEYS).unwrap_or(&KEYS[0]);
        let name = String::from_utf8_lossy(key).into_owned();
        let label = format!("m{m} {name}");
        let branch = self.members[m].branch;
        // A put by the other member that ran inside this step and was acknowledged.
        let mut acked = None;
        let (what, value, result): Step = match self.rng.below(100) {
            0..=39 => {
                let len = self.rng.below(3000) as usize;
                let data = self.rng.bytes(len);
                self.group_writes.push((name.clone(), data.clone()));
                let r = self.members[m].group.put(key, Cursor::new(data.clone())).await;
                ("group-put", Some(Some(data)), r.map(|o| map_outcome(o, |()| None)))
            }
            40..=74 => {
                let interleaved = self.arm_interleaving(m, key).await;
                let mut out = Vec::new();
                let r = self.members[m].group.get(key, &mut out).await;
                acked = self.interleaved(interleaved, &name).await?;
                ("group-get", None, r.map(|o| map_outcome(o, |found| Some(found.map(|_| out)))))
            }
            75..=89 => {
                let r = self.members[m].group.delete(key).await;
                ("group-delete", Some(None), r.map(|o| map_outcome(o, |()| None)))
            }
            _ => {
                let r = self.members[m].group.list().await;
                let listed = r.map(|o| map_outcome(o, |keys| Some(Some(keys.concat()))));
                ("group-list", None, listed)
            }
        };
        let forked_member = branch == 1;
        let result = ended(result);
        self.check_view(m, matches!(result, Ended::Ok(_)), &format!("{label} {what}")).await?;
        match result {
            Ended::Ok(_) if self.members[m].owes_detection => {
                return Err(self.fail(
                    Invariant::ForksAreCaught,
                    format!("{label} {what}: m{m} finished an operation on a forked branch, and then one on the joined history without catching the fork"),
                ));
            }
            Ended::Ok(Outcome::Abort) => {
                self.coverage.outcome(&format!("{what}:abort"));
                self.note(format!("{label} {what}: abort"));
            }
            Ended::Ok(Outcome::Done(read)) => {
                self.coverage.outcome(&format!("{what}:ok"));
                self.note(format!("{label} {what}: ok"));
                if forked_member {
                    if let Some(state) = &mut self.fork_state {
                        state.completed = true;
                    }
                }
                let forked = self.adversary.lock().await.group_forked;
                let model = &mut self.groups[branch];
                match (value, read) {
                    (Some(written), _) => model.settle(&name, written),
                    // Shown a history of its own (a rollback or a replayed answer of the
                    // group): a member may read any value some member wrote to the key, in a
                    // view the others do not share, but nothing no member wrote.
                    (None, Some(Some(seen)))
                        if what == "group-get"
                            && forked
                            && !self.group_writes.iter().any(|(k, v)| *k == name && *v == seen) =>
                    {
                        let seen = describe(&Some(seen));
                        return Err(self.fail(
                            Invariant::AcceptsOnlyTheTruth,
                            format!("{label} get accepted {seen}, which no member wrote"),
                        ));
                    }
                    (None, Some(_)) if forked => {}
                    (None, Some(seen)) if what == "group-get" => {
                        if !model.allows(&name, &seen) {
                            let allowed: Vec<String> = model.possible(&name).iter().map(describe).collect();
                            return Err(self.fail(
                                Invariant::AcceptsOnlyTheTruth,
                                format!(
                                    "{label} get accepted {}; the group's history allows {}",
                                    describe(&seen),
                                    allowed.join(" or ")
                                ),
                            ));
                        }
                        model.settle(&name, seen);
                    }
                    _ => {}
                }
            }
            Ended::NotFound(_) => {
                self.coverage.outcome(&format!("{what}:not-found"));
                self.note(format!("{label} {what}: not found"));
            }
            Ended::Violation(message) => {
                self.coverage.outcome(&format!("{what}:violation"));
                if self.members[m].owes_detection {
                    self.coverage.outcome("fork:caught");
                }
                self.members[m].done = true;
                // A write the client stopped at may still have been applied.
                if let Some(written) = value {
                    self.groups[branch].maybe(&name, written);
                }
                self.caught(&format!("{label} {what}"), &message).await?;
            }
            Ended::Fault(message) => {
                self.coverage.outcome(&format!("{what}:fault"));
                self.note(format!("{label} {what}: {message}"));
                if forked_member {
                    if let Some(state) = &mut self.fork_state {
                        state.uncertain = true;
                    }
                }
                if let Some(written) = value {
                    self.groups[branch].maybe(&name, written);
                }
            }
        }
        if let Some(written) = acked {
            self.groups[0].settle(&name, written);
        }
        Ok(())
    }
}

/// A put by the other member that a [`Strategy::Delay`] may run in the middle of a get: the
/// value it writes, and its result once it ran.
struct Interleaving {
    other: usize,
    data: Vec<u8>,
    result: Arc<std::sync::Mutex<Option<PutResult>>>,
}

type PutResult = Result<Outcome<()>, ClientError>;

impl Run {
    /// Arms, for member `m`'s next INVOKE, a put of `key` by the other member, when this run
    /// delays messages and both members share one history.
    async fn arm_interleaving(&mut self, m: usize, key: &'static [u8]) -> Option<Interleaving> {
        let other = 1 - m;
        let mut adversary = self.adversary.lock().await;
        let shared = self.fork_state.is_none() && !adversary.providers.forked();
        let members_free = self.members.iter().all(|member| !member.done && !member.owes_detection);
        if !adversary.strategies.contains(&Strategy::Delay) || !shared || !members_free {
            return None;
        }
        let len = self.schedule.below(3000) as usize;
        let data = self.schedule.bytes(len);
        let result = Arc::new(std::sync::Mutex::new(None));
        let (group, slot, bytes) = (self.members[other].group.clone(), result.clone(), data.clone());
        let put = async move {
            let r = group.put(key, Cursor::new(bytes)).await;
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        };
        adversary.interleave = Some((TOKENS[2 + m].0.to_string(), put.boxed()));
        Some(Interleaving { other, data, result })
    }

    /// Disarms the interleaving; if it ran, the truth takes its put as a value the get may
    /// have read. Returns the value when the put was acknowledged: the key's value once the
    /// get is checked.
    async fn interleaved(
        &mut self,
        interleaving: Option<Interleaving>,
        name: &str,
    ) -> Result<Option<Value>, SimFailure> {
        self.adversary.lock().await.interleave = None;
        let Some(Interleaving { other, data, result }) = interleaving else { return Ok(None) };
        let Some(result) = result.lock().unwrap_or_else(|e| e.into_inner()).take() else { return Ok(None) };
        let label = format!("m{other} {name} group-put (run inside m{} get)", 1 - other);
        let result = ended(result);
        self.check_view(other, matches!(result, Ended::Ok(_)), &label).await?;
        self.group_writes.push((name.to_string(), data.clone()));
        // Until the get is checked, either value may be the key's: settled after it.
        self.groups[0].maybe(name, Some(data.clone()));
        match result {
            Ended::Ok(Outcome::Done(())) => {
                self.coverage.outcome("group-put:ok");
                self.note(format!("{label}: ok"));
                return Ok(Some(Some(data)));
            }
            Ended::Ok(Outcome::Abort) => self.note(format!("{label}: abort")),
            Ended::NotFound(message) | Ended::Fault(message) => self.note(format!("{label}: {message}")),
            Ended::Violation(message) => {
                self.coverage.outcome("group-put:violation");
                self.members[other].done = true;
                self.caught(&label, &message).await?;
            }
        }
        Ok(None)
    }
}

impl Run {
    /// Invariant 1 for the order of the group: a member that finished an operation accepted
    /// no view showing one signed INVOKE at two positions (a replay).
    async fn check_view(&mut self, m: usize, finished: bool, what: &str) -> Result<(), SimFailure> {
        let token = TOKENS[2 + m].0;
        let twice = {
            let mut adversary = self.adversary.lock().await;
            match finished {
                true => adversary.views.accepted(token),
                false => {
                    adversary.views.refused(token);
                    None
                }
            }
        };
        match twice {
            Some(twice) => Err(self
                .fail(Invariant::AcceptsOnlyTheTruth, format!("{what}: m{m} finished over a view that shows {twice}"))),
            None => Ok(()),
        }
    }
}

fn map_outcome<T, U>(outcome: Outcome<T>, f: impl FnOnce(T) -> U) -> Outcome<U> {
    match outcome {
        Outcome::Done(t) => Outcome::Done(f(t)),
        Outcome::Abort => Outcome::Abort,
    }
}
