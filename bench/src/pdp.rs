//! `vouch bench pdp`: tagging throughput, and possession proofs over a 1 GB file at block sizes
//! from 1 to 64 KB (paper 001, Fig. 2: proof size and server time against block size).
//!
//! Baselines in the same run: bulk SHA-256 over the same bytes (what any integrity check costs),
//! and a naive aggregation loop (one `%` per sector and block) beside ours.

use crate::measure::{check, min_time, ms, targets_text, SelfCheckFailed, Target};
use rand::{rngs::StdRng, RngCore, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use vouch_core::pdp::linear::LinearKey;
use vouch_core::pdp::rsa::RsaSecretKey;
use vouch_core::pdp::{
    prove, verify_possession, Auditor, Challenge, ClientFile, FileId, Held, Tagger, DEFAULT_CHALLENGE,
};
use vouch_core::FlexList;

/// Block sizes of the proof sweep, in KiB.
const SWEEP_KIB: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// The paper's proof for 1 GB in 16 KB blocks: 415 KB.
const PAPER_PROOF_BYTES: f64 = 415e3;

pub use crate::measure::Options;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub threads: usize,
    pub file_bytes: usize,
    pub challenges: u32,
    pub baseline: Baseline,
    pub tagging: Vec<TaggingFigure>,
    pub proofs: Vec<ProofFigure>,
    pub rsa: Vec<RsaFigure>,
    pub targets: Vec<Target>,
}

/// The RSA scheme at one modulus size: 16 KB blocks.
#[derive(Debug, Serialize)]
pub struct RsaFigure {
    pub modulus_bits: u32,
    pub keygen_s: f64,
    /// Baseline: the library's generic `g^e mod N`, exponent as wide as `N`.
    pub modexp_per_s: f64,
    /// Baseline: an RSA private operation's worth (two half-size modexps, CRT).
    pub private_op_per_s: f64,
    pub tagging: Vec<TaggingFigure>,
    /// The proof figures run on a smaller file than the linear sweep (tagging it all would
    /// take minutes); proof cost depends on the 460 challenged blocks and only logarithmically
    /// on the file.
    pub proof: ProofFigure,
    /// Anyone with the public key, no secret.
    pub public_verify_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Baseline {
    /// SHA-256 over 16 KB blocks, one thread.
    pub sha256_mb_per_s: f64,
    /// Aggregating 460 blocks of 16 KB with a `%` per sector.
    pub naive_aggregate_ms: f64,
    /// The same aggregate the way the prover computes it (lazy reduction).
    pub aggregate_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct TaggingFigure {
    pub scheme: &'static str,
    pub block_bytes: usize,
    pub threads: usize,
    pub mb_per_s: f64,
    pub tags_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct ProofFigure {
    pub block_bytes: usize,
    pub blocks: usize,
    pub gen_ms: f64,
    pub verify_ms: f64,
    pub proof_bytes: usize,
    pub list_bytes: usize,
    /// `c * (log2(n / c) + 2)` hashes of 32 bytes: an ideal Merkle multi-proof.
    pub ideal_merkle_bytes: f64,
    pub list_vs_ideal: f64,
}

pub fn run(opts: Options, mut progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let threads = rayon::current_num_threads();
    let runs = if opts.quick { 3 } else { 5 };
    let file_bytes = if opts.quick { 256 << 20 } else { 1 << 30 };
    let key = LinearKey::from_secret([42; 32]);
    progress(&format!("generating {} MB of data", file_bytes >> 20));
    let data = random_bytes(file_bytes);

    progress("baselines: SHA-256, naive aggregation");
    let sample = &data[..64 << 20];
    let (sha, _) = min_time(runs, || sample.chunks(16 << 10).map(|b| Sha256::digest(b)[0]).fold(0u8, |a, b| a ^ b));
    let (naive, want) = min_time(runs, || naive_aggregate(sample, 16 << 10));
    let (ours, got) = min_time(runs, || fast_aggregate(sample, 16 << 10));
    check(want == got, || "the naive and the prover's aggregation disagree".into())?;

    let mut tagging = Vec::new();
    for block in [4 << 10, 16 << 10, 64 << 10] {
        progress(&format!("tagging: linear, {} KB blocks", block >> 10));
        tagging.extend(tagging_figures("linear", &key, sample, block, runs));
    }

    let mut proofs = Vec::new();
    for kib in SWEEP_KIB {
        progress(&format!("proofs: {kib} KB blocks"));
        proofs.push(proof_figure(&key, &data, kib << 10, runs * 2)?);
    }

    let mut rsa = Vec::new();
    for bits in [1024, 2048] {
        progress(&format!("rsa: {bits}-bit modulus (key generation, tagging, proofs)"));
        rsa.push(rsa_figure(bits, &data[..if opts.quick { 16 << 20 } else { 64 << 20 }], runs)?);
    }

    let targets = targets(&tagging, &proofs, &rsa, file_bytes);
    Ok(Report {
        quick: opts.quick,
        threads,
        file_bytes,
        challenges: DEFAULT_CHALLENGE,
        baseline: Baseline {
            sha256_mb_per_s: sample.len() as f64 / sha.as_secs_f64() / 1e6,
            naive_aggregate_ms: ms(naive),
            aggregate_ms: ms(ours),
        },
        tagging,
        proofs,
        rsa,
        targets,
    })
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut data = vec![0u8; n];
    data.par_chunks_mut(1 << 20).enumerate().for_each(|(i, chunk)| StdRng::seed_from_u64(i as u64).fill_bytes(chunk));
    data
}

/// Tagging rate over `sample` in blocks of `block` bytes, on one thread and on all.
fn tagging_figures(
    scheme: &'static str,
    key: &impl Tagger,
    sample: &[u8],
    block: usize,
    runs: usize,
) -> Vec<TaggingFigure> {
    let all = rayon::current_num_threads();
    let counts: &[usize] = if all > 1 { &[1, all] } else { &[1] };
    counts
        .iter()
        .map(|&threads| {
            let secs = min_time(runs, || tag_all(key, sample, block, threads)).0.as_secs_f64();
            TaggingFigure {
                scheme,
                block_bytes: block,
                threads,
                mb_per_s: sample.len() as f64 / secs / 1e6,
                tags_per_s: (sample.len() / block) as f64 / secs,
            }
        })
        .collect()
}

/// Tags every block of `data` on `threads` threads.
fn tag_all(key: &impl Tagger, data: &[u8], block: usize, threads: usize) -> Vec<vouch_core::pdp::TaggedBlock> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
    let blocks: Vec<&[u8]> = data.chunks(block).collect();
    pool.install(|| ClientFile::new(FileId([1; 16])).tag_blocks(key, &[0; 16], &blocks).expect("valid blocks"))
}

/// The 460 challenged blocks' aggregate with a modular reduction per sector and block.
fn naive_aggregate(data: &[u8], block: usize) -> Vec<u64> {
    const P: u64 = (1 << 61) - 1;
    let blocks: Vec<&[u8]> = data.chunks(block).take(DEFAULT_CHALLENGE as usize).collect();
    let mut mu = vec![0u64; block.div_ceil(7)];
    for (i, b) in blocks.iter().enumerate() {
        let nu = (i as u64 + 1) * 0x9e37_79b9;
        for (j, m) in mu.iter_mut().enumerate() {
            let mut sector = [0u8; 8];
            let chunk = &b[(7 * j).min(b.len())..(7 * j + 7).min(b.len())];
            sector[..chunk.len()].copy_from_slice(chunk);
            let s = u64::from_le_bytes(sector);
            *m = ((u128::from(*m) + u128::from(nu) * u128::from(s)) % u128::from(P)) as u64;
        }
    }
    black_box(mu)
}

/// The same aggregate through the prover's code path.
fn fast_aggregate(data: &[u8], block: usize) -> Vec<u64> {
    let blocks: Vec<&[u8]> = data.chunks(block).take(DEFAULT_CHALLENGE as usize).collect();
    black_box(vouch_core::pdp::aggregate_linear(
        blocks.iter().enumerate().map(|(i, b)| ((i as u64 + 1) * 0x9e37_79b9, *b)),
    ))
}

fn proof_figure<K: Tagger + Auditor>(
    key: &K,
    data: &[u8],
    block: usize,
    runs: usize,
) -> Result<ProofFigure, SelfCheckFailed> {
    let file = FileId([2; 16]);
    let mut client = ClientFile::new(file);
    let blocks: Vec<&[u8]> = data.chunks(block).collect();
    let tagged = client.tag_blocks(key, &[0; 16], &blocks).expect("valid blocks");
    let leaves: Vec<_> = tagged.iter().map(|t| t.leaf).collect();
    let list = FlexList::build_parallel(&leaves, rayon::current_num_threads()).expect("valid blocks");
    client.uploaded(list.root(), list.total_len());
    let challenge = Challenge::new([7; 32], DEFAULT_CHALLENGE);
    let fetch = |r: u64| {
        let t = &tagged[r as usize];
        Some(Held { nonce: t.nonce, tag: &t.tag, data: blocks[r as usize] })
    };
    let (gen, proof) =
        min_time(runs, || prove(Tagger::scheme(key), &list, &challenge, fetch).expect("all blocks held"));
    let (verify, verdict) =
        min_time(runs, || verify_possession(key, &file, &client.root, client.len, &challenge, &proof));
    verdict.map_err(|e| SelfCheckFailed(format!("an honest possession proof was rejected: {e}")))?;
    let n = blocks.len() as f64;
    let c = f64::from(DEFAULT_CHALLENGE);
    let ideal_merkle_bytes = c * ((n / c).log2() + 2.0) * 32.0;
    Ok(ProofFigure {
        block_bytes: block,
        blocks: blocks.len(),
        gen_ms: ms(gen),
        verify_ms: ms(verify),
        proof_bytes: proof.to_bytes().len(),
        list_bytes: proof.list.len(),
        ideal_merkle_bytes,
        list_vs_ideal: proof.list.len() as f64 / ideal_merkle_bytes,
    })
}

fn targets(tagging: &[TaggingFigure], proofs: &[ProofFigure], rsa: &[RsaFigure], file_bytes: usize) -> Vec<Target> {
    let one_core = tagging.iter().filter(|t| t.threads == 1).map(|t| t.mb_per_s).fold(f64::MAX, f64::min);
    let at16 = proofs.iter().find(|p| p.block_bytes == 16 << 10).expect("16 KB in the sweep");
    let worst_ratio = proofs.iter().map(|p| p.list_vs_ideal).fold(0.0, f64::max);
    let mut out = vec![
        Target::at_least("linear tagging, one core (slowest block size)", one_core / 1e3, 2.0, "GB/s", None),
        Target::at_most("server proof, 460 blocks of 16 KB (linear)", at16.gen_ms, 2.0, "ms", Some("30-40 ms")),
        Target::at_most("client verification, 16 KB blocks (key owner)", at16.verify_ms, 1.0, "ms", None),
        Target::at_most("FlexList part vs ideal Merkle multi-proof (worst size)", worst_ratio, 1.5, "x", None),
    ];
    let whole = Target::at_most(
        "whole proof, 1 GB file, 16 KB blocks",
        at16.proof_bytes as f64 / 1e3,
        0.6 * PAPER_PROOF_BYTES / 1e3,
        "KB",
        Some("415 KB"),
    );
    out.push(if file_bytes == 1 << 30 { whole } else { whole.unmeasured() });
    for r in rsa {
        let one_core = r.tagging.iter().find(|t| t.threads == 1).expect("one-thread figure");
        out.push(Target::at_least(
            &format!("rsa-{} tagging, 16 KB blocks, one core", r.modulus_bits),
            one_core.tags_per_s,
            10_000.0,
            "tags/s",
            None,
        ));
        out.push(Target::at_most(
            &format!("rsa-{} server proof, 460 blocks of 16 KB", r.modulus_bits),
            r.proof.gen_ms,
            5.0,
            "ms",
            Some("30-40 ms"),
        ));
    }
    out
}

fn rsa_figure(bits: u32, data: &[u8], runs: usize) -> Result<RsaFigure, SelfCheckFailed> {
    use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
    use crypto_bigint::{BoxedUint, Odd};
    let mut rng = <rand_crypto::rngs::StdRng as rand_crypto::SeedableRng>::seed_from_u64(u64::from(bits));
    let (keygen, key) = min_time(1, || RsaSecretKey::generate(&mut rng, bits));
    let key = key.map_err(|e| SelfCheckFailed(format!("RSA key generation failed: {e}")))?;

    // Baselines: generic modexp at full and at half width (a CRT private operation is two).
    let modexp_s = |width: u32| {
        let ones = vec![0xa5u8; width as usize / 8];
        let modulus = BoxedUint::from_be_slice(&ones, width).expect("width bytes");
        let params = BoxedMontyParams::new_vartime(Odd::new(modulus).expect("odd"));
        let exponent = BoxedUint::from_be_slice(&vec![0x5au8; width as usize / 8], width).expect("width bytes");
        let base = BoxedMontyForm::new(BoxedUint::from_words_with_precision([7], width), &params);
        min_time(runs, || black_box(base.pow(&exponent))).0.as_secs_f64()
    };
    let full = modexp_s(bits);
    let half = modexp_s(bits / 2);

    let block = 16 << 10;
    let sample = &data[..(64 * block).min(data.len())];
    let tagging = tagging_figures(if bits == 1024 { "rsa-1024" } else { "rsa-2048" }, &key, sample, block, runs);
    let proof = proof_figure(&key, data, block, runs)?;
    let public = key.public_key().clone();
    let public_verify_ms = public_verify(&key, &public, data, block)?;
    Ok(RsaFigure {
        modulus_bits: bits,
        keygen_s: keygen.as_secs_f64(),
        modexp_per_s: 1.0 / full,
        private_op_per_s: 1.0 / (2.0 * half),
        tagging,
        proof,
        public_verify_ms,
    })
}

/// Time for a party holding only the public key to check an honest proof (one run: slow).
fn public_verify(
    key: &RsaSecretKey,
    public: &vouch_core::pdp::rsa::RsaPublicKey,
    data: &[u8],
    block: usize,
) -> Result<f64, SelfCheckFailed> {
    let file = FileId([3; 16]);
    let mut client = ClientFile::new(file);
    let blocks: Vec<&[u8]> = data.chunks(block).collect();
    let tagged = client.tag_blocks(key, &[0; 16], &blocks).expect("valid blocks");
    let list = FlexList::build(&tagged.iter().map(|t| t.leaf).collect::<Vec<_>>()).expect("valid blocks");
    client.uploaded(list.root(), list.total_len());
    let challenge = Challenge::new([9; 32], DEFAULT_CHALLENGE);
    let proof = prove(public.scheme(), &list, &challenge, |r| {
        let t = &tagged[r as usize];
        Some(Held { nonce: t.nonce, tag: &t.tag, data: blocks[r as usize] })
    })
    .expect("all blocks held");
    let (took, verdict) =
        min_time(1, || verify_possession(public, &file, &client.root, client.len, &challenge, &proof));
    verdict.map_err(|e| SelfCheckFailed(format!("public audit rejected an honest proof: {e}")))?;
    Ok(ms(took))
}

impl crate::Shown for Report {
    fn to_text(&self) -> String {
        let mut out = format!(
            "PDP benchmark: {} MB file, {} challenges, {} thread(s), minimum of several runs\n",
            self.file_bytes >> 20,
            self.challenges,
            self.threads
        );
        let b = &self.baseline;
        out += &format!(
            "baseline: SHA-256 {:.0} MB/s; aggregate of 460 x 16 KB: naive {:.3} ms, ours {:.3} ms\n",
            b.sha256_mb_per_s, b.naive_aggregate_ms, b.aggregate_ms
        );
        for t in &self.tagging {
            out += &format!(
                "tagging {} {:>5} B blocks, {} thread(s): {:.0} MB/s, {:.0} tags/s\n",
                t.scheme, t.block_bytes, t.threads, t.mb_per_s, t.tags_per_s
            );
        }
        for p in &self.proofs {
            out += &format!(
                "proof {:>5} B blocks ({} blocks): gen {:.3} ms, verify {:.3} ms, {:.1} KB (list {:.1} KB = {:.2}x ideal Merkle)\n",
                p.block_bytes,
                p.blocks,
                p.gen_ms,
                p.verify_ms,
                p.proof_bytes as f64 / 1e3,
                p.list_bytes as f64 / 1e3,
                p.list_vs_ideal
            );
        }
        for r in &self.rsa {
            out += &format!(
                "rsa-{}: keygen {:.2} s; baseline modexp {:.0}/s, private op (CRT) {:.0}/s\n",
                r.modulus_bits, r.keygen_s, r.modexp_per_s, r.private_op_per_s
            );
            for t in &r.tagging {
                out += &format!(
                    "  tagging {:>5} B blocks, {} thread(s): {:.1} MB/s, {:.0} tags/s\n",
                    t.block_bytes, t.threads, t.mb_per_s, t.tags_per_s
                );
            }
            let p = &r.proof;
            out += &format!(
                "  proof {} blocks of {} B: gen {:.3} ms, owner verify {:.3} ms, public verify {:.1} ms, {:.1} KB\n",
                p.blocks,
                p.block_bytes,
                p.gen_ms,
                p.verify_ms,
                r.public_verify_ms,
                p.proof_bytes as f64 / 1e3
            );
        }
        out + &targets_text(&self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_figure_self_checks_on_a_small_file() {
        let key = LinearKey::from_secret([1; 32]);
        let data = random_bytes(4 << 20);
        let figure = proof_figure(&key, &data, 4096, 1).unwrap();
        assert_eq!(figure.blocks, 1024);
        assert!(figure.list_bytes > 0 && figure.proof_bytes > figure.list_bytes);
        assert_eq!(naive_aggregate(&data, 4096), fast_aggregate(&data, 4096));
    }
}
