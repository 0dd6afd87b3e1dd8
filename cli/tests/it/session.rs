//! The `vouch` binary as a user runs it: a `vouch serve` process, client commands against it,
//! their output and their exit codes (0 ok, 2 usage, 3 misbehaved, 4 unreachable, 5 not
//! found, 6 bad local state, 7 refused credentials).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

use common::{Server, VOUCH};

fn serve(data: &Path, misbehave: &str) -> Server {
    common::serve(data, &["--misbehave", misbehave])
}

fn vouch(state: &Path, args: &[&str]) -> Output {
    Command::new(VOUCH).arg("--state").arg(state).args(args).env("RUST_LOG", "off").output().unwrap()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct World {
    dir: tempfile::TempDir,
    state: PathBuf,
}

impl World {
    fn new(server: &Server) -> World {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let out = vouch(&state, &["init", "--server", &server.url, "--token", "secret-token"]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        World { dir, state }
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn run(&self, args: &[&str]) -> Output {
        vouch(&self.state, args)
    }
}

fn sample(len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57) as u8).collect()
}

#[test]
fn a_user_session_with_json_output_and_exit_codes() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), "none");
    let w = World::new(&server);
    let original = sample(300_000);
    let file = w.file("report.bin", &original);
    let f = file.to_str().unwrap();

    let out = w.run(&["--json", "put", f]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let put: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(put["name"], "report.bin");
    assert_eq!(put["version"], 1);
    assert_eq!(put["bytes"], 300_000);

    // get to stdout and to a file; a range.
    let out = w.run(&["get", "report.bin"]);
    assert_eq!(code(&out), 0);
    assert_eq!(out.stdout, original);
    let got = w.dir.path().join("back.bin");
    let out = w.run(&["get", "report.bin", "-o", got.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&got).unwrap(), original);
    let out = w.run(&["get", "report.bin", "--range", "10..20"]);
    assert_eq!(out.stdout, original[10..20]);

    // edit, sync, log, ls, audit.
    let out = w.run(&["edit", "report.bin", "--insert", "5", "--data", "HELLO"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let mut changed = original.clone();
    changed.splice(5..5, *b"HELLO");
    changed.splice(150_000..150_010, *b"xyz");
    let local = w.file("local.bin", &changed);
    let out = w.run(&["--json", "sync", "report.bin", local.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let sync: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sync["version"], 3);
    assert!(sync["blocks_sent"].as_u64().unwrap() < sync["blocks_total"].as_u64().unwrap() / 2, "{sync}");
    assert_eq!(w.run(&["get", "report.bin"]).stdout, changed);
    assert_eq!(w.run(&["get", "report.bin", "--version", "1"]).stdout, original);
    let log: serde_json::Value = serde_json::from_slice(&w.run(&["--json", "log", "report.bin"]).stdout).unwrap();
    assert_eq!(log.as_array().unwrap().len(), 3);
    let ls: serde_json::Value = serde_json::from_slice(&w.run(&["--json", "ls"]).stdout).unwrap();
    assert_eq!(ls[0]["name"], "report.bin");
    let out = w.run(&["--json", "audit", "--blocks", "100"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let audit: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(audit[0]["verified"], true);
    let out = w.run(&["prune", "report.bin", "--versions", "2"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));

    // Exit codes for the user's mistakes.
    assert_eq!(code(&w.run(&["get", "nothing-here"])), 5);
    assert_eq!(code(&w.run(&["get", "report.bin", "--version", "2"])), 5);
    assert_eq!(code(&w.run(&["put", "/no/such/file"])), 1);
    assert_eq!(code(&w.run(&["edit", "report.bin", "--delete", "5..999999999"])), 2);
    assert_eq!(code(&w.run(&["frobnicate"])), 2);
    let out = w.run(&["rm", "report.bin"]);
    assert_eq!(code(&out), 0);
    assert_eq!(code(&w.run(&["get", "report.bin"])), 5);

    // Local state problems: none, damaged.
    let elsewhere = w.dir.path().join("nowhere");
    assert_eq!(code(&vouch(&elsewhere, &["ls"])), 6);
    let state_file = w.state.join("state");
    let mut bytes = std::fs::read(&state_file).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&state_file, &bytes).unwrap();
    let out = w.run(&["ls"]);
    assert_eq!(code(&out), 6);
    assert!(text(&out.stderr).contains("damaged"), "{}", text(&out.stderr));
}

/// `get -o` into a path that is no regular file writes into it: renaming a finished file
/// over it, as a regular file's output is made whole, would replace a device such as
/// `/dev/null` (a named pipe stands in for one here). A regular file is replaced whole.
#[test]
fn get_into_a_named_pipe_writes_into_it_and_leaves_it_a_pipe() {
    use std::os::unix::fs::FileTypeExt;
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), "none");
    let w = World::new(&server);
    let original = sample(200_000);
    let f = w.file("x.bin", &original);
    assert_eq!(code(&w.run(&["put", f.to_str().unwrap(), "x"])), 0);

    let pipe = w.dir.path().join("pipe");
    let made = Command::new("mkfifo").arg(&pipe).status().expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let pipe = pipe.clone();
        std::thread::spawn(move || std::fs::read(pipe).unwrap())
    };
    let out = w.run(&["get", "x", "-o", pipe.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // Checked before the reader is joined: a replaced pipe would leave it waiting for good.
    assert!(std::fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo(), "the pipe was replaced");
    assert_eq!(reader.join().unwrap(), original);

    let target = w.file("old.bin", b"older and shorter");
    let out = w.run(&["get", "x", "-o", target.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&target).unwrap(), original);
    let left: Vec<_> = std::fs::read_dir(w.dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().contains("vouch-partial")), "{left:?}");
}

#[test]
fn wrong_token_and_unreachable_server_have_their_own_exit_codes() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), "none");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s");
    assert_eq!(code(&vouch(&state, &["init", "--server", &server.url, "--token", "wrong"])), 0);
    assert_eq!(code(&vouch(&state, &["ls"])), 7);
    let state2 = dir.path().join("s2");
    assert_eq!(code(&vouch(&state2, &["init", "--server", "http://127.0.0.1:9", "--token", "t"])), 0);
    let started = std::time::Instant::now();
    let out = vouch(&state2, &["ls"]);
    assert_eq!(code(&out), 4, "{}", text(&out.stderr));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn a_lying_server_gets_exit_code_3_and_no_output_file() {
    let data = tempfile::tempdir().unwrap();
    let original = sample(100_000);
    let state;
    let dir;
    {
        let honest = serve(data.path(), "none");
        let w = World::new(&honest);
        let f = w.file("x.bin", &original);
        assert_eq!(code(&w.run(&["put", f.to_str().unwrap(), "x"])), 0);
        state = w.state.clone();
        dir = w.dir;
    }
    let liar = serve(data.path(), "corrupt-block");
    std::fs::write(state.join("config.toml"), format!("server = \"{}\"\n", liar.url)).unwrap();
    let target = dir.path().join("out.bin");
    let out = vouch(&state, &["get", "x", "-o", target.to_str().unwrap()]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("misbehaved"));
    assert!(text(&out.stderr).contains("does not match its tag"), "{}", text(&out.stderr));
    assert!(!target.exists(), "no output file from a lying provider");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().ends_with(".vouch-partial")), "{left:?}");
}

#[test]
fn demo_runs_and_catches_every_lie() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        Command::new(VOUCH).args(["--json", "demo", "--size", "600000", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["all_caught"], true);
    let lies = report["lies"].as_array().unwrap();
    assert!(lies.len() >= 17);
    assert_eq!(report["caught"].as_u64(), Some(lies.len() as u64));
    // All five systems shown at work, and each lied to and catching it.
    let systems = report["systems"].as_array().unwrap();
    let names: Vec<&str> = systems.iter().map(|s| s["system"].as_str().unwrap()).collect();
    assert_eq!(names, ["FlexList", "DPDP", "PoR", "VICOS", "gateway"]);
    for s in systems {
        assert!(s["steps"].as_u64().unwrap() >= 1 && s["lies"].as_u64().unwrap() >= 1, "{s}");
        assert_eq!(s["caught"], s["lies"], "{s}");
    }
    let steps = report["steps"].as_array().unwrap();
    let step = |name: &str| steps.iter().find(|s| s["step"] == name).unwrap_or_else(|| panic!("no {name} step"));
    assert!(step("repair")["detail"].as_str().unwrap().contains("healed [\"coded\"]"), "{}", step("repair"));
    assert!(step("after")["detail"].as_str().unwrap().contains("caught the provider lying"), "{}", step("after"));
    let expected = |system: &str| -> Vec<String> {
        lies.iter().filter(|l| l["system"] == system).map(|l| l["expected"].as_str().unwrap().to_string()).collect()
    };
    assert!(expected("PoR").contains(&"bad-por-audit".to_string()), "{report}");
    assert!(expected("VICOS").iter().all(|k| k == "bad-aip-answer"), "{report}");
    assert!(expected("gateway").iter().all(|k| k == "VouchIntegrityViolation"), "{report}");
    for l in lies {
        // Each lie caught by the check it should trip: the violation kind the demo expects.
        assert_eq!(l["caught"], true, "{l}");
        assert!(l["expected"].as_str().is_some_and(|k| !k.is_empty()), "{l}");
        assert_eq!(l["violation"], l["expected"], "{l}");
    }
}

#[test]
fn token_prints_a_usable_server_entry() {
    let out = Command::new(VOUCH).args(["--json", "token", "bob"]).output().unwrap();
    assert_eq!(code(&out), 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["name"], "bob");
    assert_eq!(v["token_sha256"].as_str().unwrap().len(), 64);
}
