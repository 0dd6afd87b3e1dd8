//! The paper-faithful, publicly verifiable tag scheme of DPDP (paper 001): `T(m) = g^m mod N`.
//!
//! `N = pq` is an RSA modulus whose factorization only the key owner knows, and `g` a random
//! quadratic residue. A block's bytes, read as a little-endian integer, are the exponent. For a
//! challenge with coefficients `nu_i` the prover sends the integer `M = sum_i nu_i * m_i` (no
//! modulus: it knows none), and anyone holding `(N, g)` checks
//!
//! `prod_i T_i^(nu_i) = g^M  (mod N)`.
//!
//! **Library: crypto-bigint** (runtime-width `BoxedUint` and Montgomery arithmetic), chosen by
//! measurement on this machine (1024-bit Montgomery multiply: crypto-bigint 508 ns, num-bigint
//! 982 ns as `(a*b) % n`, GMP 538 ns; a full 2048-bit modexp: GMP 2.8 ms, crypto-bigint 5.1 ms,
//! num-bigint 5.3 ms). GMP is fastest for whole exponentiations but its Rust binding does not
//! build here without pinning old versions against the system library; crypto-bigint is pure
//! Rust, constant-time where it matters, and matches GMP on the multiply that the fast paths
//! below are made of.
//!
//! **Fast paths for the key owner.** Tagging and owner verification never run a generic
//! exponentiation:
//! * the exponent is reduced modulo `p - 1` and `q - 1` (CRT) by splitting it into chunks of
//!   the prime's width and summing `chunk_k * (2^(w k) mod (p-1))` from a precomputed table, one
//!   wide multiply per chunk and a single division at the end ([`ChunkReducer`]);
//! * `g^e mod p` for the fixed base `g` is a comb: a table of `g^(d * 256^k)` for every byte
//!   position `k` and byte value `d`, so an exponent of `w` bits costs `w / 8` multiplies
//!   ([`Comb`]).
//!
//! Public verification has no such shortcut: `g^M mod N` with `M` as long as a block is one
//! exponentiation with a block-sized exponent (hundreds of ms for 16 KB blocks); the left side
//! is a simultaneous multi-exponentiation sharing the squarings.

use super::{Aggregate, Auditor, Challenged, FileId, Salt, SchemeId, Tagger, MAX_BLOCK_LEN};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, ConcatenatingMul, Integer, NonZero, Odd, RandomMod, Resize};
use rand_core::CryptoRng;
use std::fmt;

/// Bits of the challenge coefficients (they are elements of Z_(2^61-1)).
const COEFFICIENT_BITS: u32 = 61;
/// Longest exponent the owner's tables cover: a block, or an aggregate of one (`M` exceeds the
/// longest block by the coefficient and the count of blocks).
const MAX_EXPONENT_BYTES: usize = MAX_BLOCK_LEN + 16;

const PUBLIC_MAGIC: &[u8; 8] = b"vouchRP\x01";
const SECRET_MAGIC: &[u8; 8] = b"vouchRS\x01";

/// The scheme for a modulus size.
pub fn scheme_for_bits(bits: u32) -> Option<SchemeId> {
    match bits {
        1024 => Some(SchemeId::Rsa1024),
        2048 => Some(SchemeId::Rsa2048),
        _ => None,
    }
}

/// A key could not be read or made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RsaKeyError {
    #[error("not a vouch RSA key (bad magic or version)")]
    BadMagic,
    #[error("unsupported modulus size {0} (1024 or 2048)")]
    Size(u32),
    #[error("key has {got} bytes, expected {expected}")]
    Length { expected: usize, got: usize },
    #[error("key is inconsistent: {0}")]
    Invalid(&'static str),
}

/// Little-endian 64-bit words of a block read as an integer.
fn words_of(data: &[u8]) -> Vec<u64> {
    data.chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

fn uint_be(bytes: &[u8], bits: u32) -> BoxedUint {
    BoxedUint::from_be_slice(bytes, bits).expect("length checked by the caller")
}

fn be_bytes(x: &BoxedUint, len: usize) -> Vec<u8> {
    let raw = x.to_be_bytes();
    let skip = raw.len().saturating_sub(len);
    let mut out = vec![0u8; len - (raw.len() - skip)];
    out.extend_from_slice(&raw[skip..]);
    out
}

/// Turns column sums (each `u128`, weight `2^(64 t)`) into little-endian words.
fn normalise(columns: &[u128]) -> Vec<u64> {
    let mut out = Vec::with_capacity(columns.len() + 2);
    let mut carry = 0u128;
    for &c in columns {
        let (sum, overflow) = c.overflowing_add(carry);
        out.push(sum as u64);
        carry = (sum >> 64) + (u128::from(overflow) << 64);
    }
    out.push(carry as u64);
    out.push((carry >> 64) as u64);
    out
}

/// Reduces long integers modulo a fixed `m` of `bits` bits (see the module docs).
struct ChunkReducer {
    bits: u32,
    modulus: NonZero<BoxedUint>,
    /// `2^(bits * k) mod m` for every chunk position `k`.
    powers: Vec<BoxedUint>,
}

impl ChunkReducer {
    fn new(modulus: BoxedUint) -> Self {
        let bits = modulus.bits_precision();
        let chunks = (MAX_EXPONENT_BYTES * 8).div_ceil(bits as usize);
        let modulus = NonZero::new(modulus).expect("nonzero modulus");
        let mut powers = Vec::with_capacity(chunks);
        let mut power = BoxedUint::one_with_precision(bits);
        for _ in 0..chunks {
            powers.push(power.clone());
            let shifted = power.resize(2 * bits).shl_vartime(bits).expect("fits in twice the width");
            power = shifted.rem_vartime(&modulus);
        }
        ChunkReducer { bits, modulus, powers }
    }

    /// `x mod m` for `x` given as little-endian words.
    ///
    /// The products `chunk_k * power_k` are summed column by column: each 128-bit product adds
    /// its low half to column `t` and its high half to column `t + 1`, so columns (`u128`)
    /// never carry during the sum (they take up to 2^64 halves) and one pass at the end
    /// normalises them. No allocation per chunk, one division at the end.
    fn reduce(&self, words: &[u64]) -> BoxedUint {
        let chunk_words = self.bits as usize / 64;
        assert!(words.len() <= self.powers.len() * chunk_words, "exponent longer than the tables");
        let mut columns = vec![0u128; 2 * chunk_words + 1];
        for (chunk, power) in words.chunks(chunk_words).zip(&self.powers) {
            for (i, &a) in chunk.iter().enumerate() {
                for (j, &b) in power.as_words().iter().enumerate() {
                    let p = u128::from(a) * u128::from(b);
                    columns[i + j] += u128::from(p as u64);
                    columns[i + j + 1] += p >> 64;
                }
            }
        }
        BoxedUint::from_words(normalise(&columns)).rem_vartime(&self.modulus)
    }
}

/// `g^e mod p` for a fixed `g` (see the module docs).
struct Comb {
    one: BoxedMontyForm,
    /// `table[k * 255 + d - 1] = g^(d * 256^k)`.
    table: Vec<BoxedMontyForm>,
}

impl Comb {
    fn new(g: BoxedMontyForm, exponent_bits: u32) -> Self {
        let windows = exponent_bits.div_ceil(8) as usize;
        let mut table = Vec::with_capacity(windows * 255);
        let mut base = g.clone();
        for _ in 0..windows {
            let mut x = base.clone();
            for _ in 0..255 {
                table.push(x.clone());
                x = x.mul(&base);
            }
            base = x; // g^(256^(k+1))
        }
        Comb { one: BoxedMontyForm::one(g.params()), table }
    }

    fn pow(&self, e: &BoxedUint) -> BoxedMontyForm {
        let mut acc = self.one.clone();
        for (k, &byte) in e.to_le_bytes().iter().enumerate() {
            if byte != 0 {
                acc = acc.mul(&self.table[k * 255 + usize::from(byte) - 1]);
            }
        }
        acc
    }
}

/// `prod_i bases_i^(exps_i)` for exponents below 2^61, squarings shared (Straus).
fn multi_pow(one: &BoxedMontyForm, bases: &[BoxedMontyForm], exps: &[u64]) -> BoxedMontyForm {
    let mut acc = one.clone();
    for bit in (0..COEFFICIENT_BITS).rev() {
        acc = acc.square();
        for (b, e) in bases.iter().zip(exps) {
            if e >> bit & 1 == 1 {
                acc = acc.mul(b);
            }
        }
    }
    acc
}

/// The public key `(N, g)`: enough to audit.
#[derive(Clone)]
pub struct RsaPublicKey {
    bits: u32,
    n: BoxedUint,
    g: BoxedUint,
    params: BoxedMontyParams,
}

impl fmt::Debug for RsaPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RsaPublicKey({} bits)", self.bits)
    }
}

impl RsaPublicKey {
    fn new(bits: u32, n: BoxedUint, g: BoxedUint) -> Result<Self, RsaKeyError> {
        if n.bits_vartime() != bits || !bool::from(n.is_odd()) {
            return Err(RsaKeyError::Invalid("modulus is not an odd number of the stated size"));
        }
        let two = BoxedUint::from_words_with_precision([2], bits);
        if g < two || g >= n {
            return Err(RsaKeyError::Invalid("generator out of range"));
        }
        let params = BoxedMontyParams::new_vartime(Odd::new(n.clone()).expect("odd"));
        Ok(RsaPublicKey { bits, n, g, params })
    }

    pub fn scheme(&self) -> SchemeId {
        scheme_for_bits(self.bits).expect("size checked at construction")
    }

    /// `magic:8 || bits:u16le || N || g`, both big-endian of `bits / 8` bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let len = self.bits as usize / 8;
        let mut out = PUBLIC_MAGIC.to_vec();
        out.extend_from_slice(&(self.bits as u16).to_le_bytes());
        out.extend_from_slice(&be_bytes(&self.n, len));
        out.extend_from_slice(&be_bytes(&self.g, len));
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RsaKeyError> {
        let bits = read_header(bytes, PUBLIC_MAGIC)?;
        let len = bits as usize / 8;
        check_len(bytes, 10 + 2 * len)?;
        Self::new(bits, uint_be(&bytes[10..10 + len], bits), uint_be(&bytes[10 + len..], bits))
    }

    fn tag_value(&self, tag: &[u8]) -> Option<BoxedMontyForm> {
        if tag.len() != self.bits as usize / 8 {
            return None;
        }
        let t = uint_be(tag, self.bits);
        (t < self.n && !bool::from(t.is_zero())).then(|| BoxedMontyForm::new(t, &self.params))
    }
}

fn read_header(bytes: &[u8], magic: &[u8; 8]) -> Result<u32, RsaKeyError> {
    if bytes.len() < 10 || &bytes[..8] != magic {
        return Err(RsaKeyError::BadMagic);
    }
    let bits = u32::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    scheme_for_bits(bits).map(|_| bits).ok_or(RsaKeyError::Size(bits))
}

fn check_len(bytes: &[u8], expected: usize) -> Result<(), RsaKeyError> {
    if bytes.len() == expected {
        Ok(())
    } else {
        Err(RsaKeyError::Length { expected, got: bytes.len() })
    }
}

impl Auditor for RsaPublicKey {
    fn scheme(&self) -> SchemeId {
        RsaPublicKey::scheme(self)
    }

    /// Public verification: needs nothing secret.
    fn check(&self, _file: &FileId, blocks: &[Challenged<'_>], aggregate: &Aggregate) -> bool {
        let Aggregate::Integer(m) = aggregate else { return false };
        let Some(tags) = blocks.iter().map(|b| self.tag_value(b.tag)).collect::<Option<Vec<_>>>() else {
            return false;
        };
        let coefficients: Vec<u64> = blocks.iter().map(|b| b.coefficient).collect();
        let left = multi_pow(&BoxedMontyForm::one(&self.params), &tags, &coefficients);
        let exponent = BoxedUint::from_words(m.iter().copied());
        let right = BoxedMontyForm::new(self.g.clone(), &self.params).pow(&exponent);
        left.retrieve() == right.retrieve()
    }
}

/// One CRT half of the secret key: a prime and its tables.
struct Half {
    prime: NonZero<BoxedUint>,
    params: BoxedMontyParams,
    reducer: ChunkReducer,
    comb: Comb,
}

impl Half {
    fn new(prime: &BoxedUint, g: &BoxedUint) -> Self {
        let bits = prime.bits_precision();
        let params = BoxedMontyParams::new_vartime(Odd::new(prime.clone()).expect("odd prime"));
        let nz = NonZero::new(prime.clone()).expect("nonzero");
        let g_mod = g.rem_vartime(&nz).resize(bits);
        let order = prime.wrapping_sub(BoxedUint::one_with_precision(bits));
        let comb = Comb::new(BoxedMontyForm::new(g_mod, &params), bits);
        Half { prime: nz, params, reducer: ChunkReducer::new(order), comb }
    }

    /// `g^x mod p` for a long exponent `x`.
    fn g_pow(&self, words: &[u64]) -> BoxedUint {
        self.comb.pow(&self.reducer.reduce(words)).retrieve()
    }

    fn reduce(&self, x: &BoxedUint) -> BoxedMontyForm {
        BoxedMontyForm::new(x.rem_vartime(&self.prime).resize(self.prime.bits_precision()), &self.params)
    }
}

/// The owner's key: the factorization and precomputed tables, for fast tagging and auditing.
pub struct RsaSecretKey {
    public: RsaPublicKey,
    p: BoxedUint,
    q: BoxedUint,
    halves: [Half; 2],
    /// `q^-1 mod p`, for CRT recombination.
    q_inv: BoxedUint,
}

impl fmt::Debug for RsaSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RsaSecretKey({} bits)", self.public.bits)
    }
}

impl RsaSecretKey {
    /// A fresh key: two random primes of `bits / 2` bits and `g` a random square mod `N`.
    pub fn generate<R: CryptoRng + ?Sized>(rng: &mut R, bits: u32) -> Result<Self, RsaKeyError> {
        scheme_for_bits(bits).ok_or(RsaKeyError::Size(bits))?;
        loop {
            let p: BoxedUint = crypto_primes::random_prime(rng, crypto_primes::Flavor::Any, bits / 2);
            let q: BoxedUint = crypto_primes::random_prime(rng, crypto_primes::Flavor::Any, bits / 2);
            let n = p.concatenating_mul(&q);
            if p == q || n.bits_vartime() != bits {
                continue;
            }
            let nz = NonZero::new(n.clone()).expect("nonzero");
            let h = BoxedUint::random_mod_vartime(rng, &nz);
            let g = h.mul_mod(&h, &nz);
            if let Ok(key) = Self::from_parts(bits, p, q, g) {
                return Ok(key);
            }
        }
    }

    fn from_parts(bits: u32, p: BoxedUint, q: BoxedUint, g: BoxedUint) -> Result<Self, RsaKeyError> {
        if !bool::from(p.is_odd()) || !bool::from(q.is_odd()) || p == q {
            return Err(RsaKeyError::Invalid("factors must be distinct odd numbers"));
        }
        let n = p.concatenating_mul(&q);
        let public = RsaPublicKey::new(bits, n, g)?;
        let p_nz = NonZero::new(p.clone()).expect("odd");
        let q_inv = Option::<BoxedUint>::from(q.rem_vartime(&p_nz).invert_mod(&p_nz))
            .ok_or(RsaKeyError::Invalid("factors are not coprime"))?;
        let halves = [Half::new(&p, &public.g), Half::new(&q, &public.g)];
        Ok(RsaSecretKey { public, p, q, halves, q_inv })
    }

    pub fn public_key(&self) -> &RsaPublicKey {
        &self.public
    }

    /// `magic:8 || bits:u16le || p || q || g`: primes big-endian of `bits / 16` bytes, `g` of
    /// `bits / 8`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (half, full) = (self.public.bits as usize / 16, self.public.bits as usize / 8);
        let mut out = SECRET_MAGIC.to_vec();
        out.extend_from_slice(&(self.public.bits as u16).to_le_bytes());
        out.extend_from_slice(&be_bytes(&self.p, half));
        out.extend_from_slice(&be_bytes(&self.q, half));
        out.extend_from_slice(&be_bytes(&self.public.g, full));
        out
    }

    /// Reads a key written by [`RsaSecretKey::to_bytes`]; builds the owner's tables (tens of ms).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RsaKeyError> {
        let bits = read_header(bytes, SECRET_MAGIC)?;
        let (half, full) = (bits as usize / 16, bits as usize / 8);
        check_len(bytes, 10 + 2 * half + full)?;
        let p = uint_be(&bytes[10..10 + half], bits / 2);
        let q = uint_be(&bytes[10 + half..10 + 2 * half], bits / 2);
        if p.bits_vartime() != bits / 2 || q.bits_vartime() != bits / 2 {
            return Err(RsaKeyError::Invalid("factors must have half the modulus size"));
        }
        Self::from_parts(bits, p, q, uint_be(&bytes[10 + 2 * half..], bits))
    }

    /// CRT: the residue mod N with residues `rp` mod p and `rq` mod q.
    fn combine(&self, rp: &BoxedUint, rq: &BoxedUint) -> BoxedUint {
        let p = &self.halves[0].prime;
        let rq_p = rq.rem_vartime(p).resize(p.bits_precision());
        let h = rp.sub_mod(&rq_p, p).mul_mod(&self.q_inv, p);
        self.q.concatenating_mul(&h).wrapping_add(rq)
    }
}

impl Tagger for RsaSecretKey {
    fn scheme(&self) -> SchemeId {
        self.public.scheme()
    }

    /// DPDP's tag has no secret mask, so neither a repeated nonce nor the salt matters to it.
    /// It does not cover the length either (`g^m` reads trailing zero bytes as nothing): for
    /// this scheme only the FlexList, which authenticates every block's length, binds it.
    fn tag(&self, _file: &FileId, _nonce: u64, _salt: &Salt, data: &[u8]) -> Vec<u8> {
        assert!(data.len() <= MAX_BLOCK_LEN, "block of {} bytes exceeds MAX_BLOCK_LEN", data.len());
        let words = words_of(data);
        let t = self.combine(&self.halves[0].g_pow(&words), &self.halves[1].g_pow(&words));
        be_bytes(&t, self.public.bits as usize / 8)
    }

    fn check_block(&self, file: &FileId, nonce: u64, data: &[u8], tag: &[u8]) -> bool {
        data.len() <= MAX_BLOCK_LEN && self.tag(file, nonce, &[0; 16], data) == tag
    }
}

impl Auditor for RsaSecretKey {
    fn scheme(&self) -> SchemeId {
        self.public.scheme()
    }

    /// The owner's audit: the same equation, mod p and mod q, with the fast paths.
    fn check(&self, _file: &FileId, blocks: &[Challenged<'_>], aggregate: &Aggregate) -> bool {
        let Aggregate::Integer(m) = aggregate else { return false };
        if m.len() * 8 > MAX_EXPONENT_BYTES {
            return false;
        }
        let Some(tags) = blocks.iter().map(|b| self.public.tag_value(b.tag)).collect::<Option<Vec<_>>>() else {
            return false;
        };
        let coefficients: Vec<u64> = blocks.iter().map(|b| b.coefficient).collect();
        self.halves.iter().all(|half| {
            let residues: Vec<BoxedMontyForm> = tags.iter().map(|t| half.reduce(&t.retrieve())).collect();
            let left = multi_pow(&BoxedMontyForm::one(&half.params), &residues, &coefficients).retrieve();
            left == half.g_pow(m)
        })
    }
}

/// The prover's aggregate for the RSA schemes: `M = sum_i nu_i * m_i` over the integers, as
/// little-endian words without trailing zero words.
///
/// Like [`ChunkReducer::reduce`], the sum runs in carry-free `u128` columns, one per 64-bit
/// word (a product's low half in its column, high half in the next), normalised once.
pub fn aggregate<'a>(blocks: impl IntoIterator<Item = (u64, &'a [u8])>) -> Vec<u64> {
    let mut columns: Vec<u128> = Vec::new();
    for (coefficient, data) in blocks {
        let words = data.len().div_ceil(8);
        if columns.len() < words + 1 {
            columns.resize(words + 1, 0);
        }
        let c = u128::from(coefficient);
        let mut chunks = data.chunks_exact(8);
        for (j, w) in (&mut chunks).enumerate() {
            let p = c * u128::from(u64::from_le_bytes(w.try_into().expect("8 bytes")));
            columns[j] += u128::from(p as u64);
            columns[j + 1] += p >> 64;
        }
        if !chunks.remainder().is_empty() {
            let j = data.len() / 8;
            let p = c * u128::from(words_of(chunks.remainder())[0]);
            columns[j] += u128::from(p as u64);
            columns[j + 1] += p >> 64;
        }
    }
    let mut acc = normalise(&columns);
    while acc.last() == Some(&0) {
        acc.pop();
    }
    acc
}
