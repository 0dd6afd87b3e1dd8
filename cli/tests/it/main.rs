//! The cli crate's integration tests, in one binary: one link, and the generic code the
//! files share compiled once (each file was a binary of its own).

mod common;

mod cli;
mod crash_loop;
mod gateway_group;
mod por;
mod public_audit;
mod repair;
mod report;
mod session;
mod tls;
mod vicos;
