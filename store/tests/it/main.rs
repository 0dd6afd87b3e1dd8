//! The store crate's integration tests, in one binary: one link, and the generic code the
//! files share compiled once (each file was a binary of its own).

mod por_support;
mod repository;

mod backend_faults;
mod conformance;
mod crash;
mod faults;
mod por;
mod por_kill;
mod por_shrink;
