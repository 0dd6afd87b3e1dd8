//! vouch-client: the trusted side. It keeps a tag key, a bearer token and one namespace root
//! (see [`state`]), and checks every answer of the provider against that root before it
//! returns, writes or records anything ([`Client`]).
#![forbid(unsafe_code)]

mod client;
mod error;
mod remote;
pub mod state;

pub use client::{AuditReport, ByteEdit, Client, Transfer, Verified};
pub use error::{exit, ClientError};
pub use remote::Remote;
