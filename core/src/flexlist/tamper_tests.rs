//! A lying provider: every way of bending a proof is caught.

use super::proof::record_spans;
use super::tests::{block, blocks};
use super::*;

fn setup() -> (FlexList, Vec<u64>, MultiProof) {
    let list = FlexList::build(&blocks(600, 11)).unwrap();
    let indices: Vec<u64> = (0..25).map(|i| (i * 104_729) % list.total_len()).collect();
    let proof = list.prove(&indices).unwrap();
    (list, indices, proof)
}

fn verify_bytes(root: &Digest, indices: &[u64], bytes: &[u8]) -> Result<Vec<ProvenBlock>, ProofError> {
    verify_multi_proof(root, indices, &MultiProof::from_bytes(bytes.to_vec())?)
}

#[test]
fn every_flipped_byte_is_rejected() {
    let (list, indices, proof) = setup();
    let bytes = proof.as_bytes();
    assert!(verify_bytes(&list.root(), &indices, bytes).is_ok());
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x10, 0x80, 0xff] {
            let mut bad = bytes.to_vec();
            bad[i] ^= mask;
            assert!(verify_bytes(&list.root(), &indices, &bad).is_err(), "byte {i} mask {mask:#x} accepted");
        }
    }
}

#[test]
fn truncated_or_extended_proofs_are_rejected() {
    let (list, indices, proof) = setup();
    let bytes = proof.as_bytes();
    for cut in 0..bytes.len() {
        assert!(verify_bytes(&list.root(), &indices, &bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert_eq!(verify_bytes(&list.root(), &indices, &longer), Err(ProofError::TrailingBytes));
}

#[test]
fn dropped_duplicated_and_reordered_nodes_are_rejected() {
    let (list, indices, proof) = setup();
    let bytes = proof.as_bytes();
    let spans = record_spans(bytes);
    assert!(spans.len() > 50);
    for (k, span) in spans.iter().enumerate() {
        let mut dropped = bytes.to_vec();
        dropped.drain(span.clone());
        assert!(verify_bytes(&list.root(), &indices, &dropped).is_err(), "dropped node {k}");

        let mut duplicated = bytes.to_vec();
        let copy = bytes[span.clone()].to_vec();
        duplicated.splice(span.end..span.end, copy);
        assert!(verify_bytes(&list.root(), &indices, &duplicated).is_err(), "duplicated node {k}");

        if let Some(next) = spans.get(k + 1) {
            if bytes[span.clone()] != bytes[next.clone()] {
                let mut swapped = bytes[..span.start].to_vec();
                swapped.extend_from_slice(&bytes[next.clone()]);
                swapped.extend_from_slice(&bytes[span.clone()]);
                swapped.extend_from_slice(&bytes[next.end..]);
                assert!(verify_bytes(&list.root(), &indices, &swapped).is_err(), "swapped nodes {k}");
            }
        }
    }
}

#[test]
fn proof_for_other_indices_is_rejected() {
    let (list, indices, proof) = setup();
    let mut other = indices.clone();
    other[3] = (other[3] + list.total_len() / 2) % list.total_len();
    let err = verify_multi_proof(&list.root(), &other, &proof).unwrap_err();
    assert!(matches!(err, ProofError::Incomplete { .. } | ProofError::Superfluous), "{err:?}");
    // A proof for a subset opens nodes nobody asked for: the provider answered another challenge.
    assert_eq!(verify_multi_proof(&list.root(), &indices[..10], &proof), Err(ProofError::Superfluous));
    assert_eq!(verify_multi_proof(&list.root(), &[], &proof), Err(ProofError::EmptyChallenge));
    let len = list.total_len();
    assert_eq!(verify_multi_proof(&list.root(), &[len], &proof), Err(ProofError::IndexOutOfRange { index: len, len }));
}

#[test]
fn stale_proofs_and_roots_are_rejected() {
    let (mut list, indices, old_proof) = setup();
    let old_root = list.root();
    list.modify(indices[0], block(4242, 77)).unwrap();
    // A replayed proof from before the update does not match the new root...
    assert_eq!(verify_multi_proof(&list.root(), &indices, &old_proof), Err(ProofError::RootMismatch));
    // ...and a fresh proof does not match a rolled-back root.
    let new_proof = list.prove(&indices).unwrap();
    assert_eq!(verify_multi_proof(&old_root, &indices, &new_proof), Err(ProofError::RootMismatch));
}

fn update_case() -> (FlexList, Digest, Vec<Edit>, UpdateProof) {
    let mut list = FlexList::build(&blocks(400, 12)).unwrap();
    let starts: Vec<u64> = list.iter().map(|l| l.start).collect();
    let edits = vec![
        Edit::Modify { at: starts[10] + 1, block: block(1, 30) },
        Edit::Insert { at: starts[11], block: block(2, 40) },
        Edit::Remove { at: starts[12] },
        Edit::Remove { at: starts[200] },
        Edit::Insert { at: list.total_len(), block: block(3, 9) },
        Edit::Insert { at: 0, block: block(4, 9) },
    ];
    let old = list.root();
    let proof = list.multi_update(&edits).unwrap();
    (list, old, edits, proof)
}

#[test]
fn every_flipped_byte_of_an_update_proof_is_rejected() {
    let (list, old, edits, proof) = update_case();
    let bytes = proof.to_bytes();
    assert_eq!(verify_multi_update(&old, &edits, &proof), Ok(list.root()));
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[i] ^= mask;
            let verdict = UpdateProof::from_bytes(&bad)
                .map_err(UpdateVerifyError::from)
                .and_then(|p| verify_multi_update(&old, &edits, &p));
            assert!(verdict.is_err(), "byte {i} mask {mask:#x} accepted");
        }
    }
}

#[test]
fn provider_that_applies_other_edits_is_caught() {
    let (_, old, edits, proof) = update_case();
    // The provider claims a new root for a different batch: a changed block, a dropped edit,
    // or no change at all.
    let mut changed = edits.clone();
    changed[0] = Edit::Modify { at: changed[0].at(), block: block(999, 30) };
    assert_eq!(verify_multi_update(&old, &changed, &proof), Err(UpdateVerifyError::NewRootMismatch));
    assert_eq!(verify_multi_update(&old, &edits[1..], &proof), Err(UpdateVerifyError::NewRootMismatch));
    let unchanged = UpdateProof { new_root: old, proof: proof.proof.clone() };
    assert_eq!(verify_multi_update(&old, &edits, &unchanged), Err(UpdateVerifyError::NewRootMismatch));
    // A proof against another (rolled-back) old root.
    let other_root = FlexList::build(&blocks(400, 13)).unwrap().root();
    assert_eq!(verify_multi_update(&other_root, &edits, &proof), Err(ProofError::RootMismatch.into()));
}

#[test]
fn update_proof_that_opens_too_little_is_caught() {
    let bs = blocks(400, 14);
    let list = FlexList::build(&bs).unwrap();
    let starts: Vec<u64> = list.iter().map(|l| l.start).collect();
    // A plain challenge proof opens the block but not the one before it, which an insert needs
    // (for a block of height >= 1 the path does not pass its predecessor).
    let k = (100..).find(|&k| height_for_tag(&bs[k].tag) >= 1).unwrap();
    let at = starts[k];
    let thin = UpdateProof { new_root: list.root(), proof: list.prove(&[at]).unwrap() };
    let edits = [Edit::Insert { at, block: block(5, 10) }];
    assert!(matches!(
        verify_multi_update(&list.root(), &edits, &thin),
        Err(UpdateVerifyError::Proof(ProofError::Incomplete { .. }))
    ));
    // An edit far from anything the proof opens.
    let far = [Edit::Remove { at: starts[300] }];
    assert!(matches!(
        verify_multi_update(&list.root(), &far, &thin),
        Err(UpdateVerifyError::Proof(ProofError::Incomplete { .. }))
    ));
}

#[test]
fn invalid_edits_are_reported_as_such_by_the_client() {
    // The proof opens block 10 (update_case modifies it), so the client sees from authenticated
    // data that an insert inside it is the client's own mistake, not the provider's.
    let list = FlexList::build(&blocks(400, 12)).unwrap();
    let start = list.iter().nth(10).unwrap().start;
    let (_, old, _, proof) = update_case();
    let edits = [Edit::Insert { at: start + 1, block: block(6, 3) }];
    assert_eq!(
        verify_multi_update(&old, &edits, &proof),
        Err(UpdateVerifyError::Edit(EditError::NotABoundary { at: start + 1 }))
    );
}

// ---- lengths moved between an opened leaf and its unopened neighbour ----

/// Every way of moving `z` bytes between an opened leaf and the piece after it, for every z
/// in `zs`: each forged proof still decodes, claims other block bounds, and is rejected.
fn forged_lengths(proof: &[u8], zs: &[i64]) -> Vec<Vec<u8>> {
    let honest = tamper::opened_leaves(proof).unwrap();
    let mut out = Vec::new();
    for which in 0.. {
        let mut any_pair = false;
        for &z in zs {
            match tamper::move_length(proof, which, z) {
                Ok(Some(forged)) => {
                    any_pair = true;
                    assert!(MultiProof::from_bytes(forged.clone()).is_ok(), "a forgery must be well-formed");
                    assert_ne!(tamper::opened_leaves(&forged).unwrap(), honest, "the forgery moves a bound");
                    out.push(forged);
                }
                Ok(None) => {}
                Err(e) => panic!("honest proof failed to decode: {e}"),
            }
        }
        if !any_pair && tamper::move_length(proof, which, 0).unwrap().is_none() {
            break;
        }
    }
    out
}

#[test]
fn stretched_or_shrunk_leaves_in_a_read_proof_are_caught() {
    let (list, indices, proof) = setup();
    let forged = forged_lengths(proof.as_bytes(), &[1, 7, 4096, -1]);
    assert!(forged.len() > 20, "only {} forgeries", forged.len());
    for bytes in forged {
        assert_eq!(verify_bytes(&list.root(), &indices, &bytes), Err(ProofError::RootMismatch));
    }
}

#[test]
fn stretched_leaves_in_an_update_proof_are_caught() {
    let (_, old, edits, proof) = update_case();
    let forged = forged_lengths(proof.proof.as_bytes(), &[1, 9, -1]);
    assert!(!forged.is_empty());
    for bytes in forged {
        let bad = UpdateProof { new_root: proof.new_root, proof: MultiProof::from_bytes(bytes).unwrap() };
        assert_eq!(verify_multi_update(&old, &edits, &bad), Err(ProofError::RootMismatch.into()));
    }
}

#[test]
fn lengths_moved_between_opened_leaves_of_a_whole_list_are_caught() {
    // A proof of every block (a block list for sync) has no unopened subtree: lengths can only
    // move between neighbouring opened leaves.
    let list = FlexList::build(&blocks(60, 15)).unwrap();
    let starts: Vec<u64> = list.iter().map(|l| l.start).collect();
    let proof = list.prove(&starts).unwrap();
    let forged = forged_lengths(proof.as_bytes(), &[1, 3, -1]);
    assert!(forged.len() > 60);
    for bytes in forged {
        assert_eq!(verify_bytes(&list.root(), &starts, &bytes), Err(ProofError::RootMismatch));
    }
}

#[test]
fn forged_proof_round_trips_through_the_encoder() {
    // The forger's encoder writes exactly what the provider's genMultiProof writes.
    let (_, _, proof) = setup();
    assert_eq!(tamper::move_length(proof.as_bytes(), 0, 0).unwrap().unwrap(), proof.as_bytes());
}
