//! A consolidation's plan, pure (App. A.3: "rebuild and consolidate the hierarchical log by
//! suppressing deleted items"): which copies move, where to, and what their labels say after.
//!
//! U's slots in use are those the current labels of the namespace's PoR versions name (the
//! live runs). U can shrink to `2^k` slots when the blocks that reach past `2^k` fit, first
//! fit, in the slots below it that no label names (the holes). A block moves whole, so its
//! slots stay consecutive; neighbouring blocks that land side by side make one [`Move`].

use super::layout::{extend, Layout, Run, MAX_RUNS};

/// Most moves one consolidation makes: they stay in the client's record while it runs.
pub const MAX_MOVES: usize = 4096;

/// `slots` slots of U from `from` copied to `to`, each slot re-indexed (its header names
/// where it is; the rest of it is the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: u64,
    pub to: u64,
    pub slots: u64,
}

/// A consolidation: U shrinks to `2^log_target` slots once `moves` are made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub log_target: u32,
    pub moves: Vec<Move>,
}

/// The runs `runs` cover, ascending, overlapping or touching runs joined.
pub fn union(runs: impl IntoIterator<Item = Run>) -> Vec<Run> {
    let mut sorted: Vec<Run> = runs.into_iter().filter(|r| r.slots > 0).collect();
    sorted.sort_by_key(|r| r.first);
    let mut out: Vec<Run> = Vec::with_capacity(sorted.len());
    for run in sorted {
        match out.last_mut() {
            Some(last) if run.first <= last.first + last.slots => {
                last.slots = last.slots.max(run.first + run.slots - last.first);
            }
            _ => out.push(run),
        }
    }
    out
}

/// The slots below `end` that no run of `live` (a [`union`]) covers.
pub fn holes(live: &[Run], end: u64) -> Vec<Run> {
    let mut out = Vec::new();
    let mut at = 0;
    for run in live {
        if run.first >= end {
            break;
        }
        if run.first > at {
            out.push(Run { first: at, slots: run.first - at });
        }
        at = run.first + run.slots;
    }
    if at < end {
        out.push(Run { first: at, slots: end - at });
    }
    out
}

/// The least `k` (from `least`) with `2^k` slots for every one of `live`.
pub fn least_target(live: &[Run], least: u32) -> u32 {
    let used: u64 = live.iter().map(|r| r.slots).sum();
    least.max(64 - used.saturating_sub(1).leading_zeros())
}

/// The consolidation to the least `2^k` (from `least`, below `2^log_capacity`) that every
/// live slot fits under and for which the blocks reaching past `2^k` fit in the holes below
/// it, with every layout kept within [`MAX_RUNS`] and the moves within [`MAX_MOVES`].
/// `blocks` are (first slot, slots) of every live block reaching past the least such `2^k`,
/// ascending. `None` when no `k` works (U stays as it is).
pub fn plan(live: &[Run], blocks: &[(u64, u64)], layouts: &[Layout], least: u32, log_capacity: u32) -> Option<Plan> {
    (least_target(live, least)..log_capacity).find_map(|log_target| {
        let target = 1u64 << log_target;
        let moving = blocks.iter().filter(|&&(at, slots)| at + slots > target);
        let moves = place(moving, holes(live, target))?;
        let fits = layouts.iter().all(|l| {
            let after = moved(l, &moves);
            after.runs.len() <= MAX_RUNS && after.end() <= target
        });
        fits.then_some(Plan { log_target, moves })
    })
}

/// Each block (first slot, slots; ascending) put in the first hole it fits; `None` when one
/// fits nowhere or the moves would pass [`MAX_MOVES`].
fn place<'a>(blocks: impl Iterator<Item = &'a (u64, u64)>, mut holes: Vec<Run>) -> Option<Vec<Move>> {
    let mut moves: Vec<Move> = Vec::new();
    for &(from, slots) in blocks {
        let hole = holes.iter_mut().find(|h| h.slots >= slots)?;
        let to = hole.first;
        (hole.first, hole.slots) = (hole.first + slots, hole.slots - slots);
        match moves.last_mut() {
            Some(m) if m.from + m.slots == from && m.to + m.slots == to => m.slots += slots,
            _ => moves.push(Move { from, to, slots }),
        }
        if moves.len() > MAX_MOVES {
            return None;
        }
    }
    Some(moves)
}

/// `layout` once `moves` (ascending by `from`, apart) are made: each slot a move takes is
/// where the move puts it; the others stay.
pub fn moved(layout: &Layout, moves: &[Move]) -> Layout {
    let mut runs = Vec::with_capacity(layout.runs.len());
    for run in &layout.runs {
        let (mut at, end) = (run.first, run.first + run.slots);
        while at < end {
            // The last move starting at or before `at`, and the first after it.
            let i = moves.partition_point(|m| m.from <= at);
            match i.checked_sub(1).map(|j| moves[j]).filter(|m| at < m.from + m.slots) {
                Some(m) => {
                    let upto = end.min(m.from + m.slots);
                    extend(&mut runs, m.to + (at - m.from), upto - at);
                    at = upto;
                }
                None => {
                    let upto = moves.get(i).map_or(end, |m| end.min(m.from));
                    extend(&mut runs, at, upto - at);
                    at = upto;
                }
            }
        }
    }
    Layout { runs }
}

/// The slots a consolidation frees once its moves are made, in the order it writes them ⊥:
/// the moved slots below `target` (a block that straddled it), then every slot from
/// `target` to `next` (moved, ⊥ already, or left by a copy a crash cut short).
pub fn freed(moves: &[Move], target: u64, next: u64) -> Vec<Run> {
    let mut out: Vec<Run> = moves
        .iter()
        .filter(|m| m.from < target)
        .map(|m| Run { first: m.from, slots: m.slots.min(target - m.from) })
        .collect();
    if next > target {
        out.push(Run { first: target, slots: next - target });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(list: &[(u64, u64)]) -> Vec<Run> {
        list.iter().map(|&(first, slots)| Run { first, slots }).collect()
    }

    fn layout(list: &[(u64, u64)]) -> Layout {
        Layout { runs: runs(list) }
    }

    #[test]
    fn live_runs_join_and_leave_holes() {
        let live = union(runs(&[(10, 5), (0, 2), (12, 6), (18, 2), (30, 1)]));
        assert_eq!(live, runs(&[(0, 2), (10, 10), (30, 1)]));
        assert_eq!(holes(&live, 32), runs(&[(2, 8), (20, 10), (31, 1)]));
        assert_eq!(holes(&live, 16), runs(&[(2, 8)]));
        assert_eq!(holes(&[], 4), runs(&[(0, 4)]));
    }

    #[test]
    fn blocks_past_the_target_move_first_fit_and_layouts_follow() {
        // U of 2^6: live 0..4 (one block), 20..22 (one), 40..43 (blocks 40+2, 42+1), 60..62.
        let live = union(runs(&[(0, 4), (20, 2), (40, 3), (60, 2)]));
        let blocks = [(20, 2), (40, 2), (42, 1), (60, 2)];
        let a = layout(&[(0, 4), (20, 2)]);
        let b = layout(&[(40, 3), (60, 2)]);
        let plan = plan(&live, &blocks, &[a.clone(), b.clone()], 4, 6).unwrap();
        // 11 slots in use: 2^4 at least; the holes below 16 are 4..16, and all blocks fit.
        assert_eq!(plan.log_target, 4);
        assert_eq!(
            plan.moves,
            [
                Move { from: 20, to: 4, slots: 2 },
                Move { from: 40, to: 6, slots: 3 },
                Move { from: 60, to: 9, slots: 2 }
            ]
        );
        assert_eq!(moved(&a, &plan.moves), layout(&[(0, 6)]), "joined with the run it now follows");
        assert_eq!(moved(&b, &plan.moves), layout(&[(6, 5)]));
        // 19 slots in use: 2^5 at least, and only the blocks past 32 move.
        let crowded = union(runs(&[(0, 14), (20, 2), (40, 3)]));
        let plan2 = super::plan(&crowded, &[(40, 2), (42, 1)], &[], 4, 7).unwrap();
        assert_eq!(plan2.log_target, 5);
        assert_eq!(plan2.moves, [Move { from: 40, to: 14, slots: 3 }]);
        // No k below the capacity: no plan.
        assert_eq!(super::plan(&crowded, &[(40, 2), (42, 1)], &[], 4, 5), None);
    }

    #[test]
    fn a_block_straddling_the_target_moves_whole_and_its_slots_below_are_freed() {
        // Live 0..2 and a copy of blocks 10+4 and 14+4 (10..18); U of 2^5, target 2^4.
        let live = union(runs(&[(0, 2), (10, 8)]));
        let copy = layout(&[(10, 8)]);
        let plan = plan(&live, &[(14, 4)], std::slice::from_ref(&copy), 4, 5).unwrap();
        assert_eq!(plan.moves, [Move { from: 14, to: 2, slots: 4 }]);
        assert_eq!(moved(&copy, &plan.moves), layout(&[(10, 4), (2, 4)]));
        assert_eq!(freed(&plan.moves, 16, 18), runs(&[(14, 2), (16, 2)]));
    }

    #[test]
    fn a_block_that_fits_no_hole_or_a_layout_past_its_runs_means_a_larger_target() {
        // A block of 6 past 16 and holes of 5 and 4 below it: none fits.
        let live = union(runs(&[(5, 2), (11, 5), (20, 6)]));
        let blocks = [(20, 6)];
        assert_eq!(plan(&live, &blocks, &[], 4, 5), None);
        assert_eq!(plan(&live, &blocks, &[], 4, 6).map(|p| p.log_target), Some(5));
        // Many one-slot blocks into scattered holes: a layout past MAX_RUNS.
        let n = MAX_RUNS as u64 + 1;
        let scattered: Vec<Run> = (0..n).map(|i| Run { first: 2 * i + 1, slots: 1 }).collect();
        let top = 1 << 13;
        let live = union(scattered.into_iter().chain([Run { first: top, slots: n }]));
        let blocks: Vec<(u64, u64)> = (top..top + n).map(|s| (s, 1)).collect();
        let copy = layout(&[(top, n)]);
        assert!(plan(&live, &blocks, &[], 4, 14).is_some());
        assert_eq!(plan(&live, &blocks, &[copy], 4, 14), None);
    }

    #[test]
    fn a_move_remaps_only_the_slots_it_takes() {
        let moves = [Move { from: 10, to: 0, slots: 2 }, Move { from: 20, to: 5, slots: 3 }];
        assert_eq!(moved(&layout(&[(8, 16)]), &moves), layout(&[(8, 2), (0, 2), (12, 8), (5, 3), (23, 1)]));
        assert_eq!(moved(&layout(&[(30, 2)]), &moves), layout(&[(30, 2)]));
        assert_eq!(moved(&layout(&[(21, 1)]), &moves), layout(&[(6, 1)]));
    }
}
