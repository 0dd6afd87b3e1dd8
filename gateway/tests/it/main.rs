//! The gateway crate's integration tests, in one binary: one link, and the generic code the
//! files share compiled once (each file was a binary of its own).

mod common;

mod concurrency;
mod connections;
mod group;
mod lies;
mod object_store;
mod on_s3;
mod portal;
mod refusals;
mod s3_clients;
mod slow_bodies;
mod tools;
