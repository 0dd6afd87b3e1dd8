//! The search for a legal order (Wing and Gong's, memoised as Lowe's): depth first over which
//! client's next operation goes next, with the states that led nowhere remembered.

use super::{CheckError, Completed, Histories, OpId, Sequential, MAX_STATES};
use crate::aip::Outcome;
use std::collections::HashSet;

/// An operation to place: mandatory (it must be in the order), or optional (in it or not:
/// another fork's, when looking for a join).
struct Entry<'h, O: Sequential> {
    id: OpId,
    done: &'h Completed<O>,
    optional: bool,
}

impl<O: Sequential> Clone for Entry<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O: Sequential> Copy for Entry<'_, O> {}

impl<O: Sequential> Entry<'_, O> {
    /// The state after this operation when its response is the specification's in `state`
    /// (an ABORT changes nothing and fits anywhere).
    fn after(&self, state: &O::State) -> Option<O::State> {
        let mut next = state.clone();
        match &self.done.outcome {
            Outcome::Abort => Some(next),
            Outcome::Done(response) => (self.done.op.apply(&mut next) == *response).then_some(next),
        }
    }

    /// Whether this operation never changes a state: a query, or aborted.
    fn changes_nothing(&self) -> bool {
        self.done.op.is_query() || self.done.outcome == Outcome::Abort
    }
}

/// What reaching a state with every operation placed leads to: `Ok(true)` to stop there.
pub(super) type Goal<'g, S> = dyn FnMut(&S) -> Result<bool, CheckError> + 'g;

pub(super) struct Search<'h, O: Sequential> {
    /// Per client, its operations to place, in order.
    lanes: Vec<Vec<Entry<'h, O>>>,
    /// The states (how many of each lane are placed, the specification's state) that led
    /// nowhere.
    failed: HashSet<(Vec<usize>, O::State)>,
    explored: usize,
    /// The most operations placed at once (how far the best attempt got).
    pub(super) deepest: usize,
}

impl<'h, O: Sequential> Search<'h, O> {
    /// The operations `pick` keeps: `Some(optional)`, or `None` to leave one out.
    pub(super) fn new(histories: &'h Histories<O>, pick: impl Fn(OpId) -> Option<bool>) -> Search<'h, O> {
        let lanes = histories
            .iter()
            .map(|(&client, ops)| {
                let entries = ops.iter().enumerate().map(|(index, done)| (OpId { client, index }, done));
                entries.filter_map(|(id, done)| pick(id).map(|optional| Entry { id, done, optional })).collect()
            })
            .filter(|lane: &Vec<Entry<'h, O>>| !lane.is_empty())
            .collect();
        Search { lanes, failed: HashSet::new(), explored: 0, deepest: 0 }
    }

    /// How many operations must be placed.
    pub(super) fn total(&self) -> usize {
        self.lanes.iter().flatten().filter(|e| !e.optional).count()
    }

    /// An order from `state` on that `goal` accepts at its end, if any.
    pub(super) fn run(
        &mut self,
        state: O::State,
        goal: &mut Goal<'_, O::State>,
    ) -> Result<Option<Vec<OpId>>, CheckError> {
        let (mut placed, mut order) = (vec![0; self.lanes.len()], Vec::new());
        Ok(self.dfs(&mut placed, state, &mut order, goal)?.then_some(order))
    }

    fn next(&self, placed: &[usize], lane: usize) -> Option<Entry<'h, O>> {
        self.lanes[lane].get(placed[lane]).copied()
    }

    /// `lane`'s next operation, if it may go next: no operation left in another lane returned
    /// before it was invoked (within a lane, the earlier ones returned first).
    fn ready(&self, placed: &[usize], lane: usize) -> Option<Entry<'h, O>> {
        let entry = self.next(placed, lane)?;
        let free = (0..self.lanes.len())
            .all(|j| j == lane || self.next(placed, j).is_none_or(|e| e.done.returned >= entry.done.invoked));
        free.then_some(entry)
    }

    /// Places every query and aborted operation that may go next and fits (an optional one
    /// is left out instead). This loses no order: moved first, such an operation changes
    /// nothing for the others, and none left had to precede it.
    fn place_inert(&self, placed: &mut [usize], state: &O::State, order: &mut Vec<OpId>) {
        while let Some(entry) = (0..self.lanes.len()).find_map(|lane| {
            let entry = self.ready(placed, lane).filter(|e| e.changes_nothing() && e.after(state).is_some())?;
            placed[lane] += 1;
            Some(entry)
        }) {
            if !entry.optional {
                order.push(entry.id);
            }
        }
    }

    fn dfs(
        &mut self,
        placed: &mut Vec<usize>,
        state: O::State,
        order: &mut Vec<OpId>,
        goal: &mut Goal<'_, O::State>,
    ) -> Result<bool, CheckError> {
        let (before, len) = (placed.clone(), order.len());
        self.place_inert(placed, &state, order);
        self.deepest = self.deepest.max(order.len());
        let key = (placed.clone(), state);
        let found = !self.failed.contains(&key) && self.branch(placed, &key.1, order, goal)?;
        if !found {
            self.failed.insert(key);
            placed.clone_from(&before);
            order.truncate(len);
        }
        Ok(found)
    }

    /// Each operation that may go next, placed (when it fits) or, if optional, left out.
    fn branch(
        &mut self,
        placed: &mut Vec<usize>,
        state: &O::State,
        order: &mut Vec<OpId>,
        goal: &mut Goal<'_, O::State>,
    ) -> Result<bool, CheckError> {
        if (0..self.lanes.len()).all(|lane| self.next(placed, lane).is_none()) {
            return goal(state);
        }
        self.explored += 1;
        if self.explored > MAX_STATES {
            return Err(CheckError::TooHard { explored: self.explored });
        }
        for lane in 0..self.lanes.len() {
            let Some(entry) = self.ready(placed, lane) else { continue };
            placed[lane] += 1;
            if let Some(next) = entry.after(state) {
                order.push(entry.id);
                if self.dfs(placed, next, order, goal)? {
                    return Ok(true);
                }
                order.pop();
            }
            if entry.optional && self.dfs(placed, state.clone(), order, goal)? {
                return Ok(true);
            }
            placed[lane] -= 1;
        }
        Ok(false)
    }
}
