//! Replays the committed corpus of the `wire_message` fuzz target, and keeps its seeds current.

use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/wire_message")
}

#[test]
fn wire_corpus_replays_without_panic_and_seeds_are_current() {
    for (name, bytes) in vouch_proto::fuzz_seeds() {
        let path = corpus().join(name);
        if std::env::var_os("VOUCH_WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} is stale (VOUCH_WRITE_SEEDS=1 rewrites it)");
    }
    let files: Vec<_> = std::fs::read_dir(corpus()).unwrap().collect();
    assert!(files.len() >= 5);
    for file in files {
        vouch_proto::fuzz_wire_message(&std::fs::read(file.unwrap().path()).unwrap());
    }
}
