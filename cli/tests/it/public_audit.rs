//! A publicly auditable client as a user runs it: `vouch init --scheme rsa`, `vouch key
//! export-public`, `vouch root`, and a third party's `vouch audit --public KEYFILE --root
//! ROOT` with no state directory. Exit codes: 0 verified, 2 the auditor's own bad input, 3
//! the provider lied, 7 a token the provider refuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

use common::{Server, VOUCH};

fn vouch(state: &Path, args: &[&str]) -> Output {
    Command::new(VOUCH).arg("--state").arg(state).args(args).env("RUST_LOG", "off").output().unwrap()
}

/// `vouch audit --public` run by a third party: no state directory of its own (it names one
/// that does not exist, so any use of it would fail).
fn audit(dir: &Path, key: &Path, root: &str, url: &str, token: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--json", "audit", "--public", key.to_str().unwrap(), "--root", root];
    args.extend(["--server", url, "--token", token, "--blocks", "40"]);
    args.extend(extra);
    vouch(&dir.join("no-state-here"), &args)
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    assert_eq!(code(out), 0, "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sample(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(seed) >> 57) as u8).collect()
}

/// An RSA client (1024 bits, for speed) that stored two versions of `f.bin` and one of
/// `g.bin` and handed out its public key and root.
struct Owner {
    dir: tempfile::TempDir,
    state: PathBuf,
    key: PathBuf,
    root: String,
}

fn owner(server: &Server) -> Owner {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let init = ["--json", "init", "--server", &server.url, "--token", "secret-token", "--scheme", "rsa"];
    let out = json(&vouch(&state, &[&init[..], &["--bits", "1024"]].concat()));
    assert_eq!(out["scheme"], "rsa-1024");
    for (name, seed) in [("f.bin", 1), ("f.bin", 2), ("g.bin", 3)] {
        let file = dir.path().join(format!("{name}.{seed}"));
        std::fs::write(&file, sample(30_000, seed)).unwrap();
        json(&vouch(&state, &["--json", "put", file.to_str().unwrap(), name, "--block-size", "4096"]));
    }
    let key = dir.path().join("owner.pub");
    let exported = json(&vouch(&state, &["--json", "key", "export-public", key.to_str().unwrap()]));
    let root = json(&vouch(&state, &["--json", "root"]));
    assert_eq!(root["key_id"], exported["key_id"]);
    assert_eq!(root["names"], 2);
    assert_eq!(root["scheme"], "rsa-1024");
    let root = root["root"].as_str().unwrap().to_string();
    assert_eq!(root.split(':').count(), 3, "{root}");
    Owner { dir, state, key, root }
}

#[test]
fn a_third_party_audits_with_the_public_key_and_the_root_alone() {
    let data = tempfile::tempdir().unwrap();
    let server = common::serve(data.path(), &[]);
    let o = owner(&server);
    // The owner's own audit, then the third party's: one name, one version, every name.
    assert_eq!(json(&vouch(&o.state, &["--json", "audit", "--blocks", "40"]))[1]["verified"], true);
    let out = json(&audit(o.dir.path(), &o.key, &o.root, &server.url, "secret-token", &["f.bin"]));
    assert_eq!(
        (out[0]["name"].as_str(), out[0]["version"].as_u64(), out[0]["verified"].as_bool()),
        (Some("f.bin"), Some(2), Some(true))
    );
    let out = json(&audit(o.dir.path(), &o.key, &o.root, &server.url, "secret-token", &["f.bin", "--version", "1"]));
    assert_eq!(out[0]["version"], 1);
    let out = json(&audit(o.dir.path(), &o.key, &o.root, &server.url, "secret-token", &[]));
    let names: Vec<&str> = out.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["f.bin", "g.bin"]);
    // Text output too.
    let out = vouch(
        &o.dir.path().join("none"),
        &[
            "audit",
            "--public",
            o.key.to_str().unwrap(),
            "--root",
            &o.root,
            "--server",
            &server.url,
            "--token",
            "secret-token",
            "g.bin",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("g.bin v1: possession proven"), "{}", text(&out.stdout));
    // The root and token could come from the environment, as for `vouch init`.
    let out = Command::new(VOUCH)
        .args(["--json", "audit", "--public", o.key.to_str().unwrap(), "--root", &o.root, "g.bin"])
        .env("VOUCH_SERVER", &server.url)
        .env("VOUCH_TOKEN", "secret-token")
        .env("VOUCH_STATE", o.dir.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(json(&out)[0]["verified"], true);
    assert!(!o.dir.path().join("none").exists() && !o.dir.path().join("no-state-here").exists());
}

#[test]
fn the_auditors_mistakes_have_their_own_exit_codes() {
    let data = tempfile::tempdir().unwrap();
    let server = common::serve(data.path(), &[]);
    let o = owner(&server);
    let run =
        |key: &Path, root: &str, token: &str| code(&audit(o.dir.path(), key, root, &server.url, token, &["f.bin"]));
    // A malformed root, a root of another namespace size, a missing key file, a secret key.
    assert_eq!(run(&o.key, "not-a-root", "secret-token"), 2);
    assert_eq!(run(&o.key, &o.root.replacen(":2:", ":x:", 1), "secret-token"), 2);
    assert_eq!(run(&o.dir.path().join("missing.pub"), &o.root, "secret-token"), 1);
    assert_eq!(run(&o.state.join("secret"), &o.root, "secret-token"), 2);
    // A root without the key's id (as a linear client's `vouch root` prints it).
    let (digest_and_names, _) = o.root.rsplit_once(':').unwrap();
    assert_eq!(run(&o.key, digest_and_names, "secret-token"), 2);
    // Another owner's key for this root.
    let other = tempfile::tempdir().unwrap();
    let other_state = other.path().join("state");
    let init = ["init", "--server", &server.url, "--token", "t2", "--scheme", "rsa", "--bits", "1024"];
    assert_eq!(code(&vouch(&other_state, &init)), 0);
    let other_key = other.path().join("other.pub");
    assert_eq!(code(&vouch(&other_state, &["key", "export-public", other_key.to_str().unwrap()])), 0);
    let out = audit(o.dir.path(), &other_key, &o.root, &server.url, "secret-token", &["f.bin"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not the one this root was issued with"), "{}", text(&out.stderr));
    // A token the provider does not know.
    assert_eq!(run(&o.key, &o.root, "wrong-token"), 7);
    // No --server: a usage error.
    let out =
        vouch(&o.dir.path().join("none"), &["audit", "--public", o.key.to_str().unwrap(), "--root", &o.root, "f.bin"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    // Init: --bits without rsa, a modulus size not offered; a linear client has no public key.
    let linear = o.dir.path().join("linear");
    assert_eq!(code(&vouch(&linear, &["init", "--server", &server.url, "--token", "t", "--bits", "1024"])), 2);
    let rsa_512 = ["init", "--server", &server.url, "--token", "t", "--scheme", "rsa", "--bits", "512"];
    assert_eq!(code(&vouch(&linear, &rsa_512)), 2);
    assert_eq!(code(&vouch(&linear, &["init", "--server", &server.url, "--token", "t"])), 0);
    let out = vouch(&linear, &["key", "export-public", o.dir.path().join("x.pub").to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let root = json(&vouch(&linear, &["--json", "root"]));
    assert_eq!((root["key_id"].is_null(), root["scheme"].as_str()), (true, Some("linear")));
}

#[test]
fn a_public_audit_of_a_lying_provider_exits_3() {
    let data = tempfile::tempdir().unwrap();
    let o = {
        let honest = common::serve(data.path(), &[]);
        owner(&honest)
    };
    for (lie, args, kind) in [
        ("corrupt-block", &["f.bin"][..], "does not verify"),
        ("other-challenge", &["f.bin"][..], "does not verify"),
        ("old-version", &["f.bin"][..], "not the version asked for"),
        ("hide-version", &["f.bin", "--version", "1"][..], "hidden"),
    ] {
        let liar = common::serve(data.path(), &["--misbehave", lie]);
        let out = audit(o.dir.path(), &o.key, &o.root, &liar.url, "secret-token", args);
        assert_eq!(code(&out), 3, "{lie}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(kind), "{lie}: {}", text(&out.stderr));
    }
    // A replayed proof: the first one is genuine, the next is caught.
    let liar = common::serve(data.path(), &["--misbehave", "replay-proof"]);
    assert_eq!(code(&audit(o.dir.path(), &o.key, &o.root, &liar.url, "secret-token", &["g.bin"])), 0);
    assert_eq!(code(&audit(o.dir.path(), &o.key, &o.root, &liar.url, "secret-token", &["g.bin"])), 3);
    // A root the provider does not answer under (before the owner's second version of f.bin).
    drop(liar);
    let honest = common::serve(data.path(), &[]);
    std::fs::write(o.state.join("config.toml"), format!("server = \"{}\"\n", honest.url)).unwrap();
    let file = o.dir.path().join("h");
    std::fs::write(&file, b"one more").unwrap();
    assert_eq!(code(&vouch(&o.state, &["put", file.to_str().unwrap(), "h.bin"])), 0);
    let out = audit(o.dir.path(), &o.key, &o.root, &honest.url, "secret-token", &["f.bin"]);
    assert_eq!(code(&out), 3, "the root from before the owner's last put: {}", text(&out.stderr));
}
