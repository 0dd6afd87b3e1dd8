//! Consolidation that moves copies (App. A.3), end to end over a real provider: a delete that
//! frees half of U below the copies in use moves them down and shrinks U; a provider that
//! serves a moved copy's old label is caught before anything is read or freed through it; a
//! consolidation stopped at each of its batches goes on where it stopped.

use crate::common;

use common::por::{each_repaired_after_u_is_lost, get_por, lose_all_of_u, put_por, restarted};
use common::{assert_violation, sample, Setup};
use vouch_client::{ByteEdit, Client, ViolationKind};
use vouch_misbehave::Misbehave;

/// PoR files stored above a big one (`big`), which a test then removes: `a`, `b` in two
/// versions that share most blocks, `c`, and more small files than one batch carries labels.
struct Files {
    a: Vec<u8>,
    b1: Vec<u8>,
    b2: Vec<u8>,
    c: Vec<u8>,
    small: Vec<(String, Vec<u8>)>,
}

const INSERTED: &[u8] = b"moved with the blocks it shares";

async fn stored_above_a_big_file(client: &Client) -> Files {
    put_por(client, "big", &sample(3_000_000, 201)).await;
    let (a, b1, c) = (sample(40_000, 202), sample(60_000, 203), sample(20_000, 204));
    put_por(client, "a", &a).await;
    put_por(client, "b", &b1).await;
    client.edit("b", &ByteEdit::Insert { at: 30_000, data: INSERTED.to_vec() }, None).await.unwrap();
    let mut b2 = b1.clone();
    b2.splice(30_000..30_000, INSERTED.iter().copied());
    put_por(client, "c", &c).await;
    let small: Vec<(String, Vec<u8>)> =
        (0..20).map(|i| (format!("small-{i}"), sample(3000 + i * 100, 210 + i as u64))).collect();
    for (name, data) in &small {
        put_por(client, name, data).await;
    }
    Files { a, b1, b2, c, small }
}

/// Every file's latest version reads back.
async fn latest_read_back(client: &Client, files: &Files) {
    assert_eq!(get_por(client, "a", None).await.unwrap(), files.a);
    assert_eq!(get_por(client, "b", None).await.unwrap(), files.b2);
    assert_eq!(get_por(client, "c", None).await.unwrap(), files.c);
    for (name, data) in &files.small {
        assert_eq!(&get_por(client, name, None).await.unwrap(), data, "{name}");
    }
}

async fn each_reads_back(client: &Client, files: &Files) {
    latest_read_back(client, files).await;
    assert_eq!(get_por(client, "b", Some(1)).await.unwrap(), files.b1);
}

/// The files stored above a big one, U's capacity then, and a client of the same provider
/// restarted to fail every second PoR write.
async fn stored_then_flaky(setup: &mut Setup) -> (Files, u32, Client) {
    let client = setup.client();
    let files = stored_above_a_big_file(&client).await;
    let grown = client.por().audit(4).await.unwrap().log_capacity;
    drop(client);
    (files, grown, restarted(setup, Misbehave::FlakyPorWrites, async |_| {}).await)
}

/// All of U lost while the provider is stopped, then every file's latest version repaired.
async fn all_repaired_after_u_is_lost(setup: &mut Setup, client: Client, files: &Files) -> Client {
    drop(client);
    let client = restarted(setup, Misbehave::None, async |stores| lose_all_of_u(stores).await).await;
    for name in ["a", "b", "c"].into_iter().chain(files.small.iter().map(|(n, _)| n.as_str())) {
        client.por().repair(name).await.unwrap();
    }
    client
}

#[tokio::test]
async fn a_delete_below_the_copies_moves_them_down_and_u_shrinks() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let files = stored_above_a_big_file(&client).await;
    let grown = client.por().audit(4).await.unwrap();
    client.remove("big").await.unwrap();
    let shrunk = client.por().audit(16).await.unwrap();
    assert!(shrunk.verified, "{shrunk:?}");
    assert!(shrunk.log_capacity + 3 <= grown.log_capacity, "2^{} after 2^{}", shrunk.log_capacity, grown.log_capacity);
    assert!(shrunk.slots_used <= 1 << shrunk.log_capacity, "{shrunk:?}");
    each_reads_back(&client, &files).await;

    // An edit builds on a moved copy; a new file grows U again; a delete of a moved copy
    // frees its own slots only.
    client.edit("a", &ByteEdit::Insert { at: 100, data: b"after".to_vec() }, None).await.unwrap();
    let mut a2 = files.a.clone();
    a2.splice(100..100, *b"after");
    assert_eq!(get_por(&client, "a", None).await.unwrap(), a2);
    let d = sample(900_000, 205);
    put_por(&client, "d", &d).await;
    client.remove("c").await.unwrap();
    assert!(client.por().audit(16).await.unwrap().verified);
    assert_eq!(get_por(&client, "b", Some(1)).await.unwrap(), files.b1);
    each_repaired_after_u_is_lost(&mut setup, client, &[("a", &a2), ("b", &files.b2), ("d", &d)]).await;
}

/// The old label of a moved copy names slots past where U was cut, which a later copy takes
/// when U grows again: read through it, the copy would be other data; freed through it, that
/// other copy would be lost. Both are refused as a stale label, and nothing is lost.
#[tokio::test]
async fn a_label_from_before_a_consolidation_is_refused_and_frees_nothing() {
    let mut setup = Setup::new(Misbehave::StalePorLabel).await;
    let client = setup.client();
    let files = stored_above_a_big_file(&client).await;
    let grown = client.por().audit(4).await.unwrap();
    client.remove("big").await.unwrap();
    assert!(client.por().audit(4).await.unwrap().log_capacity < grown.log_capacity, "consolidated");
    let d = sample(3_200_000, 206);
    put_por(&client, "d", &d).await;
    assert!(client.por().audit(4).await.unwrap().log_capacity >= grown.log_capacity, "grown over the old slots");
    assert_violation(get_por(&client, "c", None).await, ViolationKind::BadPorCopy, "a read through a stale label");
    assert_violation(client.remove("c").await, ViolationKind::BadPorCopy, "a delete through a stale label");
    drop(client);
    let client = restarted(&mut setup, Misbehave::None, async |_| {}).await;
    each_reads_back(&client, &files).await;
    assert_eq!(get_por(&client, "d", None).await.unwrap(), d);
}

/// The provider's PoR writes fail every second time (no lie: it keeps going down), so the
/// consolidation stops at each of its steps in turn (its labels take two batches: it stops
/// between them too). Each PoR operation first carries it on from where it stopped; it ends as
/// one that ran through, and nothing is lost.
#[tokio::test]
async fn a_consolidation_stopped_at_each_batch_goes_on_where_it_stopped() {
    let mut setup = Setup::new(Misbehave::None).await;
    let (files, grown, client) = stored_then_flaky(&mut setup).await;
    let mut failures = usize::from(client.remove("big").await.is_err());
    loop {
        match get_por(&client, "a", None).await {
            Ok(a) => break assert_eq!(a, files.a),
            Err(e) => assert!(e.violation_kind().is_none(), "a provider going down is no lie: {e:?}"),
        }
        failures += 1;
        assert!(failures < 40, "no progress");
    }
    assert!(failures >= 4, "stopped along the way only {failures} times");
    drop(client);
    let client = restarted(&mut setup, Misbehave::None, async |_| {}).await;
    let shrunk = client.por().audit(16).await.unwrap();
    assert!(shrunk.verified, "{shrunk:?}");
    assert!(shrunk.log_capacity + 3 <= grown, "2^{} after 2^{grown}", shrunk.log_capacity);
    each_reads_back(&client, &files).await;
}

/// The consolidation's first batch of labels is refused, and its labels kept (the provider
/// was down, or says so), then served as the copies' labels when the consolidation goes on.
/// They are of the new generation, but only the client's record says which labels were
/// applied: every one the refused batch carried is sent again before U shrinks, and every
/// copy reads back (seed 3529 of the simulator).
#[tokio::test]
async fn a_refused_batch_of_labels_is_sent_again_though_the_provider_serves_them() {
    let mut setup = Setup::new(Misbehave::None).await;
    let client = setup.client();
    let files = stored_above_a_big_file(&client).await;
    let grown = client.por().audit(4).await.unwrap().log_capacity;
    drop(client);
    let client = restarted(&mut setup, Misbehave::RefusedPorLabel, async |_| {}).await;
    let _ = client.remove("big").await;
    latest_read_back(&client, &files).await;
    let shrunk = client.por().audit(16).await.unwrap();
    assert!(shrunk.log_capacity + 3 <= grown, "2^{} after 2^{grown}", shrunk.log_capacity);
    drop(client);
    let client = restarted(&mut setup, Misbehave::None, async |_| {}).await;
    each_reads_back(&client, &files).await;
}

/// A consolidation stopped before its moves were made, then all of U lost: the next PoR
/// operation (a repair) drops it instead of being held up by slots it cannot read, and
/// repair restores every copy where its label says it is.
#[tokio::test]
async fn a_consolidation_cut_short_then_u_lost_gives_way_to_repair() {
    let mut setup = Setup::new(Misbehave::None).await;
    let (files, _, client) = stored_then_flaky(&mut setup).await;
    // The delete's ⊥ batch goes through; the consolidation's first batch (its moves) fails.
    assert!(client.remove("big").await.is_err(), "stopped at its moves");
    let client = all_repaired_after_u_is_lost(&mut setup, client, &files).await;
    latest_read_back(&client, &files).await;
    // Repair restores a file's latest version: the block only `b`'s first held is still lost,
    // and said so.
    assert_violation(get_por(&client, "b", Some(1)).await, ViolationKind::DataLost, "not repaired");
}

/// A consolidation stopped after its moves, before its labels (between two of its batches),
/// then all of U lost: repair finds that the consolidation needs U (its shrink re-encodes C
/// from it), restores all of U from C and H first, lets the consolidation end, and every copy
/// reads back where its new label says it is.
#[tokio::test]
async fn a_consolidation_stopped_after_its_moves_then_u_lost_ends_and_repair_restores() {
    let mut setup = Setup::new(Misbehave::None).await;
    let (files, grown, client) = stored_then_flaky(&mut setup).await;
    // The delete's ⊥ batch goes through, the moves fail, then go through on the next
    // operation, whose first batch of labels fails.
    assert!(client.remove("big").await.is_err(), "stopped at its moves");
    assert!(get_por(&client, "a", None).await.is_err(), "stopped at its labels");
    let client = all_repaired_after_u_is_lost(&mut setup, client, &files).await;
    assert!(client.por().audit(4).await.unwrap().log_capacity + 3 <= grown, "consolidated");
    each_reads_back(&client, &files).await;
}
