//! The value a put or a delete replaces ([`Adict::replaced`]), which VICOS deletes the object
//! of: the last change of its key pending before it, else the authenticated state's.

use super::*;

fn replaced(reply: &Reply<Adict>) -> Option<String> {
    Adict::replaced(reply).map(|v| String::from_utf8(v.to_vec()).unwrap())
}

/// Runs `op` of client `i` up to its REPLY, which it accepts; its COMMIT is left unsent.
fn pending(s: &mut Server<Adict>, c: &mut [Client<Adict>], i: usize, op: Op) -> (Option<String>, Commit<Op>) {
    let reply = reply_for(s, &mut c[i], op);
    let value = replaced(&reply);
    let (_, commit) = c[i].on_reply(reply).unwrap();
    (value, commit)
}

#[test]
fn a_change_replaces_the_last_pending_change_of_its_key_or_the_authenticated_value() {
    let (mut s, mut c) = (server(), clients(4, Mode::Compatible));
    assert_eq!(active(&mut s, &mut c[0], put("x", "1")).unwrap(), NOTHING);
    authenticate_all(&mut s, &mut c);

    // Nothing pending: the authenticated state's value, proven.
    let (one, commit_2) = pending(&mut s, &mut c, 1, put("x", "2"));
    assert_eq!(one.as_deref(), Some("1"));
    // Puts of x at once (compatible: blind writes): each replaces the one pending before it,
    // so that every value but the last is deleted once.
    let (two, commit_3) = pending(&mut s, &mut c, 2, put("x", "3"));
    assert_eq!(two.as_deref(), Some("2"));
    let (none, commit_y) = pending(&mut s, &mut c, 3, put("y", "1"));
    assert_eq!(none, None, "another key's put is no change of x, and y was absent");
    let (three, commit_del) = pending(&mut s, &mut c, 0, DictOp::Delete { key: "x".into() });
    assert_eq!(three.as_deref(), Some("3"), "a delete too, past a change of another key");
    for (i, commit) in [(1, commit_2), (2, commit_3), (3, commit_y), (0, commit_del)] {
        s.on_commit(i, commit).unwrap();
    }
    // After a pending delete, nothing; a get replaces nothing.
    let (after_delete, commit) = pending(&mut s, &mut c, 1, put("x", "4"));
    assert_eq!(after_delete, None);
    s.on_commit(1, commit).unwrap();
    let reply = reply_for(&mut s, &mut c[2], get("x"));
    assert_eq!(replaced(&reply), None);
}

/// A pending change marked aborted (its COMMIT at the server) never took effect: passed over.
#[test]
fn an_aborted_change_is_passed_over() {
    let (mut s, mut c) = (server(), clients(3, Mode::Commutative));
    assert_eq!(active(&mut s, &mut c[0], put("x", "1")).unwrap(), NOTHING);
    // A put of x behind the pending put of x does not commute: it aborts.
    let reply = reply_for(&mut s, &mut c[1], put("x", "2"));
    let (outcome, commit) = c[1].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Abort);
    let (_, m) = s.update_auth().unwrap().unwrap(); // the first put authenticated
    for answer in c[0].on_update_auth(m).unwrap() {
        s.on_commit_auth(0, answer).unwrap();
    }
    s.on_commit(1, commit).unwrap(); // the aborted put marked, still in the pending list
    let reply = reply_for(&mut s, &mut c[2], put("x", "3"));
    assert!(reply.view.omega.iter().any(|p| p.aborted.is_some()), "the aborted put is still shown");
    assert_eq!(replaced(&reply).as_deref(), Some("1"));
}
