//! vouch-client: the trusted side. It keeps a tag key, a bearer token and one namespace root
//! (see [`state`]), and checks every answer of the provider against that root before it
//! returns, writes or records anything ([`Client`]).
#![forbid(unsafe_code)]

mod chunking;
mod client;
mod edits;
mod error;
mod intent;
mod lock;
mod remote;
mod settle;
pub mod state;
mod transport;
mod violation;

pub use chunking::Cutting;
pub use client::{AuditReport, Client, Transfer, Verified};
pub use edits::{ByteEdit, SyncReport};
pub use error::ClientError;
pub use remote::{Remote, MAX_ERROR_BODY};
pub use transport::{Transport, DEFAULT_MIN_RATE, DEFAULT_TIMEOUT};
pub use violation::{Violation, ViolationKind};
