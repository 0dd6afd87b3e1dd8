//! The gateway's tasks beside the accept loops (connections, read-ahead, delayed prunes), kept
//! so that shutdown waits for them: a commit still running after `shutdown` returned would
//! move the provider's state behind the back of the next client opened on the same state,
//! which would then take its honest provider for a liar.

use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::JoinSet;

#[derive(Clone)]
pub(crate) struct Background {
    stop: watch::Receiver<bool>,
    tasks: Arc<Mutex<JoinSet<()>>>,
}

impl Background {
    pub(crate) fn new(stop: watch::Receiver<bool>) -> Background {
        Background { stop, tasks: Arc::default() }
    }

    /// Whether shutdown has begun.
    pub(crate) fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.clone()
    }

    /// Runs `task` until it ends; shutdown waits for it.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().expect("background tasks");
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }

    /// Runs `task` unless shutdown begins first (then it is dropped: only for work that is
    /// safe to cut short, such as a read).
    pub(crate) fn spawn_until_stop(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut stop = self.stop.clone();
        self.spawn(async move {
            tokio::select! {
                () = task => {}
                _ = stop.changed() => {}
            }
        });
    }

    /// Waits for every task (after shutdown has begun, so that none is added for long).
    pub(crate) async fn finish(&self) {
        loop {
            let mut tasks = std::mem::take(&mut *self.tasks.lock().expect("background tasks"));
            if tasks.is_empty() {
                return;
            }
            while tasks.join_next().await.is_some() {}
        }
    }
}
