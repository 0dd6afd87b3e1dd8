//! Dynamic PoR (paper 002, Shi, Stefanov, Papamanthou, Sec. 6.2): Fig. 5-11.
//!
//! The paper ran 1 TB on seven disks; vouch's suite runs the log at 2^k slots of 4 KiB in a
//! local directory. Its text gives numbers for Fig. 7 and 11 only.

use super::figure::{paper_line, Axis, Body, Figure, Missing, Reading, Series, Source};
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

/// Fig. 5: bytes between client and server per 4 KB write.
fn write_bytes(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig5";
    let rows = data.read(id, "por").rows("writes")?;
    let (mut categories, mut por, mut merkle) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        categories.push(format!("{}, batch {}", slots(row)?, row.num("batch")?));
        por.push(Some(row.num("por_bytes_per_write")? / 1024.0));
        merkle.push(Some(row.num("merkle_bytes_per_write")? / 1024.0));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 5: client-server bandwidth for writing a 4 KB block".into(),
        body: Body::Bars {
            categories,
            y: Axis::linear("KB per write"),
            series: vec![
                (Source::Vouch, "vouch PoR".into(), por),
                (Source::Baseline, "a Merkle tree, the same writes".into(), merkle),
            ],
        },
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
    let rows = por.rows("writes")?;
    let pct = |bytes: f64| Some(100.0 * (bytes - block) / block);
    let (mut categories, mut ours, mut merkle) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        categories.push(format!("{}, batch {}", slots(row)?, row.num("batch")?));
        ours.push(pct(row.num("por_bytes_per_write")?));
        merkle.push(pct(row.num("merkle_bytes_per_write")?));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: format!("Fig. 6: bandwidth overhead per write, {} KB blocks", num(block / 1024.0)),
        body: Body::Bars {
            categories,
            y: Axis::linear("% of the block"),
            series: vec![(Source::Vouch, "vouch PoR".into(), ours), (Source::Baseline, "a Merkle tree".into(), merkle)],
        },
        note: "What a write sends beyond its block, in percent of the block. The suite writes 4 KiB blocks \
               only, so there is no block-size axis. The paper gives no number: the overhead does not depend on \
               the block size, so the larger the block, the smaller the percentage."
            .into(),
    })
}

/// Fig. 7: write throughput against the disk's.
fn throughput(data: &Suites) -> Result<Figure, Missing> {
    let id = "por-fig7";
    let rows = data.read(id, "por").rows("disk")?;
    let (mut categories, mut por, mut bound, mut disk) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        categories.push(format!("{}, batch {}", slots(row)?, row.num("batch")?));
        por.push(Some(row.num("por_mb_per_s")?));
        bound.push(Some(row.num("bound_mb_per_s")?));
        disk.push(Some(row.num("disk_mb_per_s")?));
    }
    let paper = vec![Some(20.0); rows.len()];
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 7: write throughput with ample bandwidth, 4 KB blocks".into(),
        body: Body::Bars {
            categories,
            y: Axis::log("MB/s of blocks written"),
            series: vec![
                (Source::Vouch, "vouch PoR, provider".into(), por),
                (Source::Baseline, "the disk's sequential writes / (2 log n)".into(), bound),
                (Source::Baseline, "the disk's flushed sequential writes".into(), disk),
                (Source::Paper, "paper, seven disks maxed out".into(), paper),
            ],
        },
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
    let rows = data.read(id, "por").rows("audits")?;
    let (mut categories, mut provider, mut client) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        categories.push(format!("{}, λ = {}", slots(row)?, row.num("lambda")?));
        provider.push(Some(row.num("provider_ms")?));
        client.push(Some(row.num("client_ms")?));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 8: time spent by the server for an audit".into(),
        body: Body::Bars {
            categories,
            y: Axis::linear("ms"),
            series: vec![
                (Source::Vouch, "vouch, provider".into(), provider),
                (Source::Vouch, "vouch, client check".into(), client),
            ],
        },
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
    let rows = data.read(id, "por").rows("audits")?;
    let (mut categories, mut sent) = (Vec::new(), Vec::new());
    for row in &rows {
        categories.push(format!("{}, λ = {}", slots(row)?, row.num("lambda")?));
        sent.push(Some(row.num("bytes")? / 1024.0));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 10: client-server bandwidth for an audit, 4 KB blocks".into(),
        body: Body::Bars {
            categories,
            y: Axis::linear("KB per audit"),
            series: vec![(Source::Vouch, "vouch, challenge and answer".into(), sent)],
        },
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
        Series::new(Source::Baseline, "a memory copy", vec![(step[0].0, copy), (step[step.len() - 1].0, copy)]),
        paper_line("paper, per level", 1600.0, &step),
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
