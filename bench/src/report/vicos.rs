//! VICOS (paper 003, Brandenburger, Cachin, Knežević, Sec. 6): Fig. 4-8.
//!
//! The native object store is measured only when the suite has S3 (`VOUCH_S3_*`); without
//! it, the figures show VICOS alone and say so.

use super::figure::{level, Axis, Body, Figure, Missing, Reading, Series, Source};
use super::page::num;
use super::Suites;

const PAPER: &str = "VICOS";

pub(super) fn figures(data: &Suites) -> Vec<Result<Figure, Missing>> {
    vec![signatures(data), sizes(data), scaling(data), selection(data), success(data)]
}

/// Fig. 4: the time to sign and verify, per scheme (log scale, as the paper's).
fn signatures(data: &Suites) -> Result<Figure, Missing> {
    let id = "vicos-fig4";
    let aip = data.read(id, "aip");
    let mut series = Vec::new();
    for row in aip.rows("signing")? {
        let name = format!("vouch, {} ({} B)", row.text("scheme")?, num(row.num("signature_bytes")?));
        series.push((Source::Vouch, name, vec![Some(row.num("sign_us")?), Some(row.num("verify_us")?)]));
    }
    let sha = 1e6 / aip.num("sha256_node_hashes_per_s")?;
    series.push((Source::Baseline, "one SHA-256 of 65 bytes".into(), vec![Some(sha), Some(sha)]));
    series.push((Source::Paper, "paper, HMAC-SHA1 (under)".into(), vec![Some(20.0), Some(20.0)]));
    series.push((Source::Paper, "paper, RSA-2048".into(), vec![Some(5000.0), Some(220.0)]));
    series.push((Source::Paper, "paper, DSA-2048".into(), vec![Some(4000.0), Some(1500.0)]));
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 4: time to sign and to verify an operation's statement".into(),
        body: Body::Bars { categories: vec!["sign".into(), "verify".into()], y: Axis::log("µs"), series },
        note: "The two schemes a vouch group can use, on a statement the size of an INVOKE's: HMAC-SHA256 \
               with the group's key, and Ed25519 with a key per member (strict verification). The paper, in \
               Java: RSA about 5 ms to sign and 220 µs to verify, DSA about 4 ms and 1.5 ms, HMAC under 20 µs."
            .into(),
    })
}

/// The native run beside VICOS's, when the suite had S3.
fn native(row: &Reading) -> Option<f64> {
    row.at("native").ok()?.num("ops_s").ok()
}

fn native_note(aip: &Reading) -> String {
    match aip.at("vicos").and_then(|v| v.text("native")) {
        Ok(native) => format!("The baseline is {native}, the same operations without VICOS."),
        Err(_) => "The native baseline needs S3 (run with `eval \"$(scripts/minio.sh start DIR)\"` first): it \
                   was not measured in this run."
            .into(),
    }
}

/// Fig. 5: throughput against the object's size.
fn sizes(data: &Suites) -> Result<Figure, Missing> {
    let id = "vicos-fig5";
    let aip = data.read(id, "aip");
    let rows = aip.at("vicos")?.rows("sizes")?;
    let mb_s = |row: &Reading, ops: f64| Ok(ops * row.num("object_bytes")? / 1e6);
    let mut vicos = Vec::new();
    let mut base = Vec::new();
    for row in &rows {
        let kb = row.num("object_bytes")? / 1e3;
        vicos.push((kb, mb_s(row, row.at("vicos")?.num("ops_s")?)?));
        if let Some(ops) = native(row) {
            base.push((kb, mb_s(row, ops)?));
        }
    }
    let clients = rows[0].num("clients")?;
    let mut series = vec![Series::new(Source::Vouch, "vouch VICOS", vicos)];
    if !base.is_empty() {
        series.push(Series::new(Source::Baseline, "native object store", base));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 5: throughput against object size".into(),
        body: Body::Lines { x: Axis::log("object size, kB"), y: Axis::log("MB/s"), series },
        note: format!(
            "{} clients, half reads and half writes on disjoint objects. {} The paper, one client in a \
             datacenter: VICOS cost 15.8% of the read and 17.7% of the write throughput (16.2% and 24.0% more \
             latency), about the same at every size.",
            num(clients),
            native_note(&aip)
        ),
    })
}

/// Fig. 6: throughput against the number of clients.
fn scaling(data: &Suites) -> Result<Figure, Missing> {
    let id = "vicos-fig6";
    let aip = data.read(id, "aip");
    let rows = aip.at("vicos")?.rows("scaling")?;
    let (mut vicos, mut base, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let clients = row.num("clients")?;
        vicos.push((clients, row.at("vicos")?.num("ops_s")?));
        if let Some(ops) = native(row) {
            base.push((clients, ops));
        }
        if let Ok(ops) = row.at("direct").and_then(|d| d.num("ops_s")) {
            direct.push((clients, ops));
        }
    }
    let mut series = vec![Series::new(Source::Vouch, "vouch VICOS, objects through the provider", vicos)];
    if !direct.is_empty() {
        series.push(Series::new(Source::Vouch, "vouch VICOS, objects reached directly", direct));
    }
    if !base.is_empty() {
        series.push(Series::new(Source::Baseline, "native object store", base));
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 6: throughput against the number of clients, 10 kB objects".into(),
        body: Body::Lines { x: Axis::log("clients"), y: Axis::log("operations/s"), series },
        note: format!(
            "80% reads, reads and writes on disjoint halves of 64 objects, as in the paper. {} The paper: \
             native throughput scales linearly until the network saturates at 64 clients, VICOS at 32 in a \
             datacenter and at 8 over a wide area.",
            native_note(&aip)
        ),
    })
}

/// Fig. 7: how often the workloads' sampler picks each object.
fn selection(data: &Suites) -> Result<Figure, Missing> {
    let id = "vicos-fig7";
    let mut series = Vec::new();
    for row in data.read(id, "aip").rows("selection")? {
        let rates = row.value.get("percent_by_rank").and_then(|v| v.as_array());
        let rates = rates.ok_or_else(|| Missing { figure: id, suite: "aip", what: "percent_by_rank".into() })?;
        let points = rates.iter().enumerate().filter_map(|(i, p)| Some(((i + 1) as f64, p.as_f64()?))).collect();
        series.push(Series::new(Source::Vouch, &format!("vouch, θ = {}", row.num("theta")?), points));
    }
    series.push(Series::new(Source::Paper, "paper, θ = 0.99", vec![(1.0, 20.0), (64.0, 0.3)]));
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 7: selection rate of each object under Zipf's law".into(),
        body: Body::Lines { x: Axis::log("object rank"), y: Axis::log("% of 10,000 selections"), series },
        note: "The sampler the VICOS workloads draw their keys from, 10,000 selections over 64 objects at each \
               θ. The paper: at θ = 0.99 the first object gets about 20% and the last about 0.3%; θ = 0 is \
               uniform."
            .into(),
    })
}

/// Fig. 8: the success rate of operations under conflicts.
fn success(data: &Suites) -> Result<Figure, Missing> {
    let id = "vicos-fig8";
    let rows = data.read(id, "aip").at("vicos")?.rows("success")?;
    let mut series = Vec::new();
    for (mode, source, name) in
        [("compatible", Source::Vouch, "vouch VICOS"), ("commutative", Source::Baseline, "commuting operations (ACOP)")]
    {
        for kind in ["reads", "writes"] {
            let points = rows
                .iter()
                .filter(|r| r.text("mode").is_ok_and(|m| m == mode))
                .map(|r| Ok((r.num("theta")?, 100.0 * r.at("vicos")?.at(kind)?.num("success_rate")?)))
                .collect::<Result<Vec<_>, Missing>>()?;
            series.push(Series::new(source, &format!("{name}, {kind}"), points));
        }
    }
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.clone()).collect();
    series.push(level(Source::Paper, "paper, VICOS writes", 100.0, &all));
    let clients = rows[0].num("clients")?;
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 8: success rate of conflicting operations, 10 kB objects".into(),
        body: Body::Lines { x: Axis::linear("Zipf θ"), y: Axis::linear("% of operations that succeed"), series },
        note: format!(
            "{} clients (the paper: 16), 20% reads, keys drawn from Zipf(θ). The baseline is the same run \
             with commuting operations only (ACOP), where a write aborts after a conflicting one. The paper: \
             VICOS's writes succeed 100% of the time; ACOP aborts more writes as θ grows; reads behave alike.",
            num(clients)
        ),
    })
}
