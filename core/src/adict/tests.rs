//! ADICT against a plain map: every proof verifies and says what the map says, every root a
//! client computes from a proof is the server's, and a proof bent in any way is refused.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u8),
    Delete(u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // Few keys, so that puts overwrite and deletes hit.
    let op = prop_oneof![(0u8..40, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)), (0u8..40).prop_map(Op::Delete)];
    proptest::collection::vec(op, 0..120)
}

fn key(k: u8) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

proptest! {
    #[test]
    fn the_tree_and_a_client_agree_with_a_map_at_every_step(ops in ops()) {
        let (mut tree, mut model) = (Tree::new(), BTreeMap::new());
        for op in ops {
            let root = tree.root();
            match op {
                Op::Put(k, v) => {
                    let proof = tree.prove(&key(k));
                    let client = proof.root_after_put(&root, &key(k), &value_hash(&[v])).unwrap();
                    tree.put(&key(k), &[v]);
                    model.insert(k, v);
                    prop_assert_eq!(client, tree.root());
                }
                Op::Delete(k) => {
                    let proof = tree.prove(&key(k));
                    let client = proof.root_after_delete(&root, &key(k)).unwrap();
                    tree.delete(&key(k));
                    model.remove(&k);
                    prop_assert_eq!(client, tree.root());
                }
            }
            prop_assert_eq!(tree.len(), model.len());
            for k in 0..40u8 {
                let proven = tree.prove(&key(k)).verify(&tree.root(), &key(k)).unwrap();
                prop_assert_eq!(proven, model.get(&k).map(|v| value_hash(&[*v])));
                prop_assert_eq!(tree.get(&key(k)), model.get(&k).map(std::slice::from_ref));
            }
            let mut all: Vec<_> = tree.entries().iter().map(|(k, v)| (key_path(k), value_hash(v))).collect();
            prop_assert_eq!(root_of_all(&mut all).unwrap(), tree.root(), "the listing's root");
        }
    }

    /// A clone is a version of its own: changing one (in place where nothing is shared)
    /// leaves the other as it was, its root and every value.
    #[test]
    fn versions_sharing_nodes_never_change_each_other(ops in ops(), at in 0usize..64) {
        let (mut tree, mut kept) = (Tree::new(), None);
        for (n, op) in ops.into_iter().enumerate() {
            if n == at {
                let entries: Vec<(Vec<u8>, Vec<u8>)> =
                    tree.entries().iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
                kept = Some((tree.clone(), tree.root(), entries));
            }
            match op {
                Op::Put(k, v) => tree.put(&key(k), &[v]),
                Op::Delete(k) => tree.delete(&key(k)),
            }
        }
        if let Some((old, root, entries)) = kept {
            prop_assert_eq!(old.root(), root);
            let now: Vec<(Vec<u8>, Vec<u8>)> = old.entries().iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(now, entries);
        }
    }

    /// The root is a function of the contents: any order of puts gives the same one.
    #[test]
    fn the_root_does_not_depend_on_the_order_of_puts(keys in proptest::collection::btree_set(any::<u16>(), 0..60)) {
        let (mut up, mut down) = (Tree::new(), Tree::new());
        for k in &keys {
            up.put(&k.to_le_bytes(), b"v");
        }
        for k in keys.iter().rev() {
            down.put(&k.to_le_bytes(), b"v");
        }
        prop_assert_eq!(up.root(), down.root());
    }
}

fn sample_tree() -> Tree {
    let mut tree = Tree::new();
    for k in 0..200u8 {
        tree.put(&key(k), &[k]);
    }
    tree
}

#[test]
fn a_proof_bent_in_any_way_is_refused() {
    let tree = sample_tree();
    let root = tree.root();
    let (present, absent) = (key(7), b"absent".to_vec());
    let proof = tree.prove(&present);
    assert_eq!(proof.verify(&root, &present).unwrap(), Some(value_hash(&[7])));
    // Another value in the leaf.
    let mut bent = proof.clone();
    bent.end = Bottom::Leaf { path: key_path(&present), value_hash: value_hash(b"forged") };
    assert_eq!(bent.verify(&root, &present), Err(ProofError::WrongRoot));
    // A sibling changed, dropped, or one too many.
    let mut bent = proof.clone();
    bent.siblings[0].0[0] ^= 1;
    assert!(bent.verify(&root, &present).is_err());
    let mut bent = proof.clone();
    bent.siblings.pop();
    assert!(bent.verify(&root, &present).is_err());
    let mut bent = proof.clone();
    bent.siblings.push(Digest::ZERO);
    assert!(bent.verify(&root, &present).is_err());
    // The key said absent: the path ends at an empty subtree or at another key's leaf,
    // neither of which leads to this root.
    let mut bent = proof.clone();
    bent.end = Bottom::Empty;
    assert_eq!(bent.verify(&root, &present), Err(ProofError::WrongRoot));
    let other = tree.prove(&key(8));
    assert!(other.verify(&root, &present).is_err(), "another key's proof");
    // A claimed deepest sibling that is not the one hashed in.
    let mut bent = proof.clone();
    bent.last_sibling = Some(Bottom::Leaf { path: key_path(b"x"), value_hash: value_hash(b"y") });
    let claimed = Err(ProofError::Malformed("the deepest sibling is not what it claims"));
    assert_eq!(bent.root_after_delete(&root, &present), claimed, "a delete reads it");
    assert_eq!(bent.verify(&root, &present), proof.verify(&root, &present), "nothing else reads it");
    // Absence of a key that is absent is proven; of one that is present, never.
    assert_eq!(tree.prove(&absent).verify(&root, &absent).unwrap(), None);
    assert!(tree.prove(&absent).verify(&root, &present).is_err());
    // A stale proof (from before a change) does not verify under the new root.
    let mut later = tree.clone();
    later.put(&present, b"new");
    assert_eq!(proof.verify(&later.root(), &present), Err(ProofError::WrongRoot));
}

#[test]
fn a_listing_must_hold_every_entry_once() {
    let tree = sample_tree();
    let mut all: Vec<_> = tree.entries().iter().map(|(k, v)| (key_path(k), value_hash(v))).collect();
    let mut short = all[1..].to_vec();
    assert_ne!(root_of_all(&mut short).unwrap(), tree.root(), "an entry left out");
    let mut twice = all.clone();
    twice.push(all[0]);
    assert!(root_of_all(&mut twice).is_err());
    all[3].1 = value_hash(b"other");
    assert_ne!(root_of_all(&mut all).unwrap(), tree.root(), "a value changed");
}

#[test]
fn an_empty_dictionary_and_a_single_key() {
    let mut tree = Tree::new();
    assert_eq!(tree.root(), Digest::ZERO);
    assert_eq!(tree.prove(b"k").verify(&Digest::ZERO, b"k").unwrap(), None);
    let proof = tree.prove(b"k");
    let root = proof.root_after_put(&Digest::ZERO, b"k", &value_hash(b"v")).unwrap();
    tree.put(b"k", b"v");
    assert_eq!(root, tree.root());
    assert_eq!(tree.prove(b"k").root_after_delete(&root, b"k").unwrap(), Digest::ZERO);
}

/// Every key, page by page as a client lists them: each page checked against `root`.
fn list_in_pages(tree: &Tree, limit: usize) -> Vec<Vec<u8>> {
    let (root, mut after, mut out) = (tree.root(), None, Vec::new());
    loop {
        let (nodes, more) = tree.page(after, limit);
        let upto = match more {
            true => Some(key_path(tree_last_key(&nodes))),
            false => None,
        };
        let (proven, keys) = verify_range(&nodes, &PathRange { after, upto }).unwrap();
        assert_eq!(proven, root);
        assert!(keys.len() <= limit.max(1) && (!more || !keys.is_empty()));
        out.extend(keys);
        match upto {
            Some(path) => after = Some(path),
            None => return out,
        }
    }
}

fn tree_last_key(nodes: &[RangeNode]) -> &[u8] {
    nodes
        .iter()
        .rev()
        .find_map(|n| match n {
            RangeNode::Inside { key, .. } => Some(key.as_slice()),
            _ => None,
        })
        .expect("a page with keys following holds a key")
}

proptest! {
    #[test]
    fn pages_list_every_key_once_in_path_order(keys in proptest::collection::btree_set(0u8..200, 0..120), limit in 1usize..9) {
        let mut tree = Tree::new();
        for &k in &keys {
            tree.put(&key(k), &[k]);
        }
        let listed = list_in_pages(&tree, limit);
        let mut expected: Vec<_> = keys.iter().map(|&k| key(k)).collect();
        expected.sort_by_key(|k| key_path(k));
        prop_assert_eq!(listed, expected);
    }
}

/// A tree of 40 keys and the proof of its second page of 5.
fn second_page() -> (Tree, PathRange, Vec<RangeNode>) {
    let mut tree = Tree::new();
    for k in 0..40 {
        tree.put(&key(k), &[k]);
    }
    let (first, _) = tree.page(None, 5);
    let after = Some(key_path(tree_last_key(&first)));
    let (nodes, more) = tree.page(after, 5);
    assert!(more);
    let range = PathRange { after, upto: Some(key_path(tree_last_key(&nodes))) };
    (tree, range, nodes)
}

#[test]
fn a_page_whose_proof_is_bent_is_refused() {
    let (tree, range, nodes) = second_page();
    let (root, keys) = verify_range(&nodes, &range).unwrap();
    assert_eq!((root, keys.len()), (tree.root(), 5));
    let inside = nodes.iter().position(|n| matches!(n, RangeNode::Inside { .. })).unwrap();
    let hidden =
        nodes.iter().position(|n| matches!(n, RangeNode::Hidden(h) if *h != crate::hash::Digest::ZERO)).unwrap();

    // A key of the range hidden (its leaf shown by its hash): refused for its place.
    let mut hide = nodes.clone();
    if let RangeNode::Inside { key, value_hash } = &nodes[inside] {
        hide[inside] = RangeNode::Hidden(leaf_hash(&key_path(key), value_hash));
    }
    assert!(matches!(verify_range(&hide, &range), Err(ProofError::Malformed(_))));
    // The same leaf shown as outside the range.
    let mut outside = nodes.clone();
    if let RangeNode::Inside { key, value_hash } = &nodes[inside] {
        outside[inside] = RangeNode::Outside { path: key_path(key), value_hash: *value_hash };
    }
    assert!(matches!(verify_range(&outside, &range), Err(ProofError::Malformed(_))));
    // Another value hash for a key: another root.
    let mut value = nodes.clone();
    if let RangeNode::Inside { key, .. } = &nodes[inside] {
        value[inside] = RangeNode::Inside { key: key.clone(), value_hash: value_hash(b"other") };
    }
    assert_ne!(verify_range(&value, &range).unwrap().0, tree.root());
    // A hidden subtree of other leaves given another hash: another root.
    let mut forged = nodes.clone();
    forged[hidden] = RangeNode::Hidden(value_hash(b"forged"));
    assert_ne!(verify_range(&forged, &range).map(|(r, _)| r), Ok(tree.root()));
    // Cut short, or with a node left over.
    assert!(verify_range(&nodes[..nodes.len() - 1], &range).is_err());
    let mut longer = nodes.clone();
    longer.push(RangeNode::Hidden(crate::hash::Digest::ZERO));
    assert!(verify_range(&longer, &range).is_err());
    // The page's proof offered for a wider range (as a provider that claims it reached the
    // end would): the keys after the page are hidden where the range holds them.
    let wider = PathRange { after: range.after, upto: None };
    assert!(matches!(verify_range(&nodes, &wider), Err(ProofError::Malformed(_))));
}

#[test]
fn a_pruned_tree_deeper_than_a_path_is_refused() {
    let mut nodes = vec![RangeNode::Inner; 257];
    nodes.extend(std::iter::repeat_n(RangeNode::Hidden(crate::hash::Digest::ZERO), 258));
    let all = PathRange { after: None, upto: None };
    assert_eq!(verify_range(&nodes, &all), Err(ProofError::Malformed("deeper than a path")));
}

/// The format, from its description in `crate::hash`: each kind is BLAKE3 keyed by the key
/// derived from its context, and a node hashes its two children's 64 bytes. The root of a
/// small dictionary is pinned, so that any change of a hash shows as a changed format.
#[test]
fn the_hashes_are_blake3_keyed_by_each_kinds_context_and_a_root_is_pinned() {
    let keyed =
        |context: &str, input: &[u8]| Digest(*blake3::keyed_hash(&blake3::derive_key(context, b""), input).as_bytes());
    let (a, b) = (key_path(b"a"), value_hash(b"1"));
    assert_eq!(a, keyed("vouch 2026-11-26 ADICT key path", b"a"));
    assert_eq!(b, keyed("vouch 2026-11-26 ADICT value", b"1"));
    assert_eq!(leaf_hash(&a, &b), keyed("vouch 2026-11-26 ADICT leaf", &[a.0, b.0].concat()));
    assert_eq!(node_hash(&a, &b), keyed("vouch 2026-11-26 ADICT inner node", &[a.0, b.0].concat()));
    let mut tree = Tree::new();
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        tree.put(k.as_bytes(), v.as_bytes());
    }
    assert_eq!(tree.root().to_hex(), "1ebfed6fa688a24e8a4bf3c0322252442caf5764d79713ba3466ebea76cecbc4");
}
