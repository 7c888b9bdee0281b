//! One consumer's side of a handled-once window: claiming an id while a delivery of it runs,
//! asking the store whether it was handled (logged and counted when it was), and recording
//! it. `consume.rs` decides when each is called.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::store::HandledIdStore;
use super::window::HandledOnce;
use crate::events::envelope::{Envelope, EventId};
use crate::events::metrics;

/// One consumer's gate in front of its handler.
pub(crate) struct HandledOnceGate {
    store: Arc<dyn HandledIdStore>,
    contract: &'static str,
    subscription: String,
    /// `{contract}.{subscription}`, the store's scope.
    scope: String,
    /// Ids being handled right now, each with what wakes the deliveries waiting for it.
    in_flight: Mutex<HashMap<EventId, Arc<Notify>>>,
}

impl HandledOnceGate {
    pub(crate) fn new(window: &HandledOnce, contract: &'static str, subscription: &str) -> Self {
        Self {
            store: window.shared_store(),
            contract,
            subscription: subscription.to_owned(),
            scope: format!("{contract}.{subscription}"),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the window holds `envelope`'s id; a skip is logged and counted. Call it
    /// holding the id's [`claim`](Self::claim).
    pub(crate) async fn already_handled(&self, envelope: &Envelope) -> bool {
        match self.store.contains(&self.scope, envelope.id).await {
            Ok(true) => {
                metrics::duplicate_skipped(self.contract, &self.subscription, envelope);
                true
            }
            Ok(false) => false,
            Err(error) => {
                tracing::warn!(
                    subscription = %self.subscription, id = %envelope.id, %error,
                    "could not ask the handled-id store; running the handler"
                );
                false
            }
        }
    }

    /// Records that `envelope`'s handler succeeded.
    pub(crate) async fn record(&self, envelope: &Envelope) {
        if let Err(error) = self.store.record(&self.scope, envelope.id).await {
            tracing::warn!(
                subscription = %self.subscription, id = %envelope.id, %error,
                "could not record a handled event id; a redelivery will run the handler again"
            );
        }
    }

    /// Waits until no other delivery of `id` runs on this consumer, then marks it running
    /// until the returned claim is dropped (also when the settle is dropped midway, as when
    /// the connection goes).
    pub(crate) async fn claim(&self, id: EventId) -> Claim<'_> {
        loop {
            let running = {
                let mut in_flight = self.lock_in_flight();
                match in_flight.get(&id) {
                    // Created under the lock, so the notification of a claim released
                    // between here and the await below is not missed.
                    Some(done) => Arc::clone(done).notified_owned(),
                    None => {
                        in_flight.insert(id, Arc::new(Notify::new()));
                        return Claim { gate: self, id };
                    }
                }
            };
            running.await;
        }
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<EventId, Arc<Notify>>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// An id marked running on one consumer.
pub(crate) struct Claim<'a> {
    gate: &'a HandledOnceGate,
    id: EventId,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some(done) = self.gate.lock_in_flight().remove(&self.id) {
            done.notify_waiters();
        }
    }
}
