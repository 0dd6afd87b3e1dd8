//! Crash loops of the real processes (#45): `vouch serve`, `vouch gateway` and a VICOS group
//! member killed with SIGKILL at random instants of their work, started again, and checked
//! (vouch_testkit::crash). A few kills each with fixed seeds here; `scripts/crash-loop.sh`
//! runs long loops.

use std::path::Path;

use vouch_testkit::crash::{self, Component, CrashPlan, Sabotage, Violated};

fn vouch() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_vouch"))
}

fn loop_of(component: Component, kills: usize, seed: u64) -> crash::CrashReport {
    let verbose = std::env::var_os("VOUCH_CRASH_VERBOSE").is_some();
    let plan = CrashPlan { max_bytes: 256 * 1024, verbose, ..CrashPlan::new(component, kills, seed) };
    let report = crash::run(vouch(), &plan).unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("{component}: {report}");
    assert_eq!(report.kills, kills, "{report}");
    assert_eq!(report.restarts, kills, "{report}");
    assert!(report.acknowledged > 0 && report.checks > kills, "{report}");
    report
}

#[test]
fn killed_providers_lose_nothing_acknowledged() {
    let report = loop_of(Component::Provider, 5, 4501);
    assert!(report.kills_mid_operation > 0, "no kill landed in a command: {report}");
}

#[test]
fn killed_group_members_leave_the_group_consistent() {
    let report = loop_of(Component::Member, 4, 4502);
    assert_eq!(report.interrupted, 4, "{report}");
}

#[test]
fn killed_gateways_lose_no_acknowledged_object() {
    loop_of(Component::Gateway, 4, 4503);
}

/// The loop's checks can fail: a provider whose data is gone after a kill is caught by the
/// client (exit 3), and, with the client's state forgotten as well, by the loop's own model.
#[test]
fn a_lost_store_fails_the_loop() {
    let wiped = CrashPlan {
        sabotage: Some(Sabotage::WipeProvider { at_kill: 2 }),
        ..CrashPlan::new(Component::Provider, 3, 7)
    };
    let failure = crash::run(vouch(), &wiped).expect_err("a wiped provider must fail the loop");
    assert_eq!((failure.seed, failure.kill), (7, 2), "{failure}");
    assert!(matches!(failure.violated, Violated::Misbehaved { .. }), "{failure}");

    let forgotten = CrashPlan {
        sabotage: Some(Sabotage::ForgetEverything { at_kill: 1 }),
        ..CrashPlan::new(Component::Provider, 2, 8)
    };
    let failure = crash::run(vouch(), &forgotten).expect_err("a forgotten store must fail the loop");
    assert_eq!(failure.kill, 1, "{failure}");
    assert!(matches!(failure.violated, Violated::Lost { .. }), "{failure}");
    assert!(failure.to_string().contains("seed 8"), "{failure}");
}

/// A long loop, as configured by the environment: `VOUCH_CRASH_COMPONENT` (provider, gateway,
/// member), `VOUCH_CRASH_KILLS` (default 50), `VOUCH_CRASH_SEED` (default 1), and
/// `VOUCH_CRASH_BIN` for another `vouch` binary (a release build).
#[test]
#[ignore = "long: run with --ignored and the VOUCH_CRASH_* variables"]
fn long_crash_loop() {
    let var = |name: &str| std::env::var(name).ok();
    let component: Component = var("VOUCH_CRASH_COMPONENT").as_deref().unwrap_or("provider").parse().unwrap();
    let kills = var("VOUCH_CRASH_KILLS").map_or(50, |k| k.parse().unwrap());
    let seed = var("VOUCH_CRASH_SEED").map_or(1, |s| s.parse().unwrap());
    let bin = var("VOUCH_CRASH_BIN").map_or_else(|| vouch().to_path_buf(), Into::into);
    let plan = CrashPlan { verbose: var("VOUCH_CRASH_VERBOSE").is_some(), ..CrashPlan::new(component, kills, seed) };
    let started = std::time::Instant::now();
    match crash::run(&bin, &plan) {
        Ok(report) => eprintln!("{component}, seed {seed}: {report} in {:.1} s", started.elapsed().as_secs_f64()),
        Err(failure) => panic!("{failure}"),
    }
}
