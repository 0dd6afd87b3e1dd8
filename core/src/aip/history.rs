//! Checkers for recorded histories (paper 003, Sec. 2.1): linearizability, and
//! fork-linearizability for an execution whose forks the caller names. Test support, public
//! so that the integration tests of other crates can record what their clients saw and check
//! it.
//!
//! A history is, per client, its completed operations in order ([`Completed`]): the
//! operation, its response or ABORT, and real-time stamps of its invocation and response
//! (any counter that only grows: `a` precedes `b` in real time when `a.returned < b.invoked`;
//! equal stamps are concurrent). An operation without a response (its client crashed, or
//! caught a violation) is left out: it may as well not have happened, as AIP aborts or never
//! applies it. The sequential specification is [`Sequential`]; ADICT's is [`DictOp`]'s.
//!
//! * [`linearizable`] (Sec. 2.1): one order of all operations in which every response is
//!   the specification's and which respects real time; ABORT changes nothing and is legal
//!   anywhere (Sec. 2: "abort without taking effect").
//! * [`fork_linearizable`] (Sec. 2.1, for the forks the caller names in [`Forks`]): see
//!   there for what exactly it checks.
//!
//! The search is Wing and Gong's, with Lowe's memoisation: a state is how far each client's
//! operations are placed and the specification's state; a state that led nowhere is not
//! tried again. A client's operations are placed in their order (they precede each other in
//! real time), so a state is small. Queries and aborted operations that may go next are
//! placed at once, without branching (they change nothing, so placing one early never
//! stands in another's way). Exponential in the worst case, meant for test-sized histories;
//! past [`MAX_STATES`] states it gives up ([`CheckError::TooHard`]) rather than hang.

use super::{ClientId, DictOp, DictResponse, Outcome};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::hash::Hash;

/// How many search states a check may visit before it gives up.
pub const MAX_STATES: usize = 1 << 20;

/// An operation's sequential specification (Sec. 2: `F` gives a response and a state change
/// for every operation, deterministically).
pub trait Sequential: Clone + Debug {
    type Response: Clone + Debug + PartialEq;
    type State: Clone + Debug + Default + Eq + Hash;

    /// `(s', r) = F(s, o)`: changes `state`, returns the response.
    fn apply(&self, state: &mut Self::State) -> Self::Response;

    /// Whether the operation never changes the state (a query, Sec. 2.3).
    fn is_query(&self) -> bool;
}

/// ADICT (Sec. 4.2, Alg. 4–5): a map of keys to values; a listing gives the keys in byte
/// order, a put or a delete nothing.
impl Sequential for DictOp {
    type Response = DictResponse;
    type State = BTreeMap<Vec<u8>, Vec<u8>>;

    fn apply(&self, state: &mut Self::State) -> DictResponse {
        match self {
            DictOp::Put { key, value } => {
                state.insert(key.clone(), value.clone());
                DictResponse::Nothing
            }
            DictOp::Delete { key } => {
                state.remove(key);
                DictResponse::Nothing
            }
            DictOp::Get { key } => DictResponse::Value(state.get(key).cloned()),
            DictOp::List => DictResponse::Keys(state.keys().cloned().collect()),
            DictOp::ListPage { after, limit } => page(state, *after, *limit),
        }
    }

    fn is_query(&self) -> bool {
        matches!(self, DictOp::Get { .. } | DictOp::List | DictOp::ListPage { .. })
    }
}

/// A page of `state`'s keys in path order: at most `limit` (at least 1) after `after`.
pub(crate) fn page(state: &BTreeMap<Vec<u8>, Vec<u8>>, after: Option<crate::hash::Digest>, limit: u32) -> DictResponse {
    let limit = limit.clamp(1, crate::aip::MAX_PAGE) as usize;
    let mut paths: Vec<_> = state.keys().map(|k| (crate::adict::key_path(k), k)).collect();
    paths.sort();
    let mut after_start = paths.into_iter().filter(|(p, _)| after.is_none_or(|a| *p > a)).map(|(_, k)| k.clone());
    let keys: Vec<_> = after_start.by_ref().take(limit).collect();
    DictResponse::Page { keys, more: after_start.next().is_some() }
}

/// One completed operation of a client: what it was, what it returned, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Completed<O: Sequential> {
    pub op: O,
    pub outcome: Outcome<O::Response>,
    pub invoked: u64,
    pub returned: u64,
}

/// Every client's completed operations, each client's in the order it ran them.
pub type Histories<O> = BTreeMap<ClientId, Vec<Completed<O>>>;

/// An operation: the `index`-th of `client`'s history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId {
    pub client: ClientId,
    pub index: usize,
}

/// Why a history is not (fork-)linearizable, or cannot be checked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("operation {op:?} is not well formed: {why}")]
    IllFormed { op: OpId, why: &'static str },
    #[error("the forks are not well named: {0}")]
    Forks(&'static str),
    #[error("operation {later:?} after the split returned before the shared operation {shared:?} was invoked")]
    SplitOrder { shared: OpId, later: OpId },
    #[error("no legal order of the {of} operations (fork {fork:?}) respects real time; at best {linearized} placed")]
    NotLinearizable { fork: Option<usize>, linearized: usize, of: usize },
    #[error("fork {fork} saw operation {op:?} of another fork after the split: the forks joined")]
    Joined { fork: usize, op: OpId },
    #[error("gave up after {explored} search states")]
    TooHard { explored: usize },
}

/// A fork structure for [`fork_linearizable`]: which clients went on with which copy of the
/// server after it split, and which operations happened before the split.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Forks {
    /// The clients of each fork; each client with a history is on exactly one.
    pub groups: Vec<BTreeSet<ClientId>>,
    /// The operations before the split, in every fork's view: for each client, a prefix of
    /// its history.
    pub shared: BTreeSet<OpId>,
}

impl Forks {
    /// The split at stamp `split`: the operations that returned before it are shared.
    pub fn split_at<O: Sequential>(histories: &Histories<O>, groups: Vec<BTreeSet<ClientId>>, split: u64) -> Forks {
        let shared = ids(histories).filter(|&(_, c)| c.returned < split).map(|(id, _)| id).collect();
        Forks { groups, shared }
    }
}

/// The views [`fork_linearizable`] found: fork `f`'s is `shared` then `forks[f]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkViews {
    pub shared: Vec<OpId>,
    pub forks: Vec<Vec<OpId>>,
}

impl ForkViews {
    /// The view of every client on fork `fork`.
    pub fn view(&self, fork: usize) -> Vec<OpId> {
        let after = self.forks.get(fork).map_or(&[][..], Vec::as_slice);
        self.shared.iter().chain(after).copied().collect()
    }
}

/// A legal order of all operations of `histories` that respects real time (Sec. 2.1), as
/// operation ids; aborted operations are in it too, with no effect.
pub fn linearizable<O: Sequential>(histories: &Histories<O>) -> Result<Vec<OpId>, CheckError> {
    well_formed(histories)?;
    let mut search = Search::new(histories, |_| Some(false));
    let found = search.run(O::State::default(), &mut |_| Ok(true))?;
    found.ok_or(CheckError::NotLinearizable { fork: None, linearized: search.deepest, of: search.total() })
}

/// Fork-linearizability (Sec. 2.1) with the forks `forks` names. `Ok` means: there is one
/// order `P` of the shared operations, and for each fork `f` one order `S_f` of its clients'
/// other operations, such that every client of fork `f` may take `V_f = P ++ S_f` as its
/// view. Then the definition holds: each view holds all of its client's operations, every
/// response in it is the specification's from the initial state (ABORT has no effect), it
/// respects real time among its operations, and an operation in two views of different forks
/// is a shared one, preceded in both by the same prefix of `P` (no join); views of one fork
/// are equal.
///
/// What is checked, then: the histories are well formed; each client with a history is on
/// exactly one fork; `shared` is a prefix of each client's history; no operation after the
/// split precedes a shared one in real time ([`CheckError::SplitOrder`]); some legal `P`
/// leaves a state from which every fork has a legal `S_f`. When a fork has none, the checker
/// tries again with the other forks' operations after the split allowed in its view: if that
/// succeeds, the fork saw one of them ([`CheckError::Joined`], which names one), else
/// [`CheckError::NotLinearizable`].
///
/// Limits: the check is sufficient, not necessary. It does not search for a fork structure:
/// an execution fork-linearizable only with other groups, another shared prefix, or views of
/// one group that differ (a further fork inside it) is refused. Put such clients on forks of
/// their own.
pub fn fork_linearizable<O: Sequential>(histories: &Histories<O>, forks: &Forks) -> Result<ForkViews, CheckError> {
    well_formed(histories)?;
    let fork_of = fork_of(histories, forks)?;
    for (id, c) in ids(histories).filter(|(id, _)| !forks.shared.contains(id)) {
        if let Some((shared, _)) = ids(histories).find(|(s, p)| forks.shared.contains(s) && c.returned < p.invoked) {
            return Err(CheckError::SplitOrder { shared, later: id });
        }
    }
    let (mut views, mut failure) = (Vec::new(), None);
    let mut prefix = Search::new(histories, |id| forks.shared.contains(&id).then_some(false));
    let found = prefix.run(O::State::default(), &mut |state| match fork_views(histories, forks, &fork_of, state) {
        Ok(found) => {
            views = found;
            Ok(true)
        }
        Err(e @ (CheckError::NotLinearizable { .. } | CheckError::Joined { .. })) => {
            failure = Some(e);
            Ok(false)
        }
        Err(e) => Err(e),
    })?;
    match found {
        Some(shared) => Ok(ForkViews { shared, forks: views }),
        None => Err(failure.unwrap_or(CheckError::NotLinearizable {
            fork: None,
            linearized: prefix.deepest,
            of: prefix.total(),
        })),
    }
}

/// Each fork's `S_f` from `state`, the state after the shared prefix.
fn fork_views<O: Sequential>(
    histories: &Histories<O>,
    forks: &Forks,
    fork_of: &BTreeMap<ClientId, usize>,
    state: &O::State,
) -> Result<Vec<Vec<OpId>>, CheckError> {
    let after_split = |id: &OpId| !forks.shared.contains(id);
    let on = |id: &OpId| fork_of.get(&id.client).copied();
    let mut views = Vec::with_capacity(forks.groups.len());
    for f in 0..forks.groups.len() {
        let mut own = Search::new(histories, |id| (after_split(&id) && on(&id) == Some(f)).then_some(false));
        if let Some(view) = own.run(state.clone(), &mut |_| Ok(true))? {
            views.push(view);
            continue;
        }
        let not = CheckError::NotLinearizable { fork: Some(f), linearized: own.deepest, of: own.total() };
        // The other forks' operations as optional: a view that needs one shows a join.
        let mut any = Search::new(histories, |id| after_split(&id).then_some(on(&id) != Some(f)));
        let joined = any.run(state.clone(), &mut |_| Ok(true))?;
        let foreign = joined.and_then(|view| view.into_iter().find(|id| on(id) != Some(f)));
        return Err(foreign.map_or(not, |op| CheckError::Joined { fork: f, op }));
    }
    Ok(views)
}

fn ids<O: Sequential>(histories: &Histories<O>) -> impl Iterator<Item = (OpId, &Completed<O>)> {
    histories
        .iter()
        .flat_map(|(&client, ops)| ops.iter().enumerate().map(move |(index, c)| (OpId { client, index }, c)))
}

/// Each client's operations return after they are invoked, and one at a time.
fn well_formed<O: Sequential>(histories: &Histories<O>) -> Result<(), CheckError> {
    for (&client, ops) in histories {
        for (index, c) in ops.iter().enumerate() {
            let op = OpId { client, index };
            if c.returned < c.invoked {
                return Err(CheckError::IllFormed { op, why: "returned before it was invoked" });
            }
            if index > 0 && ops[index - 1].returned >= c.invoked {
                return Err(CheckError::IllFormed { op, why: "invoked before its client's previous one returned" });
            }
        }
    }
    Ok(())
}

/// Each client's fork, checking that `forks` names each client once and a prefix of each
/// client's history as shared.
fn fork_of<O: Sequential>(histories: &Histories<O>, forks: &Forks) -> Result<BTreeMap<ClientId, usize>, CheckError> {
    let mut fork_of = BTreeMap::new();
    for (f, group) in forks.groups.iter().enumerate() {
        for &client in group {
            if fork_of.insert(client, f).is_some() {
                return Err(CheckError::Forks("a client on two forks"));
            }
        }
    }
    if histories.iter().any(|(c, ops)| !ops.is_empty() && !fork_of.contains_key(c)) {
        return Err(CheckError::Forks("a client with a history on no fork"));
    }
    for id in &forks.shared {
        if histories.get(&id.client).is_none_or(|ops| id.index >= ops.len()) {
            return Err(CheckError::Forks("a shared operation not in the histories"));
        }
        if id.index > 0 && !forks.shared.contains(&OpId { index: id.index - 1, ..*id }) {
            return Err(CheckError::Forks("shared operations that are not a prefix of their client's history"));
        }
    }
    Ok(fork_of)
}

mod search;
use search::Search;

#[cfg(test)]
mod tests;
