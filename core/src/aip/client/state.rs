//! A client's state saved to bytes and restored (paper 003, Alg. 1–2 "state": `c`, the hash
//! chain `H`, the status map `Z`, `u`; Sec. 3.7: the clients taken over). A member that runs
//! as one process per command (`vouch obj put ...`) saves its state after each and restores
//! it before the next: what lets it catch a fork (Sec. 3.6, case 2) is its chain, so losing
//! the chain between invocations would let the server fork it silently.
//!
//! The layout follows [`crate::aip::wire`]: a version byte, then the fields in the order of
//! the struct, integers as canonical varints, digests raw, each map a count then its entries
//! in strictly increasing key order (so a state has exactly one encoding). The keyring and
//! the functionality are not saved (the caller holds the keys; a secret has no place in a
//! state file), and neither is anything derived from them.
//!
//! Restoring takes hostile bytes: it never panics, bounds every count before it allocates,
//! refuses a state saved by another client, and checks the invariants the client's handlers
//! rely on, so that a restored client fails on a bad message as the original would, never by
//! panicking.

use super::{Chain, Client, Link};
use crate::aip::wire::{count, list, put_list, tag, Wire, WireError, MAX_MESSAGE_LEN, MAX_OPERATIONS, MAX_PENDING};
use crate::aip::{ClientId, Commit, Functionality, Keyring, Status};
use crate::codec::{put_varint, Reader};
use crate::hash::Digest;
use std::collections::BTreeMap;

/// The layout's version, its first byte. Versions 1 and 2 (version 1 had no unsent COMMITs)
/// hold a hash chain of SHA-256 links, which no longer continues; version 3 is a VICOS member
/// of a group whose objects' values hold no length (`x || h`, now `x || length || h`), which
/// no reader takes. They are refused ([`RestoreError::Older`]), not restored to a chain that
/// would look forked or to a group whose objects cannot be read; version 4 has no INVOKE
/// counters (#43 item 9), so its member could not sign the INVOKEs its group now takes.
const STATE_VERSION: u8 = 5;
/// The most links a saved hash chain holds: a member keeps `H` from just before `c` (or
/// before its oldest own operation not cleared, which is pending, after `c`), and a REPLY or
/// a takeover extends it by at most its `δ` ([`MAX_OPERATIONS`]) and its `ω`
/// ([`MAX_PENDING`]), both refused beyond their bounds. So every state a client reaches
/// saves within this bound, and [`Client::restore`] takes it back.
pub const MAX_SAVED_LINKS: usize = MAX_OPERATIONS + MAX_PENDING + 2;
/// The largest position a saved state may name. No history gets near it (2^62 operations);
/// refusing beyond keeps the client's arithmetic on positions (`c + 1`, `b + length(ω)`)
/// clear of overflow.
pub const MAX_SAVED_POSITION: u64 = 1 << 62;

/// Why bytes are not this client's saved state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("malformed client state: {0}")]
    Wire(#[from] WireError),
    #[error("the saved state is client {saved}'s, not client {me}'s")]
    OtherClient { saved: ClientId, me: ClientId },
    #[error("inconsistent client state: {0}")]
    Inconsistent(&'static str),
    #[error("the state was saved by an older vouch (layout {0}), {why}; this member's group must be made again", why = older_why(*.0))]
    Older(u8),
}

/// What changed since the layout `version` an older vouch saved.
fn older_why(version: u8) -> &'static str {
    match version {
        1 | 2 => "whose hash chain was SHA-256's",
        3 => "whose group stored objects' dictionary values without their length",
        _ => "whose INVOKEs carried no counter",
    }
}

/// An entry of `H`: its digest, then a tag byte, `1` for an update, `2` for a query.
fn put_link(out: &mut Vec<u8>, link: &Link) {
    link.hash.encode(out);
    out.push(if link.update { 1 } else { 2 });
}

fn link(r: &mut Reader<'_>) -> Result<Link, WireError> {
    let hash = Digest::decode(r)?;
    Ok(Link { hash, update: tag(r, "chain entry kind", 2)? == 1 })
}

fn position(r: &mut Reader<'_>) -> Result<u64, WireError> {
    match u64::decode(r)? {
        l if l <= MAX_SAVED_POSITION => Ok(l),
        _ => Err(WireError::OutOfRange("a position in the history")),
    }
}

/// A map saved as a list of entries, its keys strictly increasing (one encoding per map).
fn map<'a, K: Ord + Copy, V>(
    r: &mut Reader<'a>,
    what: &'static str,
    mut take: impl FnMut(&mut Reader<'a>) -> Result<(K, V), WireError>,
) -> Result<BTreeMap<K, V>, RestoreError> {
    let entries = list(r, what, MAX_OPERATIONS, &mut take)?;
    if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(RestoreError::Inconsistent("map keys not in strictly increasing order"));
    }
    Ok(entries.into_iter().collect())
}

fn check(ok: bool, why: &'static str) -> Result<(), RestoreError> {
    match ok {
        true => Ok(()),
        false => Err(RestoreError::Inconsistent(why)),
    }
}

impl<F: Functionality> Client<F> {
    /// This client's state as bytes, for [`Client::restore`]: `version, me, c, first position
    /// of H, H (digest, kind), d, H[d], Z, u?, n, seen, retired, aborted-for, unsent`.
    /// Everything but the keys and the functionality, which the caller supplies again.
    pub fn save(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        self.me.encode(&mut out);
        self.cleared.encode(&mut out);
        // The chain is always a contiguous run of positions: its first, then its entries.
        put_varint(&mut out, self.chain.first());
        put_list(&mut out, &self.chain.links().collect::<Vec<_>>(), |out, l| put_link(out, l));
        self.authenticated.encode(&mut out);
        put_list(&mut out, &self.status.iter().collect::<Vec<_>>(), |out, (q, z)| {
            q.encode(out);
            z.encode(out);
        });
        self.current.encode(&mut out);
        self.invoked.encode(&mut out);
        put_list(&mut out, &self.seen.iter().collect::<Vec<_>>(), |out, (j, (l, n))| {
            j.encode(out);
            l.encode(out);
            n.encode(out);
        });
        put_list(&mut out, &self.retired.iter().collect::<Vec<_>>(), |out, (j, l)| {
            j.encode(out);
            l.encode(out);
        });
        put_list(&mut out, &self.aborted_for.iter().collect::<Vec<_>>(), |out, (l, j)| {
            l.encode(out);
            j.encode(out);
        });
        put_list(&mut out, &self.unsent, |out, commit| commit.encode(out));
        out
    }

    /// Client `me` as [`Client::save`] left it, with its keys and functionality. Refuses bytes
    /// out of form or over the bounds of [`crate::aip::wire`] ([`RestoreError::Wire`]), another
    /// client's state ([`RestoreError::OtherClient`]: two members sharing one chain would
    /// sign over each other's views), a state no client can be in
    /// ([`RestoreError::Inconsistent`]), and one an older vouch saved ([`RestoreError::Older`]).
    pub fn restore(bytes: &[u8], me: ClientId, keys: Keyring, functionality: F) -> Result<Client<F>, RestoreError> {
        if bytes.len() > MAX_MESSAGE_LEN {
            return Err(WireError::TooLong { len: bytes.len(), max: MAX_MESSAGE_LEN }.into());
        }
        let r = &mut Reader::new(bytes);
        match tag(r, "client state version", STATE_VERSION)? {
            STATE_VERSION => {}
            older => return Err(RestoreError::Older(older)),
        }
        let saved = u32::decode(r)?;
        if saved != me {
            return Err(RestoreError::OtherClient { saved, me });
        }
        let cleared = position(r)?;
        let first = position(r)?;
        let n = count(r, "chain entries", MAX_SAVED_LINKS)?;
        let chain = Chain::new(first, (0..n).map(|_| link(r)).collect::<Result<Vec<_>, _>>()?);
        let authenticated = (position(r)?, Digest::decode(r)?);
        let status = map(r, "own operations", |r| Ok((position(r)?, Status::decode(r)?)))?;
        let current = Option::<F::Op>::decode(r)?;
        let invoked = u64::decode(r)?;
        let seen = map(r, "members' last INVOKEs", |r| Ok((u32::decode(r)?, (position(r)?, u64::decode(r)?))))?;
        let retired = map(r, "clients taken over", |r| Ok((u32::decode(r)?, position(r)?)))?;
        let aborted_for = map(r, "operations aborted for others", |r| Ok((position(r)?, u32::decode(r)?)))?;
        let unsent = list(r, "unsent COMMITs", MAX_OPERATIONS, Commit::decode)?;
        if r.remaining() > 0 {
            return Err(WireError::TrailingBytes(r.remaining()).into());
        }
        let client = Client {
            me,
            keys,
            functionality,
            cleared,
            chain,
            authenticated,
            status,
            current,
            invoked,
            seen,
            retired,
            aborted_for,
            unsent,
            scratch: Default::default(),
        };
        client.check_invariants()?;
        Ok(client)
    }

    /// What every reachable state satisfies and the handlers rely on: `H` is a non-empty run
    /// of positions within bounds that covers `c` and the position before it (`forget_old`
    /// keeps those), starting at the genesis `H[0] = 0` if it reaches back that far; `d` is at
    /// or before `c` and, where `H` still holds it, an update with the same `H[d]`; `Z` and
    /// the aborts for others lie within `H` (their REPLY or takeover extended it), the
    /// aborts after `c` (clearing drops them).
    fn check_invariants(&self) -> Result<(), RestoreError> {
        let Some((first, last)) = self.chain.bounds() else {
            return Err(RestoreError::Inconsistent("no hash chain"));
        };
        check(last <= MAX_SAVED_POSITION, "the hash chain runs past the largest position")?;
        check(first <= self.cleared.saturating_sub(1) && self.cleared <= last, "the hash chain does not cover c")?;
        let genesis = Link { hash: Digest::ZERO, update: true };
        check(first > 0 || self.chain[0] == genesis, "H[0] is not the genesis")?;
        let (d, hash) = self.authenticated;
        check(d <= self.cleared, "the last authenticated update is after c")?;
        check(d > 0 || hash == Digest::ZERO, "H[0] is not the genesis")?;
        if let Some(link) = self.chain.get(d) {
            check(*link == Link { hash, update: true }, "the last authenticated update disagrees with H")?;
        }
        check(self.status.keys().all(|&q| q >= first.max(1) && q <= last), "an own operation outside H")?;
        let after_c = |&l: &u64| l > self.cleared && l <= last;
        check(self.aborted_for.keys().all(after_c), "an operation aborted for another outside what is pending")?;
        let unsent_ok = |c: &Commit<F::Op>| {
            c.client == self.me && c.phi.by == self.me && after_c(&c.t) && self.status.get(&c.t) == Some(&c.status)
        };
        check(self.unsent.iter().all(unsent_ok), "an unsent COMMIT that is not this client's own, pending one")?;
        check(self.unsent.windows(2).all(|w| w[0].t < w[1].t), "unsent COMMITs out of order")?;
        check(self.current.is_none() || self.invoked > 0, "an operation in flight and no INVOKE made")?;
        let own_seen = self.seen.get(&self.me).is_none_or(|&(_, n)| n < self.invoked);
        check(own_seen, "an own INVOKE seen with a counter this client has not used")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aip::Adict;

    /// A client whose chain holds `links` positions from the genesis on, `c` its last.
    fn with_chain(links: usize) -> Client<Adict> {
        let mut client = Client::new(0, Keyring::hmac([1; 32]), Adict { mode: crate::aip::Mode::Compatible });
        let genesis = Link { hash: Digest::ZERO, update: true };
        let rest = (1..links).map(|_| Link { hash: Digest([7; 32]), update: false });
        client.chain = Chain::new(0, std::iter::once(genesis).chain(rest));
        client.cleared = links as u64 - 1;
        client
    }

    /// The bound `restore` takes is the one the handlers keep (#43 item 9): a state at it
    /// saves and restores; one past it, which no REPLY can make, is refused.
    #[test]
    fn a_state_at_the_chain_bound_saves_and_restores() {
        let keys = || Keyring::hmac([1; 32]);
        let adict = || Adict { mode: crate::aip::Mode::Compatible };
        let saved = with_chain(MAX_SAVED_LINKS).save();
        let back = Client::restore(&saved, 0, keys(), adict()).unwrap();
        assert_eq!(back.save(), saved);
        let over = with_chain(MAX_SAVED_LINKS + 1).save();
        let count = MAX_SAVED_LINKS as u64 + 1;
        let too_many = WireError::TooMany { what: "chain entries", count, max: MAX_SAVED_LINKS };
        assert_eq!(Client::restore(&over, 0, keys(), adict()).map(|_| ()), Err(RestoreError::Wire(too_many)));
    }
}
