//! The PoR steps (Shi–Stefanov–Papamanthou): puts with a PoR copy, reads of the copy,
//! audits (one that passes must leave every copy recoverable) and repairs.

use super::report::SimFailure;
use super::run::{ended, Ended, Run, POR_FILES};

impl Run {
    // ---- PoR (Shi–Stefanov–Papamanthou) ----

    pub(super) async fn por_step(&mut self) -> Result<(), SimFailure> {
        let name = *self.rng.pick(&POR_FILES);
        match self.rng.below(100) {
            0..=34 => self.put(0, name, true).await,
            35..=44 => self.edit(0, name).await,
            45..=64 => {
                let mut out = Vec::new();
                let result = self.owners[0].client.por().get(name, None, &mut out).await;
                self.read(0, "por-get", name, result.map(|_| out)).await
            }
            65..=84 => self.por_audit().await,
            _ => {
                let result = self.owners[0].client.por().repair(name).await;
                let label = format!("repair {name}");
                match ended(result) {
                    Ended::Violation(message) => {
                        self.coverage.outcome("repair:violation");
                        self.caught(&label, &message).await
                    }
                    Ended::Ok(_) => {
                        self.coverage.outcome("repair:ok");
                        Ok(())
                    }
                    _ => {
                        self.coverage.outcome("repair:fault");
                        Ok(())
                    }
                }
            }
        }
    }

    pub(super) async fn por_audit(&mut self) -> Result<(), SimFailure> {
        let result = self.owners[0].client.por().audit(32).await;
        match ended(result) {
            Ended::Ok(report) if report.verified => {
                self.coverage.outcome("por-audit:passed");
                self.note("por audit: passed".into());
                for name in POR_FILES {
                    if self.owners[0].model.possible(name).iter().any(Option::is_some) {
                        self.recoverable(0, name, true).await?;
                    }
                }
                Ok(())
            }
            Ended::Ok(_) => {
                self.coverage.outcome("por-audit:failed");
                self.caught("por audit", "the audit failed").await
            }
            Ended::Violation(message) => {
                self.coverage.outcome("por-audit:violation");
                self.caught("por audit", &message).await
            }
            Ended::NotFound(_) | Ended::Fault(_) => {
                self.coverage.outcome("por-audit:fault");
                Ok(())
            }
        }
    }
}
