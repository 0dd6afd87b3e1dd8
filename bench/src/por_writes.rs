//! The PoR log's bandwidth: client-server bytes per 4 KiB write beside a plain Merkle tree's
//! (paper 002, Fig. 5-6), and an audit's bytes and provider time (Fig. 8-10), measured on the
//! pure client and the in-memory reference provider with the messages' wire encodings.
//!
//! A run writes one whole epoch (`n` fresh slots of 4 KiB, in batches of `B`), so the
//! figures include the rebuild of C at its end (every sealed checksum of U down, C's up). The
//! Merkle tree baseline writes the same blocks in the same batches: the blocks, their indices,
//! the old leaf hashes and the siblings of one multi-proof per batch.

use crate::measure::{ms, Target};
use rand::{rngs::StdRng, RngCore, SeedableRng};
use serde::Serialize;
use std::time::{Duration, Instant};
use vouch_core::codec::varint_len;
use vouch_core::por::audit::{parts, picks, verify_part};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{plan, write, LogState};
use vouch_core::por::code::DEFAULT_GROUP_LOG;
use vouch_core::por::heap::{split_block, SLOT_DATA_BYTES, SLOT_WIDTH};
use vouch_core::por::provider::ProviderLog;
use vouch_core::por::raw_tree::RawTree;
use vouch_core::por::wire::slots_to_bytes;

/// Write bandwidth may exceed the Merkle tree's by at most this factor.
const BANDWIDTH_TARGET: f64 = 1.1;
/// Picks per part of an audit.
pub const AUDIT_LAMBDA: usize = 128;

#[derive(Debug, Serialize)]
pub struct WriteFigure {
    pub log_capacity: u32,
    pub batch: usize,
    /// Client-server bytes per 4 KiB written, both directions.
    pub por_bytes_per_write: f64,
    pub merkle_bytes_per_write: f64,
    pub ratio: f64,
}

#[derive(Debug, Serialize)]
pub struct AuditFigure {
    pub log_capacity: u32,
    pub parts: usize,
    pub lambda: usize,
    /// Request and answer.
    pub bytes: usize,
    /// The provider's proof from memory (no disk: the figure is its CPU part).
    pub provider_ms: f64,
    pub client_ms: f64,
}

/// Writes one epoch of `2^k` slots in batches of `batch` and returns the PoR and Merkle
/// bytes per write, and the audit figure taken just before the epoch's last batch (when the
/// most levels are filled).
pub fn epoch(log_capacity: u32, batch: usize) -> (WriteFigure, AuditFigure) {
    let n = 1u64 << log_capacity;
    let seal = SealKey::new(&[1; 32]);
    let sums = ChecksumKey::grouped(&[2; 32], SLOT_WIDTH, DEFAULT_GROUP_LOG);
    let (mut state, coded) = LogState::new(log_capacity, DEFAULT_GROUP_LOG, &seal);
    let mut log = ProviderLog::new(log_capacity, DEFAULT_GROUP_LOG, SLOT_WIDTH, coded).expect("a valid log");
    let merkle = RawTree::new(log_capacity);
    let mut rng = StdRng::seed_from_u64(u64::from(log_capacity) << 32 | batch as u64);
    let (mut por_bytes, mut merkle_bytes) = (0usize, 0usize);
    let mut audit = None;
    let mut block = vec![0u8; SLOT_DATA_BYTES];
    let mut next = 0;
    while next < n {
        let writes: Vec<u64> = (next..n.min(next + batch as u64)).collect();
        next += writes.len() as u64;
        if next == n {
            audit = Some(audit_figure(&state, &log, &seal, &sums));
        }
        let mut slots = Vec::with_capacity(writes.len() * SLOT_WIDTH);
        for &index in &writes {
            rng.fill_bytes(&mut block);
            slots.extend(split_block(index, &block));
        }
        let planned = plan(&state, &writes, false).expect("a valid batch");
        let context = log.context(&planned).expect("an honest provider");
        let written = write(&state, &planned, &context, &writes, &slots, &seal, &sums).expect("honest");
        let indices: usize = writes.iter().map(|&i| varint_len(i)).sum();
        por_bytes += planned.to_bytes().len()
            + context.to_bytes().len()
            + written.upload_bytes().len()
            + slots_to_bytes(&slots).len()
            + indices;
        log.apply(&planned, &writes, &slots, &written).expect("a valid batch");
        state = written.state;

        // The proof's shape, not its hashes, is what costs bytes.
        let siblings = merkle.prove(&writes).expect("indices within the tree").siblings.len();
        merkle_bytes += writes.len() * (SLOT_DATA_BYTES + 32) + indices + 32 * siblings;
    }
    let (por, merkle) = (por_bytes as f64 / n as f64, merkle_bytes as f64 / n as f64);
    let figure = WriteFigure {
        log_capacity,
        batch,
        por_bytes_per_write: por,
        merkle_bytes_per_write: merkle,
        ratio: por / merkle,
    };
    (figure, audit.expect("the epoch's last batch was reached"))
}

fn audit_figure(state: &LogState, log: &ProviderLog, seal: &SealKey, sums: &ChecksumKey) -> AuditFigure {
    let seed = [7; 32];
    let all = parts(&state.schedule);
    let (mut provider, mut client, mut bytes) = (Duration::ZERO, Duration::ZERO, 32 + 4);
    for part in &all {
        let chosen = picks(&seed, part, AUDIT_LAMBDA);
        let start = Instant::now();
        let proof = log.prove(part, &chosen).expect("the provider holds every part");
        provider += start.elapsed();
        bytes += proof.to_bytes().len();
        let start = Instant::now();
        verify_part(seal, sums, part, &chosen, &proof).expect("an honest answer");
        client += start.elapsed();
    }
    AuditFigure {
        log_capacity: state.schedule.log_capacity,
        parts: all.len(),
        lambda: AUDIT_LAMBDA,
        bytes,
        provider_ms: ms(provider),
        client_ms: ms(client),
    }
}

/// The write bandwidth targets.
pub fn targets(figures: &[WriteFigure]) -> Vec<Target> {
    figures
        .iter()
        .map(|f| {
            Target::at_most(
                &format!("write bandwidth vs Merkle tree, n = 2^{}, batches of {}", f.log_capacity, f.batch),
                f.ratio,
                BANDWIDTH_TARGET,
                "x",
                Some("comparable to a Merkle tree (Fig. 5)"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_costs_at_least_its_blocks_and_audits_every_part() {
        let (write, audit) = epoch(6, 4);
        assert!(write.por_bytes_per_write > 4116.0 && write.merkle_bytes_per_write > 4096.0 + 32.0, "{write:?}");
        assert!((write.ratio - write.por_bytes_per_write / write.merkle_bytes_per_write).abs() < 1e-9);
        // After 60 of 64 writes in groups of 16: three groups in levels 0 and 1 (0b11), twelve
        // writes in the open group, and C; every slot of the levels (2 + 4) and 128 of C's are
        // picked, and a level's aggregate is a group wide.
        assert_eq!(audit.parts, 3);
        let groups = 2 * (SLOT_WIDTH << DEFAULT_GROUP_LOG) * 8;
        assert!(audit.bytes > (2 + 4 + 128) * 56 + groups, "{audit:?}");
    }
}
