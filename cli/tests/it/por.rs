//! `vouch put --por`, `get --por`, `audit --por` and `repair` as a user runs them against a
//! `vouch serve` child process: JSON reports and exit codes.

use std::process::{Command, Output};

use crate::common;

use common::{sample, serve, VOUCH};

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn put_get_audit_and_repair_with_retrievability() {
    let dir = tempfile::tempdir().unwrap();
    let (data, state) = (dir.path().join("data"), dir.path().join("state"));
    let server = serve(&data, &[]);
    let vouch = |args: &[&str]| {
        Command::new(VOUCH).arg("--state").arg(&state).args(args).env("RUST_LOG", "off").output().unwrap()
    };
    assert!(vouch(&["init", "--server", &server.url, "--token", "secret-token"]).status.success());
    // About 40 slots: U grows to 64 and three groups of 16 writes leave levels of H filled.
    let bytes = sample(160_000, 4);
    let path = dir.path().join("photo.raw");
    std::fs::write(&path, &bytes).unwrap();
    json(&vouch(&["--json", "put", "--por", path.to_str().unwrap()]));

    let copy = dir.path().join("copy.raw");
    let got = json(&vouch(&["--json", "get", "--por", "photo.raw", "-o", copy.to_str().unwrap()]));
    assert_eq!(got["from"], "por", "{got}");
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);

    let audit = json(&vouch(&["--json", "audit", "--por", "--lambda", "32"]));
    let parts = audit["parts"].as_array().unwrap();
    assert!(parts.len() >= 2 && parts.last().unwrap()["region"] == "coded", "{audit}");
    assert!(parts.iter().all(|p| p["verified"] == true && p["picks"].as_u64().unwrap() > 0), "{audit}");
    assert_eq!(audit["verified"], true);

    let repair = json(&vouch(&["--json", "repair", "photo.raw"]));
    assert_eq!((repair["damaged"].as_bool(), repair["restored"].as_u64()), (Some(false), Some(0)), "{repair}");

    // C's bytes damaged on the backend: the audit reports that part failed (exit 3), the
    // levels still prove, and U is intact, so the file still reads.
    let damaged = damage_coded(&data.join("blobs"));
    assert!(damaged >= 1);
    let out = vouch(&["--json", "audit", "--por", "--lambda", "64"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let audit: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let parts = audit["parts"].as_array().unwrap();
    let (coded, levels) = parts.split_last().unwrap();
    assert!(coded["verified"] == false && coded["problem"].as_str().unwrap().contains("lost"), "{audit}");
    assert!(!levels.is_empty() && levels.iter().all(|p| p["verified"] == true), "{audit}");
    let got = json(&vouch(&["--json", "get", "--por", "photo.raw", "-o", copy.to_str().unwrap()]));
    assert_eq!((got["bytes"].as_u64(), std::fs::read(&copy).unwrap()), (Some(bytes.len() as u64), bytes.clone()));
    // Repair finds C failing and re-encodes it from U: the audit passes again, H is empty.
    let repair = json(&vouch(&["--json", "repair", "photo.raw"]));
    assert_eq!(repair["healed"], serde_json::json!(["coded"]), "{repair}");
    let audit = json(&vouch(&["--json", "audit", "--por", "--lambda", "64"]));
    let parts = audit["parts"].as_array().unwrap();
    assert!(audit["verified"] == true && parts.len() == 1 && parts[0]["region"] == "coded", "{audit}");
    let repair = json(&vouch(&["--json", "repair", "photo.raw"]));
    assert_eq!(repair["healed"], serde_json::json!([]), "{repair}");
    json(&vouch(&["--json", "get", "--por", "photo.raw", "-o", copy.to_str().unwrap()]));
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);

    // Bad usage: exit 2 with a message, never a panic.
    std::fs::write(dir.path().join("plain.txt"), b"plain").unwrap();
    assert!(vouch(&["put", dir.path().join("plain.txt").to_str().unwrap()]).status.success());
    for args in [
        &["get", "--por", "plain.txt"][..],
        &["repair", "plain.txt"],
        &["audit", "--por", "--lambda", "0"],
        // λ = 1 proves nothing: a part missing half its slots passes with probability 1/2.
        &["audit", "--por", "--lambda", "1"],
        &["audit", "--por", "--lambda", "31"],
        &["get", "--por", "photo.raw", "--range", "0-10"],
    ] {
        let out = vouch(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = vouch(&["repair", "nothing-here"]);
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Overwrites the first quarter of every segment of C under `dir` with bytes that are no field
/// elements; returns how many segments.
fn damage_coded(dir: &std::path::Path) -> usize {
    let mut damaged = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            damaged += damage_coded(&path);
            continue;
        }
        let in_coded =
            path.parent().and_then(|p| p.file_name()).is_some_and(|n| n.to_string_lossy().starts_with("coded-"));
        if in_coded && path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("slots-")) {
            let mut bytes = std::fs::read(&path).unwrap();
            let quarter = bytes.len() / 4;
            bytes[..quarter].fill(0xff);
            std::fs::write(&path, bytes).unwrap();
            damaged += 1;
        }
    }
    damaged
}
