//! The staged puts waiting for the client's commit lock, for a group commit (see
//! `crate::group`): a queue, oldest first.

use crate::error::ClientError;
use crate::root::Root;
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use tokio::sync::oneshot;
use vouch_core::namespace::{Found, VersionRecord};
use vouch_proto::{Attempt, Committed, MAX_GROUP};

/// A staged put ready for its commit.
#[derive(Clone, Debug)]
pub(crate) struct StagedCommit {
    pub(crate) name: String,
    pub(crate) record: VersionRecord,
    pub(crate) attempt: Attempt,
    /// The name's lookup when its upload began, and the root it was proven at: while the
    /// root is still that one, the commit's answer must show this lookup.
    pub(crate) proven: (Found, Root),
}

pub(crate) type Reply = oneshot::Sender<Result<Committed, ClientError>>;

/// The staged puts waiting for the commit lock, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    puts: Mutex<VecDeque<(StagedCommit, Reply)>>,
}

impl Waiting {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(StagedCommit, Reply)>> {
        self.puts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `put`, to be answered on `reply`.
    pub(crate) fn join(&self, put: StagedCommit, reply: Reply) -> Place<'_> {
        let attempt = put.attempt;
        self.lock().push_back((put, reply));
        Place { waiting: self, attempt }
    }

    /// How many puts wait.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Takes up to [`MAX_GROUP`] waiting puts, oldest first, each name once (a later put of
    /// a name waits for the next group).
    pub(crate) fn take(&self) -> Vec<(StagedCommit, Reply)> {
        let mut waiting = self.lock();
        let mut names = HashSet::new();
        let mut group = Vec::new();
        let mut left = VecDeque::new();
        while let Some((put, reply)) = waiting.pop_front() {
            if group.len() < MAX_GROUP && names.insert(put.name.clone()) {
                group.push((put, reply));
            } else {
                left.push_back((put, reply));
            }
        }
        *waiting = left;
        group
    }

    fn holds(&self, attempt: Attempt) -> bool {
        self.lock().iter().any(|(put, _)| put.attempt == attempt)
    }

    /// Takes the put of `attempt` back, if no group has taken it yet.
    fn withdraw(&self, attempt: Attempt) -> bool {
        let mut waiting = self.lock();
        let before = waiting.len();
        waiting.retain(|(put, _)| put.attempt != attempt);
        waiting.len() != before
    }
}

/// A put's place among the waiting; a put given up before a group took it leaves with it
/// (it is never committed after its caller stopped waiting for it).
pub(crate) struct Place<'a> {
    waiting: &'a Waiting,
    attempt: Attempt,
}

impl Place<'_> {
    /// Whether the put still waits (no group has taken it yet).
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting.holds(self.attempt)
    }

    /// Takes the put back, if no group has taken it yet.
    pub(crate) fn withdraw(&self) -> bool {
        self.waiting.withdraw(self.attempt)
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.waiting.withdraw(self.attempt);
    }
}
