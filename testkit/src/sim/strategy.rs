//! What the adversary may do, one plain enum per kind of choice (new ones are a variant and a
//! match arm each). A seed picks the strategies a run may use, then one per message.

/// What the provider does with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Strategy {
    /// Answers as the real provider does.
    Honest,
    /// Says its storage is unavailable, without applying the request (an honest outage).
    Refuse,
    /// Applies the request, then the connection drops before the answer (an honest crash's
    /// view from the client).
    LoseAnswer,
    /// Crashes and restarts before the request is applied; the client sees the connection
    /// drop.
    CrashBefore,
    /// Applies the request, crashes and restarts; the client sees the connection drop.
    CrashAfter,
    /// Applies the request and then says it did not (storage unavailable): a lie about the
    /// outcome, made after seeing the request.
    ApplyThenRefuse,
    /// Answers with an earlier answer to the same operation, of any client.
    ReplayAnswer,
    /// Before the request, sends the provider an earlier request of the same operation (any
    /// client's, signed or not) again, then answers honestly.
    ReplayRequest,
    /// Answers from a copy of its state taken earlier (a rollback).
    Rollback,
    /// Applies the request and cuts the answer short at a point the seed picks.
    Truncate,
    /// Applies the request and flips one bit of the answer.
    Corrupt,
    /// Cuts a streamed object's answer after some of its frames and ends it with "not found",
    /// as if the object went away while it was read (a lie while the group still names it).
    CutThenNotFound,
    /// Holds a member's INVOKE until the other member has put the key it names (a schedule an
    /// honest provider under concurrent members also produces: no lie).
    Delay,
    /// Keeps a PoR batch it refused (as [`Strategy::Refuse`] does, applying nothing), with a
    /// plan: it serves the kept batch's labels later when the client asks for them; or, at
    /// the client's next batch, applies the kept one first, past the fence the client raised
    /// when it settled the batch as not applied (the honest provider keeps the fence in
    /// memory: a restart drops it); or applies it on a copy of its state and splices the
    /// levels it wrote over those of the client's next batch. The lies of #43 items 1-3: a
    /// refused batch's labels and seals used later.
    HoldBatch,
}

impl Strategy {
    /// Every strategy, for coverage reports.
    pub const ALL: [Strategy; 14] = [
        Strategy::Honest,
        Strategy::Refuse,
        Strategy::LoseAnswer,
        Strategy::CrashBefore,
        Strategy::CrashAfter,
        Strategy::ApplyThenRefuse,
        Strategy::ReplayAnswer,
        Strategy::ReplayRequest,
        Strategy::Rollback,
        Strategy::Truncate,
        Strategy::Corrupt,
        Strategy::CutThenNotFound,
        Strategy::Delay,
        Strategy::HoldBatch,
    ];

    /// Faults an honest provider has: a client must never report one as a lie.
    pub const HONEST_FAULTS: [Strategy; 4] =
        [Strategy::Refuse, Strategy::LoseAnswer, Strategy::CrashBefore, Strategy::CrashAfter];

    pub fn is_honest(self) -> bool {
        matches!(self, Strategy::Honest | Strategy::Delay) || Strategy::HONEST_FAULTS.contains(&self)
    }

    /// Whether the adversary plays the strategy on its own schedule rather than drawing it for
    /// a message ([`Strategy::Delay`], [`Strategy::HoldBatch`]).
    pub fn is_scheduled(self) -> bool {
        matches!(self, Strategy::Delay | Strategy::HoldBatch)
    }

    /// Whether the strategy is made for a few operations only ([`Strategy::applies_to`]).
    pub fn is_specific(self) -> bool {
        matches!(self, Strategy::CutThenNotFound | Strategy::Delay)
    }

    /// Whether the strategy does anything to a message of `op` (the adversary picks among
    /// those that do).
    pub fn applies_to(self, op: vouch_proto::Op) -> bool {
        match self {
            Strategy::CutThenNotFound => op == vouch_proto::Op::CosGet,
            Strategy::Delay => op == vouch_proto::Op::AipInvoke,
            _ => true,
        }
    }
}

/// What the adversary does between operations, to what it stores or whom it serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Loses one stored blob.
    LoseBlob,
    /// Flips one bit of one stored blob.
    CorruptBlob,
    /// Keeps a copy of its whole state, for later rollbacks.
    Snapshot,
    /// Serves the second group member from a copy of its state from now on (a fork).
    Fork,
    /// Serves both members from the original state again (the fork joined).
    Join,
    /// Crashes and restarts between requests (honest).
    Crash,
}

impl Action {
    pub const ALL: [Action; 6] =
        [Action::LoseBlob, Action::CorruptBlob, Action::Snapshot, Action::Fork, Action::Join, Action::Crash];

    pub fn is_honest(self) -> bool {
        matches!(self, Action::Snapshot | Action::Crash)
    }
}
