//! What vouch's tests share: a provider served on loopback, honest or lying as told
//! ([`provider`]); a MinIO server of a test's own for the S3 backend ([`minio`]); and what a
//! client must make of each lie of `vouch_misbehave` ([`lies`]); and the damage a failing disk
//! does to a provider's store ([`damage`]).
#![forbid(unsafe_code)]

pub mod crash;
pub mod damage;
pub mod lies;
pub mod minio;
pub mod provider;
mod rng;
pub mod sim;

pub use rng::Rng;

/// Bytes that differ from seed to seed (xorshift), the same for the same seed: a test's
/// file contents.
pub fn sample(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
