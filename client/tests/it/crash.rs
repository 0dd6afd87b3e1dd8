//! Honest crashes never look like lies: a client process and a provider process are killed
//! (SIGKILL) at various instants while the client makes changes (put, edit, sync, prune, rm)
//! and the provider compacts its storage in the background; after each kill a fresh client
//! settles what was in flight and must see every acknowledged change, verified, with the
//! in-flight one applied whole or not at all, and never a "misbehaved". At the end the
//! provider's metadata store is lost and rebuilt from the blobs (and its log), and must hold
//! the same. Both backends (the S3 one on a MinIO, smaller). Also: one process at a time per
//! state directory.

use crate::common;
use vouch_testkit::minio;
mod workload;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vouch_client::{Client, ClientError};
use vouch_misbehave::Misbehave;
use vouch_server::{CompactionPolicy, ServeOptions};
use vouch_testkit::provider;
use workload::{replay, Journal, Model};

const TOKEN: &str = common::TOKEN;

/// This test binary run as a child process: one ignored test of this module, with its
/// environment.
fn child(test: &str, env: &[(&str, String)]) -> Child {
    let test = format!("{}::{test}", module_path!().split_once("::").map_or("", |(_, module)| module));
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", &test, "--nocapture", "--test-threads", "1"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RUST_LOG", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set by the parent test"))
}

/// The provider child: serves `VOUCH_CRASH_DATA` on `VOUCH_CRASH_LISTEN`, compacting all the
/// time (what its background maintenance does, every few milliseconds and on any garbage),
/// until killed. It commits slowly ([`Misbehave::SlowCommit`], honest), so that a kill timed
/// from a change's intent lands before the change is durable or after it, not after its
/// answer. Each compaction that did something is noted in `compactions` beside the data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of the crash tests"]
async fn crash_provider_child() {
    let data = PathBuf::from(env("VOUCH_CRASH_DATA"));
    let s3 = (env("VOUCH_CRASH_BACKEND") == "s3").then_some("env");
    let blocks = vouch_server::Blocks::from_setting(s3).unwrap();
    let options = ServeOptions { maintenance: None, ..ServeOptions::default() };
    let listen = env("VOUCH_CRASH_LISTEN");
    let slow = provider::lying(&data, &blocks, Misbehave::SlowCommit);
    let server = provider::serve(&listen, slow, options, provider::ALICE).await;
    let eager = CompactionPolicy { min_live: 0.9, min_garbage: 0, ..CompactionPolicy::default() };
    loop {
        let done = vouch_server::Service::maintain(server.provider(), &eager).await.unwrap();
        if done.deleted_segments > 0 {
            use std::io::Write;
            let mut runs = std::fs::OpenOptions::new().create(true).append(true).open(data.join("compactions"));
            writeln!(runs.as_mut().unwrap(), "{done:?}").unwrap();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The client child: makes the workload's changes, journaling each, until killed or until a
/// change fails (then it journals how and stops).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of the crash tests"]
async fn crash_client_child() {
    let work = PathBuf::from(env("VOUCH_CRASH_WORK"));
    let mut model = Model::load(&work);
    let mut journal = Journal::open(&work);
    let client = Client::open(&work.join("client")).unwrap();
    loop {
        let op = model.choose();
        journal.line(&format!("begin {} {op}", model.next_op));
        match model.run(&client, &op, &work).await {
            Ok(()) => {
                model = model.after(&op);
                journal.line(&format!("done {}", model.next_op - 1));
            }
            Err(e) => {
                journal.line(&format!("failed {} {}", model.next_op, kind(&e)));
                return;
            }
        }
    }
}

fn kind(e: &ClientError) -> String {
    match e {
        ClientError::Unreachable { .. } => "unreachable".into(),
        ClientError::Unavailable(_) => "unavailable".into(),
        e => format!("{e:?}").replace('\n', " "),
    }
}

struct ProviderProcess {
    child: Child,
    env: Vec<(&'static str, String)>,
}

impl ProviderProcess {
    fn start(env: Vec<(&'static str, String)>, addr: &str) -> ProviderProcess {
        let child = child("crash_provider_child", &env);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "the provider child did not start listening");
            std::thread::sleep(Duration::from_millis(10));
        }
        ProviderProcess { child, env }
    }

    fn kill(&mut self) {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
    }
}

impl Drop for ProviderProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Which process a round kills.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Client,
    Provider,
    Both,
}

/// Waits for a child to end by itself.
fn wait_for(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the client child did not stop after its provider was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How an interrupted change ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// No change was left unsettled.
    Clean,
    Applied,
    NotApplied,
}

/// After a round: settles and reads the provider's state through a fresh client, which must
/// be the model after every acknowledged change, or after the one in flight too.
async fn check(work: &Path, round: usize) -> Outcome {
    let replayed = replay(work);
    let client = Client::open(&work.join("client")).unwrap();
    let unsettled = client.has_unsettled_change();
    let next = replayed.in_flight.as_ref().map_or(replayed.acked.next_op, |m| m.next_op);
    let actual = match Model::read(&client, next).await {
        Ok(m) => m,
        Err(e) => panic!("round {round}: after the crash: {e} ({e:?})"),
    };
    let (model, applied) = if actual.files == replayed.acked.files {
        (Model { next_op: next, ..replayed.acked }, false)
    } else if replayed.in_flight.as_ref().is_some_and(|m| m.files == actual.files) {
        (replayed.in_flight.unwrap(), true)
    } else {
        panic!(
            "round {round}: the provider holds neither the acknowledged changes nor those and the one in flight \
             ({:?} vs acknowledged {:?})",
            actual.files.keys().collect::<Vec<_>>(),
            replayed.acked.files.keys().collect::<Vec<_>>()
        );
    };
    // Possession still proven for every name.
    for name in model.files.keys() {
        assert!(client.audit(name, None, 20).await.unwrap().verified);
    }
    assert!(!client.has_unsettled_change());
    model.save(work);
    match (unsettled, applied) {
        (false, _) => Outcome::Clean,
        (true, true) => Outcome::Applied,
        (true, false) => Outcome::NotApplied,
    }
}

async fn kill_clients_and_providers(minio: Option<&minio::Minio>, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (work, data) = (dir.path().to_path_buf(), dir.path().join("provider"));
    std::fs::create_dir_all(&data).unwrap();
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let mut provider_env = vec![
        ("VOUCH_CRASH_DATA", data.display().to_string()),
        ("VOUCH_CRASH_LISTEN", addr.clone()),
        ("VOUCH_CRASH_BACKEND", if minio.is_some() { "s3" } else { "local" }.to_string()),
    ];
    provider_env.extend(minio.map(minio::Minio::env).unwrap_or_default());
    let mut provider = ProviderProcess::start(provider_env, &addr);
    drop(Client::init(&work.join("client"), &format!("http://{addr}"), TOKEN).unwrap());
    Model::default().save(&work);

    let mut outcomes = Vec::new();
    let mut acknowledged = 0;
    let compacted = || std::fs::metadata(data.join("compactions")).is_ok_and(|m| m.len() > 0);
    // A machine busy with other work makes less garbage per round: a few rounds more then,
    // until the provider has compacted beside the workload at least once.
    let mut round = 0;
    while round < rounds || (!compacted() && round < 3 * rounds) {
        let kill = [Kill::Client, Kill::Provider, Kill::Both][round % 3];
        let before = Model::load(&work).next_op;
        let mut client = child("crash_client_child", &[("VOUCH_CRASH_WORK", work.display().to_string())]);
        // Deterministic instants spread over 150..1100 ms; every other round, then the moment
        // a change is recorded as intended plus 0..22 ms: while its commit is in flight
        // (which the slow provider makes last two waits of 15 ms).
        std::thread::sleep(Duration::from_millis(150 + (round as u64 * 7_919) % 950));
        if round % 2 == 1 {
            let state = work.join("client");
            let deadline = Instant::now() + Duration::from_secs(10);
            let unsettled = || vouch_client::state::StateDir::peek_unsettled(&state).unwrap_or(false);
            while !unsettled() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(200));
            }
            std::thread::sleep(Duration::from_micros(round as u64 * 7_001 % 22_000));
        }
        if matches!(kill, Kill::Provider | Kill::Both) {
            provider.kill();
        }
        if matches!(kill, Kill::Client | Kill::Both) {
            let _ = client.kill();
            client.wait().unwrap();
        } else {
            // Its change in flight fails (the provider is gone) and it stops by itself.
            assert!(wait_for(&mut client, Duration::from_secs(60)).success());
        }
        if matches!(kill, Kill::Provider | Kill::Both) {
            provider = ProviderProcess::start(std::mem::take(&mut provider.env), &addr);
        }
        let replayed = replay(&work);
        match (&replayed.failure, kill) {
            (None, _) => {}
            (Some(why), Kill::Provider | Kill::Both) => {
                assert!(why == "unreachable" || why == "unavailable", "round {round}: a change failed with {why}")
            }
            (Some(why), Kill::Client) => panic!("round {round}: a change failed with an honest provider: {why}"),
        }
        acknowledged += replayed.acked.next_op - before;
        outcomes.push(check(&work, round).await);
        round += 1;
    }
    let runs = std::fs::read_to_string(data.join("compactions")).unwrap_or_default();
    assert!(!runs.is_empty(), "the provider never compacted beside the workload");

    // The provider killed and its metadata store lost: rebuilt from the blobs and what its log
    // still holds, it holds every acknowledged change.
    provider.kill();
    std::fs::remove_file(data.join("meta.redb")).unwrap();
    let blocks = minio.map_or(vouch_server::Blocks::Local, |m| vouch_server::Blocks::S3(m.config.clone()));
    let report = vouch_server::rebuild_dir(&data, &blocks).await.unwrap();
    assert!(report.problems.is_empty(), "{report:#?}");
    let _provider = ProviderProcess::start(std::mem::take(&mut provider.env), &addr);
    assert_eq!(check(&work, round).await, Outcome::Clean, "after the rebuild");

    let count = |o: Outcome| outcomes.iter().filter(|&&x| x == o).count();
    eprintln!(
        "{round} rounds, {acknowledged} changes acknowledged, interrupted changes settled: {} applied, {} not; \
         {} compactions",
        count(Outcome::Applied),
        count(Outcome::NotApplied),
        runs.lines().count()
    );
    assert!(outcomes.iter().any(|&o| o != Outcome::Clean), "no kill interrupted a change: nothing was tested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_clients_and_providers_lose_nothing_acknowledged_on_the_local_backend() {
    kill_clients_and_providers(None, 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_clients_and_providers_lose_nothing_acknowledged_on_s3() {
    let minio = minio::Minio::start();
    kill_clients_and_providers(Some(&minio), 6).await;
}

/// The lock child: holds the client state open until killed.
#[tokio::test]
#[ignore = "child process of the lock test"]
async fn crash_lock_holder_child() {
    let _client = Client::open(Path::new(&env("VOUCH_CRASH_STATE"))).unwrap();
    std::thread::sleep(Duration::from_secs(600));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_is_refused_the_state_while_the_first_holds_it() {
    let setup = common::Setup::new(Misbehave::None).await;
    let mut holder = child("crash_lock_holder_child", &[("VOUCH_CRASH_STATE", setup.state.display().to_string())]);
    let pid = holder.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(setup.state.join("lock")).unwrap_or_default() != pid {
        assert!(Instant::now() < deadline, "the child did not take the lock");
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    match Client::open(&setup.state) {
        Err(e @ ClientError::Busy { .. }) => {
            assert!(e.to_string().contains(&format!("pid {pid}")), "{e}");
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_secs(2), "it waits a little first");
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The kernel released the lock with the process.
    let client = Client::open(&setup.state).unwrap();
    assert!(client.list().await.unwrap().is_empty());
}
