//! The client's PoR record, what it keeps of its log: O(1) bytes whatever the log holds.
//!
//! Layout: `vouchPR\x04`, the log state (`log_capacity:u32`, `group_log:u32`, `time:u64`,
//! `rolled:u8` (the schedule's window flag), U's root, the open group's checksum as two `u64`), the next fresh slot (`u64`), then two optional parts, each behind a flag byte: the batch in flight
//! (its state after, its next fresh slot, one index it writes) and the name whose new version
//! still needs its PoR copy (`len:u16`, UTF-8); then, behind a flag byte, the versions whose
//! slots a delete still owes ⊥ (the name as above, the file id's 16 bytes, `count:u32` and
//! each version's number as `u64`); then the generation of layouts (`u64`), the bounds of
//! older labels (`count:u8`, each `generation:u64`, `end:u64`), and, behind a flag byte, the
//! consolidation under way (`log_target:u8`, `moved:u64`, `freed:u64`, `count:u32`, each move
//! as `from`, `to`, `slots`, `u64` each); then the incarnations of H's and C's seals
//! (`base:u64`, `count:u16`, each end as `time:u64`, `refusals:u64`); then, behind a flag byte, the layout of the
//! copy owed (`version:u64`, `count:u32`, each run `first:u64`, `slots:u64`); then a SHA-256
//! of everything before it. All integers
//! little-endian. A record of layout 1 (`vouchPR\x01`: no grouping, no open group in the log
//! state) still reads, as a log of ungrouped writes, one of layout 2 (no window flag) as a log
//! whose epoch opened without a window, one of layouts 1 to 3 as owing no delete, one of
//! layouts 1 to 4 as never consolidated (generation 0), and one of layouts 1 to 5 as never
//! refused (incarnation 0) with no copy's layout owed.

use super::layout::{Layout, Run, MAX_RUNS};
use super::moves::{Move, MAX_MOVES};
use crate::codec;
use crate::envelope;
use crate::pdp::FileId;
use crate::por::checksum::{Checksum, Incarnations};
use crate::por::client::LogState;
use crate::por::code::Schedule;
use crate::Digest;

const MAGIC: &[u8; 8] = b"vouchPR\x07";

/// The record's bytes do not read: cut, damaged on disk, or of a layout this version does
/// not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the PoR record is damaged; the log's state is lost to this client")]
pub struct RecordDamaged;
/// Layout 1: log states without grouping.
const MAGIC_1: &[u8; 8] = b"vouchPR\x01";
/// Layout 2: log states without the window flag.
const MAGIC_2: &[u8; 8] = b"vouchPR\x02";
/// Layout 3: no delete owed.
const MAGIC_3: &[u8; 8] = b"vouchPR\x03";
/// Layout 4: never consolidated.
const MAGIC_4: &[u8; 8] = b"vouchPR\x04";
/// Layout 5: never refused.
const MAGIC_5: &[u8; 8] = b"vouchPR\x05";
/// Layout 6: a consolidation's relabels not counted (all of them are sent again).
const MAGIC_6: &[u8; 8] = b"vouchPR\x06";
/// Most points of refusal a record keeps (each after an applied batch): past
/// [`super::MAX_INCARNATION_ENDS`] the next PoR operation starts a new epoch, which folds them
/// all, so this is never reached but by a damaged record.
const MAX_ENDS: usize = 4096;
/// Most bounds a record keeps: their ends rise with their generations, and each is a power of
/// two.
const MAX_BOUNDS: usize = 64;

/// Versions of a PoR file a commit drops (`vouch rm`, `vouch prune`), whose slots are owed ⊥
/// once it is accepted: named before the commit, so that a crash before the ⊥ writes leaks
/// nothing (`super::delete`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deleting {
    pub name: String,
    pub file: FileId,
    pub versions: Vec<u64>,
}

/// Labels sealed before consolidation `generation` name no slot from `end` on: it moved every
/// copy there below `end`, and the slots there hold other data since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub generation: u64,
    pub end: u64,
}

/// A consolidation under way (`super::compact`), in the record from before its first write to
/// after its last, so that a crash leaves it to be finished, never half done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacting {
    /// U shrinks to `2^log_target` slots.
    pub log_target: u32,
    /// The copies' slots from past the target into free slots below it, ascending by `from`.
    pub moves: Vec<Move>,
    /// Slots of the moves, in order, written so far.
    pub moved: u64,
    /// Slots of those to free, in order, written ⊥ so far.
    pub freed: u64,
    /// Labels of the relabel step, in order, carried by batches the client saw applied. Only
    /// this count says a label is done: one the provider serves may come from a batch it
    /// refused and kept.
    pub relabeled: u64,
}

/// Where the log is, as far as the client is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogPoint {
    pub log: LogState,
    /// The first slot of U no file has used.
    pub next_slot: u64,
}

/// A batch sent whose answer the client has not seen: settled by asking the provider's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    pub after: LogPoint,
    /// One index the batch writes: read under `after` to check that the provider has it.
    pub probe: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PorRecord {
    pub at: LogPoint,
    pub in_flight: Option<InFlight>,
    /// A name whose new version may lack its PoR copy (its commit was about to be sent).
    pub copying: Option<String>,
    /// Versions whose slots may still owe ⊥ (their delete's commit was about to be sent).
    pub deleting: Option<Deleting>,
    /// The generation labels are sealed in now: the consolidations begun so far.
    pub generation: u64,
    /// What older labels may name, ascending (see [`PorRecord::label_is_current`]).
    pub bounds: Vec<Bound>,
    pub compacting: Option<Compacting>,
    /// The incarnations H's and C's seals are under: one more each time a sent batch settled
    /// as not applied.
    pub incarnations: Incarnations,
    /// Where the copy owed is written (`copying`'s version, by number), fixed before its
    /// first batch is sent: a batch refused after the provider saw its label is sent again
    /// the same, so that label becomes true rather than naming slots other data may take.
    pub copy_layout: Option<(u64, Layout)>,
}

impl PorRecord {
    pub fn new(log: LogState) -> PorRecord {
        PorRecord {
            at: LogPoint { log, next_slot: 0 },
            in_flight: None,
            copying: None,
            deleting: None,
            generation: 0,
            bounds: Vec::new(),
            compacting: None,
            incarnations: Incarnations::default(),
            copy_layout: None,
        }
    }

    /// A batch to `after` was seen applied: the log is there, and sealed checksums of times
    /// before its C are opened no more (their incarnations' ends fold).
    pub fn applied(&mut self, after: LogPoint) {
        self.at = after;
        self.in_flight = None;
        self.incarnations.fold_before(after.log.schedule.coded_time());
    }

    /// Whether a label sealed in `generation` for `layout` may still be believed: sealed by a    /// Whether a label sealed in `generation` for `layout` may still be believed: sealed by a
    /// generation this client reached, and naming no slot a later consolidation moved copies
    /// out of (those slots are free or hold other data since).
    pub fn label_is_current(&self, generation: u64, layout: &Layout) -> bool {
        let bound = self.bounds.iter().filter(|b| b.generation > generation).map(|b| b.end).min();
        generation <= self.generation && bound.is_none_or(|end| layout.end() <= end)
    }

    /// Consolidation `generation` kept U's slots below `end` only: older labels naming any slot
    /// from there on are stale. A bound at least as high is implied by it and dropped.
    pub fn bound_labels(&mut self, generation: u64, end: u64) {
        self.bounds.retain(|b| b.end < end);
        self.bounds.push(Bound { generation, end });
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_point(&mut out, &self.at);
        match &self.in_flight {
            None => out.push(0),
            Some(f) => {
                out.push(1);
                put_point(&mut out, &f.after);
                out.extend_from_slice(&f.probe.to_le_bytes());
            }
        }
        match &self.copying {
            None => out.push(0),
            Some(name) => {
                out.push(1);
                put_name(&mut out, name);
            }
        }
        match &self.deleting {
            None => out.push(0),
            Some(d) => {
                out.push(1);
                put_name(&mut out, &d.name);
                out.extend_from_slice(&d.file.0);
                out.extend_from_slice(&(d.versions.len() as u32).to_le_bytes());
                d.versions.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
            }
        }
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.push(self.bounds.len() as u8);
        for b in &self.bounds {
            out.extend_from_slice(&b.generation.to_le_bytes());
            out.extend_from_slice(&b.end.to_le_bytes());
        }
        match &self.compacting {
            None => out.push(0),
            Some(c) => {
                out.push(1);
                out.push(c.log_target as u8);
                out.extend_from_slice(&c.moved.to_le_bytes());
                out.extend_from_slice(&c.freed.to_le_bytes());
                out.extend_from_slice(&c.relabeled.to_le_bytes());
                out.extend_from_slice(&(c.moves.len() as u32).to_le_bytes());
                for m in &c.moves {
                    [m.from, m.to, m.slots].iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
                }
            }
        }
        out.extend_from_slice(&self.incarnations.base.to_le_bytes());
        out.extend_from_slice(&(self.incarnations.ends.len() as u16).to_le_bytes());
        for (end, count) in &self.incarnations.ends {
            out.extend_from_slice(&end.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        match &self.copy_layout {
            None => out.push(0),
            Some((version, layout)) => {
                out.push(1);
                out.extend_from_slice(&version.to_le_bytes());
                out.extend_from_slice(&(layout.runs.len() as u32).to_le_bytes());
                for run in &layout.runs {
                    out.extend_from_slice(&run.first.to_le_bytes());
                    out.extend_from_slice(&run.slots.to_le_bytes());
                }
            }
        }
        envelope::seal(MAGIC, &out)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<PorRecord, RecordDamaged> {
        let damaged = || RecordDamaged;
        let (layout, body) = envelope::open(bytes, &[MAGIC_1, MAGIC_2, MAGIC_3, MAGIC_4, MAGIC_5, MAGIC_6, MAGIC])
            .map_err(|_| damaged())?;
        let mut r = Reader { bytes: codec::Reader::new(body), layout: layout + 1 };
        let at = r.point().ok_or_else(damaged)?;
        let in_flight = match r.take(1).ok_or_else(damaged)?[0] {
            0 => None,
            1 => Some(InFlight { after: r.point().ok_or_else(damaged)?, probe: r.u64().ok_or_else(damaged)? }),
            _ => return Err(damaged()),
        };
        let copying = match r.take(1).ok_or_else(damaged)?[0] {
            0 => None,
            1 => Some(r.name().ok_or_else(damaged)?),
            _ => return Err(damaged()),
        };
        let deleting = match r.layout {
            ..=3 => None,
            _ => match r.take(1).ok_or_else(damaged)?[0] {
                0 => None,
                1 => Some(r.deleting().ok_or_else(damaged)?),
                _ => return Err(damaged()),
            },
        };
        let (generation, bounds, compacting) = match r.layout {
            ..=4 => (0, Vec::new(), None),
            _ => {
                let generation = r.u64().ok_or_else(damaged)?;
                let bounds = r.bounds().ok_or_else(damaged)?;
                let compacting = match r.take(1).ok_or_else(damaged)?[0] {
                    0 => None,
                    1 => Some(r.compacting().ok_or_else(damaged)?),
                    _ => return Err(damaged()),
                };
                (generation, bounds, compacting)
            }
        };
        let (incarnations, copy_layout) = match r.layout {
            ..=5 => (Incarnations::default(), None),
            _ => {
                let incarnations = r.incarnations().ok_or_else(damaged)?;
                let copy_layout = match r.take(1).ok_or_else(damaged)?[0] {
                    0 => None,
                    1 => Some(r.copy_layout().ok_or_else(damaged)?),
                    _ => return Err(damaged()),
                };
                (incarnations, copy_layout)
            }
        };
        if !r.bytes.is_empty() {
            return Err(damaged());
        }
        Ok(PorRecord { at, in_flight, copying, deleting, generation, bounds, compacting, incarnations, copy_layout })
    }
}

fn put_name(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
}

fn put_point(out: &mut Vec<u8>, p: &LogPoint) {
    p.log.schedule.put(out);
    out.extend_from_slice(&p.log.raw_root.0);
    p.log.pending.rows().iter().for_each(|r| out.extend_from_slice(&r.to_le_bytes()));
    out.extend_from_slice(&p.next_slot.to_le_bytes());
}

/// The record's own fields, over core's byte reader (`None` when the bytes run out).
struct Reader<'a> {
    bytes: codec::Reader<'a>,
    /// 1 to 6: from 2 log states carry their grouping and open group, from 3 the window
    /// flag, from 4 the delete owed, from 5 the consolidations, from 6 the incarnations and
    /// the owed copy's layout.
    layout: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        self.bytes.bytes(n).ok()
    }

    fn u32(&mut self) -> Option<u32> {
        self.bytes.u32_le().ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.bytes.u64_le().ok()
    }

    fn name(&mut self) -> Option<String> {
        let len = self.bytes.u16_le().ok()?;
        String::from_utf8(self.take(len as usize)?.to_vec()).ok()
    }

    fn deleting(&mut self) -> Option<Deleting> {
        let name = self.name()?;
        let file = FileId(self.take(16)?.try_into().ok()?);
        let count = self.u32()? as usize;
        // Each number takes 8 bytes: a count past what is left is damage, not an allocation.
        let versions =
            (0..count.min(self.bytes.remaining() / 8 + 1)).map(|_| self.u64()).collect::<Option<Vec<_>>>()?;
        (versions.len() == count).then_some(Deleting { name, file, versions })
    }

    fn bounds(&mut self) -> Option<Vec<Bound>> {
        let count = usize::from(self.take(1)?[0]);
        if count > MAX_BOUNDS {
            return None;
        }
        (0..count).map(|_| Some(Bound { generation: self.u64()?, end: self.u64()? })).collect()
    }

    fn incarnations(&mut self) -> Option<Incarnations> {
        let base = self.u64()?;
        let count = usize::from(self.bytes.u16_le().ok()?);
        if count > MAX_ENDS {
            return None;
        }
        let ends: Vec<(u64, u64)> = (0..count).map(|_| Some((self.u64()?, self.u64()?))).collect::<Option<_>>()?;
        let ascending = ends.windows(2).all(|w| w[0].0 < w[1].0) && ends.iter().all(|&(_, c)| c > 0);
        ascending.then_some(Incarnations { base, ends })
    }

    fn copy_layout(&mut self) -> Option<(u64, Layout)> {
        let version = self.u64()?;
        let count = self.u32()? as usize;
        if count == 0 || count > MAX_RUNS {
            return None;
        }
        let runs = (0..count).map(|_| Some(Run { first: self.u64()?, slots: self.u64()? })).collect::<Option<_>>()?;
        Some((version, Layout { runs }))
    }

    fn compacting(&mut self) -> Option<Compacting> {
        let log_target = u32::from(self.take(1)?[0]);
        let (moved, freed) = (self.u64()?, self.u64()?);
        let relabeled = if self.layout >= 7 { self.u64()? } else { 0 };
        let count = self.u32()? as usize;
        if count > MAX_MOVES {
            return None;
        }
        let moves = (0..count)
            .map(|_| Some(Move { from: self.u64()?, to: self.u64()?, slots: self.u64()? }))
            .collect::<Option<_>>()?;
        Some(Compacting { log_target, moves, moved, freed, relabeled })
    }

    fn point(&mut self) -> Option<LogPoint> {
        let grouped = self.layout >= 2;
        let schedule = Schedule::take(&mut self.bytes, grouped, self.layout >= 3)?;
        let raw_root = Digest(self.take(32)?.try_into().ok()?);
        let pending = if grouped { Checksum::from_canonical([self.u64()?, self.u64()?])? } else { Checksum::ZERO };
        let next_slot = self.u64()?;
        schedule.is_valid().then_some(LogPoint { log: LogState { schedule, raw_root, pending }, next_slot })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_any_damage_is_refused() {
        let schedule = Schedule { time: 77, rolled: true, ..Schedule::new(5, 4) };
        let pending = Checksum::from_canonical([5, 6]).unwrap();
        let log = LogState { schedule, raw_root: Digest([3; 32]), pending };
        let after = LogPoint { log: LogState { raw_root: Digest([4; 32]), ..log }, next_slot: 12 };
        let records = [
            PorRecord::new(log),
            PorRecord {
                at: LogPoint { log, next_slot: 9 },
                in_flight: Some(InFlight { after, probe: 10 }),
                copying: Some("photos/é.jpg".into()),
                ..PorRecord::new(log)
            },
            PorRecord {
                deleting: Some(Deleting { name: "old.bin".into(), file: FileId([7; 16]), versions: vec![1, 3, 4] }),
                ..PorRecord::new(log)
            },
            PorRecord {
                generation: 3,
                bounds: vec![Bound { generation: 1, end: 64 }, Bound { generation: 3, end: 256 }],
                compacting: Some(Compacting {
                    log_target: 8,
                    moves: vec![Move { from: 300, to: 5, slots: 9 }, Move { from: 320, to: 40, slots: 2 }],
                    moved: 9,
                    freed: 0,
                    relabeled: 17,
                }),
                ..PorRecord::new(log)
            },
            PorRecord {
                incarnations: Incarnations { base: 4, ends: vec![(7, 2), (12, 1)] },
                copy_layout: Some((3, Layout { runs: vec![Run { first: 4, slots: 2 }, Run { first: 90, slots: 7 }] })),
                ..PorRecord::new(log)
            },
        ];
        for record in records {
            let bytes = record.to_bytes();
            assert_eq!(PorRecord::from_bytes(&bytes).unwrap(), record);
            for cut in 0..bytes.len() {
                assert!(PorRecord::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
            }
            for at in 0..bytes.len() {
                let mut bad = bytes.clone();
                bad[at] ^= 1;
                assert!(PorRecord::from_bytes(&bad).is_err(), "byte {at} flipped");
            }
        }
    }

    #[test]
    fn a_record_of_layout_6_reads_with_no_relabel_counted() {
        const FREED: u64 = 0x5a17_c0de_0000_0001;
        let log = LogState { schedule: Schedule::new(5, 4), raw_root: Digest([3; 32]), pending: Checksum::ZERO };
        let compacting = Compacting {
            log_target: 6,
            moves: vec![Move { from: 70, to: 2, slots: 3 }],
            moved: 3,
            freed: FREED,
            relabeled: 0,
        };
        let record = PorRecord { generation: 2, compacting: Some(compacting), ..PorRecord::new(log) };
        let bytes = record.to_bytes();
        let mut body = envelope::open(&bytes, &[MAGIC]).unwrap().1.to_vec();
        // Layout 6: the same without the count of relabels, which follows `freed`.
        let at = body.windows(8).position(|w| w == FREED.to_le_bytes()).unwrap() + 8;
        body.drain(at..at + 8);
        let old = envelope::seal(MAGIC_6, &body);
        assert_eq!(PorRecord::from_bytes(&old).unwrap(), record);
    }

    #[test]
    fn a_record_of_layout_5_reads_as_never_refused() {
        let log = LogState { schedule: Schedule::new(5, 4), raw_root: Digest([3; 32]), pending: Checksum::ZERO };
        let record = PorRecord { generation: 2, copying: Some("a".into()), ..PorRecord::new(log) };
        let bytes = record.to_bytes();
        // Layout 5: the same without the incarnations (base, count) and the copy's flag.
        let mut body = bytes[..bytes.len() - 32 - 11].to_vec();
        body[..8].copy_from_slice(MAGIC_5);
        let old = envelope::seal(body[..8].try_into().unwrap(), &body[8..]);
        assert_eq!(PorRecord::from_bytes(&old).unwrap(), record);
    }

    #[test]
    fn a_record_of_layout_4_reads_as_never_consolidated() {
        let log = LogState { schedule: Schedule::new(5, 4), raw_root: Digest([3; 32]), pending: Checksum::ZERO };
        let record = PorRecord { copying: Some("a".into()), ..PorRecord::new(log) };
        let bytes = record.to_bytes();
        // Layout 4: the same without the generation, the bounds' count and the flag byte (and
        // layout 6's incarnations and copy flag, 11 bytes).
        let mut body = bytes[..bytes.len() - 32 - 10 - 11].to_vec();
        body[..8].copy_from_slice(MAGIC_4);
        let old = envelope::seal(body[..8].try_into().unwrap(), &body[8..]);
        assert_eq!(PorRecord::from_bytes(&old).unwrap(), record);
    }

    #[test]
    fn a_label_is_current_unless_a_later_consolidation_moved_copies_from_where_it_points() {
        let log = LogState { schedule: Schedule::new(5, 4), raw_root: Digest([3; 32]), pending: Checksum::ZERO };
        let mut record = PorRecord { generation: 3, ..PorRecord::new(log) };
        record.bound_labels(1, 256);
        record.bound_labels(2, 1024);
        record.bound_labels(3, 64);
        // The bound of 3 (64) implies the others for labels before 1 and 2; 1024 is dropped
        // (a label of generation 1 must end by 64 anyway), so is 256.
        assert_eq!(record.bounds, vec![Bound { generation: 3, end: 64 }]);
        let upto = |end: u64| Layout { runs: vec![super::super::layout::Run { first: end - 4, slots: 4 }] };
        assert!(record.label_is_current(0, &upto(64)));
        assert!(!record.label_is_current(2, &upto(65)), "sealed before 3, past its end");
        assert!(record.label_is_current(3, &upto(5000)), "sealed in 3: no later bound");
        assert!(!record.label_is_current(4, &upto(8)), "a generation this client never reached");
        record.generation = 5;
        record.bound_labels(5, 512);
        assert_eq!(record.bounds.len(), 2);
        assert!(record.label_is_current(4, &upto(512)) && !record.label_is_current(4, &upto(513)));
        assert!(!record.label_is_current(1, &upto(100)), "3's bound still holds before it");
    }

    #[test]
    fn a_record_of_layout_3_reads_as_owing_no_delete() {
        let log = LogState { schedule: Schedule::new(5, 4), raw_root: Digest([3; 32]), pending: Checksum::ZERO };
        let record = PorRecord { copying: Some("a".into()), ..PorRecord::new(log) };
        let bytes = record.to_bytes();
        // Layout 3: the same without the delete's flag byte and what follows it.
        let mut body = bytes[..bytes.len() - 33 - 10 - 11].to_vec();
        body[..8].copy_from_slice(MAGIC_3);
        let old = envelope::seal(body[..8].try_into().unwrap(), &body[8..]);
        assert_eq!(PorRecord::from_bytes(&old).unwrap(), record);
    }

    #[test]
    fn a_record_of_layout_1_reads_as_an_ungrouped_log() {
        let mut body = MAGIC_1.to_vec();
        body.extend_from_slice(&5u32.to_le_bytes());
        body.extend_from_slice(&77u64.to_le_bytes());
        body.extend_from_slice(&[3; 32]);
        body.extend_from_slice(&9u64.to_le_bytes());
        body.extend_from_slice(&[0, 0]);
        let bytes = envelope::seal(MAGIC_1, &body[8..]);
        let schedule = Schedule { time: 77, ..Schedule::new(5, 0) };
        let log = LogState { schedule, raw_root: Digest([3; 32]), pending: Checksum::ZERO };
        let want = PorRecord { at: LogPoint { log, next_slot: 9 }, ..PorRecord::new(log) };
        assert_eq!(PorRecord::from_bytes(&bytes).unwrap(), want);
    }
}
