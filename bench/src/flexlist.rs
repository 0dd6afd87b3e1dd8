//! `vouch bench flexlist`: FlexList build, multi-proofs and batched updates (paper 000, Sec. 4).
//!
//! Workload: 2 KB blocks whose tags are SHA-256 digests (so levels are as random as real tags'),
//! built sequentially and with the parallel build of Sec. 3.1; 460 random challenges; batches of
//! 300 edits (an even mix of modify / insert / remove) on consecutive or random blocks, each
//! applied as one multiUpdate and as 300 single updates. Baselines in the same run: the raw
//! SHA-256 rate over a 82-byte node input, and the `rs_merkle` crate building a binary Merkle
//! tree over the same number of leaves.

use crate::measure::{check, min_time, min_time_with, ms, targets_text, SelfCheckFailed, Target};
use rand::{rngs::StdRng, seq::index::sample, Rng, SeedableRng};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use vouch_core::{hash, verify_multi_proof, verify_multi_update, Block, Edit, FlexList, UpdateProof};

/// Block size of the workload, as in the paper's experiments.
pub const BLOCK_SIZE: u32 = 2048;
/// Blocks of the list that proofs and updates run on.
pub const WORKING_BLOCKS: usize = 500_000;
const CHALLENGES: usize = 460;
const BATCH: usize = 300;

pub use crate::measure::Options;

/// Every figure of one run.
#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    /// Threads of the parallel build (the cores this process may use).
    pub threads: usize,
    pub block_size: u32,
    pub baseline: Baseline,
    pub builds: Vec<BuildFigure>,
    pub proof: ProofFigure,
    pub updates: Vec<UpdateFigure>,
    pub memory: MemoryFigure,
    pub targets: Vec<Target>,
}

#[derive(Debug, Serialize)]
pub struct Baseline {
    /// SHA-256 of a 82-byte input, one thread.
    pub raw_hash_82b_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct BuildFigure {
    pub blocks: usize,
    pub one_thread_s: f64,
    pub all_threads_s: f64,
    pub speedup: f64,
    /// Nodes of the list: each is hashed once during a build.
    pub nodes: usize,
    pub node_hashes_per_s: f64,
    pub node_hashes_vs_raw: f64,
    /// `rs_merkle` building a tree over the same number of leaves, one thread.
    pub rs_merkle_s: f64,
    pub rs_merkle_hashes_per_s: f64,
    pub node_hashes_vs_rs_merkle: f64,
}

#[derive(Debug, Serialize)]
pub struct ProofFigure {
    pub blocks: usize,
    pub challenges: usize,
    pub gen_ms: f64,
    pub verify_ms: f64,
    pub proof_bytes: usize,
    pub proof_nodes: usize,
}

#[derive(Debug, Serialize)]
pub struct UpdateFigure {
    /// `consecutive` or `random` blocks.
    pub pattern: &'static str,
    pub edits: usize,
    pub server_multi_ms: f64,
    pub server_one_by_one_ms: f64,
    pub client_multi_ms: f64,
    pub client_one_by_one_ms: f64,
    pub proof_bytes_multi: usize,
    pub proof_bytes_one_by_one: usize,
}

#[derive(Debug, Serialize)]
pub struct MemoryFigure {
    pub blocks: usize,
    pub bytes_per_block: f64,
}

/// Runs the benchmark; `progress` hears a line per step.
pub fn run(opts: Options, mut progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let threads = rayon::current_num_threads();
    let runs = if opts.quick { 3 } else { 5 };
    let sizes: &[usize] = if opts.quick { &[100_000, 500_000] } else { &[100_000, 500_000, 1_000_000, 4_000_000] };

    progress("baseline: raw SHA-256 of 82-byte inputs");
    let raw_hash_82b_per_s = raw_hash_rate(runs);

    let mut builds = Vec::new();
    let mut memory = None;
    let mut working = None;
    for &n in sizes {
        progress(&format!("build: {n} blocks"));
        let blocks = make_blocks(n, 1);
        let size_runs = if n > 1_000_000 { 3 } else { runs };
        let (one, list) = min_time(size_runs, || FlexList::build(&blocks).expect("valid blocks"));
        let (all, parallel) = min_time(size_runs, || FlexList::build_parallel(&blocks, threads).expect("valid blocks"));
        check(parallel.root() == list.root(), || format!("parallel build of {n} blocks gave another root"))?;
        drop(parallel);
        let (merkle, merkle_root) = min_time(size_runs, || rs_merkle_root(&blocks));
        black_box(merkle_root);
        let nodes = list.node_count();
        let node_hashes_per_s = nodes as f64 / one.as_secs_f64();
        let rs_merkle_hashes_per_s = (2 * n - 1) as f64 / merkle.as_secs_f64();
        builds.push(BuildFigure {
            blocks: n,
            one_thread_s: one.as_secs_f64(),
            all_threads_s: all.as_secs_f64(),
            speedup: one.as_secs_f64() / all.as_secs_f64(),
            nodes,
            node_hashes_per_s,
            node_hashes_vs_raw: node_hashes_per_s / raw_hash_82b_per_s,
            rs_merkle_s: merkle.as_secs_f64(),
            rs_merkle_hashes_per_s,
            node_hashes_vs_rs_merkle: node_hashes_per_s / rs_merkle_hashes_per_s,
        });
        memory = Some(MemoryFigure { blocks: n, bytes_per_block: list.memory_bytes() as f64 / n as f64 });
        if n == WORKING_BLOCKS {
            working = Some(list);
        }
    }
    let list = working.expect("the sizes include the working size");
    let memory = memory.expect("at least one size");

    progress("genMultiProof / verifyMultiProof");
    let proof = proof_figure(&list, runs * 4)?;

    let mut updates = Vec::new();
    for pattern in ["consecutive", "random"] {
        progress(&format!("updates: {BATCH} {pattern}"));
        updates.push(update_figure(&list, pattern, runs * 2)?);
    }

    let targets = targets(threads, &builds, &proof, &updates, &memory);
    Ok(Report {
        quick: opts.quick,
        threads,
        block_size: BLOCK_SIZE,
        baseline: Baseline { raw_hash_82b_per_s },
        builds,
        proof,
        updates,
        memory,
        targets,
    })
}

/// `n` blocks of [`BLOCK_SIZE`] bytes; `seed` separates workloads.
fn make_blocks(n: usize, seed: u64) -> Vec<Block> {
    (0..n as u64).map(|i| new_block(seed, i)).collect()
}

fn new_block(seed: u64, i: u64) -> Block {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&seed.to_le_bytes());
    id[8..].copy_from_slice(&i.to_le_bytes());
    Block::new(hash::data(&id), BLOCK_SIZE, i)
}

fn raw_hash_rate(runs: usize) -> f64 {
    const COUNT: u64 = 1 << 20;
    let (best, _) = min_time(runs, || {
        let mut input = [7u8; 82];
        for i in 0..COUNT {
            input[..8].copy_from_slice(&i.to_le_bytes());
            let out = Sha256::digest(black_box(&input));
            input[8] ^= out[0];
        }
        black_box(input)
    });
    COUNT as f64 / best.as_secs_f64()
}

fn rs_merkle_root(blocks: &[Block]) -> Option<[u8; 32]> {
    use rs_merkle::{algorithms::Sha256 as MerkleSha256, MerkleTree};
    let leaves: Vec<[u8; 32]> = blocks.iter().map(|b| b.tag.0).collect();
    MerkleTree::<MerkleSha256>::from_leaves(&leaves).root()
}

fn proof_figure(list: &FlexList, runs: usize) -> Result<ProofFigure, SelfCheckFailed> {
    let mut rng = StdRng::seed_from_u64(460);
    let len = list.total_len();
    let indices: Vec<u64> = (0..CHALLENGES).map(|_| rng.gen_range(0..len)).collect();
    let (gen, proof) = min_time(runs, || list.prove(&indices).expect("indices are in range"));
    let root = list.root();
    let (verify, proven) = min_time(runs, || verify_multi_proof(&root, &indices, &proof));
    let proven = proven.map_err(|e| SelfCheckFailed(format!("an honest multi-proof was rejected: {e}")))?;
    for (at, got) in indices.iter().zip(&proven) {
        let want = list.search(*at).expect("in range");
        let same = got.start == want.start && got.tag == want.block.tag && got.length == want.block.length;
        check(same, || format!("the proof for byte {at} names another block"))?;
    }
    Ok(ProofFigure {
        blocks: list.block_count(),
        challenges: CHALLENGES,
        gen_ms: ms(gen),
        verify_ms: ms(verify),
        proof_bytes: proof.len(),
        proof_nodes: proof.node_count(),
    })
}

/// A batch of [`BATCH`] edits on distinct blocks of a list of 2 KB blocks, cycling through
/// modify, insert and remove. Offsets refer to the list before the batch.
fn make_edits(list: &FlexList, pattern: &str, seed: u64) -> Vec<Edit> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = list.block_count();
    let mut targets: Vec<usize> = match pattern {
        "consecutive" => {
            let first = rng.gen_range(0..n - BATCH);
            (first..first + BATCH).collect()
        }
        _ => sample(&mut rng, n, BATCH).into_vec(),
    };
    targets.sort_unstable();
    targets
        .into_iter()
        .enumerate()
        .map(|(k, block_index)| {
            let at = block_index as u64 * u64::from(BLOCK_SIZE);
            let block = new_block(seed, k as u64);
            match k % 3 {
                0 => Edit::Modify { at, block },
                1 => Edit::Insert { at, block },
                _ => Edit::Remove { at },
            }
        })
        .collect()
}

/// The same batch as single updates. Applied from the last offset to the first, each edit's
/// offset still means what it meant before the batch.
fn one_by_one(list: &mut FlexList, edits: &[Edit]) -> Vec<(Edit, UpdateProof)> {
    let mut order = edits.to_vec();
    order.sort_by_key(|e| std::cmp::Reverse(e.at()));
    order.into_iter().map(|e| (e, list.multi_update(&[e]).expect("edits are valid for the list"))).collect()
}

fn update_figure(base: &FlexList, pattern: &'static str, runs: usize) -> Result<UpdateFigure, SelfCheckFailed> {
    // Every run starts from the same list, so it is a fresh copy each time (untimed), and the
    // list must be the working one: its blocks are all BLOCK_SIZE long.
    check(base.total_len() == base.block_count() as u64 * u64::from(BLOCK_SIZE), || "uneven blocks".into())?;
    let edits = make_edits(base, pattern, 300);
    let (server_multi, (multi_proof, multi_list)) = min_time_with(
        runs,
        || base.clone(),
        |mut list| {
            let proof = list.multi_update(&edits).expect("edits are valid for the list");
            (proof, list)
        },
    );
    let (server_single, (singles, single_list)) = min_time_with(
        runs,
        || base.clone(),
        |mut list| {
            let proofs = one_by_one(&mut list, &edits);
            (proofs, list)
        },
    );
    check(multi_list.root() == single_list.root(), || format!("{pattern}: multiUpdate and single updates disagree"))?;

    let old_root = base.root();
    let (client_multi, verified) = min_time(runs, || verify_multi_update(&old_root, &edits, &multi_proof));
    let verified =
        verified.map_err(|e| SelfCheckFailed(format!("{pattern}: honest multiUpdate proof rejected: {e}")))?;
    check(verified == multi_list.root(), || format!("{pattern}: client computed another root"))?;
    let (client_single, chained) = min_time(runs, || {
        singles.iter().try_fold(old_root, |root, (edit, proof)| verify_multi_update(&root, &[*edit], proof))
    });
    let chained =
        chained.map_err(|e| SelfCheckFailed(format!("{pattern}: honest single-update proof rejected: {e}")))?;
    check(chained == single_list.root(), || format!("{pattern}: chained single verification gave another root"))?;

    Ok(UpdateFigure {
        pattern,
        edits: edits.len(),
        server_multi_ms: ms(server_multi),
        server_one_by_one_ms: ms(server_single),
        client_multi_ms: ms(client_multi),
        client_one_by_one_ms: ms(client_single),
        proof_bytes_multi: multi_proof.to_bytes().len(),
        proof_bytes_one_by_one: singles.iter().map(|(_, p)| p.to_bytes().len()).sum(),
    })
}

/// The targets, with paper 000's figures beside them.
fn targets(
    threads: usize,
    builds: &[BuildFigure],
    proof: &ProofFigure,
    updates: &[UpdateFigure],
    memory: &MemoryFigure,
) -> Vec<Target> {
    let build = builds.iter().find(|b| b.blocks == WORKING_BLOCKS).expect("the working size is built");
    let consecutive = updates.iter().find(|u| u.pattern == "consecutive").expect("consecutive batch");
    let speedup = Target::at_least("build 500k: speed-up on all threads", build.speedup, 1.8, "x", None);
    vec![
        Target::at_most("build 500k blocks, one thread", build.one_thread_s, 0.8, "s", Some("30 s")),
        if threads >= 2 { speedup } else { speedup.unmeasured() },
        Target::at_least("node-hash rate during build vs raw hash", build.node_hashes_vs_raw, 0.6, "x", None),
        Target::at_least("node-hash rate during build vs rs_merkle", build.node_hashes_vs_rs_merkle, 2.0, "x", None),
        Target::at_most("genMultiProof, 460 challenges, 500k blocks", proof.gen_ms, 2.0, "ms", Some("< 40 ms")),
        Target::at_most("verifyMultiProof, 460 challenges", proof.verify_ms, 2.0, "ms", Some("< 40 ms")),
        Target::at_most(
            "multiUpdate, 300 consecutive edits (server)",
            consecutive.server_multi_ms,
            2.0,
            "ms",
            Some("13 ms"),
        ),
        Target::at_most(
            "verifyMultiUpdate, 300 consecutive edits",
            consecutive.client_multi_ms,
            0.5,
            "ms",
            Some("< 5 ms"),
        ),
        Target::at_most("memory per block (excluding data)", memory.bytes_per_block, 128.0, "B", None),
    ]
}

impl crate::Shown for Report {
    /// The report for people: one line per figure, then the targets.
    fn to_text(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(format!(
            "FlexList benchmark: {} B blocks, {} thread(s), minimum of several runs",
            self.block_size, self.threads
        ));
        line(format!("baseline raw SHA-256 (82 B): {:.2} M hashes/s", self.baseline.raw_hash_82b_per_s / 1e6));
        for b in &self.builds {
            line(format!(
                "build {:>8} blocks: 1 thread {:.3} s, all {:.3} s ({:.2}x); {:.2} M node hashes/s = {:.2}x raw, {:.2}x rs_merkle ({:.3} s)",
                b.blocks,
                b.one_thread_s,
                b.all_threads_s,
                b.speedup,
                b.node_hashes_per_s / 1e6,
                b.node_hashes_vs_raw,
                b.node_hashes_vs_rs_merkle,
                b.rs_merkle_s
            ));
        }
        let p = &self.proof;
        line(format!(
            "multi-proof, {} challenges on {} blocks: gen {:.3} ms, verify {:.3} ms, {} bytes, {} nodes",
            p.challenges, p.blocks, p.gen_ms, p.verify_ms, p.proof_bytes, p.proof_nodes
        ));
        for u in &self.updates {
            line(format!(
                "{} {}: server multi {:.3} ms vs one-by-one {:.3} ms; client multi {:.3} ms vs one-by-one {:.3} ms; proof {} B vs {} B",
                u.edits,
                u.pattern,
                u.server_multi_ms,
                u.server_one_by_one_ms,
                u.client_multi_ms,
                u.client_one_by_one_ms,
                u.proof_bytes_multi,
                u.proof_bytes_one_by_one
            ));
        }
        line(format!("memory: {:.1} bytes per block ({} blocks)", self.memory.bytes_per_block, self.memory.blocks));
        out + &targets_text(&self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The figures' self-checks on a small list: multi and single updates agree, honest proofs
    // pass, the proof names the searched blocks. (No timing is asserted.)
    #[test]
    fn figures_self_check_on_a_small_list() {
        let list = FlexList::build(&make_blocks(20_000, 3)).unwrap();
        let proof = proof_figure(&list, 1).unwrap();
        assert_eq!(proof.challenges, CHALLENGES);
        assert!(proof.proof_nodes > CHALLENGES);
        for pattern in ["consecutive", "random"] {
            let figure = update_figure(&list, pattern, 1).unwrap();
            assert_eq!(figure.edits, BATCH);
            assert!(figure.proof_bytes_multi < figure.proof_bytes_one_by_one, "{pattern}");
        }
    }

    #[test]
    fn edits_hit_distinct_blocks_in_an_even_mix() {
        let list = FlexList::build(&make_blocks(5_000, 4)).unwrap();
        for pattern in ["consecutive", "random"] {
            let edits = make_edits(&list, pattern, 9);
            let mut offsets: Vec<u64> = edits.iter().map(Edit::at).collect();
            offsets.dedup();
            assert_eq!(offsets.len(), BATCH);
            let removes = edits.iter().filter(|e| matches!(e, Edit::Remove { .. })).count();
            assert_eq!(removes, BATCH / 3);
        }
    }

    #[test]
    fn a_missed_target_says_so() {
        let t = Target::at_most("x", 3.0, 2.0, "ms", None);
        assert_eq!(t.met, Some(false));
        assert!(t.line().contains("MISSED"));
        assert_eq!(Target::at_least("y", 3.0, 2.0, "x", None).unmeasured().met, None);
    }
}
