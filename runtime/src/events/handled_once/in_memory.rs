//! The default handled-id store: per subscription, a set of ids and their arrival order, so
//! that the oldest is forgotten first, whether the count or the age bound is reached.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::store::{HandledIdFuture, HandledIdStore};
use crate::events::envelope::EventId;

/// The in-memory window: at most `max_ids` ids per scope, none older than `max_age`.
pub(crate) struct InMemoryHandledIds {
    max_ids: usize,
    max_age: Duration,
    scopes: Mutex<HashMap<Box<str>, Window>>,
}

/// One subscription's ids. `order` holds each id of `ids` once, oldest first: an id is never
/// recorded twice while it is in the window, since `record` checks first.
#[derive(Default)]
struct Window {
    ids: HashSet<EventId>,
    order: VecDeque<(Instant, EventId)>,
}

impl Window {
    fn forget_expired(&mut self, now: Instant, max_age: Duration) {
        while let Some(&(recorded, id)) = self.order.front() {
            if now.saturating_duration_since(recorded) < max_age {
                break;
            }
            self.order.pop_front();
            self.ids.remove(&id);
        }
    }
}

impl InMemoryHandledIds {
    pub(crate) fn new(max_ids: usize, max_age: Duration) -> Self {
        Self {
            max_ids: max_ids.max(1),
            max_age,
            scopes: Mutex::new(HashMap::new()),
        }
    }

    fn contains_now(&self, scope: &str, id: EventId) -> bool {
        let mut scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(window) = scopes.get_mut(scope) else {
            return false;
        };
        window.forget_expired(Instant::now(), self.max_age);
        window.ids.contains(&id)
    }

    fn record_now(&self, scope: &str, id: EventId) {
        let mut scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        // The scope's key is allocated once, on its first id.
        if !scopes.contains_key(scope) {
            scopes.insert(scope.into(), Window::default());
        }
        let Some(window) = scopes.get_mut(scope) else {
            return;
        };
        let now = Instant::now();
        window.forget_expired(now, self.max_age);
        if !window.ids.insert(id) {
            return;
        }
        window.order.push_back((now, id));
        while window.order.len() > self.max_ids {
            if let Some((_, oldest)) = window.order.pop_front() {
                window.ids.remove(&oldest);
            }
        }
    }
}

impl HandledIdStore for InMemoryHandledIds {
    fn contains<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, bool> {
        let found = self.contains_now(scope, id);
        Box::pin(std::future::ready(Ok(found)))
    }

    fn record<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, ()> {
        self.record_now(scope, id);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_bound_forgets_the_oldest_id() {
        let store = InMemoryHandledIds::new(2, Duration::from_secs(60));
        for n in 1..=3 {
            store.record_now("c.s", EventId(n));
        }
        assert!(!store.contains_now("c.s", EventId(1)));
        assert!(store.contains_now("c.s", EventId(2)));
        assert!(store.contains_now("c.s", EventId(3)));
    }

    #[test]
    fn scopes_keep_their_ids_apart() {
        let store = InMemoryHandledIds::new(10, Duration::from_secs(60));
        store.record_now("c.billing", EventId(7));
        assert!(store.contains_now("c.billing", EventId(7)));
        assert!(!store.contains_now("c.mail", EventId(7)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_age_bound_forgets_old_ids() {
        let store = InMemoryHandledIds::new(10, Duration::from_secs(60));
        store.record_now("c.s", EventId(1));
        tokio::time::advance(Duration::from_secs(30)).await;
        store.record_now("c.s", EventId(2));
        assert!(store.contains_now("c.s", EventId(1)));
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(!store.contains_now("c.s", EventId(1)));
        assert!(store.contains_now("c.s", EventId(2)));
    }
}
