//! How an S3 object is kept as a vouch file: its body, then its metadata, then a trailer.
//!
//! `body || meta || meta_len:u32 || MAGIC`, all under the one namespace root, so the ETag,
//! the content type and the user metadata an application reads are as verified as the bytes,
//! and are committed with them in one version (no second name that could be out of step). The
//! metadata goes last so that a put streams the body and writes the ETag it hashed on the way.
//! A ranged read of the body needs the metadata's length: the gateway reads the file's tail
//! once per version and caches what it says.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The file's last bytes: the metadata's length, then this mark.
pub const MAGIC: &[u8; 8] = b"vouchS3\x01";
pub const TRAILER: u64 = 4 + MAGIC.len() as u64;
/// Most bytes of metadata one object carries (S3 allows 2 KB of user metadata, and 8 KB of
/// headers in all).
pub const MAX_META: usize = 16 << 10;
/// Most bytes of user metadata (`x-amz-meta-*`, its keys and values) a write sets, as in S3.
pub const MAX_USER_META: usize = 2 << 10;

/// What S3 says of an object besides its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMeta {
    /// The ETag, unquoted: the body's MD5 in hex, or the multipart form `<md5 of md5s>-<parts>`.
    pub etag: String,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub cache_control: Option<String>,
    /// The `Expires` header it was stored with, as an HTTP date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// `x-amz-meta-*`, without the prefix.
    pub user: BTreeMap<String, String>,
    /// Checksums the application sent (algorithm name, base64 value), returned on request.
    pub checksums: BTreeMap<String, String>,
    /// How a multipart object's checksum was made (`COMPOSITE`: of its parts' checksums;
    /// `FULL_OBJECT`: of its bytes). Absent for an object of one put, whose checksums are all
    /// of its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
    /// When the object was stored (Unix seconds). Only group mode writes it: a VICOS group
    /// keeps no version records with times, so the time travels, verified, in the object
    /// (the own namespace's objects have their version's time, and leave this out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<u64>,
    /// The multipart upload this object was completed from: a completion of it asked again
    /// (an SDK retrying after its answer was lost) finds the upload gone, and answers with
    /// this object while it is still the key's current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<String>,
    /// A multipart object's part sizes, in runs of (size, how many in a row), so that a read
    /// by part number (`partNumber`) serves its part: a few runs for an SDK's parts of one
    /// size. Empty for an object of one part, and for one whose parts took more than
    /// [`MAX_PART_RUNS`] runs (a read of its parts by number is then refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_runs: Vec<(u64, u32)>,
}

/// Most runs of part sizes an object keeps (each a few bytes of its metadata).
pub const MAX_PART_RUNS: usize = 64;

/// `sizes` in runs of (size, how many in a row); `None` past [`MAX_PART_RUNS`].
pub fn part_runs(sizes: impl IntoIterator<Item = u64>) -> Option<Vec<(u64, u32)>> {
    let mut runs: Vec<(u64, u32)> = Vec::new();
    for size in sizes {
        match runs.last_mut() {
            Some((last, count)) if *last == size => *count += 1,
            _ => runs.push((size, 1)),
        }
    }
    (runs.len() <= MAX_PART_RUNS).then_some(runs)
}

/// How a read by part number is served for an object.
#[derive(Debug, PartialEq, Eq)]
pub enum PartRead {
    /// The part's bytes, of the object's parts.
    Bytes { range: std::ops::Range<u64>, parts: u32 },
    /// No such part.
    NoSuchPart { parts: u32 },
    /// A multipart object whose part sizes were not kept.
    Unknown,
}

/// Why a file's tail is no object trailer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TrailerError {
    #[error("the file is not an object the gateway stored (no trailer)")]
    NoTrailer,
    #[error("the object's metadata is malformed")]
    Malformed,
}

impl ObjectMeta {
    /// The bytes that follow the body.
    pub fn trailer_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).expect("plain data");
        let len = out.len() as u32;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(MAGIC);
        out
    }

    /// The metadata's length from the last [`TRAILER`] bytes of a file.
    pub fn meta_len(tail: &[u8]) -> Result<u64, TrailerError> {
        let (len, magic) = tail.split_at_checked(4).ok_or(TrailerError::NoTrailer)?;
        if magic != MAGIC {
            return Err(TrailerError::NoTrailer);
        }
        let len = u32::from_le_bytes(len.try_into().map_err(|_| TrailerError::NoTrailer)?) as usize;
        if len > MAX_META {
            return Err(TrailerError::Malformed);
        }
        Ok(len as u64)
    }

    /// The metadata and the body's length, from a file of `file_len` bytes whose last bytes
    /// are `tail` (at least the metadata and the trailer).
    pub fn from_tail(file_len: u64, tail: &[u8]) -> Result<(ObjectMeta, u64), TrailerError> {
        let trailer = tail.len().checked_sub(TRAILER as usize).ok_or(TrailerError::NoTrailer)?;
        let meta_len = ObjectMeta::meta_len(&tail[trailer..])?;
        let meta_start = trailer.checked_sub(meta_len as usize).ok_or(TrailerError::Malformed)?;
        let body_len = file_len.checked_sub(meta_len + TRAILER).ok_or(TrailerError::Malformed)?;
        let meta = serde_json::from_slice(&tail[meta_start..trailer]).map_err(|_| TrailerError::Malformed)?;
        Ok((meta, body_len))
    }
}

impl ObjectMeta {
    /// The bytes of part `number` (from 1) of this object of `body_len` bytes: one part when
    /// it was not uploaded in parts.
    pub fn part(&self, number: i32, body_len: u64) -> PartRead {
        let count = self.etag.rsplit_once('-').and_then(|(_, n)| n.parse::<u32>().ok());
        let Some(count) = count else {
            return match number {
                1 => PartRead::Bytes { range: 0..body_len, parts: 1 },
                _ => PartRead::NoSuchPart { parts: 1 },
            };
        };
        let runs_count: u64 = self.part_runs.iter().map(|&(_, n)| n as u64).sum();
        let runs_len: u64 = self.part_runs.iter().map(|&(size, n)| size.saturating_mul(n as u64)).sum();
        if runs_count != count as u64 || runs_len != body_len {
            return PartRead::Unknown;
        }
        if number < 1 || number as u64 > runs_count {
            return PartRead::NoSuchPart { parts: count };
        }
        let (mut start, mut left) = (0u64, number as u64 - 1);
        for &(size, n) in &self.part_runs {
            if left < n as u64 {
                start += left * size;
                return PartRead::Bytes { range: start..start + size, parts: count };
            }
            start += size * n as u64;
            left -= n as u64;
        }
        PartRead::Unknown
    }
}

/// The ETag (unquoted hex) of an MD5 digest.
pub fn etag_of(md5: &[u8]) -> String {
    base16ct::lower::encode_string(md5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_round_trips_after_any_body_and_damage_is_refused() {
        let meta = ObjectMeta {
            etag: etag_of(&[0xab; 16]),
            content_type: Some("text/plain".into()),
            user: BTreeMap::from([("colour".into(), "blue".into())]),
            ..ObjectMeta::default()
        };
        for body in [&b""[..], b"hello", &[7u8; 5000]] {
            let file = [body, &meta.trailer_bytes()].concat();
            let (back, body_len) = ObjectMeta::from_tail(file.len() as u64, &file).unwrap();
            assert_eq!((back, body_len), (meta.clone(), body.len() as u64));
            // Only the tail: enough when it holds the metadata and the trailer.
            let tail = &file[body.len()..];
            assert_eq!(ObjectMeta::from_tail(file.len() as u64, tail).unwrap().1, body.len() as u64);
            assert_eq!(ObjectMeta::from_tail(file.len() as u64, &tail[1..]), Err(TrailerError::Malformed));
        }
        assert_eq!(ObjectMeta::from_tail(5, b"hello"), Err(TrailerError::NoTrailer));
        let mut long = meta.trailer_bytes();
        let n = long.len();
        long[n - 12..n - 8].copy_from_slice(&(MAX_META as u32 + 1).to_le_bytes());
        assert_eq!(ObjectMeta::from_tail(n as u64, &long), Err(TrailerError::Malformed));
        assert_eq!(etag_of(&[0, 255]), "00ff");
        // The time group mode writes round-trips; left out, it is not written at all (the own
        // namespace's objects keep their bytes).
        let timed = ObjectMeta { modified: Some(1_700_000_000), ..meta.clone() };
        let file = timed.trailer_bytes();
        assert_eq!(ObjectMeta::from_tail(file.len() as u64, &file).unwrap().0, timed);
        assert!(!String::from_utf8_lossy(&meta.trailer_bytes()).contains("modified"));
    }

    #[test]
    fn a_part_is_found_by_its_number_from_runs_of_sizes() {
        let runs = part_runs([5, 5, 5, 3, 3, 1]).unwrap();
        assert_eq!(runs, [(5, 3), (3, 2), (1, 1)]);
        let meta = ObjectMeta { etag: "ab-6".into(), part_runs: runs, ..ObjectMeta::default() };
        let part = |n| meta.part(n, 22);
        assert_eq!(part(1), PartRead::Bytes { range: 0..5, parts: 6 });
        assert_eq!(part(3), PartRead::Bytes { range: 10..15, parts: 6 });
        assert_eq!(part(4), PartRead::Bytes { range: 15..18, parts: 6 });
        assert_eq!(part(6), PartRead::Bytes { range: 21..22, parts: 6 });
        assert_eq!(
            (part(0), part(7), part(-1)),
            (PartRead::NoSuchPart { parts: 6 }, PartRead::NoSuchPart { parts: 6 }, PartRead::NoSuchPart { parts: 6 })
        );
        // Runs that do not add up to the object (its ETag's count, its length) are not used.
        assert_eq!(meta.part(1, 23), PartRead::Unknown);
        assert_eq!(ObjectMeta { etag: "ab-5".into(), ..meta.clone() }.part(1, 22), PartRead::Unknown);
        assert_eq!(ObjectMeta { part_runs: Vec::new(), ..meta.clone() }.part(1, 22), PartRead::Unknown);
        // One part: the whole object.
        let single = ObjectMeta { etag: etag_of(&[1; 16]), ..ObjectMeta::default() };
        assert_eq!(single.part(1, 9), PartRead::Bytes { range: 0..9, parts: 1 });
        assert_eq!(single.part(2, 9), PartRead::NoSuchPart { parts: 1 });
        assert_eq!(part_runs((0..MAX_PART_RUNS as u64 + 1).map(|i| i % 2 + 1)), None);
        assert!(part_runs((0..MAX_PART_RUNS as u64).map(|i| i % 2 + 1)).is_some());
    }
}
