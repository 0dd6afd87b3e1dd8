//! Saved lists (full and as deltas of the list they were edited from) against a model: a
//! map from name to the list itself. Random sequences of saves, edited saves and deletes;
//! after each batch every live name loads as the model says, every deleted one is gone, and
//! once everything is deleted nothing of the lists is left in the store. Also: lists survive
//! a restart, share chunks, and corruption is reported.

use super::*;
use crate::MetaDb;
use proptest::prelude::*;
use std::collections::BTreeMap;
use vouch_core::hash;

/// Adds to `batch` everything that stores `list` under `name` (replacing an older version).
fn save_list(batch: &mut MetaBatch, meta: &impl MetaStore, name: &str, list: &FlexList) -> Result<(), StoreError> {
    let mut writer = ListWriter::new(meta);
    writer.save(name, list)?;
    writer.finish(batch);
    Ok(())
}

/// Like [`save_list`] for the list saved as `base` after `edits`.
fn save_edited_list(
    batch: &mut MetaBatch,
    meta: &impl MetaStore,
    name: &str,
    base: &str,
    list: &FlexList,
    edits: &[Edit],
) -> Result<(), StoreError> {
    let mut writer = ListWriter::new(meta);
    writer.save_edited(name, base, list, edits)?;
    writer.finish(batch);
    Ok(())
}

/// How many list chunks are stored.
fn chunk_count(meta: &impl MetaStore) -> Result<usize, StoreError> {
    Ok(meta.scan(b"lchunk/")?.len())
}

fn block(seed: u64) -> Block {
    Block::new(hash::data(&seed.to_le_bytes()), 1 + (seed % 3000) as u32, seed)
}

fn list_of(seed: u64, n: u64) -> FlexList {
    FlexList::build(&(0..n).map(|i| block(seed * 100_000 + i)).collect::<Vec<_>>()).unwrap()
}

/// A small batch of edits at chosen fractions of the file.
fn edits_for(list: &FlexList, seed: u64) -> Vec<Edit> {
    let len = list.total_len();
    let mut out = Vec::new();
    let mut used = std::collections::HashSet::new();
    for i in 0..1 + seed % 4 {
        let pick = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(i as u32 * 13);
        let fresh = block(9_000_000u64.wrapping_add(seed.wrapping_mul(10)).wrapping_add(i));
        match (pick % 4, list.search(pick % len.max(1))) {
            (0, Some(f)) => out.push(Edit::Insert { at: f.start, block: fresh }),
            (1, Some(f)) if used.insert(f.start) => out.push(Edit::Modify { at: f.start, block: fresh }),
            (2, Some(f)) if list.block_count() > 1 && used.insert(f.start) => out.push(Edit::Remove { at: f.start }),
            _ => out.push(Edit::Insert { at: len, block: fresh }),
        }
    }
    out
}

fn open() -> (tempfile::TempDir, MetaDb) {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaDb::open(&dir.path().join("meta.redb")).unwrap();
    (dir, meta)
}

/// Commits what `change` does with one list writer.
fn with_writer(meta: &MetaDb, change: impl FnOnce(&mut ListWriter<'_, MetaDb>)) {
    let mut writer = ListWriter::new(meta);
    change(&mut writer);
    let mut batch = MetaBatch::default();
    writer.finish(&mut batch);
    meta.commit(&batch).unwrap();
}

fn list_keys(meta: &MetaDb) -> Vec<Vec<u8>> {
    [&b"root/"[..], b"lchunk/", b"lref/", b"ldep/", b"lhide/"]
        .iter()
        .flat_map(|p| meta.scan(p).unwrap().into_iter().map(|(k, _)| k))
        .collect()
}

/// Live lists load as the model says; a deleted one is gone, or (hidden while deltas rest on
/// it) still exactly what it was, never another list.
fn check_model(meta: &MetaDb, model: &BTreeMap<String, FlexList>, gone: &BTreeMap<String, Digest>) {
    for (name, list) in model {
        let loaded = load_list(meta, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((loaded.root(), loaded.block_count()), (list.root(), list.block_count()), "{name}");
    }
    for (name, root) in gone {
        match load_list(meta, name) {
            Err(StoreError::NotFound { .. }) => {}
            Ok(hidden) => assert_eq!(hidden.root(), *root, "{name}"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Save(u64),
    SaveEdited { base: usize, seed: u64 },
    Delete(usize),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => any::<u64>().prop_map(|s| Op::Save(s % 1000)),
        4 => (any::<usize>(), any::<u64>()).prop_map(|(base, seed)| Op::SaveEdited { base, seed }),
        2 => any::<usize>().prop_map(Op::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn saved_lists_match_the_model(ops in proptest::collection::vec(arb_op(), 1..60)) {
        let (_dir, meta) = open();
        let mut model: BTreeMap<String, FlexList> = BTreeMap::new();
        let mut gone = BTreeMap::new();
        for (i, op) in ops.into_iter().enumerate() {
            let name = format!("l{i}");
            let names: Vec<String> = model.keys().cloned().collect();
            let mut batch = MetaBatch::default();
            match op {
                Op::Save(seed) => {
                    let list = list_of(seed, 50 + seed % 3000);
                    save_list(&mut batch, &meta, &name, &list).unwrap();
                    model.insert(name, list);
                }
                Op::SaveEdited { base, seed } if !names.is_empty() => {
                    let base = &names[base % names.len()];
                    let mut list = model[base].clone();
                    let edits = edits_for(&list, seed);
                    list.apply(&edits).unwrap();
                    save_edited_list(&mut batch, &meta, &name, base, &list, &edits).unwrap();
                    model.insert(name, list);
                }
                Op::Delete(pick) if !names.is_empty() => {
                    let victim = names[pick % names.len()].clone();
                    let mut writer = ListWriter::new(&meta);
                    writer.delete(&victim).unwrap();
                    writer.finish(&mut batch);
                    let root = model.remove(&victim).expect("a live list").root();
                    gone.insert(victim, root);
                }
                _ => continue,
            }
            meta.commit(&batch).unwrap();
            check_model(&meta, &model, &gone);
        }
        // Deleting every list, in any order, leaves nothing behind.
        with_writer(&meta, |w| model.keys().for_each(|name| w.delete(name).unwrap()));
        prop_assert_eq!(list_keys(&meta), Vec::<Vec<u8>>::new());
    }
}

#[test]
fn a_deleted_base_stays_readable_for_its_deltas_and_goes_with_the_last() {
    let (_dir, meta) = open();
    let base = list_of(1, 5000);
    let mut v2 = base.clone();
    let edits = edits_for(&v2, 7);
    v2.apply(&edits).unwrap();
    // Both in one batch: one writer sees the other's changes.
    with_writer(&meta, |w| {
        w.save("v1", &base).unwrap();
        w.save_edited("v2", "v1", &v2, &edits).unwrap();
    });
    let delta_len = meta.get(b"root/v2").unwrap().unwrap().len();
    assert!(delta_len < 1024, "a delta of a few edits takes {delta_len} bytes");

    with_writer(&meta, |w| w.delete("v1").unwrap());
    assert_eq!(load_list(&meta, "v2").unwrap().root(), v2.root(), "v2 still loads through hidden v1");

    with_writer(&meta, |w| w.delete("v2").unwrap());
    assert_eq!(list_keys(&meta), Vec::<Vec<u8>>::new(), "v1 went with its last delta");
}

#[test]
fn a_long_chain_of_edits_is_cut_by_full_saves() {
    let (_dir, meta) = open();
    let mut list = list_of(2, 3000);
    let mut batch = MetaBatch::default();
    save_list(&mut batch, &meta, "v0", &list).unwrap();
    meta.commit(&batch).unwrap();
    let mut full = 0;
    for v in 1..=2 * (MAX_DELTA_DEPTH as u64 + 1) {
        let edits = edits_for(&list, v);
        list.apply(&edits).unwrap();
        let mut batch = MetaBatch::default();
        save_edited_list(&mut batch, &meta, &format!("v{v}"), &format!("v{}", v - 1), &list, &edits).unwrap();
        meta.commit(&batch).unwrap();
        // The manifest's first byte says full (1) or delta (2).
        full += usize::from(meta.get(format!("root/v{v}").as_bytes()).unwrap().unwrap()[0] == 1);
        assert_eq!(load_list(&meta, &format!("v{v}")).unwrap().root(), list.root());
    }
    assert_eq!(full, 2, "one full save after each {MAX_DELTA_DEPTH} deltas");
}

#[test]
fn a_delta_that_does_not_rebuild_its_root_or_lost_its_base_is_corrupt() {
    let (_dir, meta) = open();
    let base = list_of(3, 2000);
    let mut v2 = base.clone();
    let edits = edits_for(&v2, 5);
    v2.apply(&edits).unwrap();
    with_writer(&meta, |w| {
        w.save("v1", &base).unwrap();
        w.save_edited("v2", "v1", &v2, &edits).unwrap();
    });

    let mut manifest = meta.get(b"root/v2").unwrap().unwrap();
    manifest[5] ^= 1; // inside the saved root
    let mut batch = MetaBatch::default();
    batch.put(&b"root/v2"[..], manifest);
    meta.commit(&batch).unwrap();
    assert!(matches!(load_list(&meta, "v2"), Err(StoreError::Corrupt { .. })));

    let mut batch = MetaBatch::default();
    batch.delete(&b"root/v1"[..]);
    meta.commit(&batch).unwrap();
    assert!(matches!(load_list(&meta, "v2"), Err(StoreError::Corrupt { .. })));
    assert!(matches!(load_list(&meta, "v9"), Err(StoreError::NotFound { .. })));
}

#[test]
fn lists_survive_a_restart_share_chunks_and_corruption_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.redb");
    let blocks: Vec<Block> = (0..20_077u64).map(|i| Block::new(hash::data(&i.to_le_bytes()), 4096, i)).collect();
    let list = FlexList::build(&blocks).unwrap();
    {
        let meta = MetaDb::open(&path).unwrap();
        let mut batch = MetaBatch::default();
        save_list(&mut batch, &meta, "f1", &list).unwrap();
        meta.commit(&batch).unwrap();
    }
    let meta = MetaDb::open(&path).unwrap();
    let loaded = load_list(&meta, "f1").unwrap();
    assert_eq!((loaded.root(), loaded.total_len()), (list.root(), list.total_len()));
    assert_eq!(loaded.search(12_345_678).unwrap(), list.search(12_345_678).unwrap());
    assert!(matches!(load_list(&meta, "other"), Err(StoreError::NotFound { .. })));
    let chunks = chunk_count(&meta).unwrap();
    assert!(chunks >= 10, "{chunks} chunks for 20k blocks");

    // A second version with one block inserted shares all but about one chunk.
    let mut edited = list.clone();
    edited.insert(4096 * 9000, Block::new(hash::data(b"new"), 100, 99_999)).unwrap();
    let mut batch = MetaBatch::default();
    save_list(&mut batch, &meta, "f2", &edited).unwrap();
    meta.commit(&batch).unwrap();
    let after = chunk_count(&meta).unwrap();
    assert!(after <= chunks + 2, "an insert added {} chunks", after - chunks);
    assert_eq!(load_list(&meta, "f2").unwrap().root(), edited.root());
    assert_eq!(load_list(&meta, "f1").unwrap().root(), list.root());

    // Deleting both lists deletes every chunk; replacing one keeps the other whole.
    let short = FlexList::build(&blocks[..10]).unwrap();
    let mut writer = ListWriter::new(&meta);
    writer.save("f1", &short).unwrap();
    let mut batch = MetaBatch::default();
    writer.finish(&mut batch);
    meta.commit(&batch).unwrap();
    assert_eq!(load_list(&meta, "f1").unwrap().root(), short.root());
    assert_eq!(load_list(&meta, "f2").unwrap().root(), edited.root());
    let mut writer = ListWriter::new(&meta);
    writer.delete("f1").unwrap();
    writer.delete("f2").unwrap();
    let mut batch = MetaBatch::default();
    writer.finish(&mut batch);
    meta.commit(&batch).unwrap();
    assert_eq!(chunk_count(&meta).unwrap(), 0, "no chunk outlives its lists");
    assert!(meta.scan(b"lref/").unwrap().is_empty());

    // A flipped byte in a stored chunk is caught, not served.
    let mut batch = MetaBatch::default();
    save_list(&mut batch, &meta, "f1", &list).unwrap();
    meta.commit(&batch).unwrap();
    let (key, mut value) = meta.scan(b"lchunk/").unwrap().remove(0);
    value[3] ^= 1;
    let mut batch = MetaBatch::default();
    batch.put(key, value);
    meta.commit(&batch).unwrap();
    assert!(matches!(load_list(&meta, "f1"), Err(StoreError::Corrupt { .. })));
}
