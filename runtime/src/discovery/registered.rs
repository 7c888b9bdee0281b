//! Keeping a server registered: the background task that registers, renews the lease and
//! registers again when it was lost, and the [`Registered`] handle that stops it.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::backend::{Backend, RegistryError};
use super::backoff::{FIRST_RETRY_DELAY, MAX_RETRY_DELAY};
use super::record::Registration;

/// How long a graceful deregistration waits for the registry.
const DEREGISTER_LIMIT: Duration = Duration::from_secs(2);

/// A registration kept alive in the background (see [`Registry::keep_registered`](super::Registry::keep_registered)).
pub struct Registered {
    pub(super) backend: Arc<dyn Backend>,
    /// The lease in force, if the registry has granted one.
    pub(super) lease: Arc<Mutex<Option<i64>>>,
    pub(super) task: JoinHandle<()>,
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

pub(super) async fn keep_registered_task(
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
