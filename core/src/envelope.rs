//! The envelope of the client's own state files (the root's `state`, a change's `intent`, the
//! PoR `por` record): `magic:8 || body || SHA-256(magic || body):32`. The magic names the
//! layout and its version; the checksum catches a file damaged on disk (the files are the
//! client's, so a keyed checksum would add nothing).

use sha2::{Digest as _, Sha256};

const SUM: usize = 32;

/// Why an envelope does not open.
#[derive(Debug, PartialEq, Eq)]
pub enum Unsealed {
    /// Too short, or no magic this client knows (another file, or a newer layout).
    UnknownLayout,
    /// A known magic, and a checksum that does not match.
    Damaged,
}

/// `magic || body || SHA-256(magic || body)`.
pub fn seal(magic: &[u8; 8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(magic.len() + body.len() + SUM);
    out.extend_from_slice(magic);
    out.extend_from_slice(body);
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

/// Which of `magics` the envelope carries (its index), and its body.
pub fn open<'a>(bytes: &'a [u8], magics: &[&[u8; 8]]) -> Result<(usize, &'a [u8]), Unsealed> {
    let sealed = bytes.len().checked_sub(SUM).filter(|&n| n >= 8).ok_or(Unsealed::UnknownLayout)?;
    let (inside, sum) = bytes.split_at(sealed);
    let (magic, body) = inside.split_at(8);
    let which = magics.iter().position(|m| m.as_slice() == magic).ok_or(Unsealed::UnknownLayout)?;
    if Sha256::digest(inside).as_slice() != sum {
        return Err(Unsealed::Damaged);
    }
    Ok((which, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &[u8; 8] = b"vouchTA\x01";
    const B: &[u8; 8] = b"vouchTA\x02";

    #[test]
    fn an_envelope_opens_to_its_magic_and_body() {
        let sealed = seal(B, b"body");
        assert_eq!(open(&sealed, &[A, B]), Ok((1, &b"body"[..])));
        assert_eq!(open(&seal(A, b""), &[A]), Ok((0, &b""[..])));
    }

    #[test]
    fn a_flipped_byte_a_cut_or_an_unknown_magic_does_not_open() {
        let sealed = seal(A, b"some body");
        for at in 8..sealed.len() {
            let mut bad = sealed.clone();
            bad[at] ^= 1;
            assert_eq!(open(&bad, &[A]), Err(Unsealed::Damaged), "byte {at}");
        }
        for cut in 0..sealed.len() {
            assert!(open(&sealed[..cut], &[A]).is_err(), "cut at {cut}");
        }
        assert_eq!(open(&sealed, &[B]), Err(Unsealed::UnknownLayout));
    }
}
