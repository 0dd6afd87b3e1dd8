//! Dynamic PoR (paper 002, Shi, Stefanov, Papamanthou, Sec. 6.2): Fig. 5-11.
//!
//! The paper ran 1 TB on seven disks; vouch's suite runs the log at 2^k slots of 4 KiB in a
//! local directory. Its text gives numbers for Fig. 7 and 11 only.

use super::figure::{bars_of, level, Axis, Body, Figure, Missing, Reading, Series, Source};
use super::page::num;
use super::Suites;

const PAPER: &str = "PoR";

pub(super) fn figures(data: &Suites) -> Vec<Result<Figure, Missing>> {
    vec![
        write_bytes(data),
        overhead(data),
        throughput(data),
        audit_time(data),
        audit_io(data),
        audit_bytes(data),
        coding(data),
    ]
}

/// `n = 2^k` slots of the log, in words.
fn slots(row: &Reading) -> Result<String, Missing> {
    Ok(format!("2^{} slots", row.num("log_capacity")?))
}

/// A row of writes: its log's size and batch.
fn batch(row: &Reading) -> Result<String, Missing> {
    Ok(format!("{}, batch {}", slots(row)?, row.num("batch")?))
}

/// A row of audits: its log's size and λ.
fn lambda(row: &Reading) -> Result<String, Missing> {
    Ok(format!("{}, λ = {}", slots(row)?, row.num("lambda")?))
}

/// Fig. 5: bytes between client and server per 4 KB write.
fn write_bytes(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig5";
    let rows = data.read(id, "por").rows("writes")?;
    let body = bars_of(
        &rows,
        &batch,
        Axis::linear("KB per write"),
        &[
            (Source::Vouch, "vouch PoR", &|r| Ok(r.num("por_bytes_per_write")? / 1024.0)),
            (Source::Baseline, "a Merkle tree, the same writes", &|r| Ok(r.num("merkle_bytes_per_write")? / 1024.0)),
        ],
    )?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 5: client-server bandwidth for writing a 4 KB block".into(),
        body,
        note: "Both directions, per 4 KB write, in batches of 1 to 64 writes. The baseline is a standard Merkle \
               hash tree over the same blocks, as in the paper. The paper gives no number: its scheme's \
               bandwidth is comparable to the Merkle tree's."
            .into(),
    })
}

/// Fig. 6: the bandwidth overhead in percent of the block written.
fn overhead(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig6";
    let por = data.read(id, "por");
    let block = por.num("block_bytes")?;
    let pct = |key: &'static str| move |r: &Reading| Ok(100.0 * (r.num(key)? - block) / block);
    let body = bars_of(
        &por.rows("writes")?,
        &batch,
        Axis::linear("% of the block"),
        &[
            (Source::Vouch, "vouch PoR", &pct("por_bytes_per_write")),
            (Source::Baseline, "a Merkle tree", &pct("merkle_bytes_per_write")),
        ],
    )?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: format!("Fig. 6: bandwidth overhead per write, {} KB blocks", num(block / 1024.0)),
        body,
        note: "What a write sends beyond its block, in percent of the block. The suite writes 4 KiB blocks \
               only, so there is no block-size axis. The paper gives no number: the overhead does not depend on \
               the block size, so the larger the block, the smaller the percentage."
            .into(),
    })
}

/// Fig. 7: write throughput against the disk's.
fn throughput(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig7";
    let body = bars_of(
        &data.read(id, "por").rows("disk")?,
        &batch,
        Axis::log("MB/s of blocks written"),
        &[
            (Source::Vouch, "vouch PoR, provider", &|r| r.num("por_mb_per_s")),
            (Source::Baseline, "the disk's sequential writes / (2 log n)", &|r| r.num("bound_mb_per_s")),
            (Source::Baseline, "the disk's flushed sequential writes", &|r| r.num("disk_mb_per_s")),
            (Source::Paper, "paper, seven disks maxed out", &|_| Ok(20.0)),
        ],
    )?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 7: write throughput with ample bandwidth, 4 KB blocks".into(),
        body,
        note: "The provider's throughput writing the log (blocks, levels, checksums) to a local directory, \
               beside this disk's flushed sequential writes and the bound they set when every write moves \
               2 log n levels. The paper: roughly 20 MB/s with its disks maxed out, the smallest 10 levels of \
               H cached in memory."
            .into(),
    })
}

/// Fig. 8: the server's time for an audit.
fn audit_time(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig8";
    let body = bars_of(
        &data.read(id, "por").rows("audits")?,
        &lambda,
        Axis::linear("ms"),
        &[
            (Source::Vouch, "vouch, provider", &|r| r.num("provider_ms")),
            (Source::Vouch, "vouch, client check", &|r| r.num("client_ms")),
        ],
    )?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 8: time spent by the server for an audit".into(),
        body,
        note: "An aggregated audit (Sec. 5.5) of λ = 128 slots of every part of the log, its data in the page \
               cache: vouch's provider time is computation, and the client's check is beside it. The paper gives \
               no number: its time is dominated by disk seeks, about λ log n seeks of 12 ms over seven disks."
            .into(),
    })
}

/// Fig. 9: the disk I/O of an audit (vouch counts bytes sent, not read).
fn audit_io(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig9";
    let rows = data.read(id, "por").rows("audits")?;
    let mut table = Vec::new();
    for row in &rows {
        let (lambda, parts) = (row.num("lambda")?, row.num("parts")?);
        table.push(vec![
            slots(row)?,
            num(parts),
            num(lambda),
            format!("{} KB", num(lambda * parts * 4.0)),
            format!("{} KB", num(row.num("bytes")? / 1024.0)),
        ]);
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 9: disk I/O for each audit, 4 KB blocks".into(),
        body: Body::Table {
            header: [
                "log".into(),
                "parts".into(),
                "λ".into(),
                "blocks read (λ per part)".into(),
                "sent (Fig. 10)".into(),
            ]
            .into(),
            rows: table,
        },
        note: "vouch's provider reads λ blocks of every part it audits; the suite does not count the disk's \
               bytes, so this table gives the blocks an audit reads, computed from its λ and parts, beside what \
               it sent. The paper gives no number: the audit's disk I/O is O(λβ log² n), which is why its line \
               curves slightly."
            .into(),
    })
}

/// Fig. 10: the bandwidth of an audit.
fn audit_bytes(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig10";
    let body = bars_of(
        &data.read(id, "por").rows("audits")?,
        &lambda,
        Axis::linear("KB per audit"),
        &[(Source::Vouch, "vouch, challenge and answer", &|r| Ok(r.num("bytes")? / 1024.0))],
    )?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 10: client-server bandwidth for an audit, 4 KB blocks".into(),
        body,
        note: "The challenge and the aggregated answer together. The paper gives no number: its implementation \
               sends β log n + O(λ log n)."
            .into(),
    })
}

/// Fig. 11: the hierarchical code's throughput per level.
fn coding(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig11";
    let por = data.read(id, "por");
    let line = |key: &str| por.points("levels", "level", key);
    let step = line("step_mb_per_s")?;
    let copy = por.at("baseline")?.num("memory_copy_mb_per_s")?;
    let series = vec![
        Series::new(Source::Vouch, "vouch, a level's step (HRebuildX and Y)", step.clone()),
        Series::new(Source::Vouch, "vouch, a level rebuilt", line("rebuild_mb_per_s")?),
        Series::new(Source::Vouch, "vouch, a level encoded from scratch", line("encode_mb_per_s")?),
        Series::new(Source::Baseline, "reed-solomon-simd, the same blocks", line("reed_solomon_simd_mb_per_s")?),
        level(Source::Baseline, "a memory copy", copy, &step),
        level(Source::Paper, "paper, per level", 1600.0, &step),
    ];
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 11: throughput of the hierarchical erasure code, per level".into(),
        body: Body::Lines {
            x: Axis::linear("level (2^level blocks of 4 KiB)"),
            y: Axis::log("MB/s, one core"),
            series,
        },
        note: format!(
            "The incrementally constructible code over Z_p (Fig. 4 of the paper: HAdd, HRebuild, mix), one \
             core, with the {} field kernel; the baselines are reed-solomon-simd encoding the same blocks and a \
             plain memory copy. The paper: over 1600 MB/s per level.",
            por.text("kernel")?
        ),
    })
}
