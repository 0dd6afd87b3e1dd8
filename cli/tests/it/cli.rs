//! The `vouch` binary's surface: help texts and argument errors.

use std::process::Command;

fn vouch(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vouch")).args(args).output().expect("the vouch binary runs")
}

#[test]
fn bench_flexlist_offers_quick_and_json() {
    let out = vouch(&["bench", "flexlist", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--quick") && help.contains("--json"), "{help}");
}

#[test]
fn an_unknown_benchmark_is_a_usage_error() {
    let out = vouch(&["bench", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand"));
}
