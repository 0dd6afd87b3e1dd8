//! A version's PoR copy made from the provider's block store a batch at a time: its blocks are
//! read back (verified, as `get` reads them) one request's worth of slots at a time, so that
//! the client's memory for a copy stays about one batch at any file size.

use super::PorSession;
use super::{sealed_label, Batch, PorKeys, REQUEST_SLOTS};
use crate::error::ClientError;
use crate::ledger::Committing;
use crate::reads::Reads;
use std::ops::Range;
use vouch_core::namespace::VersionRecord;
use vouch_core::por::copy::{self, TaggedData};
use vouch_core::por::layout::{self, Allocator, Layout};
use vouch_core::por::record::PorRecord;

impl PorSession<'_> {
    /// The copy of `version` of `name`: into `again` when given (a copy whose label's batch
    /// may have been seen by the provider, written again where that label points, see
    /// `PorSession::settle_copy`), else into free slots first, then fresh ones. Under
    /// the commit lock: the version read is the committing view's.
    pub(super) async fn copy_streamed(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &mut PorRecord,
        name: &str,
        version: &VersionRecord,
        again: Option<Layout>,
    ) -> Result<(), ClientError> {
        if version.len == 0 {
            return Ok(());
        }
        let list = self.block_list(name, version).await?;
        let counts: Vec<u64> = list.iter().map(|b| copy::block_slots(b.tag.len(), u64::from(b.len))).collect();
        let (layout, starts, into_free) = match again {
            Some(layout) => {
                let ids: Vec<(usize, u64)> = counts.iter().copied().enumerate().collect();
                let at = layout.starts(&ids).ok_or_else(|| {
                    ClientError::State(format!(
                        "the PoR record's layout for version {} of {name} does not fit its blocks; the record is damaged",
                        version.number
                    ))
                })?;
                (layout, (0..counts.len()).map(|i| at[&i]).collect::<Vec<u64>>(), false)
            }
            None => {
                let mut alloc = self.allocator(record, counts.iter().sum()).await?;
                let (layout, starts) = match layout::whole(&counts, &mut alloc) {
                    Some(placed) => placed,
                    None => layout::whole(&counts, &mut Allocator::fresh(record.at.next_slot))
                        .expect("fresh slots: one run"),
                };
                (layout, starts, true)
            }
        };
        let label = sealed_label(keys, version, &layout, record.generation);
        let groups = groups(&counts);
        let mut offset = 0u64;
        for (i, group) in groups.iter().enumerate() {
            let expected = &list[group.clone()];
            let bytes: u64 = expected.iter().map(|b| u64::from(b.len)).sum();
            let range = offset..offset + bytes;
            let mut blocks = Vec::with_capacity(group.len());
            Reads::committed(self.client, commit)
                .read_blocks(name, Some(version.number), Some(range.clone()), |_, chunk| {
                    blocks.extend(chunk.blocks.iter().map(|b| TaggedData {
                        nonce: b.nonce,
                        tag: b.tag.to_vec(),
                        data: b.data.clone(),
                    }));
                    Ok(())
                })
                .await?;
            offset = range.end;
            // The read was checked against the version: its blocks are the list's, or the
            // ranges here are wrong.
            if blocks.iter().map(|b| b.nonce).ne(expected.iter().map(|b| b.nonce)) {
                return Err(ClientError::State(format!(
                    "bytes {range:?} of version {} of {name} read as other blocks than its list has there",
                    version.number
                )));
            }
            let (writes, slots) = copy::lay_out(&starts[group.clone()], &blocks);
            let last = i + 1 == groups.len();
            let batch = Batch {
                writes,
                slots,
                labels: if last { vec![label.clone()] } else { Vec::new() },
                into_free,
                copy: last.then(|| (version.number, layout.clone())),
            };
            self.batch(keys, record, batch).await?;
        }
        record.copy_layout = None;
        Ok(())
    }
}

/// The blocks (by their slot counts, in order) in runs of whole blocks of at most
/// [`REQUEST_SLOTS`] slots each (a single larger block alone).
fn groups(counts: &[u64]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut slots) = (0, 0u64);
    for (i, &count) in counts.iter().enumerate() {
        if i > start && slots + count > REQUEST_SLOTS as u64 {
            out.push(start..i);
            (start, slots) = (i, 0);
        }
        slots += count;
    }
    if start < counts.len() {
        out.push(start..counts.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_hold_whole_blocks_within_a_request() {
        assert_eq!(groups(&[]), Vec::<Range<usize>>::new());
        assert_eq!(groups(&[3]), vec![0..1]);
        let full = REQUEST_SLOTS as u64;
        assert_eq!(groups(&[full - 1, 1, 1]), vec![0..2, 2..3]);
        assert_eq!(groups(&[full + 5, 2]), vec![0..1, 1..2], "a block past a request goes alone");
        let many = vec![257; 100];
        let got = groups(&many);
        assert!(got.iter().all(|g| g.len() as u64 * 257 <= full));
        assert_eq!(got.iter().map(|g| g.len()).sum::<usize>(), 100);
        assert!(got.windows(2).all(|w| w[0].end == w[1].start));
    }
}
