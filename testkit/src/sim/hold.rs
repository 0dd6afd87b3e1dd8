//! [`Strategy::HoldBatch`]: a PoR batch refused and kept, its labels served later, or the
//! batch applied later past the client's fence.

use super::adversary::{call, unavailable, Adversary, Held, Kept, Plan};
use super::strategy::Strategy;
use bytes::Bytes;
use vouch_proto::por::{PorFreeAnswer, PorLabelAnswer, PorLabelRequest, PorStageRequest, PorWriteRequest};
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
    /// Batches that carry a copy's label are kept more often: their lies take more steps.
    pub(super) fn keeps(&mut self, op: Op, token: &str, body: &Bytes) -> bool {
        let holds = self.active && self.strategies.contains(&Strategy::HoldBatch);
        if op != Op::PorWrite || !holds || self.kept.contains_key(token) {
            return false;
        }
        let labelled = vouch_proto::decode::<PorWriteRequest>(body).is_ok_and(|batch| !batch.labels.is_empty());
        self.hold.percent(if labelled { 60 } else { 20 })
    }

    /// Refuses the client's batch as an outage would, and keeps it with its parts and labels:
    /// the lie comes when they are used. Which lie is chosen now, so that each is played out.
    pub(super) fn keep(&mut self, token: &str, batch: Bytes) -> Held {
        let parts = self.staging.get(token).cloned().unwrap_or_default();
        if let Ok(request) = vouch_proto::decode::<PorWriteRequest>(&batch) {
            for label in request.labels {
                self.kept_labels.insert((token.to_string(), label.key.to_vec()), label.value.to_vec());
            }
        }
        let plan = match self.hold.below(4) {
            0 | 1 => Plan::Labels,
            2 => Plan::Apply,
            _ => Plan::Splice,
        };
        self.kept.insert(token.to_string(), Kept { parts, batch, plan });
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

    /// Asked for free slots: none named now and then (the provider may keep ⊥ slots to
    /// itself; the client takes fresh ones), and, while it keeps a batch of the client's, the
    /// other answer than the one that batch's copy was placed by. No lie, but the copy tried
    /// again then lands elsewhere than the kept label says, and a later copy may take the
    /// slots it names: #43 item 1's hole, where a client believes that label. In the runs
    /// where it is the only lie, it names none most of the time (copies go to fresh slots,
    /// where the next copy after a retry goes too), and then names them for the retry.
    pub(super) fn names_no_free(&mut self, op: Op, token: &str) -> Option<Held> {
        let holds = self.active && self.strategies.contains(&Strategy::HoldBatch);
        if op != Op::PorFree || !holds {
            return None;
        }
        let none = match self.kept.contains_key(token) {
            true => !self.named_none.contains(token),
            false => self.free_answers.percent(self.names_none),
        };
        match none {
            true => self.named_none.insert(token.to_string()),
            false => self.named_none.remove(token),
        };
        if !none {
            return None;
        }
        self.log.push(format!("  {op}: HoldBatch (no free slot named)"));
        Some(Held { status: 200, body: encode(&PorFreeAnswer { runs: Vec::new() }).into(), cut: false })
    }

    /// Before the client's next batch, by the kept batch's plan: let go (its labels stay to
    /// be served: the client's retry passes); applied first, now and then, past the fence (a
    /// restart drops it), its parts staged again; or applied on a copy of the state, whose
    /// levels [`Adversary::splice_kept`] puts over the ones the client's batch writes.
    /// Whether it did any: the batch at hand is then not kept in turn.
    pub(super) async fn apply_kept(&mut self, token: &str) -> Result<bool, String> {
        let Some(kept) = self.kept.get(token) else { return Ok(false) };
        let plan = kept.plan;
        if plan == Plan::Labels {
            self.kept.remove(token);
            return Ok(true);
        }
        if !self.active || (plan == Plan::Apply && !self.hold.percent(50)) {
            return Ok(false);
        }
        let Some(Kept { parts, batch, .. }) = self.kept.remove(token) else { return Ok(false) };
        let (side, served) = match plan {
            Plan::Apply => {
                self.restart().await?;
                (None, self.providers.serving(token)?)
            }
            _ => {
                let (dir, served) = self.providers.side().await?;
                (Some(dir), served)
            }
        };
        for part in parts {
            call(&served, Op::PorStage, token, part).await;
        }
        let applied = call(&served, Op::PorWrite, token, batch).await;
        drop(served);
        *self.used.entry(Strategy::HoldBatch).or_default() += 1;
        match side {
            // Applied beside, it is a lie once spliced in.
            Some(dir) if applied.status == 200 => self.splice_from = Some(dir),
            Some(_) => {}
            // A lie once applied; refused (the log moved on), it changed nothing.
            None => self.lied |= applied.status == 200,
        }
        let how = if plan == Plan::Splice { "applied beside" } else { "answered" };
        self.log.push(format!("  por-write from {token}: HoldBatch (the kept batch {how} {})", applied.status));
        Ok(true)
    }

    /// After the client's batch is applied: the levels and C the kept batch wrote on the copy
    /// (same names: same level, same time) put over the live ones, where they differ. Both
    /// are authentic, sealed for the same slots and time; only the client's record of the
    /// refused batch (its incarnation) tells them apart.
    pub(super) async fn splice_kept(&mut self, from: std::path::PathBuf, status: u16) -> Result<(), String> {
        if status != 200 {
            return Ok(());
        }
        let spliced = self.providers.splice(&from)?;
        if spliced > 0 {
            self.restart().await?;
            self.lied = true;
        }
        self.log.push(format!("  por-write: HoldBatch ({spliced} files of the kept batch's levels spliced in)"));
        Ok(())
    }
}
