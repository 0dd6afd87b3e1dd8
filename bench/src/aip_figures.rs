//! Two small figures of the VICOS paper measured on vouch's own parts: the signature
//! schemes a group can use (Fig. 4: the time to sign and verify an INVOKE's statement), and
//! the selection rate of each key under the Zipf sampler the VICOS workloads use (Fig. 7).

use crate::measure::{check, min_time, SelfCheckFailed};
use crate::vicos::Zipf;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;
use std::collections::BTreeMap;
use std::hint::black_box;
use vouch_core::aip::Keyring;

/// One scheme's cost per statement (Fig. 4; the paper: HMAC-SHA1, RSA-2048, DSA-2048).
#[derive(Debug, Serialize)]
pub struct Signing {
    /// `hmac-sha256` (a group key) or `ed25519` (a key per member).
    pub scheme: &'static str,
    pub sign_us: f64,
    pub verify_us: f64,
    pub signature_bytes: usize,
}

/// A statement of the size an INVOKE signs (a digest, an operation and counters).
const STATEMENT_BYTES: usize = 96;

/// The time each scheme takes to sign and to verify one statement, best of `runs`.
pub(crate) fn signing(runs: usize, count: usize) -> Result<Vec<Signing>, SelfCheckFailed> {
    let seed = [7u8; 32];
    let members = BTreeMap::from([(1, Keyring::ed25519_public(&seed))]);
    let ed25519 = Keyring::ed25519(Some((1, seed)), &members).map_err(|e| SelfCheckFailed(e.to_string()))?;
    let schemes = [("hmac-sha256", Keyring::hmac([9; 32])), ("ed25519", ed25519)];
    let mut out = Vec::new();
    for (scheme, keyring) in schemes {
        let statements: Vec<Vec<u8>> = (0..count).map(|i| crate::e2e::data(STATEMENT_BYTES, i as u64)).collect();
        let sign = |s: &Vec<u8>| keyring.sign(1, s).map_err(|e| SelfCheckFailed(e.to_string()));
        let (signed, signatures) = min_time(runs, || statements.iter().map(sign).collect::<Result<Vec<_>, _>>());
        let signatures = signatures?;
        let (verified, valid) = min_time(runs, || {
            statements.iter().zip(&signatures).filter(|(s, sig)| keyring.verify(1, black_box(s), sig)).count()
        });
        check(valid == count, || format!("{scheme}: {valid} of {count} signatures verified"))?;
        let mut forged = signatures[0].clone();
        forged[0] ^= 1;
        check(!keyring.verify(1, &statements[0], &forged), || format!("{scheme}: a forged signature verified"))?;
        let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / count as f64;
        out.push(Signing {
            scheme,
            sign_us: per(signed),
            verify_us: per(verified),
            signature_bytes: signatures[0].len(),
        });
    }
    Ok(out)
}

/// How often each key was picked (Fig. 7: 10,000 selections over 64 objects).
#[derive(Debug, Serialize)]
pub struct Selection {
    pub theta: f64,
    pub selections: usize,
    /// The share of the selections that picked each key, by rank, in percent.
    pub percent_by_rank: Vec<f64>,
}

pub(crate) fn selection(keys: usize, thetas: &[f64], selections: usize) -> Vec<Selection> {
    thetas
        .iter()
        .map(|&theta| {
            let zipf = Zipf::new(keys, theta);
            let mut rng = StdRng::seed_from_u64(theta.to_bits());
            let mut counts = vec![0usize; keys];
            for _ in 0..selections {
                counts[zipf.sample(&mut rng)] += 1;
            }
            let percent_by_rank = counts.iter().map(|&c| 100.0 * c as f64 / selections as f64).collect();
            Selection { theta, selections, percent_by_rank }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_keys_are_picked_evenly_and_skewed_ones_mostly_first() {
        let rates = selection(64, &[0.0, 0.99], 10_000);
        let flat = &rates[0].percent_by_rank;
        assert!((flat.iter().sum::<f64>() - 100.0).abs() < 1e-9);
        assert!(flat.iter().all(|&p| (0.8..2.4).contains(&p)), "{flat:?}");
        let skewed = &rates[1].percent_by_rank;
        assert!(skewed[0] > 15.0 && skewed[63] < 1.0, "{skewed:?}");
    }

    #[test]
    fn both_schemes_sign_and_verify() {
        let timed = signing(1, 8).unwrap();
        let bytes: Vec<_> = timed.iter().map(|s| (s.scheme, s.signature_bytes)).collect();
        assert_eq!(bytes, [("hmac-sha256", 32), ("ed25519", 64)]);
    }
}
