//! Detection statistics: how often a sampled audit catches a provider that lost a fraction
//! `f` of what it holds, measured over many audits and set beside the law it should follow.
//!
//! * DPDP's challenge (paper 001, Sec. 8): `c` byte offsets uniform over the file
//!   ([`Challenge::expand`]). In a file of equal blocks of which a fraction `f` is missing,
//!   each offset falls in a missing block with probability `f`, so a challenge catches the
//!   loss with probability `1 - (1 - f)^c`.
//! * The PoR audit (paper 002, Sec. 5.5): `m = min(λ, N)` distinct slots of a part of `N`
//!   ([`picks`]). With `k` of them damaged, it misses them all with the hypergeometric
//!   probability `C(N-k, m) / C(N, m)`, at most `(1 - f)^λ`. Each PoR trial is a real audit
//!   ([`verify_part`]) of a log written by the client and the reference provider, with the
//!   damage in its slots; an audit that passes over a damaged pick stops the benchmark.
//!
//! Each measured rate comes with Hoeffding's interval at the trials run
//! (`t = sqrt(ln(2/δ) / 2n)`, `δ` = [`DELTA`]): the law lies inside it unless something
//! samples or checks wrong, or with probability below `δ`.

use crate::measure::{SelfCheckFailed, Target};
use serde::Serialize;
use vouch_core::pdp::Challenge;
use vouch_core::por::audit::{parts, picks, verify_part, AuditFailure, Part};
use vouch_core::por::checksum::{ChecksumKey, SealKey};
use vouch_core::por::client::{plan, write, LogState};
use vouch_core::por::field::P;
use vouch_core::por::provider::ProviderLog;
use vouch_core::por::Region;

/// The chance that a correct sampler's rate falls outside its interval, per row.
pub const DELTA: f64 = 1e-6;

/// One measured detection rate.
#[derive(Debug, Serialize)]
pub struct DetectionRow {
    /// `"pdp"`, or the PoR part (`"level 3"`, `"C"`).
    pub audit: String,
    /// Blocks of the file, or slots of the part.
    pub units: u64,
    /// The fraction of them lost.
    pub lost: f64,
    /// Offsets per challenge, or λ.
    pub picks: u32,
    pub trials: u32,
    pub measured: f64,
    /// The exact law: `1 - (1-f)^c`, or one minus the hypergeometric miss.
    pub law: f64,
    /// `1 - (1-f)^picks`, the bound the papers state (equal to the law for DPDP).
    pub bound: f64,
    /// Hoeffding's `t` at these trials.
    pub interval: f64,
    pub inside: bool,
}

/// `t` with `2·exp(-2·n·t²) = δ`.
fn hoeffding(trials: u32) -> f64 {
    ((2.0 / DELTA).ln() / (2.0 * f64::from(trials))).sqrt()
}

fn row(audit: String, (units, lost): (u64, u64), picks: u32, trials: u32, detected: u32, law: f64) -> DetectionRow {
    let f = lost as f64 / units as f64;
    let measured = f64::from(detected) / f64::from(trials);
    let interval = hoeffding(trials);
    let bound = 1.0 - (1.0 - f).powi(picks as i32);
    DetectionRow {
        audit,
        units,
        lost: f,
        picks,
        trials,
        measured,
        law,
        bound,
        interval,
        inside: (measured - law).abs() <= interval,
    }
}

/// A seed per (table, case, trial): no two trials share one.
fn seed(table: u8, case: usize, trial: u32) -> [u8; 32] {
    let mut seed = [table; 32];
    seed[1..9].copy_from_slice(&(case as u64).to_le_bytes());
    seed[9..13].copy_from_slice(&trial.to_le_bytes());
    seed
}

/// DPDP: a file of `BLOCKS` equal blocks with a fraction of them missing, challenged `trials`
/// times per case.
fn pdp_rows(trials: u32) -> Vec<DetectionRow> {
    const BLOCKS: u64 = 10_000;
    const BLOCK_BYTES: u64 = 16 << 10;
    let cases: [(u64, u32); 4] = [(10, 460), (50, 460), (100, 460), (100, 100)];
    let mut rows = Vec::new();
    for (case, &(lost, count)) in cases.iter().enumerate() {
        // A stride coprime to the block count spreads the missing blocks over the file.
        let mut missing = vec![false; BLOCKS as usize];
        (0..lost).for_each(|i| missing[((i * 7919) % BLOCKS) as usize] = true);
        let detected = (0..trials)
            .filter(|&trial| {
                let (offsets, _) = Challenge::new(seed(1, case, trial), count).expand(BLOCKS * BLOCK_BYTES);
                offsets.iter().any(|&o| missing[(o / BLOCK_BYTES) as usize])
            })
            .count() as u32;
        let law = 1.0 - (1.0 - lost as f64 / BLOCKS as f64).powi(count as i32);
        rows.push(row("pdp".into(), (BLOCKS, lost), count, trials, detected, law));
    }
    rows
}

/// A PoR log of 2^8 slots of 4 elements, one epoch and most of the next written: C and every
/// level filled.
#[derive(Clone)]
struct Log {
    state: LogState,
    provider: ProviderLog,
    seal: SealKey,
    sums: ChecksumKey,
}

const WIDTH: usize = 4;
const LOG_CAPACITY: u32 = 8;

impl Log {
    fn filled() -> Result<Log, SelfCheckFailed> {
        let fail = |what: &str| SelfCheckFailed(format!("detection statistics: {what}"));
        let seal = SealKey::new(&[21; 32]);
        let sums = ChecksumKey::new(&[22; 32], WIDTH);
        let (state, coded) = LogState::new(LOG_CAPACITY, 0, &seal);
        let provider = ProviderLog::new(LOG_CAPACITY, 0, WIDTH, coded).map_err(|e| fail(&e.to_string()))?;
        let mut log = Log { state, provider, seal, sums };
        let n = 1u64 << LOG_CAPACITY;
        let writes: Vec<u64> = (0..n).chain((0..n - 1).map(|i| (i * 37) % n)).collect();
        for (round, batch) in writes.chunks(64).enumerate() {
            let planned = plan(&log.state, batch, false).map_err(|e| fail(&e.to_string()))?;
            // A slot as the client writes it: its U index + 1, then 7-byte sectors.
            let slots: Vec<u64> = batch
                .iter()
                .flat_map(|&i| {
                    let sectors = (1..WIDTH as u64).map(move |e| (round as u64 * 7919 + i * 104_729 + e) >> 8);
                    std::iter::once(i + 1).chain(sectors)
                })
                .collect();
            let context = log.provider.context(&planned).map_err(|e| fail(&e.to_string()))?;
            let written = write(&log.state, &planned, &context, batch, &slots, &log.seal, &log.sums)
                .map_err(|e| fail(&e.to_string()))?;
            log.provider.apply(&planned, batch, &slots, &written).map_err(|e| fail(&e.to_string()))?;
            log.state = written.state;
        }
        Ok(log)
    }

    fn part(&self, region: Region) -> Option<Part> {
        parts(&self.state.schedule).into_iter().find(|p| p.region == region)
    }

    /// Alters one element of each slot in `indices` of `region` (its sealed checksums stay).
    fn damage(&mut self, region: Region, indices: &[u64]) {
        let width = self.provider.region_width(region);
        let stored = match region {
            Region::Level(level) => self.provider.levels[level as usize].as_mut(),
            Region::Coded => Some(&mut self.provider.coded),
            Region::Raw => None,
        };
        if let Some(stored) = stored {
            for &index in indices {
                let at = index as usize * width + 1;
                stored.slots[at] = (stored.slots[at] + 1) % P;
            }
        }
    }
}

/// PoR: parts of three sizes with a quarter of their slots damaged, audited `trials` times at
/// small λ (where the rate is far from 1 and says something).
fn por_rows(trials: u32) -> Result<Vec<DetectionRow>, SelfCheckFailed> {
    let clean = Log::filled()?;
    let mut rows = Vec::new();
    for (r, (region, name)) in
        [(Region::Level(3), "level 3"), (Region::Level(7), "level 7"), (Region::Coded, "C")].into_iter().enumerate()
    {
        let part = clean.part(region).ok_or_else(|| SelfCheckFailed(format!("{name} is not audited")))?;
        let lost = part.slots / 4;
        // An odd stride is a permutation of the part's slots (a power of two).
        let damaged: Vec<u64> = (0..lost).map(|i| (i * 37 + 5) % part.slots).collect();
        let mut log = clean.clone();
        log.damage(region, &damaged);
        let mut is_damaged = vec![false; part.slots as usize];
        damaged.iter().for_each(|&i| is_damaged[i as usize] = true);
        for lambda in [1u32, 2, 4, 8] {
            let mut detected = 0;
            for trial in 0..trials {
                let chosen = picks(&seed(2, r * 16 + lambda as usize, trial), &part, lambda as usize);
                let hit = chosen.iter().any(|p| is_damaged[p.index as usize]);
                let proof =
                    log.provider.prove(&part, &chosen).ok_or_else(|| SelfCheckFailed(format!("{name}: no proof")))?;
                match (verify_part(&log.seal, &log.sums, &part, &chosen, &proof), hit) {
                    (Ok(()), false) => {}
                    (Err(AuditFailure::AggregateMismatch), true) => detected += 1,
                    (outcome, hit) => {
                        return Err(SelfCheckFailed(format!(
                            "{name}, λ {lambda}, trial {trial}: the audit said {outcome:?} with a damaged pick {hit}"
                        )))
                    }
                }
            }
            let m = u64::from(lambda).min(part.slots);
            let miss: f64 =
                (0..m).map(|i| (part.slots - lost).saturating_sub(i) as f64 / (part.slots - i) as f64).product();
            rows.push(row(name.into(), (part.slots, lost), lambda, trials, detected, 1.0 - miss));
        }
    }
    Ok(rows)
}

/// Every row of both tables: `trials` challenges or audits per row.
pub fn rows(quick: bool) -> Result<Vec<DetectionRow>, SelfCheckFailed> {
    let trials = if quick { 4_000 } else { 20_000 };
    let mut rows = pdp_rows(trials);
    rows.extend(por_rows(trials)?);
    Ok(rows)
}

/// The target: every measured rate within its interval of the law.
pub fn target(rows: &[DetectionRow]) -> Target {
    let inside = rows.iter().filter(|r| r.inside).count();
    Target::at_least(
        &format!(
            "audit detection rates within Hoeffding's interval of their law (δ = {DELTA:e} each), of {}",
            rows.len()
        ),
        inside as f64,
        rows.len() as f64,
        "rows",
        Some("1 - (1-f)^c (paper 001, Sec. 8); 1 - C(N-k,λ)/C(N,λ) ≤ 1 - (1-f)^λ (paper 002, Sec. 5.5)"),
    )
}

/// The table, for people.
pub fn text(rows: &[DetectionRow]) -> String {
    let mut out = String::from(
        "detection: audits against a provider that lost a fraction f (rate over the trials; law; ± Hoeffding)\n",
    );
    out += &format!(
        "{:<8} {:>6} {:>7} {:>6} {:>7} {:>9} {:>7} {:>10} {:>8}  {}\n",
        "audit", "units", "f", "picks", "trials", "measured", "law", "1-(1-f)^c", "±", "inside"
    );
    for r in rows {
        out += &format!(
            "{:<8} {:>6} {:>7.4} {:>6} {:>7} {:>9.4} {:>7.4} {:>10.4} {:>8.4}  {}\n",
            r.audit,
            r.units,
            r.lost,
            r.picks,
            r.trials,
            r.measured,
            r.law,
            r.bound,
            r.interval,
            if r.inside { "yes" } else { "NO" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_rates_lie_within_their_interval_of_the_law() {
        let rows = rows(true).unwrap();
        eprintln!("{}", text(&rows));
        assert_eq!(rows.len(), 4 + 3 * 4);
        for r in &rows {
            assert!(r.inside, "{r:?}");
            // The papers' bound is the law for DPDP, and below it for distinct picks.
            assert!(r.law >= r.bound - 1e-12, "{r:?}");
        }
        // 1% of the blocks lost: a 460-offset challenge catches it above 99% of the time.
        let one_percent = rows.iter().find(|r| r.audit == "pdp" && r.lost == 0.01 && r.picks == 460).unwrap();
        assert!(one_percent.law > 0.99 && one_percent.measured > 0.98, "{one_percent:?}");
        assert_eq!(target(&rows).met, Some(true));
    }

    #[test]
    fn a_rate_off_its_law_is_flagged() {
        // Half the trials detecting where the law says 0.99: outside any interval at 4,000 trials.
        let off = row("pdp".into(), (10_000, 100), 460, 4_000, 2_000, 0.99);
        assert!(!off.inside);
        assert_eq!(target(&[off]).met, Some(false));
    }
}
