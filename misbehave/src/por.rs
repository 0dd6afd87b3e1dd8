//! The PoR log's operations, and the lies a PoR provider can tell, each caught over HTTP by
//! the client's pure checks (`client/tests/it/por.rs` and `client/tests/it/por_lies.rs`):
//!
//! * a forged aggregate in audits ([`Misbehave::ForgePorAggregate`]): the audit's part fails;
//! * slots of U swapped in reads ([`Misbehave::SwapPorSlots`]): the read is refused;
//! * a skipped rebuild ([`Misbehave::SkipPorRebuild`]): a fault of the store itself (its blob
//!   store garbles the levels of H, see [`Misbehaving::open_dir`](crate::Misbehaving::open_dir))
//!   while the batches are acknowledged; the audit's parts of those levels fail, and repair
//!   counts their slots as lost (it never hands out what they hold);
//! * a stale level ([`Misbehave::StalePorLevel`]): a plan answered with a level's sealed
//!   checksums of an earlier time; they do not open at the level's time, and the batch is
//!   refused before anything is sent;
//! * another slot's checksum ([`Misbehave::OtherPorChecksum`]): a plan's `old` checksums or a
//!   read's sealed checksums taken from other slots of U; they do not hash to U's root;
//! * live slots named free ([`Misbehave::FreePorLiveSlots`]): the plan's `old` checksums,
//!   which U's root binds, show data, and the copy is refused before anything is sent;
//! * a stale label ([`Misbehave::StalePorLabel`]): the label of a copy a consolidation moved,
//!   as it was before; it names slots past the bound the client's record keeps, and is
//!   refused before anything is read or freed through it;
//! * a label from a refused batch ([`Misbehave::RefusedPorLabel`]): the client writes the copy
//!   again into the slots that label names, so it names the copy, and the provider's word
//!   never settles a copy owed;
//! * dropped labels ([`Misbehave::DropPorLabels`]): a read of a PoR copy, and each PoR audit
//!   (which checks one version's label at random), report the copy missing.
//!
//! The last two lies need sealed checksums the client made for something else: the provider
//! keeps those it was handed with each batch ([`Handed`]), as a cheating provider would.
//!
//! And failures that are no lie: PoR writes that fail ([`Misbehave::FailPorWrites`]), a
//! provider down between a commit and the PoR batches that follow it, or every second one
//! ([`Misbehave::FlakyPorWrites`]), or a PoR write slower than its client waits
//! ([`Misbehave::SlowPorWrite`]).

use super::{Misbehave, Misbehaving};
use serde_bytes::ByteBuf;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use vouch_core::por::checksum::SealedChecksum;
use vouch_core::por::client::{RawRead, WriteContext, WritePlan, Written};
use vouch_core::por::code::Schedule;
use vouch_core::por::field::{add, P};
use vouch_core::por::heap::SLOT_WIDTH;
use vouch_proto::por::{
    PorAuditAnswer, PorAuditRequest, PorContext, PorFreeAnswer, PorFreeRequest, PorLabelAnswer, PorLabelRequest,
    PorPartAnswer, PorPlanRequest, PorReadAnswer, PorReadRequest, PorStatus, PorStatusRequest, PorWriteRequest,
};
use vouch_server::ProviderError;

pub(crate) async fn por_status(
    liar: &Misbehaving,
    client: &str,
    req: &PorStatusRequest,
) -> Result<PorStatus, ProviderError> {
    if liar.lie == Misbehave::DropPorAnswer && liar.refused.load(Ordering::SeqCst) {
        return Err(down("drop-por-answer"));
    }
    liar.honest.por().status(client, req).await
}

pub(crate) async fn por_plan(
    liar: &Misbehaving,
    client: &str,
    req: &PorPlanRequest,
) -> Result<PorContext, ProviderError> {
    let answer = liar.honest.por().plan(client, req).await?;
    let whole = answer.total == answer.context.len() as u64;
    if !whole || !matches!(liar.lie, Misbehave::StalePorLevel | Misbehave::OtherPorChecksum) {
        return Ok(answer);
    }
    let plan = WritePlan::from_bytes(&req.plan).expect("the honest provider decoded it");
    let mut context = WriteContext::from_bytes(&answer.context).expect("the honest provider's own encoding");
    let handed = liar.por_handed.lock().expect("handed PoR checksums");
    let Some(handed) = handed.get(client) else { return Ok(answer) };
    if liar.lie == Misbehave::StalePorLevel {
        for (level, sealed) in plan.levels.iter().zip(&mut context.levels) {
            if let Some(older) = handed.older_level(*level, sealed) {
                *sealed = older.to_vec();
            }
        }
    } else {
        for (&index, old) in plan.indices.iter().zip(&mut context.old) {
            if let Some(other) = handed.other_slot(index, *old) {
                *old = Some(other);
            }
        }
    }
    let context = context.to_bytes();
    Ok(PorContext { total: context.len() as u64, context: ByteBuf::from(context) })
}

pub(crate) async fn por_write(
    liar: &Misbehaving,
    client: &str,
    req: &PorWriteRequest,
) -> Result<PorStatus, ProviderError> {
    let flaky = liar.lie == Misbehave::FlakyPorWrites && liar.por_writes.fetch_add(1, Ordering::SeqCst) % 2 == 1;
    let refuse_labels =
        liar.lie == Misbehave::RefusedPorLabel && !req.labels.is_empty() && !liar.refused.swap(true, Ordering::SeqCst);
    if refuse_labels {
        let mut kept = liar.por_first_labels.lock().expect("first PoR labels");
        for label in &req.labels {
            kept.insert((client.to_string(), label.key.to_vec()), label.value.to_vec());
        }
    }
    if liar.lie == Misbehave::FailPorWrites || flaky || refuse_labels {
        return Err(down(liar.lie.name()));
    }
    if liar.lie == Misbehave::DropPorAnswer {
        if !liar.refused.swap(true, Ordering::SeqCst) {
            liar.honest.por().write(client, req).await?;
        }
        return Err(down(liar.lie.name()));
    }
    if liar.lie == Misbehave::SlowPorWrite && !liar.refused.swap(true, Ordering::SeqCst) {
        return liar.honest.por().write_slowly(client, req, super::SLOW_POR_WRITE).await;
    }
    let status = liar.honest.por().write(client, req).await?;
    if liar.lie == Misbehave::StalePorLabel {
        let mut first = liar.por_first_labels.lock().expect("first PoR labels");
        for label in &req.labels {
            first.entry((client.to_string(), label.key.to_vec())).or_insert_with(|| label.value.to_vec());
        }
    }
    if req.staged == 0 && matches!(liar.lie, Misbehave::StalePorLevel | Misbehave::OtherPorChecksum) {
        // The log's state in the upload is the provider's own business; any schedule reads it.
        let schedule = Schedule { time: status.time, ..Schedule::new(u32::from(status.log_capacity), 0) };
        let written = Written::from_upload_bytes(&req.upload, schedule).expect("the honest provider decoded it");
        let mut handed = liar.por_handed.lock().expect("handed PoR checksums");
        handed.entry(client.to_string()).or_default().keep(&written);
    }
    Ok(status)
}

pub(crate) async fn por_label(
    liar: &Misbehaving,
    client: &str,
    req: &PorLabelRequest,
) -> Result<PorLabelAnswer, ProviderError> {
    if liar.lie == Misbehave::DropPorLabels {
        return Ok(PorLabelAnswer { value: None });
    }
    if matches!(liar.lie, Misbehave::StalePorLabel | Misbehave::RefusedPorLabel) {
        let first = liar.por_first_labels.lock().expect("first PoR labels");
        if let Some(value) = first.get(&(client.to_string(), req.key.to_vec())) {
            return Ok(PorLabelAnswer { value: Some(ByteBuf::from(value.clone())) });
        }
    }
    liar.honest.por().label(client, req).await
}

pub(crate) async fn por_free(
    liar: &Misbehaving,
    client: &str,
    req: &PorFreeRequest,
) -> Result<PorFreeAnswer, ProviderError> {
    let asked_before = liar.por_free_asked.swap(true, std::sync::atomic::Ordering::SeqCst);
    if liar.lie == Misbehave::FreePorLiveSlots && asked_before && req.most_slots > 0 && req.most_runs > 0 {
        return Ok(PorFreeAnswer { runs: vec![(0, req.most_slots)] });
    }
    liar.honest.por().free(client, req).await
}

pub(crate) async fn por_read(
    liar: &Misbehaving,
    client: &str,
    req: &PorReadRequest,
) -> Result<PorReadAnswer, ProviderError> {
    let answer = liar.honest.por().read(client, req).await?;
    let swap = liar.lie == Misbehave::SwapPorSlots && req.indices.len() >= 2;
    if !swap && liar.lie != Misbehave::OtherPorChecksum {
        return Ok(answer);
    }
    let mut read = RawRead::from_bytes(&answer.read).expect("the honest provider's own encoding");
    if swap {
        read.sealed.swap(0, 1);
        let (first, rest) = read.slots.split_at_mut(SLOT_WIDTH);
        first.swap_with_slice(&mut rest[..SLOT_WIDTH]);
    } else {
        let handed = liar.por_handed.lock().expect("handed PoR checksums");
        let Some(handed) = handed.get(client) else { return Ok(answer) };
        for (&index, sealed) in req.indices.iter().zip(&mut read.sealed) {
            if let Some(other) = handed.other_slot(index, *sealed) {
                *sealed = Some(other);
            }
        }
    }
    Ok(PorReadAnswer { read: ByteBuf::from(read.to_bytes()) })
}

pub(crate) async fn por_audit(
    liar: &Misbehaving,
    client: &str,
    req: &PorAuditRequest,
) -> Result<PorAuditAnswer, ProviderError> {
    let mut answer = liar.honest.por().audit(client, req).await?;
    if liar.lie == Misbehave::ForgePorAggregate {
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

/// "Storage unavailable", on purpose.
fn down(lie: &str) -> ProviderError {
    ProviderError::Store(vouch_store::StoreError::Backend {
        at: "the PoR log".into(),
        detail: format!("down on purpose ({lie})"),
    })
}

/// The sealed checksums a client handed the provider with its batches: what a provider can
/// answer with in place of the right ones.
#[derive(Debug, Default)]
pub(super) struct Handed {
    /// Each level's sealed lists, one per time it was built, oldest first.
    levels: HashMap<u32, Vec<Vec<SealedChecksum>>>,
    /// The latest sealed checksum of each slot of U.
    raw: BTreeMap<u64, SealedChecksum>,
}

impl Handed {
    fn keep(&mut self, written: &Written) {
        for (level, sealed) in &written.levels {
            self.levels.entry(*level).or_default().push(sealed.clone());
        }
        self.raw.extend(written.raw.iter().copied());
    }

    /// The oldest list of `level` that is not `now` (the level at another time).
    fn older_level(&self, level: u32, now: &[SealedChecksum]) -> Option<&[SealedChecksum]> {
        self.levels.get(&level)?.iter().find(|list| list.as_slice() != now).map(Vec::as_slice)
    }

    /// The sealed checksum of a slot of U other than `index` that differs from `now` (so the
    /// lie changes the answer).
    fn other_slot(&self, index: u64, now: Option<SealedChecksum>) -> Option<SealedChecksum> {
        self.raw.iter().find(|&(&other, &sealed)| other != index && Some(sealed) != now).map(|(_, &sealed)| sealed)
    }
}
