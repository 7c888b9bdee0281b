//! The [`Registry`] handle: one back-end, the shared watches on it (`watch.rs`), and the
//! registrations it keeps alive (`registered.rs`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;

use super::backend::Backend;
use super::record::Registration;
use super::registered::{keep_registered_task, Registered};
use super::watch::{watch_task, EndpointSet, Endpoints, WatchShared};
use crate::cold_task::cold;

/// How long the watch task gathers registry events before it publishes one endpoint-set
/// update: a burst of registrations becomes one update for every client.
pub const DEFAULT_COALESCE: Duration = Duration::from_millis(20);

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
        let task = tokio::spawn(cold(keep_registered_task(
            Arc::clone(&self.inner.backend),
            registration,
            Arc::clone(&lease),
        )));
        Registered {
            backend: Arc::clone(&self.inner.backend),
            lease,
            task,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;

    use super::*;
    use futures::future::BoxFuture;
    use futures::stream::BoxStream;
    use futures::StreamExt;
    use tokio::time::Instant;

    use crate::discovery::backend::{RegistryError, WatchEvent};
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
