//! The AIP sequencer: one `aip::Server<Adict>` per group (paper 003, Alg. 3), each message
//! handled alone under the group's lock, as the paper's server actor handles its mailbox
//! (Sec. 5.1: "execute each protocol step atomically"), and journaled before it is answered
//! ([`super::journal`]).
//!
//! The passive phase never waits on a member that went away: each COMMIT and COMMIT-AUTH is
//! answered with the work its sender may do now, a batch of the committed updates up to its
//! own last COMMIT (Sec. 3.7 "Batching and delegating operation authentication",
//! `aip::Server::delegate_auth`); whichever member answers first authenticates them, the
//! others are refused as no longer needed. `aip-work` asks for the same at any time. The
//! work goes to one member at a time: while a member holds it (for [`LEASE`] after it was
//! last handed work), the others are handed none, so that many members do not all
//! authenticate the same updates and race to answer them.
//!
//! No answer leaves before the journal holds everything it was computed on, but one: a
//! COMMIT's. It is answered at once and made durable by the next message's write (or, when
//! none comes, after [`crate::Limits::vicos_flush_after`]), so that an operation costs one
//! durable write, its INVOKE's, not two. The member keeps it until a later answer proves it
//! durable, and carries it in its next INVOKE ([`AipInvoke::commits`]), so a crash that loses
//! it loses nothing: the INVOKE takes it again first. The entries of concurrent messages are
//! made durable together ([`super::group_commit`]).

use super::group_commit::{durable, Slot, Ticket};
use super::journal::{self, Entry, Loaded};
use super::{check_group, refused, AipMessage, GroupError};
use crate::provider::ProviderError;
use serde_bytes::ByteBuf;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use vouch_core::adict::Tree;
use vouch_core::aip::{
    self, Adict, Admission, ClientId, Commit, CommitAuth, Committed, Functionality, Invoke, Signed, Wire,
};
use vouch_proto::vicos::{
    AipAck, AipAdmit, AipCommit, AipCommitAuth, AipCreate, AipHistory, AipHistoryPage, AipInvoke, AipReply, AipWork,
    AipWorkRequest, MAX_CARRIED_COMMITS, MAX_COMMIT_AUTHS,
};
use vouch_store::Repository;

/// The groups of one provider. A group's server is loaded (its journal replayed) at its first
/// message, and leaves memory again once unused for [`Limits::group_idle`]; only its small
/// slot stays, so that a message in flight and the next one never see two servers.
///
/// [`Limits::group_idle`]: crate::Limits::group_idle
#[derive(Debug)]
pub(crate) struct Sequencer {
    groups: Mutex<HashMap<String, Arc<Slot>>>,
    /// How long a group may go unused, and when the groups were last looked over.
    eviction: Mutex<(std::time::Duration, Instant)>,
    /// The most bytes of history one answer shows ([`crate::Limits::aip_page_bytes`]).
    page_bytes: AtomicUsize,
    /// How long an answered COMMIT waits for its write ([`crate::Limits::vicos_flush_after`]).
    flush_after: Mutex<std::time::Duration>,
}

impl Default for Sequencer {
    fn default() -> Self {
        let eviction = (crate::limits::DEFAULT_GROUP_IDLE, Instant::now());
        let page_bytes = AtomicUsize::new(crate::limits::DEFAULT_AIP_PAGE_BYTES);
        let flush_after = Mutex::new(crate::limits::DEFAULT_VICOS_FLUSH_AFTER);
        Sequencer { groups: Mutex::default(), eviction: Mutex::new(eviction), page_bytes, flush_after }
    }
}

/// For `map_err`: `what` of a request did not decode.
fn malformed(what: AipMessage) -> impl FnOnce(aip::WireError) -> GroupError {
    move |source| GroupError::Malformed { what, source }
}

fn unknown(group: &str) -> GroupError {
    GroupError::NoGroup { group: group.to_string() }
}

/// A message applied in memory ([`Sequencer::step`]): its answer, its group's slot, and the
/// ticket of its entries.
type Stepped<A> = (Result<A, ProviderError>, Arc<Slot>, Ticket);

/// How long the passive-phase work stays with the member it was handed to: long enough for
/// a loaded member to answer, short enough that one that went away holds up little.
pub(super) const LEASE: std::time::Duration = std::time::Duration::from_millis(500);

/// How long an INVOKE waits while the pending list is full before it is refused (Sec. 5.2:
/// the paper's server buffers INVOKEs until enough operations completed; bounded here, so
/// that a member is told to come back rather than hang when no one completes any).
pub(super) const INVOKE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether `caller` (a provider client) may speak as member `from`: each member speaks only
/// through the provider client it was admitted through ([`Sequencer::admit`], journaled as
/// [`Entry::Bind`]), so that another client of the provider cannot send messages in its
/// name, which its group would then blame on the provider. `Ok(true)`: not bound yet, in a
/// group journaled before admission existed, where a member binds at its first message.
fn unbound(loaded: &Loaded, group: &str, from: ClientId, caller: &str) -> Result<bool, GroupError> {
    match loaded.members.get(&from) {
        None if loaded.admission.is_none() => Ok(true),
        None => Err(GroupError::NotAdmitted { group: group.to_string(), member: from }),
        Some(bound) if bound == caller => Ok(false),
        Some(_) => Err(GroupError::OtherClient { group: group.to_string(), member: from }),
    }
}

/// The passive-phase work `from` may do now (Sec. 3.7 delegation), encoded: none while
/// another member holds the work ([`LEASE`]).
fn work(loaded: &mut Loaded, group: &str, from: ClientId) -> Result<AipWork, ProviderError> {
    let now = std::time::Instant::now();
    if let Some((holder, until)) = loaded.lease {
        if holder != from && now < until {
            return Ok(AipWork::default());
        }
    }
    let batch = loaded.server.delegate_auth(from).map_err(|e| refused(group, e))?;
    loaded.lease = batch.as_ref().map(|_| (from, now + LEASE));
    Ok(AipWork { update_auth: batch.map(|m| ByteBuf::from(m.to_wire())) })
}

impl Sequencer {
    /// The group's slot; a group neither loaded nor durable is unknown unless `creating`
    /// (so that messages for groups that do not exist leave nothing behind).
    fn slot(&self, repo: &Repository, group: &str, creating: bool) -> Result<Arc<Slot>, ProviderError> {
        check_group(group)?;
        let now = Instant::now();
        // Declared before the groups' lock, so dropped after it: a large group's history takes
        // a while to free, and no other group's message waits for that.
        let mut unloaded = Vec::new();
        let mut groups = self.groups.lock().expect("VICOS groups");
        unloaded.extend(self.unload_idle(&groups, now));
        let slot = match groups.get(group) {
            Some(slot) => slot.clone(),
            None if !creating && !journal::exists(repo, group)? => return Err(unknown(group).into()),
            None => groups.entry(group.to_string()).or_default().clone(),
        };
        drop((groups, unloaded));
        slot.touch(now);
        Ok(slot)
    }

    /// Takes out of memory the servers of the groups unused for the idle time (looking them
    /// over a few times per idle time at most: each look visits every group).
    fn unload_idle(&self, groups: &HashMap<String, Arc<Slot>>, now: Instant) -> Vec<journal::Loaded> {
        let idle = {
            let mut eviction = self.eviction.lock().expect("VICOS eviction");
            let (idle, last) = *eviction;
            if now.saturating_duration_since(last) < idle / 4 {
                return Vec::new();
            }
            eviction.1 = now;
            idle
        };
        let mut unloaded = Vec::new();
        for (name, slot) in groups {
            if let Some(server) = slot.unload_if_idle(now, idle) {
                tracing::debug!("VICOS group {name}: unused for {idle:?}, its server leaves memory");
                unloaded.push(server);
            }
        }
        unloaded
    }

    /// Sets how long a group may go unused before its server leaves memory.
    pub(crate) fn set_idle(&self, idle: std::time::Duration) {
        self.eviction.lock().expect("VICOS eviction").0 = idle;
    }

    /// How many groups hold their server in memory now.
    pub(crate) fn loaded(&self) -> usize {
        let groups = self.groups.lock().expect("VICOS groups");
        groups.values().filter(|slot| slot.is_loaded()).count()
    }

    /// Sets the most bytes of history one answer shows ([`aip::ServerConfig::delta_bytes`]),
    /// for the groups loaded from now on and those in memory.
    pub(crate) fn set_page_bytes(&self, bytes: usize) {
        self.page_bytes.store(bytes, Ordering::Relaxed);
        let groups = self.groups.lock().expect("VICOS groups");
        for slot in groups.values() {
            if let Some(loaded) = slot.lock().loaded.as_mut() {
                configure(&mut loaded.server, bytes);
            }
        }
    }

    pub(crate) fn set_flush_after(&self, after: std::time::Duration) {
        *self.flush_after.lock().expect("VICOS flush") = after;
    }

    /// Makes everything the groups in memory applied durable (a clean shutdown).
    pub(crate) async fn flush(&self, repo: &Repository) {
        let slots: Vec<(String, Arc<Slot>)> =
            self.groups.lock().expect("VICOS groups").iter().map(|(g, s)| (g.clone(), s.clone())).collect();
        for (group, slot) in slots {
            let ticket = slot.lock().everything();
            if let Some(ticket) = ticket {
                if let Err(e) = durable(&in_repo(repo, &group), &group, &slot, ticket).await {
                    tracing::warn!(group, "a VICOS journal write at shutdown failed: {e}");
                }
            }
        }
    }

    /// Makes `ticket`'s entries durable after [`crate::Limits::vicos_flush_after`], unless a
    /// message's write took them first. A provider gone by then is a crash for the journal:
    /// the entries are lost, and their members carry them again.
    fn flush_soon(&self, repo: &Arc<Repository>, group: &str, slot: Arc<Slot>, ticket: Ticket) {
        let after = *self.flush_after.lock().expect("VICOS flush");
        let (repo, group) = (Arc::downgrade(repo), group.to_string());
        tokio::spawn(async move {
            if !after.is_zero() {
                tokio::time::sleep(after).await;
            }
            let Some(repo) = repo.upgrade() else { return };
            if let Err(e) = durable(&in_repo(&repo, &group), &group, &slot, ticket).await {
                tracing::warn!(group, "an answered COMMIT's journal write failed (its member carries it again): {e}");
            }
        });
    }

    /// The group's server, replayed from its journal when not in memory.
    fn held<'a>(
        &self,
        loaded: &'a mut Option<Loaded>,
        repo: &Repository,
        group: &str,
    ) -> Result<&'a mut Loaded, ProviderError> {
        if loaded.is_none() {
            let mut replayed = journal::load(repo, group)?.ok_or_else(|| unknown(group))?;
            configure(&mut replayed.server, self.page_bytes.load(Ordering::Relaxed));
            *loaded = Some(replayed);
        }
        Ok(loaded.as_mut().expect("loaded above"))
    }

    /// Whether provider client `caller` may reach the objects of group `group`: the client
    /// of one of its members (any client, in a group without admission). A group's objects
    /// are its members' own: another client could read them, or delete one the history
    /// names, which the members would blame on the provider. An unknown group is not found.
    pub(crate) fn reaches_objects(&self, repo: &Repository, group: &str, caller: &str) -> Result<(), ProviderError> {
        // Not `read`: a binding on its way to the journal grants as much as a durable one (it
        // was shown the secret), and an object request need not wait for the group's writes.
        let slot = self.slot(repo, group, false)?;
        let mut state = slot.lock();
        let l = self.held(&mut state.loaded, repo, group)?;
        match l.admission.is_none() || l.members.values().any(|c| c == caller) {
            true => Ok(()),
            false => Err(GroupError::NoMemberHere { group: group.to_string() }.into()),
        }
    }

    /// `aip-create`: the group's server from its creator's genesis (`O[0]`, `A[0]`), over an
    /// empty dictionary, with the hash of its admission secret, the creator bound to
    /// `caller`. A group that exists is a conflict.
    pub(crate) async fn create(
        &self,
        repo: &Repository,
        req: &AipCreate,
        caller: &str,
    ) -> Result<AipAck, ProviderError> {
        check_group(&req.group)?;
        let genesis: Committed<aip::DictOp> =
            Committed::from_wire(&req.genesis).map_err(malformed(AipMessage::Genesis))?;
        let auth: Signed<vouch_core::Digest> = Signed::from_wire(&req.auth).map_err(malformed(AipMessage::Auth))?;
        let admission: [u8; 32] = req
            .admission
            .as_slice()
            .try_into()
            .map_err(|_| GroupError::AdmissionHashLength { len: req.admission.len() })?;
        // The server starts from an empty dictionary: a genesis authenticator of any other
        // state would make every proof it sends fail at the members, who would blame it.
        if auth.auth != Adict::auth_of(&Tree::new()) {
            return Err(GroupError::GenesisNotEmpty.into());
        }
        let slot = self.slot(repo, &req.group, true)?;
        let ticket = {
            let mut state = slot.lock();
            if state.loaded.is_some() || journal::exists(repo, &req.group)? {
                // The same creation sent again (its answer lost, or its client killed before
                // it kept the group): its creator bound through this client, under this
                // admission secret. Done already; any other creation is refused.
                let loaded = self.held(&mut state.loaded, repo, &req.group)?;
                let again = loaded.admission == Some(admission)
                    && loaded.members.get(&genesis.client).is_some_and(|bound| bound == caller);
                if again {
                    return Ok(AipAck {});
                }
                return Err(GroupError::Exists { group: req.group.clone() }.into());
            }
            let creator = genesis.client;
            let mut loaded = Loaded::new(genesis, auth);
            configure(&mut loaded.server, self.page_bytes.load(Ordering::Relaxed));
            loaded.members.insert(creator, caller.to_string());
            loaded.admission = Some(admission);
            loaded.next = 3;
            state.loaded = Some(loaded);
            state.push(0, Entry::Create { genesis: req.genesis.clone(), auth: req.auth.clone() }.encode());
            state.push(1, Entry::Admission { hash: admission }.encode());
            state.push(2, Entry::Bind { member: creator, client: caller.to_string() }.encode())
        };
        durable(&in_repo(repo, &req.group), &req.group, &slot, ticket).await?;
        tracing::info!(group = req.group, "VICOS group created");
        Ok(AipAck {})
    }

    /// `aip-admit`: member `req.member`, showing the group's admission secret, speaks through
    /// `caller` from now on. Admitting a member again through the same client changes
    /// nothing; through another, it is refused (a member's id is bound once).
    pub(crate) async fn admit(&self, repo: &Repository, req: &AipAdmit, caller: &str) -> Result<AipAck, ProviderError> {
        let group = &req.group;
        let slot = self.slot(repo, group, false)?;
        let ticket = {
            let mut state = slot.lock();
            let loaded = self.held(&mut state.loaded, repo, group)?;
            // A group journaled before admission existed: its members bind at their first
            // message, and there is nothing to show.
            let Some(hash) = loaded.admission else { return Ok(AipAck {}) };
            if Admission::hash_of(&req.admission) != hash {
                return Err(GroupError::WrongSecret { group: group.clone() }.into());
            }
            match loaded.members.get(&req.member) {
                Some(bound) if bound == caller => None,
                Some(_) => return Err(GroupError::OtherClient { group: group.clone(), member: req.member }.into()),
                None => {
                    loaded.members.insert(req.member, caller.to_string());
                    let n = loaded.next;
                    loaded.next += 1;
                    Some(state.push(n, Entry::Bind { member: req.member, client: caller.to_string() }.encode()))
                }
            }
        };
        if let Some(ticket) = ticket {
            durable(&in_repo(repo, group), group, &slot, ticket).await?;
            tracing::info!(group, member = req.member, client = caller, "VICOS member admitted");
        }
        Ok(AipAck {})
    }

    /// One message of member `from`, sent by provider client `caller`, that may change the
    /// group's server, in memory: `apply` runs it; when accepted, its `entry` joins the
    /// journal (after the member's binding to `caller`, at its first) and `answer` reads the
    /// server. The answer is the caller's to send once the entries are durable (the ticket),
    /// or at once for a COMMIT. A refused message changes nothing (AIP's server checks before
    /// it changes anything) and adds no entry.
    fn step<R, A>(
        &self,
        repo: &Repository,
        group: &str,
        (from, caller): (ClientId, &str),
        entry: Entry,
        apply: impl FnOnce(&mut aip::Server<Adict>) -> Result<(R, Vec<Entry>), aip::ServerError<std::convert::Infallible>>,
        answer: impl FnOnce(&mut Loaded, R) -> Result<A, ProviderError>,
    ) -> Result<Stepped<A>, ProviderError> {
        let slot = self.slot(repo, group, false)?;
        let (answered, ticket) = {
            let mut state = slot.lock();
            let loaded = self.held(&mut state.loaded, repo, group)?;
            let bind = unbound(loaded, group, from, caller)?;
            let (result, more) = apply(&mut loaded.server).map_err(|e| refused(group, e))?;
            let mut entries = vec![entry];
            entries.extend(more);
            if bind {
                loaded.members.insert(from, caller.to_string());
                entries.push(Entry::Bind { member: from, client: caller.to_string() });
            }
            let first = loaded.next;
            loaded.next += entries.len() as u64;
            let answered = answer(loaded, result);
            let tickets = entries.into_iter().zip(first..).map(|(e, n)| state.push(n, e.encode()));
            (answered, tickets.last().expect("an entry"))
        };
        Ok((answered, slot, ticket))
    }

    /// The COMMITs an INVOKE carries ([`AipInvoke::commits`]), each taken unless the server
    /// refuses it (it has it, the usual case, or has moved past it); the ticket of those
    /// taken. Only from the member's own provider client, as any message of its.
    fn take_carried(
        &self,
        repo: &Repository,
        group: &str,
        (from, caller): (ClientId, &str),
        slot: &Slot,
        carried: Vec<(Commit<aip::DictOp>, &ByteBuf)>,
    ) -> Result<Option<Ticket>, ProviderError> {
        if carried.is_empty() {
            return Ok(None);
        }
        let mut state = slot.lock();
        if unbound(self.held(&mut state.loaded, repo, group)?, group, from, caller)? {
            return Ok(None); // not bound yet: it has committed nothing through this client
        }
        let mut ticket = None;
        for (commit, bytes) in carried {
            let loaded = self.held(&mut state.loaded, repo, group)?;
            match loaded.server.on_commit(from, commit) {
                Ok(()) => {
                    let n = loaded.next;
                    loaded.next += 1;
                    ticket = Some(state.push(n, Entry::Commit { from, commit: bytes.clone() }.encode()));
                }
                Err(e) => tracing::trace!(group, "a carried COMMIT is passed over: {e}"),
            }
        }
        drop(state);
        if ticket.is_some() {
            slot.progressed.notify_waiters();
        }
        Ok(ticket)
    }

    /// `aip-invoke`: the REPLY (Alg. 3). While the pending list is full (Sec. 5.2), it waits
    /// for operations to complete, up to [`INVOKE_WAIT`], then is refused with a conflict.
    /// Waiting INVOKEs let the passive phase go first: the paper's priority of COMMIT and
    /// COMMIT-AUTH over INVOKE (Sec. 5.2 "Message delivery order"), where it matters.
    ///
    /// The COMMITs it carries are taken first, before the wait: one a crash lost may be what
    /// holds the pending list full.
    pub(crate) async fn invoke(
        &self,
        repo: &Arc<Repository>,
        req: &AipInvoke,
        caller: &str,
    ) -> Result<AipReply, ProviderError> {
        let invoke: Invoke<aip::DictOp> = Invoke::from_wire(&req.invoke).map_err(malformed(AipMessage::Invoke))?;
        if req.commits.len() > MAX_CARRIED_COMMITS {
            return Err(GroupError::CarriedCount { count: req.commits.len() }.into());
        }
        let carried = req
            .commits
            .iter()
            .map(|bytes| Commit::from_wire(bytes).map(|c| (c, bytes)).map_err(malformed(AipMessage::Commit)))
            .collect::<Result<Vec<_>, _>>()?;
        let deadline = tokio::time::Instant::now() + INVOKE_WAIT;
        let slot = self.slot(repo, &req.group, false)?;
        let taken = self.take_carried(repo, &req.group, (req.from, caller), &slot, carried)?;
        let replied = self.invoke_taken(repo, req, caller, invoke, &slot, deadline).await;
        if let (Some(ticket), Err(_)) = (taken, &replied) {
            self.flush_soon(repo, &req.group, slot, ticket); // no REPLY's write took them
        }
        replied
    }

    /// [`Sequencer::invoke`] once its carried COMMITs are taken.
    async fn invoke_taken(
        &self,
        repo: &Repository,
        req: &AipInvoke,
        caller: &str,
        invoke: Invoke<aip::DictOp>,
        slot: &Slot,
        deadline: tokio::time::Instant,
    ) -> Result<AipReply, ProviderError> {
        loop {
            let progressed = slot.progressed.notified();
            tokio::pin!(progressed);
            // Registered before the look, so that progress made in between is not missed.
            progressed.as_mut().enable();
            let full = {
                let mut state = slot.lock();
                self.held(&mut state.loaded, repo, &req.group)?.server.pending_full()
            };
            if !full || tokio::time::timeout_at(deadline, progressed).await.is_err() {
                break;
            }
        }
        let entry = Entry::InvokeCounted { from: req.from, invoke: req.invoke.clone() };
        let step = |s: &mut aip::Server<Adict>| s.on_invoke_wire(req.from, invoke).map(|reply| (reply, Vec::new()));
        let (replied, slot, ticket) = self.step(repo, &req.group, (req.from, caller), entry, step, |_, r| Ok(r))?;
        durable(&in_repo(repo, &req.group), &req.group, &slot, ticket).await?;
        replied.map(|reply| AipReply { reply: ByteBuf::from(reply) })
    }

    /// `aip-commit`: `O[q]`, and `A[q]` when the sender authenticated its update at once,
    /// then the passive-phase work of its sender. A COMMIT-AUTH refused there is passed over
    /// (the COMMIT stands; the passive phase hands the update out as ever): an honest member's
    /// is never refused, since nothing before `q` was pending when it was replied.
    ///
    /// Answered before its entries are durable (see the module's notes): they go with the
    /// next write, or after [`crate::Limits::vicos_flush_after`].
    pub(crate) async fn commit(
        &self,
        repo: &Arc<Repository>,
        req: &AipCommit,
        caller: &str,
    ) -> Result<AipWork, ProviderError> {
        let commit: Commit<aip::DictOp> = Commit::from_wire(&req.commit).map_err(malformed(AipMessage::Commit))?;
        // Decoded beside its bytes, which the journal keeps.
        let auth: Option<(CommitAuth<vouch_core::Digest>, &ByteBuf)> = req
            .commit_auth
            .as_ref()
            .map(|b| CommitAuth::from_wire(b).map(|m| (m, b)).map_err(malformed(AipMessage::CommitAuth)))
            .transpose()?;
        let entry = Entry::Commit { from: req.from, commit: req.commit.clone() };
        let group = &req.group;
        let answer = |l: &mut Loaded, ()| work(l, group, req.from);
        let apply = |s: &mut aip::Server<Adict>| {
            s.on_commit(req.from, commit)?;
            let Some((auth, bytes)) = auth else { return Ok(((), Vec::new())) };
            match s.on_commit_auth(req.from, auth) {
                Ok(()) => Ok(((), vec![Entry::CommitAuth { from: req.from, commit_auth: bytes.clone() }])),
                Err(e) => {
                    tracing::debug!("group {group}: a COMMIT-AUTH sent with its COMMIT is passed over: {e}");
                    Ok(((), Vec::new()))
                }
            }
        };
        let (answered, slot, ticket) = self.step(repo, group, (req.from, caller), entry, apply, answer)?;
        // A committed query, or an aborted operation, may complete at once.
        slot.progressed.notify_waiters();
        self.flush_soon(repo, group, slot, ticket);
        answered
    }

    /// `aip-commit-auth`: `A[q]` and the operation applied, for each COMMIT-AUTH of the
    /// message in order, then the sender's next work. One for a position another member
    /// authenticated first is passed over (the rest may still be new); the first other
    /// refusal ends the message, and is the answer when nothing before it was taken.
    pub(crate) async fn commit_auth(
        &self,
        repo: &Repository,
        req: &AipCommitAuth,
        caller: &str,
    ) -> Result<AipWork, ProviderError> {
        if req.commit_auths.is_empty() || req.commit_auths.len() > MAX_COMMIT_AUTHS {
            return Err(GroupError::CommitAuthCount { count: req.commit_auths.len() }.into());
        }
        let decoded: Vec<CommitAuth<vouch_core::Digest>> = req
            .commit_auths
            .iter()
            .map(|bytes| CommitAuth::from_wire(bytes).map_err(malformed(AipMessage::CommitAuth)))
            .collect::<Result<_, _>>()?;
        let group = &req.group;
        let slot = self.slot(repo, group, false)?;
        let (answered, ticket) = {
            let mut state = slot.lock();
            let bind = unbound(self.held(&mut state.loaded, repo, group)?, group, req.from, caller)?;
            let (mut ticket, mut refusal) = (None, None);
            for (m, bytes) in decoded.into_iter().zip(&req.commit_auths) {
                let loaded = self.held(&mut state.loaded, repo, group)?;
                match loaded.server.on_commit_auth(req.from, m) {
                    Ok(()) => {
                        let n = loaded.next;
                        loaded.next += 1;
                        let entry = Entry::CommitAuth { from: req.from, commit_auth: bytes.clone() };
                        ticket = Some(state.push(n, entry.encode()));
                    }
                    Err(aip::ServerError::AlreadyAuthenticated { .. }) => {}
                    Err(e) => {
                        refusal = Some(refused(group, e));
                        break;
                    }
                }
            }
            let loaded = self.held(&mut state.loaded, repo, group)?;
            if bind && ticket.is_some() {
                loaded.members.insert(req.from, caller.to_string());
                let n = loaded.next;
                loaded.next += 1;
                ticket = Some(state.push(n, Entry::Bind { member: req.from, client: caller.to_string() }.encode()));
            }
            let loaded = self.held(&mut state.loaded, repo, group)?;
            let answered = match (refusal, &ticket) {
                (Some(e), None) => Err(e.into()),
                _ => work(loaded, group, req.from),
            };
            (answered, ticket.or_else(|| state.everything()))
        };
        if let Some(ticket) = ticket {
            durable(&in_repo(repo, group), group, &slot, ticket).await?;
            slot.progressed.notify_waiters();
        }
        answered
    }

    /// `aip-work`: the passive-phase work the sender may do now (changes nothing). A member
    /// not admitted is refused; in a group without admission, one not bound yet is handed
    /// none (it binds by an operation first).
    pub(crate) async fn work(
        &self,
        repo: &Repository,
        req: &AipWorkRequest,
        caller: &str,
    ) -> Result<AipWork, ProviderError> {
        self.read(repo, &req.group, |l| match unbound(l, &req.group, req.from, caller)? {
            true => Ok(AipWork::default()),
            false => work(l, &req.group, req.from),
        })
        .await
    }

    /// `aip-history`: a page of the committed operations from `first` on, for a member further
    /// behind than one REPLY shows (#43 item 10). Changes nothing; a member not admitted is
    /// refused (the history names the group's keys).
    pub(crate) async fn history(
        &self,
        repo: &Repository,
        req: &AipHistory,
        caller: &str,
    ) -> Result<AipHistoryPage, ProviderError> {
        self.read(repo, &req.group, |l| {
            unbound(l, &req.group, req.from, caller)?;
            let page = l.server.history(req.from, req.first).map_err(|e| refused(&req.group, e))?;
            Ok(AipHistoryPage { page: ByteBuf::from(page.to_wire()) })
        })
        .await
    }

    /// `(b, t)` of the group: the last applied and the last invoked operation.
    pub(crate) async fn progress(&self, repo: &Repository, group: &str) -> Result<(u64, u64), ProviderError> {
        self.read(repo, group, |l| Ok((l.server.applied(), l.server.invoked()))).await
    }

    /// Reads the group's server (changing no journaled state); answered once everything it
    /// read is durable.
    async fn read<T>(
        &self,
        repo: &Repository,
        group: &str,
        read: impl FnOnce(&mut Loaded) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let slot = self.slot(repo, group, false)?;
        let (value, ticket) = {
            let mut state = slot.lock();
            let value = read(self.held(&mut state.loaded, repo, group)?);
            (value, state.everything())
        };
        if let Some(ticket) = ticket {
            durable(&in_repo(repo, group), group, &slot, ticket).await?;
        }
        value
    }
}

fn in_repo<'a>(repo: &'a Repository, group: &'a str) -> journal::InRepository<'a> {
    journal::InRepository { repo, group }
}

/// A group's server set to show at most `page_bytes` of history per answer.
fn configure(server: &mut aip::Server<Adict>, page_bytes: usize) {
    let config = aip::ServerConfig { delta_bytes: page_bytes, ..server.config().clone() };
    server.set_config(config);
}
