//! A member far behind (#43 item 10): a REPLY shows at most one message of `δ`; a member
//! further behind is refused (`ServerError::Behind`, never an oversize answer) and reads the
//! history in pages, each checked as `δ` is, so that a lying server is caught in a page too.

use super::*;
use crate::aip::wire::{MAX_DELTA, MAX_MESSAGE_LEN};

/// Client 0 runs `n` queries (no passive phase, so the history grows fastest); the server
/// keeps everything for members it has not heard from.
fn long_history(n: u64, config: ServerConfig) -> (Server<Adict>, Vec<Client<Adict>>) {
    let (mut s, mut c) = (server().with_config(config), clients(3, Mode::Compatible));
    for _ in 0..n {
        active(&mut s, &mut c[0], get("x")).unwrap();
    }
    assert_eq!(s.applied(), n);
    (s, c)
}

/// Small pages: a few operations each.
fn small_pages() -> ServerConfig {
    ServerConfig { delta_bytes: 200, ..ServerConfig::default() }
}

/// Reads every page into `client`; returns how many there were.
fn catch_up(s: &Server<Adict>, client: &mut Client<Adict>) -> Result<usize, Violation> {
    let mut pages = 0;
    loop {
        let page = s.history(client.id(), client.cleared() + 1).unwrap();
        assert!(page.to_wire().len() <= MAX_MESSAGE_LEN, "every page fits in a message");
        pages += 1;
        if !client.on_history(page)? {
            return Ok(pages);
        }
    }
}

#[test]
fn a_member_joining_after_two_million_operations_reads_the_history_in_pages() {
    const OPERATIONS: u64 = 2_000_000;
    let (mut s, mut c) = long_history(OPERATIONS, ServerConfig::default());
    let invoke = c[1].invoke(get("x")).unwrap();
    let t = s.invoked();
    let refused = s.on_invoke(1, invoke.clone());
    assert_eq!(refused.unwrap_err(), ServerError::Behind { client: 1, cleared: 0, applied: OPERATIONS });
    assert_eq!(s.invoked(), t, "a refused INVOKE takes no position");
    c[1].abandon();

    let pages = catch_up(&s, &mut c[1]).unwrap();
    assert!(pages as u64 >= OPERATIONS / MAX_DELTA as u64, "{pages} pages");
    assert_eq!(c[1].cleared(), OPERATIONS);
    assert_eq!(active(&mut s, &mut c[1], put("x", "1")).unwrap(), NOTHING);
    authenticate_all(&mut s, &mut c);
    assert_eq!(active(&mut s, &mut c[1], get("x")).unwrap(), value("1"));
    // The member saves and restores its state as ever: the chain it keeps is short.
    let saved = c[1].save();
    assert!(saved.len() < 64 << 10, "{} bytes saved", saved.len());
}

#[test]
fn a_reply_never_shows_more_than_a_message_of_history() {
    let (mut s, mut c) = long_history(40, small_pages());
    let invoke = c[1].invoke(get("x")).unwrap();
    assert!(matches!(s.on_invoke(1, invoke), Err(ServerError::Behind { client: 1, cleared: 0, applied: 40 })));
    c[1].abandon();
    let pages = catch_up(&s, &mut c[1]).unwrap();
    assert!(pages > 4, "{pages} pages of a few operations");
    assert_eq!(active(&mut s, &mut c[1], get("x")).unwrap(), Outcome::Done(DictResponse::Value(None)));
    // A member up to date gets its REPLYs as ever: small pages refuse no ordinary INVOKE.
    for _ in 0..3 {
        assert!(active(&mut s, &mut c[0], get("x")).is_ok());
    }
}

/// A page for client 1 of `long_history(40, small_pages())`, from its first operation.
fn first_page() -> (Server<Adict>, Vec<Client<Adict>>, HistoryPage<DictOp>) {
    let (s, c) = long_history(40, small_pages());
    let page = s.history(1, 1).unwrap();
    assert!(page.delta.len() > 1 && page.more);
    (s, c, page)
}

#[test]
fn a_changed_operation_in_a_page_is_caught_and_leaves_nothing() {
    let (s, mut c, mut page) = first_page();
    let before = c[1].save();
    page.delta[1].op = get("y");
    assert_eq!(c[1].on_history(page).unwrap_err(), Violation::Signature { what: "COMMIT", client: 0, at: 2 });
    assert_eq!(c[1].save(), before, "nothing of the refused page is kept");
    assert_eq!(c[1].cleared(), 0);
    catch_up(&s, &mut c[1]).unwrap();
    assert_eq!(c[1].cleared(), 40, "the honest pages are taken after the lie");
}

#[test]
fn a_page_that_skips_or_repeats_operations_is_caught() {
    let (s, mut c, page) = first_page();
    let mut skipped = page.clone();
    skipped.delta.remove(0);
    assert!(matches!(c[1].on_history(skipped).unwrap_err(), Violation::Signature { what: "COMMIT", .. }));
    let elsewhere = HistoryPage { first: 2, ..page.clone() };
    assert!(matches!(c[1].on_history(elsewhere).unwrap_err(), Violation::Malformed(_)), "not after c");
    c[1].on_history(page.clone()).unwrap();
    assert!(matches!(c[1].on_history(page).unwrap_err(), Violation::Malformed(_)), "the same page again");
    let next = s.history(1, c[1].cleared() + 1).unwrap();
    assert!(c[1].on_history(next).is_ok());
}

#[test]
fn a_page_of_a_forked_history_is_caught_by_the_chain_the_member_holds() {
    // In the real history, client 0 ran operation 40, which it has not cleared yet; a server
    // that shows it a page of another history, where client 2 ran operation 40, is caught.
    let (_, mut c, _) = first_page();
    let (mut other, mut d) = long_history(39, small_pages());
    catch_up(&other, &mut d[2]).unwrap();
    active(&mut other, &mut d[2], get("x")).unwrap();
    active(&mut other, &mut d[0], get("x")).unwrap();
    assert_eq!(c[0].cleared(), 39);
    let forked = other.history(0, 40).unwrap();
    assert_eq!(c[0].on_history(forked).unwrap_err(), Violation::Chain(40));
}

#[test]
fn a_page_while_an_operation_is_in_progress_or_over_the_bound_is_refused() {
    let (mut s, mut c, page) = first_page();
    catch_up(&s, &mut c[2]).unwrap();
    active(&mut s, &mut c[0], get("x")).unwrap();
    c[2].invoke(get("x")).unwrap(); // client 2 now waits for its REPLY
    let next = s.history(2, c[2].cleared() + 1).unwrap();
    assert!(matches!(c[2].on_history(next).unwrap_err(), Violation::Malformed(_)));
    let mut huge = page;
    huge.delta = vec![huge.delta[0].clone(); MAX_DELTA + 1];
    assert!(matches!(c[1].on_history(huge).unwrap_err(), Violation::Malformed(_)));
    let mut over = Vec::new();
    HistoryPage { first: 1, delta: vec![s.history(1, 1).unwrap().delta[0].clone(); MAX_DELTA + 1], more: false }
        .encode(&mut over);
    assert!(matches!(HistoryPage::<DictOp>::from_wire(&over), Err(WireError::TooMany { .. })));
}

#[test]
fn the_server_pages_from_what_it_keeps_and_refuses_what_it_forgot() {
    let members = ServerConfig { members: Some([0, 1].into()), ..small_pages() };
    let (mut s, mut c) = long_history(20, members);
    // Client 1 has not spoken: everything is kept for it.
    assert_eq!(s.history(1, 1).unwrap().first, 1);
    assert!(matches!(s.history(1, 0), Err(ServerError::ClearedTooFar { .. })));
    let past = s.history(1, 21).unwrap();
    assert!(past.delta.is_empty() && !past.more, "nothing after the last applied operation");
    catch_up(&s, &mut c[1]).unwrap();
    run(&mut s, &mut c, 1, put("x", "1"));
    active(&mut s, &mut c[1], get("x")).unwrap();
    active(&mut s, &mut c[0], get("x")).unwrap();
    assert_eq!(s.history(1, 2), Err(ServerError::Forgotten(2)), "every member moved past it");
}
