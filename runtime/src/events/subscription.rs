//! The handle of a running subscription: dropping it, or [`Subscription::close`], stops its
//! consumer. Events it has not taken stay in the subscription's queue for the next consumer.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A consumer of one subscription, returned by
/// [`EventBus::subscribe`](super::EventBus::subscribe). Stops when dropped.
#[derive(Debug)]
#[must_use = "a subscription stops consuming when its handle is dropped"]
pub struct Subscription {
    stop: CancellationToken,
    consumer: Option<JoinHandle<()>>,
}

impl Subscription {
    pub(crate) fn new(stop: CancellationToken, consumer: JoinHandle<()>) -> Self {
        Self {
            stop,
            consumer: Some(consumer),
        }
    }

    /// Stops taking new events and waits until the events already taken are settled
    /// (acknowledged, scheduled for retry or dead-lettered).
    pub async fn close(mut self) {
        self.stop.cancel();
        if let Some(consumer) = self.consumer.take() {
            // A consumer task only ends by returning; a panic inside a handler is caught
            // before it gets here.
            let _ = consumer.await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
