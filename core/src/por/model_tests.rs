//! The pure parts together: an in-memory server holding U, H and C, the client replaying
//! every rebuild on checksums, audits, and repair from any half of each level; then servers
//! that lie in each way the construction must catch.

use super::audit::{parts, picks, prove_part, verify_part, AuditFailure, Part};
use super::checksum::{Checksum, ChecksumKey, SealKey, SealedChecksum};
use super::code::{encode, rebuild_level, Rebuild, Schedule};
use super::field::P;
use super::repair::{recover_raw, RegionRead};
use super::replay::{replay_coded, replay_level, ReplayError};
use super::Region;

const DATA: usize = 3;
/// A slot: its U index + 1 (0: empty), then the block's elements.
const WIDTH: usize = 1 + DATA;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    None,
    /// Stores the inputs of a level rebuild unmixed.
    SkipRebuild,
    /// Mixes with the wrong twist (another time's).
    FakeRebuild,
    /// Keeps the level's previous contents (and their sealed checksums) instead.
    StaleLevel,
    /// Answers an audit with the sealed checksum of the next slot.
    OtherAddress,
    /// Adds one to the aggregate.
    ForgedAggregate,
}

struct Stored {
    slots: Vec<u64>,
    sealed: Vec<SealedChecksum>,
}

struct Server {
    log_capacity: u32,
    lie: Lie,
    raw: Vec<u64>,
    levels: Vec<Option<Stored>>,
    /// What each level held the last time it was filled (for `Lie::StaleLevel`).
    previous: Vec<Option<Stored>>,
    coded: Stored,
}

struct Client {
    schedule: Schedule,
    seal: SealKey,
    sums: ChecksumKey,
    /// U's checksums: stands for U's authenticated structure, which the caller checks.
    raw_sums: Vec<Checksum>,
}

fn setup(log_capacity: u32, lie: Lie) -> (Client, Server) {
    let n = 1usize << log_capacity;
    let schedule = Schedule::new(log_capacity, 0);
    let client = Client {
        schedule,
        seal: SealKey::new(&[7; 32]),
        sums: ChecksumKey::new(&[9; 32], WIDTH),
        raw_sums: vec![Checksum::ZERO; n],
    };
    let raw = vec![0; n * WIDTH];
    let coded = Stored {
        slots: encode(&raw, WIDTH, log_capacity, 0),
        sealed: replay_coded(&schedule, &client.raw_sums, &client.seal, true),
    };
    let levels = (0..log_capacity).map(|_| None).collect();
    let previous = (0..log_capacity).map(|_| None).collect();
    (client, Server { log_capacity, lie, raw, levels, previous, coded })
}

fn block(index: usize, time: u64) -> Vec<u64> {
    let mut slot = vec![index as u64 + 1];
    slot.extend(
        (0..DATA as u64).map(|e| (time * 1_000_003 + e * 7919 + index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) % P),
    );
    slot
}

impl Client {
    fn write(&mut self, server: &mut Server, index: usize, slot: &[u64]) -> Result<(), ReplayError> {
        let time = self.schedule.time;
        server.raw[index * WIDTH..(index + 1) * WIDTH].copy_from_slice(slot);
        let sum = self.sums.checksum(slot);
        self.raw_sums[index] = sum;
        match self.schedule.next_rebuild() {
            Rebuild::Pending => unreachable!("the model does not group writes"),
            Rebuild::Level(level) => {
                let below: Vec<Vec<SealedChecksum>> =
                    (0..level as usize).map(|i| server.levels[i].as_ref().expect("filled").sealed.clone()).collect();
                let sealed = replay_level(&self.schedule, &below, sum, &self.seal)?;
                server.rebuild(level, slot, time, sealed);
            }
            Rebuild::Coded => {
                let sealed = replay_coded(&self.schedule, &self.raw_sums, &self.seal, false);
                server.levels.iter_mut().for_each(|l| *l = None);
                server.coded = Stored { slots: encode(&server.raw, WIDTH, server.log_capacity, 0), sealed };
            }
        }
        self.schedule.time += 1;
        Ok(())
    }

    fn audit(&self, server: &Server, seed: [u8; 32], lambda: usize) -> Vec<(Part, Result<(), AuditFailure>)> {
        parts(&self.schedule)
            .into_iter()
            .map(|part| {
                let chosen = picks(&seed, &part, lambda);
                let proof = server.prove(&part, &chosen);
                (part, verify_part(&self.seal, &self.sums, &part, &chosen, &proof))
            })
            .collect()
    }

    /// U from C and the filled levels, any half of each; slots whose checksum fails are
    /// treated as lost.
    fn repair(&self, server: &Server) -> Vec<u64> {
        let read = |stored: &Stored| RegionRead {
            slots: stored.slots.chunks_exact(WIDTH).map(|s| Some(s.to_vec())).collect(),
            sealed: stored.sealed.clone(),
        };
        let levels: Vec<RegionRead> =
            self.schedule.filled_levels().map(|l| read(server.levels[l as usize].as_ref().expect("filled"))).collect();
        recover_raw(&self.schedule, &read(&server.coded), &levels, &[], &self.seal, &self.sums)
            .expect("at least half of every region is intact")
    }
}

impl Server {
    fn rebuild(&mut self, level: u32, slot: &[u64], time: u64, sealed: Vec<SealedChecksum>) {
        let below: Vec<Stored> = (0..level as usize).map(|i| self.levels[i].take().expect("filled")).collect();
        let refs: Vec<&[u64]> = below.iter().map(|s| s.slots.as_slice()).collect();
        let slots = match self.lie {
            Lie::SkipRebuild => {
                let mut flat: Vec<u64> = refs.iter().flat_map(|r| r.iter().copied()).collect();
                flat.extend_from_slice(slot);
                flat.extend_from_slice(slot);
                flat
            }
            Lie::FakeRebuild => rebuild_level(&refs, slot, WIDTH, self.log_capacity, time + 1),
            _ => rebuild_level(&refs, slot, WIDTH, self.log_capacity, time),
        };
        let fresh = Stored { slots, sealed };
        let level = level as usize;
        let kept = match (self.lie, self.previous[level].take()) {
            (Lie::StaleLevel, Some(old)) => old,
            _ => fresh,
        };
        self.previous[level] = Some(Stored { slots: kept.slots.clone(), sealed: kept.sealed.clone() });
        self.levels[level] = Some(kept);
    }

    fn region(&self, region: Region) -> &Stored {
        match region {
            Region::Level(level) => self.levels[level as usize].as_ref().expect("audited levels are filled"),
            Region::Coded => &self.coded,
            Region::Raw => unreachable!("U is not audited by parts"),
        }
    }

    fn prove(&self, part: &Part, chosen: &[super::audit::Pick]) -> super::audit::PartProof {
        let stored = self.region(part.region);
        let slots = part.slots;
        let mut proof = prove_part(chosen, WIDTH, |index| {
            let sealed_at = if self.lie == Lie::OtherAddress { (index + 1) % slots } else { index };
            (&stored.slots[index as usize * WIDTH..(index as usize + 1) * WIDTH], stored.sealed[sealed_at as usize])
        });
        if self.lie == Lie::ForgedAggregate {
            proof.aggregate[1] = (proof.aggregate[1] + 1) % P;
        }
        proof
    }
}

/// `writes` writes, or up to the first the client refused.
fn run_until_refused(lie: Lie, writes: u64) -> (Client, Server, Option<ReplayError>) {
    let (mut client, mut server) = setup(4, lie);
    for time in 0..writes {
        let index = ((time * 5 + 3) % 16) as usize;
        if let Err(refused) = client.write(&mut server, index, &block(index, time)) {
            return (client, server, Some(refused));
        }
    }
    (client, server, None)
}

fn run(lie: Lie, writes: u64) -> (Client, Server) {
    let (client, server, refused) = run_until_refused(lie, writes);
    assert_eq!(refused, None);
    (client, server)
}

#[test]
fn an_honest_server_passes_every_audit_and_repairs_u() {
    for writes in [0, 1, 7, 16, 21, 39] {
        let (client, server) = run(Lie::None, writes);
        for (part, outcome) in client.audit(&server, [writes as u8; 32], 16) {
            assert_eq!(outcome, Ok(()), "{part:?} after {writes} writes");
        }
        assert_eq!(client.repair(&server), server.raw, "after {writes} writes");
    }
}

#[test]
fn each_lie_is_caught_by_the_audit() {
    // 23 writes: levels 0, 1 and 2 filled, C rebuilt once.
    let cases = [
        (Lie::SkipRebuild, "skipped rebuild"),
        (Lie::FakeRebuild, "faked rebuild"),
        (Lie::StaleLevel, "stale level"),
        (Lie::OtherAddress, "checksum of another slot"),
        (Lie::ForgedAggregate, "forged aggregate"),
    ];
    for (lie, name) in cases {
        let (client, server, refused) = run_until_refused(lie, 23);
        let failed: Vec<_> = client.audit(&server, [1; 32], 16).into_iter().filter(|(_, o)| o.is_err()).collect();
        match lie {
            // A stale level is refused by the next write that merges it, else by the audit.
            Lie::StaleLevel => assert!(
                matches!(refused, Some(ReplayError::Checksum { .. }))
                    || failed.iter().all(|(_, o)| matches!(o, Err(AuditFailure::Checksum { .. }))),
                "{name}: {refused:?} {failed:?}"
            ),
            _ => assert_eq!(refused, None, "{name}: only the audit sees it"),
        }
        assert!(refused.is_some() || !failed.is_empty(), "{name}: not caught");
        match lie {
            Lie::StaleLevel => {}
            Lie::OtherAddress => assert!(
                failed.iter().all(|(_, o)| matches!(o, Err(AuditFailure::Checksum { .. }))),
                "{name}: {failed:?}"
            ),
            _ => assert!(failed.iter().any(|(_, o)| o == &Err(AuditFailure::AggregateMismatch)), "{name}: {failed:?}"),
        }
    }
}

/// Loses (overwrites) `lost` slots of level 3 and of C, and all of U.
fn damage(server: &mut Server, lost: usize) {
    for stored in [server.levels[3].as_mut().expect("filled"), &mut server.coded] {
        for index in 0..lost.min(stored.slots.len() / WIDTH) {
            let at = (index * 7 % (stored.slots.len() / WIDTH)) * WIDTH;
            stored.slots[at + 1] = (stored.slots[at + 1] + 1) % P;
        }
    }
    server.raw.iter_mut().for_each(|v| *v = 0);
}

#[test]
fn repair_restores_u_from_just_over_half_of_every_level() {
    let (client, mut server) = run(Lie::None, 24); // levels 3 (8 blocks) filled, C rebuilt once
    let want = server.raw.clone();
    damage(&mut server, 8); // exactly half of level 3's 16 slots; 8 of C's 32
    assert_eq!(client.repair(&server), want);
    let audits = client.audit(&server, [3; 32], 40);
    assert!(audits.iter().any(|(_, o)| o.is_err()), "damage is seen by a full audit");
}

/// Beyond half of a level lost, a part with `λ` picks misses the loss with probability
/// `C(intact, λ) / C(slots, λ)`; measured over many seeds with a small `λ`.
#[test]
fn detection_rate_matches_the_sampling_bound() {
    let (client, mut server) = run(Lie::None, 24);
    let lambda = 3;
    let slots = 16usize;
    let lost = 9; // just over half of level 3
    let stored = server.levels[3].as_mut().expect("filled");
    for index in 0..lost {
        stored.slots[index * WIDTH + 2] ^= 1;
    }
    let part = parts(&client.schedule).into_iter().find(|p| p.region == Region::Level(3)).expect("level 3");
    let trials = 3000u32;
    let mut caught = 0;
    for trial in 0..trials {
        let mut seed = [0; 32];
        seed[..4].copy_from_slice(&trial.to_le_bytes());
        let chosen = picks(&seed, &part, lambda);
        if verify_part(&client.seal, &client.sums, &part, &chosen, &server.prove(&part, &chosen)).is_err() {
            caught += 1;
        }
    }
    let intact = slots - lost;
    let miss = (0..lambda).map(|i| (intact - i) as f64 / (slots - i) as f64).product::<f64>();
    let rate = f64::from(caught) / f64::from(trials);
    assert!((rate - (1.0 - miss)).abs() < 0.03, "caught {rate:.3}, expected {:.3}", 1.0 - miss);
}
