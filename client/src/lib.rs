//! vouch-client: the trusted side. It keeps a tag key, a bearer token and one namespace root
//! (see [`state`]), and checks every answer of the provider against that root before it
//! returns, writes or records anything ([`Client`]). The checks themselves are pure functions
//! ([`verify`]); the client around them does the transport and keeps the state.
//!
//! # Sharing one client
//!
//! A [`Client`] is `Send + Sync`: a process opens its state once and shares the client
//! (`Arc<Client>`) among all its tasks. Every method takes `&self`.
//!
//! * **Commits are serialised.** A method that changes the root (`put`, `edit`, `sync`,
//!   `remove`, `prune`) holds the client's commit lock from the proven lookup it starts from
//!   to the adoption of the new root: one commit in flight per root, as the provider too
//!   applies one change at a time per client. Concurrent commits wait their turn, in order;
//!   puts that wait together are committed together (`crate::group`), on a task of the
//!   client's own, so a caller that stops waiting does not stop the others' commit.
//! * **Reads run concurrently** (`get`, `version`, `list`, `log`, `audit`), with each other
//!   and with a commit in flight. A read checks its answer against the root the client held
//!   when the read was sent, or against any root adopted since: the provider may answer from
//!   the state before or after a concurrent commit, and either is a true answer at some
//!   instant during the read. When the answer fits neither while a commit may have moved the
//!   root (one adopted since, in flight, or unsettled), the read waits for that commit to end,
//!   settles it if its answer was lost, and checks again with the roots adopted by then. Only
//!   an answer that fits no root from the read's start on is a lie; an older root (a
//!   rollback) never is accepted. A read's data (block chunks) is checked against the version
//!   its header proved, whatever commits land meanwhile.
//! * **Crash recovery is unchanged**: a commit records its intent before its request leaves
//!   and forgets it only after the new root is saved ([`StateStore`]); a change whose answer
//!   was lost is settled before the next commit starts, or by the next read when no commit
//!   is in flight.
//! * **The state directory is locked** by the process that opened it ([`Client::open`]).
//!   Two clients opened on one directory in one process share the lock but not their roots
//!   (each one's commits make the other's root stale): share one client instead.
//!
//! A client need not have a directory: [`Client::new`] takes a [`ClientState`] (a key and a
//! [`StateStore`], e.g. [`MemoryState`]) and a [`Remote`].
//!
//! # Invariants
//!
//! The provider is the adversary, and it chooses: which write to refuse after seeing it, which
//! old answer or signed message to replay, where to cut a stream. Every path of the client
//! keeps these, and each has a test where the provider breaks it and is caught:
//!
//! * **A write that was refused, lost or not applied leaves nothing the provider can use
//!   later**: no label (a PoR copy whose label's batch was refused is written again where that
//!   label points), no sealed checksum (H's and C's seals are bound to an incarnation of the
//!   write history, which a batch settled as not applied ends), no signed statement valid in
//!   another place.
//! * **No byte reaches an output before the whole object it belongs to is verified, or the
//!   output is discarded.**
//! * **The provider's word settles nothing the client's own record can settle** (an owed PoR
//!   copy is made unless the client saw its batch applied), and an honest fault (a crash, a
//!   refusal, a lost answer, lost bytes) is never reported as a lie: the client can go on.
#![forbid(unsafe_code)]

mod atomic;
mod cache;
mod chunking;
mod client;
mod commit;
mod edits;
mod error;
mod group;
mod intent;
mod keys;
mod ledger;
mod link;
mod lock;
mod persist;
mod por;
pub mod public;
mod put;
mod reads;
mod remote;
mod root;
mod staged;
pub mod state;
mod state_log;
mod transport;
mod upload;
pub mod verify;
pub mod vicos;
mod violation;
mod waiting;

pub use cache::{CacheStats, ReadCache};
pub use chunking::Cutting;
pub use client::{Client, ClientState};
pub use edits::{ByteEdit, SyncReport};
pub use error::ClientError;
pub use intent::Intent;
pub use keys::{key_id, ClientKey, KeyChoice, SecretKey};
pub use link::{ByteStream, Link, LinkAnswer, LinkRequest};
pub use persist::{MemoryState, StateStore};
pub use por::{PorAuditReport, PorCopyReport, PorPartReport, PorSession, MIN_POR_LAMBDA};
pub use public::{AuditRoot, PublicAuditor};
pub use put::{Expected, PutOptions};
pub use reads::AuditReport;
pub use remote::{Remote, MAX_ERROR_BODY};
pub use transport::{Transport, DEFAULT_MIN_RATE, DEFAULT_TIMEOUT};
pub use upload::{unix_now, Transfer};
pub use verify::Verified;
pub use violation::{Violation, ViolationKind};
