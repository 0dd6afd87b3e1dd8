//! The client's side of ADICT: a key's proof checked against the root, and the root after a
//! put or a delete computed from that proof alone (Alg. 4 `authexec`).

use super::{bit, key_path, leaf_hash, node_hash, parent};
use crate::hash::Digest;

/// Where a key's path ends, or what a node below a path's deepest sibling is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bottom {
    Empty,
    Leaf { path: Digest, value_hash: Digest },
    Inner { left: Digest, right: Digest },
}

impl Bottom {
    fn hash(&self) -> Digest {
        match self {
            Bottom::Empty => Digest::ZERO,
            Bottom::Leaf { path, value_hash } => leaf_hash(path, value_hash),
            Bottom::Inner { left, right } => node_hash(left, right),
        }
    }
}

/// A key's way down the tree: the siblings from the root down, where the way ends (an empty
/// subtree, the key's leaf, or the one other leaf in its place), and what the deepest sibling
/// is (a delete moves a lone leaf up).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    pub siblings: Vec<Digest>,
    pub end: Bottom,
    pub last_sibling: Option<Bottom>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("malformed dictionary proof: {0}")]
    Malformed(&'static str),
    #[error("the dictionary proof does not lead to the root")]
    WrongRoot,
}

/// The root over `node` at depth `siblings.len()` on `path`'s way.
fn fold(path: &Digest, siblings: &[Digest], mut node: Digest) -> Digest {
    for (depth, sibling) in siblings.iter().enumerate().rev() {
        node = parent(path, depth, &node, sibling);
    }
    node
}

impl Proof {
    /// `key`'s path and value hash (`None`: absent), from the proof's shape alone; the root
    /// is checked by the caller.
    fn locate(&self, key: &[u8]) -> Result<(Digest, Option<Digest>), ProofError> {
        let path = key_path(key);
        let depth = self.siblings.len();
        if depth > 256 {
            return Err(ProofError::Malformed("deeper than a path"));
        }
        let found = match &self.end {
            Bottom::Empty => None,
            Bottom::Leaf { path: p, value_hash } if *p == path => Some(*value_hash),
            Bottom::Leaf { path: p, .. } => {
                // Another key's leaf holds this place: it must share the way down to it.
                if (0..depth).any(|d| bit(p, d) != bit(&path, d)) {
                    return Err(ProofError::Malformed("a leaf off the key's way"));
                }
                None
            }
            Bottom::Inner { .. } => return Err(ProofError::Malformed("a way ends at an inner node")),
        };
        Ok((path, found))
    }

    /// The value hash of `key` under `root`, or `None` when the proof shows it absent.
    pub fn verify(&self, root: &Digest, key: &[u8]) -> Result<Option<Digest>, ProofError> {
        let (path, found) = self.locate(key)?;
        match fold(&path, &self.siblings, self.end.hash()) == *root {
            true => Ok(found),
            false => Err(ProofError::WrongRoot),
        }
    }

    /// The root after `key` is set to a value hashing to `value_hash`: the old root and the
    /// new one folded up the same siblings at once.
    pub fn root_after_put(&self, root: &Digest, key: &[u8], value_hash: &Digest) -> Result<Digest, ProofError> {
        self.put_replacing(root, key, value_hash).map(|(_, root)| root)
    }

    /// [`Proof::root_after_put`], and the value hash the put replaces (`None`: the key was
    /// absent), proven under `root` as the new root is.
    pub fn put_replacing(
        &self,
        root: &Digest,
        key: &[u8],
        value_hash: &Digest,
    ) -> Result<(Option<Digest>, Digest), ProofError> {
        let (path, replaced) = self.locate(key)?;
        let leaf = leaf_hash(&path, value_hash);
        let depth = self.siblings.len();
        let node = match &self.end {
            Bottom::Leaf { path: other, value_hash: other_value } if *other != path => {
                // Both leaves go down to where their paths part.
                let part = (depth..256).find(|&d| bit(other, d) != bit(&path, d)).ok_or(ProofError::WrongRoot)?;
                let mut node = parent(&path, part, &leaf, &leaf_hash(other, other_value));
                for d in (depth..part).rev() {
                    node = parent(&path, d, &node, &Digest::ZERO);
                }
                node
            }
            _ => leaf,
        };
        let (mut old, mut new) = (self.end.hash(), node);
        for (d, sibling) in self.siblings.iter().enumerate().rev() {
            old = parent(&path, d, &old, sibling);
            new = parent(&path, d, &new, sibling);
        }
        match old == *root {
            true => Ok((replaced, new)),
            false => Err(ProofError::WrongRoot),
        }
    }

    /// The root after `key` is removed (the same root when it is absent).
    pub fn root_after_delete(&self, root: &Digest, key: &[u8]) -> Result<Digest, ProofError> {
        self.delete_replacing(root, key).map(|(_, root)| root)
    }

    /// [`Proof::root_after_delete`], and the value hash the delete removes (`None`: the key
    /// was absent).
    pub fn delete_replacing(&self, root: &Digest, key: &[u8]) -> Result<(Option<Digest>, Digest), ProofError> {
        let Some(replaced) = self.verify(root, key)? else { return Ok((None, *root)) };
        let removed = |root| Ok((Some(replaced), root));
        // Only a delete reads what the deepest sibling is: checked here, not on every proof.
        if let (Some(last), Some(hash)) = (&self.last_sibling, self.siblings.last()) {
            if last.hash() != *hash {
                return Err(ProofError::Malformed("the deepest sibling is not what it claims"));
            }
        }
        let path = key_path(key);
        let Some(deepest) = self.siblings.len().checked_sub(1) else { return removed(Digest::ZERO) };
        match &self.last_sibling {
            // A lone leaf left beside nothing: it rises past every empty sibling above.
            Some(Bottom::Leaf { .. }) => {
                let mut depth = deepest;
                while depth > 0 && self.siblings[depth - 1] == Digest::ZERO {
                    depth -= 1;
                }
                removed(fold(&path, &self.siblings[..depth], self.siblings[deepest]))
            }
            Some(Bottom::Inner { .. }) => removed(fold(&path, &self.siblings, Digest::ZERO)),
            Some(Bottom::Empty) => Err(ProofError::Malformed("a leaf beside an empty subtree")),
            None => Err(ProofError::Malformed("a delete needs the deepest sibling")),
        }
    }
}

/// The root over every (key path, value hash), in any order: what a listing's proof (the
/// whole dictionary) must rebuild. Two entries on one path are malformed.
pub fn root_of_all(entries: &mut [(Digest, Digest)]) -> Result<Digest, ProofError> {
    entries.sort_unstable_by_key(|(path, _)| *path);
    if entries.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(ProofError::Malformed("a key listed twice"));
    }
    fn build(entries: &[(Digest, Digest)], depth: usize) -> Digest {
        match entries {
            [] => Digest::ZERO,
            [(path, value)] => leaf_hash(path, value),
            _ => {
                let split = entries.partition_point(|(path, _)| !bit(path, depth));
                node_hash(&build(&entries[..split], depth + 1), &build(&entries[split..], depth + 1))
            }
        }
    }
    Ok(build(entries, 0))
}
