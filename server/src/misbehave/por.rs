//! The PoR log's operations, and two of the lies a PoR provider can tell: a forged aggregate
//! in audits ([`Misbehave::ForgePorAggregate`]) and slots of U swapped in reads
//! ([`Misbehave::SwapPorSlots`]). The others (a skipped or faked rebuild, a stale level,
//! another slot's checksum) are caught in `vouch_core::por`'s tests against the reference
//! provider and move here with the client's end-to-end PoR commands.

use super::{Misbehave, Misbehaving};
use crate::provider::ProviderError;
use serde_bytes::ByteBuf;
use vouch_core::por::client::RawRead;
use vouch_core::por::field::{add, P};
use vouch_core::por::heap::SLOT_WIDTH;
use vouch_proto::por::{
    PorAuditAnswer, PorAuditRequest, PorContext, PorInitRequest, PorLabelAnswer, PorLabelRequest, PorPartAnswer,
    PorPlanRequest, PorReadAnswer, PorReadRequest, PorRegionAnswer, PorRegionRequest, PorRestoreRequest, PorStatus,
    PorWriteRequest,
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

    pub async fn por_label(&self, client: &str, req: &PorLabelRequest) -> Result<PorLabelAnswer, ProviderError> {
        self.honest.por_label(client, req).await
    }

    pub async fn por_read(&self, client: &str, req: &PorReadRequest) -> Result<PorReadAnswer, ProviderError> {
        let answer = self.honest.por_read(client, req).await?;
        if self.lie != Misbehave::SwapPorSlots || req.indices.len() < 2 {
            return Ok(answer);
        }
        let mut read = RawRead::from_bytes(&answer.read).expect("the honest provider's own encoding");
        read.sealed.swap(0, 1);
        let (first, rest) = read.slots.split_at_mut(SLOT_WIDTH);
        first.swap_with_slice(&mut rest[..SLOT_WIDTH]);
        Ok(PorReadAnswer { read: ByteBuf::from(read.to_bytes()) })
    }

    pub async fn por_audit(&self, client: &str, req: &PorAuditRequest) -> Result<PorAuditAnswer, ProviderError> {
        let mut answer = self.honest.por_audit(client, req).await?;
        if self.lie == Misbehave::ForgePorAggregate {
            for part in answer.parts.iter_mut().filter_map(|p| match p {
                PorPartAnswer::Proof(proof) => Some(proof),
                PorPartAnswer::Lost(_) => None,
            }) {
                // The aggregate's last element closes the proof's bytes (`PartProof::to_bytes`).
                let at = part.len() - 8;
                let last = u64::from_le_bytes(part[at..].try_into().expect("8 bytes"));
                part[at..].copy_from_slice(&add(last % P, 1).to_le_bytes());
            }
        }
        Ok(answer)
    }

    pub async fn por_region(&self, client: &str, req: &PorRegionRequest) -> Result<PorRegionAnswer, ProviderError> {
        self.honest.por_region(client, req).await
    }

    pub async fn por_restore(&self, client: &str, req: &PorRestoreRequest) -> Result<PorStatus, ProviderError> {
        self.honest.por_restore(client, req).await
    }
}
