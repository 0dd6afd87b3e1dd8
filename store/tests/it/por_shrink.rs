//! U shrinks in the persistent log (App. A.3's consolidation): its upper slots' entries go,
//! C is made over the slots kept, and the log answers as core's reference before and after,
//! through a reopen and a growth back over the slots that went.

use crate::por_support;

use por_support::{open_repo, OWNER};
use vouch_core::por::audit::{parts, picks, verify_part};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{plan, plan_shrink, verify_read, write, LogState, WritePlan};
use vouch_core::por::heap::{encode_slot, SLOT_WIDTH};
use vouch_core::por::provider::ProviderLog;
use vouch_store::{ObjectBlobs, PorLog, Repository};

struct Pair {
    state: LogState,
    reference: ProviderLog,
    log: PorLog,
    repo: Repository,
    seal: SealKey,
    sums: ChecksumKey,
}

impl Pair {
    /// A batch planned by `planned`, writing `slots` (index, elements), by both providers.
    async fn apply(&mut self, planned: WritePlan, slots: &[(u64, Vec<u64>)]) {
        let writes: Vec<u64> = slots.iter().map(|(i, _)| *i).collect();
        let flat: Vec<u64> = slots.iter().flat_map(|(_, s)| s.clone()).collect();
        let context = self.log.context(&planned).unwrap();
        assert_eq!(context, self.reference.context(&planned).unwrap());
        let written = write(&self.state, &planned, &context, &writes, &flat, &self.seal, &self.sums).unwrap();
        self.log.apply(&self.repo, &planned, &writes, &flat, &written).await.unwrap();
        self.reference.apply(&planned, &writes, &flat, &written).unwrap();
        self.state = written.state;
    }

    async fn put(&mut self, slots: &[(u64, Vec<u64>)]) {
        let writes: Vec<u64> = slots.iter().map(|(i, _)| *i).collect();
        self.apply(plan(&self.state, &writes, true).unwrap(), slots).await;
    }

    /// Both answer alike, and the client accepts: U read whole, every part audited.
    async fn check(&self) {
        let schedule = self.state.schedule;
        assert_eq!((self.log.schedule(), self.reference.schedule()), (schedule, schedule));
        let all: Vec<u64> = (0..schedule.capacity()).collect();
        let read = self.log.read(&self.repo, &all).await.unwrap();
        assert_eq!(read, self.reference.read(&all).unwrap());
        verify_read(&self.state, &all, &read, &self.seal, &self.sums).unwrap();
        for part in parts(&schedule) {
            let chosen = picks(&[9; 32], &part, part.slots as usize);
            let proof = self.log.prove(&self.repo, &part, &chosen).await.unwrap();
            assert_eq!(Some(&proof), self.reference.prove(&part, &chosen).as_ref(), "{part:?}");
            verify_part(&self.seal, &self.sums, &part, &chosen, &proof).unwrap();
        }
    }
}

fn data(index: u64, text: &str) -> (u64, Vec<u64>) {
    (index, encode_slot(index, Some(text.as_bytes())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn u_shrinks_when_its_upper_half_is_free_and_grows_back_clean() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = ObjectBlobs::local(&dir.path().join("blobs")).unwrap();
    let repo = open_repo(&blobs, dir.path());
    let seal = SealKey::new(&[3; 32]);
    let (state, coded) = LogState::new(5, 1, &seal);
    let reference = ProviderLog::new(5, 1, SLOT_WIDTH, coded.clone()).unwrap();
    // Small segments: C of the 32 slots and its stages span several.
    let log = PorLog::create(&repo, OWNER, (5, 1), SLOT_WIDTH, coded).await.unwrap().with_limits(4 * SLOT_WIDTH * 8, 0);
    let sums = ChecksumKey::grouped(&[4; 32], SLOT_WIDTH, 1);
    let mut pair = Pair { state, reference, log, repo, seal, sums };
    pair.put(&(0..24).map(|i| data(i, "first")).collect::<Vec<_>>()).await;
    // The files in slots 8..24 go: ⊥ over them.
    pair.put(&(8..24).map(|i| (i, encode_slot(i, None))).collect::<Vec<_>>()).await;
    assert_eq!(pair.log.free_runs(&pair.repo, 64, 8).unwrap(), [(8, 16)]);
    pair.check().await;

    pair.apply(plan_shrink(&pair.state, 3).unwrap(), &[]).await;
    assert_eq!(pair.state.schedule.log_capacity, 3);
    pair.check().await;
    assert!(pair.log.free_runs(&pair.repo, 64, 8).unwrap().is_empty(), "no slot beyond the capacity is named");
    let mut pair = Pair { log: PorLog::open(&pair.repo, OWNER).await.unwrap().unwrap(), ..pair };
    pair.check().await;

    // U grows again: the slots that went read as never written, then take new data.
    pair.put(&[data(3, "second"), data(20, "third")]).await;
    assert_eq!(pair.state.schedule.log_capacity, 5);
    pair.check().await;
    let read = pair.log.read(&pair.repo, &[12, 20]).await.unwrap();
    verify_read(&pair.state, &[12, 20], &read, &pair.seal, &pair.sums).unwrap();
    let zeros = Some(vec![0; SLOT_WIDTH]);
    assert_eq!(pair.log.raw_slots(&pair.repo, &[12]).await.unwrap(), [zeros], "slot 12's ⊥ went with the shrink");
}
