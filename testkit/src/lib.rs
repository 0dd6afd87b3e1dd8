//! What vouch's tests share: a provider served on loopback, honest or lying as told
//! ([`provider`]); a MinIO server of a test's own for the S3 backend ([`minio`]); and what a
//! client must make of each lie of `vouch_misbehave` ([`lies`]).
#![forbid(unsafe_code)]

pub mod lies;
pub mod minio;
pub mod provider;
