//! Crash safety of the PoR log for real: a writer process applying random batches is killed
//! (SIGKILL) at arbitrary instants, in the middle of a put, a commit or a delete; after each
//! kill the log must open at the end of some batch, answer exactly as the reference model
//! replayed to that batch, and hold no object its state does not name.

use crate::por_support;

use por_support::{open_repo, Model, Run, GROUP_LOG, OWNER, SMALL, WIDTH};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use vouch_store::{ObjectBlobs, PorLog, Repository};

/// U grows until this many slots are written, then batches overwrite.
const GROW_UNTIL: u64 = 200;

/// The log's time the kills must reach, past growth into overwrites.
const MIN_PROGRESS: u64 = 300;
const MAX_KILLS: u64 = 40;

fn open_at(dir: &Path) -> (ObjectBlobs, Repository) {
    let blobs = ObjectBlobs::local(&dir.join("blobs")).unwrap();
    let repo = open_repo(&blobs, dir);
    (blobs, repo)
}

/// The model replayed to the log's last committed batch, beside the log.
async fn resume(dir: &Path) -> Option<Run> {
    let (blobs, repo) = open_at(dir);
    let log = PorLog::open(&repo, OWNER).await.unwrap()?;
    let log = log.with_limits(SMALL.segment_bytes, SMALL.cached_level_bytes);
    let model = Model::replayed(log.schedule().time, GROW_UNTIL);
    let scratch = tempfile::tempdir().unwrap();
    Some(Run { model, dir: scratch, blobs, repo, log, limits: SMALL, other_folders: 0 })
}

/// The child side of the test below: resumes (or creates) the log and writes batches until
/// killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of the PoR kill test"]
async fn por_writer_child_process() {
    let dir = std::path::PathBuf::from(std::env::var("VOUCH_POR_KILL_DIR").expect("run by the kill test"));
    let mut run = match resume(&dir).await {
        Some(run) => run,
        None => {
            let (blobs, repo) = open_at(&dir);
            let (model, coded) = Model::new(1);
            let log = PorLog::create(&repo, OWNER, (1, GROUP_LOG), WIDTH, coded).await.unwrap();
            let log = log.with_limits(SMALL.segment_bytes, SMALL.cached_level_bytes);
            Run { model, dir: tempfile::tempdir().unwrap(), blobs, repo, log, limits: SMALL, other_folders: 0 }
        }
    };
    loop {
        let writes = run.random_writes(GROW_UNTIL);
        run.batch(&writes).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_writer_leaves_the_log_at_the_end_of_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut last = 0;
    // Ten kills at least, and more while the writer has made too little progress (a loaded
    // machine runs it slower; the instants are wall-clock ones).
    for kill in 0..MAX_KILLS {
        if kill >= 10 && last >= MIN_PROGRESS {
            break;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "por_kill::por_writer_child_process", "--nocapture"])
            .env("VOUCH_POR_KILL_DIR", dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Deterministic "random" instants between 200 and 1100 ms.
        tokio::time::sleep(Duration::from_millis(200 + (kill * 7_919 % 900))).await;
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(!status.success(), "the writer must have been killed, not have stopped: {status}");
        let Some(run) = resume(dir.path()).await else { continue };
        run.check().await;
        let now = run.state.schedule.time;
        assert!(now >= last, "committed batches went backwards: {last} -> {now}");
        last = now;
    }
    assert!(last >= MIN_PROGRESS, "the writer made too little progress to test anything: time {last}");
}
