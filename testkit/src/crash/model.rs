//! What the crash loop knows was acknowledged, and what a change cut short may have left.
//!
//! A change whose command exited 0 is acknowledged: from then on every read must return it. A
//! change cut short by a kill is pending: the next read may return the state before it or the
//! state after it, and whichever it returns is from then on the acknowledged state (the
//! client settles an interrupted change on its next command, and nothing may flip it later).

use std::collections::{BTreeMap, BTreeSet};

use super::Violated;

/// What a change cut short would have made of a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    /// These bytes as the new latest version.
    Write(Vec<u8>),
    /// The name removed.
    Remove,
}

/// One name: its acknowledged versions, and a change that may or may not have happened.
#[derive(Clone, Debug, Default)]
struct Entry {
    /// Oldest first; empty while the name is absent (never written, or removed).
    versions: Vec<Vec<u8>>,
    pending: Option<Pending>,
}

/// The acknowledged state of every name a loop wrote.
#[derive(Clone, Debug, Default)]
pub struct Model {
    entries: BTreeMap<String, Entry>,
}

impl Model {
    pub fn new() -> Model {
        Model::default()
    }

    /// A write of `bytes` to `name` was acknowledged: its new latest version.
    pub fn ack_write(&mut self, name: &str, bytes: Vec<u8>) {
        let entry = self.entries.entry(name.to_string()).or_default();
        entry.pending = None;
        entry.versions.push(bytes);
    }

    /// The removal of `name` was acknowledged.
    pub fn ack_remove(&mut self, name: &str) {
        let entry = self.entries.entry(name.to_string()).or_default();
        entry.pending = None;
        entry.versions.clear();
    }

    /// A change of `name` was cut short: it may or may not have happened.
    pub fn interrupted(&mut self, name: &str, change: Pending) {
        self.entries.entry(name.to_string()).or_default().pending = Some(change);
    }

    /// The acknowledged latest bytes of `name` (None: absent).
    pub fn latest(&self, name: &str) -> Option<&[u8]> {
        self.entries.get(name).and_then(|e| e.versions.last()).map(Vec::as_slice)
    }

    /// The acknowledged versions of `name`, oldest first.
    pub fn versions(&self, name: &str) -> &[Vec<u8>] {
        self.entries.get(name).map_or(&[], |e| e.versions.as_slice())
    }

    /// Whether a change of `name` is still unsettled.
    pub fn is_pending(&self, name: &str) -> bool {
        self.entries.get(name).is_some_and(|e| e.pending.is_some())
    }

    /// Every name the loop ever wrote, present or not.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// Checks a read of `name`'s latest version (None: proven not found) and settles a pending
    /// change by it.
    pub fn observe(&mut self, name: &str, read: Option<&[u8]>) -> Result<(), Violated> {
        let entry = self.entries.entry(name.to_string()).or_default();
        let before = entry.versions.last().map(Vec::as_slice);
        if read == before {
            entry.pending = None;
            return Ok(());
        }
        match (entry.pending.take(), read) {
            (Some(Pending::Write(new)), Some(got)) if got == new.as_slice() => {
                entry.versions.push(new);
                Ok(())
            }
            (Some(Pending::Remove), None) => {
                entry.versions.clear();
                Ok(())
            }
            (Some(pending), _) => {
                let after = match &pending {
                    Pending::Write(new) => describe(Some(new)),
                    Pending::Remove => "not found".to_string(),
                };
                entry.pending = Some(pending);
                Err(Violated::HalfWritten {
                    what: format!("a change of {name}"),
                    detail: format!("read {}; before it {}, after it {after}", describe(read), describe(before)),
                })
            }
            (None, _) => Err(Violated::Lost {
                what: match before {
                    Some(_) => format!("{name} version {}", entry.versions.len()),
                    None => format!("the removal of {name}"),
                },
                detail: format!("read {}, acknowledged {}", describe(read), describe(before)),
            }),
        }
    }

    /// Checks a read of `name`'s acknowledged version `number` (from 1).
    pub fn observe_version(&self, name: &str, number: usize, read: Option<&[u8]>) -> Result<(), Violated> {
        let want = number.checked_sub(1).and_then(|i| self.versions(name).get(i)).map(Vec::as_slice);
        if read == want {
            Ok(())
        } else {
            Err(Violated::Lost {
                what: format!("{name} version {number}"),
                detail: format!("read {}, acknowledged {}", describe(read), describe(want)),
            })
        }
    }

    /// Checks a listing of the present names: every name the model knows present is listed,
    /// every one it knows absent is not, and nothing else is (a pending change may go either way).
    pub fn observe_listing(&self, listed: &BTreeSet<String>) -> Result<(), Violated> {
        for (name, entry) in &self.entries {
            let present = !entry.versions.is_empty();
            let may_flip = entry.pending.as_ref().is_some_and(|p| match p {
                Pending::Write(_) => !present,
                Pending::Remove => present,
            });
            if listed.contains(name) != present && !may_flip {
                return Err(Violated::Lost {
                    what: format!("{} of {name}", if present { "the write" } else { "the removal" }),
                    detail: format!("the listing {} it", if present { "leaves out" } else { "holds" }),
                });
            }
        }
        match listed.iter().find(|name| !self.entries.contains_key(*name)) {
            Some(stray) => Err(Violated::HalfWritten {
                what: "the listing".into(),
                detail: format!("it holds {stray}, which nothing wrote"),
            }),
            None => Ok(()),
        }
    }
}

/// A short description of what was read: its length and first bytes.
fn describe(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "not found".to_string(),
        Some(b) => format!("{} bytes starting {:02x?}", b.len(), &b[..b.len().min(8)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acknowledged_write_must_read_back() {
        let mut m = Model::new();
        m.ack_write("a", b"one".to_vec());
        m.ack_write("a", b"two".to_vec());
        assert!(m.observe("a", Some(b"two")).is_ok());
        assert!(matches!(m.observe("a", Some(b"one")), Err(Violated::Lost { .. })), "an old version is a loss");
        assert!(matches!(m.observe("a", None), Err(Violated::Lost { .. })));
        assert!(m.observe_version("a", 1, Some(b"one")).is_ok());
        assert!(m.observe_version("a", 2, Some(b"one")).is_err());
        m.ack_remove("a");
        assert!(m.observe("a", None).is_ok());
        assert!(matches!(m.observe("a", Some(b"two")), Err(Violated::Lost { .. })), "a removal must hold");
    }

    #[test]
    fn a_change_cut_short_reads_as_before_or_after_and_then_stays() {
        let mut m = Model::new();
        m.ack_write("a", b"old".to_vec());
        m.interrupted("a", Pending::Write(b"new".to_vec()));
        assert!(matches!(m.observe("a", Some(b"half")), Err(Violated::HalfWritten { .. })));
        assert!(m.observe("a", Some(b"new")).is_ok());
        assert_eq!(m.versions("a"), [b"old".to_vec(), b"new".to_vec()]);
        assert!(m.observe("a", Some(b"old")).is_err(), "once settled, it does not flip back");

        m.interrupted("a", Pending::Remove);
        assert!(m.observe("a", Some(b"new")).is_ok());
        assert!(!m.is_pending("a"));
        assert!(m.observe("a", None).is_err());

        m.interrupted("b", Pending::Write(b"first".to_vec()));
        assert!(m.observe("b", None).is_ok(), "a first write cut short may be absent");
        assert_eq!(m.latest("b"), None);
    }

    #[test]
    fn a_listing_holds_exactly_the_present_names() {
        let mut m = Model::new();
        m.ack_write("a", b"x".to_vec());
        m.ack_write("b", b"y".to_vec());
        m.ack_remove("b");
        m.interrupted("c", Pending::Write(b"z".to_vec()));
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
        assert!(m.observe_listing(&set(&["a"])).is_ok());
        assert!(m.observe_listing(&set(&["a", "c"])).is_ok());
        assert!(m.observe_listing(&set(&[])).is_err());
        assert!(m.observe_listing(&set(&["a", "b"])).is_err());
        assert!(m.observe_listing(&set(&["a", "d"])).is_err());
    }
}
