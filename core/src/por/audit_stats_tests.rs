//! The audit's detection rate measured against its exact law (paper 002, Sec. 5.5), on a log
//! written through [`super::client`] and the reference [`super::provider`].
//!
//! [`picks`] draws `m = min(λ, N)` *distinct* slots of a part of `N` slots, uniformly (it
//! rejects repeats), so with `k` slots corrupted a part misses them all with the
//! hypergeometric probability `∏_{i<m} (N-k-i)/(N-i)`: exactly `C(N-k, m) / C(N, m)`, at most
//! `(1-f)^λ` for `f = k/N`. A picked corrupted slot is caught unless the coefficients cancel
//! the damage (probability `1/p` per audit, negligible here), so each trial below must detect
//! exactly when a pick hits damage, and the measured rate must lie within [`tolerance`] of
//! `1 - miss`.
//!
//! The tolerance is Hoeffding's: `n` independent trials stray from their mean by `t` or more
//! with probability at most `2·exp(-2·n·t²)`. Over the [`RATE_CHECKS`] rate checks of this
//! file (a union bound), a correct implementation fails one with probability below
//! [`FALSE_FAILURE`]. The seeds are fixed, so a run is reproducible; the bound is what says
//! that a fixed seed set passing is no accident of the seeds chosen.

use super::audit::{parts, picks, verify_part, AuditFailure, Part, Pick};
use super::checksum::{ChecksumKey, SealKey};
use super::client::{plan, write, LogState};
use super::field::P;
use super::provider::ProviderLog;
use super::Region;

const WIDTH: usize = 4;
/// U holds 256 slots: C has 512, level 7 has 256, level 3 has 16 (where sampling without
/// replacement differs most from sampling with it).
const LOG_CAPACITY: u32 = 8;
/// The small λs the rates are measured at.
const SMALL_LAMBDAS: [usize; 4] = [1, 2, 3, 4];
/// The audit's real λ: with more than half of a part corrupted, every trial must detect.
const FULL_LAMBDA: usize = 128;
/// Trials per measured rate.
const TRIALS: u32 = 8_000;
/// Trials per scenario at [`FULL_LAMBDA`] and per part when nothing is corrupted.
const FEW_TRIALS: u32 = 200;
/// The corrupted regions, times the corruptions of each ([`corruptions`]), times the small λs.
const RATE_CHECKS: usize = 3 * 5 * SMALL_LAMBDAS.len();
/// The bound on the probability that this file fails with a correct implementation.
const FALSE_FAILURE: f64 = 1e-9;
/// The Hoeffding budget: most of [`FALSE_FAILURE`]; the rest is for [`FULL_LAMBDA`] misses.
const RATE_BUDGET: f64 = 0.9e-9;

/// `t` with `RATE_CHECKS · 2·exp(-2·TRIALS·t²) = RATE_BUDGET`.
fn tolerance() -> f64 {
    ((2.0 * RATE_CHECKS as f64 / RATE_BUDGET).ln() / (2.0 * f64::from(TRIALS))).sqrt()
}

/// The probability that `min(λ, slots)` distinct uniform picks all miss `corrupted` slots.
fn miss_probability(slots: u64, corrupted: u64, lambda: usize) -> f64 {
    let picked = (lambda as u64).min(slots);
    (0..picked).map(|i| slots.saturating_sub(corrupted + i) as f64 / (slots - i) as f64).product()
}

#[derive(Clone)]
struct Log {
    state: LogState,
    provider: ProviderLog,
    seal: SealKey,
    sums: ChecksumKey,
}

/// A slot as the client writes it: its U index + 1, then 7-byte sectors.
fn slot(index: u64, round: u64) -> Vec<u64> {
    let mut out = vec![index + 1];
    out.extend(
        (0..WIDTH as u64 - 1).map(|e| (round * 7919 + index * 104_729 + e).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8),
    );
    out
}

/// One whole epoch (so C encodes written data), then 255 writes more: every level is filled.
fn filled_log() -> Log {
    let seal = SealKey::new(&[21; 32]);
    let sums = ChecksumKey::new(&[22; 32], WIDTH);
    let (state, coded) = LogState::new(LOG_CAPACITY, 0, &seal);
    let provider = ProviderLog::new(LOG_CAPACITY, 0, WIDTH, coded).expect("a valid log");
    let mut log = Log { state, provider, seal, sums };
    let n = 1u64 << LOG_CAPACITY;
    let writes: Vec<u64> = (0..n).chain((0..n - 1).map(|i| (i * 37) % n)).collect();
    for (round, batch) in writes.chunks(64).enumerate() {
        log.batch(batch, round as u64);
    }
    assert_eq!(log.state.schedule.filled_levels().count(), LOG_CAPACITY as usize);
    log
}

impl Log {
    fn batch(&mut self, writes: &[u64], round: u64) {
        let planned = plan(&self.state, writes, false).expect("a valid batch");
        let slots: Vec<u64> = writes.iter().flat_map(|&i| slot(i, round)).collect();
        let context = self.provider.context(&planned).expect("an honest provider");
        let written = write(&self.state, &planned, &context, writes, &slots, &self.seal, &self.sums).expect("honest");
        self.provider.apply(&planned, writes, &slots, &written).expect("a valid batch");
        self.state = written.state;
    }

    fn part(&self, region: Region) -> Part {
        parts(&self.state.schedule).into_iter().find(|p| p.region == region).expect("the region is audited")
    }

    /// Alters one element of each slot in `indices` of `region` (the sealed checksums stay).
    fn corrupt(&mut self, region: Region, indices: &[u64]) {
        let stored = match region {
            Region::Level(level) => self.provider.levels[level as usize].as_mut().expect("filled"),
            Region::Coded => &mut self.provider.coded,
            Region::Raw => unreachable!("U is not audited by parts"),
        };
        for &index in indices {
            let at = index as usize * WIDTH + 1;
            stored.slots[at] = (stored.slots[at] + 1) % P;
        }
    }

    /// One audit of `part` with `chosen` picks.
    fn audit(&self, part: &Part, chosen: &[Pick]) -> Result<(), AuditFailure> {
        let proof = self.provider.prove(part, chosen).expect("the provider holds every part");
        verify_part(&self.seal, &self.sums, part, chosen, &proof)
    }
}

/// A seed no other trial of this file uses.
fn seed(scenario: usize, lambda: usize, trial: u32) -> [u8; 32] {
    let mut seed = [0; 32];
    seed[..8].copy_from_slice(&(scenario as u64).to_le_bytes());
    seed[8..16].copy_from_slice(&(lambda as u64).to_le_bytes());
    seed[16..20].copy_from_slice(&trial.to_le_bytes());
    seed
}

/// Which `count` of a part's `slots` (X then Y) are corrupted: the first ones, the last ones,
/// or ones spread over both halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Prefix,
    Suffix,
    Scattered,
}

impl Pattern {
    fn indices(self, slots: u64, count: u64) -> Vec<u64> {
        match self {
            Pattern::Prefix => (0..count).collect(),
            Pattern::Suffix => (slots - count..slots).collect(),
            // An odd stride is a permutation of `0..slots` (a power of two).
            Pattern::Scattered => (0..count).map(|i| (i * 37 + 5) % slots).collect(),
        }
    }
}

/// The corruptions of a part of `slots` slots: just over half in each pattern, then a
/// quarter and three quarters spread out.
fn corruptions(slots: u64) -> [(Pattern, u64); 5] {
    let over_half = slots / 2 + 1;
    [
        (Pattern::Prefix, over_half),
        (Pattern::Suffix, over_half),
        (Pattern::Scattered, over_half),
        (Pattern::Scattered, slots / 4),
        (Pattern::Scattered, 3 * slots / 4),
    ]
}

const REGIONS: [Region; 3] = [Region::Level(3), Region::Level(7), Region::Coded];

/// Runs `trials` audits of `part` with picks from `sampler`, checks each outcome against
/// whether a pick hit `corrupted`, and returns how many detected.
fn detections(
    log: &Log,
    part: &Part,
    corrupted: &[u64],
    lambda: usize,
    trials: std::ops::Range<u32>,
    scenario: usize,
    sampler: impl Fn(&[u8; 32], &Part, usize) -> Vec<Pick>,
) -> u32 {
    let mut damaged = vec![false; part.slots as usize];
    corrupted.iter().for_each(|&i| damaged[i as usize] = true);
    let mut detected = 0;
    for trial in trials {
        let chosen = sampler(&seed(scenario, lambda, trial), part, lambda);
        let hit = chosen.iter().any(|p| damaged[p.index as usize]);
        match log.audit(part, &chosen) {
            Ok(()) => assert!(!hit, "{part:?} λ {lambda} trial {trial}: damage picked, not detected"),
            Err(AuditFailure::AggregateMismatch) if hit => detected += 1,
            Err(e) => panic!("{part:?} λ {lambda} trial {trial}: {e} (hit: {hit})"),
        }
    }
    detected
}

/// Every (region, corruption in `patterns`, small λ) whose measured rate is outside the
/// tolerance of the law's, described; and how many were checked.
fn rates_off_the_law(
    sampler: impl Fn(&[u8; 32], &Part, usize) -> Vec<Pick> + Copy,
    patterns: &[Pattern],
) -> (Vec<String>, usize) {
    let tolerance = tolerance();
    let clean = filled_log();
    let (mut off, mut checks) = (Vec::new(), 0);
    for (r, region) in REGIONS.into_iter().enumerate() {
        let part = clean.part(region);
        for (c, (pattern, count)) in corruptions(part.slots).into_iter().enumerate() {
            if !patterns.contains(&pattern) {
                continue;
            }
            let corrupted = pattern.indices(part.slots, count);
            let mut log = clean.clone();
            log.corrupt(region, &corrupted);
            for lambda in SMALL_LAMBDAS {
                let detected = detections(&log, &part, &corrupted, lambda, 0..TRIALS, r * 10 + c, sampler);
                let rate = f64::from(detected) / f64::from(TRIALS);
                let law = 1.0 - miss_probability(part.slots, count, lambda);
                checks += 1;
                if (rate - law).abs() > tolerance {
                    off.push(format!(
                        "{region:?}: {count} of {} slots corrupted ({pattern:?}), λ {lambda}: detected {rate:.4}, \
                         the law says {law:.4} ± {tolerance:.4}",
                        part.slots
                    ));
                }
            }
        }
    }
    (off, checks)
}

#[test]
fn the_tolerance_keeps_false_failures_below_one_in_a_billion() {
    let t = tolerance();
    let per_check = 2.0 * (-2.0 * f64::from(TRIALS) * t * t).exp();
    assert!(RATE_CHECKS as f64 * per_check <= RATE_BUDGET * 1.000_001, "{per_check}");
    // Small enough to tell apart rates that differ by a tenth.
    assert!(t < 0.05, "{t}");
    // The λ = 128 trials miss with a probability within the rest of the budget.
    let log = filled_log();
    let full_misses: f64 = REGIONS
        .iter()
        .flat_map(|&region| {
            let slots = log.part(region).slots;
            corruptions(slots)
                .into_iter()
                .filter(move |&(_, count)| count > slots / 2)
                .map(move |(_, count)| f64::from(FEW_TRIALS) * miss_probability(slots, count, FULL_LAMBDA))
        })
        .sum();
    assert!(full_misses < FALSE_FAILURE - RATE_BUDGET, "{full_misses}");
}

#[test]
fn the_law_is_sampling_without_replacement() {
    // 9 of 16 corrupted, 4 picks: all four among the 7 intact ones.
    let exact = (7.0 * 6.0 * 5.0 * 4.0) / (16.0 * 15.0 * 14.0 * 13.0);
    assert!((miss_probability(16, 9, 4) - exact).abs() < 1e-15);
    assert!(miss_probability(16, 9, 4) < (7.0f64 / 16.0).powi(4), "below (1-f)^λ");
    assert_eq!(miss_probability(16, 9, 8), 0.0, "more picks than intact slots always hit");
    assert_eq!(miss_probability(16, 0, 4), 1.0);
    assert_eq!(miss_probability(4, 1, 128), 0.0, "a small part is picked whole");
}

#[test]
fn detection_rates_match_the_hypergeometric_law_at_small_lambda() {
    let (off, checks) = rates_off_the_law(picks, &[Pattern::Prefix, Pattern::Suffix, Pattern::Scattered]);
    assert_eq!(checks, RATE_CHECKS);
    assert!(off.is_empty(), "{off:#?}");
}

/// The check has power: picks confined to X (the first half of each part) are told apart,
/// in every region, whether the damage covers X or lies mostly in Y.
#[test]
fn picks_that_never_reach_the_second_half_would_be_caught() {
    let first_half =
        |seed: &[u8; 32], part: &Part, lambda: usize| picks(seed, &Part { slots: part.slots / 2, ..*part }, lambda);
    let (off, _) = rates_off_the_law(first_half, &[Pattern::Prefix, Pattern::Suffix]);
    for region in REGIONS {
        for pattern in ["Prefix", "Suffix"] {
            let caught = off.iter().any(|o| o.starts_with(&format!("{region:?}:")) && o.contains(pattern));
            assert!(caught, "{region:?} {pattern}: {off:#?}");
        }
    }
}

#[test]
fn with_lambda_128_every_audit_of_a_part_over_half_corrupted_detects() {
    let clean = filled_log();
    let mut scenario = 1000;
    for region in REGIONS {
        let part = clean.part(region);
        for (pattern, count) in corruptions(part.slots).into_iter().filter(|(_, count)| *count > part.slots / 2) {
            scenario += 1;
            let corrupted = pattern.indices(part.slots, count);
            let mut log = clean.clone();
            log.corrupt(region, &corrupted);
            let detected = detections(&log, &part, &corrupted, FULL_LAMBDA, 0..FEW_TRIALS, scenario, picks);
            assert_eq!(detected, FEW_TRIALS, "{region:?}, {count} of {} corrupted ({pattern:?})", part.slots);
        }
    }
}

/// No false positives: an intact log passes every audit, and corrupting one part never
/// fails another.
#[test]
fn intact_parts_are_never_flagged() {
    let clean = filled_log();
    let mut damaged = clean.clone();
    let level_3 = clean.part(Region::Level(3));
    damaged.corrupt(Region::Level(3), &Pattern::Scattered.indices(level_3.slots, level_3.slots / 2 + 1));
    let all = parts(&clean.state.schedule);
    assert_eq!(all.len(), LOG_CAPACITY as usize + 1, "every level and C");
    for lambda in SMALL_LAMBDAS.into_iter().chain([FULL_LAMBDA]) {
        for trial in 0..FEW_TRIALS {
            let seed = seed(2000, lambda, trial);
            for part in &all {
                let chosen = picks(&seed, part, lambda);
                assert_eq!(clean.audit(part, &chosen), Ok(()), "intact log, {part:?}, λ {lambda}, trial {trial}");
                if part.region != Region::Level(3) {
                    assert_eq!(damaged.audit(part, &chosen), Ok(()), "{part:?} flagged for level 3's damage");
                }
            }
        }
    }
}
