//! The order in which a party handles the messages that have reached it (paper 003, Sec. 5.2
//! "Message delivery order"): COMMIT, UPDATE-AUTH and COMMIT-AUTH before INVOKE and REPLY, so
//! that the passive phases of operations already run complete before new operations start
//! and the pending list stays short (fewer aborts under load). At the server, INVOKEs are
//! also held back while the pending list is full (Sec. 5.2 "Bounded pending list": the
//! paper's server buffers them).
//!
//! Only messages of different kinds overtake each other; each kind stays in arrival order.
//! That keeps what AIP relies on from FIFO channels: a client's COMMIT reaches the server
//! before its next INVOKE (it was sent first, and is served first), and a COMMIT-AUTH never
//! overtakes the COMMIT it follows (same queue).

use super::{ClientId, Commit, CommitAuth, Functionality, Invoke, Refusal, Reply, Server, TakeOver, UpdateAuth};
use std::collections::VecDeque;

/// Which messages go first.
pub trait Urgency {
    /// COMMIT, UPDATE-AUTH, COMMIT-AUTH (and a takeover and its COMMITs): the passive phase.
    fn urgent(&self) -> bool;
}

/// A message to the server.
#[derive(Clone, Debug, PartialEq)]
pub enum ToServer<F: Functionality> {
    Invoke(Invoke<F::Op>),
    Commit(Commit<F::Op>),
    CommitAuth(CommitAuth<F::Auth>),
}

/// A message to a client.
#[derive(Clone, Debug, PartialEq)]
pub enum ToClient<F: Functionality> {
    Reply(Box<Reply<F>>),
    UpdateAuth(Box<UpdateAuth<F>>),
    /// To the taker of a failed client (Sec. 3.7): it goes before the UPDATE-AUTHs routed to
    /// the taker from then on, which concern that history (so it is urgent, as they are).
    TakeOver(Box<TakeOver<F>>),
}

impl<F: Functionality> Urgency for ToServer<F> {
    fn urgent(&self) -> bool {
        !matches!(self, ToServer::Invoke(_))
    }
}

impl<F: Functionality> Urgency for ToClient<F> {
    fn urgent(&self) -> bool {
        matches!(self, ToClient::UpdateAuth(_) | ToClient::TakeOver(_))
    }
}

/// The messages that have arrived and are not handled yet, each with its sender.
#[derive(Debug)]
pub struct Inbox<M> {
    urgent: VecDeque<(ClientId, M)>,
    other: VecDeque<(ClientId, M)>,
}

impl<M> Default for Inbox<M> {
    fn default() -> Inbox<M> {
        Inbox { urgent: VecDeque::new(), other: VecDeque::new() }
    }
}

impl<M: Urgency> Inbox<M> {
    pub fn push(&mut self, from: ClientId, m: M) {
        match m.urgent() {
            true => self.urgent.push_back((from, m)),
            false => self.other.push_back((from, m)),
        }
    }

    /// The next message to handle: the oldest urgent one, else the oldest other one unless
    /// `hold_others` (a full pending list holds INVOKEs back).
    pub fn pop(&mut self, hold_others: bool) -> Option<(ClientId, M)> {
        match self.urgent.pop_front() {
            Some(m) => Some(m),
            None if hold_others => None,
            None => self.other.pop_front(),
        }
    }

    pub fn len(&self) -> usize {
        self.urgent.len() + self.other.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<F: Functionality> Inbox<ToServer<F>> {
    /// The next message `server` should handle: INVOKEs wait while its pending list is full.
    pub fn next_for(&mut self, server: &Server<F>) -> Option<(ClientId, ToServer<F>)> {
        self.pop(server.pending_full())
    }
}

impl<F: Functionality> Server<F> {
    /// Hands `m` from `from` to its handler; a REPLY comes back for an INVOKE.
    pub fn deliver(&mut self, from: ClientId, m: ToServer<F>) -> Result<Option<Reply<F>>, Refusal<F>> {
        match m {
            ToServer::Invoke(m) => self.on_invoke(from, m).map(Some),
            ToServer::Commit(m) => self.on_commit(from, m).map(|()| None),
            ToServer::CommitAuth(m) => self.on_commit_auth(from, m).map(|()| None),
        }
    }
}
