//! What a registry back-end is: the [`Backend`] trait, the events its watches report and its
//! errors.

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::record::Registration;

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
