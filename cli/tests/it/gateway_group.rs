//! `vouch gateway` in group mode as users run it: `group = NAME` in its configuration serves
//! the VICOS group this client is a member of; it holds the member's state while it runs,
//! saves it when interrupted, and refuses what applies only to the own namespace.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::VOUCH;

fn vouch(state: &Path, args: &[&str]) -> Output {
    Command::new(VOUCH).arg("--state").arg(state).args(args).env("RUST_LOG", "off").output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn ok(state: &Path, args: &[&str]) -> String {
    let out = vouch(state, args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// A provider under `dir`, and the state directories of Alice, who created group `team`
/// (with `signatures`), and Bob, who joined it.
fn members_of_team(dir: &Path, signatures: &[&str]) -> (common::Server, PathBuf, PathBuf) {
    let server = common::serve(&dir.join("provider"), &["--client", "bob=bob-token"]);
    let (alice, bob) = (dir.join("alice"), dir.join("bob"));
    ok(&alice, &["init", "--server", &server.url, "--token", "secret-token"]);
    ok(&bob, &["init", "--server", &server.url, "--token", "bob-token"]);
    let key = dir.join("team.key");
    let mut init = vec!["group", "init", "team", "--key-out", key.to_str().unwrap()];
    init.extend_from_slice(signatures);
    ok(&alice, &init);
    ok(&bob, &["group", "join", key.to_str().unwrap(), "--id", "1"]);
    (server, alice, bob)
}

/// A gateway configuration serving `group`, with `extra` lines before its keys.
fn config(dir: &Path, group: &str, extra: &str) -> PathBuf {
    let path = dir.join(format!("gateway-{group}.toml"));
    let text = format!(
        "listen = \"127.0.0.1:0\"\ngroup = \"{group}\"\n{extra}[[keys]]\naccess_key = \"app\"\nsecret_key = \"app-secret\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A `vouch gateway` child process serving group `team`; what it logs after it started is
/// gathered by `rest`.
struct Gateway {
    child: Child,
    addr: String,
    rest: std::thread::JoinHandle<String>,
}

impl Gateway {
    fn start(state: &Path, config: &Path) -> Gateway {
        let mut child = Command::new(VOUCH)
            .arg("--state")
            .arg(state)
            .args(["gateway", "--config", config.to_str().unwrap()])
            .env("RUST_LOG", "warn")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("the gateway said where it serves").unwrap();
            if let Some(rest) = line.split("serving VICOS group team as S3 on http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
        Gateway { child, addr, rest }
    }
}

/// A test that fails leaves no gateway behind (it would hold the test's output open).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The whole answer to an unsigned `GET /` on `addr`.
fn unsigned_get(addr: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn a_gateway_serves_a_group_holds_its_member_and_saves_it_when_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, alice, bob) = members_of_team(dir.path(), &[]);

    // What applies to the own namespace is refused with a group, before anything starts.
    let por = config(dir.path(), "team", "por = true\n");
    let refused = vouch(&alice, &["gateway", "--config", por.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("do not go together"), "{}", text(&refused.stderr));
    // A group this client is no member of.
    let stranger = config(dir.path(), "other", "");
    assert!(!vouch(&alice, &["gateway", "--config", stranger.to_str().unwrap()]).status.success());

    let Gateway { mut child, addr, rest } = Gateway::start(&alice, &config(dir.path(), "team", ""));
    let gateway = &mut child;
    // It answers S3 (an unsigned request is refused as S3 refuses it) ...
    let answer = unsigned_get(&addr);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    // ... and holds the member: another command of it waits, then gives up.
    let busy = vouch(&alice, &["obj", "ls"]);
    assert_eq!(busy.status.code(), Some(1), "{}", text(&busy.stderr));
    assert!(text(&busy.stderr).contains("in use"), "{}", text(&busy.stderr));
    // Another member writes meanwhile.
    let file = dir.path().join("f");
    std::fs::write(&file, b"bob's").unwrap();
    ok(&bob, &["obj", "put", file.to_str().unwrap(), "from-bob"]);

    // Interrupted (Ctrl-C), it stops, saves the member's AIP state and exits 0.
    let interrupted = Command::new("kill").args(["-INT", &gateway.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = gateway.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the gateway did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = rest.join().unwrap();
    assert!(status.success(), "{said}");
    // The refused request is the application's error, not one for the operator's log.
    assert!(!said.contains("ERROR"), "a client error logged at ERROR: {said}");
    assert!(said.contains("saved the AIP state of group team"), "{said}");
    // The member goes on from the saved state in the next run.
    assert_eq!(ok(&alice, &["obj", "ls"]).trim(), "from-bob");
}

/// Lists bucket `bucket` through the gateway at `addr`, signed as the configured application.
fn list(addr: &str, bucket: &str) -> Result<usize, object_store::Error> {
    use object_store::ObjectStore;
    vouch_proto::tls::install_provider();
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(format!("http://{addr}"))
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(bucket)
        .with_access_key_id("app")
        .with_secret_access_key("app-secret")
        .with_retry(object_store::RetryConfig { max_retries: 0, ..Default::default() })
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async { store.list_with_delimiter(None).await.map(|listed| listed.objects.len()) })
}

#[test]
fn a_running_gateway_takes_a_roster_imported_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, alice, bob) = members_of_team(dir.path(), &["--signatures", "ed25519"]);
    let file = dir.path().join("f");
    std::fs::write(&file, b"bob's").unwrap();
    ok(&bob, &["obj", "put", file.to_str().unwrap(), "from-bob"]);

    let Gateway { child, addr, rest } = Gateway::start(&alice, &config(dir.path(), "team", ""));
    let mut child = KillOnDrop(child);
    // Bob signed an operation Alice's roster does not know: a 503 that says what to do.
    let unknown = list(&addr, "photos").unwrap_err().to_string();
    assert!(unknown.contains("503") && unknown.contains("--import"), "{unknown}");
    // The import runs beside the gateway (which holds Alice's state), and the gateway's next
    // request reads the roster again: the bucket is now proven absent.
    let roster = dir.path().join("bob.roster");
    ok(&bob, &["group", "roster", "team", "--out", roster.to_str().unwrap()]);
    assert!(ok(&alice, &["group", "roster", "team", "--import", roster.to_str().unwrap()]).contains("1 imported"));
    let absent = list(&addr, "photos").unwrap_err().to_string();
    assert!(absent.contains("NoSuchBucket"), "{absent}");

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let said = rest.join().unwrap();
    assert!(said.contains("not in this member's roster"), "the gateway logs it: {said}");
}
