//! Files with retrievability on the S3 backend (a real MinIO started by `scripts/minio.sh`):
//! the provider's levels, C and other blobs in the bucket, its metadata (U among it) in a
//! local redb. The story of `por.rs` again, with the damage done to the objects in the bucket.

use crate::common;
use vouch_testkit::minio;

use common::por::{audit_fails_at, damage_objects, get_por, lose_all_of_u, put_por, with_provider_stopped};
use common::{assert_violation, sample, Setup};
use vouch_client::ViolationKind;
use vouch_misbehave::Misbehave;
use vouch_server::Blocks;
use vouch_store::BlobStore;

/// A provider whose blobs are in `minio`'s bucket.
async fn setup_on(minio: &minio::Minio) -> Setup {
    let setup = Setup::on(Blocks::S3(minio.config.clone()), Misbehave::None).await;
    assert!(!setup.data.join("blobs").exists(), "no blob is kept locally");
    setup
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_repair_restores_every_byte_after_u_and_just_under_half_of_c_and_each_level_are_lost() {
    let minio = minio::Minio::start();
    let mut setup = setup_on(&minio).await;
    let client = setup.client();
    let data = sample(400_000, 21);
    put_por(&client, "big", &data).await;
    assert_eq!(get_por(&client, "big", None).await.unwrap(), data);
    let report = client.por().audit(16).await.unwrap();
    assert!(report.verified && report.parts.len() >= 2, "C and at least one level: {report:?}");
    let keys = setup.stores().blobs.list("por").await.unwrap();
    for kind in ["/coded-", "/level-"] {
        assert!(keys.iter().any(|k| k.contains(kind) && k.contains("/slots-")), "{kind} in the bucket: {keys:?}");
    }
    drop(client);

    let client = with_provider_stopped(&mut setup, async |stores| {
        lose_all_of_u(stores).await;
        assert_eq!(damage_objects(stores, true, |n| n / 2 - 1).await, 1, "C is in the bucket");
        assert!(damage_objects(stores, false, |n| n / 2 - 1).await >= 1, "levels are in the bucket");
    })
    .await;
    assert_violation(get_por(&client, "big", None).await, ViolationKind::DataLost, "U is lost");
    // Level 0 has two slots: "just under half" of it is none.
    audit_fails_at(client.por().audit(64).await.unwrap(), |region| region != "level-0");
    let report = client.por().repair("big").await.unwrap();
    assert!(report.damaged && report.restored == report.slots && report.slots > 0, "{report:?}");
    assert_eq!(get_por(&client, "big", None).await.unwrap(), data, "after repair");
    let again = client.por().repair("big").await.unwrap();
    assert!(!again.damaged && again.restored == 0, "repaired once: {again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_past_half_of_c_lost_repair_fails_and_says_so() {
    let minio = minio::Minio::start();
    let mut setup = setup_on(&minio).await;
    put_por(&setup.client(), "f", &sample(100_000, 22)).await;
    // A second file, so that H holds a level beside C (the first ends an epoch).
    put_por(&setup.client(), "g", &sample(9_000, 23)).await;
    let client = with_provider_stopped(&mut setup, async |stores| {
        lose_all_of_u(stores).await;
        assert_eq!(damage_objects(stores, true, |n| n / 2 + 1).await, 1, "C is in the bucket");
    })
    .await;
    assert_violation(client.por().repair("f").await, ViolationKind::DataLost, "too little of C is left");
    audit_fails_at(client.por().audit(64).await.unwrap(), |region| region == "coded");
}

/// A delete below the copies in use: they move down and U shrinks, with C and the levels in
/// the bucket re-encoded and rebuilt to the smaller U (`por_compact.rs` has the whole story).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_a_delete_below_the_copies_moves_them_down_and_u_shrinks() {
    let minio = minio::Minio::start();
    let setup = setup_on(&minio).await;
    let client = setup.client();
    put_por(&client, "big", &sample(3_000_000, 24)).await;
    let (a, b) = (sample(40_000, 25), sample(70_000, 26));
    put_por(&client, "a", &a).await;
    put_por(&client, "b", &b).await;
    let grown = client.por().audit(4).await.unwrap();
    client.remove("big").await.unwrap();
    let shrunk = client.por().audit(16).await.unwrap();
    assert!(shrunk.verified && shrunk.log_capacity + 3 <= grown.log_capacity, "{shrunk:?} after {grown:?}");
    assert_eq!(get_por(&client, "a", None).await.unwrap(), a);
    assert_eq!(get_por(&client, "b", None).await.unwrap(), b);
}
