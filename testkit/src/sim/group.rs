//! The VICOS members' steps: puts, gets, deletes and lists, checked against the group's
//! truth (or, once the adversary may have shown a member a history of its own, against what
//! any member wrote), and the fork a member owes the detection of.

use super::model::Value;
use super::report::{Invariant, SimFailure};
use super::run::{describe, ended, Ended, Run, KEYS};
use std::io::Cursor;
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
        let (what, value, result): Step = match self.rng.below(100) {
            0..=39 => {
                let len = self.rng.below(3000) as usize;
                let data = self.rng.bytes(len);
                self.group_writes.push((name.clone(), data.clone()));
                let r = self.members[m].group.put(key, Cursor::new(data.clone())).await;
                ("group-put", Some(Some(data)), r.map(|o| map_outcome(o, |()| None)))
            }
            40..=74 => {
                let mut out = Vec::new();
                let r = self.members[m].group.get(key, &mut out).await;
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
        match ended(result) {
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
        Ok(())
    }
}

fn map_outcome<T, U>(outcome: Outcome<T>, f: impl FnOnce(T) -> U) -> Outcome<U> {
    match outcome {
        Outcome::Done(t) => Outcome::Done(f(t)),
        Outcome::Abort => Outcome::Abort,
    }
}
