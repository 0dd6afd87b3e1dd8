//! The client's side of a write in the improved construction (Sec. 5.4): the server rebuilds
//! H and C on its blocks; the client replays the same rebuild on checksums and seals the
//! results for the rebuilt slots' addresses and time.
//!
//! The replay is [`rebuild_level`] and [`encode`] themselves, run on slots of [`ROWS`]
//! elements: both only add slots and scale them by public constants, and `σ` is linear. A
//! server that skips, fakes or misplaces a rebuild holds slots that disagree with the sealed
//! checksums the client wrote, and the next audit of that level sees it ([`super::audit`]).

use super::checksum::{Checksum, OpenError, SealKey, SealedChecksum, ROWS};
use super::code::{encode, rebuild_level, Rebuild, Schedule};
use super::{Region, SlotAddress};

/// Why the client refuses what the server gave it for a replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("level {level} came with {got} sealed checksums, not {want}")]
    WrongCount { level: u32, got: usize, want: usize },
    #[error("the sealed checksum of {addr:?} (written at {time}) does not open: {error}")]
    Checksum { addr: SlotAddress, time: u64, error: OpenError },
    #[error("the write rebuilds {0:?}, not what was given")]
    WrongRebuild(Rebuild),
}

/// The sealed checksums of the level the write at `schedule.time` builds (Fig. 4 HAdd, on
/// checksums), from the sealed checksums of the filled levels below it (`below[i]` is level
/// `i`, as the server returned it) and the checksum of the group the write completes.
pub fn replay_level(
    schedule: &Schedule,
    below: &[Vec<SealedChecksum>],
    block: Checksum,
    key: &SealKey,
) -> Result<Vec<SealedChecksum>, ReplayError> {
    let level = match schedule.next_rebuild() {
        Rebuild::Level(level) if level as usize == below.len() => level,
        other => return Err(ReplayError::WrongRebuild(other)),
    };
    let mut opened = Vec::with_capacity(below.len());
    for (i, sealed) in below.iter().enumerate() {
        let i = i as u32;
        let time = schedule.level_time(i).expect("levels below the first empty one are filled");
        opened.push(open_region(key, Region::Level(i as u8), time, sealed, 2 << i, i)?);
    }
    let refs: Vec<&[u64]> = opened.iter().map(Vec::as_slice).collect();
    let rebuilt = rebuild_level(&refs, &block.rows(), ROWS, schedule.levels(), schedule.group_time());
    Ok(seal_region(key, Region::Level(level as u8), schedule.group_time() + 1, &rebuilt))
}

/// The sealed checksums of C rebuilt from U (CRebuild, on checksums) by the write at
/// `schedule.time`, or of the C built at initialisation (pass the schedule at time 0 and
/// `init`). `raw` are U's checksums, already authenticated by the caller, in slot order.
///
/// # Panics
/// When `raw` is not one checksum per slot of U (a caller's bug).
pub fn replay_coded(schedule: &Schedule, raw: &[Checksum], key: &SealKey, init: bool) -> Vec<SealedChecksum> {
    let time = if init { 0 } else { schedule.group_time() + 1 };
    replay_coded_at(schedule.log_capacity, time, raw, key)
}

/// C's sealed checksums (CRebuild on checksums) over U's checksums `raw` for a U of
/// `2^log_capacity` slots, sealed at `time`.
///
/// # Panics
/// When `raw` is not one checksum per slot of U (a caller's bug).
pub fn replay_coded_at(log_capacity: u32, time: u64, raw: &[Checksum], key: &SealKey) -> Vec<SealedChecksum> {
    assert_eq!(raw.len() as u64, 1 << log_capacity, "one checksum per slot of U");
    let rows: Vec<u64> = raw.iter().flat_map(|sum| sum.rows()).collect();
    seal_region(key, Region::Coded, time, &encode(&rows, ROWS, log_capacity, 0))
}

/// Opens every sealed checksum of a region, flat (`ROWS` elements per slot).
pub(crate) fn open_region(
    key: &SealKey,
    region: Region,
    time: u64,
    sealed: &[SealedChecksum],
    want: usize,
    level: u32,
) -> Result<Vec<u64>, ReplayError> {
    if sealed.len() != want {
        return Err(ReplayError::WrongCount { level, got: sealed.len(), want });
    }
    let mut rows = Vec::with_capacity(want * ROWS);
    for (index, s) in sealed.iter().enumerate() {
        let addr = SlotAddress { region, index: index as u64 };
        let sum = key.open(addr, time, s).map_err(|error| ReplayError::Checksum { addr, time, error })?;
        rows.extend(sum.rows());
    }
    Ok(rows)
}

pub(crate) fn seal_region(key: &SealKey, region: Region, time: u64, rows: &[u64]) -> Vec<SealedChecksum> {
    rows.chunks_exact(ROWS)
        .enumerate()
        .map(|(index, sum)| {
            let sum = Checksum::from_rows(sum.try_into().expect("ROWS elements"));
            key.seal(SlotAddress { region, index: index as u64 }, time, sum)
        })
        .collect()
}
