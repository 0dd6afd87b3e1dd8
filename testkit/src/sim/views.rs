//! What each member was shown of the group's order: the position of every signed INVOKE in
//! the REPLYs delivered to it intact. Fork-linearizability gives an operation one place in a
//! member's view, so a signed INVOKE shown at a second position is a replay, which the member
//! must refuse (#43 item 9) rather than finish its operation over.

use bytes::Bytes;
use std::collections::HashMap;
use vouch_core::aip::{Adict, Reply, Wire};
use vouch_proto::vicos::AipReply;

#[derive(Default)]
pub(super) struct Views {
    by_token: HashMap<String, View>,
}

#[derive(Default)]
struct View {
    /// Each signed INVOKE shown, by its signature, and its position.
    places: HashMap<Vec<u8>, u64>,
    /// The first INVOKE shown at a second position, described.
    twice: Option<String>,
}

impl Views {
    /// The REPLY `body` reached the member with `token` as the provider sent it.
    pub(super) fn shown(&mut self, token: &str, body: &Bytes) {
        let Ok(answer) = vouch_proto::decode::<AipReply>(body) else { return };
        let Ok(reply) = Reply::<Adict>::from_wire(&answer.reply) else { return };
        let view = self.by_token.entry(token.to_string()).or_default();
        for (i, pending) in reply.view.omega.iter().enumerate() {
            let at = reply.view.b + 1 + i as u64;
            let invoked = &pending.invoked;
            match view.places.insert(invoked.tau.clone(), at) {
                Some(before) if before != at && view.twice.is_none() => {
                    view.twice = Some(format!(
                        "member {}'s INVOKE (counter {}) at positions {before} and {at}",
                        invoked.client, invoked.counter
                    ));
                }
                _ => {}
            }
        }
    }

    /// The member with `token` finished an operation: an INVOKE it was shown twice, if any.
    pub(super) fn accepted(&mut self, token: &str) -> Option<String> {
        self.by_token.get_mut(token).and_then(|view| view.twice.take())
    }

    /// The member with `token` stopped an operation (it may have refused what it was shown).
    pub(super) fn refused(&mut self, token: &str) {
        if let Some(view) = self.by_token.get_mut(token) {
            view.twice = None;
        }
    }
}
