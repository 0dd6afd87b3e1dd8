//! Random message schedules against an honest server, with the extensions on: abort marks,
//! queries without a passive phase, delegated batches, a bounded pending list with a
//! priority inbox, a client that crashes and is taken over, and garbage collection. No
//! client ever blames the server, and the completed operations replay in sequence order
//! and are linearizable in real time ([`crate::aip::history`]). The simulator is [`super::sim`].

use super::sim::{random_op, Setup, Sim};
use super::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Three clients, messages delivered in a random order (FIFO per channel, then by
    /// priority): no violation, every completed operation's response is the one its place
    /// in the sequence order gives, and the responses have a legal order that respects the
    /// real time of the schedule.
    #[test]
    fn an_honest_server_is_never_blamed_and_the_history_is_linearizable(
        work in proptest::collection::vec(proptest::collection::vec(random_op(), 1..8), 3),
        schedule in proptest::collection::vec(0usize..10_000, 0..500),
        commutative in any::<bool>(),
        delegate in any::<bool>(),
        early in any::<bool>(),
        max_pending in 1u64..6,
        crash in proptest::option::of((0usize..3, 0usize..200, any::<bool>())),
    ) {
        let mode = if commutative { Mode::Commutative } else { Mode::Compatible };
        let mut sim = Sim::new(Setup { mode, max_pending, delegate, crash, persist: false, early }, work);
        sim.run(schedule);
        sim.check_linearizable();
    }
}

/// A xorshift stream: a long, reproducible schedule.
fn xorshift(mut x: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(x as usize)
    })
}

fn long_work(seed: u64, clients: usize, ops: usize) -> Vec<Vec<Op>> {
    let mut r = xorshift(seed);
    let mut op = move || {
        let (kind, key) = (r.next().unwrap() % 4, format!("k{}", r.next().unwrap() % 6));
        match kind {
            0 => put(&key, &r.next().unwrap().to_string()),
            1 => get(&key),
            2 => DictOp::Delete { key: key.into_bytes() },
            _ => DictOp::List,
        }
    };
    (0..clients).map(|_| (0..ops).map(|_| op()).collect()).collect()
}

/// A long run with everything on (and a crash halfway): the server's memory stays bounded,
/// far below the history's length, and every extension was exercised.
#[test]
fn a_long_run_keeps_the_server_bounded() {
    let crashes = [None, Some((2, 3_000, false)), Some((1, 2_000, true)), Some((0, 4_000, true))];
    for (seed, crash) in [7, 11, 13, 17].into_iter().zip(crashes) {
        let early = seed % 4 == 1;
        let setup = Setup { mode: Mode::Commutative, max_pending: 4, delegate: true, crash, persist: false, early };
        let mut sim = Sim::new(setup, long_work(seed, 3, 300));
        sim.run(xorshift(seed * 31).take(60_000));
        sim.check_linearizable();
        let seen = &sim.seen;
        assert!(sim.s.invoked() > 600, "{} operations", sim.s.invoked());
        assert!(seen.max_retained < 60, "kept up to {} of {} operations", seen.max_retained, sim.s.invoked());
        assert!(seen.marks > 0 && seen.delegated > 0 && seen.held_invokes > 0, "{seen:?}");
        assert_eq!(seen.takeovers, usize::from(crash.is_some()), "{seen:?}");
        assert_eq!(seen.early_auths > 0, early, "{seen:?}");
        if crash.is_some_and(|(_, _, unhandled)| unhandled) {
            assert!(seen.takeover_aborts > 0, "{seen:?}");
        }
        eprintln!("seed {seed}: {} operations, {seen:?}", sim.s.invoked());
    }
}
