//! PDP end to end: an honest provider passes, every way of lying is caught.

use super::linear::LinearKey;
use super::*;
use crate::flexlist::{Edit, FlexList, MultiProof, ProofError};
use std::collections::HashMap;

/// An in-memory provider: the list plus the blocks under their `block_ref`.
#[derive(Clone)]
pub(super) struct Provider {
    pub(super) scheme: SchemeId,
    pub(super) list: FlexList,
    pub(super) held: HashMap<u64, (u64, Vec<u8>, Vec<u8>)>,
}

impl Provider {
    fn store(&mut self, tagged: &[TaggedBlock], data: &[Vec<u8>]) {
        for (t, d) in tagged.iter().zip(data) {
            self.held.insert(t.leaf.block_ref, (t.nonce, t.tag.clone(), d.clone()));
        }
    }

    pub(super) fn prove(&self, challenge: &Challenge) -> PossessionProof {
        prove(self.scheme, &self.list, challenge, |r| {
            self.held.get(&r).map(|(nonce, tag, data)| Held { nonce: *nonce, tag, data })
        })
        .expect("provider holds every block")
    }
}

/// One upload attempt's salt, for tests that make one attempt.
pub(super) const SALT: Salt = [9; 16];

fn key(seed: u8) -> LinearKey {
    LinearKey::from_secret([seed; 32])
}

pub(super) fn data_blocks(n: usize, size: impl Fn(usize) -> usize, seed: u8) -> Vec<Vec<u8>> {
    (0..n).map(|i| (0..size(i)).map(|j| (j as u8).wrapping_mul(31) ^ (i as u8) ^ seed).collect()).collect()
}

/// Uploads `data` as a new file: the client tags and computes the root itself.
pub(super) fn upload(key: &impl Tagger, file: FileId, data: &[Vec<u8>]) -> (ClientFile, Provider) {
    let mut client = ClientFile::new(file);
    let tagged = client.tag_blocks(key, &SALT, data).unwrap();
    let leaves: Vec<_> = tagged.iter().map(|t| t.leaf).collect();
    let list = FlexList::build(&leaves).unwrap();
    client.uploaded(list.root(), list.total_len());
    let mut provider = Provider { scheme: key.scheme(), list, held: HashMap::new() };
    provider.store(&tagged, data);
    (client, provider)
}

pub(super) fn seed(n: u64) -> Challenge {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&n.to_le_bytes());
    Challenge::new(s, DEFAULT_CHALLENGE)
}

fn verify(key: &LinearKey, client: &ClientFile, c: &Challenge, p: &PossessionProof) -> Result<(), PossessionError> {
    verify_possession(key, &client.file, &client.root, client.len, c, p)
}

pub(super) const FILE: FileId = FileId([1; 16]);

#[test]
fn honest_provider_passes_with_fixed_and_variable_blocks() {
    let k = key(1);
    let shapes: [fn(usize) -> usize; 3] = [|_| 64, |i| 1 + (i * 37) % 300, |_| 4096];
    for sizes in shapes {
        let data = data_blocks(300, sizes, 3);
        let (client, provider) = upload(&k, FILE, &data);
        for n in 0..3 {
            let c = seed(n);
            let proof = provider.prove(&c);
            assert!(!proof.blocks.is_empty() && proof.blocks.len() <= 300);
            verify(&k, &client, &c, &proof).unwrap();
            let decoded = PossessionProof::from_bytes(&proof.to_bytes()).unwrap();
            assert_eq!(decoded, proof);
            verify(&k, &client, &c, &decoded).unwrap();
        }
    }
}

#[test]
fn forged_aggregate_is_rejected() {
    let k = key(2);
    let (client, provider) = upload(&k, FILE, &data_blocks(100, |_| 100, 0));
    let c = seed(1);
    let proof = provider.prove(&c);
    let Aggregate::Sectors(mu) = &proof.aggregate else { panic!("linear aggregate") };
    for j in [0, mu.len() / 2, mu.len() - 1] {
        let mut bad = proof.clone();
        let Aggregate::Sectors(m) = &mut bad.aggregate else { panic!("linear aggregate") };
        m[j] = (m[j] + 1) % field::P;
        assert_eq!(verify(&k, &client, &c, &bad), Err(PossessionError::Equation));
    }
    let mut short = proof.clone();
    let Aggregate::Sectors(m) = &mut short.aggregate else { panic!("linear aggregate") };
    m.pop();
    assert!(matches!(verify(&k, &client, &c, &short), Err(PossessionError::AggregateShape { .. })));
}

#[test]
fn forged_or_foreign_tags_are_rejected() {
    let k = key(3);
    let data = data_blocks(100, |_| 100, 0);
    let (client, provider) = upload(&k, FILE, &data);
    let c = seed(2);
    let proof = provider.prove(&c);
    // A tag with one bit flipped, a nonce changed.
    let mut bad = proof.clone();
    bad.blocks[0].tag[3] ^= 1;
    assert!(matches!(verify(&k, &client, &c, &bad), Err(PossessionError::LeafMismatch { .. })));
    let mut bad = proof.clone();
    bad.blocks[1].nonce ^= 1;
    assert!(matches!(verify(&k, &client, &c, &bad), Err(PossessionError::LeafMismatch { .. })));
    // The same data tagged for another file: its tags match no leaf of this file.
    let (_, other) = upload(&k, FileId([2; 16]), &data);
    let foreign = other.prove(&c);
    assert_ne!(foreign.blocks, proof.blocks);
    let mut bad = proof.clone();
    bad.blocks = foreign.blocks.clone();
    assert!(matches!(verify(&k, &client, &c, &bad), Err(PossessionError::LeafMismatch { .. })));
    // And the other file's whole proof fails against this file's root.
    assert!(matches!(verify(&k, &client, &c, &foreign), Err(PossessionError::List(_))));
    // The tag equation itself binds the file: this file's tags do not verify as another's.
    let mut other_client = client;
    other_client.file = FileId([2; 16]);
    assert_eq!(verify(&k, &other_client, &c, &proof), Err(PossessionError::Equation));
    // Another key cannot vouch for these tags.
    assert_eq!(verify(&key(4), &client, &c, &proof), Err(PossessionError::Equation));
}

#[test]
fn blocks_from_other_positions_are_rejected() {
    let k = key(5);
    let (client, mut provider) = upload(&k, FILE, &data_blocks(50, |_| 80, 0));
    let c = seed(3);
    // The provider swaps two blocks' data (keeping each position's tag): the equation fails.
    let mut swapped = provider.clone();
    let (a, b) = (swapped.held[&0].2.clone(), swapped.held[&1].2.clone());
    swapped.held.get_mut(&0).unwrap().2 = b;
    swapped.held.get_mut(&1).unwrap().2 = a;
    let challenge_hitting_both = (0..100).map(seed).find(|c| {
        let (offsets, _) = c.expand(client.len);
        offsets.iter().any(|&o| o < 80) && offsets.iter().any(|&o| (80..160).contains(&o))
    });
    let c2 = challenge_hitting_both.unwrap();
    assert_eq!(verify(&k, &client, &c2, &swapped.prove(&c2)), Err(PossessionError::Equation));
    // It swaps whole blocks (data, nonce and tag) under one position: the leaf catches it.
    let first = provider.held[&0].clone();
    provider.held.insert(1, first);
    assert!(matches!(verify(&k, &client, &c2, &provider.prove(&c2)), Err(PossessionError::LeafMismatch { .. })));
    let _ = c;
}

#[test]
fn replayed_and_stale_proofs_are_rejected() {
    let k = key(6);
    let data = data_blocks(200, |_| 64, 1);
    let (mut client, mut provider) = upload(&k, FILE, &data);
    let old = provider.prove(&seed(10));
    // A proof for another challenge.
    assert!(verify(&k, &client, &seed(11), &old).is_err());
    let mut fewer = seed(10);
    fewer.count = 100;
    assert!(verify(&k, &client, &fewer, &old).is_err());
    // After an update, a proof from the old version fails even for the same challenge.
    let new = vec![vec![9u8; 64]];
    let tagged = client.tag_blocks(&k, &SALT, &new).unwrap();
    let edits = [Edit::Modify { at: 64 * 7, block: tagged[0].leaf }];
    let update = provider.list.multi_update(&edits).unwrap();
    provider.store(&tagged, &new);
    client.apply_update(&edits, &update).unwrap();
    let c = (10..200).map(seed).find(|c| c.expand(client.len).0.iter().any(|&o| (448..512).contains(&o))).unwrap();
    let (old_client, old_provider) = upload(&k, FILE, &data);
    let replay = old_provider.prove(&c);
    assert!(verify(&k, &client, &c, &replay).is_err());
    verify(&k, &old_client, &c, &replay).unwrap();
}

#[test]
fn verified_updates_keep_possession_provable() {
    let k = key(7);
    let data = data_blocks(120, |i| 50 + i % 40, 2);
    let (mut client, mut provider) = upload(&k, FILE, &data);
    let fresh = data_blocks(4, |i| 30 + 10 * i, 9);
    let tagged = client.tag_blocks(&k, &SALT, &fresh).unwrap();
    let starts: Vec<u64> = provider.list.iter().map(|l| l.start).collect();
    let edits = [
        Edit::Insert { at: starts[3], block: tagged[0].leaf },
        Edit::Modify { at: starts[10] + 2, block: tagged[1].leaf },
        Edit::Remove { at: starts[50] },
        Edit::Insert { at: client.len, block: tagged[2].leaf },
        Edit::Modify { at: starts[119], block: tagged[3].leaf },
    ];
    let update = provider.list.multi_update(&edits).unwrap();
    provider.store(&tagged, &fresh);
    let new_root = client.apply_update(&edits, &update).unwrap();
    assert_eq!(new_root, provider.list.root());
    assert_eq!(client.len, provider.list.total_len());
    for n in 0..4 {
        let c = seed(100 + n);
        verify(&k, &client, &c, &provider.prove(&c)).unwrap();
    }
    // A provider that applied the update to the list but dropped a new block's data is caught
    // whenever the challenge reaches that block.
    let mut lazy = provider.clone();
    lazy.held.get_mut(&tagged[1].nonce).unwrap().2.iter_mut().for_each(|b| *b = 0);
    let start = lazy.list.iter().find(|l| l.block.block_ref == tagged[1].nonce).unwrap().start;
    let c = (0..500).map(seed).find(|c| c.expand(client.len).0.iter().any(|&o| o >= start && o < start + 40)).unwrap();
    assert_eq!(verify(&k, &client, &c, &lazy.prove(&c)), Err(PossessionError::Equation));
    // A provider that claims another new root is caught by verifyMultiUpdate.
    let mut liar = update.clone();
    liar.new_root.0[0] ^= 1;
    let (mut before, _) = upload(&k, FILE, &data);
    before.next_nonce = client.next_nonce;
    assert!(before.apply_update(&edits, &liar).is_err());
    assert_eq!(before.apply_update(&edits, &update), Ok(new_root));
}

/// The detection rate the paper promises: a provider that lost or altered a fraction `f` of
/// the blocks passes a `c`-offset challenge with probability at most `(1 - f)^c`.
#[test]
fn lying_provider_passes_at_most_at_the_theoretical_rate() {
    let k = key(8);
    let (n, lost, c, trials) = (200usize, 20usize, 10u32, 600u64);
    let data = data_blocks(n, |_| 32, 4);
    let (client, mut provider) = upload(&k, FILE, &data);
    // Lose every tenth block: half replaced by zeros, half altered in one byte.
    for i in (0..n).step_by(n / lost) {
        let held = provider.held.get_mut(&(i as u64)).unwrap();
        if i % 20 == 0 {
            held.2.iter_mut().for_each(|b| *b = 0);
        } else {
            held.2[5] ^= 0x80;
        }
    }
    let passed = (0..trials)
        .filter(|&t| {
            let challenge = Challenge::new(seed(1000 + t).seed, c);
            verify(&k, &client, &challenge, &provider.prove(&challenge)).is_ok()
        })
        .count() as f64;
    let p = (1.0 - lost as f64 / n as f64).powi(c as i32);
    let sd = (trials as f64 * p * (1.0 - p)).sqrt();
    assert!(passed <= trials as f64 * p + 4.0 * sd, "passed {passed} of {trials}; theory {p}");
    // And the challenge really samples: the provider passes when it is not hit.
    assert!(passed >= trials as f64 * p - 4.0 * sd, "passed {passed} of {trials}; theory {p}");
}

#[test]
fn keys_round_trip_and_malformed_keys_are_typed_errors() {
    let k = key(9);
    let back = LinearKey::from_bytes(&k.to_bytes()).unwrap();
    assert_eq!(back.tag(&FILE, 3, &SALT, b"abc"), k.tag(&FILE, 3, &SALT, b"abc"));
    assert_eq!(LinearKey::from_bytes(&[]).unwrap_err(), linear::KeyError::BadLength(0));
    let mut bad = k.to_bytes();
    bad[0] ^= 1;
    assert_eq!(LinearKey::from_bytes(&bad).unwrap_err(), linear::KeyError::BadMagic);
}

#[test]
fn bad_block_lengths_are_typed_errors() {
    let mut client = ClientFile::new(FILE);
    assert_eq!(client.tag_blocks(&key(1), &SALT, &[vec![]]).unwrap_err(), BadBlockLength(0));
    let big = vec![vec![0u8; MAX_BLOCK_LEN + 1]];
    assert_eq!(client.tag_blocks(&key(1), &SALT, &big).unwrap_err(), BadBlockLength(MAX_BLOCK_LEN + 1));
    assert_eq!(client.next_nonce, 0, "a refused batch uses no nonces");
}

#[test]
fn malformed_proofs_are_typed_errors() {
    let k = key(10);
    let (client, provider) = upload(&k, FILE, &data_blocks(60, |_| 50, 0));
    let c = seed(5);
    let bytes = provider.prove(&c).to_bytes();
    for cut in [0, 1, 2, 5, bytes.len() / 2, bytes.len() - 1] {
        assert!(PossessionProof::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(matches!(PossessionProof::from_bytes(&trailing), Err(DecodeError::Trailing(1))));
    let mut version = bytes.clone();
    version[0] = 9;
    assert_eq!(PossessionProof::from_bytes(&version), Err(DecodeError::Version(9)));
    let mut scheme = bytes.clone();
    scheme[1] = 0;
    assert_eq!(PossessionProof::from_bytes(&scheme), Err(DecodeError::Scheme(0)));
    let mut out_of_field = bytes.clone();
    let n = out_of_field.len();
    out_of_field[n - 8..].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(PossessionProof::from_bytes(&out_of_field), Err(DecodeError::NotInField));
    // Every single-bit flip is either refused by the decoder or by the verifier.
    for i in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[i] ^= 1 << (i % 8);
        if let Ok(p) = PossessionProof::from_bytes(&flipped) {
            assert!(verify(&k, &client, &c, &p).is_err(), "flip at byte {i} accepted");
        }
    }
}

// ---- stretched blocks and reused nonces ----

#[test]
fn an_audit_over_stretched_blocks_is_caught() {
    // The provider claims a challenged block reaches into its unopened neighbour (so it could
    // drop the neighbour and answer for it with zeros): the list no longer matches the root.
    let k = key(11);
    let (client, provider) = upload(&k, FILE, &data_blocks(400, |i| 50 + i % 90, 0));
    let c = seed(9);
    let proof = provider.prove(&c);
    verify(&k, &client, &c, &proof).unwrap();
    let mut forged = 0;
    for which in 0..200 {
        for z in [1, 40] {
            let Some(list) = crate::flexlist::tamper::move_length(proof.list.as_bytes(), which, z).unwrap() else {
                continue;
            };
            let bad = PossessionProof { list: MultiProof::from_bytes(list).unwrap(), ..proof.clone() };
            assert_eq!(verify(&k, &client, &c, &bad), Err(PossessionError::List(ProofError::RootMismatch)));
            forged += 1;
        }
    }
    assert!(forged > 50, "only {forged} forgeries");
}

#[test]
fn the_linear_tag_binds_the_length_zero_padding_included() {
    // Sectors pad with zeros, so without the length in the PRF input a block and the same block
    // followed by zeros would share a tag, and the equation would pass over a stretched length.
    let k = key(12);
    let data = vec![7u8; 100];
    let mut padded = data.clone();
    padded.extend_from_slice(&[0; 12]);
    let tag = k.tag(&FILE, 5, &SALT, &data);
    assert_ne!(k.tag(&FILE, 5, &SALT, &padded), tag);
    assert!(k.check_block(&FILE, 5, &data, &tag));
    assert!(!k.check_block(&FILE, 5, &padded, &tag));
    let mu = linear::aggregate([(3u64, &padded[..])]);
    let claim = |length| Challenged { nonce: 5, length, coefficient: 3, tag: &tag };
    assert!(k.check(&FILE, &[claim(100)], &Aggregate::Sectors(linear::aggregate([(3u64, &data[..])]))));
    assert!(!k.check(&FILE, &[claim(112)], &Aggregate::Sectors(mu)));
}

#[test]
fn oversized_or_malformed_blocks_never_panic_the_verifier() {
    let k = key(13);
    let tag = k.tag(&FILE, 1, &SALT, b"abc");
    assert!(!k.check_block(&FILE, 1, &vec![0; MAX_BLOCK_LEN + 1], &tag));
    assert!(!k.check_block(&FILE, 1, b"abc", &tag[..tag.len() - 1]));
    let huge = Challenged { nonce: 1, length: u32::MAX, coefficient: 1, tag: &tag };
    assert!(!k.check(&FILE, &[huge], &Aggregate::Sectors(vec![0; 4])));
}

#[test]
fn two_attempts_never_share_a_prf_input() {
    // A refused upload's nonces are handed out again; the salts keep the PRF inputs apart, so
    // the difference of two tags under one nonce no longer reveals alpha . (m - m').
    let k = key(14);
    let (first, second) = (vec![1u8; 64], vec![2u8; 64]);
    let mut a = ClientFile::new(FILE);
    let mut b = ClientFile::new(FILE);
    let ta = a.tag_blocks(&k, &[1; 16], &[&first]).unwrap();
    let tb = b.tag_blocks(&k, &[2; 16], &[&second]).unwrap();
    assert_eq!(ta[0].nonce, tb[0].nonce, "the same nonce, as after a refused commit");
    let (salt_a, lanes_a) = linear::decode_tag(&ta[0].tag).unwrap();
    let (salt_b, lanes_b) = linear::decode_tag(&tb[0].tag).unwrap();
    assert_ne!(salt_a, salt_b);
    // Under one salt the masks cancel: t - t' depends on the data alone (what leaked alpha).
    let same_salt = linear::decode_tag(&k.tag(&FILE, 0, &[1; 16], &second)).unwrap().1;
    let diff = |x: [u64; 2], y: [u64; 2]| [field::add(x[0], field::P - y[0]), field::add(x[1], field::P - y[1])];
    let zero = linear::decode_tag(&k.tag(&FILE, 0, &[1; 16], &[0u8; 64])).unwrap().1;
    let one_step = linear::decode_tag(&k.tag(&FILE, 0, &[1; 16], &[1u8; 64])).unwrap().1;
    assert_eq!(diff(same_salt, lanes_a), diff(one_step, zero), "one salt: the masks cancel");
    assert_ne!(diff(lanes_b, lanes_a), diff(one_step, zero), "two salts: they do not");
}
