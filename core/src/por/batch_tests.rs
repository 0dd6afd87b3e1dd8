//! Batches of writes between [`super::client`] and [`super::provider`]: growth, epochs,
//! audits and reads through U; then a provider that lies in its context or its reads.

use super::audit::{parts, picks, verify_part, AuditFailure};
use super::checksum::{ChecksumKey, SealKey, SealedChecksum};
use super::client::{
    plan, verify_read, write, LogState, RawRead, ReadError, WriteContext, WriteError, WritePlan, Written,
};
use super::code::encode;
use super::decode::DecodeError;
use super::field::P;
use super::provider::{ProviderError, ProviderLog};
use super::repair::{recover_gathered, recover_raw, regions, Gathered, RegionRead, RepairError};
use super::replay::ReplayError;
use super::Region;

const WIDTH: usize = 4;

pub(super) struct Setup {
    pub state: LogState,
    pub provider: ProviderLog,
    pub seal: SealKey,
    pub sums: ChecksumKey,
    /// Whether batches flush the open group.
    pub flush: bool,
}

fn setup(log_capacity: u32) -> Setup {
    setup_grouped(log_capacity, 0)
}

/// A log of `2^log_capacity` slots whose blocks of H are groups of `2^group_log`.
pub(super) fn setup_grouped(log_capacity: u32, group_log: u32) -> Setup {
    let seal = SealKey::new(&[3; 32]);
    let (state, coded) = LogState::new(log_capacity, group_log, &seal);
    let provider = ProviderLog::new(log_capacity, group_log, WIDTH, coded).unwrap();
    let sums = ChecksumKey::grouped(&[4; 32], WIDTH, group_log);
    Setup { state, provider, seal, sums, flush: false }
}

pub(super) fn slot(index: u64, round: u64) -> Vec<u64> {
    let mut out = vec![index + 1];
    out.extend(
        (0..WIDTH as u64 - 1).map(|e| (round * 7919 + index * 104_729 + e).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8),
    );
    out
}

impl Setup {
    /// The client's side up to the upload: plan, the provider's context, the replay.
    pub fn prepare(
        &self,
        writes: &[u64],
        round: u64,
    ) -> (WritePlan, Vec<u64>, Result<Written, WriteError>, WriteContext) {
        let plan = plan(&self.state, writes, self.flush).unwrap();
        let slots: Vec<u64> = writes.iter().flat_map(|&i| slot(i, round)).collect();
        let context = self.provider.context(&plan).unwrap();
        let written = write(&self.state, &plan, &context, writes, &slots, &self.seal, &self.sums);
        (plan, slots, written, context)
    }

    pub fn batch(&mut self, writes: &[u64], round: u64) {
        let (plan, slots, written, _) = self.prepare(writes, round);
        let written = written.unwrap();
        self.provider.apply(&plan, writes, &slots, &written).unwrap();
        self.state = written.state;
    }

    /// Every slot of every part challenged.
    pub fn audit_all(&self) -> Vec<(Region, Result<(), AuditFailure>)> {
        parts(&self.state.schedule)
            .into_iter()
            .map(|part| {
                let chosen = picks(&[5; 32], &part, part.slots as usize);
                let proof = self.provider.prove(&part, &chosen).expect("the provider holds every part");
                (part.region, verify_part(&self.seal, &self.sums, &part, &chosen, &proof))
            })
            .collect()
    }

    pub fn read(&self, indices: &[u64]) -> Result<(), ReadError> {
        verify_read(&self.state, indices, &self.provider.read(indices).unwrap(), &self.seal, &self.sums)
    }
}

#[test]
fn batches_grow_u_roll_epochs_and_pass_every_audit() {
    let mut s = setup(1);
    let mut next = 0u64;
    let mut rounds = 0;
    for size in [1usize, 3, 2, 5, 1, 8, 4, 7, 16, 2, 9, 1, 1, 30] {
        rounds += 1;
        // Fresh slots, then an overwrite of an older one (a ⊥ or an edit in place).
        let mut writes: Vec<u64> = (next..next + size as u64).collect();
        next += size as u64;
        if next > 4 {
            writes.push(next / 3);
        }
        s.batch(&writes, rounds);
        assert_eq!(s.state.schedule, s.provider.schedule());
        assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()), "round {rounds}: {:?}", s.audit_all());
        let all: Vec<u64> = (0..s.state.schedule.capacity()).collect();
        assert_eq!(s.read(&all), Ok(()));
    }
    assert_eq!(s.state.schedule.log_capacity, 7, "U grew from 2 slots to hold {next}");
    // After the epochs, C is the code of U as of its last rebuild and H the rest.
    assert!(s.state.schedule.coded_time() > 0);
}

#[test]
fn c_is_the_code_of_u_after_an_epoch_and_in_use_after_the_window() {
    let mut s = setup(2);
    for round in 0..4 {
        s.batch(&[round], round + 1);
    }
    assert_eq!(s.state.schedule.time % 4, 0);
    // The window: the new C is built, while the old C and the epoch's writes (level 2) are in use.
    let code = encode(&s.provider.raw, WIDTH, 2, 0);
    assert_eq!(s.provider.coded_next.as_ref().map(|c| &c.slots), Some(&code));
    assert_ne!(s.provider.coded.slots, code);
    let old_coded = s.provider.coded.clone();
    assert!(s.state.schedule.in_window());
    assert_eq!(s.state.schedule.filled_levels().collect::<Vec<_>>(), [2]);
    assert_eq!(s.audit_all().iter().map(|(r, _)| *r).collect::<Vec<_>>(), [Region::Level(2), Region::Coded]);
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()));
    // U is recoverable in the window from the old C, level 2 and the writes since.
    s.batch(&[2], 5);
    assert!(s.state.schedule.in_window());
    assert_eq!(recover(&s).as_deref(), Ok(s.provider.raw.as_slice()));
    // The window is half an epoch: then the new C is in use and level 2 is gone.
    s.batch(&[3], 6);
    assert!(!s.state.schedule.in_window());
    assert_eq!(s.provider.coded.slots, code);
    assert!(s.provider.coded_next.is_none() && s.provider.levels[2].is_none());
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()));
    assert_eq!(recover(&s).as_deref(), Ok(s.provider.raw.as_slice()));
    // A provider that keeps serving the old C after the window is caught by the audit of C.
    let built = std::mem::replace(&mut s.provider.coded, old_coded);
    assert!(matches!(s.audit_all().last(), Some((Region::Coded, Err(_)))));
    s.provider.coded = built;
}

#[test]
fn a_provider_that_ends_the_window_early_is_caught() {
    // Two epochs, so that the old C holds data.
    let mut s = setup(2);
    for round in 0..8 {
        s.batch(&[round % 4], round + 1);
    }
    assert!(s.state.schedule.in_window() && s.state.schedule.coded_time() > 0);
    let honest = s.provider.clone();
    let failed =
        |s: &Setup| -> Vec<Region> { s.audit_all().into_iter().filter(|(_, r)| r.is_err()).map(|(r, _)| r).collect() };
    // The new C served in place of the old: its checksums open under another write time.
    s.provider.coded = honest.coded_next.clone().unwrap();
    assert_eq!(failed(&s), [Region::Coded]);
    // The epoch's level dropped and made up of zeros: its audit fails.
    s.provider = honest.clone();
    s.provider.levels[2].as_mut().unwrap().slots.fill(0);
    assert_eq!(failed(&s), [Region::Level(2)]);
    // The old C dropped once the new one is built: repair in the window finds nothing of C.
    s.provider = honest;
    s.provider.coded.slots.iter_mut().for_each(|e| *e = (*e + 1) % P);
    assert!(matches!(recover(&s), Err(RepairError::Decode { region: Region::Coded, .. })));
}

#[test]
fn a_batch_across_two_epochs_ends_in_a_window_over_the_c_it_built_first() {
    // 8 slots in groups of 2: one write short of the epoch's end, then 8 writes and a ⊥
    // write cross two epochs' ends, and end in the second's window.
    let mut s = setup_grouped(3, 1);
    s.batch(&(0..7).collect::<Vec<_>>(), 1);
    s.flush = true;
    let (plan, slots, written, _) = s.prepare(&(0..8).collect::<Vec<_>>(), 2);
    let written = written.unwrap();
    let schedule = written.state.schedule;
    assert_eq!((schedule.time, schedule.in_window(), schedule.coded_time()), (16, true, 4));
    // Both Cs travel: the one in use (the first epoch's end) and the one being built.
    assert_eq!(written.coded.len(), 2);
    s.provider.apply(&plan, &(0..8).collect::<Vec<_>>(), &slots, &written).unwrap();
    s.state = written.state;
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()), "{:?}", s.audit_all());
    assert_eq!(recover(&s).as_deref(), Ok(s.provider.raw.as_slice()));
    // Without the first C's checksums the batch does not fit.
    let (plan, slots, written, _) = s.prepare(&[1], 3);
    let mut written = written.unwrap();
    written.coded.push(vec![]);
    assert_eq!(s.provider.apply(&plan, &[1], &slots, &written), Err(ProviderError::Batch));
}

#[test]
fn a_batch_sends_only_the_levels_it_leaves_filled() {
    let mut s = setup(5);
    s.batch(&[0, 1, 2], 1);
    // Seven writes after three: levels 0 and 1 were filled; the batch consumes both.
    let writes: Vec<u64> = (3..10).collect();
    let (plan, _, written, _) = s.prepare(&writes, 2);
    assert_eq!(plan.levels, vec![0, 1]);
    let filled: Vec<u32> = written.unwrap().levels.iter().map(|(l, _)| *l).collect();
    assert_eq!(filled, vec![1, 3], "time 10 = 0b1010");
}

/// A provider's context altered by `lie` must be refused with `want`.
fn refused(s: &Setup, writes: &[u64], lie: impl Fn(&mut WriteContext), want: impl Fn(&WriteError) -> bool) {
    let plan = plan(&s.state, writes, false).unwrap();
    let slots: Vec<u64> = writes.iter().flat_map(|&i| slot(i, 99)).collect();
    let mut context = s.provider.context(&plan).unwrap();
    lie(&mut context);
    let got = write(&s.state, &plan, &context, writes, &slots, &s.seal, &s.sums);
    assert!(got.as_ref().is_err_and(&want), "{got:?}");
}

fn other_sealed(s: &Setup) -> SealedChecksum {
    s.provider.coded.sealed[0]
}

#[test]
fn a_lying_context_is_refused() {
    let mut s = setup(3);
    s.batch(&[0, 1, 2, 3, 4], 1);
    s.batch(&[2, 5, 6], 2);
    let stale = |c: &mut WriteContext| c.old[0] = Some(SealedChecksum::from_bytes([1; 56]));
    refused(&s, &[2, 7], stale, |e| *e == WriteError::RawRoot);
    refused(&s, &[7], |c| c.old[0] = Some(other_sealed(&s)), |e| *e == WriteError::RawRoot);
    refused(&s, &[2], |c| c.old[0] = None, |e| *e == WriteError::RawRoot);
    refused(&s, &[7], |c| c.proof.siblings[0].0[3] ^= 1, |e| *e == WriteError::RawRoot);
    refused(&s, &[7], |c| _ = c.proof.siblings.pop(), |e| matches!(e, WriteError::RawProof(_)));
    // At time 9 level 0 is filled, and a batch of two writes consumes it.
    s.batch(&[7], 3);
    let swap_level = |c: &mut WriteContext| c.levels[0].swap(0, 1);
    refused(&s, &[0, 1], swap_level, |e| matches!(e, WriteError::Replay(ReplayError::Checksum { .. })));
    refused(
        &s,
        &[0, 1],
        |c| _ = c.levels[0].pop(),
        |e| matches!(e, WriteError::Replay(ReplayError::WrongCount { .. })),
    );
    refused(&s, &[0, 1], |c| c.levels.clear(), |e| *e == WriteError::Shape);
}

#[test]
fn a_lying_copy_of_u_is_refused_when_c_is_rebuilt() {
    let mut s = setup(2);
    s.batch(&[0, 1, 2], 1);
    // The fourth write ends the epoch: the client needs all of U.
    let plan = plan(&s.state, &[3], false).unwrap();
    assert!(plan.whole_raw);
    let stale = s.provider.raw_sealed[1];
    refused(&s, &[3], |c| c.raw.as_mut().unwrap()[2] = stale, |e| *e == WriteError::RawRoot);
    refused(&s, &[3], |c| c.raw.as_mut().unwrap()[0] = None, |e| *e == WriteError::RawRoot);
    refused(&s, &[3], |c| c.raw = None, |e| *e == WriteError::Shape);
    refused(&s, &[3], |c| _ = c.raw.as_mut().unwrap().pop(), |e| *e == WriteError::Shape);
    // Growth needs all of U too: a copy of the wrong capacity is refused.
    refused(&s, &[9], |c| c.raw.as_mut().unwrap().truncate(4), |e| *e == WriteError::Shape);
}

#[test]
fn a_provider_that_keeps_a_level_unmixed_fails_the_audit() {
    let mut s = setup(4);
    s.batch(&[0, 1, 2], 1);
    let level = s.provider.levels[1].as_mut().unwrap();
    // Level 1 as its two blocks side by side: what skipping the rebuild stores.
    level.slots = [slot(0, 1), slot(1, 1), slot(0, 1), slot(1, 1)].concat();
    let failed: Vec<Region> = s.audit_all().into_iter().filter(|(_, r)| r.is_err()).map(|(r, _)| r).collect();
    assert_eq!(failed, vec![Region::Level(1)]);
}

#[test]
fn a_lying_read_is_refused() {
    let mut s = first_round();
    s.batch(&[1], 2);
    assert_eq!(s.read(&[1, 2, 6]), Ok(()));
    let RawRead { slots, sealed, proof } = s.provider.read(&[1, 2, 6]).unwrap();
    let check = |slots: &[u64], sealed: &[Option<SealedChecksum>]| {
        let read = RawRead { slots: slots.to_vec(), sealed: sealed.to_vec(), proof: proof.clone() };
        verify_read(&s.state, &[1, 2, 6], &read, &s.seal, &s.sums)
    };
    let mut altered = slots.clone();
    altered[WIDTH + 1] = (altered[WIDTH + 1] + 1) % P;
    assert_eq!(check(&altered, &sealed), Err(ReadError::Altered(2)));
    // Slot 1 as written in round 1, with its checksum of then: stale.
    let old = first_round().provider.read(&[1, 2, 6]).unwrap();
    assert_eq!(check(&old.slots, &old.sealed), Err(ReadError::RawRoot));
    // A written slot said to be empty, and an empty one given content.
    assert_eq!(check(&slots, &[sealed[0], None, sealed[2]]), Err(ReadError::RawRoot));
    let mut filled = slots.clone();
    filled[2 * WIDTH] = 1;
    assert_eq!(check(&filled, &sealed), Err(ReadError::Altered(6)));
    // Another slot's data and checksum in its place.
    let swapped = [&slots[WIDTH..2 * WIDTH], &slots[WIDTH..2 * WIDTH], &slots[2 * WIDTH..]].concat();
    assert_eq!(check(&swapped, &[sealed[1], sealed[1], sealed[2]]), Err(ReadError::RawRoot));
}

fn first_round() -> Setup {
    let mut s = setup(3);
    s.batch(&[0, 1, 2, 3], 1);
    s
}

#[test]
fn malformed_requests_are_refused_by_the_provider() {
    let mut s = setup(2);
    s.batch(&[0], 1);
    let schedule = s.provider.schedule();
    let refused = ProviderError::Plan { log_capacity: 2, time: 1 };
    let good = plan(&s.state, &[1], false).unwrap();
    for bad in [
        WritePlan { grow_to: Some(2), ..good.clone() },
        WritePlan { grow_to: Some(99), ..good.clone() },
        WritePlan { levels: vec![1], ..good.clone() },
    ] {
        assert_eq!(s.provider.context(&bad).unwrap_err(), refused);
    }
    let beyond = WritePlan { indices: vec![4], ..good.clone() };
    assert!(matches!(s.provider.context(&beyond), Err(ProviderError::RawProof(_))));
    let (plan, slots, written, _) = s.prepare(&[1], 2);
    let written = written.unwrap();
    let mut extra = written.clone();
    extra.levels.push((3, vec![]));
    let mut short = written.clone();
    short.levels[0].1.pop();
    let mut coded = written.clone();
    coded.coded = vec![vec![]];
    assert_eq!(s.provider.apply(&plan, &[1], &slots[1..], &written), Err(ProviderError::Batch));
    assert_eq!(s.provider.apply(&plan, &[2], &slots, &written), Err(ProviderError::Batch));
    let mut beyond_p = slots.clone();
    beyond_p[2] = P;
    assert_eq!(s.provider.apply(&plan, &[1], &beyond_p, &written), Err(ProviderError::Batch));
    for bad in [extra, short, coded] {
        assert_eq!(s.provider.apply(&plan, &[1], &slots, &bad), Err(ProviderError::Batch));
    }
    // Refused batches changed nothing: the honest one still applies and audits.
    assert_eq!(s.provider.schedule(), schedule);
    s.provider.apply(&plan, &[1], &slots, &written).unwrap();
    s.state = written.state;
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()));
}

/// U recovered by the client from what the provider has of C, the levels and the open group.
pub(super) fn recover(s: &Setup) -> Result<Vec<u64>, RepairError> {
    let levels: Vec<RegionRead> =
        s.state.schedule.filled_levels().map(|l| s.provider.region_read(Region::Level(l as u8)).unwrap()).collect();
    let coded = s.provider.region_read(Region::Coded).unwrap();
    recover_raw(&s.state.schedule, &coded, &levels, &s.provider.staged, &s.seal, &s.sums)
}

/// Erases (`None`) or alters every `step`-th slot of a region, `count` of them.
fn damage(read: &mut RegionRead, count: usize, alter: bool) {
    let n = read.slots.len();
    for i in 0..count {
        let at = (i * 7) % n;
        match (alter, read.slots[at].as_mut()) {
            (true, Some(slot)) => slot[1] = (slot[1] + 1) % P,
            _ => read.slots[at] = None,
        }
    }
}

#[test]
fn repair_recovers_u_from_half_of_c_and_of_every_level() {
    let mut s = setup(4);
    s.batch(&(0..16).collect::<Vec<_>>(), 1); // one epoch: C over 16 slots
    s.batch(&(3..10).collect::<Vec<_>>(), 2); // levels 0, 1, 2 filled
    let want = s.provider.raw.clone();
    assert_eq!(recover(&s), Ok(want.clone()));

    // Half of each region lost or altered (7 is odd: damage spreads over the region).
    let levels: Vec<u32> = s.state.schedule.filled_levels().collect();
    let mut coded = s.provider.region_read(Region::Coded).unwrap();
    damage(&mut coded, 8, false);
    damage(&mut coded, 8, true);
    let mut reads = Vec::new();
    for &l in &levels {
        let mut read = s.provider.region_read(Region::Level(l as u8)).unwrap();
        damage(&mut read, 1 << l, l % 2 == 1);
        reads.push(read);
    }
    let raw = recover_raw(&s.state.schedule, &coded, &reads, &[], &s.seal, &s.sums).unwrap();
    assert_eq!(raw, want);
    // The client checks what it recovered against U's current checksums before writing back.
    let all: Vec<u64> = (0..16).collect();
    let read = RawRead { slots: raw, ..s.provider.read(&all).unwrap() };
    assert_eq!(verify_read(&s.state, &all, &read, &s.seal, &s.sums), Ok(()));

    // One slot more than half of level 2 lost: the data is gone, and repair says so.
    let mut lost = reads.clone();
    damage(&mut lost[2], 5, false);
    let got = recover_raw(&s.state.schedule, &coded, &lost, &[], &s.seal, &s.sums);
    assert!(matches!(
        got,
        Err(RepairError::Decode { region: Region::Level(2), error: DecodeError::TooFewSlots { .. } })
    ));
}

/// Pages of a region in any order and size gather to what a whole read does; only slots that
/// match their checksums count; pages that do not fit the region are refused.
#[test]
fn repair_gathers_regions_a_page_at_a_time() {
    let mut s = setup(4);
    s.batch(&(0..16).collect::<Vec<_>>(), 1);
    s.batch(&(3..10).collect::<Vec<_>>(), 2);
    let want = s.provider.raw.clone();
    let mut gathered = Vec::new();
    for (region, time, slots) in regions(&s.state.schedule) {
        let mut read = s.provider.region_read(region).unwrap();
        damage(&mut read, (slots / 4) as usize, true);
        let mut g = Gathered::new(region, time, slots);
        // Pages of 3 from the end down, then the first page again (counted once).
        let mut starts: Vec<u64> = (0..slots).step_by(3).collect();
        starts.reverse();
        starts.push(0);
        for first in starts {
            let end = (first + 3).min(slots) as usize;
            let page = RegionRead {
                slots: read.slots[first as usize..end].to_vec(),
                sealed: read.sealed[first as usize..end].to_vec(),
            };
            g.add(first, page, &s.seal, &s.sums).unwrap();
        }
        assert_eq!(g.matched(), slots - slots / 4, "{region:?}: altered slots do not count");
        assert!(g.decodable());
        let past = RegionRead { slots: vec![None], sealed: read.sealed[..1].to_vec() };
        assert_eq!(g.add(slots, past, &s.seal, &s.sums), Err(RepairError::Shape(region)));
        let uneven = RegionRead { slots: vec![None; 2], sealed: read.sealed[..1].to_vec() };
        assert_eq!(g.add(0, uneven, &s.seal, &s.sums), Err(RepairError::Shape(region)));
        gathered.push(g);
    }
    let (coded, levels) = gathered.split_first().unwrap();
    assert_eq!(recover_gathered(&s.state.schedule, coded, levels, &[], s.sums.width()), Ok(want));
    // Fewer than half of C gathered: not decodable, and recovery says so.
    let (region, time, slots) = regions(&s.state.schedule)[0];
    let mut half = Gathered::new(region, time, slots);
    let read = s.provider.region_read(region).unwrap();
    let first_half = (slots / 2 - 1) as usize;
    half.add(
        0,
        RegionRead { slots: read.slots[..first_half].to_vec(), sealed: read.sealed[..first_half].to_vec() },
        &s.seal,
        &s.sums,
    )
    .unwrap();
    assert!(!half.decodable());
    assert!(matches!(
        recover_gathered(&s.state.schedule, &half, levels, &[], s.sums.width()),
        Err(RepairError::Decode { region: Region::Coded, .. })
    ));
    // Regions given out of order are refused.
    assert!(matches!(
        recover_gathered(&s.state.schedule, &levels[0], levels, &[], s.sums.width()),
        Err(RepairError::Shape(_))
    ));
}

#[test]
fn repair_ignores_slots_of_another_time_or_place() {
    let mut s = setup(3);
    s.batch(&[0, 1, 2, 3], 1); // level 2
    let old_level = s.provider.region_read(Region::Level(2)).unwrap();
    s.batch(&[4, 5, 6, 7], 2); // the epoch ends at time 8
    s.batch(&[0, 1, 2, 3], 3); // level 2 again, written at 8..12
    assert_eq!(s.state.schedule.filled_levels().collect::<Vec<_>>(), vec![2]);
    let want = s.provider.raw.clone();
    // The provider serves last epoch's level 2 (intact, with its own sealed checksums).
    let coded = s.provider.region_read(Region::Coded).unwrap();
    let got = recover_raw(&s.state.schedule, &coded, std::slice::from_ref(&old_level), &[], &s.seal, &s.sums);
    assert!(matches!(got, Err(RepairError::Decode { region: Region::Level(2), .. })), "{got:?}");
    // Level 2's slots in C's place.
    let level = s.provider.region_read(Region::Level(2)).unwrap();
    let got = recover_raw(&s.state.schedule, &level, std::slice::from_ref(&level), &[], &s.seal, &s.sums);
    assert_eq!(got, Err(RepairError::Shape(Region::Coded)));
    assert_eq!(recover(&s), Ok(want));
}

#[test]
fn slots_must_carry_their_index() {
    let s = setup(2);
    let plan = plan(&s.state, &[1], false).unwrap();
    let context = s.provider.context(&plan).unwrap();
    let got = write(&s.state, &plan, &context, &[1], &slot(2, 1), &s.seal, &s.sums);
    assert_eq!(got, Err(WriteError::Header(1)));
}

#[test]
fn slots_of_u_are_sectors() {
    let s = setup(2);
    let plan = plan(&s.state, &[1], false).unwrap();
    let context = s.provider.context(&plan).unwrap();
    let mut wide = slot(1, 1);
    wide[2] = 1 << 56;
    let got = write(&s.state, &plan, &context, &[1], &wide, &s.seal, &s.sums);
    assert_eq!(got, Err(WriteError::Header(1)));
}
