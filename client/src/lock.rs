//! A client's locks: one process at a time per client state directory ([`StateLock`]), and one
//! put at a time per name within a client ([`NameLocks`], see `crate::staged`).
//!
//! Two processes working on one state would race: each commits against the root it read, and
//! the second one's answers then fail verification (an honest provider reported as lying), or
//! one settles the other's commit intent while that commit is still in flight. So a client
//! holds an exclusive lock on `<dir>/lock` for its whole life (the kernel drops it when the
//! process dies, even by SIGKILL). A second process waits briefly, then gets
//! [`ClientError::Busy`]. Clients opened on the same directory within one process share the
//! one lock: a process is one user of its state (and should hold one `Client` for it, shared
//! by its tasks: see the crate documentation).

use crate::error::ClientError;
use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long a second process waits for the lock before giving up.
const WAIT: Duration = Duration::from_secs(3);
const POLL: Duration = Duration::from_millis(25);

/// The held lock; released when the last client of this process that uses it is dropped.
#[derive(Debug)]
pub(crate) struct StateLock {
    _file: File,
}

/// Locks this process holds, by canonical directory.
static HELD: Mutex<Vec<(PathBuf, Weak<StateLock>)>> = Mutex::new(Vec::new());

impl StateLock {
    /// Locks `dir` (an existing directory) for this process.
    pub(crate) fn acquire(dir: &Path) -> Result<Arc<StateLock>, ClientError> {
        let canonical = dir.canonicalize().map_err(ClientError::io(format!("opening {}", dir.display())))?;
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(lock) = Self::try_acquire(&canonical)? {
                return Ok(lock);
            }
            if Instant::now() >= deadline {
                return Err(ClientError::Busy { dir: dir.display().to_string(), holder: holder(&canonical) });
            }
            std::thread::sleep(POLL);
        }
    }

    fn try_acquire(dir: &Path) -> Result<Option<Arc<StateLock>>, ClientError> {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(_, lock)| lock.strong_count() > 0);
        if let Some(lock) = held.iter().find(|(d, _)| d == dir).and_then(|(_, l)| l.upgrade()) {
            return Ok(Some(lock));
        }
        let path = dir.join("lock");
        let what = format!("locking {}", path.display());
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(ClientError::io(what.clone()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(ClientError::io(what)(e)),
        }
        // Who holds it, for the message another process shows (not needed for correctness).
        let _ = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| write!(file, "{}", std::process::id()));
        let lock = Arc::new(StateLock { _file: file });
        held.push((dir.to_path_buf(), Arc::downgrade(&lock)));
        Ok(Some(lock))
    }
}

/// One async lock per name that has a put in progress.
#[derive(Debug, Default)]
pub(crate) struct NameLocks {
    held: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A name's lock, held; the name's entry goes when its last holder or waiter is done.
pub(crate) struct NameGuard<'a> {
    locks: &'a NameLocks,
    name: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl NameLocks {
    pub(crate) async fn lock(&self, name: &str) -> NameGuard<'_> {
        let lock = self.held.lock().expect("name locks").entry(name.to_string()).or_default().clone();
        let guard = Some(lock.clone().lock_owned().await);
        NameGuard { locks: self, name: name.to_string(), lock, guard }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().expect("name locks").len()
    }
}

impl Drop for NameGuard<'_> {
    fn drop(&mut self) {
        self.guard.take();
        let mut held = self.locks.held.lock().expect("name locks");
        // Clones are made under this map's lock: two strong counts are the map's and ours.
        if Arc::strong_count(&self.lock) == 2 {
            held.remove(&self.name);
        }
    }
}

/// " (pid N)" when the lock file names its holder.
fn holder(dir: &Path) -> String {
    let mut text = String::new();
    let read = File::open(dir.join("lock")).and_then(|mut f| f.read_to_string(&mut text));
    match (read, text.trim().parse::<u32>()) {
        (Ok(_), Ok(pid)) => format!(" (pid {pid})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_of_one_process_share_the_lock_and_it_is_released_with_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let a = StateLock::acquire(dir.path()).unwrap();
        let b = StateLock::acquire(dir.path()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // Another open file description (as another process would have) cannot take it.
        let other = File::open(dir.path().join("lock")).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        assert_eq!(holder(&dir.path().canonicalize().unwrap()), format!(" (pid {})", std::process::id()));
        drop((a, b));
        other.try_lock().unwrap();
    }

    #[tokio::test]
    async fn a_name_lock_excludes_its_name_only_and_goes_when_released() {
        let locks = NameLocks::default();
        let a = locks.lock("a").await;
        let _b = locks.lock("b").await;
        assert_eq!(locks.len(), 2);
        let waiter = tokio::time::timeout(std::time::Duration::from_millis(50), locks.lock("a")).await;
        assert!(waiter.is_err(), "a second holder of one name must wait");
        assert_eq!(locks.len(), 2, "a waiter that gave up leaves the entry to its holder");
        drop(a);
        assert_eq!(locks.len(), 1);
        let again = locks.lock("a").await;
        drop(again);
        assert_eq!(locks.len(), 1);
    }
}
