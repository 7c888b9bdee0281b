//! What a handler can learn about the event it is handling: [`EventContext::current`].

use std::borrow::Cow;
use std::time::SystemTime;

use super::envelope::{Envelope, EventId};
use crate::metadata::Metadata;
use crate::trace::TraceContext;

tokio::task_local! {
    static CURRENT: EventContext;
}

/// The event being handled: its id and timestamp (the de-duplication key), which attempt
/// this is, and the publisher's metadata and trace context.
///
/// ```
/// use wirecall_runtime::events::EventContext;
///
/// // Inside a handler this is `Some`; elsewhere `None`.
/// assert!(EventContext::current().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct EventContext {
    /// The event's id, the same on every delivery of it.
    pub id: EventId,
    /// When it was published.
    pub timestamp: SystemTime,
    /// The event's name.
    pub event: Cow<'static, str>,
    /// This run's number: 1 on the first delivery, 2 on the first retry, ...
    pub attempt: u32,
    /// The publisher's metadata.
    pub metadata: Metadata,
    /// The handler's own span in the publisher's trace (a child of the publisher's span).
    pub trace: Option<TraceContext>,
}

impl EventContext {
    /// The context of the event this task is handling; `None` outside a handler.
    pub fn current() -> Option<EventContext> {
        CURRENT.try_with(Clone::clone).ok()
    }

    pub(crate) fn of(envelope: &Envelope) -> Self {
        Self {
            id: envelope.id,
            timestamp: envelope.timestamp,
            event: envelope.event.clone(),
            attempt: envelope.attempts + 1,
            metadata: envelope.metadata.clone(),
            trace: envelope.trace.map(|trace| trace.child()),
        }
    }

    pub(crate) async fn scope<F: std::future::Future>(self, future: F) -> F::Output {
        CURRENT.scope(self, future).await
    }
}
