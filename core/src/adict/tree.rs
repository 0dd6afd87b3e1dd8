//! The server's side of ADICT: a persistent compressed sparse Merkle tree holding the values.

use super::proof::{Bottom, Proof};
use super::range::{right_of, PathRange, RangeNode};
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

#[derive(Clone, Debug)]
struct Inner {
    left: Node,
    right: Node,
    /// The children's hashes, kept beside them: a put or a proof reads the sibling's hash on
    /// every level, and here it is in the node already in cache, not in the sibling.
    child_hashes: [Digest; 2],
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
        let child_hashes = [left.hash(), right.hash()];
        let hash = node_hash(&child_hashes[0], &child_hashes[1]);
        Node::Inner(Arc::new(Inner { left, right, child_hashes, hash }))
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
            Node::Inner(i) => Bottom::Inner { left: i.child_hashes[0], right: i.child_hashes[1] },
        }
    }
}

/// Puts `leaf` into `node` (at `depth`); whether it replaced a leaf of the same key. Nodes no
/// other version shares are changed in place (`Arc::make_mut`), the others copied along the
/// path: a tree that is not cloned allocates nothing but the new leaf. Canonical form needs
/// no join here: the subtree the leaf goes into is never empty afterwards.
fn put_leaf(node: &mut Node, depth: usize, leaf: Arc<Leaf>) -> bool {
    match node {
        Node::Empty => {
            *node = Node::Leaf(leaf);
            false
        }
        Node::Leaf(old) if old.path == leaf.path => {
            *node = Node::Leaf(leaf);
            true
        }
        Node::Leaf(old) => {
            *node = split(depth, old.clone(), leaf);
            false
        }
        Node::Inner(inner) => {
            let inner = Arc::make_mut(inner);
            let side = usize::from(bit(&leaf.path, depth));
            let near = match side {
                0 => &mut inner.left,
                _ => &mut inner.right,
            };
            let replaced = put_leaf(near, depth + 1, leaf);
            inner.child_hashes[side] = near.hash();
            inner.hash = node_hash(&inner.child_hashes[0], &inner.child_hashes[1]);
            replaced
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
            let (near, far, far_hash) = match bit(path, siblings.len()) {
                false => (&inner.left, &inner.right, inner.child_hashes[1]),
                true => (&inner.right, &inner.left, inner.child_hashes[0]),
            };
            siblings.push(far_hash);
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
        let replaced = put_leaf(&mut self.root, 0, leaf);
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

    /// The next page of a listing in path order: at most `limit` keys (at least one when any
    /// is left) whose paths come after `after`, as the pruned tree that proves them
    /// ([`super::verify_range`]), and whether keys follow the page. The page's range ends at
    /// its last key's path when keys follow, else at the last path.
    pub fn page(&self, after: Option<Digest>, limit: usize) -> (Vec<RangeNode>, bool) {
        let (limit, mut paths) = (limit.max(1), Vec::new());
        let from = PathRange { after, upto: None };
        // One path past the page tells whether keys follow it.
        first_paths(&self.root, Digest::ZERO, 0, &from, limit + 1, &mut paths);
        let more = paths.len() > limit;
        let upto = if more { Some(paths[limit - 1]) } else { None };
        let mut nodes = Vec::new();
        prune(&self.root, Digest::ZERO, 0, &PathRange { after, upto }, &mut nodes);
        (nodes, more)
    }
}

/// Up to `want` paths of `range` under `node` (at `depth`, prefix `prefix`), in order.
fn first_paths(node: &Node, prefix: Digest, depth: usize, range: &PathRange, want: usize, out: &mut Vec<Digest>) {
    if out.len() >= want || range.misses(&prefix, depth) {
        return;
    }
    match node {
        Node::Empty => {}
        Node::Leaf(l) if range.contains(&l.path) => out.push(l.path),
        Node::Leaf(_) => {}
        Node::Inner(i) => {
            first_paths(&i.left, prefix, depth + 1, range, want, out);
            first_paths(&i.right, right_of(prefix, depth), depth + 1, range, want, out);
        }
    }
}

/// `node` pruned to `range`, appended in pre-order.
fn prune(node: &Node, prefix: Digest, depth: usize, range: &PathRange, out: &mut Vec<RangeNode>) {
    match node {
        Node::Empty => out.push(RangeNode::Hidden(Digest::ZERO)),
        _ if range.misses(&prefix, depth) => out.push(RangeNode::Hidden(node.hash())),
        Node::Leaf(l) if range.contains(&l.path) => {
            out.push(RangeNode::Inside { key: l.key.clone(), value_hash: l.value_hash })
        }
        Node::Leaf(l) => out.push(RangeNode::Outside { path: l.path, value_hash: l.value_hash }),
        Node::Inner(i) => {
            out.push(RangeNode::Inner);
            prune(&i.left, prefix, depth + 1, range, out);
            prune(&i.right, right_of(prefix, depth), depth + 1, range, out);
        }
    }
}
