//! The answer to a client's [`WritePlan`]: core's, from what the log holds, so that every
//! provider checks and answers plans alike.

use super::{PorLog, PorStoreError};
use vouch_core::por::client::{WriteContext, WritePlan};
use vouch_core::por::provider::answer_plan;

impl PorLog {
    /// The answer to a plan, checked against the log's own schedule (as the reference's).
    pub fn context(&self, plan: &WritePlan) -> Result<WriteContext, PorStoreError> {
        // A level the batch consumes whose sealed checksums are lost: data lost, not a bad plan.
        for &level in &plan.levels {
            if let Some(held) = self.levels.get(level as usize).and_then(Option::as_ref) {
                held.sealed(&self.names)?;
            }
        }
        let level_sealed = |l: u32| self.levels.get(l as usize)?.as_ref()?.sealed.clone();
        Ok(answer_plan(&self.schedule, &self.tree, &self.raw_sealed, level_sealed, plan)?)
    }
}
