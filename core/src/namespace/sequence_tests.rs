//! The namespace over sequences `μ` (a client's own pending operations, then its current
//! one, paper 003 Alg. 2): each update before the last is proven against the namespace after
//! the ones before it, and the client checks the chain of proofs to the last response.

use super::*;

/// `ops` on the namespace of `names`: one proof per update before the last, one for the last;
/// the authenticator after them all is the server's after applying them, and the response
/// is the model's after the ones before.
fn run_sequence(names: &[&str], ops: &[NamespaceOp]) {
    let server = state(names);
    let (response, aux) = NamespaceOps::query(&server, ops).unwrap();
    let writes_before = ops[..ops.len() - 1].iter().filter(|op| !NamespaceOps::is_query(op)).count();
    assert_eq!(aux.0.len(), writes_before + 1, "{ops:?}");
    let mut after = server.clone();
    let mut model: BTreeMap<String, EntryRecord> = all(&server).into_iter().map(|e| (e.name.clone(), e)).collect();
    for op in &ops[..ops.len() - 1] {
        NamespaceOps::refresh(&mut after, op).unwrap();
        model_apply(&mut model, op);
    }
    assert_eq!(response, expected(&model, ops.last().unwrap()), "{ops:?}");
    NamespaceOps::refresh(&mut after, ops.last().unwrap()).unwrap();
    assert_eq!(NamespaceOps::authexec(ops, &auth(&server), &response, &aux), Ok(auth(&after)), "{ops:?}");
}

fn all(state: &NamespaceTree) -> Vec<EntryRecord> {
    state.entries().map(|e| e.unwrap().clone()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_sequence_is_proven_one_update_after_another(ops in proptest::collection::vec(arb_op(), 1..8)) {
        run_sequence(&[], &ops);
        run_sequence(&["a", "c", "d"], &ops);
    }
}

/// `[put b, get a, delete c, get b]`: three steps (the get of "a" has none).
fn sequence() -> (NamespaceTree, Vec<NamespaceOp>, NamespaceResponse, NamespaceAux) {
    let server = state(&["a", "c", "d"]);
    let ops = vec![
        NamespaceOp::Put(entry("b", 7)),
        NamespaceOp::Get("a".into()),
        NamespaceOp::Delete("c".into()),
        NamespaceOp::Get("b".into()),
    ];
    let (response, aux) = NamespaceOps::query(&server, &ops).unwrap();
    assert_eq!(response, NamespaceResponse::Value(Some(entry("b", 7))), "the client reads its own pending put");
    assert_eq!(aux.0.len(), 3);
    (server, ops, response, aux)
}

#[test]
fn a_sequence_with_a_step_left_out_moved_or_added_is_refused() {
    let (server, ops, response, aux) = sequence();
    let a = auth(&server);
    assert!(NamespaceOps::authexec(&ops, &a, &response, &aux).is_ok());
    let count = Err(NamespaceError::Inconsistent("not one proof per update and one for the last operation"));
    for left_out in 0..aux.0.len() {
        let mut fewer = aux.clone();
        fewer.0.remove(left_out);
        assert_eq!(NamespaceOps::authexec(&ops, &a, &response, &fewer), count, "step {left_out} left out");
    }
    let mut swapped = aux.clone();
    swapped.0.swap(0, 1);
    assert!(NamespaceOps::authexec(&ops, &a, &response, &swapped).is_err());
    // A step for the get in the middle, as if it needed one.
    let mut more = aux.clone();
    more.0.insert(1, query1(&server, &ops[1]).unwrap().1);
    assert_eq!(NamespaceOps::authexec(&ops, &a, &response, &more), count);
    // The last step proven against the namespace before the put of "b" (where it is absent).
    let mut stale = aux.clone();
    stale.0[2] = query1(&server, &ops[3]).unwrap().1;
    assert!(NamespaceOps::authexec(&ops, &a, &response, &stale).is_err());
    // The response the namespace had before the client's own put.
    let before = NamespaceResponse::Value(None);
    assert!(NamespaceOps::authexec(&ops, &a, &before, &aux).is_err());
    assert_eq!(
        NamespaceOps::authexec(&[], &a, &response, &aux),
        Err(NamespaceError::Inconsistent("no operation to check"))
    );
}

#[test]
fn refresh_refuses_a_name_that_cannot_be_a_name_and_changes_nothing() {
    let mut server = state(&["a", "c"]);
    let before = auth(&server);
    let mut bad = entry("b", 1);
    bad.name = "x\ny".into();
    for op in [NamespaceOp::Put(bad), NamespaceOp::Delete(String::new())] {
        assert!(matches!(NamespaceOps::refresh(&mut server, &op), Err(TreeError::Name(_))), "{op:?}");
        assert_eq!(auth(&server), before);
    }
}
