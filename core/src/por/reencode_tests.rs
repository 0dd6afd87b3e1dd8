//! A re-encode ([`plan_reencode`]): C rebuilt from U at U's capacity and H emptied, what
//! repair sends once U is whole; and a provider that lies about it.

use super::batch_tests::{recover, setup_grouped, Setup};
use super::client::{plan, plan_reencode, write, WriteError, WritePlan, Written};
use super::code::encode;
use super::field::P;
use super::provider::ProviderError;
use super::raw_tree::RawProof;
use super::Region;
use crate::Digest;

const WIDTH: usize = 4;

/// A log of 16 slots in groups of 2 with C and levels filled.
pub(super) fn filled() -> Setup {
    let mut s = setup_grouped(4, 1);
    s.flush = true;
    s.batch(&(0..16).collect::<Vec<_>>(), 1);
    s.batch(&(2..7).collect::<Vec<_>>(), 2);
    assert!(s.state.schedule.filled_levels().count() >= 2);
    s
}

fn reencode(s: &Setup) -> (WritePlan, Result<Written, WriteError>) {
    let plan = plan_reencode(&s.state);
    let context = s.provider.context(&plan).unwrap();
    (plan.clone(), write(&s.state, &plan, &context, &[], &[], &s.seal, &s.sums))
}

#[test]
fn a_reencode_replaces_damaged_levels_and_c_with_the_code_of_u() {
    let mut s = filled();
    let before = s.state;
    // The provider loses bytes of a level and of C: those parts fail their audits.
    let level = s.state.schedule.filled_levels().last().unwrap() as usize;
    s.provider.levels[level].as_mut().unwrap().slots.iter_mut().for_each(|e| *e = (*e + 1) % P);
    s.provider.coded.slots[..WIDTH * 20].iter_mut().for_each(|e| *e = (*e + 1) % P);
    let failed: Vec<Region> = s.audit_all().into_iter().filter(|(_, r)| r.is_err()).map(|(r, _)| r).collect();
    assert_eq!(failed, [Region::Level(level as u8), Region::Coded]);

    let (plan, written) = reencode(&s);
    let written = written.unwrap();
    assert!(written.raw.is_empty() && written.levels.is_empty());
    assert_eq!(written.coded.iter().map(Vec::len).collect::<Vec<_>>(), [32]);
    assert_eq!(written.state.raw_root, before.raw_root, "nothing written to U");
    s.provider.apply(&plan, &[], &[], &written).unwrap();
    s.state = written.state;

    // The next epoch starts: C is the code of U, H is empty, and every audit passes again.
    let schedule = s.state.schedule;
    assert_eq!((schedule.time % 16, schedule.time > before.schedule.time), (0, true));
    assert_eq!(s.provider.schedule(), schedule);
    assert_eq!(s.provider.coded.slots, encode(&s.provider.raw, WIDTH, 4, 0));
    assert!(s.provider.levels.iter().all(Option::is_none) && s.provider.coded_next.is_none());
    assert!(!schedule.in_window(), "a re-encode's C is in use at once");
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()), "{:?}", s.audit_all());
    let all: Vec<u64> = (0..16).collect();
    assert_eq!(s.read(&all), Ok(()));
    // Writes go on from there, and repair still recovers U.
    s.batch(&[1, 5, 9], 3);
    assert!(s.audit_all().iter().all(|(_, r)| r.is_ok()));
    assert_eq!(recover(&s), Ok(s.provider.raw.clone()));
}

#[test]
fn a_provider_lying_about_u_in_a_reencode_is_caught() {
    let s = filled();
    let plan = plan_reencode(&s.state);
    let honest = s.provider.context(&plan).unwrap();
    let replay = |context| write(&s.state, &plan, &context, &[], &[], &s.seal, &s.sums);
    // U's checksums stale or swapped: they no longer make the client's root.
    let mut swapped = honest.clone();
    swapped.raw.as_mut().unwrap().swap(2, 3);
    assert_eq!(replay(swapped), Err(WriteError::RawRoot));
    let mut dropped = honest.clone();
    dropped.raw.as_mut().unwrap()[4] = None;
    assert_eq!(replay(dropped), Err(WriteError::RawRoot));
    // Missing or extra parts of the answer.
    assert_eq!(replay(super::client::WriteContext { raw: None, ..honest.clone() }), Err(WriteError::Shape));
    let with_proof = super::client::WriteContext { proof: RawProof { siblings: vec![Digest([1; 32])] }, ..honest };
    assert_eq!(replay(with_proof), Err(WriteError::Shape));
}

#[test]
fn a_provider_that_reencodes_c_from_another_u_fails_the_audit_of_c() {
    let mut s = filled();
    let (plan, written) = reencode(&s);
    let written = written.unwrap();
    // The provider's U differs in one slot from what U's checksums say: C is the code of that.
    s.provider.raw[5 * WIDTH + 2] = (s.provider.raw[5 * WIDTH + 2] + 1) % P;
    s.provider.apply(&plan, &[], &[], &written).unwrap();
    s.state = written.state;
    let audits = s.audit_all();
    assert!(matches!(audits.last(), Some((Region::Coded, Err(_)))), "{audits:?}");
}

#[test]
fn only_a_reencode_or_a_shrink_writes_nothing() {
    let mut s = filled();
    let k = s.state.schedule.log_capacity;
    let refused = ProviderError::Plan { log_capacity: k, time: s.state.schedule.time };
    let again = plan_reencode(&s.state);
    let shrink_and_write = WritePlan { grow_to: Some(k - 1), indices: vec![1], ..again.clone() };
    assert_eq!(s.provider.context(&shrink_and_write).unwrap_err(), refused);
    let nothing = WritePlan { grow_to: None, whole_raw: false, ..again.clone() };
    assert!(matches!(s.provider.context(&nothing), Err(ProviderError::RawProof(_))));
    assert_eq!(plan(&s.state, &[], true), Err(WriteError::Empty));
    // A batch of no writes that is no re-encode is refused by the provider too, and so is a
    // re-encode without C's new sealed checksums.
    let (_, written) = reencode(&s);
    let written = written.unwrap();
    assert!(matches!(s.provider.apply(&nothing, &[], &[], &written), Err(ProviderError::RawProof(_))));
    let without_c = Written { coded: Vec::new(), ..written };
    assert_eq!(s.provider.apply(&again, &[], &[], &without_c), Err(ProviderError::Batch));
    // The plan round-trips the wire, at the smallest capacity and the largest.
    for grow_to in [Some(0), Some(super::raw_tree::MAX_LOG_CAPACITY), None] {
        let plan = WritePlan { grow_to, ..again.clone() };
        assert_eq!(WritePlan::from_bytes(&plan.to_bytes()), Ok(plan));
    }
    s.batch(&[3], 4);
}
