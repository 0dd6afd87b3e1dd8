//! The namespace as a VICOS functionality: honest rounds keep the client's authenticator equal
//! to the server's state, lying answers are refused, and `compatible` is Table 1 of paper 003.
//! Most rounds are of one operation (`query1`, `authexec1`); sequences `μ` are at the end.

use super::super::tree::tests::entry;
use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// `query` of one operation: its response and its one step.
fn query1(state: &NamespaceTree, op: &NamespaceOp) -> Result<(NamespaceResponse, NamespaceStep), TreeError> {
    let (response, NamespaceAux(mut steps)) = NamespaceOps::query(state, std::slice::from_ref(op))?;
    assert_eq!(steps.len(), 1, "one operation, one step");
    Ok((response, steps.pop().unwrap()))
}

/// `authexec` of one operation with one step.
fn authexec1(
    op: &NamespaceOp,
    auth: &NamespaceAuth,
    response: &NamespaceResponse,
    step: &NamespaceStep,
) -> Result<NamespaceAuth, NamespaceError> {
    NamespaceOps::authexec(std::slice::from_ref(op), auth, response, &NamespaceAux(vec![step.clone()]))
}

fn state(names: &[&str]) -> NamespaceTree {
    NamespaceTree::load(names.iter().enumerate().map(|(i, n)| entry(n, i as u8 + 1)).collect()).unwrap()
}

fn auth(state: &NamespaceTree) -> NamespaceAuth {
    (state.root(), state.len())
}

/// One honest round: query, authexec, refresh; the client's new authenticator is the
/// server's new state. Returns the response.
fn round(state: &mut NamespaceTree, client: &mut NamespaceAuth, op: &NamespaceOp) -> NamespaceResponse {
    let (response, aux) = query1(state, op).unwrap();
    let before = auth(state);
    let next = authexec1(op, client, &response, &aux).unwrap();
    assert_eq!(auth(state), before, "query changed the state");
    NamespaceOps::refresh(state, op).unwrap();
    assert_eq!(next, auth(state), "{op:?}");
    *client = next;
    response
}

/// What the model says `op` answers.
fn expected(model: &BTreeMap<String, EntryRecord>, op: &NamespaceOp) -> NamespaceResponse {
    match op {
        NamespaceOp::Get(name) => NamespaceResponse::Value(model.get(name).cloned()),
        NamespaceOp::List => NamespaceResponse::Listing(model.values().cloned().collect()),
        NamespaceOp::Put(_) | NamespaceOp::Delete(_) => NamespaceResponse::Done,
    }
}

fn model_apply(model: &mut BTreeMap<String, EntryRecord>, op: &NamespaceOp) {
    match op {
        NamespaceOp::Put(e) => {
            model.insert(e.name.clone(), e.clone());
        }
        NamespaceOp::Delete(name) => {
            model.remove(name);
        }
        NamespaceOp::Get(_) | NamespaceOp::List => {}
    }
}

fn run(ops: &[NamespaceOp]) {
    let mut server = NamespaceTree::default();
    let mut client = auth(&server);
    let mut model = BTreeMap::new();
    for op in ops {
        let response = round(&mut server, &mut client, op);
        assert_eq!(response, expected(&model, op), "{op:?}");
        model_apply(&mut model, op);
        assert_eq!(client.1, model.len() as u64);
    }
}

#[test]
fn honest_rounds_keep_client_and_server_together() {
    use NamespaceOp::*;
    run(&[
        Get("a".into()),
        List,
        Delete("a".into()),
        Put(entry("m", 1)),
        Get("m".into()),
        Put(entry("c", 2)),
        Put(entry("x", 3)),
        Get("a".into()),
        Get("n".into()),
        Get("z".into()),
        List,
        Put(entry("m", 4)),
        Get("m".into()),
        Put(entry("m", 4)),
        Delete("q".into()),
        Delete("c".into()),
        Get("c".into()),
        List,
        Delete("x".into()),
        Delete("m".into()),
        List,
        Get("m".into()),
        Put(entry("b", 5)),
        List,
    ]);
}

fn arb_op() -> impl Strategy<Value = NamespaceOp> {
    const NAMES: [&str; 6] = ["a", "b", "bb", "c", "d", "e"];
    prop_oneof![
        (0..NAMES.len()).prop_map(|n| NamespaceOp::Get(NAMES[n].into())),
        (0..NAMES.len(), any::<u8>()).prop_map(|(n, s)| NamespaceOp::Put(entry(NAMES[n], s))),
        (0..NAMES.len()).prop_map(|n| NamespaceOp::Delete(NAMES[n].into())),
        Just(NamespaceOp::List),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_honest_rounds(ops in proptest::collection::vec(arb_op(), 1..50)) {
        run(&ops);
    }
}

// ---- lies ----

fn refused(op: &NamespaceOp, auth: &NamespaceAuth, response: &NamespaceResponse, aux: &NamespaceStep) {
    let r = authexec1(op, auth, response, aux);
    assert!(r.is_err(), "accepted {op:?} -> {response:?}: {r:?}");
}

fn honest(server: &NamespaceTree, op: &NamespaceOp) -> (NamespaceResponse, NamespaceStep) {
    let (response, aux) = query1(server, op).unwrap();
    assert!(authexec1(op, &auth(server), &response, &aux).is_ok(), "{op:?}");
    (response, aux)
}

#[test]
fn a_get_answered_against_its_proof_is_refused() {
    let server = state(&["b", "d", "f"]);
    let a = auth(&server);
    let get_d = NamespaceOp::Get("d".into());
    let (_, aux) = honest(&server, &get_d);
    let d = server.entry(1).unwrap().clone();
    let mut altered = d.clone();
    altered.versions += 1;
    for lie in [Some(altered), Some(server.entry(0).unwrap().clone()), None] {
        refused(&get_d, &a, &NamespaceResponse::Value(lie), &aux);
    }
    // An absent name claimed present, or placed elsewhere.
    let get_c = NamespaceOp::Get("c".into());
    let (_, aux) = honest(&server, &get_c);
    let invented = entry("c", 9);
    for lie in [Some(invented), Some(d)] {
        refused(&get_c, &a, &NamespaceResponse::Value(lie), &aux);
    }
    // The honest answer for another name.
    let (response, aux) = honest(&server, &NamespaceOp::Get("f".into()));
    refused(&get_d, &a, &response, &aux);
    // An answer from an older state (before "d" was changed).
    let mut newer = server.clone();
    let mut client = a;
    round(&mut newer, &mut client, &NamespaceOp::Put(entry("d", 42)));
    let (response, aux) = honest(&server, &get_d);
    refused(&get_d, &client, &response, &aux);
}

#[test]
fn a_put_with_the_proof_of_another_change_is_refused() {
    let server = state(&["b", "d", "f"]);
    let a = auth(&server);
    // A new name, and a new entry for a present name.
    for (put, other) in [(entry("c", 1), entry("c", 2)), (entry("d", 7), entry("d", 8))] {
        let op = NamespaceOp::Put(put.clone());
        let (response, honest_aux) = honest(&server, &op);
        // The proof of putting another entry under the same name.
        let (_, aux) = query1(&server, &NamespaceOp::Put(other)).unwrap();
        refused(&op, &a, &response, &aux);
        // The honest lookup with the other entry's update proof.
        let NamespaceStep::Lookup { lookup, .. } = &honest_aux else { panic!("not a lookup") };
        let NamespaceStep::Lookup { update, .. } = aux else { panic!("not a lookup") };
        refused(&op, &a, &response, &NamespaceStep::Lookup { lookup: lookup.clone(), update });
        // The proof of deleting the name instead.
        let (_, aux) = query1(&server, &NamespaceOp::Delete(put.name.clone())).unwrap();
        refused(&op, &a, &response, &aux);
    }
    // A put of "c" with the lookup and update of a put of "e" (another gap).
    let op = NamespaceOp::Put(entry("c", 1));
    let (response, _) = honest(&server, &op);
    let (_, aux) = query1(&server, &NamespaceOp::Put(entry("e", 1))).unwrap();
    refused(&op, &a, &response, &aux);
}

#[test]
fn an_update_proof_missing_or_superfluous_is_refused() {
    let server = state(&["b", "d", "f"]);
    let a = auth(&server);
    let some_update = {
        let (_, aux) = query1(&server, &NamespaceOp::Put(entry("c", 1))).unwrap();
        let NamespaceStep::Lookup { update, .. } = aux else { panic!("not a lookup") };
        update.unwrap()
    };
    // Missing: a put (new or present name), a delete of a present name.
    for op in [NamespaceOp::Put(entry("c", 3)), NamespaceOp::Put(entry("d", 3)), NamespaceOp::Delete("d".into())] {
        let (response, aux) = honest(&server, &op);
        let NamespaceStep::Lookup { lookup, update } = aux else { panic!("not a lookup") };
        assert!(update.is_some());
        refused(&op, &a, &response, &NamespaceStep::Lookup { lookup, update: None });
    }
    // Superfluous: a delete of an absent name.
    let op = NamespaceOp::Delete("c".into());
    let (response, aux) = honest(&server, &op);
    let NamespaceStep::Lookup { lookup, update } = aux else { panic!("not a lookup") };
    assert!(update.is_none());
    refused(&op, &a, &response, &NamespaceStep::Lookup { lookup, update: Some(some_update) });
}

#[test]
fn a_get_with_an_update_proof_is_refused() {
    // A get changes nothing, so an update proof that comes with it is superfluous.
    let server = state(&["b", "d", "f"]);
    let a = auth(&server);
    let (_, aux) = query1(&server, &NamespaceOp::Put(entry("d", 3))).unwrap();
    let NamespaceStep::Lookup { update, .. } = aux else { panic!("not a lookup") };
    for name in ["d", "c"] {
        let op = NamespaceOp::Get(name.into());
        let (response, aux) = honest(&server, &op);
        let NamespaceStep::Lookup { lookup, update: None } = aux else { panic!("a get with an update") };
        refused(&op, &a, &response, &NamespaceStep::Lookup { lookup, update: update.clone() });
    }
}

#[test]
fn a_listing_that_leaves_out_a_name_is_refused() {
    let server = state(&["b", "d", "f"]);
    let a = auth(&server);
    let (response, aux) = honest(&server, &NamespaceOp::List);
    let NamespaceResponse::Listing(all) = &response else { panic!("not a listing") };
    for left_out in 0..all.len() {
        let mut fewer = all.clone();
        fewer.remove(left_out);
        refused(&NamespaceOp::List, &a, &NamespaceResponse::Listing(fewer), &aux);
    }
    // Leaves one out, with the honest proof of the namespace without it.
    let smaller = state(&["b", "d"]);
    let (fewer, aux_fewer) = honest(&smaller, &NamespaceOp::List);
    refused(&NamespaceOp::List, &a, &fewer, &aux_fewer);
    // Invents one; or no proof at all.
    let mut more = all.clone();
    more.push(entry("g", 1));
    refused(&NamespaceOp::List, &a, &NamespaceResponse::Listing(more), &aux);
    refused(&NamespaceOp::List, &a, &response, &NamespaceStep::Listing(None));
    // Claims the namespace is empty.
    let empty = NamespaceTree::default();
    let (nothing, aux_nothing) = honest(&empty, &NamespaceOp::List);
    refused(&NamespaceOp::List, &a, &nothing, &aux_nothing);
}

#[test]
fn a_proof_of_the_wrong_kind_is_refused() {
    let server = state(&["b", "d", "f"]);
    let a = auth(&server);
    let ops = [
        NamespaceOp::Get("d".into()),
        NamespaceOp::Get("c".into()),
        NamespaceOp::Put(entry("c", 1)),
        NamespaceOp::Put(entry("d", 1)),
        NamespaceOp::Delete("d".into()),
        NamespaceOp::List,
    ];
    let answers: Vec<_> = ops.iter().map(|op| honest(&server, op)).collect();
    let (_, list_aux) = &answers[5];
    let (_, get_aux) = &answers[0];
    for (op, (response, aux)) in ops.iter().zip(&answers) {
        // The listing's proof for an operation on a name, a lookup for a listing.
        let wrong = if matches!(op, NamespaceOp::List) { get_aux } else { list_aux };
        refused(op, &a, response, wrong);
        // A response of another kind with the right proof.
        for other in [
            NamespaceResponse::Done,
            NamespaceResponse::Value(None),
            NamespaceResponse::Value(Some(server.entry(1).unwrap().clone())),
            NamespaceResponse::Listing(server.entries().map(|e| e.unwrap().clone()).collect()),
        ] {
            let same_kind = std::mem::discriminant(&other) == std::mem::discriminant(response);
            if !same_kind {
                refused(op, &a, &other, aux);
            }
        }
    }
}

// ---- compatibility: Table 1 of paper 003 ----

/// The seven operations of Table 1 over two distinct names x and y, in the table's order.
fn table_ops(x: &str, y: &str) -> [NamespaceOp; 7] {
    [
        NamespaceOp::Put(entry(x, 1)),
        NamespaceOp::Put(entry(y, 2)),
        NamespaceOp::Get(x.into()),
        NamespaceOp::Get(y.into()),
        NamespaceOp::Delete(x.into()),
        NamespaceOp::Delete(y.into()),
        NamespaceOp::List,
    ]
}

/// Table 1: row = the pending operation u, column = the later operation o.
const TABLE_1: [[bool; 7]; 7] = {
    const T: bool = true;
    const F: bool = false;
    [
        // put(x) put(y) get(x) get(y) del(x) del(y) list
        [T, T, F, T, T, T, F], // put(x)
        [T, T, T, F, T, T, F], // put(y)
        [T, T, T, T, T, T, T], // get(x)
        [T, T, T, T, T, T, T], // get(y)
        [T, T, F, T, T, T, F], // del(x)
        [T, T, T, F, T, T, F], // del(y)
        [T, T, T, T, T, T, T], // list
    ]
};

#[test]
fn compatible_is_table_1() {
    for (x, y) in [("x", "y"), ("y", "x"), ("a", "ab")] {
        let ops = table_ops(x, y);
        for (i, u) in ops.iter().enumerate() {
            for (j, o) in ops.iter().enumerate() {
                assert_eq!(NamespaceOps.compatible(std::slice::from_ref(u), o), TABLE_1[i][j], "u = {u:?}, o = {o:?}");
            }
        }
    }
}

#[test]
fn compatible_with_several_pending_needs_each() {
    let [put_x, put_y, get_x, get_y, del_x, _, list] = table_ops("x", "y");
    for o in table_ops("x", "y") {
        assert!(NamespaceOps.compatible(&[], &o));
        // Reads pending are compatible with everything.
        assert!(NamespaceOps.compatible(&[get_x.clone(), get_y.clone(), list.clone()], &o));
    }
    assert!(NamespaceOps.compatible(&[put_y.clone(), get_x.clone()], &get_x));
    assert!(!NamespaceOps.compatible(&[put_y.clone(), put_x.clone()], &get_x));
    assert!(!NamespaceOps.compatible(&[get_y.clone(), del_x.clone()], &get_x));
    assert!(!NamespaceOps.compatible(&[put_y.clone(), get_x.clone()], &list));
    assert!(NamespaceOps.compatible(&[put_x.clone(), put_y.clone(), del_x], &put_y));
    // Puts of the same name with different entries are one name.
    assert!(!NamespaceOps.compatible(&[NamespaceOp::Put(entry("x", 99))], &get_x));
}

/// What a response says about the dictionary (responses carry no list positions).
fn value(response: &NamespaceResponse) -> NamespaceResponse {
    response.clone()
}

/// The table's meaning: a compatible pending operation does not change the later one's
/// answer (as a dictionary: the value read); an incompatible one can.
#[test]
fn compatible_pairs_commute_in_the_dictionary() {
    let ops = table_ops("x", "y");
    let states = [state(&[]), state(&["x"]), state(&["y"]), state(&["x", "y"]), state(&["a", "x", "y", "z"])];
    let mut changed = [[false; 7]; 7];
    for s in &states {
        for (i, u) in ops.iter().enumerate() {
            let mut after = s.clone();
            NamespaceOps::refresh(&mut after, u).unwrap();
            for (j, o) in ops.iter().enumerate() {
                let before = value(&query1(s, o).unwrap().0);
                let later = value(&query1(&after, o).unwrap().0);
                if before != later {
                    changed[i][j] = true;
                    assert!(!NamespaceOps.compatible(std::slice::from_ref(u), o), "u = {u:?} changes o = {o:?}");
                }
            }
        }
    }
    for (i, row) in TABLE_1.iter().enumerate() {
        for (j, &cell) in row.iter().enumerate() {
            assert_eq!(changed[i][j], !cell, "cell ({i}, {j})");
        }
    }
}

#[test]
fn a_name_that_cannot_be_a_name_is_refused_on_both_sides() {
    let server = state(&["a", "c"]);
    let ok = NamespaceOp::Get("a".into());
    let (response, aux) = honest(&server, &ok);
    for bad in ["", "x\ny", &"n".repeat(super::super::MAX_NAME_LEN + 1)] {
        let mut put = entry("a", 3);
        put.name = bad.to_string();
        for op in [NamespaceOp::Get(bad.into()), NamespaceOp::Delete(bad.into()), NamespaceOp::Put(put)] {
            assert!(matches!(query1(&server, &op), Err(TreeError::Name(_))), "{op:?}");
            let r = authexec1(&op, &auth(&server), &response, &aux);
            assert!(matches!(r, Err(NamespaceError::Name(_))), "{op:?}: {r:?}");
        }
    }
}

#[path = "sequence_tests.rs"]
mod sequences;
