//! VICOS's requests (paper 003, Sec. 4), passed through for now: the place where a lying
//! sequencer or object store (a forked history, a replayed REPLY, an altered object) goes,
//! through the honest provider's steps as the other lies do.

use super::{Misbehave, Misbehaving, FORK_OPERATIONS};
use vouch_server::ProviderError;

/// The second history of a forked group (a test double's: the name could be a real group's).
fn fork_of(group: &str) -> String {
    format!("{group}--fork")
}
use vouch_proto::vicos::{
    AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipHistoryPage, AipInvoke, AipReply, AipWork,
    AipWorkRequest,
};

impl Misbehaving {
    /// The group a member's AIP message goes to: under [`Misbehave::ForkAip`], an odd
    /// member's messages go to the fork until it invokes its operation number
    /// `FORK_OPERATIONS + 1` (counted at INVOKE, so an operation runs wholly on one history).
    fn routed(&self, group: &str, from: u32) -> String {
        if self.lie != Misbehave::ForkAip || from.is_multiple_of(2) {
            return group.to_string();
        }
        let counts = self.fork_invokes.lock().expect("fork counts");
        match counts.get(&(group.to_string(), from)).copied().unwrap_or(0) <= FORK_OPERATIONS {
            true => fork_of(group),
            false => group.to_string(),
        }
    }
}
pub(crate) async fn aip_create(liar: &Misbehaving, req: &AipCreate, caller: &str) -> Result<AipAck, ProviderError> {
    let ack = liar.honest.groups().create(req, caller).await?;
    if liar.lie == Misbehave::ForkAip {
        liar.honest.groups().create(&AipCreate { group: fork_of(&req.group), ..req.clone() }, caller).await?;
    }
    Ok(ack)
}

/// Under [`Misbehave::ForkAip`], a member is admitted to the fork too: its messages may
/// go to either history.
pub(crate) async fn aip_admit(liar: &Misbehaving, req: &AipAdmit, caller: &str) -> Result<AipAck, ProviderError> {
    let ack = liar.honest.groups().admit(req, caller).await?;
    if liar.lie == Misbehave::ForkAip {
        liar.honest.groups().admit(&AipAdmit { group: fork_of(&req.group), ..req.clone() }, caller).await?;
    }
    Ok(ack)
}

pub(crate) async fn aip_invoke(liar: &Misbehaving, req: &AipInvoke, caller: &str) -> Result<AipReply, ProviderError> {
    if liar.lie == Misbehave::ForkAip && !req.from.is_multiple_of(2) {
        // Counted at INVOKE: a member's operation runs wholly on the history it began on.
        let mut counts = liar.fork_invokes.lock().expect("fork counts");
        let count = counts.entry((req.group.clone(), req.from)).or_default();
        *count += 1;
    }
    liar.honest.groups().invoke(&AipInvoke { group: liar.routed(&req.group, req.from), ..req.clone() }, caller).await
}

pub(crate) async fn aip_commit(liar: &Misbehaving, req: &AipCommit, caller: &str) -> Result<AipWork, ProviderError> {
    liar.honest.groups().commit(&AipCommit { group: liar.routed(&req.group, req.from), ..req.clone() }, caller).await
}

pub(crate) async fn aip_commit_auth(
    liar: &Misbehaving,
    req: &AipCommitAuth,
    caller: &str,
) -> Result<AipWork, ProviderError> {
    let group = liar.routed(&req.group, req.from);
    liar.honest.groups().commit_auth(&AipCommitAuth { group, ..req.clone() }, caller).await
}

pub(crate) async fn aip_work(liar: &Misbehaving, req: &AipWorkRequest, caller: &str) -> Result<AipWork, ProviderError> {
    liar.honest.groups().work(&AipWorkRequest { group: liar.routed(&req.group, req.from), ..req.clone() }, caller).await
}

pub(crate) async fn aip_history(
    liar: &Misbehaving,
    req: &AipHistory,
    caller: &str,
) -> Result<AipHistoryPage, ProviderError> {
    liar.honest.groups().history(&AipHistory { group: liar.routed(&req.group, req.from), ..req.clone() }, caller).await
}
