//! `vouch repair` and `vouch audit --por`: U recovered from C and H when the copy of a file is
//! damaged, and the log made whole again by a re-encode of C from U when a part fails.

use super::*;
use vouch_core::por::client::plan_reencode;
use vouch_core::por::layout::Run;
use vouch_proto::{HealBlocksRequest, HealedBlocks, WireBlock};

/// Picks per part of the audits repair runs before and after it heals the log.
const HEAL_LAMBDA: u32 = 64;
/// Bytes of blocks per request when repair writes the block store's copy again.
const HEAL_BYTES: usize = 16 << 20;

impl PorSession<'_> {
    /// Repairs the copy of the latest version of the PoR file `name`: when its slots of U are
    /// lost or damaged, U is decoded from C and the levels, the copy checked, and its slots
    /// written back, then read back through U and checked again.
    pub async fn repair(&self, name: &str) -> Result<PorCopyReport, ClientError> {
        let started = Instant::now();
        let keys = self.keys()?;
        let commit = Commit::begin(self.client).await?;
        let version = self.version(&commit.lock, name, None).await?;
        let mut record = self.ready(&keys, false).await?;
        let mut restored = 0;
        if let Err(e) = self.settle(&commit.lock, &keys, &mut record).await {
            if e.violation_kind() != Some(ViolationKind::DataLost) {
                return Err(e);
            }
            // What an operation cut short left (a delete's ⊥ writes, a consolidation) rebuilds
            // parts of the log from U, whose slots are lost: all of U is restored first.
            tracing::warn!("an unfinished PoR operation needs lost slots of U ({e}); restoring all of U from C and H");
            let raw = self.recover(&keys, &record).await?;
            restored = self.restore(&keys, &record, &raw, &[Run { first: 0, slots: record.at.next_slot }]).await?;
            self.settle(&commit.lock, &keys, &mut record).await?;
        }
        let mut report = PorCopyReport {
            name: name.into(),
            version: version.number,
            bytes: version.len,
            blocks: 0,
            slots: 0,
            damaged: false,
            restored: 0,
            healed: Vec::new(),
            unhealed: None,
            healed_blocks: 0,
            seconds: 0.0,
        };
        if version.len > 0 {
            match self.copy_of(&keys, &record, &version, None).await {
                Ok((layout, blocks)) => (report.slots, report.blocks) = (layout.slots(), blocks.len()),
                Err(e)
                    if matches!(
                        e.violation_kind(),
                        Some(ViolationKind::DataLost | ViolationKind::BadPorRead | ViolationKind::BadPorCopy)
                    ) =>
                {
                    tracing::warn!("{name}: the PoR copy is damaged ({e}); repairing it from C and H");
                    report.damaged = true;
                    let raw = self.recover(&keys, &record).await?;
                    let (layout, _) = self.copy_of(&keys, &record, &version, Some(&raw)).await?;
                    self.restore(&keys, &record, &raw, &layout.runs).await?;
                    let (_, blocks) = self.copy_of(&keys, &record, &version, None).await?;
                    (report.slots, report.blocks, report.restored) = (layout.slots(), blocks.len(), layout.slots());
                }
                Err(e) => return Err(e),
            }
        }
        report.restored = report.restored.max(restored);
        if version.len > 0 {
            report.healed_blocks = self.heal_blocks(&commit.lock, &keys, &record, name, &version).await?;
        }
        (report.healed, report.unhealed) = self.heal(&keys, &mut record).await?;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// The provider's block store's copy of `version` (what a plain `get` reads), read and
    /// checked as `get` checks it; when it fails, its blocks are written again from the
    /// verified PoR copy and the version is read and checked again. How many blocks it wrote.
    async fn heal_blocks(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &PorRecord,
        name: &str,
        version: &VersionRecord,
    ) -> Result<u64, ClientError> {
        let read_back =
            || Reads::committed(self.client, commit).read_blocks(name, Some(version.number), None, |_, _| Ok(()));
        match read_back().await {
            Ok(_) => return Ok(0),
            Err(e) if e.violation_kind().is_some() => {
                tracing::warn!(
                    "{name}: the block store's copy fails its checks ({e}); writing it again from the PoR copy"
                )
            }
            Err(e) => return Err(e),
        }
        let (_, blocks) = self.copy_of(keys, record, version, None).await?;
        let mut healed = 0;
        let mut batch: Vec<WireBlock> = Vec::new();
        let mut bytes = 0;
        for (i, b) in blocks.iter().enumerate() {
            bytes += b.data.len() + b.tag.len();
            batch.push(WireBlock { nonce: b.nonce, tag: ByteBuf::from(b.tag.clone()), data: b.data.clone() });
            if bytes >= HEAL_BYTES || i + 1 == blocks.len() {
                let request = HealBlocksRequest {
                    file: ByteBuf::from(version.file.0.to_vec()),
                    blocks: std::mem::take(&mut batch),
                };
                let answer: HealedBlocks = self.call(&request).await?;
                healed += answer.healed;
                bytes = 0;
            }
        }
        read_back().await?;
        Ok(healed)
    }

    /// Writes back U's slots of `runs` from `raw` (all of U, as repair decoded it), but those
    /// never written (all zeros): how many it wrote. Each slot is checked first against U's
    /// own checksum (its sealed checksum under U's root): a slot that decoded to anything else
    /// is never written back.
    async fn restore(&self, keys: &PorKeys, record: &PorRecord, raw: &[u64], runs: &[Run]) -> Result<u64, ClientError> {
        let sums = keys.sums_for(&record.at.log.schedule);
        let (seal, plan) = (keys.seal_in(record), plan_reencode(&record.at.log));
        let (_, checksums) = self.context(&record.at.log, &plan, (&seal, &sums), ViolationKind::BadPorRead).await?;
        let checksums = checksums.ok_or_else(|| ClientError::State("a re-encode's answer holds U".into()))?;
        let slot = |i: u64| &raw[i as usize * SLOT_WIDTH..(i as usize + 1) * SLOT_WIDTH];
        let mut restored = 0;
        for run in runs {
            let written: Vec<u64> =
                (run.first..run.first + run.slots).filter(|&i| slot(i).iter().any(|&e| e != 0)).collect();
            if let Some(&bad) = written.iter().find(|&&i| checksums.checksum(i) != Some(sums.checksum(slot(i)))) {
                return Err(ClientError::violation(
                    ViolationKind::DataLost,
                    format!("slot {bad} of U decoded from C and H does not match U's checksum of it"),
                ));
            }
            for part in written.chunks(REQUEST_SLOTS) {
                let slots: Vec<u64> = part
                    .iter()
                    .flat_map(|&i| raw[i as usize * SLOT_WIDTH..(i as usize + 1) * SLOT_WIDTH].iter().copied())
                    .collect();
                let request =
                    PorRestoreRequest { indices: part.to_vec(), slots: ByteBuf::from(slots_to_bytes(&slots)) };
                self.call(&request).await?;
                restored += part.len() as u64;
            }
        }
        Ok(restored)
    }

    /// Makes every part of the log whole again: when an audit finds a level or C that fails
    /// (bytes or sealed checksums lost or altered), C is re-encoded from U and H emptied
    /// ([`plan_reencode`]), then the log is audited again. Returns the parts that failed, and
    /// why they are not replaced yet when U still has lost slots.
    ///
    /// U must be whole first, or C would be built over what is missing: the provider refuses
    /// the re-encode while a written slot of U is lost (the copies of other files still to
    /// repair), and U's checksums (checked against the client's root) are what C's new
    /// checksums come from, so a C built over other bytes fails the next audit.
    async fn heal(&self, keys: &PorKeys, record: &mut PorRecord) -> Result<(Vec<String>, Option<String>), ClientError> {
        let audit = self.audit_at(keys, record, HEAL_LAMBDA).await?;
        let failed: Vec<String> = audit.parts.into_iter().filter(|p| !p.verified).map(|p| p.region).collect();
        if failed.is_empty() {
            return Ok((failed, None));
        }
        tracing::warn!("PoR parts {failed:?} fail their audit; re-encoding C from U");
        let planned = plan_reencode(&record.at.log);
        match self.send(keys, record, planned, Batch::default()).await {
            Ok(()) => {}
            Err(e) if e.violation_kind() == Some(ViolationKind::DataLost) => {
                let why = format!("U has lost slots ({e}); repair the other PoR files whose copies are damaged");
                return Ok((failed, Some(why)));
            }
            Err(e) => return Err(e),
        }
        self.audit_at(keys, record, HEAL_LAMBDA).await?.into_result()?;
        Ok((failed, None))
    }

    /// All of U, decoded from C and the filled levels, each read a page at a time until half
    /// of its slots match their checksums (X first; Y only for what X lost).
    async fn recover(&self, keys: &PorKeys, record: &PorRecord) -> Result<Vec<u64>, ClientError> {
        let schedule = record.at.log.schedule;
        if schedule.pending() > 0 {
            // This client flushes every batch; another writer of its log left a group open.
            return Err(ClientError::State(format!(
                "the PoR log has {} writes in an open group, which this client never leaves",
                schedule.pending()
            )));
        }
        let (sums, seal) = (keys.sums_for(&schedule), keys.seal_in(record));
        let mut gathered = Vec::new();
        for (region, time, slots) in regions(&schedule) {
            let mut g = Gathered::new(region, time, slots);
            let code = region.to_byte();
            // A level's slots are groups of writes: pages carry as many writes as C's.
            let page = (REQUEST_SLOTS * SLOT_WIDTH / sums.region_width(region)).max(1);
            let mut first = 0;
            while first < slots && !g.decodable() {
                let count = page.min((slots - first) as usize) as u32;
                let answer: PorRegionAnswer = self.call(&PorRegionRequest { region: code, first, count }).await?;
                let page = RegionRead::from_bytes(&answer.region)
                    .map_err(ClientError::caught(ViolationKind::MalformedAnswer))?;
                if page.slots.len() != count as usize {
                    return Err(ClientError::violation(
                        ViolationKind::MalformedAnswer,
                        format!("a page of {count} slots of {region:?} came with {}", page.slots.len()),
                    ));
                }
                g.add(first, page, &seal, &sums).map_err(ClientError::caught(ViolationKind::MalformedAnswer))?;
                first += u64::from(count);
            }
            gathered.push(g);
        }
        let (coded, levels) = gathered.split_first().expect("C is always read");
        recover_gathered(&schedule, coded, levels, &[], SLOT_WIDTH).map_err(|e| {
            ClientError::violation(ViolationKind::DataLost, format!("U cannot be recovered from C and H: {e}"))
        })
    }

    /// Challenges every level of H and C with `lambda` random slots each (Sec. 5.5): a report
    /// per part. A part that fails is in the report, not an error.
    ///
    /// It also checks one version of a PoR file, at random, for its copy
    /// (`PorSession::audit_copy`): the parts prove what the log holds, and this that the
    /// log still holds the copies.
    pub async fn audit(&self, lambda: u32) -> Result<PorAuditReport, ClientError> {
        let keys = self.keys()?;
        let (record, copy) = {
            let commit = Commit::begin(self.client).await?;
            let record = self.begin(&commit.lock, &keys, false).await?;
            let copy = self.audit_copy(&commit.lock, &keys, &record).await?;
            (record, copy)
        };
        let mut report = self.audit_at(&keys, &record, lambda).await?;
        report.verified &= copy.as_ref().is_none_or(|c| c.verified);
        report.copy = copy;
        Ok(report)
    }

    /// One version of the namespace's PoR files, at random, checked to have its copy: a label
    /// this client sealed for it, current and naming written slots, and one slot of those, at
    /// random, reading under U's root as data (not ⊥, not never written). A provider that
    /// dropped a share of the copies (or their labels) fails it with that chance at each
    /// audit. `None` when no PoR file has a version with bytes.
    async fn audit_copy(
        &self,
        commit: &Committing<'_>,
        keys: &PorKeys,
        record: &PorRecord,
    ) -> Result<Option<PorPartReport>, ClientError> {
        use rand::seq::SliceRandom;
        let reads = Reads::committed(self.client, commit);
        let files: Vec<_> = reads.list().await?.into_iter().filter(|e| is_por_file(&e.file)).collect();
        let Some(entry) = files.choose(&mut rand::thread_rng()) else { return Ok(None) };
        let versions: Vec<_> = reads.log(&entry.name).await?.into_iter().filter(|v| v.len > 0).collect();
        let Some(version) = versions.choose(&mut rand::thread_rng()) else { return Ok(None) };
        let caught = |e: ClientError| match e.violation_kind() {
            Some(_) => Ok(Err(e.to_string())),
            None => Err(e),
        };
        let verdict = match self.sealed_location(keys, record, version).await {
            Ok((layout, _)) => {
                let (mut pick, mut index) = (rand::random::<u64>() % layout.slots().max(1), 0);
                for run in &layout.runs {
                    if pick < run.slots {
                        index = run.first + pick;
                        break;
                    }
                    pick -= run.slots;
                }
                match self.read(keys, &record.at.log, &[index]).await {
                    Ok(slot) if slot.iter().all(|&e| e == 0) => Err(format!("slot {index} was never written")),
                    Ok(slot) if is_deleted_slot(index, &slot) => Err(format!("slot {index} holds ⊥")),
                    Ok(_) => Ok(()),
                    Err(e) => caught(e)?,
                }
            }
            Err(e) => caught(e)?,
        };
        Ok(Some(PorPartReport {
            region: format!("copy of {} version {}", entry.name, version.number),
            slots: 0,
            time: record.at.log.schedule.time,
            picks: 1,
            verified: verdict.is_ok(),
            problem: verdict.err(),
        }))
    }

    /// The audit of the log at `record`.
    async fn audit_at(&self, keys: &PorKeys, record: &PorRecord, lambda: u32) -> Result<PorAuditReport, ClientError> {
        let started = Instant::now();
        let seed: [u8; 32] = rand::random();
        let answer: PorAuditAnswer = self.call(&PorAuditRequest { seed, lambda }).await?;
        let schedule = record.at.log.schedule;
        let (sums, seal) = (keys.sums_for(&schedule), keys.seal_in(record));
        let all = parts(&schedule);
        let mut reports = Vec::with_capacity(all.len());
        for (i, part) in all.iter().enumerate() {
            let chosen = picks(&seed, part, lambda as usize);
            let verdict = match answer.parts.get(i) {
                None => Err("the answer has no proof for this part".to_string()),
                Some(PorPartAnswer::Lost(why)) => Err(format!("the provider says its bytes are lost: {why}")),
                Some(PorPartAnswer::Proof(bytes)) => {
                    let width = sums.region_width(part.region);
                    PartProof::from_bytes(bytes, chosen.len(), width)
                        .map_err(|e| e.to_string())
                        .and_then(|proof| verify_part(&seal, &sums, part, &chosen, &proof).map_err(|e| e.to_string()))
                }
            };
            reports.push(PorPartReport {
                region: region_name(part.region),
                slots: part.slots,
                time: part.time,
                picks: chosen.len(),
                verified: verdict.is_ok(),
                problem: verdict.err(),
            });
        }
        let extra = answer.parts.len() > all.len();
        if extra {
            reports.push(PorPartReport {
                region: "extra".into(),
                slots: 0,
                time: schedule.time,
                picks: 0,
                verified: false,
                problem: Some(format!("{} parts for a schedule of {}", answer.parts.len(), all.len())),
            });
        }
        Ok(PorAuditReport {
            log_capacity: schedule.log_capacity,
            time: schedule.time,
            slots_used: record.at.next_slot,
            lambda,
            verified: reports.iter().all(|p| p.verified),
            parts: reports,
            copy: None,
            proof_bytes: answer.parts.iter().map(PorPartAnswer::proof_len).sum(),
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}
