//! The provider's namespace tree against a model (a sorted map of names to entries), and its
//! proofs against the client's verifiers.

use super::*;
use crate::flexlist::verify_multi_update_len;
use crate::namespace::{verify_listing, verify_lookup};
use crate::pdp::FileId;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// An entry for `name` whose content depends on `seed` (so a put can change an entry).
pub(in crate::namespace) fn entry(name: &str, seed: u8) -> EntryRecord {
    EntryRecord {
        name: name.to_string(),
        file: FileId([seed; 16]),
        versions_root: Digest([seed.wrapping_mul(31); 32]),
        versions: u64::from(seed % 5) + 1,
        next_version: u64::from(seed) + 2,
    }
}

fn entries(names: &[&str]) -> Vec<EntryRecord> {
    names.iter().enumerate().map(|(i, n)| entry(n, i as u8 + 1)).collect()
}

/// The root of a fresh list over `entries`' leaves (what the client computes from scratch).
fn built_root(entries: &[EntryRecord]) -> Digest {
    FlexList::build(&entries.iter().map(EntryRecord::leaf).collect::<Vec<_>>()).unwrap().root()
}

fn all_entries(tree: &NamespaceTree) -> Vec<EntryRecord> {
    tree.entries().map(|e| e.cloned()).collect::<Result<_, _>>().unwrap()
}

/// Every slot the list names holds an entry, and no other slot does (nothing leaked).
fn check_slots(tree: &NamespaceTree) {
    let named: std::collections::BTreeSet<u64> = tree.list.iter().map(|l| l.block.block_ref).collect();
    assert_eq!(named.len() as u64, tree.len(), "two leaves share a slot");
    for (slot, e) in tree.slots.iter().enumerate() {
        assert_eq!(
            e.is_some(),
            named.contains(&(slot as u64)),
            "slot {slot}: occupied but unnamed, or named but empty"
        );
    }
    for &slot in &tree.free {
        assert!(tree.slots[slot as usize].is_none(), "free slot {slot} is occupied");
    }
}

/// The lookup of every name in `names` verifies against the tree's root and size and agrees
/// with `find`; so does the listing.
fn check_proofs(tree: &NamespaceTree, names: &[&str]) {
    let (root, len) = (tree.root(), tree.len());
    for name in names {
        let (answer, found) = tree.lookup(name).unwrap();
        assert_eq!(found, tree.find(name).unwrap(), "{name}");
        assert_eq!(verify_lookup(&root, len, name, &answer), Ok(found), "{name}");
    }
    let listed = all_entries(tree);
    verify_listing(&root, len, &listed, tree.listing_proof().unwrap().as_ref()).unwrap();
}

const ALPHABET: [&str; 8] = ["a", "ab", "b", "c", "d", "da", "e", "f"];

/// One step: a put of an entry (name, seed), or a delete of a name.
#[derive(Clone, Debug)]
enum Step {
    Put(usize, u8),
    Delete(usize),
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..ALPHABET.len(), any::<u8>()).prop_map(|(n, s)| Step::Put(n, s)),
        (0..ALPHABET.len()).prop_map(Step::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Puts and deletes on the tree follow a sorted map; every step's proof verifies from the
    /// old root to the root `apply` gives, and proving changes nothing.
    #[test]
    fn tree_follows_a_sorted_map(
        initial in proptest::collection::btree_map(0..ALPHABET.len(), any::<u8>(), 0..ALPHABET.len()),
        steps in proptest::collection::vec(arb_step(), 1..40),
    ) {
        let mut model: BTreeMap<String, EntryRecord> =
            initial.into_iter().map(|(n, s)| (ALPHABET[n].to_string(), entry(ALPHABET[n], s))).collect();
        let mut tree = NamespaceTree::load(model.values().cloned().collect()).unwrap();
        for step in steps {
            let (name, new) = match step {
                Step::Put(n, s) => (ALPHABET[n], Some(entry(ALPHABET[n], s))),
                Step::Delete(n) => (ALPHABET[n], None),
            };
            let index = model.keys().filter(|k| k.as_str() < name).count() as u64;
            let present = model.contains_key(name);
            let edit = match (&new, present) {
                (Some(e), true) => Some(Edit::Modify { at: index, block: e.leaf() }),
                (Some(e), false) => Some(Edit::Insert { at: index, block: e.leaf() }),
                (None, true) => Some(Edit::Remove { at: index }),
                (None, false) => None,
            };
            match &new {
                Some(e) => { model.insert(name.to_string(), e.clone()); }
                None => { model.remove(name); }
            }
            if let Some(edit) = edit {
                let old = tree.root();
                let (proof, batch) = tree.prove_update(&[edit], new.as_ref()).unwrap();
                prop_assert_eq!(tree.root(), old, "prove_update changed the tree");
                match &new {
                    Some(e) => prop_assert_eq!(batch, EntryBatch { put: vec![e.clone()], delete: vec![] }),
                    None => prop_assert_eq!(batch, EntryBatch { put: vec![], delete: vec![name.to_string()] }),
                }
                let root = tree.apply(&[edit], new.as_ref()).unwrap();
                prop_assert_eq!(root, tree.root());
                prop_assert_eq!(verify_multi_update_len(&old, &[edit], &proof), Ok((root, model.len() as u64)));
            }
            let want: Vec<EntryRecord> = model.values().cloned().collect();
            prop_assert_eq!(tree.root(), built_root(&want));
            prop_assert_eq!(tree.root(), NamespaceTree::load(want.clone()).unwrap().root());
            prop_assert_eq!(tree.len(), want.len() as u64);
            prop_assert_eq!(tree.is_empty(), want.is_empty());
            prop_assert_eq!(all_entries(&tree), want.clone());
            for (i, e) in want.iter().enumerate() {
                prop_assert_eq!(tree.entry(i as u64).unwrap(), e);
            }
            for n in ALPHABET {
                let index = model.keys().filter(|k| k.as_str() < n).count() as u64;
                let expected = match model.get(n) {
                    Some(e) => Found::At { index, entry: e.clone() },
                    None => Found::Absent { index },
                };
                prop_assert_eq!(tree.find(n).unwrap(), expected);
            }
            check_slots(&tree);
            check_proofs(&tree, &ALPHABET);
        }
    }
}

#[test]
fn lookups_and_listings_verify() {
    let tree = NamespaceTree::load(entries(&["b", "d", "f"])).unwrap();
    let (root, len) = (tree.root(), tree.len());
    assert_eq!(len, 3);
    for (i, name) in ["b", "d", "f"].into_iter().enumerate() {
        let (answer, found) = tree.lookup(name).unwrap();
        let want = Found::At { index: i as u64, entry: tree.entry(i as u64).unwrap().clone() };
        assert_eq!(found, want);
        assert_eq!(verify_lookup(&root, len, name, &answer), Ok(want));
    }
    // Before the first, between, after the last; and names sharing a prefix with present ones.
    for (name, index) in [("a", 0), ("c", 1), ("bb", 1), ("e", 2), ("d/x", 2), ("g", 3), ("zzz", 3)] {
        let (answer, found) = tree.lookup(name).unwrap();
        assert_eq!(found, Found::Absent { index }, "{name}");
        assert_eq!(answer.index, index);
        assert_eq!(answer.entries.len(), lookup_indices(index, len, false).len());
        assert_eq!(verify_lookup(&root, len, name, &answer), Ok(found), "{name}");
    }
    let listed = all_entries(&tree);
    assert_eq!(listed, entries(&["b", "d", "f"]));
    assert_eq!(verify_listing(&root, len, &listed, tree.listing_proof().unwrap().as_ref()), Ok(()));
    // The listing proof does not stand for a listing that leaves one out.
    let proof = tree.listing_proof().unwrap();
    assert!(verify_listing(&root, len, &listed[..2], proof.as_ref()).is_err());

    // A single name.
    let one = NamespaceTree::load(entries(&["m"])).unwrap();
    check_proofs(&one, &["a", "m", "z"]);
    assert_eq!(one.find("z").unwrap(), Found::Absent { index: 1 });
}

#[test]
fn the_empty_namespace() {
    let tree = NamespaceTree::load(Vec::new()).unwrap();
    assert!(tree.is_empty());
    assert_eq!(tree.root(), FlexList::new().root());
    assert_eq!(tree.root(), NamespaceTree::default().root());
    assert_eq!(tree.find("x").unwrap(), Found::Absent { index: 0 });
    assert!(matches!(tree.entry(0), Err(TreeError::Dangling)));
    assert_eq!(tree.entries().count(), 0);
    let (answer, found) = tree.lookup("x").unwrap();
    assert_eq!(answer, LookupProof { index: 0, entries: Vec::new(), proof: None });
    assert_eq!(verify_lookup(&tree.root(), 0, "x", &answer), Ok(found));
    assert_eq!(tree.listing_proof().unwrap(), None);
    assert_eq!(verify_listing(&tree.root(), 0, &[], None), Ok(()));

    // The first name, then back to empty.
    let mut tree = tree;
    let e = entry("x", 7);
    let edit = Edit::Insert { at: 0, block: e.leaf() };
    let (proof, _) = tree.prove_update(&[edit], Some(&e)).unwrap();
    let root = tree.apply(&[edit], Some(&e)).unwrap();
    assert_eq!(verify_multi_update_len(&FlexList::new().root(), &[edit], &proof), Ok((root, 1)));
    let edit = Edit::Remove { at: 0 };
    let (proof, batch) = tree.prove_update(&[edit], None).unwrap();
    assert_eq!(batch.delete, vec!["x".to_string()]);
    let new = tree.apply(&[edit], None).unwrap();
    assert_eq!(new, FlexList::new().root());
    assert_eq!(verify_multi_update_len(&root, &[edit], &proof), Ok((new, 0)));
    check_slots(&tree);
}

#[test]
fn load_rejects_unordered_names() {
    let out_of_order = entries(&["a", "c", "b"]);
    assert_eq!(NamespaceTree::load(out_of_order).unwrap_err(), TreeError::OutOfOrder("b".into()));
    let duplicate = entries(&["a", "b", "b", "c"]);
    assert_eq!(NamespaceTree::load(duplicate).unwrap_err(), TreeError::OutOfOrder("b".into()));
    let first_two = entries(&["b", "a"]);
    assert_eq!(NamespaceTree::load(first_two).unwrap_err(), TreeError::OutOfOrder("a".into()));
    // Byte order, not some other collation: "B" < "a".
    assert!(NamespaceTree::load(entries(&["B", "a"])).is_ok());
    assert!(NamespaceTree::load(entries(&["a", "B"])).is_err());
}

#[test]
fn a_leaf_that_is_not_the_entry_is_refused() {
    let mut tree = NamespaceTree::load(entries(&["b", "d"])).unwrap();
    let root = tree.root();
    let e = entry("c", 9);
    let other = entry("c", 10);
    let cases = [
        (Edit::Insert { at: 1, block: other.leaf() }, Some(&e)),
        (Edit::Insert { at: 1, block: e.leaf() }, None),
        (Edit::Modify { at: 1, block: other.leaf() }, Some(&e)),
        (Edit::Modify { at: 1, block: e.leaf() }, None),
    ];
    for (edit, given) in cases {
        assert_eq!(tree.prove_update(&[edit], given).unwrap_err(), TreeError::WrongLeaf, "{edit:?}");
        assert_eq!(tree.apply(&[edit], given).unwrap_err(), TreeError::WrongLeaf, "{edit:?}");
        assert_eq!(tree.root(), root);
        assert_eq!(all_entries(&tree), entries(&["b", "d"]));
        check_slots(&tree);
    }
}

#[test]
fn a_leaf_with_the_entrys_tag_but_another_length_is_refused() {
    // The tag matches, the length does not: the proof would be of a length-2 leaf while
    // `apply` places the entry's own length-1 leaf, so the two would disagree.
    let mut tree = NamespaceTree::load(entries(&["b", "d"])).unwrap();
    let root = tree.root();
    let e = entry("c", 9);
    let long = Block::new(e.leaf().tag, 2, 0);
    for edit in [Edit::Insert { at: 1, block: long }, Edit::Modify { at: 1, block: long }] {
        assert_eq!(tree.prove_update(&[edit], Some(&e)).map(|_| ()), Err(TreeError::WrongLeaf), "{edit:?}");
        assert_eq!(tree.apply(&[edit], Some(&e)).map(|_| ()), Err(TreeError::WrongLeaf), "{edit:?}");
        assert_eq!(tree.root(), root);
    }
}

#[test]
fn a_batch_refused_for_a_wrong_leaf_leaks_no_slot() {
    // The first edit is fine, the second brings the wrong leaf: nothing changes, and the slot
    // the first took is given back.
    let mut tree = NamespaceTree::load(entries(&["b", "d"])).unwrap();
    let root = tree.root();
    let e = entry("c", 9);
    let batch = [Edit::Insert { at: 1, block: e.leaf() }, Edit::Insert { at: 2, block: entry("e", 1).leaf() }];
    assert_eq!(tree.apply(&batch, Some(&e)).unwrap_err(), TreeError::WrongLeaf);
    assert_eq!(tree.root(), root);
    check_slots(&tree);
}

#[test]
fn a_batch_refused_for_a_position_past_the_end_leaks_no_slot() {
    let mut tree = NamespaceTree::load(entries(&["b", "d"])).unwrap();
    let root = tree.root();
    let e = entry("c", 9);
    let ok = Edit::Insert { at: 1, block: e.leaf() };
    for bad in
        [Edit::Remove { at: 2 }, Edit::Modify { at: 2, block: e.leaf() }, Edit::Insert { at: 3, block: e.leaf() }]
    {
        assert!(tree.prove_update(&[bad], Some(&e)).is_err(), "{bad:?}");
        assert!(tree.apply(&[bad], Some(&e)).is_err(), "{bad:?}");
        assert!(tree.prove_update(&[ok, bad], Some(&e)).is_err(), "{bad:?}");
        assert!(tree.apply(&[ok, bad], Some(&e)).is_err(), "{bad:?}");
        assert_eq!(tree.root(), root);
        check_slots(&tree);
    }
}

#[test]
fn a_batch_the_list_refuses_leaks_no_slot() {
    // Two changes to one name: the list refuses the batch after the tree took its slots.
    let mut tree = NamespaceTree::load(entries(&["b", "d"])).unwrap();
    let root = tree.root();
    let e = entry("c", 9);
    let conflict = [Edit::Modify { at: 0, block: e.leaf() }, Edit::Remove { at: 0 }];
    assert!(matches!(tree.prove_update(&conflict, Some(&e)), Err(TreeError::Edit(EditError::Conflict { .. }))));
    assert!(matches!(tree.apply(&conflict, Some(&e)), Err(TreeError::Edit(EditError::Conflict { .. }))));
    assert_eq!(tree.root(), root);
    check_slots(&tree);
    // The tree still works, and reuses the slot it gave back.
    let root = tree.apply(&[Edit::Insert { at: 1, block: e.leaf() }], Some(&e)).unwrap();
    assert_eq!(root, built_root(&[entry("b", 1), e, entry("d", 2)]));
    assert_eq!(tree.slots.len(), 3);
    check_slots(&tree);
}

#[test]
fn batches_say_what_to_store() {
    let mut tree = NamespaceTree::load(entries(&["a", "c"])).unwrap();
    // A modify that renames: "b" at the position of "a" (still in order).
    let b = entry("b", 5);
    let edit = Edit::Modify { at: 0, block: b.leaf() };
    let old = tree.root();
    let (proof, batch) = tree.prove_update(&[edit], Some(&b)).unwrap();
    assert_eq!(batch, EntryBatch { put: vec![b.clone()], delete: vec!["a".into()] });
    let root = tree.apply(&[edit], Some(&b)).unwrap();
    assert_eq!(verify_multi_update_len(&old, &[edit], &proof), Ok((root, 2)));
    assert_eq!(all_entries(&tree), vec![b.clone(), entry("c", 2)]);
    assert_eq!(tree.find("a").unwrap(), Found::Absent { index: 0 });
    // A modify that keeps the name deletes nothing.
    let c = entry("c", 8);
    let (_, batch) = tree.prove_update(&[Edit::Modify { at: 1, block: c.leaf() }], Some(&c)).unwrap();
    assert_eq!(batch, EntryBatch { put: vec![c], delete: vec![] });
    // A remove deletes the removed name.
    let (_, batch) = tree.prove_update(&[Edit::Remove { at: 1 }], None).unwrap();
    assert_eq!(batch, EntryBatch { put: vec![], delete: vec!["c".into()] });
    let (_, batch) = tree.prove_update(&[Edit::Remove { at: 0 }], None).unwrap();
    assert_eq!(batch, EntryBatch { put: vec![], delete: vec!["b".into()] });
    check_slots(&tree);
}

#[test]
fn a_doubled_insert_applies() {
    // A lying provider inserts the same entry twice; the tree takes it without panicking.
    let mut tree = NamespaceTree::load(entries(&["a", "c"])).unwrap();
    let b = entry("b", 5);
    let edit = Edit::Insert { at: 1, block: b.leaf() };
    let old = tree.root();
    let (proof, batch) = tree.prove_update(&[edit, edit], Some(&b)).unwrap();
    assert_eq!(tree.root(), old);
    assert_eq!(batch.put, vec![b.clone(), b.clone()]);
    let root = tree.apply(&[edit, edit], Some(&b)).unwrap();
    assert_eq!(tree.len(), 4);
    assert_eq!(verify_multi_update_len(&old, &[edit, edit], &proof), Ok((root, 4)));
    let doubled = vec![entry("a", 1), b.clone(), b.clone(), entry("c", 2)];
    assert_eq!(all_entries(&tree), doubled);
    assert_eq!(root, built_root(&doubled));
    check_slots(&tree);
    // Lookups still answer (which copy `find` lands on does not matter), and removing one
    // copy leaves the other.
    assert!(matches!(tree.find("b").unwrap(), Found::At { entry, .. } if entry == b));
    tree.apply(&[Edit::Remove { at: 1 }], None).unwrap();
    assert_eq!(all_entries(&tree), vec![entry("a", 1), b, entry("c", 2)]);
    check_slots(&tree);
}

#[test]
fn a_large_namespace() {
    let n = 100_000u32;
    let name = |i: u32| format!("dir/{i:07}");
    let big: Vec<EntryRecord> = (0..n)
        .map(|i| EntryRecord {
            name: name(2 * i),
            file: FileId([(i % 251) as u8; 16]),
            versions_root: Digest([(i % 253) as u8; 32]),
            versions: 1,
            next_version: u64::from(i) + 2,
        })
        .collect();
    let mut tree = NamespaceTree::load(big.clone()).unwrap();
    assert_eq!(tree.len(), u64::from(n));
    let (root, len) = (tree.root(), tree.len());
    for i in [0, 1, 4_999, 50_000, 99_998, 99_999] {
        let (answer, found) = tree.lookup(&name(2 * i)).unwrap();
        assert_eq!(found, Found::At { index: u64::from(i), entry: big[i as usize].clone() });
        assert_eq!(verify_lookup(&root, len, &name(2 * i), &answer), Ok(found));
        // The odd names fall between.
        let (answer, found) = tree.lookup(&name(2 * i + 1)).unwrap();
        assert_eq!(found, Found::Absent { index: u64::from(i) + 1 });
        assert_eq!(verify_lookup(&root, len, &name(2 * i + 1), &answer), Ok(found));
    }
    assert_eq!(tree.find("a").unwrap(), Found::Absent { index: 0 });
    assert_eq!(tree.find("z").unwrap(), Found::Absent { index: len });
    // An insert in the middle.
    let new = entry(&name(2 * 60_000 + 1), 3);
    let Found::Absent { index } = tree.find(&new.name).unwrap() else { panic!("present") };
    assert_eq!(index, 60_001);
    let edit = Edit::Insert { at: index, block: new.leaf() };
    let (proof, _) = tree.prove_update(&[edit], Some(&new)).unwrap();
    let new_root = tree.apply(&[edit], Some(&new)).unwrap();
    assert_eq!(verify_multi_update_len(&root, &[edit], &proof), Ok((new_root, len + 1)));
    let mut all = big;
    all.insert(index as usize, new.clone());
    assert_eq!(new_root, NamespaceTree::load(all).unwrap().root());
    assert_eq!(tree.find(&new.name).unwrap(), Found::At { index, entry: new });
}

#[test]
fn a_name_out_of_place_is_refused_and_changes_nothing() {
    let mut tree = NamespaceTree::load(entries(&["b", "d", "f"])).unwrap();
    let root = tree.root();
    let refused = |tree: &mut NamespaceTree, edit: Edit, e: &EntryRecord| {
        assert_eq!(tree.prove_update(&[edit], Some(e)).map(|_| ()), Err(TreeError::OutOfOrder(e.name.clone())));
        assert_eq!(tree.apply(&[edit], Some(e)), Err(TreeError::OutOfOrder(e.name.clone())));
    };
    // "e" belongs between "d" and "f" (position 2), not at 0, 1 or 3; nor may it replace
    // "b" (it would precede "d"); a name already there ("d") may not be inserted beside itself.
    let e = entry("e", 7);
    for at in [0, 1, 3] {
        refused(&mut tree, Edit::Insert { at, block: e.leaf() }, &e);
    }
    refused(&mut tree, Edit::Modify { at: 0, block: e.leaf() }, &e);
    let d = entry("d", 9);
    refused(&mut tree, Edit::Insert { at: 1, block: d.leaf() }, &d);
    refused(&mut tree, Edit::Insert { at: 2, block: d.leaf() }, &d);
    assert_eq!(tree.root(), root);
    check_slots(&tree);
    // In place it goes in, and a modify that keeps the order is taken.
    tree.apply(&[Edit::Insert { at: 2, block: e.leaf() }], Some(&e)).unwrap();
    tree.apply(&[Edit::Modify { at: 1, block: d.leaf() }], Some(&d)).unwrap();
    assert_eq!(all_entries(&tree), vec![entry("b", 1), d, e, entry("f", 3)]);
    check_slots(&tree);
}
