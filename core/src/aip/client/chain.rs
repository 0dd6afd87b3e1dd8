//! `H`, the hash chain a client keeps: a contiguous run of positions, so that a position's
//! link is found by subtraction. A member checks every operation of the others' in each
//! REPLY against it, two lookups each; a search tree there cost more than the checks'
//! bookkeeping elsewhere (profiled at 128 members).

use crate::hash::Digest;
use std::collections::VecDeque;

/// `H[l]`, and whether operation `l` is an update (a query has no passive phase, so no
/// authenticator is ever signed at its position: Sec. 3.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Link {
    pub(super) hash: Digest,
    pub(super) update: bool,
}

/// Links at positions `first..first + links.len()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Chain {
    first: u64,
    links: VecDeque<Link>,
}

impl Chain {
    /// The links of positions `first, first + 1, ...`.
    pub(super) fn new(first: u64, links: impl IntoIterator<Item = Link>) -> Chain {
        Chain { first, links: links.into_iter().collect() }
    }

    pub(super) fn get(&self, l: u64) -> Option<&Link> {
        let k = usize::try_from(l.checked_sub(self.first)?).ok()?;
        self.links.get(k)
    }

    pub(super) fn contains(&self, l: u64) -> bool {
        self.get(l).is_some()
    }

    /// The first and last positions held; `None` when empty.
    pub(super) fn bounds(&self) -> Option<(u64, u64)> {
        (!self.links.is_empty()).then(|| (self.first, self.first + self.links.len() as u64 - 1))
    }

    /// Appends `H[l]`; `l` must follow the last position held (the caller found `H[l - 1]`).
    pub(super) fn push(&mut self, l: u64, link: Link) {
        debug_assert_eq!(l, self.first + self.links.len() as u64, "the chain is contiguous");
        self.links.push_back(link);
    }

    /// The position after the last one held: where the next link goes.
    pub(super) fn end(&self) -> u64 {
        self.first + self.links.len() as u64
    }

    /// Drops every link at or after position `end` (links a message's checks added before
    /// one of its later checks failed).
    pub(super) fn truncate(&mut self, end: u64) {
        let keep = usize::try_from(end.saturating_sub(self.first)).unwrap_or(usize::MAX);
        self.links.truncate(keep);
    }

    /// Drops every link before position `l`.
    pub(super) fn drop_below(&mut self, l: u64) {
        let drop = usize::try_from(l.saturating_sub(self.first)).unwrap_or(usize::MAX).min(self.links.len());
        self.links.drain(..drop);
        self.first = self.first.max(l.min(self.first + drop as u64));
    }

    /// The last update at a position in `from..to`, with its position.
    pub(super) fn last_update_in(&self, from: u64, to: u64) -> Option<(u64, &Link)> {
        (from.max(self.first)..to).rev().filter_map(|l| Some((l, self.get(l)?))).find(|(_, link)| link.update)
    }

    pub(super) fn first(&self) -> u64 {
        self.first
    }

    pub(super) fn links(&self) -> impl Iterator<Item = &Link> {
        self.links.iter()
    }
}

impl std::ops::Index<u64> for Chain {
    type Output = Link;

    /// `H[l]`, which the caller knows is held.
    fn index(&self, l: u64) -> &Link {
        self.get(l).expect("a position the chain holds")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(n: u8, update: bool) -> Link {
        Link { hash: Digest([n; 32]), update }
    }

    #[test]
    fn positions_are_found_by_offset_and_dropped_from_the_front() {
        let mut chain = Chain::new(5, [link(5, false), link(6, true)]);
        chain.push(7, link(7, false));
        assert_eq!((chain.get(4), chain.get(6), chain.get(8)), (None, Some(&link(6, true)), None));
        assert_eq!(chain.bounds(), Some((5, 7)));
        assert_eq!(chain.last_update_in(0, 8), Some((6, &link(6, true))));
        assert_eq!(chain.last_update_in(7, 8), None);
        chain.push(8, link(8, true));
        chain.truncate(8);
        assert_eq!((chain.end(), chain.bounds()), (8, Some((5, 7))), "the link at 8 is gone, 7 kept");
        chain.drop_below(6);
        assert_eq!((chain.first(), chain.bounds()), (6, Some((6, 7))));
        chain.drop_below(3); // nothing before 6 is left to drop
        assert_eq!(chain.bounds(), Some((6, 7)));
        chain.drop_below(100);
        assert_eq!(chain.bounds(), None);
        assert!(!chain.contains(7));
    }
}
