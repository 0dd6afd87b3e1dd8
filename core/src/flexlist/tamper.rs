//! Lies a provider can tell with a well-formed proof, for tests and `vouch demo`.
//!
//! Not part of the API: a dishonest provider (the server's misbehave modes) and the tamper
//! tests use these to forge the exact lie a check must catch. Each function returns a proof
//! that decodes cleanly, so a verifier can reject it only by what it binds to the root.

use super::proof::{decode_nodes, encode_nodes, Child, ProofNode};
use super::{ProofError, MAX_TOTAL_LEN};

/// Where a piece of the file sits in a decoded proof: an opened leaf, or an opaque child.
#[derive(Clone, Copy, Debug)]
enum Piece {
    Leaf(usize),
    Opaque { parent: usize, after: bool },
}

/// The opened leaves and opaque subtrees of a proof in file order.
fn pieces(nodes: &[ProofNode]) -> Vec<Piece> {
    // What is still to visit: an opened node by index, or an opaque child as a piece.
    enum Visit {
        Node(usize),
        Piece(Piece),
    }
    let child = |parent: usize, after: bool| {
        let node = &nodes[parent];
        match if after { node.after } else { node.below } {
            Child::None => None,
            Child::Opaque(_) => Some(Visit::Piece(Piece::Opaque { parent, after })),
            Child::Open(i) => Some(Visit::Node(i as usize)),
        }
    };
    let mut out = Vec::new();
    let mut stack = vec![Some(Visit::Node(0))];
    while let Some(visit) = stack.pop() {
        match visit {
            None => {}
            Some(Visit::Piece(piece)) => out.push(piece),
            Some(Visit::Node(i)) if nodes[i].level == 0 => {
                out.push(Piece::Leaf(i));
                stack.push(child(i, true));
            }
            Some(Visit::Node(i)) => {
                // The below subtree comes first in the file: push it last.
                stack.push(child(i, true));
                stack.push(child(i, false));
            }
        }
    }
    out
}

/// The rank or length a piece stands for, to read or to change.
fn size_of(nodes: &mut [ProofNode], piece: Piece) -> &mut u64 {
    match piece {
        Piece::Leaf(i) => &mut nodes[i].length,
        Piece::Opaque { parent, after } => {
            let node = &mut nodes[parent];
            match if after { &mut node.after } else { &mut node.below } {
                Child::Opaque(r) => &mut r.rank,
                _ => unreachable!("pieces() names only opaque children"),
            }
        }
    }
}

/// Moves `z` bytes from the piece that follows an opened leaf in the file (an unopened
/// subtree, or the next opened leaf) into that leaf's length; a negative `z` moves them the
/// other way. Every sum of ranks stays the same, so a structure that hashed only each node's
/// own rank would not notice. `which` picks the `which`-th such pair in file order. `None` when
/// the proof has no such pair or the sizes do not allow the move.
pub fn move_length(bytes: &[u8], which: usize, z: i64) -> Result<Option<Vec<u8>>, ProofError> {
    let mut nodes = decode_nodes(bytes)?;
    let pairs: Vec<(Piece, Piece)> =
        pieces(&nodes).windows(2).filter(|w| matches!(w[0], Piece::Leaf(_))).map(|w| (w[0], w[1])).collect();
    let Some(&(leaf, next)) = pairs.get(which) else { return Ok(None) };
    let length = *size_of(&mut nodes, leaf) as i64 + z;
    let rest = *size_of(&mut nodes, next) as i64 - z;
    let next_min = i64::from(matches!(next, Piece::Leaf(_)));
    if length < 1 || length > i64::from(u32::MAX) || rest < next_min || rest as u64 > MAX_TOTAL_LEN {
        return Ok(None);
    }
    *size_of(&mut nodes, leaf) = length as u64;
    *size_of(&mut nodes, next) = rest as u64;
    Ok(Some(encode_nodes(&nodes)))
}

/// The file offset and length of every opened leaf, in file order, as the proof claims them.
pub fn opened_leaves(bytes: &[u8]) -> Result<Vec<(u64, u64)>, ProofError> {
    let mut nodes = decode_nodes(bytes)?;
    let mut at = 0;
    let mut out = Vec::new();
    for piece in pieces(&nodes) {
        let size = *size_of(&mut nodes, piece);
        if matches!(piece, Piece::Leaf(_)) {
            out.push((at, size));
        }
        at += size;
    }
    Ok(out)
}
