//! `stage` and `commit-staged` on the provider alone: what a staged upload may and may not
//! become.

use super::write::leaf_of;
use super::*;
use crate::{Blocks, Limits};
use bytes::Bytes;
use std::time::Duration;
use vouch_proto::{CommitStagedRequest, CommittedPuts, Outcome, StagedPut, MAX_GROUP};

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
    stage_named(provider, NAME, FileId([7; 16]), attempt, limits).await
}

/// Stages three blocks as version 1 of `name`, a new file `file`, under `attempt`.
async fn stage_named(
    provider: &Files,
    name: &str,
    file: FileId,
    attempt: Attempt,
    limits: &Limits,
) -> Result<VersionRecord, ProviderError> {
    let scheme = SchemeId::Linear;
    let mut put = provider.begin_stage(CLIENT, name, file, scheme, attempt)?;
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

fn staged_put(name: &str, attempt: Attempt, record: &VersionRecord) -> StagedPut {
    StagedPut { name: name.into(), attempt, record: ByteBuf::from(record.to_bytes().to_vec()) }
}

fn commit_request(attempt: Attempt, record: &VersionRecord) -> CommitStagedRequest {
    CommitStagedRequest { puts: vec![staged_put(NAME, attempt, record)] }
}

/// The outcome of a `commit-staged` of one put: its answer, or what refused it (the put, or
/// the whole request).
async fn commit_one(provider: &Files, req: &CommitStagedRequest, limits: &Limits) -> Result<Committed, String> {
    match provider.commit_staged(CLIENT, req, limits).await {
        Ok(CommittedPuts { mut puts }) if puts.len() == 1 => match puts.pop() {
            Some(Outcome::Committed(c)) => Ok(c),
            Some(Outcome::Refused(e)) => Err(e.message),
            None => unreachable!(),
        },
        Ok(other) => panic!("one put, {} outcomes", other.puts.len()),
        Err(e) => Err(e.to_string()),
    }
}

/// What a refusal of `e` says.
fn refused(e: FilesError) -> Result<Committed, String> {
    Err(ProviderError::from(e).to_string())
}

fn exists(provider: &Files) -> bool {
    exists_named(provider, NAME)
}

fn exists_named(provider: &Files, name: &str) -> bool {
    matches!(provider.lookup(CLIENT, name).unwrap().1, Found::At { .. })
}

#[tokio::test]
async fn a_staged_upload_commits_once_under_its_attempt() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    assert_eq!(provider.staged_waiting(CLIENT), 1);
    assert!(!exists(&provider), "staged is not committed");
    commit_one(&provider, &commit_request(attempt, &record), &limits).await.unwrap();
    assert!(exists(&provider));
    assert_eq!(provider.staged_waiting(CLIENT), 0);
    let again = commit_one(&provider, &commit_request(attempt, &record), &limits).await;
    assert_eq!(again, refused(FilesError::NothingStaged));
}

#[tokio::test]
async fn a_commit_naming_another_record_or_name_than_its_upload_is_refused() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let other = VersionRecord { len: record.len + 1, ..record };
    let r = commit_one(&provider, &commit_request(attempt, &other), &limits).await;
    assert_eq!(r, refused(FilesError::NotTheStaged));
    assert!(!exists(&provider));

    let attempt = Attempt([2; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let renamed = CommitStagedRequest { puts: vec![staged_put("g", attempt, &record)] };
    let r = commit_one(&provider, &renamed, &limits).await;
    assert_eq!(r, refused(FilesError::NotTheStaged));
    assert!(!exists(&provider));
}

#[tokio::test]
async fn settling_an_attempt_drops_its_staged_upload_and_fences_its_commit() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let (settled, other) = (Attempt([1; 16]), Attempt([2; 16]));
    let record = stage(&provider, settled, &limits).await.unwrap();
    stage(&provider, other, &limits).await.unwrap();
    provider.last_commit(CLIENT, NAME, &[settled]).await.unwrap();
    assert_eq!(provider.staged_waiting(CLIENT), 1, "only the settled attempt's upload goes");
    let r = commit_one(&provider, &commit_request(settled, &record), &limits).await;
    assert_eq!(r, refused(FilesError::Settled));
    assert!(!exists(&provider));
    commit_one(&provider, &commit_request(other, &record), &limits).await.unwrap();
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
    let late = commit_one(&provider, &commit_request(Attempt([4; 16]), &record), &brief).await;
    assert_eq!(late, refused(FilesError::NothingStaged));
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
    commit_one(&provider, &commit_request(attempt, &record), &limits).await.unwrap();
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

/// Several staged puts in one `commit-staged`: each applied over the namespace the ones before
/// it left, a refused one in its place changing nothing, the applied ones durable together
/// (their outcomes kept as the last commit's, for a client that lost the answer).
#[tokio::test]
async fn a_group_of_staged_puts_commits_each_in_turn_and_a_refused_one_changes_nothing() {
    let (dir, provider) = provider();
    let limits = Limits::default();
    let names = ["a", "b", "c"];
    let mut puts = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let attempt = Attempt([i as u8 + 1; 16]);
        let record = stage_named(&provider, name, FileId([i as u8 + 1; 16]), attempt, &limits).await.unwrap();
        puts.push(staged_put(name, attempt, &record));
    }
    // "b" names another record than its upload: refused in its place.
    let other = VersionRecord::from_bytes(&puts[1].record).map(|r| VersionRecord { len: r.len + 1, ..r }).unwrap();
    puts[1].record = ByteBuf::from(other.to_bytes().to_vec());
    let answer = provider.commit_staged(CLIENT, &CommitStagedRequest { puts: puts.clone() }, &limits).await.unwrap();
    let kinds: Vec<&str> = answer
        .puts
        .iter()
        .map(|o| match o {
            Outcome::Committed(_) => "committed",
            Outcome::Refused(_) => "refused",
        })
        .collect();
    assert_eq!(kinds, ["committed", "refused", "committed"]);
    assert_eq!(names.map(|n| exists_named(&provider, n)), [true, false, true]);
    // "c" was proven over the namespace "a" left: its lookup shows one name before it.
    let Outcome::Committed(c) = &answer.puts[2] else { unreachable!() };
    assert_eq!(c.lookup.index, 1);
    let last = provider.last_commit(CLIENT, "a", &[puts[0].attempt, puts[1].attempt, puts[2].attempt]).await;
    assert_eq!(last.unwrap().committed, answer.puts, "the outcomes are kept as the last commit's");
    // Durable: a provider opened afresh on the store has both.
    drop(provider);
    let reopened = Provider::open_dir(dir.path(), &Blocks::Local).unwrap();
    assert_eq!(names.map(|n| exists_named(&reopened.files, n)), [true, false, true]);
}

#[tokio::test]
async fn a_group_names_one_to_max_puts_each_name_and_attempt_once() {
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let put = staged_put(NAME, attempt, &record);
    let twice = [put.clone(), StagedPut { attempt: Attempt([2; 16]), ..put.clone() }];
    let renamed_twice = [put.clone(), StagedPut { name: "g".into(), ..put.clone() }];
    for puts in [twice.to_vec(), renamed_twice.to_vec()] {
        let r = provider.commit_staged(CLIENT, &CommitStagedRequest { puts }, &limits).await;
        assert!(matches!(r, Err(ProviderError::Files(FilesError::NamedTwice))), "{r:?}");
    }
    for count in [0, MAX_GROUP + 1] {
        let puts = (0..count).map(|i| staged_put(&format!("n{i}"), Attempt([i as u8; 16]), &record)).collect();
        let r = provider.commit_staged(CLIENT, &CommitStagedRequest { puts }, &limits).await;
        assert!(matches!(r, Err(ProviderError::Files(FilesError::GroupSize { .. }))), "{r:?}");
    }
    assert_eq!(provider.staged_waiting(CLIENT), 1, "a refused request takes no upload");
    commit_one(&provider, &commit_request(attempt, &record), &limits).await.unwrap();
    assert!(exists(&provider));
}

/// A batch applied in memory and then dropped before its durable write (its write failed, or
/// its request was dropped while it waited: a client gone) takes the namespace in memory with
/// it: what is answered afterwards is what the store holds.
#[tokio::test]
async fn a_batch_dropped_before_it_is_durable_leaves_the_namespace_as_stored() {
    struct Plain;
    impl Steps for Plain {}
    let (_dir, provider) = provider();
    let limits = Limits::default();
    let attempt = Attempt([1; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let batch = provider.stage_staged(CLIENT, &commit_request(attempt, &record), &limits).await.unwrap();
    let prepared = provider.prepare(batch, &mut Plain).await.unwrap();
    assert!(matches!(prepared.outcomes()[..], [Outcome::Committed(_)]));
    assert!(exists(&provider), "applied in memory, ahead of the store");
    drop(prepared);
    assert!(!exists(&provider), "dropped with its batch");
    // So is a batch a lie discards, and one whose answer is made durable stays.
    let attempt = Attempt([2; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    let batch = provider.stage_staged(CLIENT, &commit_request(attempt, &record), &limits).await.unwrap();
    let prepared = provider.prepare(batch, &mut Plain).await.unwrap();
    assert_eq!(provider.discard(prepared).len(), 1);
    assert!(!exists(&provider));
    let attempt = Attempt([3; 16]);
    let record = stage(&provider, attempt, &limits).await.unwrap();
    commit_one(&provider, &commit_request(attempt, &record), &limits).await.unwrap();
    assert!(exists(&provider));
}
