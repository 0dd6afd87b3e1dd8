//! Group commit of a sequencer's journal: a group's messages are applied to its server in
//! memory one at a time, and their journal entries made durable together, so that the
//! messages of many members cost one metadata commit instead of one each.
//!
//! The rule that keeps this honest after a crash: **no answer leaves before every entry up to
//! its own is durable.** Entries are written in order, batch after batch, one batch at a time,
//! so an answer computed on the server after entry `n` waits for the batch holding `n`. Memory
//! may run ahead of the journal, never an answer. A batch whose write fails (or is cut short)
//! takes with it every entry applied after it: the group's server is dropped, every waiter
//! of those entries gets an error (its client settles the unknown outcome, as after a lost
//! connection), and the next message replays the journal, which then holds exactly what is
//! durable.
//!
//! Whoever waits for a batch writes it when no write is under way (the first waiter of the
//! next batch, usually): there is no task of its own, and a request dropped while it writes
//! leaves the group as a failed write does.

use super::journal::{Journal, Loaded};
use crate::provider::ProviderError;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};
use vouch_store::StoreError;

/// A batch's fate: not yet known, written, or lost (with why).
type Fate = Option<Result<(), String>>;

/// Journal entries applied to the server and not yet handed to a write, in order.
#[derive(Debug)]
struct Batch {
    first: u64,
    entries: Vec<Vec<u8>>,
    fate: watch::Sender<Fate>,
}

/// What a waiter holds: the fate of the batch its entry (or the state it read) is in.
pub(super) type Ticket = watch::Receiver<Fate>;

/// A group's server in memory and its journal's tail not yet durable.
#[derive(Debug, Default)]
pub(super) struct GroupState {
    /// The server, ahead of the journal by the entries not yet durable; `None` before the
    /// group's first use in this process, and after a lost write (replay then).
    pub(super) loaded: Option<Loaded>,
    /// The batch new entries join.
    open: Option<Batch>,
    /// A batch is being written (one at a time: batches are durable in order).
    writing: bool,
    /// The fate of the last batch begun (open or being written): everything applied to the
    /// server so far is durable once it is written.
    latest: Option<Ticket>,
}

/// A group's state, the signal that a write ended (so waiters look for the next batch), and
/// the signal that operations completed (so INVOKEs held back by a full pending list look
/// again).
#[derive(Debug, Default)]
pub(super) struct Slot {
    state: Mutex<GroupState>,
    written: Notify,
    pub(super) progressed: Notify,
    /// When a message last asked for the group (see `Sequencer`'s eviction of idle groups).
    used: Mutex<Option<Instant>>,
}

impl Slot {
    /// The group's state, for one step in memory (never held across an await).
    pub(super) fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The group is used at `now`.
    pub(super) fn touch(&self, now: Instant) {
        *self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(now);
    }

    /// Takes the group's server out of memory if it went unused for `idle` before `now` and
    /// everything it holds is durable (its journal then replays it exactly), for the caller
    /// to drop. A group busy at this moment (its state locked) is left for a later sweep.
    pub(super) fn unload_if_idle(&self, now: Instant, idle: Duration) -> Option<Loaded> {
        let used = *self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if used.is_some_and(|at| now.saturating_duration_since(at) < idle) {
            return None;
        }
        let mut state = self.state.try_lock().ok()?;
        let quiet = !state.writing && state.open.is_none() && state.everything().is_none();
        quiet.then(|| state.loaded.take()).flatten()
    }

    /// Whether the group's server is in memory.
    pub(super) fn is_loaded(&self) -> bool {
        self.lock().loaded.is_some()
    }
}

impl GroupState {
    /// Adds entry `n` (encoded) to the open batch; its ticket.
    pub(super) fn push(&mut self, n: u64, entry: Vec<u8>) -> Ticket {
        if let Some(open) = &mut self.open {
            open.entries.push(entry);
            return open.fate.subscribe();
        }
        let (fate, ticket) = watch::channel(None);
        self.open = Some(Batch { first: n, entries: vec![entry], fate });
        self.latest = Some(ticket.clone());
        ticket
    }

    /// A ticket for everything applied so far: none when all of it is durable.
    pub(super) fn everything(&self) -> Option<Ticket> {
        self.latest.clone().filter(|t| t.borrow().is_none())
    }

    /// After a lost write: the server and every entry applied after the batch are dropped.
    fn lose(&mut self, why: &str) {
        self.loaded = None;
        self.latest = None;
        if let Some(open) = self.open.take() {
            open.fate.send_replace(Some(Err(why.to_string())));
        }
    }
}

/// Waits until `ticket`'s batch is durable, writing batches (this one, or those before it)
/// whenever no write is under way.
pub(super) async fn durable(
    journal: &impl Journal,
    group: &str,
    slot: &Arc<Slot>,
    mut ticket: Ticket,
) -> Result<(), ProviderError> {
    loop {
        let written = slot.written.notified();
        tokio::pin!(written);
        written.as_mut().enable();
        if let Some(fate) = ticket.borrow_and_update().clone() {
            return fate.map_err(|detail| lost(group, detail));
        }
        let batch = {
            let mut state = slot.lock();
            match state.writing {
                true => None,
                false => state.open.take().inspect(|_| state.writing = true),
            }
        };
        match batch {
            Some(batch) => write(journal, group, slot, batch).await,
            None => {
                tokio::select! {
                    _ = ticket.changed() => {}
                    _ = &mut written => {}
                }
            }
        }
    }
}

fn lost(group: &str, detail: String) -> ProviderError {
    ProviderError::Store(StoreError::Backend { at: format!("the journal of VICOS group {group}"), detail })
}

/// Writes `batch` in one commit and tells its waiters; a write that fails, or is dropped
/// before it ends (the request gave up), loses the batch and all after it.
async fn write(journal: &impl Journal, group: &str, slot: &Arc<Slot>, mut batch: Batch) {
    struct Writing<'a> {
        slot: &'a Slot,
        batch: Option<Batch>,
    }
    impl Writing<'_> {
        fn end(&mut self, result: Result<(), String>) {
            let Some(batch) = self.batch.take() else { return };
            let mut state = self.slot.lock();
            if let Err(why) = &result {
                state.lose(why);
            }
            state.writing = false;
            drop(state);
            batch.fate.send_replace(Some(result));
            self.slot.written.notify_waiters();
        }
    }
    impl Drop for Writing<'_> {
        fn drop(&mut self) {
            self.end(Err("the journal write was cut short".into()));
        }
    }

    let (first, entries) = (batch.first, std::mem::take(&mut batch.entries));
    let mut writing = Writing { slot, batch: Some(batch) };
    let result = journal.append(first, entries).await;
    if let Err(e) = &result {
        tracing::error!(group, "a VICOS journal write failed; the group replays its journal: {e}");
    }
    writing.end(result.map_err(|e| e.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    use tokio::sync::Semaphore;
    use vouch_core::adict::Tree;
    use vouch_core::aip::{self, Adict, DictOp, Keyring};

    /// A journal that records each append as it begins, waits at `gate`, and fails on demand.
    struct Fake {
        appends: Mutex<Vec<(u64, usize)>>,
        gate: Semaphore,
        fail: AtomicBool,
    }

    impl Fake {
        fn new(open: bool) -> Arc<Fake> {
            let permits = if open { Semaphore::MAX_PERMITS } else { 0 };
            Arc::new(Fake { appends: Mutex::default(), gate: Semaphore::new(permits), fail: AtomicBool::new(false) })
        }

        fn appends(&self) -> Vec<(u64, usize)> {
            self.appends.lock().unwrap().clone()
        }

        /// Until `n` appends have begun.
        async fn begun(&self, n: usize) {
            while self.appends().len() < n {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    }

    impl Journal for Arc<Fake> {
        async fn append(&self, first: u64, entries: Vec<Vec<u8>>) -> Result<(), ProviderError> {
            self.appends.lock().unwrap().push((first, entries.len()));
            let _permit = self.gate.acquire().await.expect("never closed");
            match self.fail.load(Ordering::SeqCst) {
                true => Err(ProviderError::Store(StoreError::Backend { at: "disk".into(), detail: "full".into() })),
                false => Ok(()),
            }
        }
    }

    fn loaded_slot() -> Arc<Slot> {
        let (genesis, auth) = aip::genesis::<Adict>(&Keyring::hmac([1; 32]), 0, DictOp::List, &Tree::new()).unwrap();
        let slot = Arc::new(Slot::default());
        slot.lock().loaded = Some(Loaded::new(genesis, auth));
        slot
    }

    fn push(slot: &Slot, n: u64) -> Ticket {
        slot.lock().push(n, vec![n as u8])
    }

    /// `durable` on a task of its own (as a request's).
    fn wait(
        journal: &Arc<Fake>,
        slot: &Arc<Slot>,
        ticket: Ticket,
    ) -> tokio::task::JoinHandle<Result<(), ProviderError>> {
        let (journal, slot) = (journal.clone(), slot.clone());
        tokio::spawn(async move { durable(&journal, "g", &slot, ticket).await })
    }

    fn fate(ticket: &Ticket) -> Fate {
        ticket.borrow().clone()
    }

    #[tokio::test]
    async fn entries_that_wait_together_are_written_in_one_append() {
        let (journal, slot) = (Fake::new(true), loaded_slot());
        let tickets: Vec<Ticket> = (0..3).map(|n| push(&slot, n)).collect();
        assert!(slot.lock().everything().is_some(), "applied, not durable");
        durable(&journal, "g", &slot, tickets[2].clone()).await.unwrap();
        assert_eq!(journal.appends(), [(0, 3)]);
        assert!(tickets.iter().all(|t| fate(t) == Some(Ok(()))));
        durable(&journal, "g", &slot, tickets[0].clone()).await.unwrap();
        assert_eq!(journal.appends(), [(0, 3)], "nothing left to write");
        assert!(slot.lock().everything().is_none(), "everything applied is durable");
    }

    #[tokio::test]
    async fn an_idle_group_leaves_memory_only_once_everything_it_holds_is_durable() {
        let (journal, slot) = (Fake::new(true), loaded_slot());
        let (idle, start) = (Duration::from_secs(60), Instant::now());
        slot.touch(start);
        let later = start + 2 * idle;
        assert!(slot.unload_if_idle(start + idle / 2, idle).is_none(), "used recently");
        let ticket = push(&slot, 0);
        assert!(slot.unload_if_idle(later, idle).is_none(), "an entry not yet durable: a replay would lose it");
        durable(&journal, "g", &slot, ticket).await.unwrap();
        let busy = slot.lock();
        assert!(slot.unload_if_idle(later, idle).is_none(), "a group busy at this moment is left alone");
        drop(busy);
        assert!(slot.unload_if_idle(later, idle).is_some());
        assert!(!slot.is_loaded() && slot.unload_if_idle(later, idle).is_none(), "nothing left to drop");
    }

    #[tokio::test]
    async fn a_batch_begun_while_another_is_written_is_written_after_it() {
        let (journal, slot) = (Fake::new(false), loaded_slot());
        let first = wait(&journal, &slot, push(&slot, 0));
        journal.begun(1).await;
        let (t1, t2) = (push(&slot, 1), push(&slot, 2));
        let everything = slot.lock().everything().unwrap();
        let second = wait(&journal, &slot, t2);
        let read = wait(&journal, &slot, everything);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(journal.appends(), [(0, 1)], "one write at a time");
        assert_eq!((fate(&t1), second.is_finished(), read.is_finished()), (None, false, false));
        journal.gate.add_permits(10);
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
        read.await.unwrap().unwrap();
        assert_eq!(journal.appends(), [(0, 1), (1, 2)]);
        assert_eq!(fate(&t1), Some(Ok(())));
    }

    #[tokio::test]
    async fn a_failed_write_loses_its_batch_and_everything_applied_after_it() {
        let (journal, slot) = (Fake::new(false), loaded_slot());
        journal.fail.store(true, Ordering::SeqCst);
        let t0 = push(&slot, 0);
        let first = wait(&journal, &slot, t0.clone());
        journal.begun(1).await;
        let t1 = push(&slot, 1);
        journal.gate.add_permits(10);
        assert!(first.await.unwrap().is_err());
        assert!(durable(&journal, "g", &slot, t1.clone()).await.is_err(), "applied after the lost batch");
        assert!(matches!(fate(&t1), Some(Err(_))));
        assert_eq!(journal.appends(), [(0, 1)], "never written: it built on what was lost");
        {
            let state = slot.lock();
            assert!(state.loaded.is_none(), "the server is dropped: the next message replays");
            assert!(state.everything().is_none());
        }
        // The group goes on from what is durable.
        journal.fail.store(false, Ordering::SeqCst);
        durable(&journal, "g", &slot, push(&slot, 0)).await.unwrap();
        assert_eq!(journal.appends(), [(0, 1), (0, 1)]);
    }

    #[tokio::test]
    async fn a_write_cut_short_loses_its_batch_and_the_group_goes_on() {
        let (journal, slot) = (Fake::new(false), loaded_slot());
        let t0 = push(&slot, 0);
        let writer = wait(&journal, &slot, t0.clone());
        journal.begun(1).await;
        let t1 = push(&slot, 1);
        writer.abort();
        assert!(writer.await.unwrap_err().is_cancelled());
        assert!(matches!(fate(&t0), Some(Err(_))), "its waiters hear of it");
        assert!(matches!(fate(&t1), Some(Err(_))));
        assert!(slot.lock().loaded.is_none());
        journal.gate.add_permits(10);
        durable(&journal, "g", &slot, push(&slot, 0)).await.unwrap();
        assert_eq!(journal.appends(), [(0, 1), (0, 1)]);
    }
}
