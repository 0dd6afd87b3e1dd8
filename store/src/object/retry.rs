//! Every call to the backend under a deadline, and tried again after a short pause when it
//! failed in a way that may pass (a 5xx, a reset connection, no answer in time), so that a
//! backend's hiccup is not the provider's error and a hung call is not the provider's hang.
//!
//! Only calls that are safe to repeat are tried again: gets, ranged gets, heads and lists,
//! and puts and deletes of whole objects (a key is written by one provider, and a retry
//! carries the same bytes, so a put that landed and is sent again changes nothing). A
//! streamed write whose parts have gone cannot be sent again (the writer no longer holds
//! them): it fails with an error that says so ([`super::stream`]).

use super::ObjectBlobs;
use crate::StoreError;
use std::future::Future;
use std::time::Duration;

/// How long one call may take, and how often a call that failed transiently is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Patience {
    /// The longest one attempt may take before it is given up as [`StoreError::TimedOut`].
    pub deadline: Duration,
    /// Attempts in all (at least one).
    pub attempts: u32,
    /// The pause before the second attempt, doubled before each one after.
    pub backoff: Duration,
}

impl Patience {
    /// A local directory: a call that takes a minute is a stalled disk. Three attempts, 20
    /// then 40 ms apart.
    pub const LOCAL: Patience =
        Patience { deadline: Duration::from_secs(60), attempts: 3, backoff: Duration::from_millis(20) };
    /// An S3 bucket: `object_store` already tries a 5xx or a failed connection again (twice,
    /// within 10 s, each request within 60 s; `ObjectBlobs::s3`), so one more attempt here
    /// covers what it does not (a request hung past the deadline, a body cut short, MinIO's
    /// spurious 400 IncompleteBody) without multiplying its retries: at most six requests
    /// per call. The deadline is above what `object_store` itself may take (70 s), so its
    /// more precise error comes first.
    pub const S3: Patience =
        Patience { deadline: Duration::from_secs(120), attempts: 2, backoff: Duration::from_millis(20) };
}

/// Whether `e` may pass if the call is made again: not a missing key, a bad key or range, a
/// refusal, a full disk, or corruption, which the same call meets again.
pub(crate) fn transient(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend { .. } | StoreError::Unreachable { .. } | StoreError::TimedOut { .. })
}

/// `e`, saying how many attempts it took.
fn after_attempts(e: StoreError, attempts: u32) -> StoreError {
    if attempts < 2 {
        return e;
    }
    let tried = |detail: String| format!("{detail} (tried {attempts} times)");
    match e {
        StoreError::Backend { at, detail } => StoreError::Backend { at, detail: tried(detail) },
        StoreError::Unreachable { endpoint, detail } => StoreError::Unreachable { endpoint, detail: tried(detail) },
        StoreError::TimedOut { at, detail } => StoreError::TimedOut { at, detail: tried(detail) },
        other => other,
    }
}

impl ObjectBlobs {
    /// `call` (one attempt) under the deadline, made again while it fails transiently and
    /// attempts are left. A call that never fails transiently takes at most `attempts`
    /// deadlines and the pauses between them.
    pub(crate) async fn retried<T, F, Fut>(&self, key: &str, mut call: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let Patience { attempts, mut backoff, .. } = self.patience;
        let mut attempt = 1;
        loop {
            match self.within(key, call()).await {
                Err(e) if transient(&e) && attempt < attempts => {
                    tracing::debug!("{}: {key}: {e}; trying again in {backoff:?}", self.place);
                    tokio::time::sleep(backoff).await;
                    backoff = backoff.saturating_mul(2);
                    attempt += 1;
                }
                done => return done.map_err(|e| after_attempts(e, attempt)),
            }
        }
    }

    /// `call` under the deadline, made once.
    pub(crate) async fn within<T>(
        &self,
        key: &str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let deadline = self.patience.deadline;
        tokio::time::timeout(deadline, call).await.unwrap_or_else(|_| Err(self.timed_out(key)))
    }

    pub(crate) fn timed_out(&self, key: &str) -> StoreError {
        StoreError::TimedOut {
            at: format!("{}: {key}", self.place),
            detail: format!("given up after {:?}", self.patience.deadline),
        }
    }

    /// This store, each of its calls given up after `deadline` (a test with hung calls keeps
    /// it short).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.patience.deadline = deadline;
        self
    }

    /// This store, each call that fails transiently made up to `attempts` times in all, the
    /// first pause `backoff`, doubled before each attempt after.
    pub fn with_retries(mut self, attempts: u32, backoff: Duration) -> Self {
        self.patience.attempts = attempts.max(1);
        self.patience.backoff = backoff;
        self
    }
}
