//! An event a subscription gave up on, with why: what
//! [`EventBus::take_dead_letters`](super::EventBus::take_dead_letters) returns. Nothing is
//! dropped: an event either succeeds or ends here.

use super::envelope::Envelope;
use super::error::DeadLetterReason;

/// One dead-lettered event.
#[derive(Clone, Debug)]
pub struct DeadLetter {
    /// The event as it was published (id, timestamp, event name, content type, metadata,
    /// payload); `attempts` counts the handler runs that failed.
    pub envelope: Envelope,
    /// Why it was given up on.
    pub reason: DeadLetterReason,
    /// The last error, as text.
    pub error: String,
}
