//! The client crate's integration tests, in one binary: one link, and the generic code the
//! files share compiled once (each file was a binary of its own).

mod common;
mod proxy;

mod absence;
mod bindings;
mod cache;
mod compaction;
mod concurrency;
mod crash;
mod e2e;
mod group_commit;
mod intents;
mod lie_matrix;
mod limits;
mod misbehave;
mod por;
mod por_compact;
mod por_lies;
mod por_s3;
mod public_audit;
mod rebuild;
mod rsa;
mod s3;
mod staged;
mod transport;
mod vicos;
mod vicos_direct;
mod vicos_ed25519;
mod vicos_recovery;
