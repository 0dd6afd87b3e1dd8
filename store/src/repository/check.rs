//! Checking every segment against the index: each segment's table and block checksums, each
//! index entry against the table of the segment it points into, the bookkeeping, the lists.

use super::Repository;
use crate::keys::{self, SegmentInfo};
use crate::lists;
use crate::segments::table::{SegmentTable, TableBlock};
use crate::segments::{checksum, read_segment, segment_name, segment_of_key, Location};
use crate::{BlobStore, MetaStore, StoreError};
use std::collections::{BTreeMap, HashMap};

/// What `check` found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckReport {
    /// Committed segments, in the blob store and inline.
    pub segments: u64,
    pub inline_segments: u64,
    /// Index entries checked, and their bytes.
    pub blocks: u64,
    pub bytes: u64,
    pub lists: u64,
    /// Segment objects no committed entry names (deleted by the sweep at the next start).
    pub orphan_segments: u64,
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// One thing found wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub at: String,
    pub detail: String,
}

impl Problem {
    pub(super) fn new(at: impl Into<String>, detail: impl Into<String>) -> Self {
        Problem { at: at.into(), detail: detail.into() }
    }
}

/// The tables of segments, read and checked.
#[derive(Default)]
pub(super) struct Survey {
    pub segments: BTreeMap<u64, Surveyed>,
}

/// One segment as read: its object's size (`None`: missing) and its blocks by offset (`None`:
/// no readable table).
pub(super) struct Surveyed {
    pub size: Option<u64>,
    pub blocks: Option<HashMap<u64, TableBlock>>,
}

impl Survey {
    /// Reads each of `segments` whole: its table, and every block against the table's checksum.
    pub async fn read(
        repo: &Repository,
        segments: impl IntoIterator<Item = u64>,
        problems: &mut Vec<Problem>,
    ) -> Result<Survey, StoreError> {
        let mut survey = Survey::default();
        for id in segments {
            let name = segment_name(id);
            let Some(bytes) = read_segment(&repo.blobs, &repo.meta, id).await? else {
                problems.push(Problem::new(&name, "missing"));
                survey.segments.insert(id, Surveyed { size: None, blocks: None });
                continue;
            };
            let blocks = match SegmentTable::parse(&bytes) {
                Err(why) => {
                    problems.push(Problem::new(&name, why));
                    None
                }
                Ok(table) => {
                    let mut blocks = HashMap::with_capacity(table.blocks.len());
                    for b in table.blocks {
                        let data = &bytes[b.offset as usize..b.offset as usize + b.len as usize];
                        if checksum(data) != b.check {
                            let why = format!("block {} at {}: bytes do not match its checksum", b.id, b.offset);
                            problems.push(Problem::new(&name, why));
                        }
                        blocks.insert(b.offset, b);
                    }
                    Some(blocks)
                }
            };
            survey.segments.insert(id, Surveyed { size: Some(bytes.len() as u64), blocks });
        }
        Ok(survey)
    }

    /// Whether the table of `at`'s segment names this block there; why not, if not.
    pub fn matches(&self, owner: &[u8], id: u64, at: &Location, tag: &[u8]) -> Result<(), String> {
        let surveyed = self.segments.get(&at.segment);
        match surveyed.map(|s| (s.size, &s.blocks)) {
            None => Err(format!("points into {}, which is not a committed segment", segment_name(at.segment))),
            Some((None, _)) => Err(format!("points into {}, which is missing", segment_name(at.segment))),
            Some((_, None)) => Err(format!("points into {}, whose table cannot be read", segment_name(at.segment))),
            Some((_, Some(blocks))) => match blocks.get(&at.offset) {
                Some(b) if b.owner == owner && b.id == id && b.len == at.len && b.check == at.check && b.tag == tag => {
                    Ok(())
                }
                Some(_) => Err(format!("{} names another block at offset {}", segment_name(at.segment), at.offset)),
                None => Err(format!("{} has no block at offset {}", segment_name(at.segment), at.offset)),
            },
        }
    }
}

/// An index entry, decoded: its owner, id, location and tag.
pub(super) fn index_entry(key: &[u8], value: &[u8]) -> Option<(Vec<u8>, u64, Location, Vec<u8>)> {
    let (owner, id) = keys::parse_block(key)?;
    let at = Location::from_bytes(value.get(..Location::ENCODED_LEN)?)?;
    Some((owner.to_vec(), id, at, value[Location::ENCODED_LEN..].to_vec()))
}

pub(super) fn describe(key: &[u8]) -> String {
    match keys::parse_block(key) {
        Some((owner, id)) => format!("block {id} of {}", String::from_utf8_lossy(owner)),
        None => format!("index entry {}", String::from_utf8_lossy(key)),
    }
}

impl Repository {
    /// Verifies every committed segment against the index: its table and its blocks'
    /// checksums; that every index entry points at a block its segment's table names, with
    /// the same identity, length, checksum and tag; that each segment's bookkeeping counts
    /// what the index names in it; and that every saved list loads.
    pub async fn check(&self) -> Result<CheckReport, StoreError> {
        let mut report = CheckReport::default();
        let infos: BTreeMap<u64, SegmentInfo> = self.segment_infos()?.into_iter().collect();
        let survey = Survey::read(self, infos.keys().copied(), &mut report.problems).await?;
        for (id, info) in &infos {
            if let Some(size) = survey.segments.get(id).and_then(|s| s.size) {
                if size != info.size {
                    report.problems.push(Problem::new(
                        segment_name(*id),
                        format!("{size} bytes, its bookkeeping says {}", info.size),
                    ));
                }
            }
        }
        report.inline_segments = infos.keys().filter(|id| *id & crate::segments::INLINE_BIT != 0).count() as u64;
        report.segments = infos.len() as u64 - report.inline_segments;

        let mut counted: HashMap<u64, SegmentInfo> = HashMap::new();
        for (key, value) in self.meta.scan(keys::BLOCKS)? {
            report.blocks += 1;
            let Some((owner, id, at, tag)) = index_entry(&key, &value) else {
                report.problems.push(Problem::new(describe(&key), "malformed index entry"));
                continue;
            };
            report.bytes += u64::from(at.len);
            let count = counted.entry(at.segment).or_default();
            count.live_bytes += u64::from(at.len);
            count.live_blocks += 1;
            if let Err(why) = survey.matches(&owner, id, &at, &tag) {
                report.problems.push(Problem::new(describe(&key), why));
            }
        }
        for (id, info) in &infos {
            let count = counted.get(id).copied().unwrap_or_default();
            if (count.live_bytes, count.live_blocks) != (info.live_bytes, info.live_blocks) {
                report.problems.push(Problem::new(
                    segment_name(*id),
                    format!(
                        "the index names {} blocks ({} bytes) in it, its bookkeeping says {} ({})",
                        count.live_blocks, count.live_bytes, info.live_blocks, info.live_bytes
                    ),
                ));
            }
        }
        for key in self.blobs.list("segments").await? {
            if segment_of_key(&key).is_some_and(|id| !infos.contains_key(&id)) {
                report.orphan_segments += 1;
            }
        }
        for name in lists::list_names(&self.meta)? {
            report.lists += 1;
            if let Err(e) = lists::load_list(&self.meta, &name) {
                report.problems.push(Problem::new(format!("list {name}"), e.to_string()));
            }
        }
        Ok(report)
    }
}
