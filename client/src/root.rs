//! The client's whole view of its store: one root digest and the namespace's size.

use vouch_core::Digest;

/// The namespace root and size: the client's whole view of its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    pub digest: Digest,
    pub len: u64,
}

impl Root {
    pub fn empty() -> Self {
        Root { digest: vouch_core::FlexList::new().root(), len: 0 }
    }
}
