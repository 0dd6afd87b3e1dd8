//! A blob store that fails when told to: a decorator over any object store, which is how
//! crash and fault tests stop the store at a chosen point (as redb's crash tests wrap their
//! storage backend). Production types carry no fault hooks; a test wraps the backend
//! ([`crate::ObjectBlobs::with_faults`]) and arms the [`Faults`] it shares with it.
//!
//! Two ways to arm them. The first, for crash tests: [`Faults::fail_puts_after`] (a put that
//! fails writes nothing, so it stands for the process dying just before it: what came before
//! is stored, nothing after), [`Faults::fail_deletes`], and [`Faults::garble_puts`] (a backend,
//! or a provider, that keeps the data, not what was written). The second, for the faults a
//! backend has on any call ([`Call`]) of any kind ([`Fault`]): [`Faults::arm`] for the next
//! few calls, [`Faults::arm_every`] for all of them, [`Faults::arm_one_in`] for one call in
//! `n`. Schedules are counters, so a test strikes the same calls every run.
//!
//! What each fault does to each call:
//!
//! | [`Fault`] | put, copy | multipart put (at its completion) | get, ranged get | head | list | delete |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | `Error` | fails (a 503) | fails, its parts sent | fails | fails | fails | fails |
//! | `Timeout` | never answers | never completes | never answers | never answers | never answers | never answers |
//! | `Slow(d)` | answers after `d` | completes after `d` | answers after `d` | answers after `d` | answers after `d` | answers after `d` |
//! | `Partial` | writes the first half, then fails | writes its first part, then fails | the body breaks off halfway | fails | one entry, then fails | deletes, then fails (the answer lost) |
//! | `Full` | fails: no space left on the device | likewise | likewise | likewise | likewise | likewise |
//!
//! A multipart put is struck when it completes, not when it starts: by then its parts have
//! gone, the one case no retry can cover.

mod store;
#[cfg(test)]
mod tests;

pub(crate) use store::Faulty;

use object_store::path::Path;
use object_store::{PutPayload, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which keys' puts are garbled.
type KeyFilter = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// A kind of call to the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    /// A put of a whole object.
    Put,
    /// A multipart put (a streamed write of a large object).
    Multipart,
    /// A get of a whole object.
    Get,
    /// A get of a range of an object.
    GetRange,
    /// The size and metadata of an object.
    Head,
    List,
    Copy,
    Delete,
    /// Every kind above (for arming; [`Faults::calls`] of it is all the calls).
    Any,
}

const KINDS: [Call; 8] =
    [Call::Put, Call::Multipart, Call::Get, Call::GetRange, Call::Head, Call::List, Call::Copy, Call::Delete];

impl Call {
    /// Every kind of call, [`Call::Any`] aside.
    pub fn kinds() -> [Call; 8] {
        KINDS
    }

    fn index(self) -> Option<usize> {
        KINDS.iter().position(|&k| k == self)
    }

    fn covers(self, call: Call) -> bool {
        self == Call::Any || self == call
    }
}

/// What a struck call meets (the table of the [module](self) says what each does to each call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A transient failure: an S3 500 or 503, a connection reset.
    Error,
    /// No answer, ever: a hung connection.
    Timeout,
    /// The right answer, after this long.
    Slow(Duration),
    /// A torn write (part of the bytes under the key, then a failure), a body cut short.
    Partial,
    /// The device is full (`ENOSPC`).
    Full,
}

#[derive(Clone, Copy, Debug)]
enum Schedule {
    /// The next this many calls.
    Next(u64),
    Every,
    /// The `n`-th call, the `2n`-th, and so on.
    OneIn(u64),
}

#[derive(Debug)]
struct Rule {
    call: Call,
    fault: Fault,
    schedule: Schedule,
    /// Calls this rule has seen.
    seen: u64,
}

impl Rule {
    /// Whether this rule strikes the call it sees now.
    fn strikes(&mut self) -> bool {
        self.seen += 1;
        match &mut self.schedule {
            Schedule::Next(0) => false,
            Schedule::Next(left) => {
                *left -= 1;
                true
            }
            Schedule::Every => true,
            Schedule::OneIn(n) => self.seen.is_multiple_of(*n),
        }
    }
}

/// What a wrapped store refuses or garbles; shared between the test and the store it wraps.
pub struct Faults {
    /// Puts that still succeed; every put after them fails.
    puts_left: AtomicU64,
    /// Puts made so far.
    puts: AtomicU64,
    deletes_fail: AtomicBool,
    garbled: Mutex<Option<KeyFilter>>,
    /// Armed faults, checked in the order they were armed: the first that strikes a call wins.
    rules: Mutex<Vec<Rule>>,
    /// Calls of each kind so far (in [`KINDS`]' order), and faults that struck.
    calls: [AtomicU64; 8],
    struck: AtomicU64,
    /// The deadline the store behind these faults gives each call, if not its own.
    deadline: Option<Duration>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("puts_left", &self.puts_left)
            .field("puts", &self.puts)
            .field("deletes_fail", &self.deletes_fail)
            .field("rules", &self.rules)
            .field("struck", &self.struck)
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// Faults that refuse nothing until armed.
    pub fn new() -> Arc<Faults> {
        Self::build(None)
    }

    /// [`Faults::new`], and the store wrapped by them gives each call `deadline` instead of
    /// its own (a test that arms hangs keeps them short).
    pub fn with_deadline(deadline: Duration) -> Arc<Faults> {
        Self::build(Some(deadline))
    }

    fn build(deadline: Option<Duration>) -> Arc<Faults> {
        Arc::new(Faults {
            puts_left: AtomicU64::new(u64::MAX),
            puts: AtomicU64::new(0),
            deletes_fail: false.into(),
            garbled: Mutex::new(None),
            rules: Mutex::new(Vec::new()),
            calls: Default::default(),
            struck: AtomicU64::new(0),
            deadline,
        })
    }

    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// The next `n` puts succeed and every one after them fails, until [`Faults::heal`].
    pub fn fail_puts_after(&self, n: u64) {
        self.puts_left.store(n, Ordering::SeqCst);
    }

    /// Every delete fails while `on`.
    pub fn fail_deletes(&self, on: bool) {
        self.deletes_fail.store(on, Ordering::SeqCst);
    }

    /// From now on, every put whose key `matching` accepts stores its 8-byte words in the
    /// reverse order (the same bytes, the same size, not where they were written).
    pub fn garble_puts(&self, matching: impl Fn(&str) -> bool + Send + Sync + 'static) {
        *self.garbled.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(matching));
    }

    /// The next `times` calls of kind `call` meet `fault`.
    pub fn arm(&self, call: Call, fault: Fault, times: u64) {
        self.add(call, fault, Schedule::Next(times));
    }

    /// Every call of kind `call` meets `fault`, until [`Faults::heal`].
    pub fn arm_every(&self, call: Call, fault: Fault) {
        self.add(call, fault, Schedule::Every);
    }

    /// One call of kind `call` in `n` meets `fault` (the `n`-th, the `2n`-th, ...), until
    /// [`Faults::heal`]: a backend that fails now and then.
    pub fn arm_one_in(&self, call: Call, fault: Fault, n: u64) {
        self.add(call, fault, Schedule::OneIn(n.max(1)));
    }

    fn add(&self, call: Call, fault: Fault, schedule: Schedule) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).push(Rule { call, fault, schedule, seen: 0 });
    }

    /// Refuses, garbles and strikes nothing again.
    pub fn heal(&self) {
        self.fail_puts_after(u64::MAX);
        self.fail_deletes(false);
        *self.garbled.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Puts made through the wrapped store so far, failed ones included.
    pub fn puts(&self) -> u64 {
        self.puts.load(Ordering::SeqCst)
    }

    /// Calls of kind `call` made through the wrapped store so far, struck ones included
    /// ([`Call::Any`]: all of them).
    pub fn calls(&self, call: Call) -> u64 {
        match call.index() {
            Some(i) => self.calls[i].load(Ordering::SeqCst),
            None => self.calls.iter().map(|c| c.load(Ordering::SeqCst)).sum(),
        }
    }

    /// Faults armed with [`Faults::arm`] and its kin that struck so far.
    pub fn struck(&self) -> u64 {
        self.struck.load(Ordering::SeqCst)
    }

    /// Counts a call of kind `call`: the fault it meets, if one strikes.
    fn strike(&self, call: Call) -> Option<Fault> {
        if let Some(i) = call.index() {
            self.calls[i].fetch_add(1, Ordering::SeqCst);
        }
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let fault = rules.iter_mut().filter(|r| r.call.covers(call)).find_map(|r| r.strikes().then_some(r.fault));
        if fault.is_some() {
            self.struck.fetch_add(1, Ordering::SeqCst);
        }
        fault
    }

    fn put(&self, location: &Path) -> Result<()> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        let allowed = self.puts_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
            u64::MAX => Some(u64::MAX),
            0 => None,
            left => Some(left - 1),
        });
        allowed.map(|_| ()).map_err(|_| refused("put", location))
    }

    /// `payload` as stored under `location`: garbled when the key matches.
    fn stored(&self, location: &Path, payload: PutPayload) -> PutPayload {
        let garbled = self.garbled.lock().unwrap_or_else(|e| e.into_inner());
        match garbled.as_ref() {
            Some(matching) if matching(location.as_ref()) => {
                let bytes: Vec<u8> = payload.into_iter().flat_map(|part| part.to_vec()).collect();
                let mut words: Vec<&[u8]> = bytes.chunks(8).collect();
                words.reverse();
                PutPayload::from(words.concat())
            }
            _ => payload,
        }
    }

    fn delete(&self, location: &Path) -> Result<()> {
        match self.deletes_fail.load(Ordering::SeqCst) {
            true => Err(refused("delete", location)),
            false => Ok(()),
        }
    }
}

fn refused(what: &str, location: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: format!("{what} of {location} refused (test fault)").into(),
    }
}
