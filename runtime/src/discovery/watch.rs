//! Watching a service's endpoints: one shared background watch per registry and service
//! name, coalescing bursts of events into one [`EndpointSet`] update.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::backend::{Backend, WatchEvent};
use super::backoff::{FIRST_RETRY_DELAY, MAX_RETRY_DELAY};
use super::record::Registration;

/// Owns the watch task of one service name; aborted when the last [`Endpoints`] goes.
pub(super) struct WatchShared {
    pub(super) updates: watch::Sender<EndpointSet>,
    pub(super) task: JoinHandle<()>,
}

impl Drop for WatchShared {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One registered endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The registry key of the record.
    pub key: String,
    /// The record.
    pub registration: Registration,
}

/// The endpoints of a service at one moment.
#[derive(Clone, Debug)]
pub struct EndpointSet {
    /// The endpoints, in registry-key order.
    pub endpoints: Arc<[Endpoint]>,
    /// How many updates the watch has published (0: nothing heard from the registry yet).
    pub generation: u64,
}

impl EndpointSet {
    pub(super) fn unknown() -> Self {
        Self {
            endpoints: Arc::from(Vec::new()),
            generation: 0,
        }
    }
}

/// A subscription to the endpoints of one service (see [`Registry::watch`](super::Registry::watch)).
pub struct Endpoints {
    pub(super) updates: watch::Receiver<EndpointSet>,
    pub(super) _shared: Arc<WatchShared>,
}

impl fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoints")
            .field("current", &*self.updates.borrow())
            .finish_non_exhaustive()
    }
}

impl Endpoints {
    /// The latest set (empty with generation 0 before the registry first answered).
    pub fn current(&self) -> EndpointSet {
        self.updates.borrow().clone()
    }

    /// Waits for an update newer than the last one this subscription returned.
    pub async fn changed(&mut self) -> EndpointSet {
        if self.updates.changed().await.is_err() {
            // The watch task is owned by `_shared`, so it cannot have gone: wait forever
            // rather than spin if it ever does.
            std::future::pending::<()>().await;
        }
        self.updates.borrow_and_update().clone()
    }

    /// Waits until the registry has answered once (the set may be empty).
    pub async fn ready(&mut self) -> EndpointSet {
        loop {
            let current = self.updates.borrow_and_update().clone();
            if current.generation > 0 {
                return current;
            }
            self.changed().await;
        }
    }
}

/// Watches `service` for as long as the task lives, publishing coalesced updates. When the
/// watch breaks, the last published set stays (clients keep calling the endpoints they
/// know) and the task watches again with backoff.
pub(super) async fn watch_task(
    backend: Arc<dyn Backend>,
    service: String,
    updates: watch::Sender<EndpointSet>,
    coalesce: Duration,
) {
    let mut delay = FIRST_RETRY_DELAY;
    let mut generation = 0;
    loop {
        match backend.watch(&service).await {
            Ok(mut events) => {
                let mut set = BTreeMap::new();
                let reason = loop {
                    let first = match events.next().await {
                        Some(Ok(event)) => event,
                        Some(Err(err)) => break err.to_string(),
                        None => break "the stream ended".to_owned(),
                    };
                    delay = FIRST_RETRY_DELAY;
                    apply(&mut set, first);
                    // Gather whatever else arrives within the window into the same update.
                    let window = tokio::time::sleep(coalesce);
                    tokio::pin!(window);
                    let mut ended = None;
                    loop {
                        tokio::select! {
                            biased;
                            event = events.next() => match event {
                                Some(Ok(event)) => apply(&mut set, event),
                                Some(Err(err)) => { ended = Some(err.to_string()); break }
                                None => { ended = Some("the stream ended".to_owned()); break }
                            },
                            () = &mut window => break,
                        }
                    }
                    generation += 1;
                    publish(&updates, &set, generation);
                    if let Some(reason) = ended {
                        break reason;
                    }
                };
                tracing::warn!(
                    registry = %backend.describe(),
                    %service,
                    %reason,
                    "registry watch broke; keeping the last known endpoints and watching again"
                );
            }
            Err(err) => tracing::warn!(
                registry = %backend.describe(),
                %service,
                %err,
                "cannot watch the registry; keeping the last known endpoints"
            ),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(MAX_RETRY_DELAY);
    }
}

fn apply(set: &mut BTreeMap<String, Registration>, event: WatchEvent) {
    match event {
        WatchEvent::Reset(all) => *set = all.into_iter().collect(),
        WatchEvent::Put(key, registration) => {
            set.insert(key, registration);
        }
        WatchEvent::Delete(key) => {
            set.remove(&key);
        }
    }
}

fn publish(
    updates: &watch::Sender<EndpointSet>,
    set: &BTreeMap<String, Registration>,
    generation: u64,
) {
    let endpoints: Vec<Endpoint> = set
        .iter()
        .map(|(key, registration)| Endpoint {
            key: key.clone(),
            registration: registration.clone(),
        })
        .collect();
    updates.send_replace(EndpointSet {
        endpoints: Arc::from(endpoints),
        generation,
    });
}
