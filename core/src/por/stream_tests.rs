//! A batch taken and uploaded in parts ([`super::stream`]) is the batch taken whole: the
//! same checks, the same state, the same upload byte for byte; and a provider that lies in
//! any part is caught as it is when the answer comes whole.

use super::batch_tests::{setup_grouped, slot, Setup};
use super::checksum::SEALED_LEN;
use super::client::{plan, plan_reencode, plan_shrink, write, write_opened, WriteContext, WriteError, WritePlan};
use super::reencode_tests::filled;
use super::shrink_tests::log_freed_from;
use super::stream::{ContextError, ContextReader};
use super::wire::PorWireError;

/// The answer to `plan` read in parts of `part` bytes, the batch replayed, its upload
/// written in parts of `upload_part`: the state after it and the parts.
fn in_parts(
    s: &Setup,
    plan: &WritePlan,
    (writes, slots): (&[u64], &[u64]),
    bytes: &[u8],
    (part, upload_part): (usize, usize),
) -> Result<(super::client::LogState, Vec<Vec<u8>>), ContextError> {
    let mut reader = ContextReader::new(&s.state, plan, bytes.len() as u64, &s.seal, &s.sums)?;
    while reader.wants_more() {
        let at = reader.received() as usize;
        reader.feed(&bytes[at..(at + part).min(bytes.len())])?;
    }
    let (context, raw) = reader.finish()?;
    let opened = write_opened(&s.state, plan, &context, raw, writes, slots, &s.seal, &s.sums)?;
    let state = opened.state;
    Ok((state, opened.upload(&s.seal, upload_part).collect()))
}

/// Checks the batch in parts against the batch whole, for a few part sizes.
fn same_as_whole(s: &Setup, plan: &WritePlan, writes: &[u64], slots: &[u64]) {
    let context = s.provider.context(plan).unwrap();
    let whole = write(&s.state, plan, &context, writes, slots, &s.seal, &s.sums).unwrap();
    let upload = whole.upload_bytes();
    let bytes = context.to_bytes();
    for sizes in [(1, 1), (7, 57), (64, 1000), (bytes.len(), upload.len() + 1)] {
        let (state, parts) = in_parts(s, plan, (writes, slots), &bytes, sizes).unwrap();
        assert_eq!(state, whole.state);
        assert_eq!(parts.concat(), upload, "parts of {sizes:?}");
        let (last, full) = parts.split_last().unwrap();
        assert!(full.iter().all(|p| p.len() == sizes.1) && !last.is_empty() && last.len() <= sizes.1);
    }
}

#[test]
fn batches_in_parts_are_the_batches_whole_through_growth_epochs_and_windows() {
    let mut s = setup_grouped(1, 0);
    let mut whole_raw = 0;
    for round in 1..40u64 {
        // Writes that grow U now and then, and roll its epochs.
        let writes: Vec<u64> = (0..1 + round % 3).map(|i| (round * 5 + i * 3) % (2 + round)).collect();
        let mut writes = writes;
        writes.dedup();
        let plan = plan(&s.state, &writes, s.flush).unwrap();
        whole_raw += u32::from(plan.whole_raw);
        let slots: Vec<u64> = writes.iter().flat_map(|&i| slot(i, round)).collect();
        same_as_whole(&s, &plan, &writes, &slots);
        s.batch(&writes, round);
    }
    assert!(whole_raw >= 5 && s.state.schedule.log_capacity >= 5, "growth and epoch ends were tried");
}

#[test]
fn a_reencode_and_a_shrink_in_parts_are_the_same_as_whole() {
    let s = filled();
    same_as_whole(&s, &plan_reencode(&s.state), &[], &[]);
    let s = log_freed_from(6);
    same_as_whole(&s, &plan_shrink(&s.state, 3).unwrap(), &[], &[]);
}

/// Where U's sealed checksums start in a context's bytes, and each entry's offset.
fn raw_entries(context: &WriteContext) -> Vec<usize> {
    let raw = context.raw.as_ref().unwrap();
    let sizes: Vec<usize> = raw.iter().map(|s| 1 + s.map_or(0, |_| SEALED_LEN)).collect();
    let mut at = context.to_bytes().len() - sizes.iter().sum::<usize>();
    sizes
        .iter()
        .map(|size| {
            at += size;
            at - size
        })
        .collect()
}

#[test]
fn a_provider_lying_in_any_part_of_u_is_caught() {
    let s = log_freed_from(6);
    let plan = plan_shrink(&s.state, 3).unwrap();
    let context = s.provider.context(&plan).unwrap();
    let bytes = context.to_bytes();
    let entries = raw_entries(&context);
    let run = |bytes: &[u8]| in_parts(&s, &plan, (&[], &[]), bytes, (5, 100)).map(|_| ());
    let written = |i: usize| context.raw.as_ref().unwrap()[i].is_some();
    // A byte of a sealed checksum altered, in the first and in the last slot that has one.
    for slot in [(0..16).find(|&i| written(i)).unwrap(), (0..16).rev().find(|&i| written(i)).unwrap()] {
        let mut altered = bytes.clone();
        altered[entries[slot] + 30] ^= 1;
        assert_eq!(run(&altered), Err(ContextError::Write(WriteError::RawRoot)), "slot {slot}");
    }
    // A slot that holds data named never written: one fewer sealed checksum.
    let slot = (0..16).find(|&i| written(i)).unwrap();
    let mut hidden = bytes[..entries[slot]].to_vec();
    hidden.push(0);
    hidden.extend_from_slice(&bytes[entries[slot] + 1 + SEALED_LEN..]);
    assert_eq!(run(&hidden), Err(ContextError::Write(WriteError::RawRoot)));
    // An entry's tag that is neither 0 nor 1.
    let mut tag = bytes.clone();
    tag[entries[3]] = 2;
    assert_eq!(run(&tag), Err(ContextError::Wire(PorWireError::Tag)));
    // Cut short, or a byte more than the plan's U: refused, never accepted as a shorter U.
    assert!(matches!(run(&bytes[..bytes.len() - 1]), Err(ContextError::Wire(_) | ContextError::Write(_))));
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(run(&longer).is_err());
    assert_eq!(run(&bytes), Ok(()), "the honest answer");
    // Slots 8 and 9 hold data: the honest answer says why the shrink cannot go.
    let s = log_freed_from(10);
    let bytes = s.provider.context(&plan).unwrap().to_bytes();
    let got = in_parts(&s, &plan, (&[], &[]), &bytes, (5, 100)).map(|_| ());
    assert_eq!(got, Err(ContextError::Write(WriteError::Occupied(8))));
}

#[test]
fn an_announced_length_is_held_to() {
    let s = filled();
    let reencode = plan_reencode(&s.state);
    let bytes = s.provider.context(&reencode).unwrap().to_bytes();
    let mut reader = ContextReader::new(&s.state, &reencode, bytes.len() as u64 - 3, &s.seal, &s.sums).unwrap();
    assert_eq!(reader.feed(&bytes), Err(ContextError::Wire(PorWireError::Trailing)));
    let mut reader = ContextReader::new(&s.state, &reencode, bytes.len() as u64 + 3, &s.seal, &s.sums).unwrap();
    reader.feed(&bytes).unwrap();
    assert!(reader.wants_more());
    assert!(reader.finish().is_err(), "bytes announced and never sent");
    // A plan without U, answered with U: the wrong shape.
    let small = plan(&s.state, &[3], true).unwrap();
    assert!(!small.whole_raw);
    let reader = |bytes: &[u8]| {
        let mut r = ContextReader::new(&s.state, &small, bytes.len() as u64, &s.seal, &s.sums).unwrap();
        r.feed(bytes).and_then(|()| r.finish().map(|_| ()))
    };
    let honest = s.provider.context(&small).unwrap();
    assert_eq!(reader(&honest.to_bytes()), Ok(()));
    let with_u = WriteContext { raw: Some(vec![None; 16]), ..honest };
    assert_eq!(reader(&with_u.to_bytes()), Err(ContextError::Write(WriteError::Shape)));
}
