//! The checksum of an object made by a multipart upload, as S3 gives it: the upload names an
//! algorithm (CreateMultipartUpload's `x-amz-checksum-algorithm`) and a type
//! (`x-amz-checksum-type`); every part is then stored with its own checksum of that
//! algorithm, checked against its bytes, and the completed object gets either
//! * COMPOSITE (any algorithm but CRC64NVME): the algorithm over the parts' checksums, raw and
//!   in order, then `-<parts>`;
//! * FULL_OBJECT (the CRCs only): the algorithm over the whole object's bytes, computed as the
//!   completion streams the parts into it.

use s3s::checksum::ChecksumHasher;
use s3s::dto::{Checksum, ChecksumAlgorithm, ChecksumType, CompletedPart};
use s3s::{s3_error, S3Result};
use serde::{Deserialize, Serialize};

pub const COMPOSITE: &str = "COMPOSITE";
/// The checksums' headers.
pub const HEADERS: [&str; 5] = [
    "x-amz-checksum-crc32",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-crc64nvme",
    "x-amz-checksum-sha1",
    "x-amz-checksum-sha256",
];
pub const FULL_OBJECT: &str = "FULL_OBJECT";

/// What an upload asked for its object's checksum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadSum {
    /// The checksum's header: `x-amz-checksum-sha256`, ...
    pub header: String,
    /// FULL_OBJECT rather than COMPOSITE.
    pub full_object: bool,
}

impl UploadSum {
    /// What CreateMultipartUpload asked, refused where S3 refuses it (a type without an
    /// algorithm, a whole-object SHA, a composite CRC64NVME).
    pub fn asked(algorithm: Option<&ChecksumAlgorithm>, kind: Option<&ChecksumType>) -> S3Result<Option<UploadSum>> {
        let Some(algorithm) = algorithm else {
            return match kind {
                Some(_) => Err(s3_error!(InvalidRequest, "x-amz-checksum-type needs x-amz-checksum-algorithm")),
                None => Ok(None),
            };
        };
        let name = algorithm.as_str().to_ascii_lowercase();
        if !HEADERS.iter().any(|h| h.strip_prefix("x-amz-checksum-") == Some(name.as_str())) {
            return Err(s3_error!(InvalidRequest, "no checksum algorithm {}", algorithm.as_str()));
        }
        let crc = name.starts_with("crc");
        let full_object = match kind.map(ChecksumType::as_str) {
            None => name == "crc64nvme",
            Some(FULL_OBJECT) if crc => true,
            Some(COMPOSITE) if name != "crc64nvme" => false,
            Some(other) => {
                return Err(s3_error!(
                    InvalidRequest,
                    "the {other} checksum type does not go with {}",
                    algorithm.as_str()
                ));
            }
        };
        Ok(Some(UploadSum { header: format!("x-amz-checksum-{name}"), full_object }))
    }

    pub fn kind(&self) -> &'static str {
        match self.full_object {
            true => FULL_OBJECT,
            false => COMPOSITE,
        }
    }

    /// The checksum `part` (number `number`, stored with `stored`, its checksums by header)
    /// must have: the upload's algorithm, and, where CompleteMultipartUpload names one, the
    /// same value.
    pub fn of_part<'a>(
        &self,
        number: i32,
        stored: &'a std::collections::BTreeMap<String, String>,
        part: &CompletedPart,
    ) -> S3Result<&'a str> {
        let Some(value) = stored.get(&self.header) else {
            return Err(s3_error!(InvalidPart, "part {number} was uploaded without its {}", self.header));
        };
        let named = match self.header.as_str() {
            "x-amz-checksum-crc32" => &part.checksum_crc32,
            "x-amz-checksum-crc32c" => &part.checksum_crc32c,
            "x-amz-checksum-crc64nvme" => &part.checksum_crc64nvme,
            "x-amz-checksum-sha1" => &part.checksum_sha1,
            _ => &part.checksum_sha256,
        };
        match named {
            Some(named) if named != value => Err(s3_error!(InvalidPart, "part {number} has another {}", self.header)),
            _ => Ok(value),
        }
    }

    /// The COMPOSITE checksum of parts whose checksums are `parts` (base64, in order).
    pub fn composite(&self, parts: &[&str]) -> S3Result<String> {
        use base64::Engine as _;
        let mut hasher = hasher(&self.header);
        for part in parts {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(part)
                .map_err(|_| s3_error!(InternalError, "a part's stored {} is not base64", self.header))?;
            hasher.update(&raw);
        }
        let sums = hasher.finalize();
        let value =
            value(&sums, &self.header).ok_or_else(|| s3_error!(InternalError, "no {} computed", self.header))?;
        Ok(format!("{value}-{}", parts.len()))
    }
}

/// A hasher of the checksum whose header is `header` alone.
pub fn hasher(header: &str) -> ChecksumHasher {
    let mut hasher = ChecksumHasher::default();
    match header {
        "x-amz-checksum-crc32" => hasher.crc32 = Some(Default::default()),
        "x-amz-checksum-crc32c" => hasher.crc32c = Some(Default::default()),
        "x-amz-checksum-crc64nvme" => hasher.crc64nvme = Some(Default::default()),
        "x-amz-checksum-sha1" => hasher.sha1 = Some(Default::default()),
        _ => hasher.sha256 = Some(Default::default()),
    }
    hasher
}

/// The value of the checksum `header` in `sums`.
pub fn value(sums: &Checksum, header: &str) -> Option<String> {
    match header {
        "x-amz-checksum-crc32" => sums.checksum_crc32.clone(),
        "x-amz-checksum-crc32c" => sums.checksum_crc32c.clone(),
        "x-amz-checksum-crc64nvme" => sums.checksum_crc64nvme.clone(),
        "x-amz-checksum-sha1" => sums.checksum_sha1.clone(),
        "x-amz-checksum-sha256" => sums.checksum_sha256.clone(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use sha2::{Digest, Sha256};

    fn asked(algorithm: &str, kind: Option<&str>) -> S3Result<Option<UploadSum>> {
        let kind = kind.map(|k| ChecksumType::from(k.to_string()));
        UploadSum::asked(Some(&ChecksumAlgorithm::from(algorithm.to_string())), kind.as_ref())
    }

    #[test]
    fn the_types_s3_allows_and_refuses() {
        assert_eq!(asked("SHA256", None).unwrap().unwrap().kind(), COMPOSITE);
        assert_eq!(asked("CRC32", Some(FULL_OBJECT)).unwrap().unwrap().kind(), FULL_OBJECT);
        assert_eq!(asked("CRC64NVME", None).unwrap().unwrap().kind(), FULL_OBJECT);
        assert!(asked("SHA1", Some(FULL_OBJECT)).is_err());
        assert!(asked("CRC64NVME", Some(COMPOSITE)).is_err());
        assert!(asked("MD4", None).is_err());
        assert!(UploadSum::asked(None, Some(&ChecksumType::from(COMPOSITE.to_string()))).is_err());
        assert_eq!(UploadSum::asked(None, None).unwrap(), None);
    }

    #[test]
    fn a_composite_is_the_hash_of_the_parts_raw_checksums_then_their_count() {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let (one, two) = (Sha256::digest(b"first part"), Sha256::digest(b"second"));
        let want = Sha256::digest([one.as_slice(), two.as_slice()].concat());
        let sum = asked("SHA256", None).unwrap().unwrap();
        assert_eq!(sum.composite(&[&b64(&one), &b64(&two)]).unwrap(), format!("{}-2", b64(&want)));
        assert!(sum.composite(&["not base64!"]).is_err());
    }

    #[test]
    fn a_part_needs_the_uploads_checksum_and_the_value_completion_names() {
        let sum = asked("CRC32", Some(FULL_OBJECT)).unwrap().unwrap();
        let stored = std::collections::BTreeMap::from([("x-amz-checksum-crc32".to_string(), "AAAAAA==".to_string())]);
        let named = |v: &str| CompletedPart { checksum_crc32: Some(v.into()), ..CompletedPart::default() };
        assert_eq!(sum.of_part(1, &stored, &CompletedPart::default()).unwrap(), "AAAAAA==");
        assert_eq!(sum.of_part(1, &stored, &named("AAAAAA==")).unwrap(), "AAAAAA==");
        assert_eq!(*sum.of_part(1, &stored, &named("AAAAAB==")).unwrap_err().code(), s3s::S3ErrorCode::InvalidPart);
        let none = std::collections::BTreeMap::new();
        assert_eq!(
            *sum.of_part(2, &none, &CompletedPart::default()).unwrap_err().code(),
            s3s::S3ErrorCode::InvalidPart
        );
    }
}
