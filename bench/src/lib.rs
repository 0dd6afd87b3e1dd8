//! vouch-bench: the benchmarks behind `vouch bench`.
//!
//! Every benchmark measures the papers' figures on this machine and, in the same run, a baseline
//! that bounds what is possible (raw hash rate, a well-known crate doing the same job). Figures
//! are the minimum of several runs. Each report ends in a list of [`Target`]s, met or missed,
//! and serialises to one JSON object. Nothing here asserts a time: a benchmark prints.
#![forbid(unsafe_code)]

pub mod aip;
mod aip_figures;
mod aip_protocol;
mod detection;
pub mod e2e;
pub mod flexlist;
pub mod gateway;
mod gateway_proxy;
mod measure;
mod names;
pub mod pdp;
pub mod por;
pub mod por_disk;
pub mod por_edit;
pub mod por_growth;
pub mod por_writes;
pub mod repo;
pub mod report;
mod served;
pub mod store;
pub mod vicos;

pub use measure::{Options, SelfCheckFailed, Shown, Target};
