//! Where a client's root and its unsettled change persist: a [`StateStore`].
//!
//! [`crate::Client`] calls it in a fixed order, which crash recovery relies on
//! ([`crate::Intent`]): `save_intent` before a commit request leaves; after an accepted (or
//! settled) commit `adopt` (the root saved, and only then the intent cleared: a crash in
//! between leaves an intent that settles to the same root); after one proven not applied,
//! `clear_intent`. Each call returns once its write is durable. Two
//! implementations: the state directory ([`crate::state::StateDir`]) and memory
//! ([`MemoryState`], for tests and for a gateway that keeps its state elsewhere).

use crate::error::ClientError;
use crate::intent::Intent;
use crate::root::Root;
use std::sync::Mutex;

/// Durable storage for a client's root and intent (see the module documentation).
pub trait StateStore: Send + Sync + std::fmt::Debug {
    /// The root as last saved, and the intent of a change left unsettled.
    fn load(&self) -> Result<(Root, Option<Intent>), ClientError>;
    /// Records the namespace root, atomically: afterwards `load` returns it.
    fn save_root(&self, root: Root) -> Result<(), ClientError>;
    /// Records the intent of a change about to be sent, replacing any before it.
    fn save_intent(&self, intent: &Intent) -> Result<(), ClientError>;
    /// Forgets the intent (nothing if there is none).
    fn clear_intent(&self) -> Result<(), ClientError>;
    /// Records the root of a change settled as applied, and forgets its intent: afterwards
    /// `load` returns the root and no intent. The default saves the root, then clears the
    /// intent.
    fn adopt(&self, root: Root) -> Result<(), ClientError> {
        self.save_root(root)?;
        self.clear_intent()
    }
    /// The client's PoR record as last saved (`crate::por`), if it has a log.
    fn load_por(&self) -> Result<Option<Vec<u8>>, ClientError>;
    /// Records the PoR record, atomically and durably.
    fn save_por(&self, record: &[u8]) -> Result<(), ClientError>;
}

/// A state kept in memory: gone with the process. For tests, and for a caller that persists
/// the root and intent itself (read them back with [`MemoryState::root`] and
/// [`MemoryState::intent`], the intent as [`Intent::to_bytes`]).
#[derive(Debug)]
pub struct MemoryState {
    held: Mutex<(Root, Option<Intent>)>,
    por: Mutex<Option<Vec<u8>>>,
}

impl MemoryState {
    /// A state at `root` with nothing unsettled (`Root::empty()` for a new client).
    pub fn new(root: Root) -> MemoryState {
        MemoryState { held: Mutex::new((root, None)), por: Mutex::new(None) }
    }

    /// A state at `root` with `intent` unsettled (one restored from elsewhere).
    pub fn with_intent(root: Root, intent: Intent) -> MemoryState {
        MemoryState { held: Mutex::new((root, Some(intent))), por: Mutex::new(None) }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, (Root, Option<Intent>)> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The root as last saved.
    pub fn root(&self) -> Root {
        self.held().0
    }

    /// The intent of a change not settled yet.
    pub fn intent(&self) -> Option<Intent> {
        self.held().1.clone()
    }
}

impl StateStore for MemoryState {
    fn load(&self) -> Result<(Root, Option<Intent>), ClientError> {
        Ok((self.root(), self.intent()))
    }

    fn save_root(&self, root: Root) -> Result<(), ClientError> {
        self.held().0 = root;
        Ok(())
    }

    fn save_intent(&self, intent: &Intent) -> Result<(), ClientError> {
        self.held().1 = Some(intent.clone());
        Ok(())
    }

    fn clear_intent(&self) -> Result<(), ClientError> {
        self.held().1 = None;
        Ok(())
    }

    fn load_por(&self) -> Result<Option<Vec<u8>>, ClientError> {
        Ok(self.por.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn save_por(&self, record: &[u8]) -> Result<(), ClientError> {
        *self.por.lock().unwrap_or_else(|e| e.into_inner()) = Some(record.to_vec());
        Ok(())
    }
}
