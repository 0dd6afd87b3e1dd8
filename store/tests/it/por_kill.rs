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

/// How long a writer may take to make the progress a kill waits for.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(120);

/// Sends each time of the writer's "committed T" lines, reading until the writer is gone (so
/// its prints never fail while it lives).
fn forward_commits(stdout: std::process::ChildStdout, times: tokio::sync::mpsc::UnboundedSender<u64>) {
    use std::io::BufRead;
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Some(time) = line.strip_prefix("committed ").and_then(|t| t.trim().parse().ok()) {
            let _ = times.send(time);
        }
    }
}

/// Whether the writer reported a committed time of `target` or more within the timeout.
async fn progress_to(times: &mut tokio::sync::mpsc::UnboundedReceiver<u64>, target: u64) -> bool {
    let reached = async {
        while let Some(time) = times.recv().await {
            if time >= target {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(PROGRESS_TIMEOUT, reached).await.unwrap_or(false)
}

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
        // The parent kills after seeing progress, so a loaded machine slows the test, never
        // empties it.
        println!("committed {}", run.log.schedule().time);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_writer_leaves_the_log_at_the_end_of_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut last = 0;
    // Ten kills at least, and more while the log is short of MIN_PROGRESS.
    for kill in 0..MAX_KILLS {
        if kill >= 10 && last >= MIN_PROGRESS {
            break;
        }
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "por_kill::por_writer_child_process", "--nocapture"])
            .env("VOUCH_POR_KILL_DIR", dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Deterministic "random" instants: once the writer has committed 20 to 49 more of the
        // log's time, somewhere within the next 0 to 150 ms (inside a batch, a commit or
        // between two).
        let stdout = child.stdout.take().unwrap();
        let target = last + 20 + (kill * 13 % 30);
        let (send, mut times) = tokio::sync::mpsc::unbounded_channel();
        let reader = std::thread::spawn(move || forward_commits(stdout, send));
        if !progress_to(&mut times, target).await {
            let _ = child.kill();
            panic!("the writer's log did not reach time {target} within {PROGRESS_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(kill * 7_919 % 150)).await;
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        reader.join().unwrap();
        assert!(!status.success(), "the writer must have been killed, not have stopped: {status}");
        let Some(run) = resume(dir.path()).await else { continue };
        run.check().await;
        let now = run.state.schedule.time;
        assert!(now >= last, "committed batches went backwards: {last} -> {now}");
        last = now;
    }
    assert!(last >= MIN_PROGRESS, "the writer made too little progress to test anything: time {last}");
}
