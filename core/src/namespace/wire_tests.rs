//! The namespace's AIP layouts: honest answers round-trip with one encoding, names are
//! checked as names, and records and proofs go through their own decoders.

use super::super::tree::tests::entry;
use super::*;
use crate::aip::wire::tests::round_trips;
use crate::aip::Functionality;
use crate::codec::put_varint;
use crate::namespace::{NamespaceOps, NamespaceTree};
use proptest::prelude::*;

fn op() -> impl Strategy<Value = NamespaceOp> {
    const NAMES: [&str; 5] = ["a", "b", "bb", "c", "dé"];
    prop_oneof![
        (0..NAMES.len()).prop_map(|n| NamespaceOp::Get(NAMES[n].into())),
        (0..NAMES.len(), any::<u8>()).prop_map(|(n, s)| NamespaceOp::Put(entry(NAMES[n], s))),
        (0..NAMES.len()).prop_map(|n| NamespaceOp::Delete(NAMES[n].into())),
        Just(NamespaceOp::List),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The operations, responses and proofs of honest sequences on a random namespace.
    #[test]
    fn honest_answers_round_trip(
        names in proptest::collection::btree_set("[a-e]{1,3}", 0..6),
        ops in proptest::collection::vec(op(), 1..5),
    ) {
        let entries = names.iter().enumerate().map(|(i, n)| entry(n, i as u8)).collect();
        let state = NamespaceTree::load(entries).unwrap();
        let (response, aux) = NamespaceOps::query(&state, &ops).unwrap();
        for op in &ops {
            round_trips(op);
        }
        round_trips(&response);
        round_trips(&aux);
        round_trips(&NamespaceOps::auth_of(&state));
    }
}

fn with_name(tag: u8, name: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    put_varint(&mut out, name.len() as u64);
    out.extend_from_slice(name);
    out
}

#[test]
fn a_name_that_cannot_be_a_name_is_refused() {
    for tag in [1, 3] {
        for bad in [&b""[..], b"x\ny", b"\xff\xfe"] {
            let refused = NamespaceOp::from_wire(&with_name(tag, bad));
            assert!(matches!(refused, Err(WireError::Record(RecordError::BadName(_)))), "{bad:?}: {refused:?}");
        }
        let long = vec![b'n'; MAX_NAME_LEN + 1];
        let refused = NamespaceOp::from_wire(&with_name(tag, &long));
        let bound = WireError::TooMany { what: "name bytes", count: long.len() as u64, max: MAX_NAME_LEN };
        assert_eq!(refused, Err(bound));
        assert!(NamespaceOp::from_wire(&with_name(tag, &long[1..])).is_ok(), "the longest name");
    }
    let mut put = entry("a", 1);
    put.name = "tab\there".into();
    let refused = NamespaceOp::from_wire(&NamespaceOp::Put(put).to_wire());
    assert!(matches!(refused, Err(WireError::Record(RecordError::BadName(_)))), "{refused:?}");
}

#[test]
fn a_lookup_opens_at_most_two_entries_and_proofs_are_checked() {
    let lookup = LookupProof { index: 1, entries: vec![entry("a", 1), entry("b", 2), entry("c", 3)], proof: None };
    let bound = WireError::TooMany { what: "lookup entries", count: 3, max: MAX_LOOKUP_ENTRIES };
    assert_eq!(LookupProof::from_wire(&lookup.to_wire()), Err(bound));
    // Proof bytes that are no multi-proof, alone and inside an update proof.
    let mut garbage = Vec::new();
    put_varint(&mut garbage, 5);
    garbage.extend_from_slice(&[0xff; 5]);
    assert!(matches!(MultiProof::from_wire(&garbage), Err(WireError::Proof(_))));
    let mut update = Vec::new();
    put_varint(&mut update, 37);
    update.extend_from_slice(&[0xff; 37]);
    assert!(matches!(UpdateProof::from_wire(&update), Err(WireError::Proof(_))));
    // An entry record with bytes after its end, inside its length prefix.
    let mut record = entry("a", 1).to_bytes();
    record.push(0);
    let mut prefixed = Vec::new();
    put_varint(&mut prefixed, record.len() as u64);
    prefixed.extend_from_slice(&record);
    assert_eq!(EntryRecord::from_wire(&prefixed), Err(WireError::Record(RecordError::TrailingBytes)));
}
