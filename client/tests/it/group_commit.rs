//! Group commit of staged puts: the puts of one client that wait for its commit lock go in one
//! `commit-staged`, each answered on its own. The group forms behind a commit the proxy holds;
//! then the proxy passes the group's answer through as it is, or with the lie under test, and
//! each lie is caught (or, for a refusal the provider made up, caught at the next answer). A
//! put the provider honestly refuses fails alone, and the others land.

use crate::common;
use crate::proxy;

use common::{assert_violation, sample, Setup, TOKEN};
use proxy::{Answer, Gate};
use std::io::Cursor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use vouch_client::{Client, ClientError, Transfer, ViolationKind as Kind};
use vouch_misbehave::Misbehave;
use vouch_proto::{decode, encode, CommitStagedRequest, CommittedPuts, ErrorBody, ErrorCode, LastCommit, Outcome};
use vouch_server::{Answer as Served, Limits, Provider, Service};
use vouch_testkit::provider;

const BLOCK: Option<usize> = Some(4096);
/// Puts in the group that forms behind the held commit.
const GROUP: usize = 5;

fn data(i: usize) -> Vec<u8> {
    sample(20_000 + 1000 * i, 40 + i as u64)
}

fn name(i: usize) -> String {
    format!("n-{i}.bin")
}

/// What the proxy does to the answer of the `commit-staged` after the held one.
#[derive(Clone, Copy)]
enum Lie {
    /// Passes it through changed so.
    Answer(fn(CommittedPuts) -> CommittedPuts),
    /// Loses it (the connection broke after the provider applied the group), and passes the
    /// answers to `last-commit` through changed so.
    Lose(fn(LastCommit) -> LastCommit),
}

/// The outcome of each put of the group, how many puts each `commit-staged` the provider
/// answered held, and the client (behind the proxy).
struct Grouped {
    setup: Setup,
    client: Arc<Client>,
    puts: Vec<Result<Transfer, ClientError>>,
    sizes: Vec<usize>,
}

/// Puts `held.bin`, whose commit the proxy holds; meanwhile [`GROUP`] more puts stage and wait
/// for the commit lock; then the held commit goes on, and the next one carries the group, its
/// answer passed through `lie`.
async fn a_group_behind_a_held_commit(lie: Lie) -> Grouped {
    a_group_named_so_behind_a_held_commit(lie, name).await
}

/// As [`a_group_behind_a_held_commit`], the `i`th put of the group to `named(i)`.
async fn a_group_named_so_behind_a_held_commit(lie: Lie, named: fn(usize) -> String) -> Grouped {
    let setup = Setup::new(Misbehave::None).await;
    let gate: Gate = Arc::new(Semaphore::new(0));
    let (sized, mut sizes) = unbounded_channel();
    let (arrived, mut at_proxy) = unbounded_channel();
    let first = Arc::new(AtomicBool::new(true));
    let hold = gate.clone();
    let url = proxy::proxy(setup.url(), move |op| {
        match (op, lie) {
            ("commit-staged", _) => {}
            ("last-commit", Lie::Lose(settle)) => {
                return Answer::Forward(Box::new(move |code, body| (code, encode(&settle(decode(&body).unwrap())))))
            }
            _ => return Answer::Forward(Box::new(|code, body| (code, body))),
        }
        let held = first.swap(false, Ordering::SeqCst);
        let sized = sized.clone();
        let pass: proxy::Pass = Box::new(move |code, body| {
            let answer: CommittedPuts = decode(&body).unwrap();
            sized.send(answer.puts.len()).unwrap();
            match (held, lie) {
                (true, _) => (code, body),
                (false, Lie::Answer(change)) => (code, encode(&change(answer))),
                (false, Lie::Lose(_)) => {
                    (503, encode(&ErrorBody { code: ErrorCode::Storage, message: "connection lost".into() }))
                }
            }
        });
        match held {
            true => {
                arrived.send(()).unwrap();
                Answer::After(hold.clone(), pass)
            }
            false => Answer::Forward(pass),
        }
    })
    .await;
    let client = behind(&setup, &url);
    let held = spawn_put(&client, "held.bin".into(), sample(10_000, 1));
    at_proxy.recv().await.unwrap();
    let group: Vec<_> = (0..GROUP).map(|i| spawn_put(&client, named(i), data(i))).collect();
    // Every put of the group staged and waiting for the lock the held commit holds (a second
    // put of a name waits for the first instead, before its upload).
    let names: std::collections::HashSet<String> = (0..GROUP).map(named).collect();
    until_waiting(&client, names.len()).await;
    gate.add_permits(1);
    held.await.unwrap().unwrap();
    let mut puts = Vec::new();
    for put in group {
        puts.push(put.await.unwrap());
    }
    let sizes = std::iter::from_fn(|| sizes.try_recv().ok()).collect();
    Grouped { setup, client, puts, sizes }
}

/// The client of `setup`, talking to the proxy at `url`.
fn behind(setup: &Setup, url: &str) -> Arc<Client> {
    std::fs::write(setup.state.join("config.toml"), format!("server = \"{url}\"\n")).unwrap();
    Arc::new(setup.client())
}

/// A put of `name` by `client`, on a task of its own.
fn spawn_put(client: &Arc<Client>, name: String, data: Vec<u8>) -> JoinHandle<Result<Transfer, ClientError>> {
    let client = client.clone();
    tokio::spawn(async move { client.put(&name, Cursor::new(data), BLOCK, |_| {}).await })
}

/// Waits until `n` staged puts wait for the commit lock.
async fn until_waiting(client: &Client, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while client.puts_waiting_to_commit() < n {
        assert!(tokio::time::Instant::now() < deadline, "the puts never all waited for the commit");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn read(client: &Client, name: &str) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    client.get(name, None, None, &mut out).await.map(|_| out)
}

async fn names(client: &Client) -> Result<Vec<String>, ClientError> {
    Ok(client.list().await?.into_iter().map(|e| e.name).collect())
}

fn all_names() -> Vec<String> {
    let mut all: Vec<String> = (0..GROUP).map(name).collect();
    all.push("held.bin".into());
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_waiting_for_the_commit_lock_commit_in_one_request_and_all_verify() {
    let grouped = a_group_behind_a_held_commit(Lie::Answer(|answer| answer)).await;
    assert_eq!(grouped.sizes, [1, GROUP], "the waiting puts went in one commit");
    for (i, put) in grouped.puts.iter().enumerate() {
        assert_eq!(put.as_ref().unwrap().version, 1, "{}", name(i));
    }
    assert!(!grouped.client.has_unsettled_change());
    assert_eq!(names(&grouped.client).await.unwrap(), all_names());
    // A client opened afresh on the state (one root written for the group) agrees.
    drop(grouped.client);
    let reopened = grouped.setup.client();
    for i in 0..GROUP {
        assert_eq!(read(&reopened, &name(i)).await.unwrap(), data(i));
    }
}

/// Two puts of one name at once: the second waits for the first to commit (it builds on the
/// version the first makes), and commits after the group, in its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_put_of_a_name_in_the_group_is_committed_by_the_next_group() {
    let named = |i| match i {
        0 | 1 => "same.bin".to_string(),
        i => name(i),
    };
    let grouped = a_group_named_so_behind_a_held_commit(Lie::Answer(|answer| answer), named).await;
    assert_eq!(grouped.sizes, [1, GROUP - 1, 1], "the second put of the name after the group");
    let mut versions: Vec<u64> = grouped.puts[..2].iter().map(|put| put.as_ref().unwrap().version).collect();
    versions.sort();
    assert_eq!(versions, [1, 2]);
    for put in &grouped.puts[2..] {
        assert_eq!(put.as_ref().unwrap().version, 1);
    }
    assert!(!grouped.client.has_unsettled_change());
    let last = grouped.puts[..2].iter().position(|put| put.as_ref().unwrap().version == 2).unwrap();
    assert_eq!(read(&grouped.client, "same.bin").await.unwrap(), data(last));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_left_out_of_a_groups_answer_is_caught_and_the_group_settles_as_applied() {
    let grouped = a_group_behind_a_held_commit(Lie::Answer(|mut answer| {
        answer.puts.pop();
        answer
    }))
    .await;
    for put in grouped.puts {
        assert_violation(put, Kind::MalformedAnswer, "an outcome short");
    }
    // The provider applied all of them: the group's intent settles so (the other puts'
    // turns at the commit lock, or the next command, settle it).
    assert_eq!(names(&grouped.client).await.unwrap(), all_names());
    assert!(!grouped.client.has_unsettled_change());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_outcomes_out_of_their_order_are_caught() {
    let grouped = a_group_behind_a_held_commit(Lie::Answer(|mut answer| {
        answer.puts.swap(0, 1);
        answer
    }))
    .await;
    for put in grouped.puts {
        assert_violation(put, Kind::BadLookupProof, "outcomes swapped");
    }
}

/// A put the provider applied and then said it refused: the client takes the refusal (it
/// cannot tell), and the provider's next answer, from a root this client never held, is caught.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_applied_and_answered_as_refused_is_caught_at_the_next_answer() {
    let grouped = a_group_behind_a_held_commit(Lie::Answer(|mut answer| {
        let refusal = ErrorBody { code: ErrorCode::Conflict, message: "made up".into() };
        *answer.puts.last_mut().unwrap() = Outcome::Refused(refusal);
        answer
    }))
    .await;
    // The last of the group (in the order the puts joined it) was "refused".
    let refused =
        |r: &Result<Transfer, ClientError>| matches!(r, Err(ClientError::Refused { code: ErrorCode::Conflict, .. }));
    assert_eq!(grouped.puts.iter().filter(|r| refused(r)).count(), 1, "{:?}", grouped.puts);
    assert_eq!(grouped.puts.iter().filter(|r| r.is_ok()).count(), GROUP - 1, "{:?}", grouped.puts);
    assert!(!grouped.client.has_unsettled_change(), "the answer was taken");
    assert_violation(names(&grouped.client).await, Kind::BadListingProof, "the listing after");

    // Made up for the first put, the refusal breaks the chain of the next one's proofs.
    let grouped = a_group_behind_a_held_commit(Lie::Answer(|mut answer| {
        answer.puts[0] = Outcome::Refused(ErrorBody { code: ErrorCode::Conflict, message: "made up".into() });
        answer
    }))
    .await;
    for put in grouped.puts {
        assert_violation(put, Kind::BadLookupProof, "a refusal before an applied put");
    }
}

/// A group's answer lost after the provider applied it: every put of it fails as the
/// connection did (not as a lie), and the group settles as one change, all of it applied. A
/// provider that then shows the group's outcomes other than they were is caught there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_answer_was_lost_settles_whole_and_its_outcomes_must_be_the_groups() {
    let grouped = a_group_behind_a_held_commit(Lie::Lose(|answer| answer)).await;
    for put in &grouped.puts {
        assert!(matches!(put, Err(ClientError::Unavailable(_))), "{put:?}");
    }
    assert_eq!(names(&grouped.client).await.unwrap(), all_names());
    assert!(!grouped.client.has_unsettled_change());
    drop(grouped.client);
    assert_eq!(read(&grouped.setup.client(), &name(3)).await.unwrap(), data(3));

    let lies: [fn(LastCommit) -> LastCommit; 3] = [
        |mut last| {
            last.committed.pop();
            last
        },
        |mut last| {
            last.committed.swap(1, 2);
            last
        },
        |mut last| {
            last.committed =
                vec![Outcome::Refused(ErrorBody { code: ErrorCode::Conflict, message: "x".into() }); GROUP];
            last
        },
    ];
    for lie in lies {
        let grouped = a_group_behind_a_held_commit(Lie::Lose(lie)).await;
        assert_violation(names(&grouped.client).await, Kind::NeitherOldNorNew, "the group's outcomes changed");
    }
}

/// The honest provider, refusing the put of one name in every `commit-staged` (as it refuses
/// a put whose upload expired, or whose name changed meanwhile): the rest of the request is
/// committed, and the refusal answered in its place.
#[derive(Debug)]
struct RefusingOne {
    honest: Provider,
    name: String,
}

impl Service for RefusingOne {
    fn honest(&self) -> &Provider {
        &self.honest
    }

    fn commit_staged<'a>(
        &'a self,
        client: &'a str,
        req: &'a CommitStagedRequest,
        limits: &'a Limits,
    ) -> Served<'a, CommittedPuts> {
        Box::pin(async move {
            let Some(at) = req.puts.iter().position(|p| p.name == self.name) else {
                return self.honest.files().commit_staged(client, req, limits).await;
            };
            let rest: Vec<_> = req.puts.iter().filter(|p| p.name != self.name).cloned().collect();
            let mut answer = match rest.is_empty() {
                true => CommittedPuts { puts: Vec::new() },
                false => self.honest.files().commit_staged(client, &CommitStagedRequest { puts: rest }, limits).await?,
            };
            let refusal = ErrorBody { code: ErrorCode::Conflict, message: "its upload expired".into() };
            answer.puts.insert(at, Outcome::Refused(refusal));
            Ok(answer)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_refused_in_a_group_fails_alone_and_the_others_land() {
    let dir = tempfile::tempdir().unwrap();
    let honest = Provider::open_dir(&dir.path().join("provider"), &vouch_server::Blocks::Local).unwrap();
    let refusing = RefusingOne { honest, name: name(2) };
    let server = provider::serve(provider::ANY_PORT, refusing, Default::default(), provider::ALICE).await;
    let client = Arc::new(Client::init(&dir.path().join("client"), &format!("http://{}", server.addr), TOKEN).unwrap());
    let mut puts = tokio::task::JoinSet::new();
    for i in 0..GROUP {
        let client = client.clone();
        puts.spawn(async move { (i, client.put(&name(i), Cursor::new(data(i)), BLOCK, |_| {}).await) });
    }
    while let Some(done) = puts.join_next().await {
        match done.unwrap() {
            (2, r) => assert!(matches!(r, Err(ClientError::Refused { code: ErrorCode::Conflict, .. })), "{r:?}"),
            (i, r) => assert_eq!(r.unwrap().version, 1, "{}", name(i)),
        }
    }
    assert!(!client.has_unsettled_change());
    let expected: Vec<String> = (0..GROUP).filter(|&i| i != 2).map(name).collect();
    assert_eq!(names(&client).await.unwrap(), expected);
    for i in (0..GROUP).filter(|&i| i != 2) {
        assert_eq!(read(&client, &name(i)).await.unwrap(), data(i));
    }
    server.shutdown().await.unwrap();
}

/// The callers of a group's puts stop waiting (S3 applications hang up) while the group's
/// commit is on its way: the commit goes on without them, and its own answer settles it. Every
/// put of the group lands, and nothing is left for `last-commit` to settle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_commit_goes_on_when_the_callers_that_began_it_stop_waiting() {
    let setup = Setup::new(Misbehave::None).await;
    let gates: [Gate; 2] = [Arc::new(Semaphore::new(0)), Arc::new(Semaphore::new(0))];
    let (arrived, mut at_proxy) = unbounded_channel();
    let commits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let settles = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (held, counted) = (gates.clone(), settles.clone());
    let url = proxy::proxy(setup.url(), move |op| {
        let pass: proxy::Pass = Box::new(|code, body| (code, body));
        match op {
            // The first commit (held.bin's) is held while the group forms; the second (the
            // group's) while its callers hang up.
            "commit-staged" => match commits.fetch_add(1, Ordering::SeqCst) {
                n @ (0 | 1) => {
                    arrived.send(()).unwrap();
                    Answer::After(held[n].clone(), pass)
                }
                _ => Answer::Forward(pass),
            },
            "last-commit" => {
                counted.fetch_add(1, Ordering::SeqCst);
                Answer::Forward(pass)
            }
            _ => Answer::Forward(pass),
        }
    })
    .await;
    let client = behind(&setup, &url);
    let first = spawn_put(&client, "held.bin".into(), sample(10_000, 1));
    at_proxy.recv().await.unwrap();
    let group: Vec<_> = (0..GROUP).map(|i| spawn_put(&client, name(i), data(i))).collect();
    until_waiting(&client, GROUP).await;
    gates[0].add_permits(1);
    first.await.unwrap().unwrap();
    // The group's commit is at the proxy: all its callers hang up, the one that took the
    // commit lock among them.
    at_proxy.recv().await.unwrap();
    for gone in group {
        gone.abort();
        assert!(gone.await.unwrap_err().is_cancelled());
    }
    gates[1].add_permits(1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while client.has_unsettled_change() {
        assert!(tokio::time::Instant::now() < deadline, "the group's commit was left to settle");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(names(&client).await.unwrap(), all_names());
    for i in 0..GROUP {
        assert_eq!(read(&client, &name(i)).await.unwrap(), data(i));
    }
    assert_eq!(settles.load(Ordering::SeqCst), 0, "nothing was left for last-commit");
}
