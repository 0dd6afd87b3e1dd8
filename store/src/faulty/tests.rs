use super::*;
use crate::{BlobStore, ObjectBlobs};
use futures::StreamExt;
use object_store::local::LocalFileSystem;
use object_store::{ObjectStore, ObjectStoreExt};

#[tokio::test]
async fn armed_faults_fail_puts_and_deletes_and_garble_what_they_match() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let blobs = ObjectBlobs::local(dir.path()).unwrap().with_faults(faults.clone()).with_retries(1, Duration::ZERO);
    faults.fail_puts_after(1);
    blobs.put("a", vec![1u8; 8].into()).await.unwrap();
    assert!(blobs.put("b", vec![2u8; 8].into()).await.is_err(), "the second put fails");
    assert!(blobs.get("b").await.is_err(), "and stores nothing");
    faults.fail_deletes(true);
    assert!(blobs.delete("a").await.is_err());
    assert_eq!(blobs.get("a").await.unwrap().as_ref(), [1u8; 8]);
    faults.heal();
    faults.garble_puts(|key| key.starts_with("g"));
    let words: Vec<u8> = (0..16).collect();
    blobs.put("garbled", words.clone().into()).await.unwrap();
    blobs.put("kept", words.clone().into()).await.unwrap();
    let garbled = blobs.get("garbled").await.unwrap();
    assert_eq!(garbled[..8], words[8..]);
    assert_eq!(garbled[8..], words[..8]);
    assert_eq!(blobs.get("kept").await.unwrap().as_ref(), words.as_slice());
    faults.heal();
    blobs.delete("a").await.unwrap();
    assert_eq!(faults.puts(), 4);
}

#[test]
fn schedules_strike_the_calls_they_name_and_count_every_call() {
    let faults = Faults::new();
    faults.arm(Call::Get, Fault::Error, 2);
    faults.arm_one_in(Call::Any, Fault::Full, 3);
    let got: Vec<Option<Fault>> = (0..6).map(|_| faults.strike(Call::Get)).collect();
    // Two gets meet the error; the `Any` rule sees only the calls the first rule let through.
    assert_eq!(got, [Some(Fault::Error), Some(Fault::Error), None, None, Some(Fault::Full), None]);
    assert_eq!(faults.strike(Call::Put), None);
    // Rules are checked in the order they were armed: the sixth call the `Any` rule sees
    // is its.
    faults.arm_every(Call::Delete, Fault::Timeout);
    assert_eq!(faults.strike(Call::Delete), Some(Fault::Full));
    assert_eq!(faults.strike(Call::Delete), Some(Fault::Timeout));
    assert_eq!((faults.calls(Call::Get), faults.calls(Call::Any), faults.struck()), (6, 9, 5));
    faults.heal();
    assert_eq!(faults.strike(Call::Delete), None);
}

/// The raw store behind faults, for the calls `ObjectBlobs` never makes (a copy, a listing by
/// delimiter) and the shape of each fault at the `object_store` level.
#[tokio::test]
async fn each_fault_strikes_copies_and_listings_as_the_table_says() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faults::new();
    let store =
        Faulty { inner: Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap()), faults: faults.clone() };
    let (from, to) = (Path::from("a/from"), Path::from("a/to"));
    let data: Vec<u8> = (0..100u8).collect();
    store.put(&from, data.clone().into()).await.unwrap();

    faults.arm(Call::Copy, Fault::Partial, 1);
    assert!(store.copy(&from, &to).await.is_err(), "a torn copy fails");
    assert_eq!(store.get(&to).await.unwrap().bytes().await.unwrap().as_ref(), &data[..50], "and leaves half");
    faults.arm(Call::Copy, Fault::Full, 1);
    let err = store.copy(&from, &to).await.unwrap_err();
    assert_eq!(crate::error::io_cause(&err).map(|io| io.kind()), Some(std::io::ErrorKind::StorageFull), "{err}");
    faults.arm(Call::Copy, Fault::Timeout, 1);
    let hung = tokio::time::timeout(Duration::from_millis(50), store.copy(&from, &to)).await;
    assert!(hung.is_err(), "a copy that never answers");
    faults.arm(Call::Copy, Fault::Slow(Duration::from_millis(20)), 1);
    store.copy(&from, &to).await.unwrap();
    assert_eq!(store.get(&to).await.unwrap().bytes().await.unwrap().as_ref(), data.as_slice());

    faults.arm(Call::List, Fault::Error, 1);
    assert!(store.list_with_delimiter(Some(&Path::from("a"))).await.is_err());
    assert_eq!(store.list_with_delimiter(Some(&Path::from("a"))).await.unwrap().objects.len(), 2);
    faults.arm(Call::List, Fault::Partial, 1);
    let listed: Vec<_> = store.list(Some(&Path::from("a"))).collect().await;
    assert_eq!(listed.len(), 2, "one entry, then the failure");
    assert!(listed[0].is_ok() && listed[1].is_err());

    faults.arm(Call::Head, Fault::Partial, 1);
    assert!(store.head(&from).await.is_err());
    faults.arm(Call::GetRange, Fault::Partial, 1);
    assert!(store.get_range(&from, 10..30).await.is_err(), "a body broken off is an error, never short bytes");
    faults.arm(Call::Delete, Fault::Partial, 1);
    assert!(store.delete(&to).await.is_err(), "the answer is lost");
    assert!(matches!(store.head(&to).await, Err(object_store::Error::NotFound { .. })), "the delete was done");
    assert_eq!((faults.calls(Call::Copy), faults.calls(Call::List), faults.struck()), (4, 3, 9));
}
