//! vouch-gateway: the trusted portal of Iris (paper 004) as an S3 endpoint. Applications that
//! speak S3 (the aws CLI, boto3, rclone, object_store) use it unchanged; behind it, one vouch
//! client checks every answer of the untrusted provider against its namespace root before a
//! byte reaches them, and serialises their writes on that root.
//!
//! * The S3 protocol (SigV4 in headers and presigned URLs, path-style addressing, XML, ranges,
//!   aws-chunked bodies) is s3s's; this crate's one S3 front maps its operations onto a small
//!   store of verified objects: the client's namespace ([`s3`]), or a VICOS group's
//!   ([`group`]). What a store does not do, the front refuses (NotImplemented).
//! * An object is a vouch file: its body, then its metadata and ETag ([`object`]), named under
//!   its bucket ([`names`]).
//! * A provider caught lying reaches the application as the S3 error
//!   [`errors::VIOLATION_CODE`] (HTTP 502), never as altered data or a missing key.
//! * The portal keeps verified answers in the client's cache (Iris Sec. 7.2), reads ahead of
//!   sequential ranged reads, audits the provider in the background ([`audit`]) and exports
//!   its figures for Prometheus ([`Metrics`]).
//! * Group mode ([`start_group`]): the gateway is a member of a VICOS group
//!   (paper 003) and serves the group's object store instead of one client's namespace, so
//!   that several gateways serve one store, kept consistent by AIP; a forked or altered store
//!   reaches their applications as the same violation error ([`group`]).
#![forbid(unsafe_code)]

mod attributes;
pub mod audit;
mod background;
mod config;
pub mod errors;
mod fields;
mod front;
pub mod group;
mod hosts;
mod listing;
mod metrics;
mod multipart;
pub mod names;
pub mod object;
mod refuse;
mod s3;
mod serve;
mod status;
mod stream;
mod upload_sums;

pub use config::{AccessKey, AuditConfig, ConfigError, GatewayConfig};
pub use metrics::Metrics;
pub use serve::{in_process, start, start_group, InProcessGateway, RunningGateway};
pub use status::RoundSummary;
