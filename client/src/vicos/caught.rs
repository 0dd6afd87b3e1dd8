//! A lie caught in a group's history (a fork shown when two members' histories meet, a REPLY
//! that does not check) is the provider's for good: the member's AIP state is left mid-
//! operation, and nothing the provider says about the group can be trusted again. The member
//! keeps what it caught, in its state directory beside its AIP state, and every later
//! operation refuses with the same account, which operation and when, rather than with what
//! its AIP state would say next ("an operation is already in progress"), which reads like a
//! bug of vouch instead of a provider caught lying.

use super::Group;
use crate::error::ClientError;
use crate::state::write_atomic;
use crate::violation::ViolationKind;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a member caught, as saved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caught {
    /// When, as an HTTP date (UTC).
    pub when: String,
    /// The operation that caught it ("a put of k", "a listing").
    pub operation: String,
    /// The violation, as first reported.
    pub detail: String,
}

impl Caught {
    /// The refusal of every operation after the catch: a violation still (exit code 3), which
    /// says what was caught and what to do.
    pub fn refusal(&self, group: &str) -> ClientError {
        ClientError::violation(
            ViolationKind::BadAipAnswer,
            format!(
                "group {group}: this member caught the provider lying on {}, in {}: {}. The provider is not \
                 to be trusted for this group any more, and this member runs nothing more in it. Keep the \
                 copies you have, tell the other members (each catches it too once it is shown the others' \
                 history), and make a new group on a provider you trust (vouch group init)",
                self.when, self.operation, self.detail
            ),
        )
    }
}

/// The lie caught earlier kept at `path`, if any.
pub(super) fn read_caught(path: &Path) -> Result<Option<Caught>, ClientError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ClientError::io(format!("reading {}", path.display()))(e)),
    };
    toml::from_str(&text).map(Some).map_err(|e| ClientError::State(format!("{}: {e}", path.display())))
}

impl Group {
    /// Runs `work`, the operation named `operation`, unless a lie was caught in this group
    /// before; a lie in the history that `work` catches is kept for every later operation.
    pub(super) async fn guarded<T>(
        &self,
        operation: impl FnOnce() -> String,
        work: impl std::future::Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        if let Some(caught) = self.caught() {
            return Err(caught.refusal(&self.name));
        }
        let result = work.await;
        if let Err(e) = &result {
            if e.violation_kind() == Some(ViolationKind::BadAipAnswer) {
                self.keep_caught(Caught {
                    when: httpdate::fmt_http_date(std::time::SystemTime::now()),
                    operation: operation(),
                    detail: match e {
                        ClientError::Misbehaved(v) => v.detail.clone(),
                        e => e.to_string(),
                    },
                });
            }
        }
        result
    }

    /// The lie caught in this group before, if any.
    pub fn caught(&self) -> Option<Caught> {
        self.caught.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn keep_caught(&self, caught: Caught) {
        if let Some(path) = &self.caught_file {
            let text = toml::to_string(&caught).expect("three strings encode");
            // The operation's own error is what its caller sees; a member that cannot keep
            // the record still refuses for the rest of this process.
            if let Err(e) = write_atomic(path, text.as_bytes(), true) {
                tracing::error!("group {}: the lie caught could not be kept: {e}", self.name);
            }
        }
        tracing::error!(
            "group {}: the provider was caught lying in {}: {}",
            self.name,
            caught.operation,
            caught.detail
        );
        *self.caught.lock().unwrap_or_else(|p| p.into_inner()) = Some(caught);
    }
}
