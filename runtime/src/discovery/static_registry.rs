//! The static back-end: a registry in this process's memory, with fixed endpoints given up
//! front and the registrations of servers in the same process. No server to run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use tokio::sync::watch;
use tokio::time::Instant;

use super::backend::{Backend, RegistryError, WatchEvent};
use super::record::Registration;

/// A registry without a server: fixed endpoints plus the servers of this process that
/// register in it. Leases are honoured (a registration that is not renewed disappears after
/// its TTL), so it behaves like a real registry for development, examples and tests.
///
/// ```
/// use wirecall_runtime::discovery::{Registry, StaticRegistry};
///
/// let registry = Registry::new(
///     StaticRegistry::new()
///         .endpoint("User", "127.0.0.1:7000")
///         .endpoint("User", "127.0.0.1:7001"),
/// );
/// # let _ = registry;
/// ```
#[derive(Clone, Default)]
pub struct StaticRegistry {
    state: Arc<Mutex<State>>,
    version: Arc<watch::Sender<u64>>,
}

#[derive(Default)]
struct State {
    next_lease: i64,
    /// Registry key (`service/lease-or-fixed-index`) -> entry.
    entries: BTreeMap<String, Entry>,
    /// Lease -> (ttl, expiry); fixed endpoints have no lease.
    leases: BTreeMap<i64, (std::time::Duration, Instant)>,
}

struct Entry {
    lease: Option<i64>,
    service: String,
    registration: Registration,
}

impl StaticRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a fixed endpoint for `service` at `address` (never expires).
    pub fn endpoint(self, service: &str, address: impl Into<String>) -> Self {
        let registration = Registration::new(address).service(service);
        self.fixed(registration)
    }

    /// Adds a fixed endpoint with a whole record (weight, metadata...), under each of its
    /// service names.
    pub fn fixed(self, registration: Registration) -> Self {
        {
            let mut state = self.lock();
            let index = state.entries.len();
            for service in &registration.services {
                state.entries.insert(
                    format!("{service}/fixed-{index}"),
                    Entry {
                        lease: None,
                        service: service.clone(),
                        registration: registration.clone(),
                    },
                );
            }
        }
        self.bump();
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// Removes entries whose lease expired; true if any went.
    fn sweep(&self, now: Instant) -> bool {
        let mut state = self.lock();
        let expired: Vec<i64> = state
            .leases
            .iter()
            .filter(|(_, (_, expiry))| *expiry <= now)
            .map(|(lease, _)| *lease)
            .collect();
        if expired.is_empty() {
            return false;
        }
        for lease in &expired {
            state.leases.remove(lease);
        }
        state
            .entries
            .retain(|_, entry| entry.lease.is_none_or(|l| !expired.contains(&l)));
        true
    }

    fn snapshot(&self, service: &str) -> (Vec<(String, Registration)>, Option<Instant>) {
        let state = self.lock();
        let entries = state
            .entries
            .iter()
            .filter(|(_, entry)| entry.service == service)
            .map(|(key, entry)| (key.clone(), entry.registration.clone()))
            .collect();
        let next_expiry = state.leases.values().map(|(_, expiry)| *expiry).min();
        (entries, next_expiry)
    }
}

impl Backend for StaticRegistry {
    fn describe(&self) -> String {
        "static".to_owned()
    }

    fn register<'a>(
        &'a self,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<i64, RegistryError>> {
        async move {
            {
                let mut state = self.lock();
                state.next_lease += 1;
                let lease = state.next_lease;
                state
                    .leases
                    .insert(lease, (registration.ttl, Instant::now() + registration.ttl));
                for service in &registration.services {
                    state.entries.insert(
                        format!("{service}/{lease:016x}"),
                        Entry {
                            lease: Some(lease),
                            service: service.clone(),
                            registration: registration.clone(),
                        },
                    );
                }
                drop(state);
                self.bump();
                Ok(lease)
            }
        }
        .boxed()
    }

    fn keep_alive(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        async move {
            self.sweep(Instant::now());
            let mut state = self.lock();
            match state.leases.get_mut(&lease) {
                Some((ttl, expiry)) => {
                    *expiry = Instant::now() + *ttl;
                    Ok(())
                }
                None => Err(RegistryError::LeaseExpired {
                    registry: self.describe(),
                    lease,
                }),
            }
        }
        .boxed()
    }

    fn deregister(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        async move {
            {
                let mut state = self.lock();
                state.leases.remove(&lease);
                state.entries.retain(|_, entry| entry.lease != Some(lease));
            }
            self.bump();
            Ok(())
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        service: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent, RegistryError>>, RegistryError>>
    {
        let registry = self.clone();
        let service = service.to_owned();
        let changes = self.version.subscribe();
        let stream = futures::stream::unfold((true, changes), move |(first, mut changes)| {
            let registry = registry.clone();
            let service = service.clone();
            async move {
                if !first {
                    loop {
                        let (_, next_expiry) = registry.snapshot(&service);
                        let expiry = async {
                            match next_expiry {
                                Some(at) => tokio::time::sleep_until(at).await,
                                None => std::future::pending().await,
                            }
                        };
                        tokio::select! {
                            changed = changes.changed() => {
                                if changed.is_err() {
                                    return None;
                                }
                                break;
                            }
                            () = expiry => {
                                if registry.sweep(Instant::now()) {
                                    break;
                                }
                            }
                        }
                    }
                }
                changes.borrow_and_update();
                let (entries, _) = registry.snapshot(&service);
                Some((Ok(WatchEvent::Reset(entries)), (false, changes)))
            }
        });
        async move { Ok(stream.boxed()) }.boxed()
    }
}
