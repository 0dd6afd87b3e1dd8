//! What one authenticated client can make the provider hold or wait for.
//!
//! A client is authenticated, not trusted to be gentle: every request that makes the provider
//! keep bytes, memory or a connection is bounded here, and a request past a bound is refused
//! with a typed error (`ErrorCode::TooLarge`) instead of being served.

use crate::request_error::RequestError;
use std::time::Duration;

/// Per-request bounds. The defaults are generous for honest use; `vouch serve` flags and the
/// `[limits]` table of its configuration file change them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of block data one put may upload (they are written to the store as they
    /// arrive; an abandoned put's are deleted).
    pub max_put_bytes: u64,
    /// Most blocks one put may upload (each costs the provider an index entry and a leaf in
    /// memory until the put commits).
    pub max_put_blocks: u64,
    /// Most bytes of block data one audit may hold in memory (the distinct challenged blocks).
    pub max_audit_bytes: u64,
    /// Longest a stream may stall: an upload that sends nothing, or a reader that consumes
    /// nothing, for this long loses its connection.
    pub stream_idle: Duration,
    /// Most uploads one client may have staged, waiting for their commits (`stage`, then
    /// `commit-staged`): each keeps its block list in memory until then.
    pub max_staged: usize,
    /// How long a staged upload waits for its commit before it is dropped (its blocks
    /// deleted; the commit is then refused as a conflict).
    pub staged_for: Duration,
    /// How long a VICOS group may go unused before its sequencer's state (its whole history
    /// and dictionary) leaves memory; its next message replays the group's journal.
    pub group_idle: Duration,
    /// The most bytes of a VICOS group's history one answer shows: a member further behind
    /// reads it in pages of this size (`aip-history`). Lower it behind a proxy that caps
    /// response bodies.
    pub aip_page_bytes: usize,
    /// The longest a VICOS COMMIT, answered at once, waits for the journal write that makes it
    /// durable: the next message's write takes it along, and this one writes it when no
    /// message comes. A crash in between loses it, and its member carries it again in its next
    /// INVOKE (`AipInvoke::commits`). Zero: written at once, on a task of its own (what the
    /// simulator runs: no wall clock in the order of its steps). Not a configuration setting:
    /// the tests stretch it.
    pub vicos_flush_after: Duration,
}

/// 256 GiB: a large file; the store's disk, not the provider's memory, is what it costs.
pub const DEFAULT_MAX_PUT_BYTES: u64 = 256 << 30;
/// 16 Mi blocks: 256 GiB at the default 16 KiB blocks, a few GiB of provider memory at most.
pub const DEFAULT_MAX_PUT_BLOCKS: u64 = 16 << 20;
/// 512 MiB: covers the default audit (460 offsets) even when every block has the largest
/// allowed size (1 MiB).
pub const DEFAULT_MAX_AUDIT_BYTES: u64 = 512 << 20;
/// 1024 uploads waiting: a portal's worth of applications writing at once.
pub const DEFAULT_MAX_STAGED: usize = 1024;
/// 10 minutes: a client commits its staged upload as soon as it holds its commit lock.
pub const DEFAULT_STAGED_FOR: Duration = Duration::from_secs(600);
/// 10 minutes: a group in use stays in memory; replaying a large group's journal costs
/// seconds, so a group is not dropped between the operations of a slow member.
pub const DEFAULT_GROUP_IDLE: Duration = Duration::from_secs(600);
/// 32 MiB: half a message, the rest left for the pending operations and the response.
pub const DEFAULT_AIP_PAGE_BYTES: usize = vouch_core::aip::wire::DELTA_BYTES;
/// 2 ms: long enough for a member's next INVOKE (or another member's message) to take a
/// COMMIT into its own write, short enough that an idle group's COMMITs are durable at once.
pub const DEFAULT_VICOS_FLUSH_AFTER: Duration = Duration::from_millis(2);
/// 60 s without progress ends a stream.
pub const DEFAULT_STREAM_IDLE: Duration = Duration::from_secs(60);
/// Longest time a non-streaming request may take. A PoR request's wait for its client's log
/// (while a batch is applied to it) is not counted, and a PoR batch's apply is bounded by
/// its own work only (see `crate::provider::por`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_put_bytes: DEFAULT_MAX_PUT_BYTES,
            max_put_blocks: DEFAULT_MAX_PUT_BLOCKS,
            max_audit_bytes: DEFAULT_MAX_AUDIT_BYTES,
            stream_idle: DEFAULT_STREAM_IDLE,
            max_staged: DEFAULT_MAX_STAGED,
            staged_for: DEFAULT_STAGED_FOR,
            group_idle: DEFAULT_GROUP_IDLE,
            aip_page_bytes: DEFAULT_AIP_PAGE_BYTES,
            vicos_flush_after: DEFAULT_VICOS_FLUSH_AFTER,
        }
    }
}

/// What a put has uploaded so far, checked against [`Limits`] batch by batch (before the
/// batch is stored).
#[derive(Debug, Default)]
pub(crate) struct PutBudget {
    bytes: u64,
    blocks: u64,
}

impl PutBudget {
    /// Counts a batch; `Err` names the limit it would pass.
    pub(crate) fn take(&mut self, limits: &Limits, blocks: &[vouch_proto::WireBlock]) -> Result<(), RequestError> {
        self.blocks += blocks.len() as u64;
        self.bytes += blocks.iter().map(|b| b.data.len() as u64).sum::<u64>();
        if self.blocks > limits.max_put_blocks {
            return Err(RequestError::PutBlocks { max: limits.max_put_blocks, blocks: self.blocks });
        }
        if self.bytes > limits.max_put_bytes {
            return Err(RequestError::PutBytes { max: limits.max_put_bytes, bytes: self.bytes });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_bytes::ByteBuf;
    use vouch_proto::WireBlock;

    fn block(len: usize) -> WireBlock {
        WireBlock { nonce: 0, tag: ByteBuf::new(), data: bytes::Bytes::from(vec![0; len]) }
    }

    #[test]
    fn a_put_budget_refuses_the_batch_that_passes_a_limit() {
        let limits = Limits { max_put_blocks: 3, max_put_bytes: 100, ..Limits::default() };
        let mut budget = PutBudget::default();
        budget.take(&limits, &[block(10), block(10)]).unwrap();
        assert!(budget.take(&limits, &[block(1), block(1)]).unwrap_err().to_string().contains("3 blocks"));
        let mut budget = PutBudget::default();
        budget.take(&limits, &[block(100)]).unwrap();
        assert!(budget.take(&limits, &[block(1)]).unwrap_err().to_string().contains("100 bytes"));
    }
}
