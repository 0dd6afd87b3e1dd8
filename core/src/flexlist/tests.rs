//! FlexList against a naive model: a vector of blocks.

use super::*;
use crate::hash;
use proptest::prelude::*;

pub(crate) fn block(seed: u64, length: u32) -> Block {
    Block::new(hash::data(&seed.to_le_bytes()), length, seed)
}

pub(crate) fn blocks(n: u64, seed: u64) -> Vec<Block> {
    (0..n)
        .map(|i| {
            block(
                seed.wrapping_mul(1_000_003).wrapping_add(i),
                1 + (i.wrapping_mul(7919).wrapping_add(seed) % 50) as u32,
            )
        })
        .collect()
}

fn contents(list: &FlexList) -> Vec<Block> {
    list.iter().map(|l| l.block).collect()
}

fn offsets(model: &[Block]) -> Vec<u64> {
    let mut at = 0;
    model
        .iter()
        .map(|b| {
            let s = at;
            at += u64::from(b.length);
            s
        })
        .collect()
}

/// The batch semantics, written naively: offsets refer to `model` before the batch.
fn model_apply(model: &[Block], edits: &[Edit]) -> Vec<Block> {
    let starts = offsets(model);
    let holder = |at: u64| starts.partition_point(|&s| s <= at) - 1;
    let mut out = Vec::new();
    let len: u64 = model.iter().map(|b| u64::from(b.length)).sum();
    for (i, b) in model.iter().enumerate() {
        for e in edits {
            if let Edit::Insert { at, block } = e {
                if *at == starts[i] {
                    out.push(*block);
                }
            }
        }
        let mut kept = Some(*b);
        for e in edits {
            match e {
                Edit::Modify { at, block } if holder(*at) == i => kept = Some(*block),
                Edit::Remove { at } if holder(*at) == i => kept = None,
                _ => {}
            }
        }
        out.extend(kept);
    }
    for e in edits {
        if let Edit::Insert { at, block } = e {
            if *at == len {
                out.push(*block);
            }
        }
    }
    out
}

#[test]
fn empty_list() {
    let list = FlexList::new();
    assert_eq!(list.total_len(), 0);
    assert_eq!(list.block_count(), 0);
    assert_eq!(list.search(0), None);
    assert_eq!(list.iter().count(), 0);
    assert_eq!(FlexList::new().root(), list.root());
    assert_eq!(list.prove(&[0]), Err(ProofError::IndexOutOfRange { index: 0, len: 0 }));
}

#[test]
fn build_rejects_empty_blocks() {
    let mut bs = blocks(5, 1);
    bs[3].length = 0;
    assert_eq!(FlexList::build(&bs).unwrap_err(), BuildError::EmptyBlock { index: 3 });
}

#[test]
fn search_finds_every_byte() {
    let bs = blocks(300, 2);
    let list = FlexList::build(&bs).unwrap();
    let starts = offsets(&bs);
    assert_eq!(list.total_len(), bs.iter().map(|b| u64::from(b.length)).sum::<u64>());
    for (i, b) in bs.iter().enumerate() {
        for at in [starts[i], starts[i] + u64::from(b.length) - 1] {
            assert_eq!(list.search(at), Some(Located { start: starts[i], block: *b }));
        }
    }
    assert_eq!(list.search(list.total_len()), None);
    assert_eq!(contents(&list), bs);
}

#[test]
fn structure_is_optimal() {
    // One leaf per element, one inner node per element of height >= 1, nothing else.
    let bs = blocks(5000, 3);
    let list = FlexList::build(&bs).unwrap();
    let tall = bs.iter().filter(|b| height_for_tag(&b.tag) > 0).count();
    assert_eq!(list.node_count(), bs.len() + 2 + tall);
}

#[test]
fn levels_are_geometric() {
    let bs = blocks(100_000, 4);
    let tall = bs.iter().filter(|b| height_for_tag(&b.tag) >= 1).count() as f64;
    let taller = bs.iter().filter(|b| height_for_tag(&b.tag) >= 3).count() as f64;
    assert!((tall / 100_000.0 - 0.5).abs() < 0.01, "{tall}");
    assert!((taller / 100_000.0 - 0.125).abs() < 0.01, "{taller}");
}

#[test]
fn the_root_of_blocks_is_the_root_of_their_list() {
    for n in [0u64, 1, 2, 17, 5_000] {
        let bs = blocks(n, n + 3);
        let list = FlexList::build(&bs).unwrap();
        assert_eq!(FlexList::root_of(&bs).unwrap(), (list.root(), list.total_len()), "n={n}");
    }
    let mut other = blocks(50, 1);
    let root = FlexList::root_of(&other).unwrap();
    other.swap(3, 4);
    assert_ne!(FlexList::root_of(&other).unwrap(), root, "order is bound");
    other[0].length = 0;
    assert_eq!(FlexList::root_of(&other), Err(BuildError::EmptyBlock { index: 0 }));
}

#[test]
fn parallel_build_gives_identical_list() {
    for n in [8_192u64, 20_000, 33_333] {
        let bs = blocks(n, n);
        let seq = FlexList::build(&bs).unwrap();
        for threads in [2, 3, 4, 7] {
            let par = FlexList::build_parallel(&bs, threads).unwrap();
            assert_eq!(par.root(), seq.root(), "n={n} threads={threads}");
            assert_eq!(par.block_count(), seq.block_count());
            assert_eq!(contents(&par), bs);
            // No node leaked: the arena holds exactly the live nodes plus reusable free slots.
            assert_eq!(par.node_count(), seq.node_count());
        }
    }
}

#[test]
fn proof_round_trip() {
    let bs = blocks(2000, 5);
    let list = FlexList::build(&bs).unwrap();
    let starts = offsets(&bs);
    let indices: Vec<u64> = (0..60).map(|i| (i * 7_777_777) % list.total_len()).collect();
    let proof = list.prove(&indices).unwrap();
    let proven = verify_multi_proof(&list.root(), &indices, &proof).unwrap();
    for (&index, p) in indices.iter().zip(&proven) {
        let found = list.search(index).unwrap();
        assert_eq!((p.start, p.length, p.tag), (found.start, found.block.length, found.block.tag));
        assert!(starts.contains(&p.start));
    }
    assert_eq!(MultiProof::from_bytes(proof.as_bytes().to_vec()).unwrap(), proof);
}

/// Applies `edits` one at a time, each as its own batch, so that no edit shifts a later one.
fn apply_one_by_one(list: &mut FlexList, edits: &[Edit]) {
    let mut order: Vec<(usize, &Edit)> = edits.iter().enumerate().collect();
    order.sort_by_key(|(i, e)| {
        let insert = matches!(e, Edit::Insert { .. });
        (std::cmp::Reverse(e.at()), insert, std::cmp::Reverse(*i))
    });
    for (_, e) in order {
        let old = list.root();
        let proof = list.multi_update(std::slice::from_ref(e)).unwrap();
        assert_eq!(verify_multi_update(&old, std::slice::from_ref(e), &proof), Ok(list.root()));
    }
}

fn arb_batch(model: Vec<Block>, max: usize) -> impl Strategy<Value = (Vec<Block>, Vec<Edit>)> {
    let len: u64 = model.iter().map(|b| u64::from(b.length)).sum();
    let starts = offsets(&model);
    let n = model.len();
    let edit = (0u8..3, any::<u64>(), any::<u64>(), 1u32..60).prop_map(move |(kind, pick, seed, length)| {
        let blk = block(seed, length);
        if kind == 0 || n == 0 {
            let boundary = (pick as usize) % (n + 1);
            let at = if boundary == n { len } else { starts[boundary] };
            Edit::Insert { at, block: blk }
        } else {
            let at = pick % len;
            if kind == 1 {
                Edit::Modify { at, block: blk }
            } else {
                Edit::Remove { at }
            }
        }
    });
    proptest::collection::vec(edit, 1..max).prop_map(move |edits| {
        // At most one modify/remove per block.
        let starts = offsets(&model);
        let mut seen = std::collections::HashSet::new();
        let edits = edits
            .into_iter()
            .filter(|e| match e {
                Edit::Insert { .. } => true,
                _ => seen.insert(starts.partition_point(|&s| s <= e.at())),
            })
            .collect();
        (model.clone(), edits)
    })
}

fn arb_case() -> impl Strategy<Value = (Vec<Block>, Vec<Edit>)> {
    (0u64..400, any::<u64>()).prop_flat_map(|(n, seed)| arb_batch(blocks(n, seed % 1000), 40))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// multiUpdate root == one-by-one root == fresh build root, the client accepts the proof,
    /// and the contents match the model.
    #[test]
    fn batches_match_model((model, edits) in arb_case()) {
        let mut batched = FlexList::build(&model).unwrap();
        let old = batched.root();
        let proof = batched.multi_update(&edits).unwrap();
        let expected = model_apply(&model, &edits);
        prop_assert_eq!(contents(&batched), expected.clone());
        prop_assert_eq!(batched.block_count(), expected.len());
        let fresh = FlexList::build(&expected).unwrap();
        prop_assert_eq!(batched.root(), fresh.root());
        prop_assert_eq!(verify_multi_update(&old, &edits, &proof), Ok(fresh.root()));
        let decoded = UpdateProof::from_bytes(&proof.to_bytes()).unwrap();
        prop_assert_eq!(&decoded, &proof);

        let mut single = FlexList::build(&model).unwrap();
        apply_one_by_one(&mut single, &edits);
        prop_assert_eq!(single.root(), fresh.root());
        prop_assert_eq!(contents(&single), expected.clone());
        for at in [0, fresh.total_len() / 3, fresh.total_len().saturating_sub(1)] {
            prop_assert_eq!(batched.search(at), fresh.search(at));
            // iter_from walks the edited list's bottom level: the blocks from `at`'s on.
            let walked: Vec<Located> = batched.iter_from(at).collect();
            let expected: Vec<Located> =
                fresh.iter().skip_while(|l| l.start + u64::from(l.block.length) <= at).collect();
            prop_assert_eq!(walked, expected);
        }
        prop_assert_eq!(batched.iter_from(fresh.total_len()).count(), 0);
    }

    /// A long random sequence of single edits keeps ranks, search and contents right.
    #[test]
    fn single_edit_sequences(seed in any::<u64>(), steps in proptest::collection::vec((0u8..3, any::<u64>(), 1u32..80), 1..60)) {
        let mut model = blocks(seed % 50, seed);
        let mut list = FlexList::build(&model).unwrap();
        for (i, (kind, pick, length)) in steps.into_iter().enumerate() {
            let len: u64 = model.iter().map(|b| u64::from(b.length)).sum();
            let blk = block(seed ^ (i as u64 + 1) << 32, length);
            let edit = if kind == 0 || model.is_empty() {
                let starts = offsets(&model);
                let k = (pick as usize) % (model.len() + 1);
                Edit::Insert { at: starts.get(k).copied().unwrap_or(len), block: blk }
            } else if kind == 1 {
                Edit::Modify { at: pick % len, block: blk }
            } else {
                Edit::Remove { at: pick % len }
            };
            model = model_apply(&model, &[edit]);
            list.apply(&[edit]).unwrap();
            prop_assert_eq!(list.total_len(), model.iter().map(|b| u64::from(b.length)).sum::<u64>());
        }
        prop_assert_eq!(contents(&list), model.clone());
        prop_assert_eq!(list.root(), FlexList::build(&model).unwrap().root());
        let starts = offsets(&model);
        for (i, b) in model.iter().enumerate() {
            prop_assert_eq!(list.search(starts[i] + u64::from(b.length) - 1), Some(Located { start: starts[i], block: *b }));
        }
    }

    /// Decoders never panic on arbitrary bytes.
    #[test]
    fn decoders_survive_garbage(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let root = hash::data(b"root");
        let _ = MultiProof::from_bytes(bytes.clone());
        let _ = UpdateProof::from_bytes(&bytes);
        if let Ok(p) = MultiProof::from_bytes(bytes.clone()) {
            let _ = verify_multi_proof(&root, &[0, 5], &p);
            let _ = verify_multi_update(&root, &[Edit::Remove { at: 0 }], &UpdateProof { new_root: root, proof: p });
        }
    }
}

#[test]
fn edit_errors_are_typed() {
    let bs = blocks(10, 6);
    let mut list = FlexList::build(&bs).unwrap();
    let len = list.total_len();
    let root = list.root();
    let b = block(99, 10);
    assert_eq!(list.apply(&[Edit::Remove { at: len }]), Err(EditError::OutOfRange { at: len, len }));
    assert_eq!(list.apply(&[Edit::Insert { at: len + 1, block: b }]), Err(EditError::OutOfRange { at: len + 1, len }));
    assert_eq!(list.apply(&[Edit::Insert { at: 1, block: b }]), Err(EditError::NotABoundary { at: 1 }));
    assert_eq!(list.apply(&[Edit::Modify { at: 0, block: block(1, 0) }]), Err(EditError::EmptyBlock { at: 0 }));
    assert_eq!(
        list.apply(&[Edit::Remove { at: 0 }, Edit::Modify { at: 0, block: b }]),
        Err(EditError::Conflict { at: 0 })
    );
    // A refused batch leaves the list as it was.
    assert_eq!(list.root(), root);
    assert_eq!(contents(&list), bs);
}

/// Any batch, valid or not: offsets anywhere up to past the end, inserts off boundaries, two
/// changes to one block.
fn arb_any_batch() -> impl Strategy<Value = (Vec<Block>, Vec<Edit>)> {
    (0u64..200, any::<u64>()).prop_flat_map(|(n, seed)| {
        let model = blocks(n, seed % 1000);
        let len: u64 = model.iter().map(|b| u64::from(b.length)).sum();
        let edit = (0u8..3, 0..len + 3, any::<u64>(), 0u32..60).prop_map(|(kind, at, seed, length)| {
            let block = block(seed, length);
            match kind {
                0 => Edit::Insert { at, block },
                1 => Edit::Modify { at, block },
                _ => Edit::Remove { at },
            }
        });
        (Just(model), proptest::collection::vec(edit, 1..12))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// prove_update gives exactly what multi_update gives (new root and proof bytes), and
    /// leaves its list as it was.
    #[test]
    fn prove_update_equals_multi_update((model, edits) in arb_case()) {
        let proving = FlexList::build(&model).unwrap();
        let old = proving.root();
        let proven = proving.prove_update(&edits).unwrap();
        let mut updating = FlexList::build(&model).unwrap();
        let updated = updating.multi_update(&edits).unwrap();
        prop_assert_eq!(proven.new_root, updated.new_root);
        prop_assert_eq!(proven.new_root, updating.root());
        prop_assert_eq!(proven.proof.as_bytes(), updated.proof.as_bytes());
        prop_assert_eq!(proven.to_bytes(), updated.to_bytes());
        prop_assert_eq!(&proven, &updated);
        prop_assert_eq!(proving.root(), old);
        prop_assert_eq!(contents(&proving), model.clone());
        prop_assert_eq!(verify_multi_update(&old, &edits, &proven), Ok(updating.root()));
        // The list proven on still updates as the other did.
        let mut proving = proving;
        prop_assert_eq!(proving.multi_update(&edits).unwrap(), updated);
    }

    /// On any batch, prove_update and multi_update agree: the same proof, or the same error;
    /// and a refused batch changes neither list.
    #[test]
    fn prove_update_refuses_what_multi_update_refuses((model, edits) in arb_any_batch()) {
        let proving = FlexList::build(&model).unwrap();
        let old = proving.root();
        let mut updating = FlexList::build(&model).unwrap();
        let proven = proving.prove_update(&edits);
        let updated = updating.multi_update(&edits);
        prop_assert_eq!(&proven, &updated);
        prop_assert_eq!(proving.root(), old);
        if updated.is_err() {
            prop_assert_eq!(updating.root(), old);
            prop_assert_eq!(contents(&updating), model.clone());
        }
    }
}
