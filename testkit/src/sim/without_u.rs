//! What a PoR audit promises (Shi–Stefanov–Papamanthou, Def. 1): a log that passes can be
//! recovered from what the provider holds, even once U itself is gone. After an audit that
//! passed, a copy of the client repairs its log on a copy of the provider's state with every
//! slot of U lost, so from H and C alone, and reads each PoR file back. Reads through U
//! alone would miss levels that were mixed or lost behind an intact U.

use super::adversary::{call, whole};
use super::providers::Served;
use super::report::{Invariant, SimFailure};
use super::run::{ended, owner_client_over, Ended, Run, POR_FILES, TOKENS};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use std::sync::Arc;
use vouch_client::{Link, LinkAnswer, LinkRequest, MemoryState, StateStore};

/// A link straight to one provider, honest: the copy's.
struct Direct(Served);

impl Link for Direct {
    fn exchange(&self, request: LinkRequest) -> BoxFuture<'static, Result<LinkAnswer, std::io::Error>> {
        let served = self.0.clone();
        async move {
            let (op, token, body) = whole(request).await?;
            let held = call(&served, op, &token, body).await;
            let body = futures::stream::iter([Ok(held.body)]).boxed();
            Ok(LinkAnswer { status: held.status, server_ms: None, body })
        }
        .boxed()
    }
}

impl Run {
    /// Owner 0's PoR files, repaired and read on a copy of the provider's state whose U is
    /// lost, each as the history allows.
    pub(super) async fn recoverable_without_u(&mut self) -> Result<(), SimFailure> {
        let (token, name) = TOKENS[0];
        let mut adversary = self.adversary.lock().await;
        // The audit may have been answered from memory, over a blob since lost on disk: a
        // copy of the disk is not what the provider holds until it restarts.
        if adversary.damaged_on_disk {
            drop(adversary);
            self.coverage.outcome("recovery-without-u:skipped");
            return Ok(());
        }
        let side = adversary.providers.without_u(name).await;
        drop(adversary);
        let side = side.map_err(|e| self.fail(Invariant::AuditMeansRecoverable, format!("a copy without U: {e}")))?;
        let owner = &self.owners[0];
        // The client's state as it is now, copied: what the copy does is not the run's.
        let (root, intent) =
            owner.store.load().map_err(|e| self.fail(Invariant::AuditMeansRecoverable, e.to_string()))?;
        let store = match intent {
            Some(intent) => MemoryState::with_intent(root, intent),
            None => MemoryState::new(root),
        };
        if let Ok(Some(record)) = owner.store.load_por() {
            let _ = store.save_por(&record);
        }
        let link: Arc<dyn Link> = Arc::new(Direct(side));
        let client = owner_client_over(link, token, owner.secret, &Arc::new(store))
            .map_err(|e| self.fail(Invariant::AuditMeansRecoverable, e))?;
        for file in POR_FILES {
            if !self.owners[0].model.possible(file).iter().any(Option::is_some) {
                continue;
            }
            let _ = client.por().repair(file).await;
            let mut out = Vec::new();
            let read = client.por().get(file, None, &mut out).await.map(|_| ());
            let seen = match ended(read) {
                Ended::Ok(()) => Some(out),
                Ended::NotFound(_) => None,
                Ended::Violation(e) | Ended::Fault(e) => {
                    return Err(self.fail(
                        Invariant::AuditMeansRecoverable,
                        format!("a PoR audit passed, but {file} cannot be recovered once U is lost: {e}"),
                    ))
                }
            };
            if !self.owners[0].model.allows(file, &seen) {
                return Err(self.fail(
                    Invariant::AuditMeansRecoverable,
                    format!("a PoR audit passed, but {file} recovered once U is lost is not what the history allows"),
                ));
            }
        }
        self.coverage.outcome("recovery-without-u:ok");
        Ok(())
    }
}
