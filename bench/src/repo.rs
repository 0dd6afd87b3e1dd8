//! `vouch bench e2e --repo PATH`: a real repository's history replayed through the whole
//! system, each commit as a `sync` of every file it changed and a `remove` of every file it
//! deleted.
//!
//! The papers measure version control as their workload: a commit is one batch of
//! variable-size block updates to a file, sent with its multiUpdate proof (paper 000 Table 2,
//! paper 001 Table 3). The generated replay in [`crate::e2e`] changes one large file; this one
//! takes the changes people actually made. Per commit it reports the files changed, their bytes,
//! the bytes and blocks sent, the multiUpdate proofs, the block lists received, the provider's
//! time and the client's whole time; then the medians and how much less than the changed files'
//! bytes was sent. The replay checks itself at the end: every file of the final commit read
//! back verified equals git's bytes, and the verified listing names exactly those files.
//!
//! History comes from the `git` binary (plumbing commands only), following first parents: a
//! merge is replayed as the change it made to the branch. When the replay starts mid-history,
//! the tree before its first commit is stored first as an unmeasured baseline.

use crate::measure::{check, ms, Options, SelfCheckFailed};
use crate::served::start;
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use vouch_client::{Client, SyncReport};

/// Commits replayed when none are given: the newest of the first-parent history.
const COMMITS: usize = 100;
const QUICK_COMMITS: usize = 20;
/// Larger files are skipped: a repository's history is about small changes, and a huge asset
/// would only measure the throughput [`crate::e2e`] already reports.
const MAX_FILE_BYTES: u64 = 64 << 20;
/// Skipped files are counted; only this many are named in the report.
const MAX_NOTES: usize = 10;
/// A git mode of a submodule: a commit of another repository, not a file.
const GITLINK: &str = "160000";
/// Characters of a commit id shown in reports.
const SHORT_ID: usize = 10;

/// Which history to replay.
#[derive(Clone, Debug)]
pub struct Source {
    /// A git working tree or bare repository.
    pub path: PathBuf,
    /// How many of the newest first-parent commits to replay (default 100, 20 with `--quick`).
    pub commits: Option<usize>,
}

/// The replay of a repository's history.
#[derive(Debug, Serialize)]
pub struct RepoReplay {
    /// Commits on the first-parent history of HEAD.
    pub history_commits: usize,
    pub commits_replayed: usize,
    /// The tree stored before the first replayed commit, when it has a parent.
    pub baseline: Option<Baseline>,
    /// Syncs (new or changed files) and removes over all replayed commits.
    pub files_synced: usize,
    pub files_removed: usize,
    /// Changes not replayed: names the namespace refuses, submodules, files over 64 MiB.
    pub skipped: usize,
    /// The first few skipped changes, and why.
    pub skipped_notes: Vec<String>,
    /// Totals over all commits: bytes of the changed files against bytes sent.
    pub changed_bytes: u64,
    pub bytes_sent: u64,
    /// `1 - bytes_sent / changed_bytes`: what sending differences saved.
    pub saving: f64,
    pub median: Medians,
    /// Files of the final commit read back verified and equal to git's bytes.
    pub verified_files: usize,
    pub commits: Vec<CommitRow>,
}

/// The unmeasured starting state of a replay that begins mid-history.
#[derive(Debug, Serialize)]
pub struct Baseline {
    pub commit: String,
    pub files: usize,
    pub bytes: u64,
}

/// Medians per replayed commit.
#[derive(Debug, Serialize)]
pub struct Medians {
    pub bytes_sent: f64,
    pub file_proof_bytes: f64,
    pub all_proof_bytes: f64,
    pub server_ms: f64,
    pub client_ms: f64,
}

/// One replayed commit.
#[derive(Debug, Default, Serialize)]
pub struct CommitRow {
    pub commit: String,
    pub synced: usize,
    pub removed: usize,
    /// Bytes of the files the commit added or changed (their new versions).
    pub changed_bytes: u64,
    pub bytes_sent: u64,
    pub blocks_sent: u64,
    /// Sum of the syncs' multiUpdate proofs (a new file is put whole and has none).
    pub file_proof_bytes: u64,
    /// Every proof of every sync (block list, version list, namespace, lookup).
    pub all_proof_bytes: u64,
    /// Block lists and their proofs received to diff against.
    pub list_bytes: u64,
    /// The provider's reported time, summed over the commit's syncs and removes.
    pub server_ms: f64,
    /// The client's whole time for the commit (not counting reading it out of git).
    pub client_ms: f64,
}

/// Replays the newest commits of `source` against a fresh provider on a scratch directory.
pub fn replay(source: &Source, opts: Options, mut progress: impl FnMut(&str)) -> Result<RepoReplay, SelfCheckFailed> {
    let rt = crate::measure::runtime()?;
    let scratch = tempfile::tempdir().map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    rt.block_on(replay_in(source, opts, scratch.path(), &mut progress))
}

/// Fails early, before other measurements run, when `source` is not a git history.
pub(crate) fn probe(source: &Source) -> Result<(), SelfCheckFailed> {
    Git { repo: &source.path }.first_parent_history().map(drop)
}

/// [`replay`] on a running tokio runtime, keeping the provider's and client's state in `dir`.
pub(crate) async fn replay_in(
    source: &Source,
    opts: Options,
    dir: &Path,
    mut progress: impl FnMut(&str),
) -> Result<RepoReplay, SelfCheckFailed> {
    let git = Git { repo: &source.path };
    let history = git.first_parent_history()?;
    let want = source.commits.unwrap_or(if opts.quick { QUICK_COMMITS } else { COMMITS });
    check(want > 0, || "--commits must be at least 1".into())?;
    let first = history.len().saturating_sub(want);
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).map_err(|e| SelfCheckFailed(format!("scratch directory: {e}")))?;
    let mut run = start(&vouch_server::Blocks::Local, dir).await?;
    let mut replayer =
        Replayer { git, client: &mut run.client, stage, stored: BTreeSet::new(), skipped: Skips::default() };

    let baseline = match first.checked_sub(1).map(|i| &history[i]) {
        Some(base) => {
            progress(&format!("e2e: repository replay, baseline {}", short(base)));
            Some(replayer.baseline(base).await?)
        }
        None => None,
    };
    progress(&format!("e2e: repository replay, {} of {} commits", history.len() - first, history.len()));
    let mut rows = Vec::with_capacity(history.len() - first);
    for i in first..history.len() {
        let parent = i.checked_sub(1).map(|p| history[p].as_str());
        rows.push(replayer.commit(parent, &history[i]).await?);
    }
    let last = history.last().ok_or_else(|| SelfCheckFailed("the repository has no commits".into()))?;
    let verified_files = replayer.verify(last).await?;
    let skipped = replayer.skipped;
    run.server.shutdown().await.map_err(|e| SelfCheckFailed(e.to_string()))?;
    Ok(summarize(history.len(), baseline, rows, skipped, verified_files))
}

/// Totals and medians over the commit rows.
fn summarize(
    history_commits: usize,
    baseline: Option<Baseline>,
    commits: Vec<CommitRow>,
    skipped: Skips,
    verified_files: usize,
) -> RepoReplay {
    let changed_bytes = commits.iter().map(|c| c.changed_bytes).sum::<u64>();
    let bytes_sent = commits.iter().map(|c| c.bytes_sent).sum::<u64>();
    let med = |f: fn(&CommitRow) -> f64| median(commits.iter().map(f).collect());
    RepoReplay {
        history_commits,
        commits_replayed: commits.len(),
        baseline,
        files_synced: commits.iter().map(|c| c.synced).sum(),
        files_removed: commits.iter().map(|c| c.removed).sum(),
        skipped: skipped.count,
        skipped_notes: skipped.notes,
        changed_bytes,
        bytes_sent,
        saving: if changed_bytes == 0 { 0.0 } else { 1.0 - bytes_sent as f64 / changed_bytes as f64 },
        median: Medians {
            bytes_sent: med(|c| c.bytes_sent as f64),
            file_proof_bytes: med(|c| c.file_proof_bytes as f64),
            all_proof_bytes: med(|c| c.all_proof_bytes as f64),
            server_ms: med(|c| c.server_ms),
            client_ms: med(|c| c.client_ms),
        },
        verified_files,
        commits,
    }
}

/// The middle value (the upper one of an even count); NaN, which JSON shows as null, for none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn short(commit: &str) -> String {
    commit.chars().take(SHORT_ID).collect()
}

/// Changes left out of the replay.
#[derive(Default)]
struct Skips {
    count: usize,
    notes: Vec<String>,
}

impl Skips {
    fn add(&mut self, commit: &str, why: String) {
        self.count += 1;
        if self.notes.len() < MAX_NOTES {
            self.notes.push(format!("{}: {why}", short(commit)));
        }
    }
}

/// A file a commit wrote, read out of git into a scratch file before the commit is timed.
struct Staged {
    name: String,
    path: PathBuf,
    len: u64,
}

/// The replay's state: the client, and which names it has stored.
struct Replayer<'a> {
    git: Git<'a>,
    client: &'a mut Client,
    /// Scratch files the commit's changed files are read into.
    stage: PathBuf,
    /// Names stored now: a skipped file's deletion has nothing to remove.
    stored: BTreeSet<String>,
    skipped: Skips,
}

impl Replayer<'_> {
    /// Stores every file of `commit`'s tree, unmeasured.
    async fn baseline(&mut self, commit: &str) -> Result<Baseline, SelfCheckFailed> {
        let mut out = Baseline { commit: short(commit), files: 0, bytes: 0 };
        for (i, file) in self.git.tree(commit)?.into_iter().enumerate() {
            let change = Change { path: file.path, mode: file.mode, blob: Some(file.blob) };
            let Some(staged) = self.stage(commit, &change, i)? else { continue };
            self.sync(&staged).await?;
            out.files += 1;
            out.bytes += staged.len;
            remove_scratch(&staged.path)?;
        }
        Ok(out)
    }

    /// Replays one commit: its changed files are read out of git first, then synced and its
    /// deleted files removed, timed as one.
    async fn commit(&mut self, parent: Option<&str>, commit: &str) -> Result<CommitRow, SelfCheckFailed> {
        let mut row = CommitRow { commit: short(commit), ..CommitRow::default() };
        let (mut writes, mut removes) = (Vec::new(), Vec::new());
        for (i, change) in self.git.changes(parent, commit)?.into_iter().enumerate() {
            let staged = if change.blob.is_some() { self.stage(commit, &change, i)? } else { None };
            match staged {
                Some(s) => writes.push(s),
                // Deleted, or now skipped: whatever was stored under the name goes.
                None => removes.extend(name_of(&change.path).ok().filter(|n| self.stored.contains(n))),
            }
        }
        let started = Instant::now();
        for staged in &writes {
            let report = self.sync(staged).await?;
            row.add(staged, &report);
        }
        for name in &removes {
            self.client.remove(name).await.map_err(|e| SelfCheckFailed(format!("remove {name}: {e}")))?;
            self.stored.remove(name);
            row.removed += 1;
            row.server_ms += self.client.remote().last_server_time().map_or(0.0, ms);
        }
        row.client_ms = ms(started.elapsed());
        for staged in &writes {
            remove_scratch(&staged.path)?;
        }
        Ok(row)
    }

    async fn sync(&mut self, staged: &Staged) -> Result<SyncReport, SelfCheckFailed> {
        let report = self
            .client
            .sync(&staged.name, &staged.path)
            .await
            .map_err(|e| SelfCheckFailed(format!("sync {}: {e}", staged.name)))?;
        self.stored.insert(staged.name.clone());
        Ok(report)
    }

    /// Reads a written file out of git into scratch file `i`; `None` (counted as skipped) for
    /// a name the namespace refuses, a submodule or a file over [`MAX_FILE_BYTES`].
    fn stage(&mut self, commit: &str, change: &Change, i: usize) -> Result<Option<Staged>, SelfCheckFailed> {
        let (name, blob) = match (admit(&change.path, &change.mode), &change.blob) {
            (Ok(name), Some(blob)) => (name, blob),
            (Err(why), _) => {
                self.skipped.add(commit, why);
                return Ok(None);
            }
            (Ok(_), None) => return Ok(None),
        };
        let path = self.stage.join(i.to_string());
        match self.git.blob_to_file(blob, &path, MAX_FILE_BYTES)? {
            Some(len) => Ok(Some(Staged { name, path, len })),
            None => {
                remove_scratch(&path)?;
                self.skipped.add(commit, format!("{name}: over {} MiB", MAX_FILE_BYTES >> 20));
                Ok(None)
            }
        }
    }

    /// Checks the end state: every file of `commit`'s tree (that the replay does not skip) reads
    /// back verified and equal to git's bytes, and the verified listing names exactly those.
    async fn verify(&self, commit: &str) -> Result<usize, SelfCheckFailed> {
        let mut expected = BTreeSet::new();
        for file in self.git.tree(commit)? {
            let Ok(name) = admit(&file.path, &file.mode) else { continue };
            if file.size > MAX_FILE_BYTES {
                continue;
            }
            let mut stored = Vec::new();
            self.client
                .get(&name, None, None, &mut stored)
                .await
                .map_err(|e| SelfCheckFailed(format!("get {name} after the replay: {e}")))?;
            check(stored == self.git.blob(&file.blob)?, || format!("{name} reads back other bytes than git's"))?;
            expected.insert(name);
        }
        let listed: BTreeSet<String> = self
            .client
            .list()
            .await
            .map_err(|e| SelfCheckFailed(format!("list after the replay: {e}")))?
            .into_iter()
            .map(|e| e.name)
            .collect();
        check(listed == expected, || {
            let extra: Vec<_> = listed.difference(&expected).take(5).collect();
            let missing: Vec<_> = expected.difference(&listed).take(5).collect();
            format!("the listing differs from the final tree: extra {extra:?}, missing {missing:?}")
        })?;
        Ok(expected.len())
    }
}

impl CommitRow {
    fn add(&mut self, staged: &Staged, r: &SyncReport) {
        self.synced += 1;
        self.changed_bytes += staged.len;
        self.bytes_sent += r.bytes_sent;
        self.blocks_sent += r.blocks_sent;
        self.file_proof_bytes += r.file_proof_bytes;
        self.all_proof_bytes += r.proof_bytes;
        self.list_bytes += r.list_bytes;
        self.server_ms += r.server_ms.unwrap_or(0.0);
    }
}

fn remove_scratch(path: &Path) -> Result<(), SelfCheckFailed> {
    std::fs::remove_file(path).map_err(|e| SelfCheckFailed(format!("scratch file: {e}")))
}

/// The stored name of a repository path: the path itself, when the namespace accepts it.
fn name_of(path: &[u8]) -> Result<String, String> {
    let name = String::from_utf8(path.to_vec()).map_err(|_| format!("{}: not UTF-8", String::from_utf8_lossy(path)))?;
    vouch_core::namespace::check_name(&name).map_err(|e| e.to_string())?;
    Ok(name)
}

/// The name a file is stored under, or why it is skipped.
fn admit(path: &[u8], mode: &str) -> Result<String, String> {
    let name = name_of(path)?;
    if mode == GITLINK {
        return Err(format!("{name}: a submodule"));
    }
    Ok(name)
}

/// A path a commit wrote (`blob` is its new content) or deleted (`blob` is `None`).
struct Change {
    path: Vec<u8>,
    mode: String,
    blob: Option<String>,
}

/// A file of a tree.
struct TreeFile {
    path: Vec<u8>,
    mode: String,
    blob: String,
    /// 0 for a submodule (git shows no size).
    size: u64,
}

/// The repository, read through git's plumbing commands.
struct Git<'a> {
    repo: &'a Path,
}

impl Git<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(self.repo).args(args);
        cmd
    }

    /// Runs git to the end and returns its output; a failure names the command and git's words.
    fn run(&self, args: &[&str]) -> Result<Vec<u8>, SelfCheckFailed> {
        let out = self.command(args).stdin(Stdio::null()).output().map_err(|e| self.spawn_failed(e))?;
        if !out.status.success() {
            return Err(self.failed(args, &out.stderr));
        }
        Ok(out.stdout)
    }

    fn spawn_failed(&self, e: std::io::Error) -> SelfCheckFailed {
        SelfCheckFailed(format!("cannot run git (is it installed and on PATH?): {e}"))
    }

    fn failed(&self, args: &[&str], stderr: &[u8]) -> SelfCheckFailed {
        let words = String::from_utf8_lossy(stderr);
        SelfCheckFailed(format!(
            "git {} in {} failed: {}",
            args.first().copied().unwrap_or_default(),
            self.repo.display(),
            words.trim()
        ))
    }

    /// HEAD's first-parent history, oldest first.
    fn first_parent_history(&self) -> Result<Vec<String>, SelfCheckFailed> {
        let out = self.run(&["rev-list", "--reverse", "--first-parent", "HEAD"])?;
        let history: Vec<String> = String::from_utf8_lossy(&out).lines().map(str::to_owned).collect();
        check(!history.is_empty(), || format!("{} has no commits", self.repo.display()))?;
        Ok(history)
    }

    /// What `commit` changed against `parent` (against nothing for a root commit), leaving out
    /// changes of mode alone.
    fn changes(&self, parent: Option<&str>, commit: &str) -> Result<Vec<Change>, SelfCheckFailed> {
        let mut args = vec!["diff-tree", "-r", "-z", "--no-commit-id", "--no-renames"];
        match parent {
            Some(p) => args.extend([p, commit]),
            None => args.extend(["--root", commit]),
        }
        let out = self.run(&args)?;
        let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let Some(head) = fields.next() {
            let bad = || SelfCheckFailed(format!("git diff-tree printed an unexpected line for {}", short(commit)));
            let path = fields.next().ok_or_else(bad)?;
            // `:old_mode new_mode old_blob new_blob status`
            let head = String::from_utf8_lossy(head);
            let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
            let [_, mode, old, new, status] = parts[..] else { return Err(bad()) };
            if old == new {
                continue;
            }
            let blob = (!status.starts_with('D')).then(|| new.to_owned());
            changes.push(Change { path: path.to_vec(), mode: mode.to_owned(), blob });
        }
        Ok(changes)
    }

    /// Every file of `commit`'s tree.
    fn tree(&self, commit: &str) -> Result<Vec<TreeFile>, SelfCheckFailed> {
        let out = self.run(&["ls-tree", "-r", "-l", "-z", "--full-tree", commit])?;
        let mut files = Vec::new();
        for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let bad = || SelfCheckFailed(format!("git ls-tree printed an unexpected line for {}", short(commit)));
            // `mode type blob size\tpath`
            let tab = entry.iter().position(|&b| b == b'\t').ok_or_else(bad)?;
            let head = String::from_utf8_lossy(&entry[..tab]);
            let parts: Vec<&str> = head.split_whitespace().collect();
            let [mode, _, blob, size] = parts[..] else { return Err(bad()) };
            files.push(TreeFile {
                path: entry[tab + 1..].to_vec(),
                mode: mode.to_owned(),
                blob: blob.to_owned(),
                size: size.parse().unwrap_or(0),
            });
        }
        Ok(files)
    }

    /// A blob's bytes.
    fn blob(&self, blob: &str) -> Result<Vec<u8>, SelfCheckFailed> {
        self.run(&["cat-file", "blob", blob])
    }

    /// Streams a blob into `path`, flushed (so the provider's own flushes do not wait for it);
    /// `None` when it is over `limit` bytes, which stops reading it.
    fn blob_to_file(&self, blob: &str, path: &Path, limit: u64) -> Result<Option<u64>, SelfCheckFailed> {
        let io = |e: std::io::Error| SelfCheckFailed(format!("scratch file: {e}"));
        let args = ["cat-file", "blob", blob];
        let mut child = self
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.spawn_failed(e))?;
        let stdout = child.stdout.take().ok_or_else(|| SelfCheckFailed("git cat-file: no output pipe".into()))?;
        let mut file = std::fs::File::create(path).map_err(io)?;
        let len = std::io::copy(&mut stdout.take(limit + 1), &mut file).map_err(io)?;
        if len > limit {
            // Stopping early is the point; the kill fails only if git already exited.
            let _ = child.kill();
            child.wait().map_err(|e| self.spawn_failed(e))?;
            return Ok(None);
        }
        let out = child.wait_with_output().map_err(|e| self.spawn_failed(e))?;
        if !out.status.success() {
            return Err(self.failed(&args, &out.stderr));
        }
        file.sync_all().map_err(io)?;
        Ok(Some(len))
    }
}

impl RepoReplay {
    /// A few lines for people: the summary, then the first and last commits.
    pub fn to_text(&self) -> String {
        let baseline = self
            .baseline
            .as_ref()
            .map(|b| format!(", after a baseline of {} files ({} KB) at {}", b.files, b.bytes >> 10, b.commit))
            .unwrap_or_default();
        let mut out = format!(
            "repository replay ({} of {} commits{baseline}): {} files synced, {} removed, {} skipped\n",
            self.commits_replayed, self.history_commits, self.files_synced, self.files_removed, self.skipped
        );
        out += &format!(
            "  medians per commit: sent {:.0} B, multiUpdate proofs {:.0} B (all proofs {:.0} B), server {:.2} ms, client {:.1} ms\n",
            self.median.bytes_sent,
            self.median.file_proof_bytes,
            self.median.all_proof_bytes,
            self.median.server_ms,
            self.median.client_ms
        );
        out += &format!(
            "  in all: sent {} KB for {} KB of changed files ({:.0}% saved); {} files of the last commit read back equal\n",
            self.bytes_sent >> 10,
            self.changed_bytes >> 10,
            self.saving * 100.0,
            self.verified_files
        );
        let ends = [self.commits.first(), self.commits.last()];
        for c in ends.into_iter().flatten().take(self.commits.len().min(2)) {
            out += &format!(
                "  commit {}: {} synced, {} removed, {} B changed, sent {} B in {} blocks, multiUpdate proofs {} B, server {:.2} ms, client {:.1} ms\n",
                c.commit,
                c.synced,
                c.removed,
                c.changed_bytes,
                c.bytes_sent,
                c.blocks_sent,
                c.file_proof_bytes,
                c.server_ms,
                c.client_ms
            );
        }
        for note in &self.skipped_notes {
            out += &format!("  skipped {note}\n");
        }
        out
    }
}
