//! Which answer goes with which request. Each request of a one-message operation names its
//! [`Op`] and its answer type, so a client's call and a server's handler take both from the
//! request's type: an operation sent with another's request, or an answer read as another's,
//! does not compile. (Before, the tables in the module docs were the only record.)
//!
//! The streamed operations (`read`, `put`, `stage`, `cos-put`, `cos-get`) and `health` carry
//! frames or nothing, and are not here.

use crate::por::*;
use crate::vicos::*;
use crate::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A request of one message, answered by one message.
pub trait Rpc: Serialize + DeserializeOwned {
    /// The operation it is sent to.
    const OP: Op;
    /// What the provider answers.
    type Answer: Serialize + DeserializeOwned;
}

macro_rules! rpc {
    ($($request:ty => $op:ident -> $answer:ty;)*) => {
        $(impl Rpc for $request {
            const OP: Op = Op::$op;
            type Answer = $answer;
        })*

        /// Every operation that has an [`Rpc`] request, once each (for the tests).
        #[cfg(test)]
        const RPC_OPS: &[Op] = &[$(Op::$op),*];
    };
}

rpc! {
    LookupRequest => Lookup -> Located;
    ListRequest => List -> Listing;
    LogRequest => Log -> crate::Log;
    CommitStagedRequest => CommitStaged -> CommittedPuts;
    EditRequest => Edit -> Committed;
    RemoveRequest => Remove -> Committed;
    PruneRequest => Prune -> Committed;
    AuditRequest => Audit -> AuditAnswer;
    BlocksRequest => Blocks -> BlockList;
    LastCommitRequest => LastCommit -> LastCommit;
    HealBlocksRequest => HealBlocks -> HealedBlocks;
    PorInitRequest => PorInit -> PorStatus;
    PorStatusRequest => PorStatus -> PorStatus;
    PorPlanRequest => PorPlan -> PorContext;
    PorWriteRequest => PorWrite -> PorStatus;
    PorReadRequest => PorRead -> PorReadAnswer;
    PorAuditRequest => PorAudit -> PorAuditAnswer;
    PorRegionRequest => PorRegion -> PorRegionAnswer;
    PorRestoreRequest => PorRestore -> PorStatus;
    PorLabelRequest => PorLabel -> PorLabelAnswer;
    PorFreeRequest => PorFree -> PorFreeAnswer;
    PorMoreRequest => PorMore -> PorMoreAnswer;
    PorStageRequest => PorStage -> PorStaged;
    AipCreate => AipCreate -> AipAck;
    AipAdmit => AipAdmit -> AipAck;
    AipInvoke => AipInvoke -> AipReply;
    AipCommit => AipCommit -> AipWork;
    AipCommitAuth => AipCommitAuth -> AipWork;
    AipWorkRequest => AipWork -> AipWork;
    AipHistory => AipHistory -> AipHistoryPage;
    CosDelete => CosDelete -> AipAck;
}

/// The operations whose bodies are streams of frames, or empty.
pub const STREAMED_OPS: [Op; 5] = [Op::Health, Op::Read, Op::Stage, Op::CosPut, Op::CosGet];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_an_rpc_or_streamed_and_never_both() {
        for op in Op::ALL {
            let rpcs = RPC_OPS.iter().filter(|&&o| o == op).count();
            let streamed = STREAMED_OPS.contains(&op);
            assert_eq!(rpcs + usize::from(streamed), 1, "{op}");
        }
    }
}
