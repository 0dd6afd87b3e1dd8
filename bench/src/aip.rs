//! `vouch bench aip`: ADICT (paper 003, Sec. 4.2) in memory, beside the raw hash rate.
//!
//! * Server updates: puts of fresh keys into a dictionary of `n` keys (the persistent tree
//!   rehashes the path to the root), per second on one core.
//! * Client updates: the root after a put computed from its proof alone (`authexec`), and
//!   a proof checked, per second.
//! * Baseline: SHA-256 of a 65-byte node input, per second; `updates per second x hashes
//!   per update / hash rate` says how close the tree is to hashing alone.
//!
//! The rest of the benchmark (VICOS over MinIO against the native store, 1-128
//! clients, success rates) needs the VICOS client end to end, which a later increment adds.

use crate::measure::{check, min_time, targets_text, Options, SelfCheckFailed, Target};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use vouch_core::adict::{value_hash, Tree};

/// The target: ADICT updates per second per core.
const UPDATES_TARGET: f64 = 200_000.0;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub sizes: Vec<Size>,
    /// SHA-256 of one 65-byte node input, per second.
    pub hashes_per_s: f64,
    pub targets: Vec<Target>,
}

#[derive(Debug, Serialize)]
pub struct Size {
    /// Keys in the dictionary before the timed puts.
    pub keys: usize,
    pub server_puts_per_s: f64,
    pub client_puts_per_s: f64,
    pub proofs_checked_per_s: f64,
    /// Mean siblings in a proof (the path's depth).
    pub proof_depth: f64,
}

fn key(i: usize) -> Vec<u8> {
    format!("objects/{i:012}").into_bytes()
}

pub fn run(opts: Options, mut progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let runs = if opts.quick { 3 } else { 5 };
    let batch = if opts.quick { 20_000 } else { 100_000 };
    let sizes: &[usize] = if opts.quick { &[1_000, 100_000] } else { &[1_000, 100_000, 1_000_000] };
    let mut figures = Vec::new();
    for &n in sizes {
        progress(&format!("a dictionary of {n} keys"));
        let mut base = Tree::new();
        for i in 0..n {
            base.put(&key(i), b"x");
        }
        let fresh: Vec<Vec<u8>> = (n..n + batch).map(key).collect();
        let (server, after) = min_time(runs, || {
            let mut tree = base.clone();
            for k in &fresh {
                tree.put(k, b"value");
            }
            tree
        });
        // The client's side: each fresh key's proof against the base, and the root after it.
        let proofs: Vec<_> = fresh.iter().map(|k| base.prove(k)).collect();
        let (root, value) = (base.root(), value_hash(b"value"));
        let (client, roots) = min_time(runs, || {
            fresh.iter().zip(&proofs).map(|(k, p)| p.root_after_put(&root, k, &value)).collect::<Vec<_>>()
        });
        let (checked, _) =
            min_time(runs, || fresh.iter().zip(&proofs).filter(|(k, p)| p.verify(&root, k).is_ok()).count());
        // Self-check: one client root against the server's tree after the same single put.
        let mut one = base.clone();
        one.put(&fresh[0], b"value");
        check(roots[0].as_ref().ok() == Some(&one.root()), || "a client's root differs from the server's".into())?;
        check(after.len() == n + batch, || "the timed puts did not all land".into())?;
        let per_s = |d: std::time::Duration| batch as f64 / d.as_secs_f64();
        figures.push(Size {
            keys: n,
            server_puts_per_s: per_s(server),
            client_puts_per_s: per_s(client),
            proofs_checked_per_s: per_s(checked),
            proof_depth: proofs.iter().map(|p| p.siblings.len()).sum::<usize>() as f64 / batch as f64,
        });
    }
    progress("SHA-256 of a node");
    let hashes = if opts.quick { 1_000_000 } else { 5_000_000 };
    let (hashing, _) = min_time(runs, || {
        let mut node = [7u8; 65];
        for _ in 0..hashes {
            let out = Sha256::digest(black_box(&node));
            node[1..33].copy_from_slice(&out);
        }
        node[1]
    });
    let hashes_per_s = hashes as f64 / hashing.as_secs_f64();
    let slowest = figures.iter().map(|f| f.server_puts_per_s.min(f.client_puts_per_s)).fold(f64::MAX, f64::min);
    let largest = figures.last().map_or(0, |f| f.keys);
    let targets = vec![Target::at_least(
        &format!("ADICT updates, up to {largest} keys, one core"),
        slowest,
        UPDATES_TARGET,
        "ops/s",
        None,
    )];
    Ok(Report { quick: opts.quick, sizes: figures, hashes_per_s, targets })
}

impl Report {
    pub fn to_text(&self) -> String {
        let mut out = format!("ADICT in memory ({} run), one core:\n", if self.quick { "quick" } else { "full" });
        for s in &self.sizes {
            out += &format!(
                "  {:>9} keys: server puts {:>9.0}/s, client roots after a put {:>9.0}/s, proofs checked {:>9.0}/s, \
                 depth {:.1}\n",
                s.keys, s.server_puts_per_s, s.client_puts_per_s, s.proofs_checked_per_s, s.proof_depth
            );
        }
        out += &format!("  baseline: SHA-256 of a 65-byte node {:.0}/s\n", self.hashes_per_s);
        out + &targets_text(&self.targets)
    }
}
