//! The PoR log's operations, honest for now: the lies a PoR provider can tell (a skipped or
//! faked rebuild, a stale level, another slot's checksum, a forged aggregate) are caught in
//! `vouch_core::por`'s tests against the reference provider, and move here with the client's
//! end-to-end PoR commands.

use super::Misbehaving;
use crate::provider::ProviderError;
use vouch_proto::por::{
    PorAuditAnswer, PorAuditRequest, PorContext, PorInitRequest, PorPlanRequest, PorReadAnswer, PorReadRequest,
    PorRegionAnswer, PorRegionRequest, PorRestoreRequest, PorStatus, PorWriteRequest,
};

impl Misbehaving {
    pub async fn por_init(&self, client: &str, req: &PorInitRequest) -> Result<PorStatus, ProviderError> {
        self.honest.por_init(client, req).await
    }

    pub async fn por_status(&self, client: &str) -> Result<PorStatus, ProviderError> {
        self.honest.por_status(client).await
    }

    pub async fn por_plan(&self, client: &str, req: &PorPlanRequest) -> Result<PorContext, ProviderError> {
        self.honest.por_plan(client, req).await
    }

    pub async fn por_write(&self, client: &str, req: &PorWriteRequest) -> Result<PorStatus, ProviderError> {
        self.honest.por_write(client, req).await
    }

    pub async fn por_read(&self, client: &str, req: &PorReadRequest) -> Result<PorReadAnswer, ProviderError> {
        self.honest.por_read(client, req).await
    }

    pub async fn por_audit(&self, client: &str, req: &PorAuditRequest) -> Result<PorAuditAnswer, ProviderError> {
        self.honest.por_audit(client, req).await
    }

    pub async fn por_region(&self, client: &str, req: &PorRegionRequest) -> Result<PorRegionAnswer, ProviderError> {
        self.honest.por_region(client, req).await
    }

    pub async fn por_restore(&self, client: &str, req: &PorRestoreRequest) -> Result<PorStatus, ProviderError> {
        self.honest.por_restore(client, req).await
    }
}
