//! `stage` and `commit-staged` on the provider alone: what a staged upload may and may not
//! become.

use super::write::leaf_of;
use super::*;
use crate::{Blocks, Limits};
use bytes::Bytes;
use std::time::Duration;
use vouch_proto::CommitStagedRequest;

const CLIENT: &str = "c";
const NAME: &str = "f";

/// A provider's namespaces over a temporary directory.
fn provider() -> (tempfile::TempDir, Files) {
    let dir = tempfile::tempdir().unwrap();
    let provider = Provider::open_dir(dir.path(), &Blocks::Local).unwrap();
    (dir, provider.files)
}

/// Stages three blocks as version 1 of [`NAME`] under `attempt`; returns the record.
async fn stage(provider: &Files, attempt: Attempt, limits: &Limits) -> Result<VersionRecord, ProviderError> {
    let (file, scheme) = (FileId([7; 16]), SchemeId::Linear);
    let mut put = provider.begin_stage(CLIENT, NAME, file, scheme, attempt)?;
    let blocks: Vec<WireBlock> = (0..3u8)
        .map(|i| WireBlock {
            nonce: i as u64,
            tag: ByteBuf::from(vec![i; scheme.tag_len()]),
            data: Bytes::from(vec![i + 1; 100]),
        })
        .collect();
    let leaves: Vec<Block> = blocks.iter().map(|b| leaf_of(scheme, b)).collect();
    provider.put_blocks(&mut put, blocks).await?;
    let list = FlexList::build(&leaves).unwrap();
    let record =
        VersionRecord { number: 1, scheme, file, root: list.root(), len: list.total_len(), next_nonce: 3, time: 0 };
    let answer = provider.stage_upload(put, record, limits).await?;
    assert_eq!(answer.blocks, 3);
    Ok(record)
}

fn commit_request(attempt: Attempt, record: &VersionRecord) -> CommitStagedRequest {
    CommitStagedRequest { name: NAME.into(), attempt, record: ByteBuf::from(record.to_bytes().to_vec()) }
}

fn exists(provider: &Files) -> bool {
    matches!(provider.lookup(CLIENT, NAME).unwrap().1, Found::At { .. })
}

#[tokio::test]
async fn a_staged_upload_commits_once_under_its_attempt() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    assert_eq!(provider.staged_waiting(CLIENT), 1);
    assert!(!exists(&provider), "staged is not committed");
    provider.commit_staged(CLIENT, &commit_request(attempt, &record), &limits).await.unwrap();
    assert!(exists(&provider));
    assert_eq!(provider.staged_waiting(CLIENT), 0);
    let again = provider.commit_staged(CLIENT, &commit_request(attempt, &record), &limits).await;
    assert!(matches!(again, Err(ProviderError::Files(FilesError::NothingStaged))), "{again:?}");
}

#[tokio::test]
async fn a_commit_naming_another_record_or_name_than_its_upload_is_refused() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let other = VersionRecord { len: record.len + 1, ..record };
    let r = provider.commit_staged(CLIENT, &commit_request(attempt, &other), &limits).await;
    assert!(matches!(r, Err(ProviderError::Files(FilesError::NotTheStaged))), "{r:?}");
    assert!(!exists(&provider));

    let attempt = Attempt([2; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let renamed = CommitStagedRequest { name: "g".into(), ..commit_request(attempt, &record) };
    let r = provider.commit_staged(CLIENT, &renamed, &limits).await;
    assert!(matches!(r, Err(ProviderError::Files(FilesError::NotTheStaged))), "{r:?}");
    assert!(!exists(&provider));
}

#[tokio::test]
async fn settling_an_attempt_drops_its_staged_upload_and_fences_its_commit() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let (settled, other) = (Attempt([1; 16]), Attempt([2; 16]));
    let record = stage(&provider, settled, &limits).await.unwrap();
    stage(&provider, other, &limits).await.unwrap();
    provider.last_commit(CLIENT, NAME, settled).await.unwrap();
    assert_eq!(provider.staged_waiting(CLIENT), 1, "only the settled attempt's upload goes");
    let r = provider.commit_staged(CLIENT, &commit_request(settled, &record), &limits).await;
    assert!(matches!(r, Err(ProviderError::Files(FilesError::Settled))), "{r:?}");
    assert!(!exists(&provider));
    provider.commit_staged(CLIENT, &commit_request(other, &record), &limits).await.unwrap();
    assert!(exists(&provider));
}

#[tokio::test]
async fn staged_uploads_are_bounded_in_number_and_in_time() {
    let (_dir, provider) = provider();
    let two = Limits { max_staged: 2, ..Limits::default() };
    stage(&provider, Attempt([1; 16]), &two).await.unwrap();
    stage(&provider, Attempt([2; 16]), &two).await.unwrap();
    let third = stage(&provider, Attempt([3; 16]), &two).await;
    assert!(matches!(third, Err(ProviderError::Files(FilesError::TooManyStaged { max: 2 }))), "{third:?}");
    let dup = stage(&provider, Attempt([2; 16]), &Limits::default()).await;
    assert!(matches!(dup, Err(ProviderError::Files(FilesError::StagedTwice))), "one upload per attempt: {dup:?}");

    // Past their wait, uploads are dropped: the commit is a conflict, and the next stage
    // finds room.
    let brief = Limits { staged_for: Duration::from_millis(20), max_staged: 2, ..Limits::default() };
    tokio::time::sleep(Duration::from_millis(40)).await;
    let record = stage(&provider, Attempt([4; 16]), &brief).await.unwrap();
    assert_eq!(provider.staged_waiting(CLIENT), 1, "the expired two were dropped");
    tokio::time::sleep(Duration::from_millis(40)).await;
    let late = provider.commit_staged(CLIENT, &commit_request(Attempt([4; 16]), &record), &brief).await;
    assert!(matches!(late, Err(ProviderError::Files(FilesError::NothingStaged))), "{late:?}");
    assert!(!exists(&provider));
}

/// The namespace in memory fallen behind the store (what a commit cut off between its durable
/// write and its update in memory left, before commits awaited nothing after the write): a
/// read loads it again and answers the store's state, never refuses for good.
#[tokio::test]
async fn a_namespace_in_memory_behind_the_store_is_loaded_again() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    provider.commit_staged(CLIENT, &commit_request(attempt, &record), &limits).await.unwrap();
    // A second view of the same repository, whose memory the next commit does not reach.
    let behind = Files::over(provider.repo.clone());
    let (_, found, records, _) = behind.lookup_with_versions(CLIENT, NAME).unwrap();
    assert!(matches!(found, Found::At { .. }) && records.len() == 1);
    let remove = RemoveRequest { name: NAME.into(), attempt: Attempt([2; 16]) };
    provider.remove(CLIENT, &remove).await.unwrap();
    let (_, found, records, _) = behind.lookup_with_versions(CLIENT, NAME).unwrap();
    assert!(matches!(found, Found::Absent { .. }), "{found:?}");
    assert!(records.is_empty());
}
