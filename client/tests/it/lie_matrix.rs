//! Every lie of `Misbehave::ALL`, told to a real client over the wire, held to the one table
//! of what the client must make of it (`vouch_testkit::lies::expected`): a caught lie as
//! exactly its violation, an honest failure never as a lie (and the client goes on), a PoR
//! audit lie as failed parts. Each lie meets the steps of its own test, cut down to the
//! operation it targets: on the local block store, and again on S3 (a MinIO) where those
//! steps reach the provider's blobs (reads, audits, PoR).

use crate::common;
use crate::vicos;

use common::por::{get_por, put_por};
use common::{assert_violation, sample, Setup, TOKEN_BOB};
use vouch_client::{Client, ClientError, PorAuditReport, PutOptions, ViolationKind};
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;
use vouch_store::{BlobStore, ObjectBlobs};
use vouch_testkit::lies::{expected, Expect};
use vouch_testkit::minio::Minio;

const BLOCK: Option<usize> = Some(4096);

/// Where a lie is met.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scenario {
    /// Files stored honestly, the provider restarted lying, then one read or audit.
    Read(ReadOp),
    /// A file stored honestly, the provider restarted lying, then a new version of it stored
    /// and read back.
    Change,
    /// The provider lying from the start, PoR files stored, then the operation named.
    Por(PorOp),
    /// A VICOS group: a member's first operations, then its next one.
    Vicos,
    /// Left to the test named: the lie is slow on purpose.
    LeftTo(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ReadOp {
    /// A whole get of the latest version.
    Latest,
    /// A get of a range of the latest version.
    Range(usize, usize),
    /// A whole get of a file of more than one read chunk.
    Large,
    /// A get of version 1.
    FirstVersion,
    List,
    Audit,
    /// A second audit, after one that verified.
    AuditAgain,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum PorOp {
    /// A read of a file's copy.
    Read,
    /// A PoR audit.
    Audit,
    /// A second file's copy.
    SecondPut,
    /// Small files, one batch each, until a plan asks again for a level rebuilt since.
    UntilRefused,
    /// A read of a copy a consolidation moved.
    Moved,
    /// Two files' copies, whatever becomes of their batches.
    Writes,
}

/// Where each lie is met (a match, not a table: a new lie does not compile until it has a
/// place here too). The honest provider meets every scenario.
fn scenarios(lie: Misbehave) -> Vec<Scenario> {
    use Scenario::*;
    let one = match lie {
        Misbehave::None => return every_scenario(),
        Misbehave::CorruptBlock | Misbehave::DropBlock | Misbehave::SwapBlocks | Misbehave::OldVersion => {
            Read(ReadOp::Latest)
        }
        Misbehave::StretchBlock => Read(ReadOp::Range(10_000, 30_000)),
        Misbehave::PastRange => Read(ReadOp::Range(5_000, 9_000)),
        Misbehave::TruncateStream => Read(ReadOp::Large),
        Misbehave::HideVersion => Read(ReadOp::FirstVersion),
        Misbehave::HideFile => Read(ReadOp::List),
        Misbehave::OtherChallenge => Read(ReadOp::Audit),
        Misbehave::ReplayProof => Read(ReadOp::AuditAgain),
        Misbehave::Rollback
        | Misbehave::WrongCount
        | Misbehave::RefuseCommit
        | Misbehave::DropAnswer
        | Misbehave::SlowCommit => Change,
        Misbehave::SwapPorSlots | Misbehave::OtherPorChecksum => Por(PorOp::Read),
        Misbehave::ForgePorAggregate | Misbehave::SkipPorRebuild | Misbehave::DropPorLabels => Por(PorOp::Audit),
        Misbehave::FreePorLiveSlots => Por(PorOp::SecondPut),
        Misbehave::StalePorLevel => Por(PorOp::UntilRefused),
        Misbehave::StalePorLabel => Por(PorOp::Moved),
        Misbehave::FailPorWrites
        | Misbehave::FlakyPorWrites
        | Misbehave::DropPorAnswer
        | Misbehave::RefusedPorLabel => Por(PorOp::Writes),
        // It holds the log for 5 s over its first batch, so that its client stops waiting.
        Misbehave::SlowPorWrite => LeftTo(
            "por::a_batch_applied_after_its_client_stopped_waiting_is_settled_by_the_next_command \
             (and the server's por::a_batch_is_applied_after_its_client_stopped_waiting)",
        ),
        Misbehave::ForkAip => Vicos,
    };
    vec![one]
}

/// Every scenario some lie is met in, once each.
fn every_scenario() -> Vec<Scenario> {
    let mut every = Vec::new();
    for scenario in Misbehave::ALL.into_iter().filter(|&lie| lie != Misbehave::None).flat_map(scenarios) {
        if !every.contains(&scenario) && !matches!(scenario, Scenario::LeftTo(_)) {
            every.push(scenario);
        }
    }
    every
}

impl Scenario {
    /// Whether its steps reach the provider's blob store (worth running on S3 too).
    fn touches_blobs(self) -> bool {
        matches!(self, Scenario::Read(_) | Scenario::Por(_))
    }
}

/// What the operations that met a lie came to: the first error, or every step answered (with
/// the PoR audit's report, when the scenario ends with one).
type Seen = Result<Option<PorAuditReport>, ClientError>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lie_is_caught_as_its_violation_on_local_storage() {
    every_lie(Blocks::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lie_is_caught_as_its_violation_on_s3() {
    let minio = Minio::start();
    every_lie(Blocks::S3(minio.config.clone())).await;
}

async fn every_lie(blocks: Blocks) {
    let on_s3 = matches!(blocks, Blocks::S3(_));
    for lie in Misbehave::ALL {
        for scenario in scenarios(lie) {
            if matches!(scenario, Scenario::LeftTo(_)) || on_s3 && !scenario.touches_blobs() {
                continue;
            }
            meet(lie, scenario, &blocks).await;
            // The next provider starts on an empty bucket, as on an empty directory.
            if let Blocks::S3(config) = &blocks {
                let bucket = ObjectBlobs::s3(config).unwrap();
                for key in bucket.list("").await.unwrap() {
                    bucket.delete(&key).await.unwrap();
                }
            }
        }
    }
}

/// `lie` met in `scenario`, and what the client made of it held to the table.
async fn meet(lie: Misbehave, scenario: Scenario, blocks: &Blocks) {
    let (mut setup, seen) = match scenario {
        Scenario::Read(read) => read_after_a_restart(lie, blocks, read).await,
        Scenario::Change => change(lie, blocks).await,
        Scenario::Por(por) => por_lying_from_the_start(lie, blocks, por).await,
        Scenario::Vicos => vicos_group(lie).await,
        Scenario::LeftTo(test) => unreachable!("left to {test}"),
    };
    let what = format!("{lie} in {scenario:?}");
    match expected(lie) {
        Expect::Honest => match seen {
            Ok(report) => assert!(report.is_none_or(|r| r.verified), "{what}"),
            Err(e) => panic!("{what}: an honest provider failed: {e:?}"),
        },
        Expect::Caught(kind) => assert_violation(seen, kind, &what),
        Expect::AuditPartFails => {
            let Ok(Some(report)) = seen else { panic!("{what}: expected an audit's report, got {seen:?}") };
            assert!(report.parts.iter().chain(&report.copy).any(|p| !p.verified), "{what}: {report:?}");
            assert_violation(report.into_result(), ViolationKind::BadPorAudit, &what);
        }
        expect @ (Expect::NotALie | Expect::Overruled) => {
            if let Err(e) = &seen {
                assert!(e.violation_kind().is_none(), "{what}: an honest failure reported as a lie: {e:?}");
            }
            if expect == Expect::NotALie {
                setup.restart(Misbehave::None).await;
            }
            goes_on(&setup, scenario).await;
        }
    }
    setup.server.take().unwrap().shutdown().await.unwrap();
}

async fn put(client: &Client, name: &str, data: &[u8]) -> Result<(), ClientError> {
    client.put(name, std::io::Cursor::new(data.to_vec()), BLOCK, |_| {}).await.map(drop)
}

/// A get of `name` (of `range` only, if given): its result, and what it handed out.
async fn fetch(
    client: &Client,
    name: &str,
    version: Option<u64>,
    range: Option<(usize, usize)>,
) -> (Result<(), ClientError>, Vec<u8>) {
    let mut out = Vec::new();
    let range = range.map(|(start, end)| start as u64..end as u64);
    let result = client.get(name, version, range, &mut out).await.map(drop);
    (result, out)
}

/// A get that must hand out `want`, or a true prefix of it before it fails.
async fn get(client: &Client, name: &str, version: Option<u64>, range: Option<(usize, usize)>, want: &[u8]) -> Seen {
    let (result, out) = fetch(client, name, version, range).await;
    assert!(want.starts_with(&out), "{name}: an altered byte was handed out");
    result?;
    assert_eq!(out, want, "{name}");
    Ok(None)
}

async fn audit(client: &Client) -> Seen {
    let report = client.audit("f.bin", None, 100).await?;
    assert!(report.verified, "{report:?}");
    Ok(None)
}

/// `misbehave.rs`' steps: two versions of `f.bin` and a second name stored honestly (and, for
/// [`ReadOp::Large`], a file of more than one read chunk), then the provider restarted lying.
async fn read_after_a_restart(lie: Misbehave, blocks: &Blocks, read: ReadOp) -> (Setup, Seen) {
    let mut setup = Setup::on(blocks.clone(), Misbehave::None).await;
    let client = setup.client();
    let (v1, v2) = (sample(100_000, 1), sample(100_000, 2));
    let large = sample(vouch_proto::READ_CHUNK_BYTES + 100_000, 3);
    put(&client, "f.bin", &v1).await.unwrap();
    put(&client, "f.bin", &v2).await.unwrap();
    put(&client, "g.bin", b"second").await.unwrap();
    if read == ReadOp::Large {
        put(&client, "large.bin", &large).await.unwrap();
    }
    drop(client);
    setup.restart(lie).await;
    let client = setup.client();
    let seen = match read {
        ReadOp::Latest => get(&client, "f.bin", None, None, &v2).await,
        ReadOp::Range(start, end) => get(&client, "f.bin", None, Some((start, end)), &v2[start..end]).await,
        ReadOp::Large => get(&client, "large.bin", None, None, &large).await,
        ReadOp::FirstVersion => get(&client, "f.bin", Some(1), None, &v1).await,
        ReadOp::List => client.list().await.map(|listed| {
            let names: Vec<String> = listed.into_iter().map(|e| e.name).collect();
            assert_eq!(names, ["f.bin", "g.bin"]);
            None
        }),
        ReadOp::Audit => audit(&client).await,
        ReadOp::AuditAgain => match audit(&client).await {
            Ok(_) => audit(&client).await,
            Err(e) => panic!("the first proof is genuine: {e:?}"),
        },
    };
    drop(client);
    (setup, seen)
}

/// `bindings.rs`' and `intents.rs`' steps: a file stored honestly, the provider restarted
/// lying, then a new version of the file stored (each of these lies meets a put) and read.
async fn change(lie: Misbehave, blocks: &Blocks) -> (Setup, Seen) {
    let mut setup = Setup::on(blocks.clone(), Misbehave::None).await;
    put(&setup.client(), "f.bin", &sample(10_000, 1)).await.unwrap();
    setup.restart(lie).await;
    let client = setup.client();
    let v2 = sample(10_000, 2);
    let seen = match put(&client, "f.bin", &v2).await {
        Ok(()) => get(&client, "f.bin", None, None, &v2).await,
        Err(e) => Err(e),
    };
    drop(client);
    (setup, seen)
}

/// `por.rs`', `por_lies.rs`' and `por_compact.rs`' steps, against a provider lying from the
/// start.
async fn por_lying_from_the_start(lie: Misbehave, blocks: &Blocks, por: PorOp) -> (Setup, Seen) {
    let setup = Setup::on(blocks.clone(), lie).await;
    let client = setup.client();
    let put = async |name: &str, data: &[u8]| {
        client
            .put_with(
                name,
                std::io::Cursor::new(data.to_vec()),
                PutOptions { por: true, ..PutOptions::default() },
                |_| {},
            )
            .await
            .map(drop)
    };
    let a = sample(60_000, 1);
    let seen: Seen = match por {
        PorOp::Read => {
            put("a", &a).await.unwrap();
            get_por(&client, "a", None).await.map(|got| {
                assert_eq!(got, a);
                None
            })
        }
        PorOp::Audit => {
            // About 40 slots: U grows to 64, and the batch leaves levels 0 and 1 filled (for
            // a skipped rebuild to leave unmixed).
            put("a", &sample(160_000, 2)).await.unwrap();
            client.por().audit(16).await.map(Some)
        }
        PorOp::SecondPut => {
            // The first request for free slots is answered honestly: a copy is there to damage.
            put("a", &a).await.unwrap();
            put("b", &sample(20_000, 3)).await.map(|()| None)
        }
        PorOp::UntilRefused => {
            // One group per batch; H has levels to ask for once U has grown to 64 slots.
            let mut seen = Ok(None);
            for i in 0..64 {
                seen = put(&format!("s{i}"), &sample(3_000 + 4_000 * (i % 2), 30 + i as u64)).await.map(|()| None);
                if seen.is_err() {
                    break;
                }
            }
            seen
        }
        PorOp::Moved => {
            put("big", &sample(400_000, 4)).await.unwrap();
            put("c", &sample(20_000, 5)).await.unwrap();
            let grown = client.por().audit(4).await.unwrap().log_capacity;
            client.remove("big").await.unwrap();
            assert!(client.por().audit(4).await.unwrap().log_capacity < grown, "consolidated: c was moved");
            get_por(&client, "c", None).await.map(|got| {
                assert_eq!(got, sample(20_000, 5));
                None
            })
        }
        PorOp::Writes => {
            let first = put("a", &a).await;
            let second = put("b", &sample(20_000, 6)).await;
            first.and(second).map(|()| None)
        }
    };
    (setup, seen)
}

/// `vicos.rs`' steps: Alice creates a group and puts; Bob's first operations (on a second
/// history, if the provider forked the group), then his next one.
async fn vicos_group(lie: Misbehave) -> (Setup, Seen) {
    let setup = Setup::new(lie).await;
    let alice = vicos::create(&setup).await;
    let bob = vicos::member(&setup, TOKEN_BOB, 1);
    // More operations than Bob's on the fork: the real history must be past where his is.
    for i in 0..6 {
        vicos::put(&alice, &format!("a{i}"), b"alice's").await;
    }
    assert_eq!(vouch_misbehave::FORK_OPERATIONS, 3, "bob's first operations below");
    vicos::put(&bob, "b", b"bob's").await;
    vicos::list(&bob).await;
    vicos::get(&bob, "a0").await.unwrap();
    let seen = bob.list().await.map(|_| None);
    (setup, seen)
}

/// After an honest failure, or a lie overruled: every file the client holds reads back
/// (verified: a read that succeeds is the file's bytes), and it stores and reads back a new
/// one (and its PoR log audits whole).
async fn goes_on(setup: &Setup, scenario: Scenario) {
    let client = setup.client();
    let por = matches!(scenario, Scenario::Por(_));
    for entry in client.list().await.unwrap() {
        match por {
            true => drop(get_por(&client, &entry.name, None).await.unwrap()),
            false => fetch(&client, &entry.name, None, None).await.0.unwrap(),
        }
    }
    let new = sample(30_000, 9);
    if por {
        put_por(&client, "new", &new).await;
        assert_eq!(get_por(&client, "new", None).await.unwrap(), new);
        let report = client.por().audit(16).await.unwrap();
        assert!(report.verified, "{report:?}");
    } else {
        put(&client, "new", &new).await.unwrap();
        get(&client, "new", None, None, &new).await.unwrap();
    }
}
