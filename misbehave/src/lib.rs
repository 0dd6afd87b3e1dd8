//! A provider that lies on purpose, for tests and `vouch demo`: each [`Misbehave`] is a way an
//! untrusted provider can cheat, and the client must catch every one of them.
//!
//! The lies live here and only here, in [`Misbehaving`]: a decorator around the honest
//! [`Provider`] (the way redb tests crashes by wrapping its storage backend), served through
//! the server's [`Service`] trait. It overrides only the operations it lies about, and runs
//! each through the honest provider's own steps with its lie in between (an answer after the
//! fact, a request before it, a step of a commit left out or done differently), so the honest
//! code has no lie in it, and a lie's proofs are honest for what the provider did. A real
//! server (`vouch serve` without `--misbehave`) serves the [`Provider`] itself.
//!
//! One lie is a fault of the store itself, [`Misbehave::SkipPorRebuild`]: the provider is
//! opened over a blob store that garbles what it keeps of H's levels
//! ([`Misbehaving::open_dir`], through `vouch_store::Faults`), and the honest steps run over
//! it. No production type has a hook for it.
#![forbid(unsafe_code)]

mod changes;
mod por;
mod reads;
mod vicos;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use vouch_proto::por::*;
use vouch_proto::vicos::*;
use vouch_proto::{
    AuditAnswer, AuditRequest, BlockList, CommitStagedRequest, Committed, CommittedPuts, EditRequest, Listing, Located,
    PruneRequest, ReadChunk, RemoveRequest, WireBlock,
};
use vouch_server::{Answer, Blocks, Faults, Limits, OpenError, Provider, ProviderError, PutState, ReadPlan, Service};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Misbehave {
    /// Honest.
    #[default]
    None,
    /// Flip a byte of a block it serves (reads and audits) or of a tag it lists (sync).
    CorruptBlock,
    /// Leave a block out of what it serves.
    DropBlock,
    /// Serve two blocks in each other's place.
    SwapBlocks,
    /// Acknowledge changes with valid proofs, then forget them: later answers come from the
    /// state before (a rollback of the whole namespace).
    Rollback,
    /// Serve the previous version of a file as its latest.
    OldVersion,
    /// Answer each audit of a file with the first proof it made for it.
    ReplayProof,
    /// Answer an audit for another challenge than the one asked.
    OtherChallenge,
    /// Leave the first name out of listings.
    HideFile,
    /// Stop a read stream after its first chunk.
    TruncateStream,
    /// Say an old version that exists does not ("not found" for any version asked by number
    /// but the latest).
    HideVersion,
    /// Stretch the last block of each read chunk over the bytes of its unopened neighbour
    /// (moving the length inside the proof, every sum kept) and pad it with zeros.
    StretchBlock,
    /// Send, with a valid proof, one block more than a range read asked for.
    PastRange,
    /// Receive every block of the first change after a start, then refuse its commit; keep the
    /// (nonce, tag) of every block received, so a test can compare two attempts' PRF inputs.
    RefuseCommit,
    /// Change a count by one more than the commit asked for: a version appended twice or
    /// one more pruned, a new name entered twice or a removal that takes the next name too;
    /// with proofs honest for what it did.
    WrongCount,
    /// Make each change durable, then answer "storage unavailable" instead of its proofs: an
    /// answer lost to a crash or a broken connection. Not a lie (an honest provider can fail
    /// this way); the client must settle the change from proven state (`last-commit`).
    DropAnswer,
    /// Wait [`SLOW_COMMIT`] before applying each change and as long again before answering.
    /// Not a lie: a slow honest provider, so that a test's kill lands in the middle of a
    /// commit (before it is durable, or after it and before the answer).
    SlowCommit,
    /// Answer each PoR audit with every part's aggregate slot changed (one added to its last
    /// element): the forged aggregate of Sec. 5.5.
    ForgePorAggregate,
    /// Answer each read of U with its first two slots (and their sealed checksums) in each
    /// other's place.
    SwapPorSlots,
    /// Keep H's levels other than rebuilt and still commit and acknowledge each PoR batch: the
    /// blob store keeps every segment of a level with its words in the reverse order (the
    /// data all there, not the code), under the client's sealed checksums of the real level.
    /// U and C stay honest.
    SkipPorRebuild,
    /// Answer each PoR plan with, for each level it asks for, the sealed checksums that level
    /// had at an earlier time (the first other list of it the provider was handed with a
    /// batch), when it has one.
    StalePorLevel,
    /// Answer each PoR plan's `old` and each read of U with, for each slot, the sealed
    /// checksum of another slot of U (one the provider was handed with a batch), when it has
    /// one that differs.
    OtherPorChecksum,
    /// Answer each request for U's free slots but the first (so that a copy is there to
    /// damage) with slots `0..most_slots` as one run, whether they hold live copies or not: a
    /// provider that would have a client overwrite its own data.
    FreePorLiveSlots,
    /// Fail each PoR write with "storage unavailable" and apply nothing. Not a lie: a provider
    /// that went down, so that a test stops a client between a commit and the PoR batches
    /// that follow it.
    FailPorWrites,
    /// Fail every second PoR write with "storage unavailable" and apply nothing. Not a lie: a
    /// provider that keeps going down, so that a test stops a client's consolidation at each
    /// of its batches in turn.
    FlakyPorWrites,
    /// Answer each request for a PoR label with the first value the label held (a label sealed
    /// again since, by a consolidation that moved the copy, is served as it was).
    StalePorLabel,
    /// Refuse, with "storage unavailable" and without applying it, the first PoR write that
    /// carries labels, and keep them; from then on answer each request for one of those labels
    /// with the value kept (a label the provider saw in a batch it refused, served as if the
    /// batch had been applied).
    RefusedPorLabel,
    /// Answer every request for a PoR label with "none": a provider that dropped the labels
    /// (and with them, for all the client can tell, the copies).
    DropPorLabels,
    /// Apply the first PoR write, then fail it and every PoR write and status request after
    /// it with "storage unavailable". Not a lie: a provider that went down right after a
    /// batch was durable, before its answer went out.
    DropPorAnswer,
    /// Take [`SLOW_POR_WRITE`] to apply the first PoR write (holding the log all along, as a
    /// long apply does), then apply the others at once. Not a lie: a slow honest provider,
    /// whose client stops waiting for a batch still being applied.
    SlowPorWrite,
    /// Fork every VICOS group at its creation: members with odd ids run AIP on a second copy
    /// of the history, each copy honest in itself, for their first [`FORK_OPERATIONS`]
    /// operations; then the forks meet (those members are shown the real history again).
    ForkAip,
}

/// How many operations each member on [`Misbehave::ForkAip`]'s second history runs there.
pub const FORK_OPERATIONS: u64 = 3;

/// Each of [`Misbehave::SlowCommit`]'s two waits.
pub const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_millis(15);

/// How long [`Misbehave::SlowPorWrite`] takes over its first PoR write.
pub const SLOW_POR_WRITE: std::time::Duration = std::time::Duration::from_secs(5);

impl Misbehave {
    pub const ALL: [Misbehave; 31] = [
        Misbehave::None,
        Misbehave::CorruptBlock,
        Misbehave::DropBlock,
        Misbehave::SwapBlocks,
        Misbehave::Rollback,
        Misbehave::OldVersion,
        Misbehave::ReplayProof,
        Misbehave::OtherChallenge,
        Misbehave::HideFile,
        Misbehave::TruncateStream,
        Misbehave::HideVersion,
        Misbehave::StretchBlock,
        Misbehave::PastRange,
        Misbehave::RefuseCommit,
        Misbehave::WrongCount,
        Misbehave::DropAnswer,
        Misbehave::SlowCommit,
        Misbehave::ForgePorAggregate,
        Misbehave::SwapPorSlots,
        Misbehave::SkipPorRebuild,
        Misbehave::StalePorLevel,
        Misbehave::OtherPorChecksum,
        Misbehave::FreePorLiveSlots,
        Misbehave::FailPorWrites,
        Misbehave::FlakyPorWrites,
        Misbehave::StalePorLabel,
        Misbehave::RefusedPorLabel,
        Misbehave::DropPorLabels,
        Misbehave::DropPorAnswer,
        Misbehave::SlowPorWrite,
        Misbehave::ForkAip,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Misbehave::None => "none",
            Misbehave::CorruptBlock => "corrupt-block",
            Misbehave::DropBlock => "drop-block",
            Misbehave::SwapBlocks => "swap-blocks",
            Misbehave::Rollback => "rollback",
            Misbehave::OldVersion => "old-version",
            Misbehave::ReplayProof => "replay-proof",
            Misbehave::OtherChallenge => "other-challenge",
            Misbehave::HideFile => "hide-file",
            Misbehave::TruncateStream => "truncate-stream",
            Misbehave::HideVersion => "hide-version",
            Misbehave::StretchBlock => "stretch-block",
            Misbehave::PastRange => "past-range",
            Misbehave::RefuseCommit => "refuse-commit",
            Misbehave::WrongCount => "wrong-count",
            Misbehave::DropAnswer => "drop-answer",
            Misbehave::SlowCommit => "slow-commit",
            Misbehave::ForgePorAggregate => "forge-por-aggregate",
            Misbehave::SwapPorSlots => "swap-por-slots",
            Misbehave::SkipPorRebuild => "skip-por-rebuild",
            Misbehave::StalePorLevel => "stale-por-level",
            Misbehave::OtherPorChecksum => "other-por-checksum",
            Misbehave::FreePorLiveSlots => "free-por-live-slots",
            Misbehave::FailPorWrites => "fail-por-writes",
            Misbehave::FlakyPorWrites => "flaky-por-writes",
            Misbehave::StalePorLabel => "stale-por-label",
            Misbehave::RefusedPorLabel => "refused-por-label",
            Misbehave::DropPorLabels => "drop-por-labels",
            Misbehave::DropPorAnswer => "drop-por-answer",
            Misbehave::SlowPorWrite => "slow-por-write",
            Misbehave::ForkAip => "fork-aip",
        }
    }
}

impl fmt::Display for Misbehave {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Misbehave {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Misbehave::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Misbehave::ALL.iter().map(|m| m.name()).collect();
            format!("unknown misbehaviour {s:?}; one of: {}", names.join(", "))
        })
    }
}

/// A client's name and a label key.
type LabelOf = (String, Vec<u8>);

/// A provider that lies as told ([`Misbehave::None`]: passes every request through).
#[derive(Debug)]
pub struct Misbehaving {
    honest: Provider,
    lie: Misbehave,
    /// The first audit proof per (client, file, version), for [`Misbehave::ReplayProof`].
    first_proofs: Mutex<HashMap<String, Vec<u8>>>,
    /// For [`Misbehave::RefuseCommit`]: whether it has refused yet, and the (nonce, tag) of
    /// every block received.
    refused: AtomicBool,
    /// For [`Misbehave::FreePorLiveSlots`]: whether a client has asked for free slots yet.
    por_free_asked: AtomicBool,
    received: Mutex<Vec<(u64, Vec<u8>)>>,
    /// For [`Misbehave::StalePorLevel`] and [`Misbehave::OtherPorChecksum`]: the sealed
    /// checksums each client handed over with its batches.
    por_handed: Mutex<HashMap<String, por::Handed>>,
    /// For [`Misbehave::FlakyPorWrites`]: the PoR writes asked for so far.
    por_writes: AtomicU64,
    /// For [`Misbehave::StalePorLabel`]: the first value of each (client, label key); for
    /// [`Misbehave::RefusedPorLabel`], the values of the labels of the batch it refused.
    por_first_labels: Mutex<HashMap<LabelOf, Vec<u8>>>,
    /// For [`Misbehave::ForkAip`]: per (group, member), the operations it invoked so far.
    fork_invokes: Mutex<HashMap<(String, u32), u64>>,
}

/// Whether a blob key is a segment of one of H's levels (`por/<log>/level-../slots-..`).
fn is_level_segment(key: &str) -> bool {
    key.starts_with("por/") && key.contains("/level-") && key.contains("/slots-")
}

impl Misbehaving {
    /// The provider over `data` (blocks where `blocks` says), lying as `lie`: opened over a
    /// garbling blob store for the lie that is its storage's ([`Misbehave::SkipPorRebuild`]).
    pub fn open_dir(data: &Path, blocks: &Blocks, lie: Misbehave) -> Result<Misbehaving, OpenError> {
        let honest = match lie {
            Misbehave::SkipPorRebuild => {
                let faults = Faults::new();
                faults.garble_puts(is_level_segment);
                Provider::open_dir_faulty(data, blocks, faults)?
            }
            _ => Provider::open_dir(data, blocks)?,
        };
        Ok(Misbehaving::new(honest, lie))
    }

    fn new(honest: Provider, lie: Misbehave) -> Self {
        Misbehaving {
            honest,
            lie,
            first_proofs: Mutex::default(),
            refused: AtomicBool::default(),
            por_free_asked: AtomicBool::default(),
            received: Mutex::default(),
            por_handed: Mutex::default(),
            por_writes: AtomicU64::default(),
            por_first_labels: Mutex::default(),
            fork_invokes: Mutex::default(),
        }
    }

    pub fn misbehave(&self) -> Misbehave {
        self.lie
    }

    /// Under [`Misbehave::RefuseCommit`], the (nonce, tag) of every block received so far, in
    /// order (what a curious provider learns from uploads, whether it commits them or not).
    pub fn received_tags(&self) -> Vec<(u64, Vec<u8>)> {
        self.received.lock().expect("received tags").clone()
    }
}

/// The operations a lie changes; every other one is the honest provider's.
impl Service for Misbehaving {
    fn honest(&self) -> &Provider {
        &self.honest
    }

    fn located(&self, client: &str, name: &str, want: Option<u64>) -> Result<Located, ProviderError> {
        reads::located(self, client, name, want)
    }

    fn listing(&self, client: &str) -> Result<Listing, ProviderError> {
        reads::listing(self, client)
    }

    fn read_plan(
        &self,
        client: &str,
        name: &str,
        want: Option<u64>,
        start: u64,
        end: u64,
    ) -> Result<(Located, ReadPlan), ProviderError> {
        reads::read_plan(self, client, name, want, start, end)
    }

    fn read_chunk<'a>(&'a self, client: &'a str, plan: &'a ReadPlan, starts: &'a [u64]) -> Answer<'a, ReadChunk> {
        Box::pin(reads::read_chunk(self, client, plan, starts))
    }

    fn block_list(&self, client: &str, name: &str, want: Option<u64>) -> Result<BlockList, ProviderError> {
        reads::block_list(self, client, name, want)
    }

    fn audit<'a>(&'a self, client: &'a str, req: &'a AuditRequest, max_bytes: u64) -> Answer<'a, AuditAnswer> {
        Box::pin(reads::audit(self, client, req, max_bytes))
    }

    fn put_blocks<'a>(&'a self, put: &'a mut PutState, blocks: Vec<WireBlock>) -> Answer<'a, ()> {
        Box::pin(changes::put_blocks(self, put, blocks))
    }

    fn commit_staged<'a>(
        &'a self,
        client: &'a str,
        req: &'a CommitStagedRequest,
        limits: &'a Limits,
    ) -> Answer<'a, CommittedPuts> {
        Box::pin(changes::commit_staged(self, client, req, limits))
    }

    fn edit<'a>(&'a self, client: &'a str, req: EditRequest) -> Answer<'a, Committed> {
        Box::pin(changes::edit(self, client, req))
    }

    fn remove<'a>(&'a self, client: &'a str, req: &'a RemoveRequest) -> Answer<'a, Committed> {
        Box::pin(changes::remove(self, client, req))
    }

    fn prune<'a>(&'a self, client: &'a str, req: &'a PruneRequest) -> Answer<'a, Committed> {
        Box::pin(changes::prune(self, client, req))
    }

    fn por_status<'a>(&'a self, client: &'a str, req: &'a PorStatusRequest) -> Answer<'a, PorStatus> {
        Box::pin(por::por_status(self, client, req))
    }

    fn por_plan<'a>(&'a self, client: &'a str, req: &'a PorPlanRequest) -> Answer<'a, PorContext> {
        Box::pin(por::por_plan(self, client, req))
    }

    fn por_write<'a>(&'a self, client: &'a str, req: &'a PorWriteRequest) -> Answer<'a, PorStatus> {
        Box::pin(por::por_write(self, client, req))
    }

    fn por_label<'a>(&'a self, client: &'a str, req: &'a PorLabelRequest) -> Answer<'a, PorLabelAnswer> {
        Box::pin(por::por_label(self, client, req))
    }

    fn por_free<'a>(&'a self, client: &'a str, req: &'a PorFreeRequest) -> Answer<'a, PorFreeAnswer> {
        Box::pin(por::por_free(self, client, req))
    }

    fn por_read<'a>(&'a self, client: &'a str, req: &'a PorReadRequest) -> Answer<'a, PorReadAnswer> {
        Box::pin(por::por_read(self, client, req))
    }

    fn por_audit<'a>(&'a self, client: &'a str, req: &'a PorAuditRequest) -> Answer<'a, PorAuditAnswer> {
        Box::pin(por::por_audit(self, client, req))
    }

    fn aip_create<'a>(&'a self, req: &'a AipCreate, caller: &'a str) -> Answer<'a, AipAck> {
        Box::pin(vicos::aip_create(self, req, caller))
    }

    fn aip_admit<'a>(&'a self, req: &'a AipAdmit, caller: &'a str) -> Answer<'a, AipAck> {
        Box::pin(vicos::aip_admit(self, req, caller))
    }

    fn aip_invoke<'a>(&'a self, req: &'a AipInvoke, caller: &'a str) -> Answer<'a, AipReply> {
        Box::pin(vicos::aip_invoke(self, req, caller))
    }

    fn aip_commit<'a>(&'a self, req: &'a AipCommit, caller: &'a str) -> Answer<'a, AipWork> {
        Box::pin(vicos::aip_commit(self, req, caller))
    }

    fn aip_commit_auth<'a>(&'a self, req: &'a AipCommitAuth, caller: &'a str) -> Answer<'a, AipWork> {
        Box::pin(vicos::aip_commit_auth(self, req, caller))
    }

    fn aip_work<'a>(&'a self, req: &'a AipWorkRequest, caller: &'a str) -> Answer<'a, AipWork> {
        Box::pin(vicos::aip_work(self, req, caller))
    }

    fn aip_history<'a>(&'a self, req: &'a AipHistory, caller: &'a str) -> Answer<'a, AipHistoryPage> {
        Box::pin(vicos::aip_history(self, req, caller))
    }
}
