//! [`Strategy::HoldBatch`]: a PoR batch refused and kept, its labels served later, or the
//! batch applied later past the client's fence.

use super::adversary::{call, unavailable, Adversary, Held};
use super::strategy::Strategy;
use bytes::Bytes;
use vouch_proto::por::{PorLabelAnswer, PorLabelRequest, PorStageRequest, PorWriteRequest};
use vouch_proto::{encode, Op};

impl Adversary {
    /// Notes a client's PoR upload part, for a batch [`Strategy::HoldBatch`] may keep (a part
    /// at offset 0 begins the next upload).
    pub(super) fn stage_seen(&mut self, op: Op, token: &str, body: &Bytes) {
        if op != Op::PorStage {
            return;
        }
        let first = vouch_proto::decode::<PorStageRequest>(body).is_ok_and(|part| part.offset == 0);
        let parts = self.staging.entry(token.to_string()).or_default();
        if first {
            parts.clear();
        }
        parts.push(body.clone());
    }

    /// Whether to refuse this PoR batch and keep it with its parts: when the run's adversary
    /// holds batches, it keeps none of the client's yet, and the seed says so.
    pub(super) fn keeps(&mut self, op: Op, token: &str) -> bool {
        let holds = self.active && self.strategies.contains(&Strategy::HoldBatch);
        op == Op::PorWrite && holds && !self.kept.contains_key(token) && self.hold.percent(30)
    }

    /// Refuses the client's batch as an outage would, and keeps it with its parts and labels:
    /// the lie comes when they are used.
    pub(super) fn keep(&mut self, token: &str, batch: Bytes) -> Held {
        let parts = self.staging.get(token).cloned().unwrap_or_default();
        if let Ok(request) = vouch_proto::decode::<PorWriteRequest>(&batch) {
            for label in request.labels {
                self.kept_labels.insert((token.to_string(), label.key.to_vec()), label.value.to_vec());
            }
        }
        self.kept.insert(token.to_string(), (parts, batch));
        self.log.push(format!("  por-write from {token}: refused, kept (HoldBatch)"));
        unavailable()
    }

    /// A label of a batch it refused and kept, served for the label the client asks for, now
    /// and then (the batch was never applied: the label names slots the client may have
    /// given to something else since). A lie only where it differs from the provider's own
    /// answer (the client may have sent the same label again since, and had it applied).
    pub(super) async fn kept_label(&mut self, op: Op, token: &str, body: &Bytes) -> Result<Option<Held>, String> {
        if op != Op::PorLabel || !self.active {
            return Ok(None);
        }
        let Ok(asked) = vouch_proto::decode::<PorLabelRequest>(body) else { return Ok(None) };
        let Some(value) = self.kept_labels.get(&(token.to_string(), asked.key.to_vec())).cloned() else {
            return Ok(None);
        };
        if !self.hold.percent(60) {
            return Ok(None);
        }
        let answer: Bytes = encode(&PorLabelAnswer { value: Some(serde_bytes::ByteBuf::from(value)) }).into();
        let served = self.providers.serving(token)?;
        let honest = call(&served, op, token, body.clone()).await;
        if honest.status == 200 && honest.body == answer {
            return Ok(None);
        }
        *self.used.entry(Strategy::HoldBatch).or_default() += 1;
        *self.ops.entry(op.to_string()).or_default() += 1;
        self.lied = true;
        self.log.push(format!("  {op} from {token}: HoldBatch (a kept batch's label served)"));
        Ok(Some(Held { status: 200, body: answer, cut: false }))
    }

    /// Before the client's next batch, now and then: its kept batch applied first, past the
    /// fence (a restart drops it), its parts staged again.
    pub(super) async fn apply_kept(&mut self, token: &str) -> Result<(), String> {
        if !self.active || !self.kept.contains_key(token) || !self.hold.percent(50) {
            return Ok(());
        }
        let Some((parts, batch)) = self.kept.remove(token) else { return Ok(()) };
        self.restart().await?;
        let served = self.providers.serving(token)?;
        for part in parts {
            call(&served, Op::PorStage, token, part).await;
        }
        let applied = call(&served, Op::PorWrite, token, batch).await;
        *self.used.entry(Strategy::HoldBatch).or_default() += 1;
        // A lie once applied; refused (the log moved on), it changed nothing.
        self.lied |= applied.status == 200;
        self.log.push(format!("  por-write from {token}: HoldBatch (the kept batch answered {})", applied.status));
        Ok(())
    }
}
