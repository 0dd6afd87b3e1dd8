//! Repair: U recovered from C and the levels of H (Sec. 4, Lemma 1), checked slot by slot.
//!
//! C is the code of U as of its last rebuild; each filled level is the code of the writes
//! made since, oldest level first, and the open group holds the latest (Sec. 6.1). So U now
//! is: C decoded, then every filled level decoded, from the largest (oldest) to level 0, then
//! the open group, each slot written at the U index its header names (every slot of the log
//! starts with its U index + 1, see [`super::heap`]; a ⊥ write's header is 0 and is skipped).
//! The open group is not coded: the client checks the provider's copy of it against its own
//! checksum of the group ([`staged_matches`]). Any half of
//! a region's slots decode it; a slot counts only when it matches its sealed checksum, so the
//! provider's damage or lies erase slots but never enter the result.
//!
//! A client gathers each region a page at a time ([`Gathered`]), keeping only slots that match
//! their checksums, and stops reading a region once half of it matched.
//!
//! The recovered U is then checked against U's current sealed checksums and the client's
//! root ([`super::client::verify_read`]) before anything is written back.

use super::checksum::{Checksum, ChecksumKey, SealKey, SealedChecksum};
use super::code::Schedule;
use super::decode::{decode, DecodeError};
use super::{Region, SlotAddress};

/// A region (a level or C) as the provider has it: each slot, or `None` where its bytes are
/// lost, and the sealed checksums.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionRead {
    pub slots: Vec<Option<Vec<u64>>>,
    pub sealed: Vec<SealedChecksum>,
}

/// Why U cannot be recovered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepairError {
    #[error("{region:?} cannot be decoded: {error}")]
    Decode { region: Region, error: DecodeError },
    #[error("{0:?} was given with the wrong number of slots or checksums")]
    Shape(Region),
    #[error("a recovered slot of {region:?} names U index {index}, beyond U")]
    Header { region: Region, index: u64 },
    #[error("the open group's writes were given as {got} elements, not {want}")]
    Staged { got: usize, want: usize },
}

/// A region's slots as the client gathers them, a page at a time: a slot is kept only when it
/// matches its sealed checksum. Any half of a region decodes it, so a client reads pages
/// until half match (X first: when nothing is lost, Y is never read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gathered {
    region: Region,
    time: u64,
    slots: Vec<Option<Vec<u64>>>,
    matched: u64,
}

impl Gathered {
    /// Nothing gathered yet of `region`, written at `time`, of `slots` slots.
    pub fn new(region: Region, time: u64, slots: u64) -> Gathered {
        Gathered { region, time, slots: vec![None; slots as usize], matched: 0 }
    }

    /// Slots that matched so far.
    pub fn matched(&self) -> u64 {
        self.matched
    }

    /// Whether enough slots matched to decode the region.
    pub fn decodable(&self) -> bool {
        2 * self.matched >= self.slots.len() as u64
    }

    /// Adds `page`, the provider's slots `first..` with their sealed checksums.
    pub fn add(&mut self, first: u64, page: RegionRead, seal: &SealKey, sums: &ChecksumKey) -> Result<(), RepairError> {
        let end = first.checked_add(page.slots.len() as u64).filter(|&end| end <= self.slots.len() as u64);
        if page.slots.len() != page.sealed.len() || end.is_none() {
            return Err(RepairError::Shape(self.region));
        }
        for (i, (slot, sealed)) in page.slots.into_iter().zip(&page.sealed).enumerate() {
            let index = first + i as u64;
            let Some(slot) = slot.filter(|s| s.len() == sums.region_width(self.region)) else { continue };
            let addr = SlotAddress { region: self.region, index };
            if seal.open(addr, self.time, sealed).ok() == Some(sums.checksum(&slot)) {
                let held = &mut self.slots[index as usize];
                self.matched += u64::from(held.is_none());
                *held = Some(slot);
            }
        }
        Ok(())
    }

    /// The region's blocks, from the slots gathered (the first at `start`, in a log of `2^k`).
    fn decode(&self, width: usize, log_capacity: u32, start: u64) -> Result<Vec<u64>, RepairError> {
        let slots: Vec<Option<&[u64]>> = self.slots.iter().map(Option::as_deref).collect();
        decode(&slots, width, log_capacity, start).map_err(|error| RepairError::Decode { region: self.region, error })
    }
}

/// Every region repair reads, with its write time and slot count, in the order
/// [`recover_gathered`] takes them: C, then the filled levels smallest first.
pub fn regions(schedule: &Schedule) -> Vec<(Region, u64, u64)> {
    let coded = (Region::Coded, schedule.coded_time(), 2 << schedule.log_capacity);
    let levels = schedule
        .filled_levels()
        .map(|level| (Region::Level(level as u8), schedule.level_time(level).expect("filled"), 2u64 << level));
    std::iter::once(coded).chain(levels).collect()
}

/// Whether `staged` (the provider's writes of the open group, flat) are those the client's
/// checksum of the group (`pending`, [`super::client::LogState::pending`]) describes.
pub fn staged_matches(schedule: &Schedule, pending: Checksum, staged: &[u64], sums: &ChecksumKey) -> bool {
    let width = sums.slot_width();
    let sum = staged.chunks_exact(width).enumerate().fold(Checksum::ZERO, |acc, (j, s)| acc + sums.checksum_at(j, s));
    staged.len() as u64 == schedule.pending() * width as u64 && sum == pending
}

/// U now (flat), from C and the filled levels as gathered (`levels[i]` is the `i`-th filled
/// level, smallest first, as [`Schedule::filled_levels`] lists them), and the writes of the
/// open group (`staged`, flat; checked by the caller with [`staged_matches`]). `width` is a
/// slot's.
pub fn recover_gathered(
    schedule: &Schedule,
    coded: &Gathered,
    levels: &[Gathered],
    staged: &[u64],
    width: usize,
) -> Result<Vec<u64>, RepairError> {
    let k = schedule.log_capacity;
    let expected = regions(schedule);
    let given = std::iter::once(coded).chain(levels);
    if expected.len() != 1 + levels.len()
        || expected
            .iter()
            .zip(given)
            .any(|(&(region, time, slots), g)| (g.region, g.time, g.slots.len() as u64) != (region, time, slots))
    {
        return Err(RepairError::Shape(coded.region));
    }
    let want = schedule.pending() as usize * width;
    if staged.len() != want {
        return Err(RepairError::Staged { got: staged.len(), want });
    }
    let mut raw = coded.decode(width, k, 0)?;
    let filled: Vec<u32> = schedule.filled_levels().collect();
    let group = width << schedule.group_log;
    for (&level, gathered) in filled.iter().zip(levels).rev() {
        let blocks = gathered.decode(group, schedule.levels(), schedule.level_start(level).expect("filled"))?;
        replay_onto(&mut raw, &blocks, width, k, gathered.region)?;
    }
    replay_onto(&mut raw, staged, width, k, Region::Raw)?;
    Ok(raw)
}

/// Writes each of `slots` at the U index its header names; ⊥ writes (header 0) are skipped.
fn replay_onto(raw: &mut [u64], slots: &[u64], width: usize, k: u32, region: Region) -> Result<(), RepairError> {
    for slot in slots.chunks_exact(width) {
        let Some(index) = slot[0].checked_sub(1) else { continue };
        if index >= 1 << k {
            return Err(RepairError::Header { region, index });
        }
        raw[index as usize * width..(index as usize + 1) * width].copy_from_slice(slot);
    }
    Ok(())
}

/// U now (flat), from whole reads of C and the filled levels (`levels[i]` is the `i`-th
/// filled level, smallest first), and the open group's writes (`staged`, checked).
pub fn recover_raw(
    schedule: &Schedule,
    coded: &RegionRead,
    levels: &[RegionRead],
    staged: &[u64],
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<Vec<u64>, RepairError> {
    let expected = regions(schedule);
    if levels.len() + 1 != expected.len() {
        return Err(RepairError::Shape(Region::Level(levels.len() as u8)));
    }
    let mut gathered = Vec::with_capacity(expected.len());
    for (&(region, time, slots), read) in expected.iter().zip(std::iter::once(coded).chain(levels)) {
        if read.slots.len() as u64 != slots {
            return Err(RepairError::Shape(region));
        }
        let mut g = Gathered::new(region, time, slots);
        g.add(0, read.clone(), seal, sums)?;
        gathered.push(g);
    }
    let (coded, levels) = gathered.split_first().expect("C is first");
    recover_gathered(schedule, coded, levels, staged, sums.slot_width())
}
