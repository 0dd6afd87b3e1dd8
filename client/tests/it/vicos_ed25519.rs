//! An Ed25519 VICOS group: each member signs with its own key, the key file is a roster of
//! public keys, and a member accepts another's operations once that member's key is in its
//! roster: before, it says so (not a lie of the provider), and after an import it goes on.

use crate::common;

use common::{Setup, TOKEN_BOB};
use std::io::Cursor;
use vouch_client::vicos::{Group, Signatures};
use vouch_client::{Client, ClientError};
use vouch_core::aip::{Mode, Outcome};
use vouch_misbehave::Misbehave;

const GROUP: &str = "team";

async fn read(g: &Group, key: &str) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    match g.get(key.as_bytes(), &mut out).await? {
        Outcome::Done(Some(_)) => Ok(out),
        other => panic!("expected the object, got {other:?}"),
    }
}

async fn put(g: &Group, key: &str, data: &[u8]) {
    assert_eq!(g.put(key.as_bytes(), Cursor::new(data.to_vec())).await.unwrap(), Outcome::Done(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_with_their_own_keys_share_a_group_once_they_know_each_others_keys() {
    let setup = Setup::new(Misbehave::None).await;
    let (alice_state, bob_state) = (setup.state.clone(), setup.dir.path().join("bob"));
    Client::init(&bob_state, &setup.url(), TOKEN_BOB).unwrap();
    let key_file = setup.dir.path().join("team.key");
    let next = Group::init(&alice_state, GROUP, Mode::Compatible, Signatures::Ed25519).await.unwrap();
    next.write(&key_file).unwrap();
    let text = std::fs::read_to_string(&key_file).unwrap();
    assert!(!text.contains("signing") && !text.contains("key ="), "a key file holds no secret: {text}");
    let joined = Group::join_with(&bob_state, &key_file, None).unwrap();
    assert_eq!((joined.id, joined.members.len()), (1, 2));
    assert!(Group::join_with(&bob_state, &key_file, None).is_err(), "a member joins once");

    let alice = Group::open(&alice_state, GROUP).unwrap();
    put(&alice, "a", b"from alice").await;
    drop(alice);
    // Bob's roster has Alice (it came with the key file).
    let bob = Group::open(&bob_state, GROUP).unwrap();
    assert_eq!(read(&bob, "a").await.unwrap(), b"from alice");
    put(&bob, "b", b"from bob").await;
    drop(bob);

    // Alice does not know Bob's key yet: his operation is not accepted, and no one is blamed.
    let alice = Group::open(&alice_state, GROUP).unwrap();
    match read(&alice, "b").await {
        Err(e @ ClientError::UnknownMember { member: 1, .. }) => assert!(e.to_string().contains("--import"), "{e}"),
        other => panic!("expected an unknown member, got {other:?}"),
    }
    let roster = setup.dir.path().join("bob.roster");
    Group::roster(&bob_state, GROUP, None).unwrap().0.write(&roster).unwrap();
    // Imported while she is open (as beside a running gateway): her next operation reads
    // the roster again, checks the same history and goes on (her abandoned read aborted).
    let (_, added) = Group::roster(&alice_state, GROUP, Some(&roster)).unwrap();
    assert_eq!(added, [1]);
    assert_eq!(read(&alice, "b").await.unwrap(), b"from bob");
    put(&alice, "c", b"again").await;
    drop(alice);
    let bob = Group::open(&bob_state, GROUP).unwrap();
    assert_eq!(read(&bob, "c").await.unwrap(), b"again");
}
