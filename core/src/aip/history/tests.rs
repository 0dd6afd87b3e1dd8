//! The checkers on hand-made histories: linearizable ones and not (a stale read, a lost
//! write, real time out of order), forks that stay apart and forks that join, and histories
//! made from random executions, forked or not.

use super::*;
use proptest::prelude::*;

fn put(key: &str, value: &str) -> DictOp {
    DictOp::Put { key: key.into(), value: value.into() }
}

fn get(key: &str) -> DictOp {
    DictOp::Get { key: key.into() }
}

/// An operation that returned `response` between stamps `invoked` and `returned`.
fn done(op: DictOp, response: DictResponse, invoked: u64, returned: u64) -> Completed<DictOp> {
    Completed { op, outcome: Outcome::Done(response), invoked, returned }
}

fn wrote(op: DictOp, invoked: u64, returned: u64) -> Completed<DictOp> {
    done(op, DictResponse::Nothing, invoked, returned)
}

fn read(key: &str, value: Option<&str>, invoked: u64, returned: u64) -> Completed<DictOp> {
    done(get(key), DictResponse::Value(value.map(Into::into)), invoked, returned)
}

fn listed(keys: &[&str], invoked: u64, returned: u64) -> Completed<DictOp> {
    done(DictOp::List, DictResponse::Keys(keys.iter().map(|k| k.as_bytes().to_vec()).collect()), invoked, returned)
}

fn aborted(op: DictOp, invoked: u64, returned: u64) -> Completed<DictOp> {
    Completed { op, outcome: Outcome::Abort, invoked, returned }
}

fn histories(clients: Vec<(ClientId, Vec<Completed<DictOp>>)>) -> Histories<DictOp> {
    clients.into_iter().collect()
}

fn id(client: ClientId, index: usize) -> OpId {
    OpId { client, index }
}

/// An independent check of an order the checker gave: each of `expected` exactly once, each
/// response the specification's, and real time respected.
fn assert_legal(h: &Histories<DictOp>, order: &[OpId], expected: impl Iterator<Item = OpId>) {
    let mut state = BTreeMap::new();
    for (k, at) in order.iter().enumerate() {
        let c = &h[&at.client][at.index];
        if let Outcome::Done(response) = &c.outcome {
            assert_eq!(&c.op.apply(&mut state), response, "{at:?}");
        }
        for later in &order[k + 1..] {
            assert!(h[&later.client][later.index].returned >= c.invoked, "{later:?} precedes {at:?}");
        }
    }
    let mut all: Vec<_> = expected.collect();
    let mut placed = order.to_vec();
    all.sort();
    placed.sort();
    assert_eq!(all, placed);
}

#[test]
fn a_sequential_history_is_linearizable_in_its_order() {
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 2), wrote(DictOp::Delete { key: b"x".to_vec() }, 5, 6)]),
        (1, vec![read("x", Some("1"), 3, 4), listed(&[], 7, 8)]),
    ]);
    assert_eq!(linearizable(&h), Ok(vec![id(0, 0), id(1, 0), id(0, 1), id(1, 1)]));
}

#[test]
fn concurrent_operations_take_whichever_order_fits() {
    // The put overlaps both reads: before the second, after the first.
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 10)]),
        (1, vec![read("x", None, 2, 3)]),
        (2, vec![read("x", Some("1"), 4, 5)]),
    ]);
    assert_eq!(linearizable(&h), Ok(vec![id(1, 0), id(0, 0), id(2, 0)]));
    // Equal stamps are concurrent: the read may still go first.
    let h = histories(vec![(0, vec![wrote(put("x", "1"), 1, 3)]), (1, vec![read("x", None, 3, 4)])]);
    assert_legal(&h, &linearizable(&h).unwrap(), ids(&h).map(|(id, _)| id));
}

#[test]
fn a_stale_read_is_not_linearizable() {
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 2), wrote(put("x", "2"), 3, 4)]),
        (1, vec![read("x", Some("1"), 5, 6)]),
    ]);
    assert_eq!(linearizable(&h), Err(CheckError::NotLinearizable { fork: None, linearized: 2, of: 3 }));
    let h = histories(vec![(0, vec![wrote(put("x", "1"), 1, 2)]), (1, vec![read("x", None, 3, 4)])]);
    assert!(matches!(linearizable(&h), Err(CheckError::NotLinearizable { .. })));
}

#[test]
fn a_lost_write_is_not_linearizable() {
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 2)]),
        (1, vec![wrote(put("y", "2"), 3, 4)]),
        (2, vec![listed(&["x"], 5, 6)]),
    ]);
    assert!(matches!(linearizable(&h), Err(CheckError::NotLinearizable { fork: None, .. })));
}

#[test]
fn real_time_order_is_respected() {
    // Put 2 after put 1 in real time, then a read of 1: legal only in an order real time
    // forbids (put 2, put 1, get).
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 2)]),
        (1, vec![wrote(put("x", "2"), 3, 4)]),
        (2, vec![read("x", Some("1"), 5, 6)]),
    ]);
    assert!(matches!(linearizable(&h), Err(CheckError::NotLinearizable { .. })));
    // With put 2 overlapping put 1, that order is allowed.
    let mut h = h;
    h.get_mut(&1).unwrap()[0].invoked = 1;
    assert_eq!(linearizable(&h), Ok(vec![id(1, 0), id(0, 0), id(2, 0)]));
}

#[test]
fn an_aborted_operation_has_no_effect() {
    let h = histories(vec![
        (0, vec![aborted(put("x", "1"), 1, 2), aborted(get("x"), 3, 4)]),
        (1, vec![read("x", None, 5, 6)]),
    ]);
    let order = linearizable(&h).unwrap();
    assert_eq!(order.len(), 3, "in the order, with no effect");
    assert_legal(&h, &order, ids(&h).map(|(id, _)| id));
}

#[test]
fn an_ill_formed_history_is_refused() {
    let h = histories(vec![(0, vec![wrote(put("x", "1"), 2, 1)])]);
    assert_eq!(linearizable(&h), Err(CheckError::IllFormed { op: id(0, 0), why: "returned before it was invoked" }));
    let h = histories(vec![(0, vec![wrote(put("x", "1"), 1, 3), read("x", Some("1"), 3, 4)])]);
    let overlapping = CheckError::IllFormed { op: id(0, 1), why: "invoked before its client's previous one returned" };
    assert_eq!(linearizable(&h), Err(overlapping.clone()));
    assert_eq!(fork_linearizable(&h, &Forks::default()), Err(overlapping));
}

/// Before the split, client 0 puts x = 1. Then fork 0 (clients 0, 1) overwrites x, and fork
/// 1 (client 2) still reads the old value and adds y; `fork_read` is what client 2 reads.
fn forked(fork_read: &str) -> (Histories<DictOp>, Forks) {
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 2), wrote(put("x", "2"), 3, 4)]),
        (1, vec![read("x", Some("2"), 5, 6)]),
        (2, vec![read("x", Some(fork_read), 7, 8), wrote(put("y", "3"), 9, 10), listed(&["x", "y"], 11, 12)]),
    ]);
    let forks = Forks { groups: vec![BTreeSet::from([0, 1]), BTreeSet::from([2])], shared: BTreeSet::from([id(0, 0)]) };
    (h, forks)
}

#[test]
fn two_forks_each_linearizable_are_fork_linearizable() {
    let (h, forks) = forked("1");
    assert!(linearizable(&h).is_err(), "client 2 reads x = 1 after x = 2 was written: no single order");
    let views = fork_linearizable(&h, &forks).unwrap();
    assert_eq!(views.shared, [id(0, 0)]);
    assert_eq!(views.forks, [vec![id(0, 1), id(1, 0)], vec![id(2, 0), id(2, 1), id(2, 2)]]);
    assert_eq!(views.view(1), [id(0, 0), id(2, 0), id(2, 1), id(2, 2)]);
    assert_eq!(Forks::split_at(&h, forks.groups.clone(), 3), forks, "what returned before stamp 3");
    // One fork of everyone, nothing shared: plain linearizability.
    let one = Forks { groups: vec![BTreeSet::from([0, 1, 2])], shared: BTreeSet::new() };
    assert!(fork_linearizable(&h, &one).is_err());
}

#[test]
fn an_operation_of_one_fork_seen_in_another_is_a_join() {
    // Client 2 reads the value only fork 0 wrote after the split.
    let (h, forks) = forked("2");
    assert_eq!(fork_linearizable(&h, &forks), Err(CheckError::Joined { fork: 1, op: id(0, 1) }));
    // A value nobody wrote is no join: fork 1 is just not linearizable.
    let (h, forks) = forked("9");
    assert!(matches!(fork_linearizable(&h, &forks), Err(CheckError::NotLinearizable { fork: Some(1), .. })));
}

#[test]
fn the_forks_must_agree_on_the_order_of_the_shared_operations() {
    // Two concurrent puts before the split; fork 0 reads as if put 2 went first, fork 1 as if
    // put 1 did. Each fork alone is linearizable; with one shared prefix, not both.
    let h = histories(vec![
        (0, vec![wrote(put("x", "1"), 1, 5), read("x", Some("1"), 7, 8)]),
        (1, vec![wrote(put("x", "2"), 2, 6), read("x", Some("2"), 9, 10)]),
    ]);
    let shared = BTreeSet::from([id(0, 0), id(1, 0)]);
    let apart = Forks { groups: vec![BTreeSet::from([0]), BTreeSet::from([1])], shared };
    assert!(matches!(fork_linearizable(&h, &apart), Err(CheckError::NotLinearizable { fork: Some(_), .. })));
    // Without the shared prefix (each fork with its own put), they are.
    let own = Forks { shared: BTreeSet::new(), ..apart };
    assert!(fork_linearizable(&h, &own).is_ok());
}

#[test]
fn a_misnamed_fork_structure_is_refused() {
    let (h, forks) = forked("1");
    let twice = Forks { groups: vec![BTreeSet::from([0, 1, 2]), BTreeSet::from([2])], ..forks.clone() };
    assert_eq!(fork_linearizable(&h, &twice), Err(CheckError::Forks("a client on two forks")));
    let missing = Forks { groups: vec![BTreeSet::from([0, 1])], ..forks.clone() };
    assert_eq!(fork_linearizable(&h, &missing), Err(CheckError::Forks("a client with a history on no fork")));
    let gap = Forks { shared: BTreeSet::from([id(0, 1)]), ..forks.clone() };
    assert!(matches!(fork_linearizable(&h, &gap), Err(CheckError::Forks(_))));
    let unknown = Forks { shared: BTreeSet::from([id(7, 0)]), ..forks.clone() };
    assert!(matches!(fork_linearizable(&h, &unknown), Err(CheckError::Forks(_))));
    // Client 2's read after the split, named shared: client 0's put x = 2 (not shared) returned
    // before it.
    let late = Forks { shared: BTreeSet::from([id(0, 0), id(2, 0)]), ..forks };
    assert_eq!(fork_linearizable(&h, &late), Err(CheckError::SplitOrder { shared: id(2, 0), later: id(0, 1) }));
}

/// A random execution: operation `k` takes effect at stamp `100 (k + 1)`, by a random
/// client of four, invoked and returning up to 49 stamps around that. With `forked`, the
/// operations after the first `shared` ones take effect on two forks, clients 0 and 1 on one
/// and 2 and 3 on the other, each from the state the shared ones left.
fn execution(forked: bool) -> impl Strategy<Value = (Histories<DictOp>, usize)> {
    let key = (0u8..3).prop_map(|k| format!("k{k}"));
    let op = prop_oneof![
        (key.clone(), 0u8..3).prop_map(|(k, v)| put(&k, &v.to_string())),
        key.clone().prop_map(|k| get(&k)),
        key.prop_map(|k| DictOp::Delete { key: k.into_bytes() }),
        Just(DictOp::List),
    ];
    let step = (op, 0u32..4, 0u64..50, 0u64..50, any::<bool>());
    (proptest::collection::vec(step, 1..40), 0usize..40).prop_map(move |(steps, shared)| {
        let shared = if forked { shared.min(steps.len()) } else { steps.len() };
        let (mut states, mut h) = ([BTreeMap::new(), BTreeMap::new()], Histories::new());
        for (k, (op, client, before, after, abort)) in steps.into_iter().enumerate() {
            if k == shared {
                states[1] = states[0].clone();
            }
            let state = &mut states[if k < shared { 0 } else { client as usize / 2 }];
            let at = 100 * (k as u64 + 1);
            let outcome = match abort {
                true => Outcome::Abort,
                false => Outcome::Done(op.apply(state)),
            };
            let done = Completed { op, outcome, invoked: at - before, returned: at + after };
            h.entry(client).or_insert_with(Vec::new).push(done);
        }
        (h, shared)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// A history of a sequential execution is linearizable, in a legal order.
    #[test]
    fn an_execution_is_linearizable((h, _) in execution(false)) {
        assert_legal(&h, &linearizable(&h).unwrap(), ids(&h).map(|(id, _)| id));
    }

    /// A history of an execution forked in two is fork-linearizable, each view legal and
    /// holding its fork's operations.
    #[test]
    fn a_forked_execution_is_fork_linearizable((h, shared) in execution(true)) {
        let groups = vec![BTreeSet::from([0, 1]), BTreeSet::from([2, 3])];
        let forks = Forks::split_at(&h, groups, 100 * shared as u64 + 50);
        prop_assert_eq!(forks.shared.len(), shared);
        let views = fork_linearizable(&h, &forks).unwrap();
        for (f, group) in forks.groups.iter().enumerate() {
            let mine = ids(&h).map(|(id, _)| id).filter(|id| forks.shared.contains(id) || group.contains(&id.client));
            assert_legal(&h, &views.view(f), mine);
        }
    }
}
