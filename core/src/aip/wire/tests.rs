//! The wire format: random messages round-trip and have one encoding, every truncation and
//! every trailing byte is refused as such, and each bound is enforced with its typed error.

use super::*;
use crate::adict::{Bottom, Proof, RangeNode};
use crate::aip::{
    Adict, Commit, CommitAuth, Committed, DictAux, DictOp, DictResponse, DictStep, HistoryPage, Invoke, Invoked,
    Pending, Reply, Signature, Signed, Status, TakeOver, ToAuthenticate, ToClient, ToServer, UpdateAuth, View,
};
use proptest::collection::vec;
use proptest::prelude::*;
use std::fmt::Debug;

fn blob(max: usize) -> impl Strategy<Value = Vec<u8>> + Clone {
    vec(any::<u8>(), 0..max)
}

fn digest() -> impl Strategy<Value = Digest> + Clone {
    any::<[u8; 32]>().prop_map(Digest)
}

fn op() -> impl Strategy<Value = DictOp> + Clone {
    prop_oneof![
        (blob(12), blob(20)).prop_map(|(key, value)| DictOp::Put { key, value }),
        blob(12).prop_map(|key| DictOp::Get { key }),
        blob(12).prop_map(|key| DictOp::Delete { key }),
        Just(DictOp::List),
        (proptest::option::of(digest()), any::<u32>()).prop_map(|(after, limit)| DictOp::ListPage { after, limit }),
    ]
}

fn response() -> impl Strategy<Value = DictResponse> {
    prop_oneof![
        Just(DictResponse::Nothing),
        proptest::option::of(blob(20)).prop_map(DictResponse::Value),
        vec(blob(8), 0..4).prop_map(DictResponse::Keys),
        (vec(blob(8), 0..4), any::<bool>()).prop_map(|(keys, more)| DictResponse::Page { keys, more }),
    ]
}

fn bottom() -> impl Strategy<Value = Bottom> + Clone {
    prop_oneof![
        Just(Bottom::Empty),
        (digest(), digest()).prop_map(|(path, value_hash)| Bottom::Leaf { path, value_hash }),
        (digest(), digest()).prop_map(|(left, right)| Bottom::Inner { left, right }),
    ]
}

fn range_node() -> impl Strategy<Value = RangeNode> {
    prop_oneof![
        Just(RangeNode::Inner),
        digest().prop_map(RangeNode::Hidden),
        (digest(), digest()).prop_map(|(path, value_hash)| RangeNode::Outside { path, value_hash }),
        (blob(8), digest()).prop_map(|(key, value_hash)| RangeNode::Inside { key, value_hash }),
    ]
}

fn aux() -> impl Strategy<Value = DictAux> {
    let proof = (vec(digest(), 0..5), bottom(), proptest::option::of(bottom()))
        .prop_map(|(siblings, end, last_sibling)| Proof { siblings, end, last_sibling });
    let step = prop_oneof![
        proof.clone().prop_map(DictStep::Key),
        (proof, proptest::option::of(blob(8))).prop_map(|(proof, replaced)| DictStep::Change { proof, replaced }),
        vec((blob(8), digest()), 0..4).prop_map(DictStep::All),
        vec(range_node(), 0..6).prop_map(DictStep::Range),
    ];
    vec(step, 0..3).prop_map(DictAux)
}

fn signature() -> impl Strategy<Value = Signature> + Clone {
    (any::<u32>(), blob(MAX_SIGNATURE_LEN + 1)).prop_map(|(by, bytes)| Signature { by, bytes })
}

fn status() -> impl Strategy<Value = Status> + Clone {
    prop_oneof![Just(Status::Success), Just(Status::Abort)]
}

fn committed() -> impl Strategy<Value = Committed<DictOp>> + Clone {
    (op(), status(), signature(), any::<u32>()).prop_map(|(op, status, phi, client)| Committed {
        op,
        status,
        phi,
        client,
    })
}

fn signed() -> impl Strategy<Value = Signed<Digest>> + Clone {
    (digest(), signature()).prop_map(|(auth, psi)| Signed { auth, psi })
}

fn view() -> impl Strategy<Value = View<Adict>> {
    let invoked = (op(), blob(MAX_SIGNATURE_LEN + 1), any::<u32>(), any::<u64>())
        .prop_map(|(op, tau, client, counter)| Invoked { op, tau, client, counter });
    let pending =
        (invoked, proptest::option::of(signature())).prop_map(|(invoked, aborted)| Pending { invoked, aborted });
    (vec(committed(), 0..4), any::<u64>(), committed(), signed(), vec(pending, 0..4))
        .prop_map(|(delta, b, authenticated, alpha, omega)| View { delta, b, authenticated, alpha, omega })
}

fn to_client() -> impl Strategy<Value = ToClient<Adict>> {
    let reply =
        (view(), any::<u64>(), response(), aux()).prop_map(|(view, t, response, aux)| Reply { view, t, response, aux });
    let entry = (any::<u64>(), committed(), proptest::option::of(response()), proptest::option::of(aux()))
        .prop_map(|(q, committed, response, aux)| ToAuthenticate { q, committed, response, aux });
    let update_auth = (any::<u64>(), committed(), signed(), vec(entry, 0..3))
        .prop_map(|(base, previous, alpha, ops)| UpdateAuth { base, previous, alpha, ops });
    let take_over = (any::<u32>(), view(), vec(any::<u64>(), 0..4)).prop_map(|(failed, view, hanging)| TakeOver {
        failed,
        view,
        hanging,
    });
    prop_oneof![
        reply.prop_map(|m| ToClient::Reply(Box::new(m))),
        update_auth.prop_map(|m| ToClient::UpdateAuth(Box::new(m))),
        take_over.prop_map(|m| ToClient::TakeOver(Box::new(m))),
    ]
}

fn to_server() -> impl Strategy<Value = ToServer<Adict>> {
    let invoke = (op(), blob(MAX_SIGNATURE_LEN + 1), any::<u64>(), any::<u64>())
        .prop_map(|(op, tau, cleared, counter)| Invoke { op, tau, cleared, counter });
    let commit = (op(), any::<u64>(), status(), any::<u32>(), signature())
        .prop_map(|(op, t, status, client, phi)| Commit { op, t, status, client, phi });
    let commit_auth = (any::<u64>(), signed()).prop_map(|(q, signed)| CommitAuth { q, signed });
    prop_oneof![
        invoke.prop_map(ToServer::Invoke),
        commit.prop_map(ToServer::Commit),
        commit_auth.prop_map(ToServer::CommitAuth),
    ]
}

/// `m` decodes back to itself from its bytes, which are its only encoding: each strict
/// prefix is truncated, and a byte more is trailing.
pub(crate) fn round_trips<T: Wire + PartialEq + Debug>(m: &T) {
    let bytes = m.to_wire();
    assert_eq!(T::from_wire(&bytes).as_ref(), Ok(m));
    for cut in 0..bytes.len() {
        assert_eq!(T::from_wire(&bytes[..cut]), Err(CodecError::Truncated.into()), "cut at {cut} of {}", bytes.len());
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(T::from_wire(&longer), Err(WireError::TrailingBytes(1)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn messages_to_a_client_round_trip(m in to_client()) {
        round_trips(&m);
    }

    #[test]
    fn messages_to_the_server_round_trip(m in to_server()) {
        round_trips(&m);
    }

    #[test]
    fn pages_of_the_history_round_trip(
        first in any::<u64>(),
        delta in vec(committed(), 0..4),
        more in any::<bool>(),
    ) {
        round_trips(&HistoryPage { first, delta, more });
    }

    /// Hostile bytes never panic; what decodes has the same bytes as its encoding.
    #[test]
    fn any_bytes_decode_to_an_error_or_their_one_message(bytes in blob(300)) {
        if let Ok(m) = ToClient::<Adict>::from_wire(&bytes) {
            prop_assert_eq!(m.to_wire(), bytes.clone());
        }
        if let Ok(m) = ToServer::<Adict>::from_wire(&bytes) {
            prop_assert_eq!(m.to_wire(), bytes);
        }
    }
}

fn too_many<T>(what: &'static str, count: u64, max: usize) -> Result<T, WireError> {
    Err(WireError::TooMany { what, count, max })
}

fn unknown<T>(what: &'static str, tag: u8) -> Result<T, WireError> {
    Err(WireError::UnknownTag { what, tag })
}

#[test]
fn a_message_over_the_size_bound_is_refused_before_decoding() {
    let huge = vec![0u8; MAX_MESSAGE_LEN + 1];
    let refused = ToServer::<Adict>::from_wire(&huge);
    assert_eq!(refused, Err(WireError::TooLong { len: MAX_MESSAGE_LEN + 1, max: MAX_MESSAGE_LEN }));
}

#[test]
fn each_bound_is_enforced_with_its_error() {
    // A key, a value and a signature one byte over their bounds; at the bound they decode.
    for (len, ok) in [(MAX_KEY_LEN, true), (MAX_KEY_LEN + 1, false)] {
        let get = DictOp::Get { key: vec![7; len] };
        let decoded = DictOp::from_wire(&get.to_wire());
        assert_eq!(decoded, if ok { Ok(get) } else { too_many("key bytes", len as u64, MAX_KEY_LEN) });
    }
    let put = DictOp::Put { key: vec![1], value: vec![0; MAX_VALUE_LEN + 1] };
    assert_eq!(DictOp::from_wire(&put.to_wire()), too_many("value bytes", MAX_VALUE_LEN as u64 + 1, MAX_VALUE_LEN));
    let long = Signature { by: 1, bytes: vec![0; MAX_SIGNATURE_LEN + 1] };
    let commit_auth = CommitAuth { q: 1, signed: Signed { auth: Digest::ZERO, psi: long } };
    let refused = CommitAuth::<Digest>::from_wire(&commit_auth.to_wire());
    assert_eq!(refused, too_many("signature bytes", MAX_SIGNATURE_LEN as u64 + 1, MAX_SIGNATURE_LEN));
    // An ADICT proof deeper than a key's path.
    for (depth, ok) in [(MAX_PROOF_DEPTH, true), (MAX_PROOF_DEPTH + 1, false)] {
        let proof = Proof { siblings: vec![Digest::ZERO; depth], end: Bottom::Empty, last_sibling: None };
        let decoded = Proof::from_wire(&proof.to_wire());
        assert_eq!(decoded, if ok { Ok(proof) } else { too_many("proof siblings", depth as u64, MAX_PROOF_DEPTH) });
    }
}

#[test]
fn a_count_is_refused_before_anything_is_reserved() {
    // Proof steps: a count over the bound, then one within it but past the bytes that follow.
    let mut over = Vec::new();
    put_varint(&mut over, MAX_OPERATIONS as u64 + 1);
    assert_eq!(DictAux::from_wire(&over), too_many("proof steps", MAX_OPERATIONS as u64 + 1, MAX_OPERATIONS));
    let mut past_the_end = Vec::new();
    put_varint(&mut past_the_end, 1000);
    past_the_end.extend_from_slice(&[1, 0, 1]);
    assert_eq!(DictAux::from_wire(&past_the_end), Err(CodecError::Truncated.into()));
    let mut max_count = Vec::new();
    put_varint(&mut max_count, u64::MAX);
    assert!(matches!(DictResponse::from_wire(&[&[3][..], &max_count].concat()), Err(WireError::TooMany { .. })));
}

#[test]
fn unknown_tags_and_out_of_range_numbers_are_refused() {
    assert_eq!(DictOp::from_wire(&[0]), unknown("dictionary operation", 0));
    assert_eq!(DictOp::from_wire(&[6]), unknown("dictionary operation", 6));
    assert_eq!(DictResponse::from_wire(&[5]), unknown("dictionary response", 5));
    assert_eq!(DictStep::from_wire(&[5]), unknown("dictionary proof", 5));
    assert_eq!(RangeNode::from_wire(&[5]), unknown("pruned tree node", 5));
    assert_eq!(DictResponse::from_wire(&[4, 0, 3]), unknown("page end", 3));
    assert_eq!(ToServer::<Adict>::from_wire(&[4]), unknown("message to the server", 4));
    assert_eq!(ToClient::<Adict>::from_wire(&[0]), unknown("message to a client", 0));
    assert_eq!(Status::from_wire(&[3]), unknown("status", 3));
    assert_eq!(Option::<Digest>::from_wire(&[2]), unknown("option", 2));
    assert_eq!(bool::from_wire(&[2]), unknown("flag", 2));
    assert_eq!(HistoryPage::<DictOp>::from_wire(&[1, 0, 2]), unknown("flag", 2));
    assert_eq!(DictResponse::from_wire(&[2, 2]), unknown("option", 2));
    assert_eq!(Bottom::from_wire(&[4]), unknown("proof bottom", 4));
    // A client id past 32 bits, and a number in a longer form than its shortest.
    let mut id = Vec::new();
    put_varint(&mut id, u64::from(u32::MAX) + 1);
    assert_eq!(u32::from_wire(&id), Err(WireError::OutOfRange("a 32-bit number")));
    assert_eq!(u64::from_wire(&[0x81, 0x00]), Err(CodecError::NonCanonicalVarint.into()));
}

/// A COMMIT whose status byte is neither SUCCESS nor ABORT, found inside a whole message.
#[test]
fn a_bad_field_deep_in_a_message_is_refused() {
    let sig = Signature { by: 3, bytes: vec![9; 32] };
    let commit = Commit { op: DictOp::List, t: 5, status: Status::Abort, client: 3, phi: sig };
    let mut bytes = ToServer::<Adict>::Commit(commit.clone()).to_wire();
    assert_eq!(bytes[..4], [2, 4, 5, 2], "message tag, list, t, status");
    bytes[3] = 7;
    assert_eq!(ToServer::<Adict>::from_wire(&bytes), Err(WireError::UnknownTag { what: "status", tag: 7 }));
    bytes[3] = Status::Success.byte();
    assert_eq!(
        ToServer::<Adict>::from_wire(&bytes),
        Ok(ToServer::Commit(Commit { status: Status::Success, ..commit }))
    );
}
