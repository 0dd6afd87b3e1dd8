//! Files written whole or not at all: a flushed temporary file renamed into place, the
//! directory synced after it.

use crate::error::ClientError;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Removes the temporary files of writers that died before renaming them (none is writing now:
/// the caller holds the lock). Best effort: a leftover is only wasted space.
pub(crate) fn remove_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(|n| n.ends_with(".tmp")) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Temporary files written so far by this process (for unique names).
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// The number the next temporary file of this process takes (for tests that make it fail).
#[cfg(test)]
pub(crate) fn next_temporary() -> u64 {
    TEMPORARIES.load(Ordering::Relaxed)
}

/// Writes `path` whole or not at all: a flushed temporary file renamed into place.
pub fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<(), ClientError> {
    let n = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("{}.{n}.tmp", std::process::id()));
    let what = format!("writing {}", path.display());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    let mut file = options.open(&tmp).map_err(ClientError::io(what.clone()))?;
    file.write_all(bytes).map_err(ClientError::io(what.clone()))?;
    file.sync_all().map_err(ClientError::io(what.clone()))?;
    std::fs::rename(&tmp, path).map_err(ClientError::io(what.clone()))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(ClientError::io(what))?;
    }
    Ok(())
}
