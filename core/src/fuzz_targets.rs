//! Bodies of the fuzz targets in `fuzz/`: each feeds untrusted bytes to a decoder and, when the
//! bytes decode, to the verifier behind it. The test suite replays the committed corpus through
//! the same functions, so a crash found once stays fixed.
//!
//! A target may return any error; it must never panic, hang, or allocate without bound.

use crate::flexlist::{verify_multi_proof, verify_multi_update, Block, Edit, FlexList, MultiProof, UpdateProof};
use crate::hash::{self, Digest};
use crate::pdp::linear::LinearKey;
use crate::pdp::{prove, verify_possession, Challenge, ClientFile, FileId, Held, PossessionProof, SchemeId};
use std::sync::OnceLock;

mod aip;

pub use aip::{adict_group, adict_page_group, aip_messages, aip_seeds, namespace_group, Group};

/// A small fixed list that fuzzed proofs are checked against (seed proofs come from it).
pub fn reference_list() -> &'static FlexList {
    static LIST: OnceLock<FlexList> = OnceLock::new();
    LIST.get_or_init(|| {
        let blocks: Vec<Block> =
            (0..64u64).map(|i| Block::new(hash::data(&i.to_le_bytes()), 1 + (i % 9) as u32 * 100, i)).collect();
        FlexList::build(&blocks).expect("valid blocks")
    })
}

/// Challenge used against [`reference_list`].
pub fn reference_indices() -> Vec<u64> {
    let len = reference_list().total_len();
    vec![0, len / 3, len / 2, len - 1]
}

/// Edits used against [`reference_list`].
pub fn reference_edits() -> Vec<Edit> {
    let list = reference_list();
    let block = |s: u64| Block::new(hash::data(&s.to_be_bytes()), 77, s);
    vec![
        Edit::Modify { at: 5, block: block(1) },
        Edit::Insert { at: list.search(list.total_len() / 2).map_or(0, |l| l.start), block: block(2) },
        Edit::Remove { at: list.total_len() - 1 },
    ]
}

/// Target `multiproof`: decode a multi-proof and verify it against the reference root.
pub fn multiproof(data: &[u8]) {
    if let Ok(proof) = MultiProof::from_bytes(data.to_vec()) {
        let _ = proof.node_count();
        let _ = verify_multi_proof(&reference_list().root(), &reference_indices(), &proof);
        let _ = verify_multi_proof(&Digest::ZERO, &[0], &proof);
    }
}

/// Target `update_proof`: decode an update proof and verify it for the reference edits.
pub fn update_proof(data: &[u8]) {
    if let Ok(proof) = UpdateProof::from_bytes(data) {
        let _ = verify_multi_update(&reference_list().root(), &reference_edits(), &proof);
        let _ = verify_multi_update(&reference_list().root(), &[Edit::Remove { at: 0 }], &proof);
    }
}

/// A small tagged file, its client state and its provider's blocks (nonce = block_ref = index).
#[derive(Debug)]
pub struct ReferenceFile {
    pub key: LinearKey,
    pub client: ClientFile,
    pub list: FlexList,
    pub blocks: Vec<(Vec<u8>, Vec<u8>)>,
}

pub fn reference_file() -> &'static ReferenceFile {
    static FILE: OnceLock<ReferenceFile> = OnceLock::new();
    FILE.get_or_init(|| {
        let key = LinearKey::from_secret([5; 32]);
        let mut client = ClientFile::new(FileId([6; 16]));
        let data: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 20 + usize::from(i % 7) * 9]).collect();
        let tagged = client.tag_blocks(&key, &[0; 16], &data).expect("valid blocks");
        let list = FlexList::build(&tagged.iter().map(|t| t.leaf).collect::<Vec<_>>()).expect("valid blocks");
        client.uploaded(list.root(), list.total_len());
        let blocks = tagged.into_iter().zip(data).map(|(t, d)| (t.tag, d)).collect();
        ReferenceFile { key, client, list, blocks }
    })
}

/// The challenge fuzzed possession proofs answer.
pub fn reference_challenge() -> Challenge {
    Challenge::new([7; 32], 12)
}

/// An honest proof for [`reference_challenge`] over [`reference_file`].
pub fn reference_possession_proof() -> PossessionProof {
    let f = reference_file();
    prove(SchemeId::Linear, &f.list, &reference_challenge(), |r| {
        f.blocks.get(r as usize).map(|(tag, data)| Held { nonce: r, tag, data })
    })
    .expect("the reference provider holds every block")
}

/// Target `possession_proof`: decode a possession proof and verify it for the reference file.
pub fn possession_proof(data: &[u8]) {
    if let Ok(proof) = PossessionProof::from_bytes(data) {
        let f = reference_file();
        let c = &f.client;
        let _ = verify_possession(&f.key, &c.file, &c.root, c.len, &reference_challenge(), &proof);
    }
}

/// Target `linear_key`: decode a key file.
pub fn linear_key(data: &[u8]) {
    if let Ok(key) = LinearKey::from_bytes(data) {
        let _ = crate::pdp::Tagger::tag(&key, &FileId([0; 16]), 0, &[0; 16], b"x");
    }
}

/// Target `rsa_key`: decode a public and a secret RSA key; use what decodes.
pub fn rsa_key(data: &[u8]) {
    if let Ok(key) = crate::pdp::rsa::RsaPublicKey::from_bytes(data) {
        let _ = key.to_bytes();
    }
    if let Ok(key) = crate::pdp::rsa::RsaSecretKey::from_bytes(data) {
        let _ = crate::pdp::Tagger::tag(&key, &FileId([0; 16]), 0, &[0; 16], b"fuzz");
    }
}

/// Target `namespace_record`: decode an entry and a version record; re-encode what decodes
/// (every record has one encoding) and hash its leaf.
pub fn namespace_record(data: &[u8]) {
    if let Ok(entry) = crate::namespace::EntryRecord::from_bytes(data) {
        assert_eq!(entry.to_bytes(), data, "an entry record has one encoding");
        let _ = entry.leaf();
    }
    if let Ok(version) = crate::namespace::VersionRecord::from_bytes(data) {
        assert_eq!(&version.to_bytes()[..], data, "a version record has one encoding");
        let _ = version.leaf();
    }
}

/// Seeds of [`namespace_record`]: a valid entry and a valid version record.
pub fn reference_records() -> (Vec<u8>, Vec<u8>) {
    let mut entry = crate::namespace::EntryRecord::new("docs/report.pdf".into(), FileId([9; 16]));
    entry.versions = 3;
    entry.next_version = 4;
    let version = crate::namespace::VersionRecord {
        number: 3,
        scheme: SchemeId::Linear,
        file: FileId([9; 16]),
        root: hash::data(b"root"),
        len: 123_456,
        next_nonce: 77,
        time: 1_790_000_000,
    };
    (entry.to_bytes(), version.to_bytes().to_vec())
}

/// A small PoR level (level 2 of a log of capacity 16, written at time 8) with its sealed
/// checksums, the keys, and the picks of the audit that fuzzed proofs answer.
#[derive(Debug)]
pub struct ReferencePorPart {
    pub seal: crate::por::checksum::SealKey,
    pub sums: crate::por::checksum::ChecksumKey,
    pub part: crate::por::audit::Part,
    pub picks: Vec<crate::por::audit::Pick>,
    pub slots: Vec<u64>,
    pub sealed: Vec<crate::por::checksum::SealedChecksum>,
}

/// Slot width of [`reference_por_part`].
pub const POR_WIDTH: usize = 3;

pub fn reference_por_part() -> &'static ReferencePorPart {
    use crate::por::{audit, checksum, code, Region, SlotAddress};
    static PART: OnceLock<ReferencePorPart> = OnceLock::new();
    PART.get_or_init(|| {
        let seal = checksum::SealKey::new(&[11; 32]);
        let sums = checksum::ChecksumKey::new(&[12; 32], POR_WIDTH);
        let blocks: Vec<u64> = (0..4 * POR_WIDTH as u64).map(|i| i * 1_000_003 + 5).collect();
        let slots = code::encode(&blocks, POR_WIDTH, 4, 4);
        let part = audit::Part { region: Region::Level(2), slots: 8, time: 8 };
        let sealed = slots
            .chunks_exact(POR_WIDTH)
            .enumerate()
            .map(|(index, slot)| {
                seal.seal(SlotAddress { region: part.region, index: index as u64 }, part.time, sums.checksum(slot))
            })
            .collect();
        let picks = audit::picks(&[13; 32], &part, 5);
        ReferencePorPart { seal, sums, part, picks, slots, sealed }
    })
}

/// The honest answer to [`reference_por_part`]'s audit.
pub fn reference_por_proof() -> crate::por::audit::PartProof {
    let r = reference_por_part();
    crate::por::audit::prove_part(&r.picks, POR_WIDTH, |index| {
        let at = index as usize * POR_WIDTH;
        (&r.slots[at..at + POR_WIDTH], r.sealed[index as usize])
    })
}

/// Target `por_audit_proof`: decode an answer to one part of a PoR audit and verify it.
pub fn por_audit_proof(data: &[u8]) {
    let r = reference_por_part();
    if let Ok(proof) = crate::por::audit::PartProof::from_bytes(data, r.picks.len(), POR_WIDTH) {
        let _ = crate::por::audit::verify_part(&r.seal, &r.sums, &r.part, &r.picks, &proof);
    }
    let _ = crate::por::audit::PartProof::from_bytes(data, usize::MAX, usize::MAX);
}

/// A tree over U of 16 slots, some written, and the leaves a proof of slots 1, 5 and 6 shows.
pub fn reference_raw_tree() -> (crate::por::raw_tree::RawTree, Vec<(u64, crate::Digest)>) {
    use crate::por::checksum::SealedChecksum;
    use crate::por::raw_tree::{leaf_hash, RawTree};
    let mut tree = RawTree::new(4);
    let written: Vec<_> =
        [1u64, 2, 6, 11].iter().map(|&i| (i, leaf_hash(Some(&SealedChecksum::from_bytes([i as u8; 56]))))).collect();
    tree.set(&written);
    let leaves = [1, 5, 6].iter().map(|&i| (i, tree.leaf(i))).collect();
    (tree, leaves)
}

/// Target `por_raw_proof`: decode a proof over U's tree and compute the root it gives.
pub fn por_raw_proof(data: &[u8]) {
    let (tree, leaves) = reference_raw_tree();
    if let Ok(proof) = crate::por::raw_tree::RawProof::from_bytes(data) {
        let _ = crate::por::raw_tree::raw_root(tree.log_capacity(), &leaves, &proof);
    }
}

/// Valid PoR messages of one batch (with growth, so that every optional part is present).
#[derive(Debug)]
pub struct ReferencePorMessages {
    pub plan: crate::por::client::WritePlan,
    pub context: crate::por::client::WriteContext,
    pub written: crate::por::client::Written,
    pub read: crate::por::client::RawRead,
    pub region: crate::por::repair::RegionRead,
    pub slots: Vec<u64>,
}

pub fn reference_por_messages() -> ReferencePorMessages {
    use crate::por::{checksum, client, provider, Region};
    let seal = checksum::SealKey::new(&[21; 32]);
    let sums = checksum::ChecksumKey::grouped(&[22; 32], POR_WIDTH, 1);
    let (state, coded) = client::LogState::new(1, 1, &seal);
    let mut log = provider::ProviderLog::new(1, 1, POR_WIDTH, coded).expect("a valid log");
    let writes = [0, 1, 2];
    let slots: Vec<u64> = writes.iter().flat_map(|&i| [i + 1, i * 31 + 7, i * 1_000_003]).collect();
    let plan = client::plan(&state, &writes, true).expect("a valid batch");
    let context = log.context(&plan).expect("an honest provider");
    let written = client::write(&state, &plan, &context, &writes, &slots, &seal, &sums).expect("honest");
    log.apply(&plan, &writes, &slots, &written).expect("a valid batch");
    let read = log.read(&[0, 2]).expect("slots of U");
    let mut region = log.region_read(Region::Coded).expect("C");
    region.slots[1] = None;
    ReferencePorMessages { plan, context, written, read, region, slots }
}

/// Target `por_messages`: every decoder of the PoR log's messages on the same bytes.
pub fn por_messages(data: &[u8]) {
    use crate::por::{client, repair, wire};
    let _ = client::WritePlan::from_bytes(data);
    let _ = client::WriteContext::from_bytes(data);
    let _ = client::Written::from_upload_bytes(data, crate::por::code::Schedule::new(1, 0));
    let _ = client::RawRead::from_bytes(data);
    let _ = repair::RegionRead::from_bytes(data);
    let _ = wire::slots_from_bytes(data);
    let _ = wire::sealed_list_from_bytes(data);
    // The client's reader of a plan's answer in parts, as the answer to the reference plan.
    let seal = crate::por::checksum::SealKey::new(&[21; 32]);
    let sums = crate::por::checksum::ChecksumKey::grouped(&[22; 32], POR_WIDTH, 1);
    let (state, _) = client::LogState::new(1, 1, &seal);
    let plan = client::plan(&state, &[0, 1, 2], true).expect("a valid batch");
    let mut reader = crate::por::stream::ContextReader::new(&state, &plan, data.len() as u64, &seal, &sums)
        .expect("the reference plan");
    let (first, rest) = data.split_at(data.len() / 2);
    let _ = reader.feed(first).and_then(|()| reader.feed(rest)).and_then(|()| reader.finish().map(|_| ()));
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target by name, for the corpus replay.
pub const TARGETS: &[(&str, Target)] = &[
    ("multiproof", multiproof),
    ("update_proof", update_proof),
    ("possession_proof", possession_proof),
    ("linear_key", linear_key),
    ("rsa_key", rsa_key),
    ("namespace_record", namespace_record),
    ("por_audit_proof", por_audit_proof),
    ("por_raw_proof", por_raw_proof),
    ("por_messages", por_messages),
    ("aip_messages", aip_messages),
];
