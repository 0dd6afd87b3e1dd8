//! The state record: what a log is at its last committed batch. One metadata entry, put in
//! the same batch as U's changes, so the log moves from one state to the next atomically.
//!
//! Layout (little-endian): version `5:u8`, the owner (`len:u32`, bytes), `width:u32`,
//! `log_capacity:u32`, `group_log:u32`, `time:u64`, `rolled:u8` (the schedule's window flag),
//! then the current objects (`count:u32`, each `region:u8` (`ℓ` for a level, `0xFE` for C),
//! `time:u64`, `slots:u64`, `per_segment:u64`): the filled levels, smallest first, then the
//! C in use, then in a window the C being built; then the levels being built (`count:u32`, each `level:u8`,
//! `merge:u8`, `done:u64`, `per_segment:u64`, then `per_segment:u64` of each level not merged
//! yet, smallest first; see `build`); then the C being built in a window (`coded_build`):
//! `0:u8`, or `1:u8`, `per_segment:u64`, `done:u64`.
//!
//! A record of version 1 (no `group_log`) reads as a log of ungrouped writes, one of
//! version 2 as a log with no level being built, one of versions 1 to 3 as a log whose
//! epoch opened without a window (their C was in use at once), and one of versions 1 to 4
//! as a log with no C being built (theirs was encoded at once).
//!
//! Which objects are current follows from the schedule; the record names them anyway, with
//! the segment size each was written with, and decoding checks that the two agree.

use super::build::Build;
use super::coded_build::CodedBuild;
use super::names::ObjectRef;
use super::MAX_WIDTH;
use vouch_core::codec::Reader;
use vouch_core::por::code::Schedule;
use vouch_core::por::Region;

const VERSION: u8 = 5;

/// A log's committed state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StateRecord {
    pub owner: Vec<u8>,
    pub width: usize,
    pub schedule: Schedule,
    pub objects: Vec<ObjectRef>,
    /// The levels being built, smallest first.
    pub builds: Vec<Build>,
    /// In a window, the next C while it is being built.
    pub coded_build: Option<CodedBuild>,
}

impl StateRecord {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        out.extend_from_slice(&(self.owner.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.owner);
        out.extend_from_slice(&(self.width as u32).to_le_bytes());
        self.schedule.put(&mut out);
        out.extend_from_slice(&(self.objects.len() as u32).to_le_bytes());
        for o in &self.objects {
            out.push(o.region.to_byte());
            [o.time, o.slots, o.per_segment].iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        out.extend_from_slice(&(self.builds.len() as u32).to_le_bytes());
        for b in &self.builds {
            out.extend_from_slice(&[b.level as u8, b.merge as u8]);
            out.extend_from_slice(&b.done.to_le_bytes());
            out.extend_from_slice(&b.per_segment.to_le_bytes());
            b.older.iter().for_each(|o| out.extend_from_slice(&o.per_segment.to_le_bytes()));
        }
        match &self.coded_build {
            None => out.push(0),
            Some(b) => {
                out.push(1);
                out.extend_from_slice(&b.per_segment.to_le_bytes());
                out.extend_from_slice(&b.done.to_le_bytes());
            }
        }
        out
    }

    /// Every object the record names: the levels, C, and what the builds still need.
    pub fn named(&self) -> impl Iterator<Item = ObjectRef> + '_ {
        let builds = self.builds.iter().flat_map(Build::objects);
        let coded_build = self.coded_build.iter().flat_map(CodedBuild::objects);
        self.objects.iter().copied().chain(builds).chain(coded_build)
    }

    /// Decodes and checks a record; the error says what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<StateRecord, String> {
        let short = || "the record is cut short".to_string();
        let mut r = Reader::new(bytes);
        let version = r.array::<1>().map_err(|_| short())?[0];
        if !(1..=VERSION).contains(&version) {
            return Err("unknown record version".into());
        }
        let owner_len = r.u32_le().map_err(|_| short())? as usize;
        let owner = r.bytes(owner_len).map_err(|_| short())?.to_vec();
        let width = r.u32_le().map_err(|_| short())? as usize;
        let schedule = Schedule::take(&mut r, version > 1, version > 3)
            .ok_or("the schedule is cut short, or its window flag is neither 0 nor 1")?;
        let count = r.u32_le().map_err(|_| short())? as usize;
        let mut objects = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            let region = match Region::from_byte(r.array::<1>().map_err(|_| short())?[0]) {
                Region::Raw => return Err(short()),
                region => region,
            };
            let (time, slots, per_segment) =
                (r.u64_le().map_err(|_| short())?, r.u64_le().map_err(|_| short())?, r.u64_le().map_err(|_| short())?);
            objects.push(ObjectRef { region, time, slots, per_segment, stage: None });
        }
        let mut builds = Vec::new();
        if version >= 3 {
            for _ in 0..r.u32_le().map_err(|_| short())? {
                let [level, merge] = r.array::<2>().map_err(|_| short())?.map(u32::from);
                let (done, per_segment) = (r.u64_le().map_err(|_| short())?, r.u64_le().map_err(|_| short())?);
                let time = schedule.level_time(level).ok_or("a build of a level that is not filled")?;
                let mut older = Vec::new();
                for j in merge..level.max(merge) {
                    let per_segment = r.u64_le().map_err(|_| short())?;
                    older.push(ObjectRef {
                        region: Region::Level(j as u8),
                        time: time - (1 << j),
                        slots: 2 << j,
                        per_segment,
                        stage: None,
                    });
                }
                builds.push(Build { level, time, merge, done, per_segment, older });
            }
        }
        let mut coded_build = None;
        if version >= 5 {
            match r.array::<1>().map_err(|_| short())?[0] {
                0 => {}
                1 => {
                    let (per_segment, done) = (r.u64_le().map_err(|_| short())?, r.u64_le().map_err(|_| short())?);
                    let (time, log_capacity) = (schedule.epoch_start(), schedule.log_capacity);
                    coded_build = Some(CodedBuild { time, log_capacity, per_segment, done });
                }
                _ => return Err("the C build flag is neither 0 nor 1".into()),
            }
        }
        if !r.is_empty() {
            return Err("trailing bytes after the record".into());
        }
        let record = StateRecord { owner, width, schedule, objects, builds, coded_build };
        record.check()?;
        Ok(record)
    }

    /// The objects must be exactly those the schedule says are current.
    fn check(&self) -> Result<(), String> {
        let Schedule { log_capacity, group_log, time, .. } = self.schedule;
        if !(1..=MAX_WIDTH).contains(&self.width) || log_capacity > super::MAX_LOG_CAPACITY || !self.schedule.is_valid()
        {
            return Err(format!(
                "width {}, capacity 2^{log_capacity} or group 2^{group_log} out of bounds",
                self.width
            ));
        }
        let want = expected_objects(&self.schedule);
        let same = self.objects.len() == want.len()
            && self.objects.iter().zip(&want).all(|(o, (region, time, slots))| {
                (o.region, o.time, o.slots) == (*region, *time, *slots) && o.per_segment > 0
            });
        if !same {
            return Err(format!("its objects are not those of capacity 2^{log_capacity} at time {time}"));
        }
        let mut last = None;
        for b in &self.builds {
            let first = b.per_segment.trailing_zeros();
            let own = self.objects.iter().find(|o| o.region == Region::Level(b.level as u8));
            let whole = b.per_segment.is_power_of_two()
                && first <= b.merge
                && b.merge < b.level
                && b.done < 1 << b.merge
                && b.done.is_multiple_of(b.per_segment)
                && b.older.iter().all(|o| o.per_segment > 0)
                && own.is_some_and(|o| o.per_segment == b.per_segment)
                && last.is_none_or(|l| l < b.level);
            if !whole {
                return Err(format!("its build of level {} does not fit the schedule", b.level));
            }
            last = Some(b.level);
        }
        if let Some(b) = &self.coded_build {
            let next = self.objects.last().filter(|o| o.region == Region::Coded && o.time == b.time);
            let fits = self.schedule.in_window()
                && b.per_segment.is_power_of_two()
                && b.per_segment < 1 << log_capacity
                && b.done < b.total()
                && next.is_some_and(|o| o.per_segment == b.per_segment);
            if !fits {
                return Err("its C being built does not fit the schedule".into());
            }
        }
        Ok(())
    }
}

/// Region, write time and slot count of each object current at `schedule`, in record order:
/// the filled levels, the C in use, and in a window the C being built.
pub(crate) fn expected_objects(schedule: &Schedule) -> Vec<(Region, u64, u64)> {
    let levels = schedule
        .filled_levels()
        .filter_map(|level| Some((Region::Level(level as u8), schedule.level_time(level)?, 2u64 << level)));
    let coded = |time| (Region::Coded, time, 2 * schedule.capacity());
    let next = schedule.in_window().then(|| coded(schedule.epoch_start()));
    levels.chain([coded(schedule.coded_time())]).chain(next).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(time: u64) -> StateRecord {
        let schedule = Schedule { time, ..Schedule::new(3, 1) };
        let objects = expected_objects(&schedule)
            .into_iter()
            .map(|(region, time, slots)| ObjectRef { region, time, slots, per_segment: 5, stage: None })
            .collect();
        StateRecord { owner: b"alice/f".to_vec(), width: 4, schedule, objects, builds: Vec::new(), coded_build: None }
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_refused() {
        for time in [0, 5, 8, 14, 17] {
            let r = record(time);
            assert_eq!(StateRecord::from_bytes(&r.to_bytes()), Ok(r));
        }
        let bytes = record(5).to_bytes();
        for cut in 0..bytes.len() {
            assert!(StateRecord::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(StateRecord::from_bytes(&[bytes.as_slice(), &[0]].concat()).is_err());
        // Another group time: the objects no longer match the schedule.
        let mut moved = record(5);
        moved.schedule.time = 7;
        assert!(StateRecord::from_bytes(&moved.to_bytes()).is_err());
        let mut ungrouped = record(5);
        ungrouped.schedule.group_log = 4;
        assert!(StateRecord::from_bytes(&ungrouped.to_bytes()).is_err(), "a group larger than U");
        let mut wide = record(5);
        wide.width = MAX_WIDTH + 1;
        assert!(StateRecord::from_bytes(&wide.to_bytes()).is_err());
        // Version 1: no grouping.
        let mut v1 = record(5);
        v1.schedule.group_log = 0;
        v1.objects = expected_objects(&v1.schedule)
            .into_iter()
            .map(|(region, time, slots)| ObjectRef { region, time, slots, per_segment: 5, stage: None })
            .collect();
        let mut bytes_1 = v1.to_bytes();
        bytes_1[0] = 1;
        let at = 1 + 4 + v1.owner.len() + 4 + 4;
        bytes_1.drain(at..at + 4);
        // Nor the window flag of version 4,
        assert_eq!(bytes_1.remove(at + 8), 0);
        // nor the builds of version 3, nor the C build flag of version 5.
        bytes_1.truncate(bytes_1.len() - 5);
        assert_eq!(StateRecord::from_bytes(&bytes_1), Ok(v1));
        let mut empty = record(5);
        empty.objects[0].per_segment = 0;
        assert!(StateRecord::from_bytes(&empty.to_bytes()).is_err());
        assert_eq!(record(8).objects.len(), 1, "only C at an epoch's start");
        assert_eq!(record(5).objects, record(4).objects, "a write into the open group leaves H as it was");
    }

    #[test]
    fn a_record_in_a_window_names_both_cs_and_the_epochs_level() {
        let mut r = record(8);
        r.schedule.rolled = true;
        r.objects = expected_objects(&r.schedule)
            .into_iter()
            .map(|(region, time, slots)| ObjectRef { region, time, slots, per_segment: 5, stage: None })
            .collect();
        let named: Vec<(Region, u64)> = r.objects.iter().map(|o| (o.region, o.time)).collect();
        assert_eq!(named, [(Region::Level(2), 4), (Region::Coded, 0), (Region::Coded, 4)]);
        assert_eq!(StateRecord::from_bytes(&r.to_bytes()), Ok(r.clone()));
        // Without the C being built, or with a flag that is not a flag, it is refused.
        let mut short = r.clone();
        short.objects.pop();
        assert!(StateRecord::from_bytes(&short.to_bytes()).is_err());
        let mut bytes = r.to_bytes();
        let at = 1 + 4 + r.owner.len() + 4 + 4 + 4 + 8;
        bytes[at] = 2;
        assert!(StateRecord::from_bytes(&bytes).is_err());
    }

    #[test]
    fn a_c_being_built_round_trips_and_one_that_does_not_fit_is_refused() {
        let mut r = record(8);
        r.schedule.rolled = true;
        r.objects = expected_objects(&r.schedule)
            .into_iter()
            .map(|(region, time, slots)| ObjectRef { region, time, slots, per_segment: 2, stage: None })
            .collect();
        r.coded_build = Some(CodedBuild { time: 4, log_capacity: 3, per_segment: 2, done: 5 });
        assert_eq!(StateRecord::from_bytes(&r.to_bytes()), Ok(r.clone()));
        let bytes = r.to_bytes();
        for cut in 0..bytes.len() {
            assert!(StateRecord::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut flag = bytes.clone();
        flag[bytes.len() - 17] = 2;
        assert!(StateRecord::from_bytes(&flag).is_err());
        let bad: [fn(&mut StateRecord); 5] = [
            |r| r.coded_build.as_mut().unwrap().per_segment = 3,
            |r| r.coded_build.as_mut().unwrap().per_segment = 8,
            |r| r.coded_build.as_mut().unwrap().done = 8,
            |r| r.objects.last_mut().unwrap().per_segment = 4,
            |r| r.schedule.rolled = false,
        ];
        for (i, spoil) in bad.iter().enumerate() {
            let mut spoilt = r.clone();
            spoil(&mut spoilt);
            assert!(StateRecord::from_bytes(&spoilt.to_bytes()).is_err(), "case {i}");
        }
    }

    #[test]
    fn builds_round_trip_and_ones_that_do_not_fit_are_refused() {
        // Time 5: group time 2, so level 1 is filled (written at group time 2).
        let mut r = record(5);
        let level = r.objects.iter_mut().find(|o| o.region == Region::Level(1)).unwrap();
        level.per_segment = 1;
        let older = vec![ObjectRef { region: Region::Level(0), time: 1, slots: 2, per_segment: 7, stage: None }];
        r.builds = vec![Build { level: 1, time: 2, merge: 0, done: 0, per_segment: 1, older }];
        assert_eq!(StateRecord::from_bytes(&r.to_bytes()), Ok(r.clone()));
        let bytes = r.to_bytes();
        for cut in 0..bytes.len() {
            assert!(StateRecord::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let bad: [fn(&mut StateRecord); 5] = [
            |r| r.builds[0].merge = 1,
            |r| r.builds[0].done = 1,
            |r| r.builds[0].per_segment = 2,
            |r| r.builds[0].older[0].per_segment = 0,
            |r| r.builds.push(r.builds[0].clone()),
        ];
        for (i, spoil) in bad.iter().enumerate() {
            let mut spoilt = r.clone();
            spoil(&mut spoilt);
            assert!(StateRecord::from_bytes(&spoilt.to_bytes()).is_err(), "case {i}");
        }
        // A build of a level that is not filled.
        let mut empty = record(8);
        empty.builds = r.builds.clone();
        assert!(StateRecord::from_bytes(&empty.to_bytes()).is_err());
    }
}
