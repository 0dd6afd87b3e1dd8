//! Sec. 6.1's grouping end to end between [`super::client`] and [`super::provider`]: blocks
//! of H are groups of writes, the open group waits on the provider's side, a batch may flush
//! it with ⊥ writes; then a provider that alters the open group.

use super::batch_tests::{recover, setup_grouped, slot};
use super::checksum::ChecksumKey;
use super::client::{plan, write, WriteError};
use super::field::P;
use super::repair::{staged_matches, RepairError};
use super::Region;

const WIDTH: usize = 4;

#[test]
fn grouped_batches_roll_epochs_pass_audits_and_repair() {
    let mut s = setup_grouped(2, 2);
    let mut next = 0u64;
    for (round, size) in [1usize, 3, 2, 5, 1, 8, 4, 7, 16, 2, 9, 1, 1, 30, 3].into_iter().enumerate() {
        let round = round as u64 + 1;
        s.flush = round.is_multiple_of(3);
        let mut writes: Vec<u64> = (next..next + size as u64).collect();
        next += size as u64;
        if next > 4 {
            writes.push(next / 3);
        }
        s.batch(&writes, round);
        let schedule = s.state.schedule;
        assert_eq!(schedule, s.provider.schedule());
        assert_eq!(s.provider.staged.len() as u64, schedule.pending() * WIDTH as u64, "round {round}");
        if s.flush {
            assert_eq!((schedule.pending(), s.state.pending), (0, Default::default()), "a flush closes the group");
        }
        assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()), "round {round}: {:?}", s.audit_all());
        let all: Vec<u64> = (0..schedule.capacity()).collect();
        assert_eq!(s.read(&all), Ok(()));
        assert!(staged_matches(&schedule, s.state.pending, &s.provider.staged, &s.sums));
        assert_eq!(recover(&s), Ok(s.provider.raw.clone()), "round {round}");
    }
    assert_eq!(s.state.schedule.log_capacity, 7, "U grew to hold {next}");
}

#[test]
fn h_costs_one_sealed_checksum_per_group() {
    let mut s = setup_grouped(4, 2);
    for index in 0..3 {
        let (_, _, written, _) = s.prepare(&[index], 1);
        assert!(written.unwrap().levels.is_empty(), "write {index} only joins the open group");
        s.batch(&[index], 1);
    }
    let (_, _, written, _) = s.prepare(&[3], 1);
    let levels = written.unwrap().levels;
    assert_eq!(levels.iter().map(|(l, sealed)| (*l, sealed.len())).collect::<Vec<_>>(), [(0, 2)]);
    s.batch(&[3], 1);
    // The level's slots are the group's four writes side by side.
    let level = s.provider.region(Region::Level(0)).unwrap();
    assert_eq!(level.slots.len(), 2 * 4 * WIDTH);
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()));
}

#[test]
fn a_flush_pads_the_group_with_writes_repair_skips() {
    let mut s = setup_grouped(4, 2);
    s.flush = true;
    s.batch(&[5], 1);
    assert_eq!((s.state.schedule.time, s.provider.staged.len()), (4, 0));
    // U comes back from C and H alone: the ⊥ writes (header 0) are skipped.
    let mut want = vec![0; 16 * WIDTH];
    want[5 * WIDTH..6 * WIDTH].copy_from_slice(&slot(5, 1));
    assert_eq!(recover(&s), Ok(want));
    // A flush of a group that is already closed adds nothing.
    s.batch(&[1, 2, 3, 4], 2);
    assert_eq!(s.state.schedule.time, 8);
}

#[test]
fn an_altered_open_group_is_caught() {
    let mut s = setup_grouped(5, 2);
    s.batch(&[0, 1], 1);
    // The provider alters the first write of the open group.
    s.provider.staged[1] = (s.provider.staged[1] + 1) % P;
    assert!(!staged_matches(&s.state.schedule, s.state.pending, &s.provider.staged, &s.sums));
    let short = &s.provider.staged[..WIDTH];
    assert!(!staged_matches(&s.state.schedule, s.state.pending, short, &s.sums), "a write left out");
    // Once the group completes, the level built from it disagrees with the client's checksums.
    s.batch(&[2, 3], 2);
    let failed: Vec<Region> = s.audit_all().into_iter().filter(|(_, r)| r.is_err()).map(|(r, _)| r).collect();
    assert_eq!(failed, [Region::Level(0)]);
}

#[test]
fn repair_refuses_an_open_group_of_the_wrong_size() {
    let mut s = setup_grouped(4, 2);
    s.batch(&[0, 1, 2, 3, 4, 5], 1);
    assert_eq!(s.state.schedule.pending(), 2);
    s.provider.staged.truncate(WIDTH);
    assert_eq!(recover(&s), Err(RepairError::Staged { got: WIDTH, want: 2 * WIDTH }));
}

#[test]
fn a_key_of_another_grouping_is_refused() {
    let s = setup_grouped(4, 2);
    let planned = plan(&s.state, &[1], false).unwrap();
    let context = s.provider.context(&planned).unwrap();
    let ungrouped = ChecksumKey::new(&[4; 32], WIDTH);
    let got = write(&s.state, &planned, &context, &[1], &slot(1, 1), &s.seal, &ungrouped);
    assert_eq!(got, Err(WriteError::Grouping { key: 1, log: 2 }));
}
