//! What the event bus tells the outside about consuming, through `tracing` and the `metrics`
//! facade, named like the rest of the runtime's metrics.
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `wirecall_events_duplicates_skipped_total` | counter | `contract`, `subscription`, `event` |

use ::metrics::counter;

use super::envelope::Envelope;

/// Deliveries acknowledged without running the handler, because the subscription's
/// handled-once window held their id
/// ([`SubscriptionConfig::handled_once`](crate::events::SubscriptionConfig::handled_once)).
pub const DUPLICATES_SKIPPED: &str = "wirecall_events_duplicates_skipped_total";

/// A delivery of an event `subscription` had already handled, acknowledged unrun.
pub(crate) fn duplicate_skipped(contract: &'static str, subscription: &str, envelope: &Envelope) {
    tracing::debug!(
        contract,
        subscription,
        event = %envelope.event,
        id = %envelope.id,
        attempt = envelope.attempts + 1,
        "event already handled; acknowledged without running the handler"
    );
    counter!(
        DUPLICATES_SKIPPED,
        "contract" => contract,
        "subscription" => subscription.to_owned(),
        "event" => envelope.event.clone(),
    )
    .increment(1);
}
