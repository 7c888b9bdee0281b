//! [`HandledOnce`], the setting a subscription turns the window on with, and the defaults of
//! the in-memory window.

use std::sync::Arc;
use std::time::Duration;

use super::in_memory::InMemoryHandledIds;
use super::store::HandledIdStore;

/// Ids the default in-memory window keeps per subscription before it forgets the oldest.
///
/// A duplicate follows its original closely: a delivery whose acknowledgement was lost comes
/// back as soon as the consumer resubscribes (nothing else is handled while the broker is
/// away), and a publish the bus retries after an unknown outcome lands behind the events
/// published in the meantime. 100,000 ids cover more than ten seconds of a consumer running
/// at full speed against RabbitMQ, for about 5 MiB.
pub const DEFAULT_HANDLED_IDS: usize = 100_000;

/// How long the default in-memory window keeps an id.
///
/// Ten minutes outlast a broker restart (6 to 20 s on a small machine), the reconnection
/// backoff and the publisher's own retry of an unconfirmed publish (30 s on RabbitMQ,
/// `DEFAULT_PUBLISH_RETRY_WITHIN`) many times over; whichever bound is reached first forgets
/// an id.
pub const DEFAULT_HANDLED_AGE: Duration = Duration::from_secs(10 * 60);

/// The window of handled event ids a subscription keeps: set it with
/// [`SubscriptionConfig::handled_once`](crate::events::SubscriptionConfig::handled_once).
///
/// Clones share one window. The in-memory window belongs to this process: a consumer in
/// another process (or after a restart) does not see it; for that, plug a shared store in
/// with [`HandledOnce::store`].
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::events::{HandledOnce, SubscriptionConfig};
///
/// let config = SubscriptionConfig::default().handled_once(HandledOnce::in_memory());
/// assert!(config.handled_once.is_some());
/// let small = HandledOnce::in_memory_bounded(1_000, Duration::from_secs(60));
/// # let _ = small;
/// ```
#[derive(Clone)]
pub struct HandledOnce {
    store: Arc<dyn HandledIdStore>,
}

impl HandledOnce {
    /// An in-memory window of [`DEFAULT_HANDLED_IDS`] ids per subscription, each kept for
    /// [`DEFAULT_HANDLED_AGE`].
    pub fn in_memory() -> Self {
        Self::in_memory_bounded(DEFAULT_HANDLED_IDS, DEFAULT_HANDLED_AGE)
    }

    /// An in-memory window of at most `max_ids` ids per subscription (at least 1), each kept
    /// for at most `max_age`.
    pub fn in_memory_bounded(max_ids: usize, max_age: Duration) -> Self {
        Self::store(InMemoryHandledIds::new(max_ids, max_age))
    }

    /// A window kept in `store`, for instance one shared by every consumer of a subscription
    /// across processes (Redis, a database table).
    pub fn store(store: impl HandledIdStore) -> Self {
        Self {
            store: Arc::new(store),
        }
    }

    pub(crate) fn shared_store(&self) -> Arc<dyn HandledIdStore> {
        Arc::clone(&self.store)
    }
}

impl Default for HandledOnce {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl std::fmt::Debug for HandledOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandledOnce").finish_non_exhaustive()
    }
}

/// Two settings are equal when they share one window.
impl PartialEq for HandledOnce {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.store, &other.store)
    }
}

impl Eq for HandledOnce {}
