//! The provider side of a run: the real [`Provider`] over a directory (on a memory file
//! system where the OS has one), reached through the adversary's link
//! ([`super::adversary::SimLink`]). Copies of the directory are the provider's earlier states
//! (for rollbacks) and the branch of a fork.

use crate::Rng;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use vouch_server::{in_process, token_hash, Blocks, InProcess, Limits, Provider};

pub(super) type Served = Arc<InProcess<Provider>>;

/// Where a run's directories go: memory when the OS offers it (fsyncs there cost nothing, and
/// a run's state is small), else the temporary directory.
fn scratch() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::Builder::new().prefix("vouch-sim-").tempdir_in(shm),
        false => tempfile::Builder::new().prefix("vouch-sim-").tempdir(),
    }
}

/// The provider's states: the live one, its copies, and a fork's branch.
pub(super) struct Providers {
    dir: tempfile::TempDir,
    clients: HashMap<[u8; 32], String>,
    /// The live provider; `None` only while it restarts.
    live: Option<Served>,
    /// The state's copies, oldest first.
    snapshots: Vec<PathBuf>,
    /// The branch one member is served from during a fork, and the token it comes with.
    fork: Option<(String, Served)>,
    copies: usize,
}

pub(super) async fn open(dir: &Path, clients: &HashMap<[u8; 32], String>) -> Result<Served, String> {
    let provider = Provider::open_dir(dir, &Blocks::Local).map_err(|e| format!("opening the provider: {e}"))?;
    // An answered COMMIT written at once, on a task of its own, not after a wall-clock delay:
    // the order of a run's steps depends on its seed alone.
    let limits = Limits { vicos_flush_after: std::time::Duration::ZERO, ..Limits::default() };
    let served =
        in_process(provider, clients.clone(), limits).await.map_err(|e| format!("starting the provider: {e}"))?;
    Ok(Arc::new(served))
}

impl Providers {
    pub(super) async fn new(tokens: &[(&str, &str)]) -> Result<Providers, String> {
        let dir = scratch().map_err(|e| format!("a scratch directory: {e}"))?;
        let clients: HashMap<[u8; 32], String> =
            tokens.iter().map(|(token, name)| (token_hash(token), name.to_string())).collect();
        let live = open(&dir.path().join("live"), &clients).await?;
        Ok(Providers { dir, clients, live: Some(live), snapshots: Vec::new(), fork: None, copies: 0 })
    }

    fn live_dir(&self) -> PathBuf {
        self.dir.path().join("live")
    }

    /// The provider crashes and restarts: what it held in memory is gone, what it wrote stays.
    pub(super) async fn crash(&mut self) -> Result<(), String> {
        // The routes hold the only handle; dropping them closes the database as a dead process
        // would leave it (no close, no checkpoint).
        self.live = None;
        self.live = Some(open(&self.live_dir(), &self.clients).await?);
        Ok(())
    }

    fn fresh_dir(&mut self) -> PathBuf {
        self.copies += 1;
        self.dir.path().join(format!("copy-{}", self.copies))
    }

    /// Keeps a copy of the live state.
    pub(super) fn snapshot(&mut self) -> Result<(), String> {
        let to = self.fresh_dir();
        copy_dir(&self.live_dir(), &to).map_err(|e| format!("copying the provider's state: {e}"))?;
        self.snapshots.push(to);
        Ok(())
    }

    /// The provider as it was at an earlier copy (the seed picks which), to answer one message.
    pub(super) async fn rolled_back(&mut self, rng: &mut Rng) -> Result<Option<Served>, String> {
        if self.snapshots.is_empty() {
            return Ok(None);
        }
        let from = self.snapshots[rng.below(self.snapshots.len() as u64) as usize].clone();
        let to = self.fresh_dir();
        copy_dir(&from, &to).map_err(|e| format!("copying a snapshot: {e}"))?;
        Ok(Some(open(&to, &self.clients).await?))
    }

    /// From now on the client of `token` is served from a copy of the live state.
    pub(super) async fn fork(&mut self, token: &str) -> Result<(), String> {
        let to = self.fresh_dir();
        copy_dir(&self.live_dir(), &to).map_err(|e| format!("copying the provider's state: {e}"))?;
        self.fork = Some((token.to_string(), open(&to, &self.clients).await?));
        Ok(())
    }

    /// A copy of the live state, opened apart: where a kept batch is applied beside the
    /// live one.
    pub(super) async fn side(&mut self) -> Result<(PathBuf, Served), String> {
        let to = self.fresh_dir();
        copy_dir(&self.live_dir(), &to).map_err(|e| format!("copying the provider's state: {e}"))?;
        let served = open(&to, &self.clients).await?;
        Ok((to, served))
    }

    /// The PoR levels' and C's files (segments and sealed checksums) that the state at `from`
    /// holds under the same names as the live one but with other bytes, copied over the
    /// live ones: how many.
    pub(super) fn splice(&self, from: &Path) -> Result<usize, String> {
        let mut files = Vec::new();
        walk(&from.join("blobs"), &mut files);
        files.sort();
        let mut spliced = 0;
        for file in files {
            let Ok(name) = file.strip_prefix(from) else { continue };
            let level = name.components().any(|c| {
                let c = c.as_os_str().to_string_lossy();
                c.starts_with("level-") || c.starts_with("coded-")
            });
            let live = self.live_dir().join(name);
            if !level || !live.is_file() {
                continue;
            }
            let theirs = std::fs::read(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
            if std::fs::read(&live).map_err(|e| format!("reading {}: {e}", live.display()))? != theirs {
                std::fs::write(&live, theirs).map_err(|e| format!("writing {}: {e}", live.display()))?;
                spliced += 1;
            }
        }
        Ok(spliced)
    }

    /// A copy of the live state with every slot of U of `client`'s PoR log lost (H, C and
    /// the rest as they are), opened apart.
    pub(super) async fn without_u(&mut self, client: &str) -> Result<Served, String> {
        let to = self.fresh_dir();
        copy_dir(&self.live_dir(), &to).map_err(|e| format!("copying the provider's state: {e}"))?;
        fn store(e: impl std::fmt::Display) -> String {
            format!("the copy's store: {e}")
        }
        let blobs = vouch_store::ObjectBlobs::local(&to.join("blobs")).map_err(store)?;
        let meta = vouch_store::MetaDb::open(&to.join("meta.redb")).map_err(store)?;
        let repo = vouch_store::Repository::open(blobs, meta).map_err(store)?;
        let owner = format!("{client}/por");
        if let Some(log) = vouch_store::PorLog::open(&repo, owner.as_bytes()).await.map_err(store)? {
            let all: Vec<u64> = (0..log.schedule().capacity()).collect();
            crate::damage::lose_raw_slots(&repo, &log, &all).map_err(store)?;
        }
        repo.close().await.map_err(store)?;
        drop(repo);
        open(&to, &self.clients).await
    }

    /// Every client is served from the live state again.
    pub(super) fn join(&mut self) -> bool {
        self.fork.take().is_some()
    }

    pub(super) fn forked(&self) -> bool {
        self.fork.is_some()
    }

    pub(super) fn serving(&self, token: &str) -> Result<Served, String> {
        match &self.fork {
            Some((forked, branch)) if forked == token => Ok(branch.clone()),
            _ => self.live.clone().ok_or_else(|| "the provider did not come back from a crash".to_string()),
        }
    }

    /// The files of the live provider's blob store (segments, PoR levels, objects), in a
    /// stable order.
    pub(super) fn blobs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(&self.live_dir().join("blobs"), &mut out);
        out.sort();
        out
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match path.is_dir() {
            true => walk(&path, out),
            false => out.push(path),
        }
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        match entry.file_type()?.is_dir() {
            true => copy_dir(&entry.path(), &target)?,
            false => drop(std::fs::copy(entry.path(), target)?),
        }
    }
    Ok(())
}
