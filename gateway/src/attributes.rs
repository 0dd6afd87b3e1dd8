//! GetObjectAttributes: what S3 tools ask of an object besides its bytes, in one answer: its
//! ETag, checksums, size, storage class and parts, each only when asked, all from the object's
//! verified metadata.

use crate::fields::{checksums, etag, timestamp};
use crate::object::{ObjectMeta, PartRead};
use s3s::dto::*;

/// The most parts one answer lists (S3's default and bound).
const MAX_PARTS: i32 = 1000;

/// An object as its attributes see it: its metadata, its body's length, when it was stored.
pub(crate) struct Described<'a> {
    pub meta: &'a ObjectMeta,
    pub body_len: u64,
    pub time: u64,
}

/// The attributes `input` asks of `object`.
pub(crate) fn attributes_of(input: &GetObjectAttributesInput, object: Described) -> GetObjectAttributesOutput {
    // SDKs send one header of names joined by commas, which the protocol's parser takes as
    // one name.
    let asked =
        |name: &str| input.object_attributes.iter().flat_map(|a| a.as_str().split(',')).any(|a| a.trim() == name);
    let sums = checksums(object.meta);
    let any_sum = sums.checksum_crc32.is_some()
        || sums.checksum_crc32c.is_some()
        || sums.checksum_crc64nvme.is_some()
        || sums.checksum_sha1.is_some()
        || sums.checksum_sha256.is_some();
    GetObjectAttributesOutput {
        e_tag: asked(ObjectAttributes::ETAG).then(|| etag(object.meta)),
        checksum: (asked(ObjectAttributes::CHECKSUM) && any_sum).then_some(sums),
        object_size: asked(ObjectAttributes::OBJECT_SIZE).then_some(object.body_len as i64),
        storage_class: asked(ObjectAttributes::STORAGE_CLASS)
            .then(|| StorageClass::from_static(StorageClass::STANDARD)),
        object_parts: asked(ObjectAttributes::OBJECT_PARTS).then(|| parts(input, &object)).flatten(),
        last_modified: Some(timestamp(object.time)),
        ..GetObjectAttributesOutput::default()
    }
}

/// A multipart object's parts after the marker asked, a page of them; `None` for an object of
/// one part (S3 lists none). The number of parts alone when their sizes were not kept.
fn parts(input: &GetObjectAttributesInput, object: &Described) -> Option<GetObjectAttributesParts> {
    let count = match object.meta.part(1, object.body_len) {
        PartRead::Bytes { parts: 1, .. } | PartRead::NoSuchPart { .. } => return None,
        PartRead::Bytes { parts, .. } => parts as i32,
        PartRead::Unknown => {
            let count = object.meta.etag.rsplit_once('-').and_then(|(_, n)| n.parse().ok());
            return Some(GetObjectAttributesParts { total_parts_count: count, ..GetObjectAttributesParts::default() });
        }
    };
    let after = input.part_number_marker.unwrap_or(0).max(0);
    let max = input.max_parts.unwrap_or(MAX_PARTS).clamp(1, MAX_PARTS);
    let last = count.min(after.saturating_add(max));
    let listed: Vec<ObjectPart> = (after + 1..=last)
        .filter_map(|number| match object.meta.part(number, object.body_len) {
            PartRead::Bytes { range, .. } => Some(ObjectPart {
                part_number: Some(number),
                size: Some((range.end - range.start) as i64),
                ..ObjectPart::default()
            }),
            _ => None,
        })
        .collect();
    let truncated = last < count;
    Some(GetObjectAttributesParts {
        total_parts_count: Some(count),
        part_number_marker: Some(after),
        next_part_number_marker: truncated.then_some(last),
        max_parts: Some(max),
        is_truncated: Some(truncated),
        parts: Some(listed),
    })
}
