//! DPDP (paper 001, Erway, Küpçü, Papamanthou, Tamassia, Sec. 8): Fig. 2 and Table 3.

use super::figure::{points_by, Axis, Body, Figure, Missing, Series, Source};
use super::page::num;
use super::Suites;

const PAPER: &str = "DPDP";

pub(super) fn figures(data: &Suites) -> Vec<Result<Figure, Missing>> {
    vec![proof_size(data), proof_time(data), table3(data)]
}

fn file_note(data: &Suites, id: &'static str) -> Result<String, Missing> {
    let pdp = data.read(id, "pdp");
    Ok(format!(
        "A possession proof of {} challenged blocks over a {} MB file (the paper: 460 blocks, 99% detection \
         of 1% lost, over 1 GB).",
        num(pdp.num("challenges")?),
        num(pdp.num("file_bytes")? / 1e6)
    ))
}

/// Fig. 2(a): the proof's size against the block size.
fn proof_size(data: &Suites) -> Result<Figure, Missing> {
    let id = "dpdp-fig2a";
    let rows = data.read(id, "pdp").rows("proofs")?;
    let kb = |key: &'static str| move |r: &super::figure::Reading| Ok(r.num(key)? / 1024.0);
    let x = |r: &super::figure::Reading| Ok(r.num("block_bytes")? / 1024.0);
    let by_block = |f: &dyn Fn(&super::figure::Reading) -> Result<f64, Missing>| {
        rows.iter().map(|r| Ok((x(r)?, f(r)?))).collect::<Result<Vec<_>, Missing>>()
    };
    let series = vec![
        Series::new(Source::Vouch, "vouch, whole proof", by_block(&kb("proof_bytes"))?),
        Series::new(Source::Vouch, "vouch, its FlexList part", by_block(&kb("list_bytes"))?),
        Series::new(Source::Baseline, "ideal Merkle multi-proof", by_block(&kb("ideal_merkle_bytes"))?),
        Series::new(Source::Paper, "paper, 16 KB blocks (its optimum)", vec![(16.0, 415.0)]),
    ];
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 2(a): proof size against block size".into(),
        body: Body::Lines { x: Axis::log("block size, KB"), y: Axis::linear("proof size, KB"), series },
        note: format!(
            "{} The baseline is the size an ideal binary Merkle multi-proof of the same challenges would \
             have. The paper: 415 KB at 16 KB blocks, its optimum; the rest of a proof grows linearly with \
             the block size.",
            file_note(data, id)?
        ),
    })
}

/// Fig. 2(b): the server's time to answer a challenge against the block size.
fn proof_time(data: &Suites) -> Result<Figure, Missing> {
    let id = "dpdp-fig2b";
    let pdp = data.read(id, "pdp");
    let rows = pdp.rows("proofs")?;
    let challenges = pdp.num("challenges")?;
    let sha = pdp.at("baseline")?.num("sha256_mb_per_s")?;
    let kb = |r: &super::figure::Reading| Ok(r.num("block_bytes")? / 1024.0);
    let gen = rows.iter().map(|r| Ok((kb(r)?, r.num("gen_ms")?))).collect::<Result<Vec<_>, Missing>>()?;
    let verify = rows.iter().map(|r| Ok((kb(r)?, r.num("verify_ms")?))).collect::<Result<Vec<_>, Missing>>()?;
    let hashed = points_by(&rows, "block_bytes", |r| Ok(challenges * r.num("block_bytes")? / (sha * 1e6) * 1e3))?;
    let hashed = hashed.into_iter().map(|(b, ms)| (b / 1024.0, ms)).collect();
    let series = vec![
        Series::new(Source::Vouch, "vouch, server proof", gen),
        Series::new(Source::Vouch, "vouch, client verify", verify),
        Series::new(Source::Baseline, "SHA-256 over the challenged blocks", hashed),
        Series::new(Source::Paper, "paper, server proof", vec![(1.0, 40.0), (16.0, 30.0)]),
    ];
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Fig. 2(b): server time to answer a challenge against block size".into(),
        body: Body::Lines { x: Axis::log("block size, KB"), y: Axis::log("ms"), series },
        note: format!(
            "{} The baseline is one SHA-256 pass over the challenged blocks at this run's rate: the least a \
             prover reading them must spend. The paper: under 40 ms at 1 KB blocks (its point is that \
             bound), 30 ms at 16 KB; it is dominated by computing the block sum M.",
            file_note(data, id)?
        ),
    })
}

/// Table 3: an authenticated version-control server's proof per commit.
fn table3(data: &Suites) -> Result<Figure, Missing> {
    let id = "dpdp-table3";
    let e2e = data.read(id, "e2e");
    let mut rows = Vec::new();
    for row in e2e.rows("vcs")? {
        rows.push(vec![
            format!(
                "a commit changing {} KB, {}",
                num(row.num("changed_bytes_per_commit")? / 1024.0),
                row.text("pattern")?
            ),
            "9-15 KB, about 1 ms".into(),
            format!("{} KB", num(row.num("all_proof_bytes")? / 1024.0)),
            format!("{} ms", num(row.num("server_ms")?)),
        ]);
    }
    if let Ok(repo) = e2e.at("repo") {
        let median = repo.at("median")?;
        rows.push(vec![
            "a real repository's commit (median)".into(),
            "9-15 KB, about 1 ms".into(),
            format!("{} KB", num(median.num("all_proof_bytes")? / 1024.0)),
            format!("{} ms", num(median.num("server_ms")?)),
        ]);
    }
    for row in e2e.rows("names")? {
        rows.push(vec![
            format!("a file's entry in a directory of {} names", num(row.num("names")?)),
            String::new(),
            String::new(),
            format!("{} ms", num(row.num("commit_server_us")? / 1e3)),
        ]);
    }
    Ok(Figure {
        id,
        paper: PAPER,
        title: "Table 3: an authenticated version-control server, per commit".into(),
        body: Body::Table {
            header: [
                "commit".into(),
                "paper: proof, server time".into(),
                "vouch: proof".into(),
                "vouch: server time".into(),
            ]
            .into(),
            rows,
        },
        note: "vouch's commits are `vouch sync` of a file with 20 KB changed, every proof of the commit \
               counted (the file's multi-update, its version list and the directory); with `vouch bench e2e \
               --repo PATH`, a real repository's history too. The paper's repositories (rsync, Samba, Tcl: \
               about a dozen updates a commit) gave proofs of 9 to 15 KB computed in about 1 ms."
            .into(),
    })
}
