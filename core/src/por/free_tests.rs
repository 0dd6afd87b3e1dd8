//! Reuse of ⊥ slots (App. A.3): a client writes a new copy only into slots that are never
//! written or ⊥, as U's own checksums say ([`check_free`]), whatever the provider named free.

use super::checksum::{ChecksumKey, SealKey};
use super::client::{check_free, plan, write, LogState, WriteError};
use super::heap::{encode_slot, SLOT_WIDTH};
use super::provider::ProviderLog;

struct Log {
    state: LogState,
    provider: ProviderLog,
    seal: SealKey,
    sums: ChecksumKey,
}

impl Log {
    fn new() -> Log {
        let seal = SealKey::new(&[7; 32]);
        let (state, coded) = LogState::new(4, 1, &seal);
        let provider = ProviderLog::new(4, 1, SLOT_WIDTH, coded).unwrap();
        Log { state, provider, seal, sums: ChecksumKey::grouped(&[8; 32], SLOT_WIDTH, 1) }
    }

    /// Writes `slots` (index and elements), flushed.
    fn batch(&mut self, slots: &[(u64, Vec<u64>)]) {
        let writes: Vec<u64> = slots.iter().map(|(i, _)| *i).collect();
        let flat: Vec<u64> = slots.iter().flat_map(|(_, s)| s.clone()).collect();
        let plan = plan(&self.state, &writes, true).unwrap();
        let context = self.provider.context(&plan).unwrap();
        let written = write(&self.state, &plan, &context, &writes, &flat, &self.seal, &self.sums).unwrap();
        self.provider.apply(&plan, &writes, &flat, &written).unwrap();
        self.state = written.state;
    }

    fn free(&self, indices: &[u64]) -> Result<(), WriteError> {
        let plan = plan(&self.state, indices, true).unwrap();
        let context = self.provider.context(&plan).unwrap();
        let flat: Vec<u64> = indices.iter().flat_map(|&i| encode_slot(i, Some(b"new"))).collect();
        write(&self.state, &plan, &context, indices, &flat, &self.seal, &self.sums)?;
        check_free(&plan, &context, &self.seal, &self.sums)
    }
}

#[test]
fn only_slots_never_written_or_deleted_are_free() {
    let mut log = Log::new();
    log.batch(&[(0, encode_slot(0, Some(b"live"))), (1, encode_slot(1, Some(b"gone"))), (2, encode_slot(2, None))]);
    assert_eq!(log.free(&[2, 3, 9]), Ok(()), "⊥, and never written");
    assert_eq!(log.free(&[0]), Err(WriteError::Occupied(0)));
    assert_eq!(log.free(&[1, 2]), Err(WriteError::Occupied(1)));
    // Deleted now: the same slot is free, and data written over it is live again.
    log.batch(&[(1, encode_slot(1, None))]);
    assert_eq!(log.free(&[1, 2]), Ok(()));
    log.batch(&[(2, encode_slot(2, Some(b"again")))]);
    assert_eq!(log.free(&[1, 2]), Err(WriteError::Occupied(2)));
    // A slot whose data happens to be empty is data, not ⊥.
    log.batch(&[(5, encode_slot(5, Some(b"")))]);
    assert_eq!(log.free(&[5]), Err(WriteError::Occupied(5)));
}

#[test]
fn a_key_of_another_slot_width_is_refused() {
    let log = Log::new();
    let plan = plan(&log.state, &[0], true).unwrap();
    let context = log.provider.context(&plan).unwrap();
    let narrow = ChecksumKey::grouped(&[8; 32], 4, 1);
    assert!(matches!(check_free(&plan, &context, &log.seal, &narrow), Err(WriteError::Width { .. })));
}
