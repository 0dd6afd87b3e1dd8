//! vouch-store: where an untrusted provider keeps its bytes and its metadata.
//!
//! Two small traits, shaped like restic's backend and redb's storage interface:
//!
//! * [`BlobStore`]: whole immutable objects under string keys: put (atomic), get, ranged get,
//!   list, delete. [`ObjectBlobs`] implements it over the `object_store` crate for a local
//!   directory (the embedded default) and for any S3-compatible service.
//! * [`MetaStore`]: a transactional key-value store for indexes, lists and roots: reads, and
//!   batches of puts and deletes that commit atomically. [`MetaDb`] implements it with redb, an
//!   embedded transactional store.
//!
//! **Metadata beside S3, not in it.** With the S3 backend the metadata still lives in the
//! embedded store beside the provider: one provider process owns a file's structures, redb
//! gives multi-key atomic commits (index, list nodes and root in one transaction) that S3
//! conditional writes give only per object, and it keeps the provider's hot path off the
//! network. S3 holds what is large: the block segments.
//!
//! Every failure is a [`StoreError`] naming what went wrong (missing key, permission, full
//! disk, unreachable endpoint, bad credentials), never a panic.
#![forbid(unsafe_code)]

mod blobs;
mod compact;
mod config;
mod error;
mod inline;
mod lists;
mod meta;
mod object;
mod segments;
mod wal;

pub use blobs::BlobStore;
pub use compact::{compact, next_segment, record_segments, sweep_orphans, Compaction};
pub use config::{ConfigError, S3Config};
pub use error::StoreError;
pub use inline::{delete_inline_segment, put_inline_segments, read_stored_blocks, INLINE_BIT, INLINE_MAX};
pub use lists::{
    chunk_count, load_list, save_edited_list, save_list, ListWriter, CHUNK_MAX, CHUNK_TARGET, MAX_DELTA_DEPTH,
};
pub use meta::{Entry, MetaBatch, MetaDb, MetaStore};
pub use object::ObjectBlobs;
pub use segments::{
    put_segments, read_block, read_blocks, segment_key, segment_sizes, Location, Segment, SegmentPacker,
    DEFAULT_SEGMENT_SIZE,
};
