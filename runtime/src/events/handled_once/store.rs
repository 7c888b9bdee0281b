//! The seam of the handled-once window: where handled ids are kept.

use std::future::Future;
use std::pin::Pin;

use crate::events::envelope::EventId;

/// What [`HandledIdStore`]'s methods return: a boxed future, so that the trait stays
/// object-safe and an implementation can await its own client (a Redis connection, a
/// database pool).
pub type HandledIdFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, HandledIdStoreError>> + Send + 'a>>;

/// Where a subscription's handled event ids are kept. The default keeps them in memory
/// ([`HandledOnce::in_memory`](crate::events::HandledOnce::in_memory)); implement this to
/// share the window between processes, e.g. with Redis (`SET {scope}:{id} 1 NX EX 600`
/// records, `EXISTS` checks).
///
/// `scope` names the subscription as `{contract}.{subscription}`, so that one store can
/// serve several subscriptions without mixing their ids. The store decides how long it
/// keeps an id; keep it at least as long as a duplicate can take to arrive (see
/// [`DEFAULT_HANDLED_AGE`](crate::events::DEFAULT_HANDLED_AGE)).
///
/// A store that fails never costs an event: when [`contains`](Self::contains) fails the
/// handler runs (a possible duplicate, as without the window), and when
/// [`record`](Self::record) fails the event is acknowledged all the same (its handler
/// succeeded); both are logged at `warn`.
///
/// ```
/// use std::collections::HashSet;
/// use std::sync::Mutex;
/// use wirecall_runtime::events::{EventId, HandledIdStore, HandledOnce, HandledIdFuture};
///
/// /// Never forgets: only for a test.
/// #[derive(Default)]
/// struct Everything(Mutex<HashSet<(String, EventId)>>);
///
/// impl HandledIdStore for Everything {
///     fn contains<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, bool> {
///         let found = self.0.lock().unwrap().contains(&(scope.to_owned(), id));
///         Box::pin(async move { Ok(found) })
///     }
///
///     fn record<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, ()> {
///         self.0.lock().unwrap().insert((scope.to_owned(), id));
///         Box::pin(async { Ok(()) })
///     }
/// }
///
/// let window = HandledOnce::store(Everything::default());
/// # let _ = window;
/// ```
pub trait HandledIdStore: Send + Sync + 'static {
    /// Whether the subscription `scope` has handled the event `id` (and the store still
    /// remembers it).
    fn contains<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, bool>;

    /// Records that the subscription `scope` handled the event `id`; called once its handler
    /// succeeded, before the event is acknowledged.
    fn record<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, ()>;
}

/// A [`HandledIdStore`] that could not answer.
#[derive(Debug, thiserror::Error)]
#[error("the handled-id store failed: {0}")]
pub struct HandledIdStoreError(pub String);
