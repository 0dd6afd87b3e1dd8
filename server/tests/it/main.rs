//! The server crate's integration tests, in one binary: one link, and the generic code the
//! files share compiled once (each file was a binary of its own).

#[path = "support/vicos.rs"]
mod support_vicos;

mod cos;
mod faults;
mod limits;
mod por;
mod vicos;
