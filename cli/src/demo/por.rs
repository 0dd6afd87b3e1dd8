//! Dynamic PoR in the demo: a file with a copy in the erasure-coded log, audited; then the
//! provider's disk loses all of U and a quarter of C, so that a read of the copy fails; the
//! audit catches it, and repair rebuilds U from C and the levels and re-encodes C.

use super::{sample_seeded, verdict, Story, World};
use crate::output::human;
use anyhow::Context;
use vouch_client::{ClientError, PutOptions, ViolationKind};
use vouch_misbehave::Misbehave;

/// The PoR audit's picks per part.
const LAMBDA: u32 = 64;

pub(super) async fn show(world: &mut World, story: &mut Story) -> anyhow::Result<()> {
    story.system("PoR", "retrievability: an erasure-coded log of every version, audited part by part, repaired");
    world.provider(Misbehave::None).await?;
    let client = world.client()?;
    let scan = sample_seeded(400_000, 7);
    let options = PutOptions { por: true, ..PutOptions::default() };
    let t = client.put_with("scan.raw", std::io::Cursor::new(scan.clone()), options, |_| {}).await?;
    story.step("put --por", format!("scan.raw v{}: {}, and its copy in the PoR log", t.version, human(t.bytes)));
    let audit = client.por().audit(LAMBDA).await?.into_result()?;
    story.step(
        "audit",
        format!(
            "the log proven retrievable: {} slots used, parts {} with {LAMBDA} picks each, proof {}, {:.0} ms",
            audit.slots_used,
            regions(&audit),
            human(audit.proof_bytes as u64),
            audit.seconds * 1e3
        ),
    );
    drop(client);

    world.stop().await?;
    let damage = vouch_testkit::damage::lose_u_and_a_quarter_of_c(&world.data, b"demo/por")
        .await
        .context("damaging the PoR log on the provider's disk")?;
    world.provider(Misbehave::None).await?;
    story.step(
        "damage",
        format!(
            "on the provider's disk: all {} slots of U lost, and the first quarter of C ({} object{}) overwritten",
            damage.raw_slots,
            damage.coded_objects,
            if damage.coded_objects == 1 { "" } else { "s" }
        ),
    );
    let client = world.client()?;
    let read = client.por().get("scan.raw", None, &mut Vec::new()).await.map(|_| ());
    story.lie(verdict("U lost (the copy's reads fail)", "get --por", ViolationKind::DataLost, read));
    let audited = client.por().audit(LAMBDA).await.and_then(|a| a.into_result()).map(|_| ());
    story.lie(verdict("a quarter of C overwritten", "audit --por", ViolationKind::BadPorAudit, audited));

    let repair = client.por().repair("scan.raw").await?;
    story.step(
        "repair",
        format!(
            "{} of {} slots restored from C and the levels, healed {:?}, {:.0} ms",
            repair.restored,
            repair.slots,
            repair.healed,
            repair.seconds * 1e3
        ),
    );
    let mut back = Vec::new();
    client.por().get("scan.raw", None, &mut back).await?;
    if back != scan {
        return Err(ClientError::BadInput("the repaired copy reads back other bytes".into()).into());
    }
    let audit = client.por().audit(LAMBDA).await?.into_result()?;
    story.step(
        "get --por",
        format!(
            "scan.raw read back through U verified and byte-exact; the audit passes again (parts {}: C was \
             re-encoded from U)",
            regions(&audit)
        ),
    );
    Ok(())
}

/// The parts an audit covered, by name.
fn regions(audit: &vouch_client::PorAuditReport) -> String {
    audit.parts.iter().map(|p| p.region.as_str()).collect::<Vec<_>>().join(", ")
}
