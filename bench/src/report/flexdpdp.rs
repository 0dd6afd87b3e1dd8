//! FlexDPDP (paper 000, Esiner, Küpçü, Özkasap): Fig. 6-10 and Table 2.
//!
//! The paper's timings include reading each block from disk (its Sec. 4); vouch's are in
//! memory, so the ratio to the same-run baseline is the figure to read.

use super::figure::{Axis, Body, Figure, Missing, Series, Source};
use super::page::num;
use super::Suites;

const PAPER: &str = "FlexDPDP";
const ON_DISK: &str = "The paper's times include reading each block from disk; vouch's are in memory.";

pub(super) fn figures(data: &Suites) -> Vec<Result<Figure, Missing>> {
    vec![build(data), speedup(data), update(data), multi_update(data), multi_verify(data), table2(data)]
}

/// Fig. 6: the time to build a FlexList from scratch, over cores.
fn build(data: &Suites) -> Result<Figure, Missing> {
    let id = "flexdpdp-fig6";
    let list = data.read(id, "flexlist");
    let threads = list.num("threads")?;
    let mut series = Vec::new();
    for row in list.rows("builds")? {
        let blocks = row.num("blocks")?;
        let name = format!("vouch, {} blocks", num(blocks));
        series.push(Series::new(
            Source::Vouch,
            &name,
            vec![(1.0, row.num("one_thread_s")?), (threads, row.num("all_threads_s")?)],
        ));
        let merkle = format!("rs_merkle, {} leaves, one thread", num(blocks));
        series.push(Series::new(Source::Baseline, &merkle, vec![(1.0, row.num("rs_merkle_s")?)]));
    }
    series.push(Series::new(Source::Paper, "paper, 4M blocks", vec![(1.0, 240.0), (12.0, 30.0)]));
    series.push(Series::new(Source::Paper, "paper, 500k blocks (before its optimisation)", vec![(1.0, 30.0)]));
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 6: time to build a FlexList from scratch".into(),
        body: Body::Lines { x: Axis::linear("cores"), y: Axis::log("seconds"), series },
        note: format!(
            "vouch builds over 2 KB blocks with one thread and with {threads} (this machine's cores); the \
             baseline is the rs_merkle crate building a binary Merkle tree over as many leaves. The paper: \
             4 million blocks from 240 s to 30 s on 12 cores; 500,000 blocks (1 GB) took half a minute \
             before its optimisations. {ON_DISK}"
        ),
    })
}

/// Fig. 7: the build's speed-up over one core.
fn speedup(data: &Suites) -> Result<Figure, Missing> {
    let id = "flexdpdp-fig7";
    let list = data.read(id, "flexlist");
    let threads = list.num("threads")?;
    let mut series = Vec::new();
    for row in list.rows("builds")? {
        let name = format!("vouch, {} blocks", num(row.num("blocks")?));
        series.push(Series::new(Source::Vouch, &name, vec![(1.0, 1.0), (threads, row.num("speedup")?)]));
    }
    series.push(Series::new(Source::Baseline, "ideal: p cores, p times faster", vec![(1.0, 1.0), (threads, threads)]));
    series.push(Series::new(Source::Paper, "paper, 500k blocks and more", vec![(8.0, 6.0), (12.0, 7.7)]));
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 7: speed-up of the build with several cores".into(),
        body: Body::Lines {
            x: Axis::linear("cores"),
            y: Axis::linear("speed-up (one core's time / p cores')"),
            series,
        },
        note: format!(
            "This machine has {threads} cores, so vouch's points stop there (a speed-up above the core count \
             is the noise of a short run). The paper: 6 on 8 cores and 7.7 on 12, for 500,000 blocks and more."
        ),
    })
}

/// Fig. 8: the time of one update (vouch measures it with its hashing, not without).
fn update(data: &Suites) -> Result<Figure, Missing> {
    let id = "flexdpdp-fig8";
    let list = data.read(id, "flexlist");
    let blocks = list.at("proof")?.num("blocks")?;
    let rows = list.rows("updates")?;
    let mut categories = Vec::new();
    let mut vouch = Vec::new();
    for row in &rows {
        categories.push(format!("{} edits", row.text("pattern")?));
        vouch.push(Some(1e3 * row.num("server_one_by_one_ms")? / row.num("edits")?));
    }
    let hash_us = 1e6 / list.at("baseline")?.num("raw_hash_82b_per_s")?;
    let depth = (blocks.log2() * 2.0).round();
    let floor = vec![Some(hash_us * depth); rows.len()];
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 8: time of one update, with its hash calculations".into(),
        body: Body::Bars {
            categories,
            y: Axis::linear("µs per update"),
            series: vec![
                (Source::Vouch, "vouch, one update with its hashing".into(), vouch),
                (Source::Baseline, format!("{depth} raw SHA-256 node hashes (2 log2 n)"), floor),
            ],
        },
        note: format!(
            "One update (modify, insert or remove, in turn) on a FlexList of {} blocks, its hashes \
             recalculated; the baseline is the raw hash rate over 2 log2 n nodes, an estimate of a search path's \
             length, not a count of it. vouch \
             does not time an update without its hashing. The paper: the hash calculations take 90% of an \
             update's time, ten times the update alone at 2 million nodes. {ON_DISK}",
            num(blocks)
        ),
    })
}

/// Fig. 9: a multi-update against as many single updates, at the server.
fn multi_update(data: &Suites) -> Result<Figure, Missing> {
    let id = "flexdpdp-fig9";
    pair(
        data,
        id,
        ("server_multi_ms", "server_one_by_one_ms"),
        "Fig. 9: a multi-update against a series of single updates (server)",
        [Some(13.0), None],
        [Some(53.0), None],
        "At the server, 300 edits of 2 KB blocks (600 KB) on a FlexList of 500,000 blocks, in one \
         multiUpdate (Alg. 3.3) and as 300 single updates. The paper, 1 GB file, 300 consecutive edits: \
         53 ms to 13 ms (a 60% gain).",
    )
}

/// Fig. 10: verifying a multi-update against verifying each update.
fn multi_verify(data: &Suites) -> Result<Figure, Missing> {
    let id = "flexdpdp-fig10";
    pair(
        data,
        id,
        ("client_multi_ms", "client_one_by_one_ms"),
        "Fig. 10: verifying a multi-update against standard verifies (client)",
        [Some(5.0), None],
        [Some(45.0), None],
        "At the client, the same 300 edits verified at once (verifyMultiUpdate through a temporary \
         FlexList, Alg. A.2) and one by one. The paper, 1 GB file, 300 KB update: 45 ms to under 5 ms; \
         with random edits the multi-verify is still twice as fast.",
    )
}

/// Bars of a multi and a one-by-one figure per edit pattern, with the paper's pair for
/// consecutive edits.
fn pair(
    data: &Suites,
    id: &'static str,
    (multi, single): (&str, &str),
    title: &str,
    paper_multi: [Option<f64>; 2],
    paper_single: [Option<f64>; 2],
    note: &str,
) -> Result<Figure, Missing> {
    let rows = data.read(id, "flexlist").rows("updates")?;
    let patterns: Vec<String> = rows.iter().map(|r| r.text("pattern").map(str::to_string)).collect::<Result<_, _>>()?;
    let column = |key: &str| rows.iter().map(|r| r.num(key).map(Some)).collect::<Result<Vec<_>, _>>();
    // The paper's pairs are for consecutive edits.
    let paper = |values: [Option<f64>; 2]| {
        patterns.iter().map(|p| if p == "consecutive" { values[0] } else { values[1] }).collect()
    };
    Ok(Figure {
        id,
        paper: PAPER,
        title: title.into(),
        body: Body::Bars {
            categories: patterns.iter().map(|p| format!("{p} edits")).collect(),
            y: Axis::linear("ms"),
            series: vec![
                (Source::Vouch, "vouch, multi".into(), column(multi)?),
                (Source::Baseline, "vouch, one by one".into(), column(single)?),
                (Source::Paper, "paper, multi".into(), paper(paper_multi)),
                (Source::Paper, "paper, one by one".into(), paper(paper_single)),
            ],
        },
        note: format!("{note} The one-by-one bars are the same run's baseline. {ON_DISK}"),
    })
}

/// Table 2: proof time and size for updates of each kind.
fn table2(data: &Suites) -> Result<Figure, Missing> {
    let id = "flexdpdp-table2";
    let replay = data.read(id, "e2e");
    let mut rows = Vec::new();
    let paper = [("random", "10 ms, 11 KB", "30 ms, 70 KB"), ("consecutive", "6 ms, 4 KB", "7 ms, 17 KB")];
    for row in replay.rows("vcs")? {
        let pattern = row.text("pattern")?;
        let (small, large) = paper.iter().find(|p| p.0 == pattern).map_or(("", ""), |p| (p.1, p.2));
        let changed = row.num("changed_bytes_per_commit")? / 1024.0;
        rows.push(vec![
            format!("{} KB {pattern}", num(changed)),
            small.into(),
            format!("{} ms", num(row.num("server_ms")?)),
            format!("{} KB", num(row.num("file_proof_bytes")? / 1024.0)),
        ]);
        rows.push(vec![format!("200 KB {pattern}"), large.into(), "not measured".into(), String::new()]);
    }
    for row in data.read(id, "flexlist").rows("updates")? {
        rows.push(vec![
            format!("{} edits of 2 KB, {}", num(row.num("edits")?), row.text("pattern")?),
            String::new(),
            format!("{} ms", num(row.num("server_multi_ms")?)),
            format!("{} KB", num(row.num("proof_bytes_multi")? / 1024.0)),
        ]);
    }
    let file = replay.rows("vcs")?.first().map(|r| r.num("file_bytes")).transpose()?.unwrap_or(0.0);
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Table 2: proof time and size for updates of each kind".into(),
        body: Body::Table {
            header: [
                "update".into(),
                "paper: server time, proof".into(),
                "vouch: server time".into(),
                "vouch: proof".into(),
            ]
            .into(),
            rows,
        },
        note: format!(
            "vouch's rows of 20 KB are `vouch sync` commits to a {} MB file through the provider (median \
             provider time, the commit's multi-update proof); the rows of 300 edits are multiUpdates in memory \
             on 500,000 blocks. The paper: a 1 GB file of 2 KB blocks on a PlanetLab server.",
            num(file / 1e6)
        ),
    })
}
