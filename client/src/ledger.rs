//! A client's root in memory, shared by all its tasks: the current root, the roots adopted
//! while reads were in flight, the unsettled change, and the lock that serialises commits.
//! The concurrency model it serves is described in the crate documentation.
//!
//! Every change of the root goes through here, persisted in [`StateStore`] order: the intent
//! before a commit leaves ([`Ledger::intend`]); after its answer is accepted, the root, then
//! the intent forgotten ([`Ledger::adopt`]).

use crate::error::ClientError;
use crate::intent::Intent;
use crate::persist::StateStore;
use crate::root::Root;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
pub(crate) struct Ledger {
    store: Arc<dyn StateStore>,
    roots: Mutex<Roots>,
    pending: Mutex<Option<Intent>>,
    /// Held for a whole commit (and for settling one): one at a time per root.
    commits: tokio::sync::Mutex<()>,
}

/// The current root and the ones before it that a read in flight may still be answered from.
#[derive(Debug)]
struct Roots {
    /// The generation of `kept[0]`; each adopted root is one generation more.
    first: u64,
    /// Never empty: the last is the current root.
    kept: VecDeque<Root>,
    /// Reads in flight, counted by the generation each started at.
    readers: BTreeMap<u64, usize>,
}

impl Roots {
    fn current_generation(&self) -> u64 {
        self.first + self.kept.len() as u64 - 1
    }

    fn current(&self) -> Root {
        *self.kept.back().expect("the current root is always kept")
    }

    /// Drops the roots no read in flight can use.
    fn trim(&mut self) {
        let oldest = self.readers.keys().next().copied().unwrap_or_else(|| self.current_generation());
        while self.first < oldest {
            self.kept.pop_front();
            self.first += 1;
        }
    }
}

/// Proof that the commit lock is held: only a holder changes the root.
pub(crate) struct Committing<'a> {
    _lock: tokio::sync::MutexGuard<'a, ()>,
}

/// A read in flight: the generation of the root when it was sent. Answers it gets may come
/// from that root or any adopted since; dropping it releases those roots.
pub(crate) struct Snapshot<'a> {
    ledger: &'a Ledger,
    generation: u64,
}

impl Snapshot<'_> {
    /// The roots an answer to this read may come from, newest first.
    pub(crate) fn roots(&self) -> Vec<Root> {
        let roots = self.ledger.roots();
        let skip = (self.generation - roots.first) as usize;
        roots.kept.iter().skip(skip).rev().copied().collect()
    }

    /// Whether the root may have moved since this read was sent: a commit adopted since, one
    /// in flight (its answer not checked yet), or one whose answer was lost (unsettled).
    pub(crate) fn moved(&self) -> bool {
        let current = self.ledger.roots().current_generation();
        current != self.generation || self.ledger.commits.try_lock().is_err() || self.ledger.pending().is_some()
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        let mut roots = self.ledger.roots();
        if let Some(n) = roots.readers.get_mut(&self.generation) {
            *n -= 1;
            if *n == 0 {
                roots.readers.remove(&self.generation);
            }
        }
        roots.trim();
    }
}

impl Ledger {
    /// A ledger over `store`, at the root and intent it holds.
    pub(crate) fn load(store: Arc<dyn StateStore>) -> Result<Ledger, ClientError> {
        let (root, pending) = store.load()?;
        Ok(Ledger {
            store,
            roots: Mutex::new(Roots { first: 0, kept: VecDeque::from([root]), readers: BTreeMap::new() }),
            pending: Mutex::new(pending),
            commits: tokio::sync::Mutex::new(()),
        })
    }

    fn roots(&self) -> MutexGuard<'_, Roots> {
        self.roots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pending_slot(&self) -> MutexGuard<'_, Option<Intent>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current root.
    /// Where the client's state persists.
    pub(crate) fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    pub(crate) fn root(&self) -> Root {
        self.roots().current()
    }

    /// The unsettled change, if any.
    pub(crate) fn pending(&self) -> Option<Intent> {
        self.pending_slot().clone()
    }

    /// Registers a read starting now.
    pub(crate) fn snapshot(&self) -> Snapshot<'_> {
        let mut roots = self.roots();
        let generation = roots.current_generation();
        *roots.readers.entry(generation).or_default() += 1;
        Snapshot { ledger: self, generation }
    }

    /// Waits for the commit lock.
    pub(crate) async fn lock(&self) -> Committing<'_> {
        Committing { _lock: self.commits.lock().await }
    }

    /// The commit lock, if no one holds it.
    pub(crate) fn try_lock(&self) -> Option<Committing<'_>> {
        self.commits.try_lock().ok().map(|lock| Committing { _lock: lock })
    }

    /// Records `intent` durably, then holds it as the unsettled change. Called (with the commit
    /// lock held by the caller's task) before the commit request leaves.
    pub(crate) fn intend(&self, intent: Intent) -> Result<(), ClientError> {
        self.store.save_intent(&intent)?;
        *self.pending_slot() = Some(intent);
        Ok(())
    }

    /// Records the root after an accepted (or settled) change, then forgets the change's
    /// intent (in this order: a crash in between leaves an intent that settles to this root).
    pub(crate) fn adopt(&self, _commit: &Committing<'_>, root: Root) -> Result<(), ClientError> {
        self.store.adopt(root)?;
        {
            let mut roots = self.roots();
            roots.kept.push_back(root);
            roots.trim();
        }
        *self.pending_slot() = None;
        Ok(())
    }

    /// Forgets the unsettled change: it was proven not applied (an adopted one is forgotten by
    /// [`Ledger::adopt`] with its root).
    pub(crate) fn forget(&self, _commit: &Committing<'_>) -> Result<(), ClientError> {
        self.store.clear_intent()?;
        *self.pending_slot() = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::MemoryState;
    use vouch_core::Digest;

    fn root(n: u8) -> Root {
        Root { digest: Digest([n; 32]), len: u64::from(n) }
    }

    #[tokio::test]
    async fn a_read_sees_the_roots_adopted_since_it_started_and_they_go_with_it() {
        let ledger = Ledger::load(Arc::new(MemoryState::new(root(0)))).unwrap();
        let before = ledger.snapshot();
        assert_eq!(before.roots(), [root(0)]);
        assert!(!before.moved());
        {
            let commit = ledger.lock().await;
            assert!(before.moved(), "a commit in flight may have moved the provider's root");
            ledger.adopt(&commit, root(1)).unwrap();
        }
        let after = ledger.snapshot();
        assert!(before.moved() && !after.moved());
        assert_eq!(before.roots(), [root(1), root(0)]);
        assert_eq!(after.roots(), [root(1)]);
        drop(before);
        assert_eq!(ledger.roots().kept, [root(1)], "no read needs the old root any more");
        let commit = ledger.lock().await;
        ledger.adopt(&commit, root(2)).unwrap();
        assert_eq!(after.roots(), [root(2), root(1)]);
        drop(after);
        assert_eq!(ledger.roots().kept, [root(2)]);
        assert_eq!(ledger.root(), root(2));
    }

    #[tokio::test]
    async fn an_unsettled_change_counts_as_a_move_and_adopting_forgets_it_after_the_root() {
        let store = Arc::new(MemoryState::new(root(0)));
        let ledger = Ledger::load(store.clone()).unwrap();
        let read = ledger.snapshot();
        let intent = Intent::one(root(0), "a", crate::intent::Planned::Remove, crate::intent::new_attempt());
        ledger.intend(intent.clone()).unwrap();
        assert_eq!(store.intent(), Some(intent));
        assert!(read.moved());
        let commit = ledger.lock().await;
        ledger.adopt(&commit, root(3)).unwrap();
        assert_eq!((store.root(), store.intent()), (root(3), None));
        assert_eq!(ledger.pending(), None);
    }
}
