//! `vouch serve --check` and `vouch serve --rebuild-index` as an operator runs them: JSON
//! reports, exit codes, a damaged metadata store rebuilt (after a provider killed, not shut
//! down) and every file read back verified through `vouch get`.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use common::{sample, serve, VOUCH};

fn run(args: &[&str]) -> Output {
    Command::new(VOUCH).args(args).env("RUST_LOG", "off").output().unwrap()
}

fn repair(data: &Path, flag: &str) -> (i32, serde_json::Value, String) {
    let out = run(&["serve", "--data", data.to_str().unwrap(), flag]);
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), report, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn check_reports_damage_and_rebuild_index_brings_a_damaged_metadata_store_back() {
    let dir = tempfile::tempdir().unwrap();
    let (data, state) = (dir.path().join("data"), dir.path().join("state"));
    let files = [("big.bin", sample(3_000_000, 1)), ("small.txt", sample(5_000, 2))];
    {
        // Killed when it goes out of scope (SIGKILL: no clean shutdown).
        let server = serve(&data, &[]);
        let vouch = |args: &[&str]| Command::new(VOUCH).arg("--state").arg(&state).args(args).output().unwrap();
        assert!(vouch(&["init", "--server", &server.url, "--token", "secret-token"]).status.success());
        for (name, bytes) in &files {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let out = vouch(&["put", path.to_str().unwrap()]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let out = vouch(&["edit", "small.txt", "--insert", "10", "--data", "edited"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut edited = files[1].1.clone();
    edited.splice(10..10, *b"edited");

    let (code, report, stderr) = repair(&data, "--check");
    assert_eq!(code, 0, "{stderr}");
    assert!(report["segments"].as_u64().unwrap() >= 1 && report["inline_segments"].as_u64().unwrap() >= 1, "{report}");
    assert!(report["blocks"].as_u64().unwrap() > 10 && report["problems"].as_array().unwrap().is_empty(), "{report}");

    // A flipped byte in a segment: reported, exit 1.
    let segments = data.join("blobs").join("segments");
    let segment = std::fs::read_dir(&segments).unwrap().next().unwrap().unwrap().path();
    let original = std::fs::read(&segment).unwrap();
    let mut bytes = original.clone();
    bytes[1000] ^= 0x01;
    std::fs::write(&segment, &bytes).unwrap();
    let (code, report, _) = repair(&data, "--check");
    assert_eq!(code, 1);
    let problems = report["problems"].as_array().unwrap();
    assert!(problems.iter().any(|p| p["detail"].as_str().unwrap().contains("checksum")), "{report}");
    std::fs::write(&segment, &original).unwrap();

    // The metadata file damaged: the provider refuses to start, and says what to do.
    let meta = data.join("meta.redb");
    let mut bytes = std::fs::read(&meta).unwrap();
    for at in (bytes.len() / 7..bytes.len()).step_by(bytes.len() / 11) {
        bytes[at..at + 64].iter_mut().for_each(|b| *b ^= 0x5a);
    }
    std::fs::write(&meta, &bytes).unwrap();
    let out = run(&["serve", "--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--rebuild-index"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (code, report, stderr) = repair(&data, "--rebuild-index");
    assert_eq!(code, 0, "{stderr}\n{report}");
    assert_eq!(report["moved_aside"].as_array().unwrap().len(), 2, "{report}");
    assert!(report["local_log_batches"].as_u64().unwrap() > 0, "the killed provider's last commits: {report}");
    let (code, report, _) = repair(&data, "--check");
    assert_eq!(code, 0, "{report}");

    let server = serve(&data, &[]);
    std::fs::write(state.join("config.toml"), format!("server = \"{}\"\n", server.url)).unwrap();
    let vouch = |args: &[&str]| Command::new(VOUCH).arg("--state").arg(&state).args(args).output().unwrap();
    for (name, want) in [("big.bin", &files[0].1), ("small.txt", &edited)] {
        let out = vouch(&["get", name]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == *want, "{name} reads back other bytes");
    }
    let out = vouch(&["get", "small.txt", "--version", "1"]);
    assert!(out.status.success() && out.stdout == files[1].1);
}
