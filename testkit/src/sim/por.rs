//! The PoR steps (Shi–Stefanov–Papamanthou): puts with a PoR copy, reads of the copy,
//! audits (one that passes must leave every copy recoverable) and repairs.

use super::report::SimFailure;
use super::run::{ended, Ended, Run, POR_FILES};

impl Run {
    pub(super) async fn por_step(&mut self) -> Result<(), SimFailure> {
        let name = *self.rng.pick(&POR_FILES).unwrap_or(&POR_FILES[0]);
        // Until a PoR put was tried there is no log: audits and repairs would only be told so.
        let roll = match self.por_started {
            false => 0,
            true => self.rng.below(100),
        };
        match roll {
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
        }
        Ok(())
    }
}
