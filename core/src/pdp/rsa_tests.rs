//! The RSA schemes: the owner's fast paths agree with the textbook formula, anyone with the
//! public key can audit, and lies are caught by both auditors.

use super::rsa::{RsaKeyError, RsaPublicKey, RsaSecretKey};
use super::tests::{data_blocks, seed, upload, FILE};
use super::*;
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd};
use rand_crypto::{rngs::StdRng, SeedableRng};
use std::sync::OnceLock;

fn key() -> &'static RsaSecretKey {
    static KEY: OnceLock<RsaSecretKey> = OnceLock::new();
    KEY.get_or_init(|| RsaSecretKey::generate(&mut StdRng::seed_from_u64(1024), 1024).unwrap())
}

/// `g^m mod N` the slow way, from the public key alone.
fn textbook_tag(public: &RsaPublicKey, data: &[u8]) -> Vec<u8> {
    let bytes = public.to_bytes();
    let n = BoxedUint::from_be_slice(&bytes[10..138], 1024).unwrap();
    let g = BoxedUint::from_be_slice(&bytes[138..266], 1024).unwrap();
    let params = BoxedMontyParams::new_vartime(Odd::new(n).unwrap());
    let mut le = data.to_vec();
    le.reverse();
    let m = BoxedUint::from_be_slice(&le, (data.len() as u32 * 8).max(64).next_multiple_of(64)).unwrap();
    let t = BoxedMontyForm::new(g, &params).pow(&m).retrieve();
    let raw = t.to_be_bytes();
    raw[raw.len() - 128..].to_vec()
}

#[test]
fn owner_tags_equal_the_textbook_formula() {
    let k = key();
    for data in [vec![1u8], vec![0xff; 7], vec![0xff; 4096], (0..3000u32).map(|i| (i * 7) as u8).collect()] {
        assert_eq!(k.tag(&FILE, 0, &[0; 16], &data), textbook_tag(k.public_key(), &data), "{} bytes", data.len());
    }
}

#[test]
fn honest_proofs_pass_the_owner_and_a_public_auditor() {
    let k = key();
    let public = RsaPublicKey::from_bytes(&k.public_key().to_bytes()).unwrap();
    let (client, provider) = upload(k, FILE, &data_blocks(60, |i| 100 + i * 13, 5));
    for n in 0..3 {
        let mut c = seed(n);
        c.count = 20;
        let proof = provider.prove(&c);
        assert_eq!(proof.scheme, SchemeId::Rsa1024);
        let decoded = PossessionProof::from_bytes(&proof.to_bytes()).unwrap();
        assert_eq!(decoded, proof);
        verify_possession(k, &client.file, &client.root, client.len, &c, &decoded).unwrap();
        verify_possession(&public, &client.file, &client.root, client.len, &c, &decoded).unwrap();
    }
}

#[test]
fn lies_are_caught_by_owner_and_public_auditor() {
    let k = key();
    let public = k.public_key();
    let data = data_blocks(40, |_| 200, 6);
    let (client, mut provider) = upload(k, FILE, &data);
    let mut c = seed(7);
    c.count = 15;
    let proof = provider.prove(&c);
    let check = |p: &PossessionProof| {
        let owner = verify_possession(k, &client.file, &client.root, client.len, &c, p);
        let anyone = verify_possession(public, &client.file, &client.root, client.len, &c, p);
        assert_eq!(owner, anyone);
        owner
    };
    // A forged aggregate.
    let mut bad = proof.clone();
    let Aggregate::Integer(m) = &mut bad.aggregate else { panic!("RSA aggregate") };
    m[0] ^= 1;
    assert_eq!(check(&bad), Err(PossessionError::Equation));
    // A forged tag.
    let mut bad = proof.clone();
    bad.blocks[0].tag[100] ^= 4;
    assert!(matches!(check(&bad), Err(PossessionError::LeafMismatch { .. })));
    // Altered data behind an intact list and tags.
    let (offsets, _) = c.expand(client.len);
    let hit = provider.list.search(offsets[0]).unwrap().block.block_ref;
    provider.held.get_mut(&hit).unwrap().2[3] ^= 1;
    assert_eq!(check(&provider.prove(&c)), Err(PossessionError::Equation));
    // An aggregate of the wrong kind.
    let mut bad = proof.clone();
    bad.aggregate = Aggregate::Sectors(vec![1]);
    assert!(matches!(check(&bad), Err(PossessionError::AggregateShape { .. })));
    // A linear proof offered to an RSA auditor.
    let mut bad = proof;
    bad.scheme = SchemeId::Linear;
    assert!(matches!(check(&bad), Err(PossessionError::SchemeMismatch { .. })));
}

#[test]
fn key_encodings_round_trip_and_reject_bad_bytes() {
    let k = key();
    let secret = k.to_bytes();
    let back = RsaSecretKey::from_bytes(&secret).unwrap();
    assert_eq!(back.tag(&FILE, 1, &[0; 16], b"hello"), k.tag(&FILE, 1, &[0; 16], b"hello"));
    let public = k.public_key().to_bytes();
    assert_eq!(RsaPublicKey::from_bytes(&public).unwrap().to_bytes(), public);
    assert_eq!(RsaPublicKey::from_bytes(&secret).unwrap_err(), RsaKeyError::BadMagic);
    assert!(matches!(RsaPublicKey::from_bytes(&public[..200]), Err(RsaKeyError::Length { .. })));
    let mut size = public.clone();
    size[8] = 1;
    assert_eq!(RsaPublicKey::from_bytes(&size).unwrap_err(), RsaKeyError::Size(1025));
    let mut even = public.clone();
    even[137] &= 0xfe;
    assert!(matches!(RsaPublicKey::from_bytes(&even), Err(RsaKeyError::Invalid(_))));
    let mut g_big = public.clone();
    g_big[138..].fill(0xff);
    assert!(matches!(RsaPublicKey::from_bytes(&g_big), Err(RsaKeyError::Invalid(_))));
    let mut same_factors = secret.clone();
    let (p, rest) = same_factors[10..].split_at_mut(64);
    rest[..64].copy_from_slice(p);
    assert!(matches!(RsaSecretKey::from_bytes(&same_factors), Err(RsaKeyError::Invalid(_))));
    assert!(matches!(RsaSecretKey::generate(&mut StdRng::seed_from_u64(1), 512), Err(RsaKeyError::Size(512))));
}

#[test]
fn an_all_zero_challenge_and_an_empty_aggregate_do_not_panic() {
    let k = key();
    let public = k.public_key();
    // Blocks of zeros: the honest aggregate is the integer 0, encoded as no words.
    let (client, provider) = upload(k, FILE, &vec![vec![0u8; 64]; 10]);
    let mut c = seed(3);
    c.count = 5;
    let proof = provider.prove(&c);
    assert_eq!(proof.aggregate, Aggregate::Integer(vec![]));
    let decoded = PossessionProof::from_bytes(&proof.to_bytes()).unwrap();
    verify_possession(k, &client.file, &client.root, client.len, &c, &decoded).unwrap();
    verify_possession(public, &client.file, &client.root, client.len, &c, &decoded).unwrap();
    // A provider that sends an empty aggregate for nonzero data is caught, by both.
    let (client, provider) = upload(k, FILE, &data_blocks(10, |_| 64, 1));
    let mut bad = provider.prove(&c);
    bad.aggregate = Aggregate::Integer(vec![]);
    assert_eq!(verify_possession(k, &client.file, &client.root, client.len, &c, &bad), Err(PossessionError::Equation));
    assert_eq!(
        verify_possession(public, &client.file, &client.root, client.len, &c, &bad),
        Err(PossessionError::Equation)
    );
    // A trailing zero word is refused by the decoder: one value, one encoding.
    let mut bytes = provider.prove(&c).to_bytes();
    let n = bytes.len();
    let Aggregate::Integer(words) = provider.prove(&c).aggregate else { panic!() };
    let at = n - 8 * words.len() - 1;
    bytes[at] += 1;
    bytes.extend_from_slice(&[0; 8]);
    assert_eq!(PossessionProof::from_bytes(&bytes), Err(DecodeError::NonCanonical));
}
