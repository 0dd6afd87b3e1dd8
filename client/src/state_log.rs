//! The `state` file of a state directory: the client's root and its unsettled change, as a
//! log of records, each appended and synced before the call that wrote it returns (the order
//! the client writes them in is [`crate::persist`]'s). An append costs one data sync, where
//! replacing a file costs a sync, a rename and a directory sync: on the disk measured, 0.23
//! against 0.88 ms, twice per commit.
//!
//! A record is its length (u32, little-endian), then an envelope (magic, body, SHA-256)
//! whose body is a kind byte and its fields:
//! - root: the digest (32 bytes), the name count (8) and the key's fingerprint (32);
//! - intent: the intent's own bytes ([`crate::Intent::to_bytes`]);
//! - settled: nothing (no change is unsettled);
//! - adopted: a root, as above, whose change is settled (the two at once).
//!
//! Reading folds them in order. Every append is synced before the next one starts, so a
//! crash can leave only the last record cut short, and that record's write never returned:
//! it is dropped, and the file cut back to before it. A damaged record with a whole record
//! after it is damage, and reported. Damage to the last record reads as a cut: the state
//! before it, which the next command settles like a crash's, except for an intent lost after
//! its request left (the provider's next answer then looks like a lie). Past [`COMPACT_AT`] bytes the file is replaced (a
//! temporary file, a rename, a directory sync) by the root and the intent alone.
//!
//! The layout before it (the root alone in one envelope, the intent in a file of its own)
//! is read and rewritten as a log by [`crate::state::StateDir::open`].

use crate::error::ClientError;
use crate::root::Root;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use vouch_core::envelope;
use vouch_core::Digest;

const MAGIC: &[u8; 8] = b"vouchSL\x01";
/// The log's size past which it is rewritten whole.
pub(crate) const COMPACT_AT: u64 = 64 << 10;

const ROOT: u8 = 1;
const INTENT: u8 = 2;
const SETTLED: u8 = 3;
const ADOPTED: u8 = 4;

/// What a log holds, folded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Folded {
    pub root: Root,
    /// The unsettled change's intent, as [`crate::Intent::to_bytes`] wrote it.
    pub intent: Option<Vec<u8>>,
    /// Bytes of whole records: what follows is a record cut short by a crash.
    pub whole: u64,
}

/// Why a log cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// A damaged record before a whole one, or no root at all.
    Damaged,
    /// A root of another key.
    OtherKey,
}

/// One record of `kind` with `fields`, framed.
fn record(kind: u8, fields: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = std::iter::once(&[kind][..]).chain(fields.iter().copied()).flatten().copied().collect();
    let sealed = envelope::seal(MAGIC, &body);
    [&(sealed.len() as u32).to_le_bytes()[..], &sealed].concat()
}

fn root_fields(root: Root) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..32].copy_from_slice(&root.digest.0);
    out[32..].copy_from_slice(&root.len.to_le_bytes());
    out
}

/// A whole log holding `root` and `intent`, to write as a new file.
pub(crate) fn fresh(root: Root, intent: Option<&[u8]>, fingerprint: &[u8; 32]) -> Vec<u8> {
    let mut out = record(ROOT, &[&root_fields(root), fingerprint]);
    if let Some(intent) = intent {
        out.extend(record(INTENT, &[intent]));
    }
    out
}

/// The record at the start of `bytes`: its kind and fields, and its framed length; `None`
/// when it is cut short or damaged.
fn next_record(bytes: &[u8]) -> Option<(u8, &[u8], usize)> {
    let (len, rest) = bytes.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let sealed = rest.get(..len)?;
    let (_, body) = envelope::open(sealed, &[MAGIC]).ok()?;
    let (&kind, fields) = body.split_first()?;
    Some((kind, fields, 4 + len))
}

/// Folds the log `bytes` of the key with `fingerprint`.
pub(crate) fn fold(bytes: &[u8], fingerprint: &[u8; 32]) -> Result<Folded, Unreadable> {
    let (mut root, mut intent, mut at) = (None, None, 0usize);
    while at < bytes.len() {
        let Some((kind, fields, len)) = next_record(&bytes[at..]) else {
            // Cut short by a crash, unless a whole record follows the damage.
            if whole_record_after(&bytes[at..]) {
                return Err(Unreadable::Damaged);
            }
            break;
        };
        match (kind, fields.len()) {
            (ROOT | ADOPTED, 72) => {
                if fields[40..] != fingerprint[..] {
                    return Err(Unreadable::OtherKey);
                }
                root = Some(Root {
                    digest: Digest(fields[..32].try_into().expect("32 bytes")),
                    len: u64::from_le_bytes(fields[32..40].try_into().expect("8 bytes")),
                });
                if kind == ADOPTED {
                    intent = None;
                }
            }
            (INTENT, _) => intent = Some(fields.to_vec()),
            (SETTLED, 0) => intent = None,
            _ => return Err(Unreadable::Damaged),
        }
        at += len;
    }
    let root = root.ok_or(Unreadable::Damaged)?;
    Ok(Folded { root, intent, whole: at as u64 })
}

/// Whether a whole record follows the damaged one at the start of `bytes`, as its length
/// says (a record cut short by a crash is the last thing in the file).
fn whole_record_after(bytes: &[u8]) -> bool {
    let Some(len) = bytes.first_chunk::<4>().map(|l| u32::from_le_bytes(*l) as usize) else { return false };
    bytes.get(4 + len..).is_some_and(|after| next_record(after).is_some())
}

/// The log of an opened state directory, appended to.
#[derive(Debug)]
pub(crate) struct StateLog {
    path: PathBuf,
    /// The file at `path`, opened for appends; `None` after a compaction until the next
    /// append opens whichever file the path then names.
    file: Option<File>,
    fingerprint: [u8; 32],
    held: Folded,
}

impl StateLog {
    /// The log at `path`, folded as `held` (its bytes past `held.whole` are cut off first).
    pub(crate) fn open(path: &Path, fingerprint: [u8; 32], held: Folded) -> Result<StateLog, ClientError> {
        let what = format!("opening {}", path.display());
        let file = std::fs::OpenOptions::new().write(true).open(path).map_err(ClientError::io(what.clone()))?;
        if file.metadata().map_err(ClientError::io(what.clone()))?.len() > held.whole {
            file.set_len(held.whole).and_then(|()| file.sync_data()).map_err(ClientError::io(what))?;
        }
        Ok(StateLog { path: path.to_path_buf(), file: Some(file), fingerprint, held })
    }

    pub(crate) fn root(&self) -> Root {
        self.held.root
    }

    pub(crate) fn intent(&self) -> Option<&[u8]> {
        self.held.intent.as_deref()
    }

    pub(crate) fn save_root(&mut self, root: Root) -> Result<(), ClientError> {
        self.append(record(ROOT, &[&root_fields(root), &self.fingerprint]))?;
        self.held.root = root;
        self.compact_if_due()
    }

    /// `root`, and the intent of the change it settles forgotten, in one record.
    pub(crate) fn adopt(&mut self, root: Root) -> Result<(), ClientError> {
        self.append(record(ADOPTED, &[&root_fields(root), &self.fingerprint]))?;
        (self.held.root, self.held.intent) = (root, None);
        self.compact_if_due()
    }

    pub(crate) fn save_intent(&mut self, intent: &[u8]) -> Result<(), ClientError> {
        self.append(record(INTENT, &[intent]))?;
        self.held.intent = Some(intent.to_vec());
        self.compact_if_due()
    }

    pub(crate) fn settle(&mut self) -> Result<(), ClientError> {
        if self.held.intent.is_none() {
            return Ok(());
        }
        self.append(record(SETTLED, &[]))?;
        self.held.intent = None;
        self.compact_if_due()
    }

    /// Appends `bytes`, synced before it returns. What a failed append wrote is cut off (or,
    /// if that fails too, written over by the next append and cut off at the next open).
    fn append(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        use std::io::{Seek, SeekFrom};
        let what = || format!("writing {}", self.path.display());
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let opened = std::fs::OpenOptions::new().write(true).open(&self.path);
                self.file.insert(opened.map_err(ClientError::io(what()))?)
            }
        };
        let whole = self.held.whole;
        let written =
            file.seek(SeekFrom::Start(whole)).and_then(|_| file.write_all(&bytes)).and_then(|()| file.sync_data());
        if let Err(e) = written {
            let _ = file.set_len(whole);
            return Err(ClientError::io(what())(e));
        }
        self.held.whole += bytes.len() as u64;
        Ok(())
    }

    /// Past [`COMPACT_AT`], the log is replaced by the root and the intent alone. The write
    /// that led here is durable already: a compaction that fails is only tried again at the
    /// next one. Either way the path may name a new file now (a replacement whose directory
    /// sync failed was renamed all the same): the next append opens it, at the end of the
    /// whole records it holds.
    fn compact_if_due(&mut self) -> Result<(), ClientError> {
        if self.held.whole <= COMPACT_AT {
            return Ok(());
        }
        let bytes = fresh(self.held.root, self.held.intent.as_deref(), &self.fingerprint);
        if let Err(e) = crate::atomic::write_atomic(&self.path, &bytes, false) {
            tracing::warn!("the client's state log was not compacted (tried again at its next write): {e}");
        }
        self.file = None;
        let what = format!("reading {}", self.path.display());
        let now = std::fs::read(&self.path).map_err(ClientError::io(what))?;
        let held = fold(&now, &self.fingerprint)
            .map_err(|_| ClientError::State(format!("{} is damaged after its compaction", self.path.display())))?;
        debug_assert_eq!((held.root, &held.intent), (self.held.root, &self.held.intent));
        self.held.whole = held.whole;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [9; 32];

    fn root(n: u8) -> Root {
        Root { digest: Digest([n; 32]), len: u64::from(n) }
    }

    fn folded(root: Root, intent: Option<&[u8]>, whole: usize) -> Folded {
        Folded { root, intent: intent.map(<[u8]>::to_vec), whole: whole as u64 }
    }

    #[test]
    fn records_fold_in_order() {
        let mut log = fresh(root(1), None, &KEY);
        assert_eq!(fold(&log, &KEY), Ok(folded(root(1), None, log.len())));
        log.extend(record(INTENT, &[b"change"]));
        log.extend(record(ROOT, &[&root_fields(root(2)), &KEY]));
        assert_eq!(fold(&log, &KEY), Ok(folded(root(2), Some(b"change"), log.len())), "a root leaves the intent");
        log.extend(record(SETTLED, &[]));
        assert_eq!(fold(&log, &KEY), Ok(folded(root(2), None, log.len())));
        log.extend(record(INTENT, &[b"next"]));
        log.extend(record(ADOPTED, &[&root_fields(root(3)), &KEY]));
        assert_eq!(fold(&log, &KEY), Ok(folded(root(3), None, log.len())), "adopted: the root and the intent's end");
        assert_eq!(fold(&log, &[8; 32]), Err(Unreadable::OtherKey));
        assert_eq!(fold(&[], &KEY), Err(Unreadable::Damaged), "no root");
    }

    /// A crash mid-append leaves any prefix of the last record, its length's bytes written or
    /// not (zeros): the state before it, never damage.
    #[test]
    fn a_last_record_cut_short_anywhere_is_dropped() {
        let before = [fresh(root(1), Some(b"intent"), &KEY), record(ROOT, &[&root_fields(root(2)), &KEY])].concat();
        let last = record(ADOPTED, &[&root_fields(root(3)), &KEY]);
        for cut in 0..last.len() {
            for zeroed in [false, true] {
                let mut log = [&before[..], &last[..cut]].concat();
                if zeroed {
                    // The file's length grew, its data did not reach the disk.
                    log.resize(before.len() + last.len(), 0);
                }
                let want = folded(root(2), Some(b"intent"), before.len());
                assert_eq!(fold(&log, &KEY), Ok(want), "cut at {cut}, zeroed {zeroed}");
            }
        }
    }

    #[test]
    fn a_damaged_record_before_a_whole_one_is_damage() {
        let first = fresh(root(1), None, &KEY);
        let log = [&first[..], &record(INTENT, &[b"x"]), &record(SETTLED, &[])].concat();
        for at in first.len()..log.len() - record(SETTLED, &[]).len() {
            let mut bad = log.clone();
            bad[at] ^= 0x40;
            let got = fold(&bad, &KEY);
            // A length made longer swallows the whole record after it: the tail then reads
            // as cut short.
            let swallowed = at < first.len() + 4;
            assert!(got == Err(Unreadable::Damaged) || swallowed, "byte {at}: {got:?}");
        }
        let mut bad = log.clone();
        bad[first.len() + 10] ^= 1;
        assert_eq!(fold(&bad, &KEY), Err(Unreadable::Damaged));
    }

    #[test]
    fn the_log_is_appended_cut_back_after_a_crash_and_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state");
        let first = fresh(root(1), None, &KEY);
        std::fs::write(&path, [&first[..], &record(INTENT, &[b"cut"])[..7]].concat()).unwrap();
        let held = fold(&std::fs::read(&path).unwrap(), &KEY).unwrap();
        let mut log = StateLog::open(&path, KEY, held).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first, "the cut record is gone from the file");
        log.save_intent(b"kept").unwrap();
        assert_eq!(fold(&std::fs::read(&path).unwrap(), &KEY).unwrap().intent.as_deref(), Some(&b"kept"[..]));
        // Roots until the log passes its bound and is rewritten as the root and the intent.
        let size = || std::fs::metadata(&path).unwrap().len();
        let mut grew = 0;
        for n in 0..2_000u32 {
            log.save_root(root(n as u8)).unwrap();
            if size() < grew {
                break;
            }
            grew = size();
        }
        assert!(grew > COMPACT_AT - 200 && size() < 1024, "compacted: {grew} bytes, then {}", size());
        assert_eq!(fold(&std::fs::read(&path).unwrap(), &KEY).unwrap().intent.as_deref(), Some(&b"kept"[..]));
        log.adopt(root(200)).unwrap();
        log.save_intent(b"after").unwrap();
        let held = fold(&std::fs::read(&path).unwrap(), &KEY).unwrap();
        assert_eq!((held.root, held.intent.as_deref()), (root(200), Some(&b"after"[..])));
        assert_eq!((log.root(), log.intent()), (root(200), Some(&b"after"[..])));
    }

    /// A compaction that cannot write its file leaves the log as it was, and the writes go on.
    #[test]
    fn a_compaction_that_fails_leaves_the_log_to_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state");
        std::fs::write(&path, fresh(root(1), None, &KEY)).unwrap();
        let mut log = StateLog::open(&path, KEY, fold(&std::fs::read(&path).unwrap(), &KEY).unwrap()).unwrap();
        log.save_intent(b"pending").unwrap();
        // Directories where the replacement's temporary files would go: it cannot be written.
        let next = crate::atomic::next_temporary();
        for n in next..next + 2_000 {
            std::fs::create_dir(path.with_extension(format!("{}.{n}.tmp", std::process::id()))).unwrap();
        }
        for n in 0..800u32 {
            log.save_root(root(n as u8)).unwrap();
        }
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > COMPACT_AT, "not compacted: {len} bytes");
        let held = fold(&std::fs::read(&path).unwrap(), &KEY).unwrap();
        assert_eq!((held.root, held.intent.as_deref(), held.whole), (root(31), Some(&b"pending"[..]), len));
    }
}
