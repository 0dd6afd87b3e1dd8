//! U shrinks (App. A.3's consolidation, [`plan_shrink`]): when every slot of U's upper part is
//! free, the client keeps the first `2^k` slots, C is re-encoded over them and H emptied; and
//! a provider that hides a slot holding data, or lies about U's checksums, is caught.

use super::batch_tests::{recover, Setup};
use super::checksum::{ChecksumKey, SealKey};
use super::client::{plan, plan_shrink, write, LogState, WriteContext, WriteError, WritePlan, Written};
use super::code::encode;
use super::heap::{encode_slot, SLOT_WIDTH};
use super::provider::{ProviderError, ProviderLog};
use super::raw_tree::{leaf_hash, RawTree};

/// A log of 16 slots in groups of 2: slots `0..12` written with data, then `data_left..12`
/// overwritten with ⊥ (12..16 never written).
pub(super) fn log_freed_from(data_left: u64) -> Setup {
    let seal = SealKey::new(&[3; 32]);
    let (state, coded) = LogState::new(4, 1, &seal);
    let provider = ProviderLog::new(4, 1, SLOT_WIDTH, coded).unwrap();
    let sums = ChecksumKey::grouped(&[4; 32], SLOT_WIDTH, 1);
    let mut s = Setup { state, provider, seal, sums, flush: true };
    put(&mut s, &(0..12).map(|i| (i, encode_slot(i, Some(format!("block {i}").as_bytes())))).collect::<Vec<_>>());
    if data_left < 12 {
        put(&mut s, &(data_left..12).map(|i| (i, encode_slot(i, None))).collect::<Vec<_>>());
    }
    s
}

/// Writes `slots` (index and elements), flushed.
fn put(s: &mut Setup, slots: &[(u64, Vec<u64>)]) {
    let writes: Vec<u64> = slots.iter().map(|(i, _)| *i).collect();
    let flat: Vec<u64> = slots.iter().flat_map(|(_, slot)| slot.clone()).collect();
    let plan = plan(&s.state, &writes, true).unwrap();
    let context = s.provider.context(&plan).unwrap();
    let written = write(&s.state, &plan, &context, &writes, &flat, &s.seal, &s.sums).unwrap();
    s.provider.apply(&plan, &writes, &flat, &written).unwrap();
    s.state = written.state;
}

fn shrink(s: &Setup, to: u32, context: Option<WriteContext>) -> (WritePlan, Result<Written, WriteError>) {
    let plan = plan_shrink(&s.state, to).unwrap();
    let context = context.unwrap_or_else(|| s.provider.context(&plan).unwrap());
    (plan.clone(), write(&s.state, &plan, &context, &[], &[], &s.seal, &s.sums))
}

#[test]
fn u_shrinks_to_its_first_slots_when_the_rest_is_free() {
    let mut s = log_freed_from(8);
    let before = s.state;
    let (plan, written) = shrink(&s, 3, None);
    let written = written.unwrap();
    assert!(written.raw.is_empty() && written.levels.is_empty());
    assert_eq!(written.coded.iter().map(Vec::len).collect::<Vec<_>>(), [16], "C of 8 slots");
    s.provider.apply(&plan, &[], &[], &written).unwrap();
    s.state = written.state;

    // U's root is the tree of the slots kept; C is their code, H is empty.
    let schedule = s.state.schedule;
    assert_eq!((schedule.log_capacity, schedule.time % 8, schedule.time > before.schedule.time), (3, 0, true));
    assert_eq!(s.provider.schedule(), schedule);
    let mut kept = RawTree::new(3);
    let leaves = (0..8u64).filter_map(|i| s.provider.raw_sealed[i as usize].map(|x| (i, leaf_hash(Some(&x)))));
    kept.set(&leaves.collect::<Vec<_>>());
    assert_eq!(s.state.raw_root, kept.root());
    assert_eq!(s.provider.raw.len(), 8 * SLOT_WIDTH);
    assert_eq!(s.provider.coded.slots, encode(&s.provider.raw, SLOT_WIDTH, 3, 0));
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()), "{:?}", s.audit_all());
    assert_eq!(s.read(&(0..8).collect::<Vec<_>>()), Ok(()));
    assert_eq!(recover(&s), Ok(s.provider.raw.clone()));

    // Writes go on, and U grows again past its new capacity: the slots that went are new.
    put(&mut s, &[(2, encode_slot(2, Some(b"again"))), (9, encode_slot(9, Some(b"grown")))]);
    assert_eq!(s.state.schedule.log_capacity, 4);
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()));
    assert_eq!(s.read(&[2, 9, 11]), Ok(()));
    assert_eq!(recover(&s), Ok(s.provider.raw.clone()));
}

#[test]
fn a_shrink_over_a_slot_holding_data_is_refused_before_anything_is_sent() {
    let s = log_freed_from(11);
    assert_eq!(shrink(&s, 3, None).1, Err(WriteError::Occupied(8)));
    let s = log_freed_from(12);
    assert_eq!(shrink(&s, 2, None).1, Err(WriteError::Occupied(4)));
}

#[test]
fn a_provider_lying_about_u_in_a_shrink_is_caught() {
    let s = log_freed_from(10);
    let plan = plan_shrink(&s.state, 3).unwrap();
    let honest = s.provider.context(&plan).unwrap();
    assert_eq!(honest.raw.as_ref().map(Vec::len), Some(16), "all of U before the shrink");
    let lie = |spoil: fn(&mut Vec<Option<super::checksum::SealedChecksum>>)| {
        let mut context = honest.clone();
        spoil(context.raw.as_mut().unwrap());
        shrink(&s, 3, Some(context)).1
    };
    // Slots 8 and 9 hold data: passing them off as never written, or as another slot's ⊥,
    // breaks the client's root.
    assert_eq!(lie(|raw| raw[8..10].fill(None)), Err(WriteError::RawRoot));
    assert_eq!(lie(|raw| raw.swap(9, 10)), Err(WriteError::RawRoot));
    // Only the slots kept: the answer has the wrong shape.
    assert_eq!(lie(|raw| raw.truncate(8)), Err(WriteError::Shape));
    assert_eq!(shrink(&s, 3, None).1, Err(WriteError::Occupied(8)), "the honest answer says why");
}

#[test]
fn a_shrink_writes_nothing_and_keeps_at_least_a_group() {
    let s = log_freed_from(8);
    let shrunk = plan_shrink(&s.state, 3).unwrap();
    for to in [4, 5, 0] {
        assert_eq!(plan_shrink(&s.state, to), Err(WriteError::Shrink { to, from: 4 }));
    }
    let refused = ProviderError::Plan { log_capacity: 4, time: s.state.schedule.time };
    for bad in [
        WritePlan { indices: vec![1], ..shrunk.clone() },
        WritePlan { levels: vec![0], ..shrunk.clone() },
        WritePlan { whole_raw: false, ..shrunk.clone() },
        WritePlan { grow_to: Some(0), ..shrunk.clone() },
    ] {
        assert_eq!(s.provider.context(&bad).unwrap_err(), refused, "{bad:?}");
    }
    assert_eq!(WritePlan::from_bytes(&shrunk.to_bytes()), Ok(shrunk));
}
