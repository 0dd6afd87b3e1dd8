//! The PoR steps (Shi–Stefanov–Papamanthou): puts with a PoR copy, reads of the copy,
//! audits (one that passes must leave every copy recoverable) and repairs; and, after some,
//! removals and prunes, which free slots where the labels say and consolidate the log.

use super::report::{Invariant, SimFailure};
use super::run::{ended, Ended, Run, POR_FILES};

impl Run {
    pub(super) async fn por_step(&mut self) -> Result<(), SimFailure> {
        let name = *self.rng.pick(&POR_FILES).unwrap_or(&POR_FILES[0]);
        // Until a PoR put was tried there is no log: audits and repairs would only be told so.
        let roll = match self.por_started {
            false => 0,
            true => self.rng.below(100),
        };
        let step = match roll {
            0..=34 => {
                self.por_started = true;
                self.put(0, name, true).await
            }
            35..=44 => self.edit(0, name).await,
            45..=64 => {
                let mut out = Vec::new();
                let result = self.owners[0].client.por().get(name, None, &mut out).await;
                self.read(0, "por-get", name, result.map(|_| out)).await
            }
            65..=84 => self.por_audit().await,
            _ => {
                let result = self.owners[0].client.por().repair(name).await;
                self.por_outcome(&format!("repair {name}"), "repair", ended(result).map(|_| ())).await
            }
        };
        step?;
        self.por_free_step(name).await
    }

    /// Now and then after a PoR step, drawn from a stream of its own (so that a seed's other
    /// choices stay what they were): `name` removed, or its old versions pruned. Both write ⊥
    /// over the slots the versions' labels name, and consolidate the log once enough is free:
    /// where a label the provider serves matters.
    async fn por_free_step(&mut self, name: &str) -> Result<(), SimFailure> {
        if !self.por_started || !self.frees.percent(self.free_rate) {
            return Ok(());
        }
        if self.frees.percent(40) {
            return self.remove(0, name).await;
        }
        // Pruned only where the history says the name is there, so that a "not found" is a
        // lie to catch, not a guess.
        if !matches!(self.owners[0].model.certain(name), Some(Some(_))) {
            return Ok(());
        }
        let client = &self.owners[0].client;
        let result = match client.log(name).await {
            Ok(all) if all.len() > 1 => {
                let old: Vec<u64> = all[..all.len() - 1].iter().map(|v| v.number).collect();
                client.prune(name, &old).await
            }
            Ok(_) => return Ok(()),
            Err(e) => Err(e),
        };
        let label = format!("prune {name}");
        match ended(result) {
            Ended::NotFound(message) => {
                let detail = format!("{label} accepted \"not found\" ({message}); the history says it is there");
                Err(self.fail(Invariant::AcceptsOnlyTheTruth, detail))
            }
            // The latest version stays what it was: later reads check it against the model.
            outcome => self.por_outcome(&label, "prune", outcome).await,
        }
    }

    /// An operation of the PoR log that returns nothing to check but its outcome.
    async fn por_outcome(&mut self, label: &str, what: &str, outcome: Ended<()>) -> Result<(), SimFailure> {
        match outcome {
            Ended::Ok(()) => {
                self.coverage.outcome(&format!("{what}:ok"));
                self.note(format!("{label}: ok"));
                Ok(())
            }
            Ended::Violation(message) => {
                self.coverage.outcome(&format!("{what}:violation"));
                self.caught(label, &message).await
            }
            Ended::NotFound(message) | Ended::Fault(message) => {
                self.coverage.outcome(&format!("{what}:fault"));
                self.note(format!("{label}: {message}"));
                Ok(())
            }
        }
    }

    pub(super) async fn por_audit(&mut self) -> Result<(), SimFailure> {
        let result = self.owners[0].client.por().audit(32).await;
        let passed = match ended(result) {
            Ended::Ok(report) if report.verified => Ended::Ok(()),
            Ended::Ok(_) => Ended::Violation("the audit failed".into()),
            other => other.map(|_| ()),
        };
        let was_passed = matches!(passed, Ended::Ok(()));
        self.por_outcome("por audit", "por-audit", passed).await?;
        if was_passed {
            for name in POR_FILES {
                if self.owners[0].model.possible(name).iter().any(Option::is_some) {
                    self.recoverable(0, name, true).await?;
                }
            }
            self.recoverable_without_u().await?;
        }
        Ok(())
    }
}
