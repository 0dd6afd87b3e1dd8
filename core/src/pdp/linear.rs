//! The default tag scheme: secret-key linear homomorphic tags over Z_p, p = 2^61 - 1, in the
//! style of Shacham–Waters' private scheme.
//!
//! A block is a vector of sectors `m_1..m_s` (7 bytes each, see [`super::field`]). With a
//! secret PRF key and secret coefficients `alpha_1..alpha_s`, one per sector, the tag of the
//! block with identity (file, nonce) is, in each of [`LANES`] independent lanes,
//!
//! `t = PRF(file, nonce, salt, length) + sum_j alpha_j * m_j  (mod p)`,
//!
//! and the tag is `salt:16 || t_1:8 || t_2:8` ([`TAG_LEN`] bytes).
//!
//! For a challenge with coefficients `nu_i` the prover returns the sector sums
//! `mu_j = sum_i nu_i * m_ij`, and the verifier checks, per lane,
//!
//! `sum_i nu_i * t_i = sum_i nu_i * PRF(file, nonce_i, salt_i, length_i) + sum_j alpha_j * mu_j`.
//!
//! The PRF masks every tag, so tags reveal nothing about `alpha`; a wrong `mu` passes a lane
//! only if it guesses a linear relation on the secret `alpha`, probability `1/p` per lane, so
//! two lanes give 122 bits.
//!
//! **The PRF input never repeats.** Two tags under one PRF value differ by `alpha . (m - m')`
//! and leak `alpha`. Nonces count up per file from the latest committed version, so an upload
//! whose commit the provider refused would hand its nonces out again; the *salt*, 16 bytes
//! drawn from a CSPRNG for every upload attempt ([`super::Salt`]), makes the inputs of two
//! attempts disjoint by construction. It travels inside the tag, which the FlexList leaf
//! authenticates, so the verifier reads it from an authenticated place.
//!
//! **The length is in the PRF input.** Sectors pad with zeros, so without it
//! `tag(data || 0^z) == tag(data)`; with it a block stretched by a provider has another mask.
//! (The FlexList authenticates lengths too; this is the second, independent line.)
//!
//! Keys: a 32-byte secret; BLAKE3 in key-derivation mode splits it into the PRF key and the
//! seed of the `alpha` stream (BLAKE3's XOF), so the key on disk is just the secret.

use super::field::{self, inner_products};
use super::{Aggregate, Auditor, Challenged, FileId, Salt, SchemeId, Tagger, MAX_BLOCK_LEN};
use crate::codec::Reader;
use std::fmt;
use std::sync::Arc;

/// Independent lanes per tag.
pub const LANES: usize = 2;
/// Bytes of one tag: the attempt's salt, then one little-endian `u64` field element per lane.
pub const TAG_LEN: usize = SALT_LEN + 8 * LANES;
const SALT_LEN: usize = std::mem::size_of::<Salt>();
/// Most sectors a block can have.
pub const MAX_SECTORS: usize = MAX_BLOCK_LEN.div_ceil(field::SECTOR_BYTES);

const KEY_MAGIC: &[u8; 8] = b"vouchLK\x01";

/// The secret key of the linear scheme, with its derived coefficients.
#[derive(Clone)]
pub struct LinearKey {
    secret: [u8; 32],
    prf_key: [u8; 32],
    /// Shared: a client's clones of its key (one per task or session) copy no megabytes.
    alphas: Arc<[[u64; LANES]]>,
}

impl fmt::Debug for LinearKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LinearKey(..)")
    }
}

/// A key file could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not a vouch linear key (bad magic or version)")]
    BadMagic,
    #[error("key has {0} bytes, expected 40")]
    BadLength(usize),
}

impl LinearKey {
    /// The key derived from a 32-byte secret (draw it from a CSPRNG).
    pub fn from_secret(secret: [u8; 32]) -> Self {
        let prf_key = blake3::derive_key("vouch pdp linear 2026 prf", &secret);
        let alpha_seed = blake3::derive_key("vouch pdp linear 2026 alpha", &secret);
        let mut xof = blake3::Hasher::new_keyed(&alpha_seed).finalize_xof();
        let mut alphas = vec![[0u64; LANES]; MAX_SECTORS];
        let mut buf = [0u8; 16 * LANES * 256];
        for chunk in alphas.chunks_mut(256) {
            xof.fill(&mut buf);
            for (k, a) in chunk.iter_mut().enumerate() {
                for (lane, v) in a.iter_mut().enumerate() {
                    let at = (k * LANES + lane) * 16;
                    *v = field::from_random(buf[at..at + 16].try_into().expect("16 bytes"));
                }
            }
        }
        LinearKey { secret, prf_key, alphas: alphas.into() }
    }

    /// `magic:8 || secret:32`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = KEY_MAGIC.to_vec();
        out.extend_from_slice(&self.secret);
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() != 40 {
            return Err(KeyError::BadLength(bytes.len()));
        }
        let mut r = Reader::new(bytes);
        if r.bytes(8).ok() != Some(KEY_MAGIC.as_slice()) {
            return Err(KeyError::BadMagic);
        }
        let secret = r.bytes(32).map_err(|_| KeyError::BadLength(bytes.len()))?;
        Ok(Self::from_secret(secret.try_into().expect("32 bytes")))
    }

    fn prf(&self, file: &FileId, nonce: u64, salt: &Salt, length: usize) -> [u64; LANES] {
        let mut h = blake3::Hasher::new_keyed(&self.prf_key);
        h.update(&file.0);
        h.update(&nonce.to_le_bytes());
        h.update(salt);
        h.update(&(length as u64).to_le_bytes());
        let mut out = [0u8; 16 * LANES];
        h.finalize_xof().fill(&mut out);
        std::array::from_fn(|lane| field::from_random(out[lane * 16..lane * 16 + 16].try_into().expect("16 bytes")))
    }
}

/// A tag's salt and lanes; `None` when it is not a well-formed linear tag.
pub fn decode_tag(tag: &[u8]) -> Option<(Salt, [u64; LANES])> {
    if tag.len() != TAG_LEN {
        return None;
    }
    let (salt, lanes) = tag.split_at(SALT_LEN);
    let lanes: [u64; LANES] =
        std::array::from_fn(|l| u64::from_le_bytes(lanes[l * 8..l * 8 + 8].try_into().expect("8 bytes")));
    lanes.iter().all(|&v| v < field::P).then(|| (salt.try_into().expect("salt bytes"), lanes))
}

impl Tagger for LinearKey {
    fn scheme(&self) -> SchemeId {
        SchemeId::Linear
    }

    fn tag(&self, file: &FileId, nonce: u64, salt: &Salt, data: &[u8]) -> Vec<u8> {
        assert!(data.len() <= MAX_BLOCK_LEN, "block of {} bytes exceeds MAX_BLOCK_LEN", data.len());
        let mask = self.prf(file, nonce, salt, data.len());
        let linear = inner_products(&self.alphas, data);
        let mut out = Vec::with_capacity(TAG_LEN);
        out.extend_from_slice(salt);
        for lane in 0..LANES {
            out.extend_from_slice(&field::add(mask[lane], linear[lane]).to_le_bytes());
        }
        out
    }

    fn check_block(&self, file: &FileId, nonce: u64, data: &[u8], tag: &[u8]) -> bool {
        match decode_tag(tag) {
            Some((salt, _)) if data.len() <= MAX_BLOCK_LEN => self.tag(file, nonce, &salt, data) == tag,
            _ => false,
        }
    }
}

impl Auditor for LinearKey {
    fn scheme(&self) -> SchemeId {
        SchemeId::Linear
    }

    fn check(&self, file: &FileId, blocks: &[Challenged<'_>], aggregate: &Aggregate) -> bool {
        let Aggregate::Sectors(mu) = aggregate else { return false };
        if mu.len() > MAX_SECTORS || mu.iter().any(|&v| v >= field::P) {
            return false;
        }
        let mut left = [0u64; LANES];
        let mut right = [0u64; LANES];
        for b in blocks {
            let Some((salt, tag)) = decode_tag(b.tag) else { return false };
            let mask = self.prf(file, b.nonce, &salt, b.length as usize);
            for lane in 0..LANES {
                left[lane] = field::add(left[lane], field::mul(b.coefficient, tag[lane]));
                right[lane] = field::add(right[lane], field::mul(b.coefficient, mask[lane]));
            }
        }
        for (alpha, &m) in self.alphas.iter().zip(mu) {
            for (r, a) in right.iter_mut().zip(alpha) {
                *r = field::add(*r, field::mul(*a, m));
            }
        }
        left == right
    }
}

/// The prover's aggregate for the linear scheme: `mu_j = sum_i nu_i * m_ij`, one element per
/// sector of the longest challenged block. Blocks go through in groups of four, so each
/// accumulator is read and written once per four products.
pub fn aggregate<'a>(blocks: impl IntoIterator<Item = (u64, &'a [u8])>) -> Vec<u64> {
    let blocks: Vec<(u64, &[u8])> = blocks.into_iter().collect();
    let longest = blocks.iter().map(|(_, d)| field::sectors(d.len())).max().unwrap_or(0);
    let mut acc = vec![0u128; longest];
    let mut products = 0;
    let mut groups = blocks.chunks_exact(4);
    for g in &mut groups {
        if products + 4 > field::ACC_BATCH {
            acc.iter_mut().for_each(|a| *a = u128::from(field::reduce(*a)));
            products = 0;
        }
        field::add_scaled(&mut acc, [g[0].0, g[1].0, g[2].0, g[3].0], [g[0].1, g[1].1, g[2].1, g[3].1]);
        products += 4;
    }
    for &(coefficient, data) in groups.remainder() {
        field::add_scaled(&mut acc, [coefficient], [data]);
    }
    acc.into_iter().map(field::reduce).collect()
}
