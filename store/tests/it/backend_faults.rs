//! Every call `ObjectBlobs` makes, meeting every fault a backend has (`vouch_store::Faults`):
//! a transient error once is tried again and the answer is right; every time, a typed error
//! comes back within a bounded time; a hung call is given up at the deadline; a slow one just
//! works; a torn write or a body cut short is never taken for the object; a full disk is
//! `NoSpace`, not tried again. The same suite on the local backend and on MinIO. Then torn
//! segments under the repository: never served as good data.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use std::future::Future;
use std::time::{Duration, Instant};
use vouch_store::{BlobStore, Call, Fault, Faults, MetaDb, ObjectBlobs, Repository, StoreError};
use vouch_testkit::minio::Minio;

/// The deadline the store gives each call where calls hang, and a streamed write's (its parts
/// are 8 MiB). Short, so that hung calls cost little, yet far above what an honest call takes
/// on a loaded machine (it applies to those too). Where nothing hangs, the store's own.
const DEADLINE: Duration = Duration::from_secs(1);
const WRITER_DEADLINE: Duration = Duration::from_secs(3);
/// Generous bound for a call that gives up: its attempts take about three seconds at most.
const BOUNDED: Duration = Duration::from_secs(15);
/// The bytes of a streamed write: one part of a multipart upload, and a byte more.
const LARGE: usize = (8 << 20) + 1;

/// One thing `ObjectBlobs` does, and the kind of backend call it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Put,
    PutParts,
    Get,
    GetRange,
    /// An empty range at the end: a head.
    Head,
    List,
    Delete,
    /// `get_stream`, read to its end.
    Stream,
    /// `writer` of [`LARGE`] bytes: a multipart put.
    Writer,
}

const OPS: [Op; 9] =
    [Op::Put, Op::PutParts, Op::Get, Op::GetRange, Op::Head, Op::List, Op::Delete, Op::Stream, Op::Writer];

impl Op {
    fn call(self) -> Call {
        match self {
            Op::Put | Op::PutParts => Call::Put,
            Op::Get | Op::Stream => Call::Get,
            Op::GetRange => Call::GetRange,
            Op::Head => Call::Head,
            Op::List => Call::List,
            Op::Delete => Call::Delete,
            Op::Writer => Call::Multipart,
        }
    }

    /// Whether a failure of it is tried again (not a streamed write whose parts have gone,
    /// nor a read whose bytes have been handed out).
    fn retried(self, fault: Fault) -> bool {
        !matches!((self, fault), (Op::Writer, _) | (Op::Stream, Fault::Partial))
    }
}

fn data(len: usize, seed: u8) -> Bytes {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect::<Vec<u8>>().into()
}

/// What a case must end in.
#[derive(Debug)]
enum Expect {
    /// The call worked, with the right bytes.
    Done,
    /// A transient failure, tried as often as it may be.
    Transient,
    TimedOut,
    NoSpace,
}

fn expect(op: Op, fault: Fault, once: bool) -> Expect {
    match fault {
        Fault::Full => Expect::NoSpace,
        Fault::Slow(_) => Expect::Done,
        _ if once && op.retried(fault) => Expect::Done,
        Fault::Timeout => Expect::TimedOut,
        Fault::Error | Fault::Partial => Expect::Transient,
    }
}

/// Does `op` on `blobs` under `prefix` (which holds `prefix/obj`, [`data`] of 64 KiB): an
/// error, or the answer checked through `check` (the store without the faults).
async fn run(op: Op, blobs: &ObjectBlobs, check: &ObjectBlobs, prefix: &str) -> Result<(), StoreError> {
    let (obj, new) = (format!("{prefix}/obj"), format!("{prefix}/new"));
    let stored = data(64 << 10, 1);
    match op {
        Op::Put | Op::PutParts => {
            let bytes = data(100_000, 2);
            match op {
                Op::Put => blobs.put(&new, bytes.clone()).await?,
                _ => blobs.put_parts(&new, vec![bytes.slice(..30_000), Bytes::new(), bytes.slice(30_000..)]).await?,
            }
            assert_eq!(check.get(&new).await.unwrap(), bytes, "{op:?}: the object as put");
        }
        Op::Get => assert_eq!(blobs.get(&obj).await?, stored),
        Op::GetRange => assert_eq!(blobs.get_range(&obj, 100..40_000).await?, stored.slice(100..40_000)),
        Op::Head => {
            let end = stored.len() as u64;
            assert!(blobs.get_range(&obj, end..end).await?.is_empty());
        }
        Op::List => assert_eq!(blobs.list(prefix).await?, vec![obj]),
        Op::Delete => {
            blobs.delete(&obj).await?;
            assert!(matches!(check.get(&obj).await, Err(StoreError::NotFound { .. })), "{op:?}: deleted");
        }
        Op::Stream => {
            let parts: Vec<Bytes> = blobs.get_stream(&obj).await?.try_collect().await?;
            assert_eq!(parts.concat(), stored);
        }
        Op::Writer => {
            let bytes = data(LARGE, 3);
            let mut writer = blobs.writer(&new)?;
            for piece in bytes.chunks(1 << 20) {
                writer.write(Bytes::copy_from_slice(piece)).await?;
            }
            writer.finish().await?;
            assert_eq!(check.get(&new).await.unwrap(), bytes, "{op:?}: the object as written");
        }
    }
    Ok(())
}

/// `call` done, or a panic if it hangs (a missing deadline fails the test, never stalls it).
async fn unhung<T>(what: &str, call: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let done = tokio::time::timeout(Duration::from_secs(60), call).await;
    (done.unwrap_or_else(|_| panic!("{what}: hung")), started.elapsed())
}

/// One case: `fault` armed on `op`'s kind of call (`once`, or every time), `op` done, the
/// outcome held to [`expect`].
async fn case(base: ObjectBlobs, n: usize, op: Op, fault: Fault, once: bool) {
    let what = format!("case {n}: {op:?} meets {fault:?} {}", if once { "once" } else { "every time" });
    let faults = match (fault, op) {
        (Fault::Timeout, Op::Writer) => Faults::with_deadline(WRITER_DEADLINE),
        (Fault::Timeout, _) => Faults::with_deadline(DEADLINE),
        _ => Faults::new(),
    };
    let blobs = base.clone().with_faults(faults.clone());
    let prefix = format!("case-{n:03}");
    base.put(&format!("{prefix}/obj"), data(64 << 10, 1)).await.unwrap();
    let before = faults.calls(op.call());
    match once {
        true => faults.arm(op.call(), fault, 1),
        false => faults.arm_every(op.call(), fault),
    }
    let (outcome, took) = unhung(&what, run(op, &blobs, &base, &prefix)).await;
    faults.heal();
    let calls = faults.calls(op.call()) - before;
    assert!(faults.struck() >= 1, "{what}: no fault struck");
    let expected = expect(op, fault, once);
    match (&expected, &outcome) {
        (Expect::Done, Ok(())) => {}
        (Expect::Transient, Err(StoreError::Backend { .. } | StoreError::Unreachable { .. })) => {}
        (Expect::TimedOut, Err(StoreError::TimedOut { .. })) => {}
        (Expect::NoSpace, Err(e @ StoreError::NoSpace { .. })) => {
            assert!(e.to_string().contains("full"), "{what}: {e}");
            assert_eq!(calls, 1, "{what}: a full disk is not tried again");
        }
        _ => panic!("{what}: expected {expected:?}, got {outcome:?}"),
    }
    if let Err(e) = &outcome {
        assert!(took < BOUNDED, "{what}: gave up after {took:?}");
        let message = e.to_string();
        match (op.retried(fault), &expected) {
            (true, Expect::Transient | Expect::TimedOut) => {
                assert!(calls >= 2 && message.contains("tried"), "{what}: tried again ({calls} calls): {message}")
            }
            (false, Expect::Transient | Expect::TimedOut) if op == Op::Writer => {
                assert!(calls == 1 && message.contains("not tried again"), "{what}: said so: {message}")
            }
            _ => {}
        }
    }
    if matches!((&expected, fault), (Expect::Done, Fault::Error | Fault::Timeout | Fault::Partial)) {
        assert!(calls >= 2, "{what}: the struck call was tried again ({calls} calls)");
    }
    // Healed, the same thing works (a streamed write written again, a torn put put again).
    if op != Op::Delete || outcome.is_err() {
        let (again, _) = unhung(&what, run(op, &blobs, &base, &prefix)).await;
        again.unwrap_or_else(|e| panic!("{what}: healed, it still fails: {e}"));
    }
}

/// Every op against every fault, once and every time: the hangs all at once (they only
/// wait), beside the other cases a few at a time.
async fn suite(base: ObjectBlobs) {
    let started = Instant::now();
    let faults = [Fault::Timeout, Fault::Error, Fault::Slow(Duration::from_millis(30)), Fault::Partial, Fault::Full];
    let mut cases = Vec::new();
    for fault in faults {
        for op in OPS {
            for once in [true, false] {
                cases.push((cases.len(), op, fault, once));
            }
        }
    }
    let count = cases.len();
    let (hangs, others): (Vec<_>, Vec<_>) = cases.into_iter().partition(|c| c.2 == Fault::Timeout);
    let hangs = futures::future::join_all(hangs.into_iter().map(|(n, op, f, once)| case(base.clone(), n, op, f, once)));
    let others = futures::stream::iter(others)
        .map(|(n, op, fault, once)| case(base.clone(), n, op, fault, once))
        .buffer_unordered(6)
        .collect::<Vec<()>>();
    futures::join!(hangs, others);
    eprintln!("{count} fault cases in {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_meets_every_fault_on_the_local_backend() {
    let dir = tempfile::tempdir().unwrap();
    suite(ObjectBlobs::local(dir.path()).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_meets_every_fault_on_minio() {
    let minio = Minio::start();
    suite(ObjectBlobs::s3(&minio.config).unwrap()).await;
}

const OWNER: &[u8] = b"alice/torn";

fn block(i: u64) -> Bytes {
    data(30_000, i as u8)
}

/// A repository's segments written through a backend that tears them: a torn put tried again
/// lands whole; a segment the index names that a lying disk left torn is never served (each
/// block whose bytes are gone is `Corrupt`, never other bytes), and once put whole again it
/// reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_segments_are_never_served_as_good_data() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let blobs = ObjectBlobs::local(&dir.path().join("blobs")).unwrap().with_faults(faults.clone());
    let repo = Repository::open(blobs.clone(), MetaDb::open(&dir.path().join("meta.redb")).unwrap()).unwrap();
    let ids: Vec<u64> = (0..20).collect();

    // Torn once: the put is tried again and the segment lands whole (600 kB: a blob segment).
    faults.arm(Call::Put, Fault::Partial, 1);
    let mut upload = repo.upload(OWNER).unwrap();
    for &i in &ids {
        upload.add(i, b"tag", block(i)).await.unwrap();
    }
    let mut commit = repo.begin();
    commit.add_blocks(upload.finish().await.unwrap());
    repo.commit(commit).await.unwrap();
    assert_eq!(faults.struck(), 1);
    let read = repo.read_blocks(OWNER, &ids).await.unwrap();
    assert!(read.iter().zip(&ids).all(|(b, &i)| b.data == block(i)), "the segment as written");

    // Torn every time: the upload fails with a typed error, and commits nothing.
    faults.arm_every(Call::Put, Fault::Partial);
    let mut upload = repo.upload(OWNER).unwrap();
    for i in 100..120 {
        upload.add(i, b"tag", block(i)).await.unwrap();
    }
    let err = upload.finish().await.unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    faults.heal();
    assert!(repo.read_blocks(OWNER, &[100]).await.is_err(), "an upload that failed is not readable");

    // The committed segment overwritten by a torn write (a disk that lies about atomicity):
    // every read of a block whose bytes are gone is an error, every other read the block.
    let keys = blobs.list("segments").await.unwrap();
    let key = keys.iter().find(|k| k.len() == "segments/".len() + 16).unwrap().clone();
    let whole = blobs.get(&key).await.unwrap();
    faults.arm_every(Call::Put, Fault::Partial);
    assert!(blobs.put(&key, whole.clone()).await.is_err());
    faults.heal();
    assert_eq!(blobs.get(&key).await.unwrap().len(), whole.len() / 2, "torn: half of it is there");
    assert!(matches!(repo.read_blocks(OWNER, &ids).await, Err(StoreError::Corrupt { .. })));
    let (mut served, mut refused) = (0, 0);
    for &i in &ids {
        match repo.read_blocks(OWNER, &[i]).await {
            Ok(read) => {
                assert_eq!(read[0].data, block(i), "block {i}: served, so whole");
                served += 1;
            }
            Err(StoreError::Corrupt { .. }) => refused += 1,
            Err(e) => panic!("block {i}: {e:?}"),
        }
    }
    assert!(served > 0 && refused > 0, "{served} served, {refused} refused");
    let report = repo.check().await.unwrap();
    assert!(!report.is_ok(), "the check finds the torn segment");
    // Put whole again (what a retry does), every block reads back.
    blobs.put(&key, whole).await.unwrap();
    let read = repo.read_blocks(OWNER, &ids).await.unwrap();
    assert!(read.iter().zip(&ids).all(|(b, &i)| b.data == block(i)));
    assert!(repo.check().await.unwrap().is_ok());
}
