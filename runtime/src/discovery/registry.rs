//! The [`Registry`] handle: one back-end, the shared watches on it, and the background task
//! that keeps a server registered.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::record::Registration;

/// How long the watch task gathers registry events before it publishes one endpoint-set
/// update: a burst of registrations becomes one update for every client.
pub const DEFAULT_COALESCE: Duration = Duration::from_millis(20);

/// The first wait before a failed registry operation is tried again; it doubles up to
/// [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
/// The longest wait between two tries of a failed registry operation.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(2);
/// How long a graceful deregistration waits for the registry.
const DEREGISTER_LIMIT: Duration = Duration::from_secs(2);

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The registry could not be reached or refused the request.
    #[error("registry {registry} unavailable: {message}")]
    Unavailable {
        /// The registry, as its back-end describes itself.
        registry: String,
        /// What the client library reported.
        message: String,
    },
    /// The lease is gone (it expired or was revoked): register again.
    #[error("lease {lease} expired in registry {registry}; the server registers again")]
    LeaseExpired {
        /// The registry.
        registry: String,
        /// The lease id.
        lease: i64,
    },
    /// The watch stream ended or was cancelled by the registry.
    #[error("watch on {registry} ended: {reason}")]
    WatchEnded {
        /// The registry.
        registry: String,
        /// Why.
        reason: String,
    },
}

/// A change to the endpoints registered under one service name, as a back-end reports it.
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// The whole current set (the first event of a watch, and after a resynchronisation).
    Reset(Vec<(String, Registration)>),
    /// The record under this registry key was created or changed.
    Put(String, Registration),
    /// The record under this registry key was removed (deregistered or its lease expired).
    Delete(String),
}

/// A registry back-end: where registrations live. Implemented by
/// [`StaticRegistry`](super::StaticRegistry) and, with the `etcd` and `zookeeper` features,
/// `Etcd` and `ZooKeeper`; implement it to plug in another coordination service.
pub trait Backend: Send + Sync + 'static {
    /// A short description for logs and errors (`etcd 127.0.0.1:2379`).
    fn describe(&self) -> String;

    /// Grants a lease of `registration.ttl` and writes one record per service name under
    /// it, each under a key of its own that no other lease uses. Returns the lease id.
    fn register<'a>(
        &'a self,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<i64, RegistryError>>;

    /// Renews `lease` once. [`RegistryError::LeaseExpired`] when the lease is gone.
    fn keep_alive(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>>;

    /// Revokes `lease`, removing its records at once.
    fn deregister(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>>;

    /// Watches the records of `service`: a [`WatchEvent::Reset`] first, then changes. The
    /// stream ends (or yields an error) when the watch breaks; the caller watches again.
    #[allow(clippy::type_complexity)]
    fn watch<'a>(
        &'a self,
        service: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent, RegistryError>>, RegistryError>>;
}

/// A handle on a registry: cheap to clone; clones share the back-end connection and the
/// watches, so a process runs **one watch per registry and service name**, however many
/// clients it builds.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

struct RegistryInner {
    backend: Arc<dyn Backend>,
    watches: Mutex<HashMap<String, Weak<WatchShared>>>,
    coalesce: Duration,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("backend", &self.inner.backend.describe())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// A registry over `backend`.
    pub fn new(backend: impl Backend) -> Self {
        Self::with_coalesce(backend, DEFAULT_COALESCE)
    }

    /// A registry whose watches gather events for `window` before publishing an update
    /// (default [`DEFAULT_COALESCE`]).
    pub fn with_coalesce(backend: impl Backend, window: Duration) -> Self {
        Self {
            inner: Arc::new(RegistryInner {
                backend: Arc::new(backend),
                watches: Mutex::new(HashMap::new()),
                coalesce: window,
            }),
        }
    }

    /// What the back-end is, for logs.
    pub fn describe(&self) -> String {
        self.inner.backend.describe()
    }

    /// The live endpoints of `service`, kept current in the background. Every caller in the
    /// process asking for the same service on this registry (or a clone) shares one watch.
    pub fn watch(&self, service: &str) -> Endpoints {
        let mut watches = self.inner.watches.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(shared) = watches.get(service).and_then(Weak::upgrade) {
            return Endpoints {
                updates: shared.updates.subscribe(),
                _shared: shared,
            };
        }
        let (updates, _) = watch::channel(EndpointSet::unknown());
        let task = tokio::spawn(watch_task(
            Arc::clone(&self.inner.backend),
            service.to_owned(),
            updates.clone(),
            self.inner.coalesce,
        ));
        let shared = Arc::new(WatchShared { updates, task });
        watches.retain(|_, weak| weak.strong_count() > 0);
        watches.insert(service.to_owned(), Arc::downgrade(&shared));
        Endpoints {
            updates: shared.updates.subscribe(),
            _shared: shared,
        }
    }

    /// Keeps `registration` in the registry from now on, in the background: registers (and
    /// retries with backoff, logging, while the registry is unreachable), renews the lease
    /// every third of its TTL, and registers again if the lease was lost. Dropping the handle
    /// stops renewing (the records expire with the lease);
    /// [`Registered::deregister`] removes them at once.
    pub fn keep_registered(&self, registration: Registration) -> Registered {
        let lease = Arc::new(Mutex::new(None));
        let task = tokio::spawn(keep_registered_task(
            Arc::clone(&self.inner.backend),
            registration,
            Arc::clone(&lease),
        ));
        Registered {
            backend: Arc::clone(&self.inner.backend),
            lease,
            task,
        }
    }
}

/// Owns the watch task of one service name; aborted when the last [`Endpoints`] goes.
struct WatchShared {
    updates: watch::Sender<EndpointSet>,
    task: JoinHandle<()>,
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
    fn unknown() -> Self {
        Self {
            endpoints: Arc::from(Vec::new()),
            generation: 0,
        }
    }
}

/// A subscription to the endpoints of one service (see [`Registry::watch`]).
pub struct Endpoints {
    updates: watch::Receiver<EndpointSet>,
    _shared: Arc<WatchShared>,
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
async fn watch_task(
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

/// A registration kept alive in the background (see [`Registry::keep_registered`]).
pub struct Registered {
    backend: Arc<dyn Backend>,
    /// The lease in force, if the registry has granted one.
    lease: Arc<Mutex<Option<i64>>>,
    task: JoinHandle<()>,
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("registry", &self.backend.describe())
            .field("lease", &self.lease())
            .finish()
    }
}

impl Registered {
    /// The lease in force (`None` while the registry has not granted one).
    pub fn lease(&self) -> Option<i64> {
        *self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops renewing and revokes the lease, so the records disappear at once (waiting at
    /// most 2 s for the registry; if it does not answer, they expire with the lease).
    pub async fn deregister(self) {
        self.task.abort();
        let lease = self.lease();
        if let Some(lease) = lease {
            match tokio::time::timeout(DEREGISTER_LIMIT, self.backend.deregister(lease)).await {
                Ok(Ok(())) => {
                    tracing::info!(registry = %self.backend.describe(), lease, "deregistered")
                }
                Ok(Err(err)) => {
                    tracing::warn!(%err, "deregistering failed; the records expire with the lease")
                }
                Err(_) => tracing::warn!(
                    registry = %self.backend.describe(),
                    "the registry did not answer the deregistration in time; the records expire with the lease"
                ),
            }
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn keep_registered_task(
    backend: Arc<dyn Backend>,
    registration: Registration,
    current: Arc<Mutex<Option<i64>>>,
) {
    let ttl = registration.ttl;
    let renew_every = ttl / 3;
    let mut delay = FIRST_RETRY_DELAY;
    let mut logged_unreachable = false;
    loop {
        let lease = match backend.register(&registration).await {
            Ok(lease) => lease,
            Err(err) => {
                if !logged_unreachable {
                    tracing::warn!(
                        %err,
                        address = %registration.address,
                        "cannot register; serving anyway and registering when the registry answers"
                    );
                    logged_unreachable = true;
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_RETRY_DELAY);
                continue;
            }
        };
        *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(lease);
        tracing::info!(
            registry = %backend.describe(),
            address = %registration.address,
            services = ?registration.services,
            lease,
            "registered"
        );
        logged_unreachable = false;
        delay = FIRST_RETRY_DELAY;
        let mut renewed = Instant::now();
        let mut pause = renew_every;
        loop {
            tokio::time::sleep(pause).await;
            pause = renew_every;
            // Bounded: a renewal sent to a registry member that died can hang, and an unbounded
            // one would let the lease expire while it waits. A failed or stuck attempt is
            // retried soon, well inside the TTL.
            let attempt = tokio::time::timeout(renew_every, backend.keep_alive(lease));
            let outcome = attempt.await.unwrap_or_else(|_| {
                Err(RegistryError::Unavailable {
                    registry: backend.describe(),
                    message: format!("the lease renewal did not answer within {renew_every:?}"),
                })
            });
            match outcome {
                Ok(()) => renewed = Instant::now(),
                Err(err @ RegistryError::LeaseExpired { .. }) => {
                    tracing::warn!(%err, "lease lost");
                    break;
                }
                Err(err) => {
                    // Unreachable: once the TTL has passed since the last renewal the lease
                    // is gone, so register anew when the registry answers again.
                    tracing::warn!(%err, "cannot renew the lease; retrying");
                    if renewed.elapsed() >= ttl {
                        break;
                    }
                    pause = renew_every / 4;
                }
            }
        }
        *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;

    use super::*;
    use crate::discovery::StaticRegistry;

    /// A back-end whose watch replays a burst of events at once and counts its watches.
    struct Burst {
        watches: Arc<AtomicUsize>,
        registrations: usize,
    }

    impl Backend for Burst {
        fn describe(&self) -> String {
            "burst".to_owned()
        }
        fn register<'a>(
            &'a self,
            _: &'a Registration,
        ) -> BoxFuture<'a, Result<i64, RegistryError>> {
            async { Ok(1) }.boxed()
        }
        fn keep_alive(&self, _: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
            async { Ok(()) }.boxed()
        }
        fn deregister(&self, _: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
            async { Ok(()) }.boxed()
        }
        #[allow(clippy::type_complexity)]
        fn watch<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<
            'a,
            Result<BoxStream<'static, Result<WatchEvent, RegistryError>>, RegistryError>,
        > {
            self.watches.fetch_add(1, Ordering::SeqCst);
            let mut events = vec![Ok(WatchEvent::Reset(Vec::new()))];
            events.extend((0..self.registrations).map(|i| {
                Ok(WatchEvent::Put(
                    format!("svc/{i}"),
                    Registration::new(format!("127.0.0.1:{}", 7000 + i)).service("svc"),
                ))
            }));
            let stream = futures::stream::iter(events).chain(futures::stream::pending());
            async move { Ok(stream.boxed()) }.boxed()
        }
    }

    #[tokio::test]
    async fn a_burst_of_100_registrations_is_one_update() {
        let watches = Arc::new(AtomicUsize::new(0));
        let registry = Registry::new(Burst {
            watches: Arc::clone(&watches),
            registrations: 100,
        });
        let mut endpoints = registry.watch("svc");
        let set = endpoints.ready().await;
        assert_eq!(set.endpoints.len(), 100);
        assert_eq!(
            set.generation, 1,
            "the reset and 100 puts were published once"
        );
        assert_eq!(watches.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn every_client_of_a_service_shares_one_watch() {
        let watches = Arc::new(AtomicUsize::new(0));
        let registry = Registry::new(Burst {
            watches: Arc::clone(&watches),
            registrations: 3,
        });
        let subscribers: Vec<Endpoints> = (0..50)
            .map(|i| {
                if i % 2 == 0 {
                    registry.watch("svc")
                } else {
                    registry.clone().watch("svc")
                }
            })
            .collect();
        for mut subscriber in subscribers {
            assert_eq!(subscriber.ready().await.endpoints.len(), 3);
        }
        assert_eq!(watches.load(Ordering::SeqCst), 1);
        // Another service is another watch; once every subscriber is gone, a new one starts.
        let mut other = registry.watch("other");
        other.ready().await;
        assert_eq!(watches.load(Ordering::SeqCst), 2);
        drop(other);
        registry.watch("other").ready().await;
        assert_eq!(watches.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn static_registry_follows_registrations_and_deregistrations() {
        let registry = Registry::new(StaticRegistry::new().endpoint("svc", "127.0.0.1:1"));
        let mut endpoints = registry.watch("svc");
        assert_eq!(endpoints.ready().await.endpoints.len(), 1);
        let registered = registry.keep_registered(Registration::new("127.0.0.1:2").service("svc"));
        let set = endpoints.changed().await;
        let mut addresses: Vec<_> = set
            .endpoints
            .iter()
            .map(|e| e.registration.address.as_str())
            .collect();
        addresses.sort_unstable();
        assert_eq!(addresses, ["127.0.0.1:1", "127.0.0.1:2"]);
        registered.deregister().await;
        assert_eq!(endpoints.changed().await.endpoints.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unrenewed_lease_expires_and_only_its_own_records_go() {
        let backend = StaticRegistry::new();
        let registry = Registry::new(backend.clone());
        let mut endpoints = registry.watch("svc");
        endpoints.ready().await;
        let ttl = Duration::from_secs(3);
        let alive =
            registry.keep_registered(Registration::new("127.0.0.1:1").service("svc").ttl(ttl));
        // A host that dies: its lease is granted but never renewed.
        let dead = backend
            .register(&Registration::new("127.0.0.1:2").service("svc").ttl(ttl))
            .await
            .unwrap();
        while endpoints.current().endpoints.len() < 2 {
            endpoints.changed().await;
        }
        let started = Instant::now();
        while endpoints.current().endpoints.len() > 1 {
            endpoints.changed().await;
        }
        assert!(
            started.elapsed() <= ttl + Duration::from_millis(100),
            "{:?}",
            started.elapsed()
        );
        let left = endpoints.current();
        assert_eq!(left.endpoints[0].registration.address, "127.0.0.1:1");
        assert!(backend.keep_alive(dead).await.is_err());
        // The live host keeps renewing: still there several TTLs later.
        tokio::time::sleep(ttl * 4).await;
        assert_eq!(endpoints.current().endpoints.len(), 1);
        assert!(alive.lease().is_some());
    }
}
