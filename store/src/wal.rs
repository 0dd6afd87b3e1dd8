//! The metadata store's write-ahead log: one flush per commit.
//!
//! A durable redb commit flushes every B-tree page the batch touched (for a 20 KB edit of a
//! large file, a few hundred KB scattered over the file). Instead each batch is written to
//! this log and flushed (`fdatasync` of one sequential write), then applied to redb without a
//! flush; every [`CHECKPOINT_COMMITS`] commits or [`CHECKPOINT_BYTES`] of log, one durable
//! redb commit persists them all and the log starts over. After a crash, opening the store
//! applies the log again: a batch is absolute puts and deletes, so applying a prefix twice
//! changes nothing.
//!
//! The log file is reused, not truncated: starting over writes a new epoch into its header
//! and overwrites the old records in place (overwriting allocated blocks needs no file-size
//! update in the flush, which makes it about twice as fast as appending on ext4). Each record
//! carries its length, the epoch and an XXH3 checksum; the replay stops at the first record
//! of another epoch, torn, or damaged (a commit that was never acknowledged).
//!
//! A batch whose write or flush fails is reported failed and must not come back at the next
//! open: its record is overwritten, and if even that fails the log refuses further commits.
//!
//! The same framing carries the repository's copies of the log in the blob store (an epoch's
//! records, shipped before the log starts over) and its snapshots ([`log_header`], [`log_record`],
//! [`parse_log`]): see `crate::repository::log`.

use crate::error::{chain, from_io};
use crate::{MetaBatch, StoreError};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Commits between durable redb commits.
pub const CHECKPOINT_COMMITS: u32 = 64;
/// Bytes of log between durable redb commits, and the log file's size (written once).
pub const CHECKPOINT_BYTES: u64 = 16 << 20;
const MAGIC: &[u8; 8] = b"vouchWL\x01";
/// `magic || epoch:u64le`.
const FILE_HEADER: u64 = 16;
/// `len:u32le || epoch:u64le || xxh3(epoch || record):u64le` before each record.
const HEADER: usize = 20;

pub(crate) struct Wal {
    file: File,
    path: PathBuf,
    epoch: u64,
    /// Where the next record goes.
    end: u64,
    /// Where the last record written starts.
    last: u64,
    commits: u32,
    /// Set when a failed write could not be undone: the log's end is unknown.
    broken: bool,
}

impl Wal {
    /// Opens (or creates) the log, returning it and the batches to replay; call
    /// [`Wal::clear`] once they are durable in the store, before the first append.
    pub fn open(path: &Path) -> Result<(Wal, Vec<MetaBatch>), StoreError> {
        let place = path.display().to_string();
        let io = |e: std::io::Error| from_io(&place, &e, chain(&e));
        let existed = path.exists();
        let mut file = File::options().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        if !existed {
            // The log's directory entry must survive a crash before any commit relies on it.
            if let Some(dir) = path.parent() {
                File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
            }
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let (epoch, batches, _) = parse(&bytes);
        if (bytes.len() as u64) < CHECKPOINT_BYTES
            && !in_memory(&file)
            && preallocate(&file, bytes.len() as u64).is_err()
        {
            // Only slower without it (records then extend the file): a disk too full for it
            // still takes commits while it can.
            file.set_len(bytes.len() as u64).and_then(|()| file.sync_all()).map_err(io)?;
        }
        let wal = Wal {
            file,
            path: path.to_path_buf(),
            epoch,
            end: FILE_HEADER,
            last: FILE_HEADER,
            commits: 0,
            broken: false,
        };
        Ok((wal, batches))
    }

    fn err(&self, e: std::io::Error) -> StoreError {
        from_io(&self.path.display().to_string(), &e, chain(&e))
    }

    /// Writes `batch` and flushes it: once this returns, the batch survives a crash.
    pub fn append(&mut self, batch: &MetaBatch) -> Result<(), StoreError> {
        if self.broken {
            return Err(StoreError::Backend {
                at: self.path.display().to_string(),
                detail: "an earlier write to the metadata log failed; reopen the store".into(),
            });
        }
        let frame = frame(self.epoch, &encode(batch));
        if let Err(e) = self.file.write_all_at(&frame, self.end) {
            // Not flushed, so never acknowledged; the next record overwrites it.
            return Err(self.err(e));
        }
        let start = self.end;
        self.end += frame.len() as u64;
        if let Err(e) = self.file.sync_data() {
            let err = self.err(e);
            self.cut_from(start)?;
            return Err(err);
        }
        self.last = start;
        self.commits += 1;
        Ok(())
    }

    /// Takes back the last record written (its batch could not be applied): it must not be
    /// replayed.
    pub fn cut_last(&mut self) -> Result<(), StoreError> {
        self.commits = self.commits.saturating_sub(1);
        self.cut_from(self.last)
    }

    fn cut_from(&mut self, start: u64) -> Result<(), StoreError> {
        let zeros = [0u8; HEADER];
        let cut = self.file.write_all_at(&zeros, start).and_then(|()| self.file.sync_data());
        cut.map_err(|e| {
            self.broken = true;
            self.err(e)
        })?;
        self.end = start;
        Ok(())
    }

    /// Whether enough has been logged that the store should be made durable and the log emptied.
    pub fn wants_checkpoint(&self) -> bool {
        self.commits >= CHECKPOINT_COMMITS || self.end >= CHECKPOINT_BYTES
    }

    /// Whether the log holds no record.
    pub fn is_empty(&self) -> bool {
        self.end == FILE_HEADER
    }

    /// The log as it is now, header and records: what [`parse_log`] reads back.
    pub fn contents(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = vec![0u8; self.end as usize];
        self.file.read_exact_at(&mut out, 0).map_err(|e| self.err(e))?;
        Ok(out)
    }

    /// Starts the log over (a new epoch), once everything in it is durable in the store.
    pub fn clear(&mut self) -> Result<(), StoreError> {
        let epoch = self.epoch + 1;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&epoch.to_le_bytes());
        self.file.write_all_at(&header, 0).and_then(|()| self.file.sync_data()).map_err(|e| {
            self.broken = true;
            self.err(e)
        })?;
        (self.epoch, self.end, self.last, self.commits) = (epoch, FILE_HEADER, FILE_HEADER, 0);
        Ok(())
    }
}

/// Whether `file` is on a memory file system (tmpfs), where writing blocks ahead saves no
/// work later and costs memory now (a provider per simulated run would write 16 MiB each).
#[cfg(target_os = "linux")]
fn in_memory(file: &File) -> bool {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    rustix::fs::fstatfs(file).is_ok_and(|fs| fs.f_type as u64 == TMPFS_MAGIC)
}

#[cfg(not(target_os = "linux"))]
fn in_memory(_: &File) -> bool {
    false
}

/// Writes zeros from `from` to [`CHECKPOINT_BYTES`]: written blocks, not a sparse or
/// preallocated range, so that records overwrite allocated blocks from the first commit on.
fn preallocate(file: &File, from: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    for at in (from..CHECKPOINT_BYTES).step_by(zeros.len()) {
        let n = (CHECKPOINT_BYTES - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
    }
    file.sync_all()
}

fn frame(epoch: u64, record: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + record.len());
    out.extend_from_slice(&(record.len() as u32).to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&checksum(epoch, record).to_le_bytes());
    out.extend_from_slice(record);
    out
}

fn checksum(epoch: u64, record: &[u8]) -> u64 {
    xxh3::hash64_with_seed(record, epoch)
}

/// `count:u32le`, then per operation `1 || klen:u32le || key || vlen:u32le || value` (put) or
/// `0 || klen:u32le || key` (delete).
fn encode(batch: &MetaBatch) -> Vec<u8> {
    let ops = batch.ops();
    let size: usize = ops.iter().map(|(k, v)| 9 + k.len() + v.as_ref().map_or(0, Vec::len)).sum();
    let mut out = Vec::with_capacity(4 + size);
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for (key, value) in ops {
        out.push(u8::from(value.is_some()));
        out.extend_from_slice(&(key.len() as u32).to_le_bytes());
        out.extend_from_slice(key);
        if let Some(v) = value {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
    }
    out
}

/// `batches` framed as a log of `epoch`, header included: [`log_header`], then a
/// [`log_record`] per batch (how a snapshot is written).
#[cfg(test)]
pub(crate) fn encode_log(epoch: u64, batches: impl IntoIterator<Item = MetaBatch>) -> Vec<u8> {
    let mut out = log_header(epoch);
    for batch in batches {
        out.extend_from_slice(&log_record(epoch, &batch));
    }
    out
}

/// The first bytes of a log of `epoch` in the blob store (a snapshot): its header.
pub(crate) fn log_header(epoch: u64) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&epoch.to_le_bytes());
    out
}

/// `batch` framed as a record of a log of `epoch` (the header, then these, is the log: a
/// snapshot is written so, a record at a time).
pub(crate) fn log_record(epoch: u64, batch: &MetaBatch) -> Vec<u8> {
    frame(epoch, &encode(batch))
}

/// The batches of a log written by [`log_header`] and [`log_record`] or [`Wal::contents`], and whether they are
/// all of it (`false`: a header or record is damaged, and the batches are those before it).
pub(crate) fn parse_log(bytes: &[u8]) -> (Vec<MetaBatch>, bool) {
    let (_, batches, end) = parse(bytes);
    (batches, end == bytes.len() && end >= FILE_HEADER as usize)
}

/// The batches a log file holds, read without opening it for writing (a damaged store's log,
/// to rebuild from); none if there is no file.
pub(crate) fn read_file(path: &Path) -> Result<Vec<MetaBatch>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(parse(&bytes).1),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(from_io(&path.display().to_string(), &e, chain(&e))),
    }
}

/// The log's epoch, its whole records of that epoch up to the first torn, damaged or stale
/// one, and where they end. A log without a valid header (never started over) holds nothing.
fn parse(bytes: &[u8]) -> (u64, Vec<MetaBatch>, usize) {
    let epoch = match bytes.get(..FILE_HEADER as usize) {
        Some(h) if &h[..8] == MAGIC => u64::from_le_bytes(h[8..].try_into().expect("8 bytes")),
        _ => return (0, Vec::new(), 0),
    };
    let mut out = Vec::new();
    let mut rest = &bytes[FILE_HEADER as usize..];
    while rest.len() >= HEADER {
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let of = u64::from_le_bytes(rest[4..12].try_into().expect("8 bytes"));
        let check = u64::from_le_bytes(rest[12..HEADER].try_into().expect("8 bytes"));
        let Some(record) = rest.get(HEADER..HEADER + len) else { break };
        if of != epoch || checksum(epoch, record) != check {
            break;
        }
        match decode(record) {
            Some(batch) => out.push(batch),
            None => break,
        }
        rest = &rest[HEADER + len..];
    }
    (epoch, out, bytes.len() - rest.len())
}

fn decode(mut r: &[u8]) -> Option<MetaBatch> {
    fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (r.get(..n)?, r.get(n..)?);
        *r = rest;
        Some(head)
    }
    fn len(r: &mut &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(take(r, 4)?.try_into().ok()?) as usize)
    }
    let count = len(&mut r)?;
    let mut batch = MetaBatch::default();
    for _ in 0..count {
        let put = take(&mut r, 1)?[0] == 1;
        let n = len(&mut r)?;
        let key = take(&mut r, n)?.to_vec();
        if put {
            let n = len(&mut r)?;
            batch.put(key, take(&mut r, n)?.to_vec());
        } else {
            batch.delete(key);
        }
    }
    r.is_empty().then_some(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MetaBatch {
        let mut b = MetaBatch::default();
        b.put(&b"a"[..], vec![1u8; 300]).delete(&b"b"[..]).put(&b""[..], Vec::new());
        b
    }

    #[test]
    fn records_round_trip_and_a_torn_damaged_or_stale_tail_ends_the_replay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut wal, none) = Wal::open(&path).unwrap();
        assert!(none.is_empty());
        wal.clear().unwrap();
        wal.append(&sample()).unwrap();
        wal.append(&MetaBatch::default()).unwrap();
        wal.append(&sample()).unwrap();
        let file = std::fs::read(&path).unwrap();
        assert_eq!(file.len() as u64, CHECKPOINT_BYTES, "written once, in full");
        assert_eq!(parse(&file).1, vec![sample(), MetaBatch::default(), sample()]);
        assert_eq!(parse_log(&wal.contents().unwrap()), (vec![sample(), MetaBatch::default(), sample()], true));
        let bytes = &file[..wal.end as usize];
        // Torn anywhere in the last record: the first two stay.
        let third = bytes.len() - (HEADER + encode(&sample()).len());
        for cut in [third + 1, third + HEADER, bytes.len() - 1] {
            assert_eq!(parse(&bytes[..cut]).1.len(), 2, "cut at {cut}");
        }
        // A flipped byte in the second record ends the replay there.
        let mut damaged = bytes.to_vec();
        damaged[FILE_HEADER as usize + HEADER + encode(&sample()).len() + 2] ^= 1;
        assert_eq!(parse(&damaged).1, vec![sample()]);
        drop(wal);
        let (mut wal, again) = Wal::open(&path).unwrap();
        assert_eq!(again.len(), 3);
        // Started over: one new record; the old ones after it are of another epoch.
        wal.clear().unwrap();
        wal.append(&MetaBatch::default()).unwrap();
        drop(wal);
        let (_, after) = Wal::open(&path).unwrap();
        assert_eq!(after, vec![MetaBatch::default()]);
    }

    #[test]
    fn a_shipped_log_or_snapshot_reads_back_and_says_when_it_is_damaged() {
        let log = encode_log(9, [sample(), MetaBatch::default()]);
        assert_eq!(parse_log(&log), (vec![sample(), MetaBatch::default()], true));
        let mut damaged = log.clone();
        damaged[FILE_HEADER as usize + HEADER + 3] ^= 1;
        assert_eq!(parse_log(&damaged), (Vec::new(), false));
        assert!(!parse_log(&log[..log.len() - 1]).1);
        assert_eq!(parse_log(b"nothing"), (Vec::new(), false));
        assert_eq!(parse_log(&encode_log(1, [])), (Vec::new(), true));
    }

    #[test]
    fn a_record_taken_back_is_not_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut wal, _) = Wal::open(&path).unwrap();
        wal.clear().unwrap();
        wal.append(&sample()).unwrap();
        wal.append(&MetaBatch::default()).unwrap();
        wal.cut_last().unwrap();
        drop(wal);
        assert_eq!(Wal::open(&path).unwrap().1, vec![sample()]);
    }
}
