//! The server's side of ADICT: a persistent compressed sparse Merkle tree holding the values.

use super::proof::{Bottom, Proof};
use super::{bit, key_path, leaf_hash, node_hash, value_hash};
use crate::hash::Digest;
use std::sync::Arc;

/// The dictionary and its tree. Cloning is O(1): versions share every unchanged node.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    root: Node,
    len: usize,
}

#[derive(Clone, Debug, Default)]
enum Node {
    #[default]
    Empty,
    Leaf(Arc<Leaf>),
    Inner(Arc<Inner>),
}

#[derive(Debug)]
struct Leaf {
    path: Digest,
    key: Vec<u8>,
    value: Vec<u8>,
    value_hash: Digest,
    hash: Digest,
}

#[derive(Debug)]
struct Inner {
    left: Node,
    right: Node,
    hash: Digest,
}

impl Node {
    fn hash(&self) -> Digest {
        match self {
            Node::Empty => Digest::ZERO,
            Node::Leaf(l) => l.hash,
            Node::Inner(i) => i.hash,
        }
    }

    fn inner(left: Node, right: Node) -> Node {
        let hash = node_hash(&left.hash(), &right.hash());
        Node::Inner(Arc::new(Inner { left, right, hash }))
    }

    /// An inner node of `child` on `path`'s side at `depth` and `other`, in canonical form: a
    /// lone leaf (beside an empty subtree) takes the place of their parent.
    fn join(path: &Digest, depth: usize, child: Node, other: Node) -> Node {
        match (&child, &other) {
            (Node::Empty, Node::Empty) => Node::Empty,
            (Node::Empty, Node::Leaf(_)) => other,
            (Node::Leaf(_), Node::Empty) => child,
            _ if bit(path, depth) => Node::inner(other, child),
            _ => Node::inner(child, other),
        }
    }

    fn bottom(&self) -> Bottom {
        match self {
            Node::Empty => Bottom::Empty,
            Node::Leaf(l) => Bottom::Leaf { path: l.path, value_hash: l.value_hash },
            Node::Inner(i) => Bottom::Inner { left: i.left.hash(), right: i.right.hash() },
        }
    }
}

/// `node` with `leaf` in it, and whether it replaced a leaf of the same key.
fn with_leaf(node: &Node, depth: usize, leaf: Arc<Leaf>) -> (Node, bool) {
    match node {
        Node::Empty => (Node::Leaf(leaf), false),
        Node::Leaf(old) if old.path == leaf.path => (Node::Leaf(leaf), true),
        Node::Leaf(old) => (split(depth, old.clone(), leaf), false),
        Node::Inner(inner) => {
            let (near, far) = match bit(&leaf.path, depth) {
                false => (&inner.left, &inner.right),
                true => (&inner.right, &inner.left),
            };
            let path = leaf.path;
            let (below, replaced) = with_leaf(near, depth + 1, leaf);
            (Node::join(&path, depth, below, far.clone()), replaced)
        }
    }
}

/// Two leaves whose paths agree before `depth`: inner nodes down to where they part.
fn split(depth: usize, a: Arc<Leaf>, b: Arc<Leaf>) -> Node {
    if bit(&a.path, depth) == bit(&b.path, depth) {
        let path = a.path;
        let below = split(depth + 1, a, b);
        // An inner node with one empty child (the other is inner, so it does not collapse).
        return match bit(&path, depth) {
            false => Node::inner(below, Node::Empty),
            true => Node::inner(Node::Empty, below),
        };
    }
    match bit(&a.path, depth) {
        false => Node::inner(Node::Leaf(a), Node::Leaf(b)),
        true => Node::inner(Node::Leaf(b), Node::Leaf(a)),
    }
}

fn without(node: &Node, depth: usize, path: &Digest) -> Node {
    match node {
        Node::Empty => Node::Empty,
        Node::Leaf(l) if l.path == *path => Node::Empty,
        Node::Leaf(_) => node.clone(),
        Node::Inner(inner) => {
            let (near, far) = match bit(path, depth) {
                false => (&inner.left, &inner.right),
                true => (&inner.right, &inner.left),
            };
            Node::join(path, depth, without(near, depth + 1, path), far.clone())
        }
    }
}

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    /// The authenticator: the tree's root.
    pub fn root(&self) -> Digest {
        self.root.hash()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The leaf on `path`'s way, and the siblings met going down to it.
    fn walk(&self, path: &Digest) -> (Vec<Digest>, &Node, Option<&Node>) {
        let (mut siblings, mut node, mut last) = (Vec::new(), &self.root, None);
        while let Node::Inner(inner) = node {
            let (near, far) = match bit(path, siblings.len()) {
                false => (&inner.left, &inner.right),
                true => (&inner.right, &inner.left),
            };
            siblings.push(far.hash());
            last = Some(far);
            node = near;
        }
        (siblings, node, last)
    }

    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        match self.walk(&key_path(key)).1 {
            Node::Leaf(l) if l.key == key => Some(&l.value),
            _ => None,
        }
    }

    /// The proof of `key`'s value, or of its absence, under [`Tree::root`].
    pub fn prove(&self, key: &[u8]) -> Proof {
        let (siblings, end, last) = self.walk(&key_path(key));
        Proof { siblings, end: end.bottom(), last_sibling: last.map(Node::bottom) }
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let path = key_path(key);
        let value_hash = value_hash(value);
        let leaf = Arc::new(Leaf {
            path,
            key: key.to_vec(),
            value: value.to_vec(),
            value_hash,
            hash: leaf_hash(&path, &value_hash),
        });
        let (root, replaced) = with_leaf(&self.root, 0, leaf);
        self.root = root;
        self.len += usize::from(!replaced);
    }

    /// Removes `key` (nothing when it is absent).
    pub fn delete(&mut self, key: &[u8]) {
        if self.get(key).is_some() {
            self.root = without(&self.root, 0, &key_path(key));
            self.len -= 1;
        }
    }

    /// Every (key, value), in path order (the order [`super::root_of_all`] needs no sort for).
    pub fn entries(&self) -> Vec<(&[u8], &[u8])> {
        fn collect<'a>(node: &'a Node, out: &mut Vec<(&'a [u8], &'a [u8])>) {
            match node {
                Node::Empty => {}
                Node::Leaf(l) => out.push((&l.key, &l.value)),
                Node::Inner(i) => {
                    collect(&i.left, out);
                    collect(&i.right, out);
                }
            }
        }
        let mut out = Vec::with_capacity(self.len);
        collect(&self.root, &mut out);
        out
    }
}
