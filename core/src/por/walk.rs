//! A batch's walk through the schedule, computed once (Fig. 4's HAdd on groups of writes,
//! Sec. 6.1; CRebuild and its window; App. A.3's growth), and the one trait that runs it.
//!
//! What a batch of writes triggers depends only on the schedule before it, whether it
//! resizes U, how many slots it writes and whether it flushes, never on the slots. [`walk`]
//! turns those into a list of [`Step`]s, each with the schedule it happens at, and
//! [`execute`] hands them in order to an [`Executor`]. Three executors run the same walk:
//!
//! * the client's replay on checksums ([`super::client::write_opened`]), which seals what
//!   the provider must keep;
//! * the in-memory reference provider ([`super::provider::ProviderLog::apply`]), which runs
//!   every rebuild on the slots;
//! * the store (`vouch_store::PorLog::apply`), which runs the large rebuilds a few segments
//!   at a time and keeps the rest in objects.
//!
//! The client's [`super::client::plan`] and both sides' [`batch_outcome`] read the walk too,
//! so what is asked for, what is replayed and what is uploaded cannot disagree.

use super::code::{Rebuild, Schedule};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// One step of a batch, in the order it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Before any write, U becomes `2^log_capacity` slots (it grows, is re-encoded at its
    /// capacity, or shrinks), C is re-encoded over it and H is emptied (App. A.3). Its
    /// schedule is the one after.
    Resize(CodedAt),
    /// The batch's `i`-th write, in its order.
    Write(usize),
    /// A ⊥ write completing the open group when the batch flushes.
    Pad,
    /// The write just made completes a group: levels `0..level` and the group become level
    /// `level` (HRebuildX / HRebuildY); at an epoch's end, level `levels()`, the window's.
    Level(u32),
    /// The write just made ends the epoch: CRebuild.
    Coded(CodedAt),
    /// The write just made completed a group, after its rebuilds: work paced per group.
    GroupDone,
    /// The time moved past the write. Its schedule is the one after, whose window may be
    /// over ([`Schedule::in_window`]).
    Advanced,
}

/// A C the batch builds: at a resize, or at an epoch's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodedAt {
    /// Its write time, in groups ([`Schedule::coded_time`] once it is in use).
    pub time: u64,
    /// Whether it is the last C the batch builds (U's checksums are not needed after it).
    pub last: bool,
    /// Whether a window opens after it: the old C stays in use meanwhile, and the new one
    /// may be built over the window.
    pub windowed: bool,
}

/// A batch's steps (see [`walk`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The schedule the writes start from, after any resize.
    pub start: Schedule,
    /// Each step with the schedule it happens at.
    pub steps: Vec<(Schedule, Step)>,
    /// The schedule after the batch.
    pub end: Schedule,
}

/// The schedule after U grows to `2^log_capacity` slots at `schedule.time`: C is rebuilt at
/// the next multiple of the new capacity after the time, which starts the new epoch, and is
/// in use at once (no window).
pub fn grown_schedule(schedule: &Schedule, log_capacity: u32) -> Schedule {
    let n = 1u64 << log_capacity;
    Schedule { log_capacity, time: (schedule.time / n + 1) * n, rolled: false, ..*schedule }
}

/// The ⊥ writes that complete the open group after `writes` more writes from `schedule`,
/// when the batch flushes.
pub fn padding(schedule: &Schedule, writes: u64, flush: bool) -> u64 {
    let mask = schedule.group() - 1;
    if flush {
        (schedule.group() - (schedule.time.wrapping_add(writes) & mask)) & mask
    } else {
        0
    }
}

/// The walk of a batch of `writes` writes from `schedule`, after U is resized to
/// `2^resize_to` slots first, then its ⊥ writes when it flushes.
pub fn walk(schedule: &Schedule, resize_to: Option<u32>, writes: usize, flush: bool) -> Walk {
    let mut at = resize_to.map_or(*schedule, |k| grown_schedule(schedule, k));
    let start = at;
    let pad = padding(&at, writes as u64, flush) as usize;
    let mut steps = Vec::with_capacity((writes + pad) * 2 + 1);
    let resize_index = resize_to.map(|_| {
        steps.push((at, Step::Resize(CodedAt { time: at.coded_time(), last: true, windowed: false })));
        0
    });
    let mut last_coded = resize_index;
    for i in 0..writes + pad {
        steps.push((at, if i < writes { Step::Write(i) } else { Step::Pad }));
        let rebuild = at.next_rebuild();
        if let Some(level) = at.next_level() {
            steps.push((at, Step::Level(level)));
        }
        if rebuild == Rebuild::Coded {
            let mut after = at;
            after.advance();
            let coded = CodedAt { time: at.group_time() + 1, last: true, windowed: after.in_window() };
            last_coded = Some(steps.len());
            steps.push((at, Step::Coded(coded)));
        }
        if rebuild != Rebuild::Pending {
            steps.push((at, Step::GroupDone));
        }
        at.advance();
        steps.push((at, Step::Advanced));
    }
    // Only the last C built keeps U's checksums; the earlier ones take a copy.
    for (i, (_, step)) in steps.iter_mut().enumerate() {
        if let Step::Resize(coded) | Step::Coded(coded) = step {
            coded.last = Some(i) == last_coded;
        }
    }
    Walk { start, steps, end: at }
}

/// What a batch of `writes` writes (then its ⊥ writes when it flushes) leaves behind, from
/// the schedule before it: the schedule after it, the levels it builds that are still filled
/// at its end (ascending), and the write times of the Cs it builds (resize, an epoch's end)
/// that are in use or next at its end (ascending: at most two, when it ends in a window
/// after an epoch it began). Client and provider both derive what is uploaded from this.
pub fn batch_outcome(
    schedule: &Schedule,
    resize_to: Option<u32>,
    writes: u64,
    flush: bool,
) -> (Schedule, Vec<u32>, Vec<u64>) {
    walk(schedule, resize_to, writes as usize, flush).outcome()
}

impl Walk {
    /// [`batch_outcome`] of this walk.
    pub fn outcome(&self) -> (Schedule, Vec<u32>, Vec<u64>) {
        let (begun, end) = (self.start.group_time(), self.end);
        let built = end.filled_levels().filter(|&l| end.level_time(l).is_some_and(|t| t > begun)).collect();
        let coded_built: Vec<u64> = self
            .steps
            .iter()
            .filter_map(|(_, step)| match step {
                Step::Resize(c) | Step::Coded(c) => Some(c.time),
                _ => None,
            })
            .collect();
        let mut coded = vec![end.coded_time()];
        if end.in_window() {
            coded.push(end.epoch_start());
        }
        coded.retain(|t| coded_built.contains(t));
        (end, built, coded)
    }
}

/// What runs a [`Walk`]: one method per kind of step, each given the schedule it happens at.
/// The store's methods wait on its backends; the client's replay and the in-memory
/// reference never wait, and run through [`execute_now`].
pub trait Executor {
    type Error: Send;

    /// [`Step::Resize`], at the schedule after it.
    fn resize(&mut self, at: &Schedule, coded: CodedAt) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// [`Step::Write`] of the batch's `i`-th write (`Some(i)`) or [`Step::Pad`] (`None`).
    fn write(&mut self, at: &Schedule, write: Option<usize>) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// [`Step::Level`].
    fn level(&mut self, at: &Schedule, level: u32) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// [`Step::Coded`].
    fn coded(&mut self, at: &Schedule, coded: CodedAt) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// [`Step::GroupDone`]: nothing unless work is paced per group.
    fn group_done(&mut self, _at: &Schedule) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// [`Step::Advanced`], at the schedule after the write: nothing unless something ends
    /// with the window.
    fn advanced(&mut self, _now: &Schedule) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }
}

/// Runs every step of `walk` on `executor`, in order, up to the first error.
pub async fn execute<E: Executor>(walk: &Walk, executor: &mut E) -> Result<(), E::Error> {
    for (at, step) in &walk.steps {
        match *step {
            Step::Resize(coded) => executor.resize(at, coded).await?,
            Step::Write(i) => executor.write(at, Some(i)).await?,
            Step::Pad => executor.write(at, None).await?,
            Step::Level(level) => executor.level(at, level).await?,
            Step::Coded(coded) => executor.coded(at, coded).await?,
            Step::GroupDone => executor.group_done(at).await?,
            Step::Advanced => executor.advanced(at).await?,
        }
    }
    Ok(())
}

/// [`execute`] for an executor that never waits (its methods complete when first polled).
///
/// # Panics
/// When the executor waits: a caller's bug (run such an executor with [`execute`]).
pub fn execute_now<E: Executor>(walk: &Walk, executor: &mut E) -> Result<(), E::Error> {
    let mut run = pin!(execute(walk, executor));
    match run.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => panic!("an executor that waits runs with execute, not execute_now"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts what it is handed, and checks the schedules are the ones the walk's steps say.
    #[derive(Default)]
    struct Tally {
        writes: Vec<Option<usize>>,
        levels: Vec<(u64, u32)>,
        coded: Vec<CodedAt>,
        groups: u64,
        times: Vec<u64>,
    }

    impl Executor for Tally {
        type Error = ();
        async fn resize(&mut self, _: &Schedule, coded: CodedAt) -> Result<(), ()> {
            self.coded.push(coded);
            Ok(())
        }
        async fn write(&mut self, at: &Schedule, write: Option<usize>) -> Result<(), ()> {
            self.writes.push(write);
            self.times.push(at.time);
            Ok(())
        }
        async fn level(&mut self, at: &Schedule, level: u32) -> Result<(), ()> {
            self.levels.push((at.group_time(), level));
            Ok(())
        }
        async fn coded(&mut self, _: &Schedule, coded: CodedAt) -> Result<(), ()> {
            self.coded.push(coded);
            Ok(())
        }
        async fn group_done(&mut self, _: &Schedule) -> Result<(), ()> {
            self.groups += 1;
            Ok(())
        }
    }

    #[test]
    fn a_walk_writes_then_pads_and_rebuilds_per_group() {
        // 2^4 slots in groups of 2: levels 0..3, an epoch of 8 groups.
        let schedule = Schedule::new(4, 1);
        let walk = walk(&schedule, None, 3, true);
        let mut tally = Tally::default();
        execute_now(&walk, &mut tally).unwrap();
        assert_eq!(tally.writes, [Some(0), Some(1), Some(2), None]);
        assert_eq!(tally.times, [0, 1, 2, 3]);
        // Group 0 builds level 0, group 1 level 1 (consuming level 0).
        assert_eq!(tally.levels, [(0, 0), (1, 1)]);
        assert_eq!(tally.groups, 2);
        assert!(tally.coded.is_empty());
        assert_eq!(walk.end.time, 4);
    }

    #[test]
    fn an_epoch_end_rebuilds_c_into_a_window_and_only_the_last_c_is_last() {
        let schedule = Schedule::new(3, 0);
        // Growth to 2^3 moves the time to 8 (C at 8), then 16 writes: two epochs' ends (C at 16
        // and 24).
        let walk = walk(&schedule, Some(3), 16, false);
        let mut tally = Tally::default();
        execute_now(&walk, &mut tally).unwrap();
        let times: Vec<(u64, bool, bool)> = tally.coded.iter().map(|c| (c.time, c.last, c.windowed)).collect();
        assert_eq!(times, [(8, false, false), (16, false, true), (24, true, true)]);
        let (end, _, coded) = batch_outcome(&schedule, Some(3), 16, false);
        assert_eq!(end, walk.end);
        // In the window after the second epoch: the C of 16 in use, the C of 24 next.
        assert_eq!(coded, [16, 24]);
    }

    #[test]
    fn a_resize_alone_is_one_step_and_the_last_c() {
        let schedule = Schedule { time: 5, ..Schedule::new(3, 1) };
        let walk = walk(&schedule, Some(3), 0, false);
        assert_eq!(walk.steps.len(), 1);
        assert!(matches!(walk.steps[0].1, Step::Resize(CodedAt { last: true, windowed: false, .. })));
        assert_eq!(walk.end, grown_schedule(&schedule, 3));
    }
}
