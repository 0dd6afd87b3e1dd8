//! vouch-store: where an untrusted provider keeps its bytes and its metadata, as one engine.
//!
//! [`Repository`] is the engine (like restic's repository over its small backend, or redb's
//! `Database`): put an owner's blocks ([`Repository::upload`]), commit a change
//! ([`Commit`]: records, blocks, block lists, forgotten blocks), read blocks by owner and id,
//! compact, check, rebuild. Callers know no key layout, segment number or inline flag.
//!
//! Underneath, two small traits, shaped like restic's backend and redb's storage interface:
//!
//! * [`BlobStore`]: whole immutable objects under string keys: put (atomic), get, ranged get,
//!   list, delete. [`ObjectBlobs`] implements it over the `object_store` crate for a local
//!   directory (the embedded default) and for any S3-compatible service. It holds the block
//!   segments (self-describing: each carries a table of its blocks) and copies of the
//!   metadata's log and snapshots, so that the blobs alone are enough to rebuild everything.
//! * [`MetaStore`]: a transactional key-value store for the index, lists and records: reads,
//!   and batches of puts and deletes that commit atomically. [`MetaDb`] implements it with
//!   redb behind a write-ahead log (one flush per commit).
//!
//! **Metadata beside S3, not in it.** With the S3 backend the metadata still lives in the
//! embedded store beside the provider: one provider process owns a file's structures, redb
//! gives multi-key atomic commits (index, list nodes and root in one transaction) that S3
//! conditional writes give only per object, and it keeps the provider's hot path off the
//! network. S3 holds what is large: the block segments, and the metadata's copies.
//!
//! **PoR logs.** [`PorLog`] ([`por`]) keeps an owner's dynamic proof-of-retrievability log
//! over the same two stores: its levels and erasure-coded copy as large blob objects, its raw
//! buffer and state in the metadata store, under `por/`.
//!
//! Every failure is a [`StoreError`] naming what went wrong (missing key, permission, full
//! disk, unreachable endpoint, bad credentials, corrupt data), never a panic.
#![forbid(unsafe_code)]

mod blobs;
mod config;
mod error;
mod faulty;
mod keys;
mod lists;
mod meta;
mod object;
pub mod por;
mod repository;
mod segments;
mod wal;

pub use blobs::BlobStore;
pub use config::{ConfigError, S3Config};
pub use error::StoreError;
pub use faulty::{Call, Fault, Faults};
pub use meta::{Entry, MetaBatch, MetaDb, MetaStore};
pub use object::{BlobWriter, ObjectBlobs};
pub use por::{PorLog, PorStoreError};
pub use repository::{
    CheckReport, Commit, Compaction, CompactionPolicy, Problem, RebuildReport, Repository, StoredBlock, StoredBlocks,
    Upload,
};
pub use segments::DEFAULT_SEGMENT_SIZE;
