//! Target `aip_messages`: AIP's wire format (paper 003, Alg. 1–3, Sec. 3.7) and, for what
//! decodes, the client and the server behind it, over ADICT and over the namespace.

use crate::adict::Tree;
use crate::aip::{
    Adict, Client, DictAux, DictOp, DictResponse, Functionality, HistoryPage, Keyring, Mode, Reply, Server, ToClient,
    ToServer, UpdateAuth, Wire,
};
use crate::namespace::{EntryRecord, NamespaceAux, NamespaceOp, NamespaceOps, NamespaceResponse, NamespaceTree};
use crate::pdp::FileId;
use std::fmt::Debug;

/// A group of three clients in a fixed state: client 0's and client 1's first updates are
/// authenticated, client 0's second is committed and awaits its UPDATE-AUTH, and client 1's
/// query is invoked, its REPLY (`reply`) not yet handled. Client 2 is idle.
pub struct Group<F: Functionality> {
    pub server: Server<F>,
    pub clients: Vec<Client<F>>,
    pub reply: Reply<F>,
}

impl<F: Functionality> Debug for Group<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (applied, invoked) = (self.server.applied(), self.server.invoked());
        f.debug_struct("Group").field("applied", &applied).field("invoked", &invoked).finish_non_exhaustive()
    }
}

/// Builds [`Group`] from its four operations: two updates, an update, a query.
fn group<F: Functionality + Clone>(f: F, genesis: F::Op, state: F::State, ops: [F::Op; 4]) -> Group<F> {
    let keys = Keyring::hmac([42; 32]);
    let mut server = Server::genesis(&keys, 0, genesis, state).expect("an HMAC keyring signs for anyone");
    let mut clients: Vec<_> = (0..3).map(|i| Client::new(i, keys.clone(), f.clone())).collect();
    let [first, second, pending, query] = ops;
    for (i, op, authenticated) in [(0, first, true), (1, second, true), (0, pending, false)] {
        let invoke = clients[i].invoke(op).expect("idle");
        let reply = server.on_invoke(i as u32, invoke).expect("an honest INVOKE");
        let (_, commit) = clients[i].on_reply(reply).expect("an honest REPLY");
        server.on_commit(i as u32, commit).expect("an honest COMMIT");
        while let Some((j, m)) = server.update_auth().expect("an honest state").filter(|_| authenticated) {
            for answer in clients[j as usize].on_update_auth(m).expect("an honest UPDATE-AUTH") {
                server.on_commit_auth(j, answer).expect("an honest COMMIT-AUTH");
            }
        }
    }
    let invoke = clients[1].invoke(query).expect("idle");
    let reply = server.on_invoke(1, invoke).expect("an honest INVOKE");
    Group { server, clients, reply }
}

fn put(key: &[u8], value: &[u8]) -> DictOp {
    DictOp::Put { key: key.to_vec(), value: value.to_vec() }
}

/// [`Group`] over ADICT: puts of `x` and `y` authenticated, then client 0's `pending`
/// operation and client 1's `query`.
fn adict_group_ending(pending: DictOp, query: DictOp) -> Group<Adict> {
    let ops = [put(b"x", b"1"), put(b"y", b"2"), pending, query];
    group(Adict { mode: Mode::Compatible }, DictOp::List, Tree::new(), ops)
}

pub fn adict_group() -> Group<Adict> {
    adict_group_ending(put(b"z", b"3"), DictOp::Get { key: b"x".to_vec() })
}

/// [`adict_group`] with client 1 asking for the first page of one key instead: its REPLY
/// carries the dictionary pruned to the page's range. Client 0's last operation is a get
/// here, since a page aborts beside a pending put (Table 1) and would leave its proof unread.
pub fn adict_page_group() -> Group<Adict> {
    adict_group_ending(DictOp::Get { key: b"x".to_vec() }, DictOp::ListPage { after: None, limit: 1 })
}

fn reference_entry(name: &str) -> EntryRecord {
    EntryRecord::new(name.into(), FileId([4; 16]))
}

pub fn namespace_group() -> Group<NamespaceOps> {
    let put = |name| NamespaceOp::Put(reference_entry(name));
    let ops = [put("docs/a"), put("docs/b"), put("docs/c"), NamespaceOp::Get("docs/a".into())];
    group(NamespaceOps, NamespaceOp::List, NamespaceTree::default(), ops)
}

/// The committed seeds: a valid message of each kind, each accepted by [`adict_group`] (or
/// [`namespace_group`]) where [`aip_messages`] delivers it.
pub fn aip_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut g = adict_group();
    let history = g.server.history(2, 1).expect("a member").to_wire();
    let (_, update_auth) = g.server.update_auth().expect("an honest state").expect("client 0's update");
    let (_, commit) = g.clients[1].on_reply(g.reply.clone()).expect("an honest REPLY");
    let answer = g.clients[0].on_update_auth(update_auth.clone()).expect("an honest UPDATE-AUTH").remove(0);
    let invoke = g.clients[2].invoke(DictOp::Get { key: b"y".to_vec() }).expect("idle");
    let take_over = g.server.take_over(0, 2, g.clients[2].cleared()).expect("a member");
    let n = namespace_group();
    let (_, ns_update_auth) = n.server.update_auth().expect("an honest state").expect("client 0's update");
    vec![
        ("seed-reply", ToClient::Reply(Box::new(g.reply.clone())).to_wire()),
        ("seed-reply-bare", g.reply.to_wire()),
        ("seed-update-auth", ToClient::UpdateAuth(Box::new(update_auth)).to_wire()),
        ("seed-takeover", ToClient::TakeOver(Box::new(take_over)).to_wire()),
        ("seed-invoke", ToServer::<Adict>::Invoke(invoke).to_wire()),
        ("seed-commit", ToServer::<Adict>::Commit(commit).to_wire()),
        ("seed-commit-auth", ToServer::<Adict>::CommitAuth(answer).to_wire()),
        ("seed-page-reply", ToClient::Reply(Box::new(adict_page_group().reply)).to_wire()),
        ("seed-namespace-reply", ToClient::Reply(Box::new(n.reply)).to_wire()),
        ("seed-namespace-update-auth", ToClient::UpdateAuth(Box::new(ns_update_auth)).to_wire()),
        ("seed-history", history),
    ]
}

/// `T` from `data`, if it decodes; then it must have been `T`'s one encoding.
fn decoded<T: Wire + Debug>(data: &[u8]) -> Option<T> {
    let value = T::from_wire(data).ok()?;
    assert_eq!(value.to_wire(), data, "a message has one encoding: {value:?}");
    Some(value)
}

/// A message to a client, to the client of [`Group`] it fits; what it answers goes on to the
/// server.
fn to_client<F: Functionality>(mut g: Group<F>, m: ToClient<F>) {
    match m {
        ToClient::Reply(reply) => {
            if let Ok((_, commit)) = g.clients[1].on_reply(*reply) {
                let _ = g.server.on_commit(1, commit);
            }
        }
        ToClient::UpdateAuth(m) => {
            for answer in g.clients[0].on_update_auth(*m).unwrap_or_default() {
                let _ = g.server.on_commit_auth(0, answer);
            }
        }
        ToClient::TakeOver(m) => {
            for commit in g.clients[2].take_over(*m).unwrap_or_default() {
                let _ = g.server.on_commit(2, commit);
            }
        }
    }
}

/// A message to the server, from the member who signed it (an INVOKE: the idle client 2).
fn to_server<F: Functionality>(mut g: Group<F>, m: ToServer<F>) {
    let from = match &m {
        ToServer::Invoke(_) => 2,
        ToServer::Commit(c) => c.phi.by,
        ToServer::CommitAuth(a) => a.signed.psi.by,
    };
    let _ = g.server.deliver(from, m);
}

/// Every decoder of `F`'s messages on `data`; each message that decodes goes to the first of
/// `groups`, and a REPLY to each of them, so that it meets every query it may answer.
fn offer<F: Functionality + Clone + Debug>(data: &[u8], groups: &[fn() -> Group<F>]) {
    let replied = |reply: Box<Reply<F>>| {
        for group in groups {
            to_client(group(), ToClient::Reply(reply.clone()));
        }
    };
    match decoded::<ToClient<F>>(data) {
        Some(ToClient::Reply(reply)) => replied(reply),
        Some(m) => to_client(groups[0](), m),
        None => {}
    }
    if let Some(m) = decoded::<ToServer<F>>(data) {
        to_server(groups[0](), m);
    }
    if let Some(m) = decoded::<Reply<F>>(data) {
        replied(Box::new(m));
    }
    if let Some(m) = decoded::<UpdateAuth<F>>(data) {
        to_client(groups[0](), ToClient::UpdateAuth(Box::new(m)));
    }
}

/// Target `aip_messages`: every AIP decoder, over ADICT and the namespace; a message that
/// decodes goes to a real client or server in a fixed state, so the verifiers run too.
pub fn aip_messages(data: &[u8]) {
    offer(data, &[adict_group, adict_page_group]);
    offer(data, &[namespace_group]);
    if let Some(page) = decoded::<HistoryPage<DictOp>>(data) {
        let _ = adict_group().clients[2].on_history(page);
    }
    let _ = decoded::<DictOp>(data);
    let _ = decoded::<DictResponse>(data);
    if let Some(aux) = decoded::<DictAux>(data) {
        let _ = Adict::authexec(
            &[DictOp::Get { key: b"x".to_vec() }],
            &Tree::new().root(),
            &DictResponse::Value(None),
            &aux,
        );
        let page = DictOp::ListPage { after: None, limit: 2 };
        let nothing = DictResponse::Page { keys: Vec::new(), more: false };
        let _ = Adict::authexec(&[page], &Tree::new().root(), &nothing, &aux);
    }
    let _ = decoded::<NamespaceOp>(data);
    let _ = decoded::<NamespaceResponse>(data);
    if let Some(aux) = decoded::<NamespaceAux>(data) {
        let empty = NamespaceOps::auth_of(&NamespaceTree::default());
        let _ =
            NamespaceOps::authexec(&[NamespaceOp::Get("docs/a".into())], &empty, &NamespaceResponse::Value(None), &aux);
    }
}
