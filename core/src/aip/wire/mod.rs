//! AIP's wire format (paper 003, Alg. 1–3 and Sec. 3.7): one canonical byte layout for every
//! message that crosses the network, and decoders that take hostile bytes from either side.
//!
//! Layouts follow [`crate::codec`]: integers are canonical LEB128 varints, digests 32 raw
//! bytes, byte strings and lists a varint count then their items, an enum or an option a tag
//! byte then its fields. Every value has exactly one encoding, so a decoded message encodes
//! back to the same bytes, and the encoding of an operation or an authenticator is also what
//! signatures and the hash chain take.
//!
//! A decoder never panics and bounds every length before it allocates: the whole message by
//! [`MAX_MESSAGE_LEN`], each count by its own bound below and by the bytes left (each item
//! takes at least one), each byte string by the bytes left; an item is allocated only once
//! its bytes have been read. A value outside these bounds still encodes, but is refused when
//! decoded ([`WireError`]). Decoding checks form only (tags, bounds, names); whether a
//! message is true is for the client and the server to check.

mod dict;
mod messages;

use crate::codec::{put_varint, CodecError, Reader};
use crate::hash::Digest;

/// The longest message, in bytes (a listing's proof, or a page of the history, are the big
/// ones).
pub const MAX_MESSAGE_LEN: usize = 64 << 20;
/// The most operations of `δ` one message shows (a REPLY, a takeover, a page of the history):
/// a member further behind reads the history in pages first (#43 item 10), so no honest
/// answer grows with the history.
pub const MAX_DELTA: usize = 1 << 14;
/// The most bytes of `δ` a server puts in one message by default: half of
/// [`MAX_MESSAGE_LEN`], the rest left for `ω` and the response.
pub const DELTA_BYTES: usize = MAX_MESSAGE_LEN / 2;
/// The most operations one list of a message holds: `δ`, `ω`, a batch to authenticate, the
/// hanging operations of a takeover, the steps of a proof.
pub const MAX_OPERATIONS: usize = 1 << 20;
/// The most pending operations `ω` a REPLY or a takeover may show (#43 item 9): a server
/// bounds its pending list (128 in Sec. 5.2), so more is a lie, and each one shown lengthens
/// the member's saved hash chain until it is cleared.
pub const MAX_PENDING: usize = 1024;
/// The longest signature: Ed25519's 64 bytes (HMAC-SHA256 takes 32).
pub const MAX_SIGNATURE_LEN: usize = 64;
/// The longest ADICT key.
pub const MAX_KEY_LEN: usize = 1024;
/// The longest ADICT value (ADICT holds short values, Sec. 4.2).
pub const MAX_VALUE_LEN: usize = 1 << 20;
/// The most entries of a listing (its response or its proof).
pub const MAX_ENTRIES: usize = 1 << 20;
/// The most siblings of an ADICT proof: one per bit of a key's path.
pub const MAX_PROOF_DEPTH: usize = 256;

/// Why bytes are not a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("malformed AIP message: {0}")]
    Codec(#[from] CodecError),
    #[error("an AIP message of {len} bytes, over the bound of {max}")]
    TooLong { len: usize, max: usize },
    #[error("malformed AIP message: {count} {what}, over the bound of {max}")]
    TooMany { what: &'static str, count: u64, max: usize },
    #[error("malformed AIP message: unknown {what} tag {tag}")]
    UnknownTag { what: &'static str, tag: u8 },
    #[error("malformed AIP message: {0} bytes after its end")]
    TrailingBytes(usize),
    #[error("malformed AIP message: {0} out of range")]
    OutOfRange(&'static str),
    #[error("malformed AIP message: {0}")]
    Record(#[from] crate::namespace::RecordError),
    #[error("malformed AIP message: {0}")]
    Proof(#[from] crate::flexlist::ProofError),
}

/// A value with one canonical byte layout.
pub trait Wire: Sized {
    /// Appends the encoding.
    fn encode(&self, out: &mut Vec<u8>);

    /// Reads one value, refusing anything out of form or out of bounds.
    fn decode(r: &mut Reader<'_>) -> Result<Self, WireError>;

    fn to_wire(&self) -> Vec<u8> {
        // Room for a typical operation (a key and a value hash) at once: members encode every
        // operation they check, and growing from empty reallocates several times.
        let mut out = Vec::with_capacity(96);
        self.encode(&mut out);
        out
    }

    /// A whole message: at most [`MAX_MESSAGE_LEN`] bytes, and nothing after the value.
    fn from_wire(bytes: &[u8]) -> Result<Self, WireError> {
        if bytes.len() > MAX_MESSAGE_LEN {
            return Err(WireError::TooLong { len: bytes.len(), max: MAX_MESSAGE_LEN });
        }
        let mut r = Reader::new(bytes);
        let value = Self::decode(&mut r)?;
        match r.remaining() {
            0 => Ok(value),
            n => Err(WireError::TrailingBytes(n)),
        }
    }
}

/// A count of `what`, at most `max` and at most the bytes left (each item takes one or more).
pub(crate) fn count(r: &mut Reader<'_>, what: &'static str, max: usize) -> Result<usize, WireError> {
    let n = r.varint()?;
    if n > max as u64 {
        return Err(WireError::TooMany { what, count: n, max });
    }
    if n > r.remaining() as u64 {
        return Err(CodecError::Truncated.into());
    }
    Ok(n as usize)
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A byte string of at most `max` bytes, borrowed from the input (nothing allocated yet).
pub(crate) fn bytes<'a>(r: &mut Reader<'a>, what: &'static str, max: usize) -> Result<&'a [u8], WireError> {
    let n = count(r, what, max)?;
    Ok(r.bytes(n)?)
}

pub(crate) fn put_list<T>(out: &mut Vec<u8>, items: &[T], mut put: impl FnMut(&mut Vec<u8>, &T)) {
    put_varint(out, items.len() as u64);
    for item in items {
        put(out, item);
    }
}

/// A list of at most `max` items, each read by `take`; grown as items are read, so a count
/// reserves nothing.
pub(crate) fn list<'a, T>(
    r: &mut Reader<'a>,
    what: &'static str,
    max: usize,
    mut take: impl FnMut(&mut Reader<'a>) -> Result<T, WireError>,
) -> Result<Vec<T>, WireError> {
    let n = count(r, what, max)?;
    let mut items = Vec::new();
    for _ in 0..n {
        items.push(take(r)?);
    }
    Ok(items)
}

/// A tag byte, one of `1..=last`.
pub(crate) fn tag(r: &mut Reader<'_>, what: &'static str, last: u8) -> Result<u8, WireError> {
    match r.u8()? {
        t if (1..=last).contains(&t) => Ok(t),
        t => Err(WireError::UnknownTag { what, tag: t }),
    }
}

impl Wire for u64 {
    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, *self);
    }

    fn decode(r: &mut Reader<'_>) -> Result<u64, WireError> {
        Ok(r.varint()?)
    }
}

impl Wire for u32 {
    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(*self));
    }

    fn decode(r: &mut Reader<'_>) -> Result<u32, WireError> {
        u32::try_from(r.varint()?).map_err(|_| WireError::OutOfRange("a 32-bit number"))
    }
}

/// `0` or `1`; any other byte is refused (one encoding per value).
impl Wire for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }

    fn decode(r: &mut Reader<'_>) -> Result<bool, WireError> {
        match r.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            tag => Err(WireError::UnknownTag { what: "flag", tag }),
        }
    }
}

impl Wire for Digest {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Digest, WireError> {
        Ok(r.digest()?)
    }
}

/// An `Option`'s encoding, of a borrowed value: `0` for none, `1` then the value.
pub(crate) fn put_option<T: Wire>(out: &mut Vec<u8>, value: Option<&T>) {
    match value {
        None => out.push(0),
        Some(value) => {
            out.push(1);
            value.encode(out);
        }
    }
}

/// `0` for none, `1` then the value.
impl<T: Wire> Wire for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        put_option(out, self.as_ref());
    }

    fn decode(r: &mut Reader<'_>) -> Result<Option<T>, WireError> {
        match r.u8()? {
            0 => Ok(None),
            1 => Ok(Some(T::decode(r)?)),
            tag => Err(WireError::UnknownTag { what: "option", tag }),
        }
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<(A, B), WireError> {
        Ok((A::decode(r)?, B::decode(r)?))
    }
}

#[cfg(test)]
pub(crate) mod tests;
