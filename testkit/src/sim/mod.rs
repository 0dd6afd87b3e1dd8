//! The deterministic simulator (issue #45): every protocol against a provider that chooses.
//!
//! One seed drives a whole run: the workload (puts, edits, reads, removes, listings and
//! possession audits of two file owners; PoR puts, reads, audits, repairs, removals and
//! prunes; puts, gets, deletes and lists of two VICOS members), the faults and the adversary. The clients are the
//! real client code ([`vouch_client::Client`], [`vouch_client::vicos::Group`]) with their
//! state in memory; the provider is the real [`vouch_server::Provider`] over a directory kept
//! in memory where the OS allows, reached through an in-process link
//! ([`vouch_client::Link`]) where the adversary decides, message by message, what the client
//! gets ([`Strategy`]), and acts between operations ([`Action`]): loses or corrupts stored
//! blobs, keeps copies of its state to roll back to, forks a member onto a copy and joins
//! it back, crashes and restarts.
//!
//! After every step the run checks the five [`Invariant`]s against a model of the truth
//! (every value the honest history allows each name). The same seed replays the same
//! choices; a failing seed is printed with its trace and becomes a regression test.
//!
//! No network and no clock: a run is one thread, on a paused clock, and every wait is on the
//! link or a timer.

mod adversary;
mod batch;
mod files;
mod gateway;
mod group;
mod hold;
mod model;
mod por;
mod providers;
mod report;
mod run;
mod s3app;
mod strategy;
mod views;
mod without_u;

pub use adversary::GROUP_COMMIT;
pub use batch::{run_many, Batch};
pub use report::{Coverage, Invariant, RunReport, SimFailure};
pub use strategy::{Action, Strategy};

/// Steps in one run unless told otherwise.
pub const DEFAULT_STEPS: usize = 24;

/// Runs `seed` for `steps` steps: what it exercised, or the invariant it broke.
pub fn run_seed(seed: u64, steps: usize) -> Result<RunReport, SimFailure> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| SimFailure {
        seed,
        step: 0,
        invariant: Invariant::HonestFaultsAreNotLies,
        detail: format!("a runtime: {e}"),
        trace: Vec::new(),
    })?;
    runtime.block_on(run::run(seed, steps))
}
