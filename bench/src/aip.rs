//! `vouch bench aip`: ADICT (paper 003, Sec. 4.2) in memory, beside the raw hash rate.
//!
//! * Server updates: puts of fresh keys into a dictionary of `n` keys (the persistent tree
//!   rehashes the path to the root), per second on one core.
//! * Client updates: the root after a put computed from its proof alone (`authexec`), and
//!   a proof checked, per second.
//! * Baseline: the tree's node hash (BLAKE3 keyed, 64 bytes), per second; `updates per second
//!   x hashes per update / hash rate` says how close the tree is to hashing alone. Beside it,
//!   SHA-256 of the 65-byte node input the tree hashed before (see `vouch_core::hash`).
//!
//! * VICOS (Sec. 6): members of a group over a provider beside native `object_store` clients
//!   on the same S3 server, over N, object sizes and Zipf skew; see [`crate::vicos`].

use crate::measure::{check, min_time, targets_text, Options, SelfCheckFailed, Target};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use vouch_core::adict::{value_hash, Tree};
use vouch_core::hash::{keyed_pair, Digest, Keyed};

/// The target: ADICT updates per second per core.
const UPDATES_TARGET: f64 = 200_000.0;

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    pub sizes: Vec<Size>,
    /// The tree's node hash (BLAKE3 keyed, 64 bytes), per second.
    pub node_hashes_per_s: f64,
    /// SHA-256 of a 65-byte node input (a domain byte and two digests), per second.
    pub sha256_node_hashes_per_s: f64,
    /// AIP's own work per operation over N members, in memory ([`crate::aip_protocol`]).
    pub protocol: Vec<crate::aip_protocol::ProtocolPoint>,
    /// Signing and verifying one statement with each scheme a group can use (Fig. 4).
    pub signing: Vec<crate::aip_figures::Signing>,
    /// How often the workloads' Zipf sampler picks each key (Fig. 7).
    pub selection: Vec<crate::aip_figures::Selection>,
    pub vicos: crate::vicos::Report,
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

pub fn run(opts: Options, progress: impl FnMut(&str)) -> Result<Report, SelfCheckFailed> {
    let s3 = vouch_store::S3Config::from_env(Some("vouch")).map_err(|why| why.to_string());
    run_with(opts, &crate::vicos::Sizes::of(opts.quick), s3, progress)
}

pub(crate) fn run_with(
    opts: Options,
    vicos_sizes: &crate::vicos::Sizes,
    s3: Result<vouch_store::S3Config, String>,
    mut progress: impl FnMut(&str),
) -> Result<Report, SelfCheckFailed> {
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
    progress("hashes of a node");
    let hashes = if opts.quick { 1_000_000 } else { 5_000_000 };
    let (blake3, _) = min_time(runs, || {
        let mut node = Digest::ZERO;
        for _ in 0..hashes {
            node = keyed_pair(Keyed::AdictNode, black_box(&node), &node);
        }
        node
    });
    let (sha256, _) = min_time(runs, || {
        let mut node = [7u8; 65];
        for _ in 0..hashes {
            let out = Sha256::digest(black_box(&node));
            node[1..33].copy_from_slice(&out);
        }
        node[1]
    });
    let (node_hashes_per_s, sha256_node_hashes_per_s) =
        (hashes as f64 / blake3.as_secs_f64(), hashes as f64 / sha256.as_secs_f64());
    let slowest = figures.iter().map(|f| f.server_puts_per_s.min(f.client_puts_per_s)).fold(f64::MAX, f64::min);
    let largest = figures.last().map_or(0, |f| f.keys);
    let mut targets = vec![Target::at_least(
        &format!("ADICT updates, up to {largest} keys, one core"),
        slowest,
        UPDATES_TARGET,
        "ops/s",
        None,
    )];
    let mut protocol = Vec::new();
    for &members in vicos_sizes.protocol_members() {
        progress(&format!("AIP protocol in memory, {members} members"));
        protocol.push(crate::aip_protocol::point(members, if opts.quick { 4_000 } else { 20_000 }, runs.min(3))?);
    }
    progress("signing and verifying statements");
    let signing = crate::aip_figures::signing(runs, if opts.quick { 2_000 } else { 10_000 })?;
    let selection = crate::aip_figures::selection(crate::vicos::KEYS, &vicos_sizes.thetas, 10_000);
    let rt = crate::measure::runtime()?;
    let vicos = crate::vicos::run_with(&rt, vicos_sizes, s3, &mut progress)?;
    let (n, overhead) = vicos.overhead();
    let overhead = Target::at_most(
        &format!("VICOS overhead, 1 - VICOS/native ops/s, 10 KB, {n} clients, objects reached directly"),
        overhead,
        0.10,
        "",
        Some("+16-24% latency (Fig. 5)"),
    );
    targets.push(if vicos.native.is_some() { overhead } else { overhead.unmeasured() });
    targets.push(Target::at_least(
        "VICOS writes done/attempted, compatible, theta 0.99",
        vicos.compatible_writes_at_99(),
        1.0,
        "",
        Some("100% (Fig. 8)"),
    ));
    Ok(Report {
        quick: opts.quick,
        sizes: figures,
        node_hashes_per_s,
        sha256_node_hashes_per_s,
        protocol,
        signing,
        selection,
        vicos,
        targets,
    })
}

impl crate::Shown for Report {
    fn to_text(&self) -> String {
        let mut out = format!("ADICT in memory ({} run), one core:\n", if self.quick { "quick" } else { "full" });
        for s in &self.sizes {
            out += &format!(
                "  {:>9} keys: server puts {:>9.0}/s, client roots after a put {:>9.0}/s, proofs checked {:>9.0}/s, \
                 depth {:.1}\n",
                s.keys, s.server_puts_per_s, s.client_puts_per_s, s.proofs_checked_per_s, s.proof_depth
            );
        }
        out += &format!(
            "  baseline: the node hash (BLAKE3 keyed, 64 bytes) {:.0}/s; SHA-256 of a 65-byte node {:.0}/s\n",
            self.node_hashes_per_s, self.sha256_node_hashes_per_s
        );
        out += &crate::aip_protocol::to_text(&self.protocol);
        out += &self.vicos.to_text();
        out + &targets_text(&self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shown;

    #[test]
    fn a_tiny_run_over_the_local_backend_has_every_part() {
        let sizes = crate::vicos::Sizes {
            clients: vec![1, 3],
            object_bytes: vec![10_000, 100_000],
            size_clients: 2,
            ops: 40,
            success_clients: 3,
            thetas: vec![0.0, 0.99],
        };
        let report = run_with(Options { quick: true }, &sizes, Err("no S3 here".into()), |_| {}).unwrap();
        let v = &report.vicos;
        assert_eq!(v.provider_backend, "local");
        assert_eq!(v.scaling.iter().map(|p| p.clients).collect::<Vec<_>>(), [1, 3]);
        assert!(v.scaling.iter().all(|p| p.vicos.ops >= 40 && p.vicos.ops_s > 0.0 && p.native.is_none()));
        assert_eq!(v.sizes.len(), 2);
        assert_eq!(v.success.len(), 4);
        assert!(v.success.iter().all(|p| p.vicos.writes.done + p.vicos.reads.done == p.vicos.ops));
        assert_eq!(v.skipped.len(), 1);
        assert_eq!(report.targets.len(), 3);
        assert!(report.targets[1].met.is_none());
        assert!(report.to_text().contains("success rate"));
        assert_eq!(report.protocol.iter().map(|p| p.members).collect::<Vec<_>>(), [1, 3]);
    }
}
