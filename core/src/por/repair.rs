//! Repair: U recovered from C and the levels of H (Sec. 4, Lemma 1), checked slot by slot.
//!
//! C is the code of U as of its last rebuild; each filled level is the code of the writes
//! made since, oldest level first. So U now is: C decoded, then every filled level decoded,
//! from the largest (oldest) to level 0, each of its slots written at the U index its header
//! names (every slot of the log starts with its U index + 1, see [`super::heap`]). Any half of
//! a region's slots decode it; a slot counts only when it matches its sealed checksum, so the
//! provider's damage or lies erase slots but never enter the result.
//!
//! The recovered U is then checked against U's current sealed checksums and the client's
//! root ([`super::client::verify_read`]) before anything is written back.

use super::checksum::{ChecksumKey, SealKey, SealedChecksum};
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
}

/// The slots of a region that match their sealed checksums (at the region's write `time`);
/// the others, and those lost, are `None`.
pub fn checked_slots<'a>(
    read: &'a RegionRead,
    region: Region,
    time: u64,
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Vec<Option<&'a [u64]>> {
    read.slots
        .iter()
        .zip(&read.sealed)
        .enumerate()
        .map(|(index, (slot, sealed))| {
            let slot = slot.as_deref().filter(|s| s.len() == sums.width())?;
            let addr = SlotAddress { region, index: index as u64 };
            (seal.open(addr, time, sealed).ok() == Some(sums.checksum(slot))).then_some(slot)
        })
        .collect()
}

/// U now (flat), from C and the filled levels (`levels[i]` is the `i`-th filled level,
/// smallest first, as [`Schedule::filled_levels`] lists them).
pub fn recover_raw(
    schedule: &Schedule,
    coded: &RegionRead,
    levels: &[RegionRead],
    seal: &SealKey,
    sums: &ChecksumKey,
) -> Result<Vec<u64>, RepairError> {
    let width = sums.width();
    let k = schedule.log_capacity;
    let filled: Vec<u32> = schedule.filled_levels().collect();
    if levels.len() != filled.len() {
        return Err(RepairError::Shape(Region::Level(filled.len() as u8)));
    }
    let decode_region = |read: &RegionRead, region: Region, slots: u64, time: u64, start: u64| {
        if read.slots.len() as u64 != slots || read.sealed.len() as u64 != slots {
            return Err(RepairError::Shape(region));
        }
        let checked = checked_slots(read, region, time, seal, sums);
        decode(&checked, width, k, start).map_err(|error| RepairError::Decode { region, error })
    };
    let mut raw = decode_region(coded, Region::Coded, 2 << k, schedule.coded_time(), 0)?;
    for (&level, read) in filled.iter().zip(levels).rev() {
        let region = Region::Level(level as u8);
        let (start, time) = (schedule.level_start(level), schedule.level_time(level));
        let blocks = decode_region(read, region, 2 << level, time.expect("filled"), start.expect("filled"))?;
        for slot in blocks.chunks_exact(width) {
            let index = slot[0].wrapping_sub(1);
            if index >= 1 << k {
                return Err(RepairError::Header { region, index });
            }
            raw[index as usize * width..(index as usize + 1) * width].copy_from_slice(slot);
        }
    }
    Ok(raw)
}
