//! The answer to a client's [`WritePlan`], and the checks every plan passes first.

use super::{PorLog, PorStoreError, MAX_LOG_CAPACITY};
use vouch_core::por::client::{grown_schedule, WriteContext, WritePlan};
use vouch_core::por::code::Schedule;
use vouch_core::por::provider::ProviderError;
use vouch_core::por::raw_tree::RawProofError;

impl PorLog {
    /// The answer to a plan, checked against the log's own schedule (as the reference's).
    pub fn context(&self, plan: &WritePlan) -> Result<WriteContext, PorStoreError> {
        let schedule = self.check_plan(plan)?;
        let proof = match plan.grow_to {
            None => self.tree.prove(&plan.indices),
            Some(k) => {
                let mut tree = self.tree.clone();
                (self.schedule.log_capacity..k).try_for_each(|_| tree.grow()).and_then(|()| tree.prove(&plan.indices))
            }
        }
        .map_err(ProviderError::from)?;
        let sealed_at = |i: u64| self.raw_sealed.get(i as usize).copied().flatten();
        let levels = plan
            .levels
            .iter()
            .map(|&l| self.levels.get(l as usize).and_then(Option::as_ref).map(|h| h.sealed.clone()))
            .collect::<Option<_>>()
            .ok_or_else(|| self.refused())?;
        let raw = plan.whole_raw.then(|| (0..schedule.capacity()).map(sealed_at).collect());
        Ok(WriteContext { old: plan.indices.iter().map(|&i| sealed_at(i)).collect(), proof, levels, raw })
    }

    /// The schedule a plan starts from (after its growth), if it fits the log: checked in the
    /// reference's order, so that both refuse a plan alike.
    pub(super) fn check_plan(&self, plan: &WritePlan) -> Result<Schedule, PorStoreError> {
        let mut schedule = self.schedule;
        if let Some(k) = plan.grow_to {
            if k <= schedule.log_capacity || k > MAX_LOG_CAPACITY {
                return Err(self.refused());
            }
            schedule = grown_schedule(&schedule, k);
        }
        if plan.levels.iter().any(|&l| !schedule.is_filled(l)) {
            return Err(self.refused());
        }
        let ascending = plan.indices.windows(2).all(|w| w[0] < w[1]);
        if plan.indices.last().is_none_or(|&last| last >= schedule.capacity()) || !ascending {
            return Err(ProviderError::RawProof(RawProofError::Indices(schedule.log_capacity)).into());
        }
        Ok(schedule)
    }

    pub(super) fn refused(&self) -> PorStoreError {
        ProviderError::Plan { log_capacity: self.schedule.log_capacity, time: self.schedule.time }.into()
    }
}
