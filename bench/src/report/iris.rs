//! Iris (paper 004, Stefanov, van Dijk, Juels, Oprea, Sec. 7-8): Fig. 4-7, through vouch's
//! S3 gateway (the trusted portal).
//!
//! The raw S3 baselines are measured only when the suite has S3 (`VOUCH_S3_*`).

use super::figure::{level, Axis, Body, Figure, Missing, Reading, Series, Source};
use super::page::num;
use super::Suites;

const PAPER: &str = "Iris";

pub(super) fn figures(data: &Suites) -> Vec<Result<Figure, Missing>> {
    vec![cache(data), throughput(data), encoding(data), latency(data)]
}

fn raw_note(gateway: &Reading) -> String {
    match gateway.text("raw") {
        Ok(raw) => format!("The baseline is {raw}, without the gateway."),
        Err(_) => "The raw S3 baseline needs S3 (run with `eval \"$(scripts/minio.sh start DIR)\"` first): it was \
                   not measured in this run."
            .into(),
    }
}

/// Fig. 4: the portal's cache size against a workload's speed.
fn cache(data: &Suites) -> Result<Figure, Missing> {
    let id = "iris-fig4";
    let gateway = data.read(id, "gateway");
    let sweep = gateway.at("cache_sweep")?;
    let ops = sweep.points("sizes", "cache_mb", "ops_s")?;
    let hits = sweep.points("sizes", "cache_mb", "hit_rate")?;
    let mut series = vec![Series::new(Source::Vouch, "vouch gateway", ops.clone())];
    if let Ok(raw) = sweep.num("raw_ops_s") {
        series.push(level(Source::Baseline, "raw S3", raw, &ops));
    }
    let hit_rates: Vec<String> = hits.iter().map(|(mb, h)| format!("{} MB: {:.0}%", num(*mb), 100.0 * h)).collect();
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 4: the portal's cache size against a workload's speed".into(),
        body: Body::Lines { x: Axis::linear("cache, MB"), y: Axis::linear("GETs/s"), series },
        note: format!(
            "{} clients reading {} objects of {} kB, 80% of the reads on 20% of the keys, through gateways \
             with caches of each size (hit rates {}). {} The paper gives no number: Tar, Untar and IOZone gain \
             much from a Merkle-tree cache of 5 to 10 MB, sequential and random reads and writes hardly.",
            num(sweep.num("clients")?),
            num(sweep.num("objects")?),
            num(sweep.num("object_bytes")? / 1e3),
            hit_rates.join(", "),
            raw_note(&gateway)
        ),
    })
}

/// Fig. 5: sequential throughput against the number of clients.
fn throughput(data: &Suites) -> Result<Figure, Missing> {
    let id = "iris-fig5";
    let gateway = data.read(id, "gateway");
    let rows = gateway.rows("sequential")?;
    let line = |side: &str, key: &str| {
        rows.iter().filter_map(|r| Some((r.num("clients").ok()?, r.at(side).ok()?.num(key).ok()?))).collect::<Vec<_>>()
    };
    let write = line("gateway", "write_mb_s");
    if write.is_empty() {
        return Err(Missing { figure: id, suite: "gateway", what: "sequential[].gateway.write_mb_s".into() });
    }
    let mut series = vec![
        Series::new(Source::Vouch, "vouch gateway, writes", write),
        Series::new(Source::Vouch, "vouch gateway, reads", line("gateway", "read_mb_s")),
    ];
    for (side, name) in [("raw", "raw S3"), ("proxy", "a pass-through proxy")] {
        for (key, what) in [("write_mb_s", "writes"), ("read_mb_s", "reads")] {
            let points = line(side, key);
            if !points.is_empty() {
                series.push(Series::new(Source::Baseline, &format!("{name}, {what}"), points));
            }
        }
    }
    series.push(Series::new(Source::Paper, "paper, reads and writes (mean)", vec![(10.0, 280.0), (100.0, 250.0)]));
    let object = rows[0].num("object_bytes")?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 5: sequential throughput against the number of clients".into(),
        body: Body::Lines { x: Axis::log("clients"), y: Axis::log("MB/s"), series },
        note: format!(
            "Each client writes whole objects of {} MiB, then reads them back, verified; every process of the run \
             shares this machine's cores. {} The paper: 250 to 280 MB/s for 10 to 100 clients, its portal never \
             the bottleneck (network or disks were).",
            num(object / 1048576.0),
            raw_note(&gateway)
        ),
    })
}

/// Fig. 6: the PoR encoding rate.
fn encoding(data: &Suites) -> Result<Figure, Missing> {
    let id = "iris-fig6";
    let por = data.read(id, "por");
    let line = |key: &str| por.points("levels", "level", key);
    let encode = line("encode_mb_per_s")?;
    let series = vec![
        Series::new(Source::Vouch, "vouch, a level encoded", encode.clone()),
        Series::new(Source::Vouch, "vouch, a write's step", line("step_mb_per_s")?),
        Series::new(Source::Baseline, "reed-solomon-simd", line("reed_solomon_simd_mb_per_s")?),
        level(Source::Paper, "paper, 4 KB blocks", 500.0, &encode),
    ];
    Ok(Figure {
        id,
        paper: PAPER,
        title: format!("Fig. 6: PoR encoding speed, {} KB blocks", num(por.num("block_bytes")? / 1024.0)),
        body: Body::Lines { x: Axis::linear("level (2^level blocks)"), y: Axis::log("MB/s, one core"), series },
        note: "vouch's PoR code (Shi-Stefanov-Papamanthou) encoding the blocks of one level from scratch, and the \
               incremental step each write pays, beside reed-solomon-simd on the same blocks; the suite uses 4 KiB \
               blocks only. The paper: fast enough to sustain 500 MB/s with 4 KB blocks."
            .into(),
    })
}

/// Fig. 7: the latency of single operations.
fn latency(data: &Suites) -> Result<Figure, Missing> {
    let id = "iris-fig7";
    let gateway = data.read(id, "gateway");
    let latency = gateway.at("latency")?;
    let kb = num(latency.num("object_bytes")? / 1e3);
    let p50 = |key: &str| latency.at(key).and_then(|l| l.num("p50_ms")).ok();
    let categories =
        vec![format!("{kb} kB PUT"), format!("{kb} kB GET, cold cache"), format!("{kb} kB GET, hot cache")];
    let vouch = vec![p50("put"), p50("get_cold"), p50("get_hot")];
    if vouch.iter().all(Option::is_none) {
        return Err(Missing { figure: id, suite: "gateway", what: "latency.*.p50_ms".into() });
    }
    let mut series = vec![(Source::Vouch, "vouch gateway, median".into(), vouch)];
    if p50("raw_put").is_some() || p50("raw_get").is_some() {
        series.push((Source::Baseline, "raw S3, median".into(), vec![p50("raw_put"), p50("raw_get"), p50("raw_get")]));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 7: latency of single operations".into(),
        body: Body::Bars { categories, y: Axis::log("ms"), series },
        note: format!(
            "One client's sequential requests, on loopback: a cold GET is an object's first read through a \
             gateway with its cache off. {} The paper: over 84% of the latency is network (client-portal and \
             portal-cloud), the portal's processing under 14% with a cold cache and under 29% with a hot one.",
            raw_note(&gateway)
        ),
    })
}
