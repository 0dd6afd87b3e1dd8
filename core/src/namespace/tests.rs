//! Hostile answers about the namespace caught at the pure level: small namespaces built
//! directly with [`FlexList::build`], honest proofs made the way the provider makes them, then
//! altered the ways a lying provider could alter them.

use super::*;

// ---- helpers: the provider's side, as `server/src/provider.rs` computes it ----

fn file(i: u8) -> FileId {
    FileId([i; 16])
}

fn version(f: FileId, number: u64) -> VersionRecord {
    VersionRecord {
        number,
        scheme: SchemeId::Linear,
        file: f,
        root: Digest([number as u8; 32]),
        len: 1000 * number,
        next_nonce: 10 * number,
        time: 1_700_000_000 + number,
    }
}

fn version_list(records: &[VersionRecord]) -> FlexList {
    FlexList::build(&records.iter().map(VersionRecord::leaf).collect::<Vec<_>>()).unwrap()
}

fn namespace_list(entries: &[EntryRecord]) -> FlexList {
    FlexList::build(&entries.iter().map(EntryRecord::leaf).collect::<Vec<_>>()).unwrap()
}

/// An entry for `name` with versions numbered `numbers` (of file `f`), and those records.
fn entry_with(name: &str, f: FileId, numbers: &[u64]) -> (EntryRecord, Vec<VersionRecord>) {
    let records: Vec<VersionRecord> = numbers.iter().map(|&n| version(f, n)).collect();
    let list = version_list(&records);
    let entry = EntryRecord {
        name: name.to_string(),
        file: f,
        versions_root: list.root(),
        versions: records.len() as u64,
        next_version: numbers.last().map_or(1, |n| n + 1),
    };
    (entry, records)
}

/// A namespace of `names` (sorted here), file i+1 each with versions 1..=i+1.
fn namespace(names: &[&str]) -> Vec<EntryRecord> {
    let mut names = names.to_vec();
    names.sort_unstable();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| entry_with(n, file(i as u8 + 1), &(1..=i as u64 + 1).collect::<Vec<_>>()).0)
        .collect()
}

fn root_len(entries: &[EntryRecord]) -> (Digest, u64) {
    let list = namespace_list(entries);
    (list.root(), list.total_len())
}

/// The provider's lookup: the position and the proof of the name or of its neighbours.
fn lookup(entries: &[EntryRecord], name: &str) -> (LookupProof, Found) {
    let len = entries.len() as u64;
    let index = entries.partition_point(|e| e.name.as_str() < name) as u64;
    let found = index < len && entries[index as usize].name == name;
    let indices = lookup_indices(index, len, found);
    let proof = if len == 0 { None } else { Some(namespace_list(entries).prove(&indices).unwrap()) };
    let answer = LookupProof { index, entries: indices.iter().map(|&i| entries[i as usize].clone()).collect(), proof };
    let found =
        if found { Found::At { index, entry: entries[index as usize].clone() } } else { Found::Absent { index } };
    (answer, found)
}

/// The provider's listing: every entry and one proof of all positions.
fn listing(entries: &[EntryRecord]) -> Option<MultiProof> {
    if entries.is_empty() {
        return None;
    }
    let all: Vec<u64> = (0..entries.len() as u64).collect();
    Some(namespace_list(entries).prove(&all).unwrap())
}

fn prove(entries: &[EntryRecord], indices: &[u64]) -> MultiProof {
    namespace_list(entries).prove(indices).unwrap()
}

fn inconsistent<T: std::fmt::Debug>(r: Result<T, NamespaceError>) {
    assert!(r.is_err(), "accepted: {r:?}");
}

const NAMES: [&str; 3] = ["b", "d", "f"];

// ---- honest lookups ----

#[test]
fn honest_lookups_find_present_and_place_absent_names() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    assert_eq!(len, 3, "entry leaves have length 1");
    for (i, name) in NAMES.iter().enumerate() {
        let (answer, want) = lookup(&entries, name);
        let got = verify_lookup(&root, len, name, &answer).unwrap();
        assert_eq!(got, want);
        assert_eq!(got, Found::At { index: i as u64, entry: entries[i].clone() });
    }
    // Before the first, between each pair, after the last.
    for (name, index) in [("a", 0), ("c", 1), ("cz", 1), ("e", 2), ("g", 3), ("zzz", 3)] {
        let (answer, _) = lookup(&entries, name);
        assert_eq!(verify_lookup(&root, len, name, &answer).unwrap(), Found::Absent { index }, "{name}");
    }
    // Names that share a prefix with a present one are not it.
    for (name, index) in [("b ", 1), ("bb", 1), ("d/x", 2)] {
        let (answer, _) = lookup(&entries, name);
        assert_eq!(verify_lookup(&root, len, name, &answer).unwrap(), Found::Absent { index }, "{name}");
    }
}

#[test]
fn honest_lookups_in_empty_and_single_namespaces() {
    let (root, len) = root_len(&[]);
    assert_eq!((root, len), (FlexList::new().root(), 0));
    let (answer, _) = lookup(&[], "x");
    assert!(answer.proof.is_none() && answer.entries.is_empty());
    assert_eq!(verify_lookup(&root, 0, "x", &answer).unwrap(), Found::Absent { index: 0 });

    let one = namespace(&["m"]);
    let (root, len) = root_len(&one);
    assert_eq!(
        verify_lookup(&root, len, "m", &lookup(&one, "m").0).unwrap(),
        Found::At { index: 0, entry: one[0].clone() }
    );
    assert_eq!(verify_lookup(&root, len, "a", &lookup(&one, "a").0).unwrap(), Found::Absent { index: 0 });
    assert_eq!(verify_lookup(&root, len, "z", &lookup(&one, "z").0).unwrap(), Found::Absent { index: 1 });
}

#[test]
fn an_empty_answer_for_a_non_empty_namespace_is_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    let empty = LookupProof { index: 0, entries: Vec::new(), proof: None };
    inconsistent(verify_lookup(&root, len, "d", &empty));
    inconsistent(verify_lookup(&root, len, "a", &empty));
    // And the other way round: a proof for a namespace the client knows is empty.
    let (root0, _) = root_len(&[]);
    let (answer, _) = lookup(&entries, "a");
    inconsistent(verify_lookup(&root0, 0, "a", &answer));
    let bogus = LookupProof { index: 0, entries: Vec::new(), proof: Some(prove(&entries, &[0])) };
    inconsistent(verify_lookup(&root0, 0, "a", &bogus));
}

// ---- hostile lookups ----

#[test]
fn a_present_name_claimed_absent_is_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    // "d" is at 1. Every absent claim, with honest proofs of the positions it names:
    // at 0: neighbour after = b (not after d); at 2: neighbours d, f (d is there, so the
    // answer claims found with two entries); at 3: neighbour before = f (not before d).
    for index in 0..=len {
        let indices = lookup_indices(index, len, false);
        let answer = LookupProof {
            index,
            entries: indices.iter().map(|&i| entries[i as usize].clone()).collect(),
            proof: Some(prove(&entries, &indices)),
        };
        inconsistent(verify_lookup(&root, len, "d", &answer));
    }
    // The neighbours of another gap, which do not bracket the name.
    let (other, _) = lookup(&entries, "e");
    assert_eq!(verify_lookup(&root, len, "e", &other).unwrap(), Found::Absent { index: 2 });
    inconsistent(verify_lookup(&root, len, "d", &other));
    let (first, _) = lookup(&entries, "a");
    inconsistent(verify_lookup(&root, len, "d", &first));
    let (last, _) = lookup(&entries, "z");
    inconsistent(verify_lookup(&root, len, "d", &last));
    // Neighbours that are not adjacent: b and f, proven at their own positions 0 and 2.
    let skip = LookupProof {
        index: 1,
        entries: vec![entries[0].clone(), entries[2].clone()],
        proof: Some(prove(&entries, &[0, 2])),
    };
    inconsistent(verify_lookup(&root, len, "d", &skip));
    // The same entries with the proof of the adjacent positions 0 and 1.
    let skip = LookupProof { proof: Some(prove(&entries, &[0, 1])), ..skip };
    inconsistent(verify_lookup(&root, len, "d", &skip));
}

#[test]
fn an_absent_name_claimed_present_is_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    // An invented entry for "c" at the gap's position, with the proof of that position.
    let (invented, _) = entry_with("c", file(9), &[1]);
    for index in [1, 2] {
        let answer = LookupProof { index, entries: vec![invented.clone()], proof: Some(prove(&entries, &[index])) };
        inconsistent(verify_lookup(&root, len, "c", &answer));
    }
    // The real "d" entry renamed "c".
    let mut renamed = entries[1].clone();
    renamed.name = "c".into();
    let answer = LookupProof { index: 1, entries: vec![renamed], proof: Some(prove(&entries, &[1])) };
    inconsistent(verify_lookup(&root, len, "c", &answer));
}

#[test]
fn wrong_indices_are_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    let (honest, _) = lookup(&entries, "d");
    // The right entry and proof, another index.
    for index in [0, 2, 3, 4, u64::MAX] {
        inconsistent(verify_lookup(&root, len, "d", &LookupProof { index, ..honest.clone() }));
    }
    // The right entry, the proof of the index claimed.
    for index in [0, 2] {
        let answer = LookupProof { index, entries: honest.entries.clone(), proof: Some(prove(&entries, &[index])) };
        inconsistent(verify_lookup(&root, len, "d", &answer));
    }
    // An absent name placed in the wrong gap, with honest proofs of that gap.
    for index in [0, 2, 3] {
        let indices = lookup_indices(index, len, false);
        let answer = LookupProof {
            index,
            entries: indices.iter().map(|&i| entries[i as usize].clone()).collect(),
            proof: Some(prove(&entries, &indices)),
        };
        inconsistent(verify_lookup(&root, len, "c", &answer));
    }
    // Past the end.
    let (after, _) = lookup(&entries, "z");
    inconsistent(verify_lookup(&root, len, "z", &LookupProof { index: 4, ..after.clone() }));
    inconsistent(verify_lookup(&root, len, "z", &LookupProof { index: u64::MAX, ..after }));
}

#[test]
fn swapped_entries_are_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    let (mut answer, _) = lookup(&entries, "c");
    assert_eq!(answer.entries.len(), 2);
    answer.entries.swap(0, 1);
    inconsistent(verify_lookup(&root, len, "c", &answer));
    // An entry served at the other's position.
    let (mut answer, _) = lookup(&entries, "d");
    answer.entries = vec![entries[2].clone()];
    inconsistent(verify_lookup(&root, len, "d", &answer));
    // A listing with two entries swapped.
    let mut swapped = entries.clone();
    swapped.swap(0, 2);
    inconsistent(verify_listing(&root, len, &swapped, listing(&entries).as_ref()));
}

#[test]
fn altered_entries_are_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    let alterations: [fn(&mut EntryRecord); 6] = [
        |e| e.name.push('x'),
        |e| e.file.0[3] ^= 1,
        |e| e.versions_root.0[0] ^= 1,
        |e| e.versions += 1,
        |e| e.versions -= 1,
        |e| e.next_version += 1,
    ];
    for (k, alter) in alterations.iter().enumerate() {
        // In a lookup of the name (renaming it makes it a lookup of "dx").
        let (mut answer, _) = lookup(&entries, "d");
        alter(&mut answer.entries[0]);
        let name = answer.entries[0].name.clone();
        inconsistent(verify_lookup(&root, len, &name, &answer));
        // As a neighbour of an absent name.
        let (mut answer, _) = lookup(&entries, "c");
        alter(&mut answer.entries[1]);
        let r = verify_lookup(&root, len, "c", &answer);
        assert!(r.is_err(), "alteration {k} accepted in a neighbour: {r:?}");
        // In a listing.
        let mut altered = entries.clone();
        alter(&mut altered[1]);
        let r = verify_listing(&root, len, &altered, listing(&entries).as_ref());
        assert!(r.is_err(), "alteration {k} accepted in a listing: {r:?}");
    }
}

#[test]
fn a_proof_for_another_root_is_rejected() {
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    // Another namespace of the same size and names, differing in one entry's versions.
    let mut other = entries.clone();
    other[1] = entry_with("d", other[1].file, &[1, 2, 3, 4]).0;
    let (other_root, other_len) = root_len(&other);
    assert_ne!(root, other_root);
    assert_eq!(len, other_len);
    let (answer, _) = lookup(&other, "d");
    assert!(verify_lookup(&other_root, other_len, "d", &answer).is_ok());
    inconsistent(verify_lookup(&root, len, "d", &answer));
    inconsistent(verify_listing(&root, len, &other, listing(&other).as_ref()));
    // The root of an older namespace (one name fewer).
    let older = &entries[..2];
    let (old_root, old_len) = root_len(older);
    let (answer, _) = lookup(&entries, "f");
    inconsistent(verify_lookup(&old_root, old_len, "f", &answer));
    let (answer, _) = lookup(&entries, "d");
    inconsistent(verify_lookup(&old_root, old_len, "d", &answer));
    // The right root, a size that is not the client's.
    let (answer, _) = lookup(&entries, "d");
    inconsistent(verify_lookup(&root, len + 1, "d", &answer));
    inconsistent(verify_lookup(&root, len - 1, "d", &answer));
}

// ---- listings ----

#[test]
fn honest_listings_verify() {
    for names in [&[][..], &["only"][..], &NAMES[..], &["a", "a/b", "a/c", "b", "é", "日本"][..]] {
        let entries = namespace(names);
        let (root, len) = root_len(&entries);
        verify_listing(&root, len, &entries, listing(&entries).as_ref()).unwrap();
    }
}

#[test]
fn a_listing_with_a_name_left_out_or_invented_is_rejected() {
    let entries = namespace(&["a", "b", "c", "d", "e"]);
    let (root, len) = root_len(&entries);
    let proof = listing(&entries);
    for hide in 0..entries.len() {
        let mut shown = entries.clone();
        shown.remove(hide);
        // With the honest proof of all positions.
        inconsistent(verify_listing(&root, len, &shown, proof.as_ref()));
        // With a proof of the positions shown.
        let some: Vec<u64> = (0..shown.len() as u64).collect();
        inconsistent(verify_listing(&root, len, &shown, Some(&prove(&entries, &some))));
        // With a proof of a namespace without the name (the client's size stays).
        inconsistent(verify_listing(&root, len, &shown, listing(&shown).as_ref()));
        // Or with the client's size lowered to match (the root still differs).
        inconsistent(verify_listing(&root, len - 1, &shown, listing(&shown).as_ref()));
    }
    // An invented name.
    let mut more = entries.clone();
    more.push(entry_with("z", file(50), &[1]).0);
    inconsistent(verify_listing(&root, len, &more, proof.as_ref()));
    inconsistent(verify_listing(&root, len, &more, listing(&more).as_ref()));
    // A name twice (the other left out).
    let mut twice = entries.clone();
    twice[4] = twice[3].clone();
    inconsistent(verify_listing(&root, len, &twice, proof.as_ref()));
    // Nothing at all.
    inconsistent(verify_listing(&root, len, &[], None));
    inconsistent(verify_listing(&root, len, &[], proof.as_ref()));
    // For the empty namespace: no entries and no proof only.
    let (root0, _) = root_len(&[]);
    verify_listing(&root0, 0, &[], None).unwrap();
    inconsistent(verify_listing(&root0, 0, &[], proof.as_ref()));
    inconsistent(verify_listing(&root0, 0, &entries[..1], listing(&entries[..1]).as_ref()));
}

#[test]
fn a_listing_out_of_order_is_rejected_even_under_its_own_root() {
    // A namespace whose leaves were (wrongly) stored out of order: the proof holds, the order
    // check does not.
    let mut entries = namespace(&NAMES);
    entries.swap(0, 1);
    let (root, len) = root_len(&entries);
    inconsistent(verify_listing(&root, len, &entries, listing(&entries).as_ref()));
    // A name twice in a row.
    let dup = vec![entries[0].clone(), entries[0].clone()];
    let (root, len) = root_len(&dup);
    inconsistent(verify_listing(&root, len, &dup, listing(&dup).as_ref()));
}

// ---- versions ----

fn version_proof(records: &[VersionRecord], index: u64) -> VersionProof {
    VersionProof { index, record: records[index as usize], proof: version_list(records).prove(&[index]).unwrap() }
}

#[test]
fn honest_versions_verify() {
    let (entry, records) = entry_with("f", file(1), &[1, 3, 4]);
    verify_version(&entry, None, &version_proof(&records, 2)).unwrap();
    for (i, r) in records.iter().enumerate() {
        verify_version(&entry, Some(r.number), &version_proof(&records, i as u64)).unwrap();
    }
    let all: Vec<u64> = (0..3).collect();
    verify_versions(&entry, &all, &records, &version_list(&records).prove(&all).unwrap()).unwrap();
}

#[test]
fn an_older_version_served_as_latest_is_rejected() {
    let (entry, records) = entry_with("f", file(1), &[1, 2, 3]);
    for index in [0, 1] {
        let answer = version_proof(&records, index);
        // It is a genuine version ...
        verify_version(&entry, Some(answer.record.number), &answer).unwrap();
        // ... but not the latest asked for.
        inconsistent(verify_version(&entry, None, &answer));
    }
    // A version asked for by number, another one served.
    inconsistent(verify_version(&entry, Some(3), &version_proof(&records, 1)));
    inconsistent(verify_version(&entry, Some(2), &version_proof(&records, 2)));
    // The latest record claimed at another index, or the right index with an older record.
    let mut moved = version_proof(&records, 2);
    moved.index = 1;
    inconsistent(verify_version(&entry, None, &moved));
    let mut older = version_proof(&records, 2);
    older.record = records[1];
    inconsistent(verify_version(&entry, None, &older));
    // The latest of a rolled-back version list (the entry before version 3 was added).
    let (_, before) = entry_with("f", file(1), &[1, 2]);
    inconsistent(verify_version(&entry, None, &version_proof(&before, 1)));
}

#[test]
fn a_version_record_from_another_file_is_rejected() {
    let (entry, records) = entry_with("f", file(1), &[1, 2]);
    let (other_entry, other) = entry_with("g", file(2), &[1, 2]);
    // The other file's version with its own (valid) proof.
    let answer = version_proof(&other, 1);
    verify_version(&other_entry, None, &answer).unwrap();
    inconsistent(verify_version(&entry, None, &answer));
    inconsistent(verify_version(&entry, Some(2), &answer));
    // Our proof, the other file's record.
    let mut swapped = version_proof(&records, 1);
    swapped.record = other[1];
    inconsistent(verify_version(&entry, None, &swapped));
    // A version list that holds a record of another file, under an entry that commits to it:
    // the proof holds, the record does not fit the entry.
    let mixed = vec![records[0], version(file(2), 2)];
    let list = version_list(&mixed);
    let bad_entry = EntryRecord { versions_root: list.root(), ..entry.clone() };
    inconsistent(verify_version(&bad_entry, None, &version_proof(&mixed, 1)));
    inconsistent(verify_version(&bad_entry, Some(2), &version_proof(&mixed, 1)));
    // Numbers the entry has not given out yet, or out of order.
    for bad in [vec![records[0], version(file(1), 7)], vec![records[1], records[0]]] {
        let list = version_list(&bad);
        let e = EntryRecord { versions_root: list.root(), ..entry.clone() };
        let all = [0, 1];
        inconsistent(verify_versions(&e, &all, &bad, &list.prove(&all).unwrap()));
    }
}

/// A log must show every version: a provider that leaves out the newest ones proves a
/// shorter prefix, which [`verify_log`] rejects.
#[test]
fn a_log_with_versions_left_out_is_rejected() {
    let (entry, records) = entry_with("f", file(1), &[1, 2, 3]);
    let list = version_list(&records);
    let all: Vec<u64> = (0..records.len() as u64).collect();
    verify_log(&entry, &records, &list.prove(&all).unwrap()).unwrap();
    for shown in 1..records.len() {
        let indices: Vec<u64> = (0..shown as u64).collect();
        let r = verify_log(&entry, &records[..shown], &list.prove(&indices).unwrap());
        assert!(r.is_err(), "a log of {shown} of {} versions verified as complete", records.len());
    }
}

// ---- commits ----

/// The provider's side of a commit, as `Provider::commit` computes it: the version-list update
/// (unless removing) and the namespace update, and the provider's new namespace.
fn provider_commit(
    entries: &[EntryRecord],
    versions: &[VersionRecord],
    name: &str,
    change: &Change,
) -> (CommitProof, Vec<EntryRecord>, FlexList) {
    let (_, found) = lookup(entries, name);
    let plan = commit_edits(&found, change).unwrap();
    let versions_update = match change {
        Change::Remove => None,
        _ => {
            let mut list = version_list(versions);
            let proof = list.multi_update(&plan.versions).unwrap();
            Some((proof, list.root(), list.total_len()))
        }
    };
    let (edit, new_entry) = plan.namespace_edit(name, change, versions_update.as_ref().map(|(_, r, n)| (*r, *n)));
    let mut ns = namespace_list(entries);
    let namespace = ns.multi_update(&[edit]).unwrap();
    let mut after = entries.to_vec();
    match (new_entry, plan.exists) {
        (Some(e), true) => after[plan.index as usize] = e,
        (Some(e), false) => after.insert(plan.index as usize, e),
        (None, _) => {
            after.remove(plan.index as usize);
        }
    }
    (CommitProof { versions: versions_update.map(|(p, _, _)| p), namespace }, after, ns)
}

/// Checks an honest commit end to end: the client's verified root is the provider's, and is
/// the root of a namespace built fresh from the entries after the change.
fn check_honest_commit(
    entries: &[EntryRecord],
    versions: &[VersionRecord],
    name: &str,
    change: &Change,
) -> (Committed, Vec<EntryRecord>) {
    let (root, len) = root_len(entries);
    let (answer, _) = lookup(entries, name);
    let found = verify_lookup(&root, len, name, &answer).unwrap();
    let (proof, after, ns) = provider_commit(entries, versions, name, change);
    let done = verify_commit(&root, len, name, &found, change, &proof).unwrap();
    assert_eq!((done.ns_root, done.ns_len), (ns.root(), ns.total_len()));
    assert_eq!((done.ns_root, done.ns_len), root_len(&after), "history-independent: a fresh build agrees");
    (done, after)
}

#[test]
fn honest_appends_verify_and_give_the_providers_root() {
    let mut entries = namespace(&NAMES);
    // A new name in each gap and at each end.
    for name in ["a", "c", "e", "g"] {
        let f = file(name.as_bytes()[0]);
        let (done, after) = check_honest_commit(&entries, &[], name, &Change::Append(version(f, 1)));
        let entry = done.entry.unwrap();
        assert_eq!((entry.name.as_str(), entry.versions, entry.next_version), (name, 1, 2));
        assert_eq!(entry.versions_root, version_list(&[version(f, 1)]).root());
        entries = after;
    }
    assert_eq!(entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "d", "e", "f", "g"]);
    // A new version of an existing name.
    let (entry, records) = entry_with("d", file(2), &[1, 2]);
    let at = entries.iter().position(|e| e.name == "d").unwrap();
    entries[at] = entry;
    let (done, _) = check_honest_commit(&entries, &records, "d", &Change::Append(version(file(2), 3)));
    let entry = done.entry.unwrap();
    assert_eq!((entry.versions, entry.next_version), (3, 4));
    assert_eq!(entry.versions_root, version_list(&[records[0], records[1], version(file(2), 3)]).root());
    // The first name of an empty namespace.
    let (done, after) = check_honest_commit(&[], &[], "x", &Change::Append(version(file(7), 1)));
    assert_eq!((done.ns_len, after.len()), (1, 1));
}

#[test]
fn honest_prunes_and_removes_verify() {
    let (entry, records) = entry_with("d", file(2), &[1, 2, 3, 4]);
    let mut entries = namespace(&NAMES);
    entries[1] = entry;
    let (done, _) = check_honest_commit(&entries, &records, "d", &Change::Prune(vec![2, 0]));
    let e = done.entry.unwrap();
    assert_eq!((e.versions, e.next_version), (2, 5), "pruning never gives numbers out again");
    assert_eq!(e.versions_root, version_list(&[records[1], records[3]]).root());
    // Removal of a name, first, middle and last.
    for name in NAMES {
        let (done, after) = check_honest_commit(&entries, &[], name, &Change::Remove);
        assert!(done.entry.is_none());
        assert_eq!(done.ns_len, 2);
        assert!(after.iter().all(|e| e.name != name));
    }
    // The last name: back to the empty namespace's root.
    let one = namespace(&["x"]);
    let (done, _) = check_honest_commit(&one, &[], "x", &Change::Remove);
    assert_eq!((done.ns_root, done.ns_len), (FlexList::new().root(), 0));
}

#[test]
fn commits_the_change_does_not_allow_are_refused_by_both_sides() {
    let (entry, _) = entry_with("d", file(2), &[1, 2]);
    let found = Found::At { index: 1, entry };
    // A version number that does not follow, another file, pruning everything or nothing.
    inconsistent(commit_edits(&found, &Change::Append(version(file(2), 2))));
    inconsistent(commit_edits(&found, &Change::Append(version(file(2), 4))));
    inconsistent(commit_edits(&found, &Change::Append(version(file(3), 3))));
    inconsistent(commit_edits(&found, &Change::Prune(vec![0, 1])));
    inconsistent(commit_edits(&found, &Change::Prune(vec![])));
    inconsistent(commit_edits(&found, &Change::Prune(vec![2])));
    // A new name starts at version 1; an absent name cannot be pruned or removed.
    let absent = Found::Absent { index: 0 };
    inconsistent(commit_edits(&absent, &Change::Append(version(file(2), 2))));
    inconsistent(commit_edits(&absent, &Change::Prune(vec![0])));
    inconsistent(commit_edits(&absent, &Change::Remove));
}

#[test]
fn a_provider_applying_another_change_is_rejected() {
    let (entry, records) = entry_with("d", file(2), &[1, 2]);
    let mut entries = namespace(&NAMES);
    entries[1] = entry.clone();
    let (root, len) = root_len(&entries);
    let new_version = version(file(2), 3);
    let change = Change::Append(new_version);
    let (answer, _) = lookup(&entries, "d");
    let found = verify_lookup(&root, len, "d", &answer).unwrap();
    let (honest, _, _) = provider_commit(&entries, &records, "d", &change);
    verify_commit(&root, len, "d", &found, &change, &honest).unwrap();

    // Another version record appended (another root, time or length).
    for other in [
        VersionRecord { root: Digest([0xEE; 32]), ..new_version },
        VersionRecord { time: new_version.time + 1, ..new_version },
        VersionRecord { len: new_version.len + 1, ..new_version },
    ] {
        let (lie, _, _) = provider_commit(&entries, &records, "d", &Change::Append(other));
        inconsistent(verify_commit(&root, len, "d", &found, &change, &lie));
    }
    // The version inserted at another position of the version list.
    let mut list = version_list(&records);
    let versions = list.multi_update(&[Edit::Insert { at: 0, block: new_version.leaf() }]).unwrap();
    let mut moved = entry.clone();
    moved.versions_root = list.root();
    moved.versions = 3;
    moved.next_version = 4;
    let mut ns = namespace_list(&entries);
    let namespace = ns.multi_update(&[Edit::Modify { at: 1, block: moved.leaf() }]).unwrap();
    inconsistent(verify_commit(&root, len, "d", &found, &change, &CommitProof { versions: Some(versions), namespace }));
    // The right version list, the entry put at another position of the namespace (inserted
    // as a new name after "f" instead of modified in place).
    let (honest_versions, _, _) = provider_commit(&entries, &records, "d", &change);
    let (edit, new_entry) = commit_edits(&found, &change).unwrap().namespace_edit(
        "d",
        &change,
        Some((honest_versions.versions.as_ref().unwrap().new_root, 3)),
    );
    assert!(matches!(edit, Edit::Modify { at: 1, .. }));
    let mut ns = namespace_list(&entries);
    let namespace = ns.multi_update(&[Edit::Insert { at: 3, block: new_entry.unwrap().leaf() }]).unwrap();
    let lie = CommitProof { versions: honest_versions.versions.clone(), namespace };
    inconsistent(verify_commit(&root, len, "d", &found, &change, &lie));
    // The update applied, but the old version list's entry left in place (a silent rollback).
    let mut ns = namespace_list(&entries);
    let namespace = ns.multi_update(&[Edit::Modify { at: 1, block: entry.leaf() }]).unwrap();
    let lie = CommitProof { versions: honest_versions.versions.clone(), namespace };
    inconsistent(verify_commit(&root, len, "d", &found, &change, &lie));
    // A prune that drops another version than asked.
    let (other_prune, _, _) = provider_commit(&entries, &records, "d", &Change::Prune(vec![1]));
    inconsistent(verify_commit(&root, len, "d", &found, &Change::Prune(vec![0]), &other_prune));
    // A remove of another name.
    let (other_remove, _, _) = provider_commit(&entries, &[], "f", &Change::Remove);
    inconsistent(verify_commit(&root, len, "d", &found, &Change::Remove, &other_remove));
    // Proofs missing or superfluous for the change.
    let (remove, _, _) = provider_commit(&entries, &[], "d", &Change::Remove);
    inconsistent(verify_commit(&root, len, "d", &found, &change, &remove));
    inconsistent(verify_commit(&root, len, "d", &found, &Change::Remove, &honest));
    // A new name inserted at another gap than the verified one.
    let (answer, _) = lookup(&entries, "c");
    let absent = verify_lookup(&root, len, "c", &answer).unwrap();
    assert_eq!(absent, Found::Absent { index: 1 });
    let first = Change::Append(version(file(9), 1));
    let (honest_new, _, _) = provider_commit(&entries, &[], "c", &first);
    verify_commit(&root, len, "c", &absent, &first, &honest_new).unwrap();
    let plan = commit_edits(&absent, &first).unwrap();
    let (edit, _) = plan.namespace_edit("c", &first, Some((honest_new.versions.as_ref().unwrap().new_root, 1)));
    let Edit::Insert { block, .. } = edit else { panic!("a new name is an insert") };
    let mut ns = namespace_list(&entries);
    let namespace = ns.multi_update(&[Edit::Insert { at: 3, block }]).unwrap();
    let lie = CommitProof { versions: honest_new.versions.clone(), namespace };
    inconsistent(verify_commit(&root, len, "c", &absent, &first, &lie));
    // An honest commit against another root (the client's is older).
    let (old_root, _) = root_len(&entries[..2]);
    inconsistent(verify_commit(&old_root, len, "d", &found, &change, &honest));
}

// ---- record encodings ----

#[test]
fn records_round_trip() {
    let names: [&str; 5] = ["a", "docs/report.bin", "é日本", &"n".repeat(MAX_NAME_LEN), &"é".repeat(MAX_NAME_LEN / 2)];
    for (i, name) in names.iter().enumerate() {
        check_name(name).unwrap();
        let (mut e, _) = entry_with(name, file(i as u8), &[1, 2, 3]);
        e.next_version = 1 << (7 * i as u32 + 3);
        let bytes = e.to_bytes();
        assert_eq!(EntryRecord::from_bytes(&bytes).unwrap(), e);
        e.versions = u64::MAX;
        e.next_version = u64::MAX;
        assert_eq!(EntryRecord::from_bytes(&e.to_bytes()).unwrap(), e);
    }
    let empty = EntryRecord::new("x".into(), file(3));
    assert_eq!(EntryRecord::from_bytes(&empty.to_bytes()).unwrap(), empty);
    for scheme in [SchemeId::Linear, SchemeId::Rsa1024, SchemeId::Rsa2048] {
        let v = VersionRecord { scheme, number: u64::MAX, len: u64::MAX, ..version(file(4), 9) };
        let bytes = v.to_bytes();
        assert_eq!(bytes.len(), VersionRecord::ENCODED_LEN);
        assert_eq!(VersionRecord::from_bytes(&bytes).unwrap(), v);
    }
}

#[test]
fn every_truncation_and_trailing_byte_is_an_error() {
    let (e, _) = entry_with("docs/é.bin", file(5), &[1, 2]);
    let bytes = e.to_bytes();
    for cut in 0..bytes.len() {
        assert!(EntryRecord::from_bytes(&bytes[..cut]).is_err(), "entry cut at {cut}");
    }
    for extra in [&[0u8][..], &[0xff], &[1, 2, 3]] {
        let mut long = bytes.clone();
        long.extend_from_slice(extra);
        assert_eq!(EntryRecord::from_bytes(&long), Err(RecordError::TrailingBytes));
    }
    let v = version(file(5), 2).to_bytes();
    for cut in 0..v.len() {
        assert!(VersionRecord::from_bytes(&v[..cut]).is_err(), "version cut at {cut}");
    }
    let mut long = v.to_vec();
    long.push(0);
    assert_eq!(VersionRecord::from_bytes(&long), Err(RecordError::TrailingBytes));
    // Unknown tag schemes.
    for s in [0u8, 4, 0xff] {
        let mut bad = v;
        bad[8] = s;
        assert_eq!(VersionRecord::from_bytes(&bad), Err(RecordError::Scheme(s)));
    }
}

/// An entry's bytes with an arbitrary name field (length and bytes) and valid fields after it.
fn entry_bytes_with_name(len: u64, name: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, len);
    out.extend_from_slice(name);
    out.extend_from_slice(&[7; 16]);
    out.extend_from_slice(&[8; 32]);
    put_varint(&mut out, 1);
    put_varint(&mut out, 2);
    out
}

#[test]
fn bad_names_are_rejected() {
    let too_long = "n".repeat(MAX_NAME_LEN + 1);
    let bad: [&str; 9] = ["", "a\nb", "\t", "tab\there", "nul\0", "del\u{7f}", "c1\u{85}", "\u{9b}", &too_long];
    for name in bad {
        assert!(matches!(check_name(name), Err(RecordError::BadName(_))), "{name:?}");
        let e = EntryRecord { name: name.to_string(), ..EntryRecord::new(String::new(), file(1)) };
        assert!(matches!(EntryRecord::from_bytes(&e.to_bytes()), Err(RecordError::BadName(_))), "{name:?}");
    }
    // The error names at most 80 characters of the name.
    let Err(RecordError::BadName(shown)) = check_name(&"\u{1}".repeat(5000)) else { panic!() };
    assert_eq!(shown.chars().count(), 80);
    // Not UTF-8.
    for name in [&[0xffu8][..], &[0xc3], &[b'a', 0x80], &[0xed, 0xa0, 0x80]] {
        let bytes = entry_bytes_with_name(name.len() as u64, name);
        assert!(matches!(EntryRecord::from_bytes(&bytes), Err(RecordError::BadName(_))), "{name:?}");
    }
    // Declared lengths beyond the limit, with or without the bytes behind them, never panic
    // and never allocate the declared size.
    for len in [MAX_NAME_LEN as u64 + 1, 1 << 20, u64::MAX >> 1, u64::MAX] {
        let short = entry_bytes_with_name(len, b"abc");
        assert!(EntryRecord::from_bytes(&short).is_err(), "{len}");
        let long = entry_bytes_with_name(len, too_long.as_bytes());
        assert!(EntryRecord::from_bytes(&long).is_err(), "{len}");
    }
    // A name of exactly the limit is fine; its declared length one more is not.
    let max = "m".repeat(MAX_NAME_LEN);
    assert!(EntryRecord::from_bytes(&entry_bytes_with_name(MAX_NAME_LEN as u64, max.as_bytes())).is_ok());
    let mut plus = max.clone().into_bytes();
    plus.push(b'm');
    assert!(EntryRecord::from_bytes(&entry_bytes_with_name(plus.len() as u64, &plus)).is_err());
    // Non-canonical and overlong varints in the length.
    let mut padded = vec![0x81, 0x00];
    padded.extend_from_slice(&entry_bytes_with_name(1, b"a")[1..]);
    assert!(EntryRecord::from_bytes(&padded).is_err());
    assert!(EntryRecord::from_bytes(&[0xff; 11]).is_err());
}

#[test]
fn record_decoding_never_panics_on_any_short_input() {
    // Every input of up to two bytes, and every single-byte change of valid records.
    for a in 0..=255u8 {
        let _ = EntryRecord::from_bytes(&[a]);
        let _ = VersionRecord::from_bytes(&[a]);
        for b in [0u8, 1, 0x7f, 0x80, 0xff] {
            let _ = EntryRecord::from_bytes(&[a, b]);
            let _ = VersionRecord::from_bytes(&[a, b]);
        }
    }
    let (e, _) = entry_with("abc", file(6), &[1]);
    let good = e.to_bytes();
    for i in 0..good.len() {
        for x in [1u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= x;
            if let Ok(d) = EntryRecord::from_bytes(&bad) {
                assert_eq!(d.to_bytes(), bad, "a decoded record re-encodes to its bytes");
            }
        }
    }
}

// ---- lengths moved between proven leaves and their unopened neighbours ----

fn forged(proof: &MultiProof) -> Vec<MultiProof> {
    // Proofs here open a few dozen nodes at most: 200 covers every (leaf, neighbour) pair.
    (0..200)
        .filter_map(|which| crate::flexlist::tamper::move_length(proof.as_bytes(), which, 1).unwrap())
        .map(|bytes| MultiProof::from_bytes(bytes).unwrap())
        .collect()
}

fn root_mismatch<T: std::fmt::Debug>(r: Result<T, NamespaceError>) {
    assert!(matches!(r, Err(NamespaceError::Proof(ProofError::RootMismatch))), "{r:?}");
}

#[test]
fn stretched_leaves_in_namespace_and_version_proofs_are_caught() {
    let names: Vec<String> = (0..40).map(|i| format!("n{i:02}")).collect();
    let entries = namespace(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let (root, len) = root_len(&entries);
    // A lookup of a present name and of an absent one (two neighbours proven).
    for name in ["n17", "n17x"] {
        let (answer, _) = lookup(&entries, name);
        let lies = forged(answer.proof.as_ref().unwrap());
        assert!(!lies.is_empty(), "{name}: nothing to forge");
        for proof in lies {
            root_mismatch(verify_lookup(&root, len, name, &LookupProof { proof: Some(proof), ..answer.clone() }));
        }
    }
    // One version of a long version list.
    let numbers: Vec<u64> = (1..=30).collect();
    let (entry, records) = entry_with("f", file(1), &numbers);
    let honest = version_proof(&records, 12);
    verify_version(&entry, Some(13), &honest).unwrap();
    for proof in forged(&honest.proof) {
        root_mismatch(verify_version(&entry, Some(13), &VersionProof { proof, ..honest.clone() }));
    }
}

#[test]
fn stretched_leaves_in_a_commit_proof_are_caught() {
    let (entry, records) = entry_with("d", file(2), &[1, 2]);
    let names: Vec<String> = (0..40).map(|i| format!("n{i:02}")).collect();
    let mut entries = namespace(&names.iter().map(String::as_str).collect::<Vec<_>>());
    entries[20] = EntryRecord { name: "n20".into(), ..entry };
    let (root, len) = root_len(&entries);
    let change = Change::Append(version(file(2), 3));
    let (answer, _) = lookup(&entries, "n20");
    let found = verify_lookup(&root, len, "n20", &answer).unwrap();
    let (honest, _, _) = provider_commit(&entries, &records, "n20", &change);
    verify_commit(&root, len, "n20", &found, &change, &honest).unwrap();
    let lies = forged(&honest.namespace.proof);
    assert!(!lies.is_empty());
    for proof in lies {
        let lie = CommitProof { namespace: UpdateProof { proof, ..honest.namespace.clone() }, ..honest.clone() };
        let r = verify_commit(&root, len, "n20", &found, &change, &lie);
        assert!(matches!(r, Err(NamespaceError::Update(UpdateVerifyError::Proof(ProofError::RootMismatch)))), "{r:?}");
    }
}

#[test]
fn a_commit_checked_against_the_wrong_namespace_size_is_refused() {
    // The sizes after a commit must follow from the sizes before: a client whose size is off
    // (or a provider whose answer implies another) stops at the count check.
    let entries = namespace(&NAMES);
    let (root, len) = root_len(&entries);
    for (name, change) in [("c", Change::Append(version(file(9), 1))), ("d", Change::Remove)] {
        let (answer, _) = lookup(&entries, name);
        let found = verify_lookup(&root, len, name, &answer).unwrap();
        let versions: Vec<VersionRecord> =
            if name == "d" { vec![version(file(2), 1), version(file(2), 2)] } else { vec![] };
        let (proof, _, _) = provider_commit(&entries, &versions, name, &change);
        verify_commit(&root, len, name, &found, &change, &proof).unwrap();
        for wrong in [len + 1, len - 1] {
            let r = verify_commit(&root, wrong, name, &found, &change, &proof);
            assert_eq!(
                r,
                Err(NamespaceError::Inconsistent("the namespace size after the commit is not what the change implies")),
                "{name} with size {wrong}"
            );
        }
    }
}
