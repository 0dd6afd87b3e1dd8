//! The repository replay of `vouch bench e2e --repo`, on a small git history made here.

use std::path::Path;
use std::process::Command;
use vouch_bench::e2e::data;
use vouch_bench::repo::{replay, RepoReplay, Source};
use vouch_bench::Options;

const BIG: usize = 300 << 10;

/// Runs git in `repo` with no system or user configuration.
fn git(repo: &Path, home: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn commit(repo: &Path, home: &Path, message: &str) {
    git(repo, home, &["add", "-A"]);
    git(repo, home, &["commit", "-q", "-m", message]);
}

/// Four commits: two files (and an empty one) added, the big one changed in the middle, a file
/// in a subdirectory added, the text file deleted.
fn history(home: &Path) -> std::path::PathBuf {
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, home, &["init", "-q"]);
    let mut big = data(BIG, 1);
    std::fs::write(repo.join("big.bin"), &big).unwrap();
    std::fs::write(repo.join("notes.txt"), "a text file\n".repeat(100)).unwrap();
    std::fs::write(repo.join("empty"), b"").unwrap();
    commit(&repo, home, "add");
    big[150_000..154_000].copy_from_slice(&data(4000, 2));
    std::fs::write(repo.join("big.bin"), &big).unwrap();
    commit(&repo, home, "modify");
    std::fs::create_dir_all(repo.join("sub/dir")).unwrap();
    std::fs::write(repo.join("sub/dir/more.txt"), "more\n").unwrap();
    commit(&repo, home, "subdirectory");
    std::fs::remove_file(repo.join("notes.txt")).unwrap();
    commit(&repo, home, "delete");
    repo
}

fn run(repo: &Path, commits: Option<usize>) -> Result<RepoReplay, vouch_bench::SelfCheckFailed> {
    replay(&Source { path: repo.to_path_buf(), commits }, Options { quick: true }, |_| {})
}

#[test]
fn replays_a_history_sending_differences() {
    let home = tempfile::tempdir().unwrap();
    let repo = history(home.path());
    let r = run(&repo, None).expect("replay");

    assert_eq!(r.history_commits, 4);
    assert_eq!(r.commits_replayed, 4);
    assert!(r.baseline.is_none());
    assert_eq!((r.commits[0].synced, r.commits[1].synced, r.commits[2].synced), (3, 1, 1));
    assert_eq!((r.commits[3].synced, r.commits[3].removed), (0, 1));
    assert_eq!(r.files_removed, 1);
    assert_eq!(r.skipped, 0, "{:?}", r.skipped_notes);
    let modify = &r.commits[1];
    assert_eq!(modify.changed_bytes, BIG as u64);
    assert!(modify.bytes_sent < BIG as u64 / 4, "the changed file was sent whole: {modify:?}");
    assert!(modify.file_proof_bytes > 0, "no multiUpdate proof: {modify:?}");
    assert!(r.saving > 0.0);
    // The replay's own end check: big.bin, empty and sub/dir/more.txt read back equal, and
    // the listing has nothing else (notes.txt is gone).
    assert_eq!(r.verified_files, 3);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["commits"].as_array().map(Vec::len), Some(4));
}

#[test]
fn replays_the_newest_commits_over_a_baseline() {
    let home = tempfile::tempdir().unwrap();
    let repo = history(home.path());
    let r = run(&repo, Some(2)).expect("replay");

    assert_eq!(r.commits_replayed, 2);
    let baseline = r.baseline.as_ref().expect("a baseline before the third commit");
    assert_eq!(baseline.files, 3);
    assert_eq!((r.commits[0].synced, r.commits[1].removed), (1, 1));
    assert_eq!(r.verified_files, 3);
}

#[test]
fn a_directory_that_is_not_a_repository_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = run(dir.path(), None).expect_err("not a repository");
    let message = err.to_string();
    assert!(message.contains("git rev-list") && message.contains("not a git repository"), "{message}");
}

#[test]
fn zero_commits_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let repo = history(home.path());
    let err = run(&repo, Some(0)).expect_err("nothing to replay");
    assert!(err.to_string().contains("--commits"), "{err}");
}

#[test]
fn a_name_the_namespace_refuses_is_skipped_and_counted() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, home.path(), &["init", "-q"]);
    std::fs::write(repo.join("fine.txt"), "fine\n").unwrap();
    std::fs::write(repo.join("tab\there"), "a control character in the name\n").unwrap();
    commit(&repo, home.path(), "one good name, one refused");
    let r = run(&repo, None).expect("replay");

    assert_eq!((r.commits_replayed, r.files_synced, r.skipped), (1, 1, 1));
    assert!(r.skipped_notes[0].contains("bad name"), "{:?}", r.skipped_notes);
    assert_eq!(r.verified_files, 1);
}
