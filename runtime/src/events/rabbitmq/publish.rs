//! Publishing: one confirmed publish, and the retry of a publish whose outcome is unknown.
//!
//! A publish that ended without a confirm may have reached the queues. Sending the *same*
//! envelope again (same event id) until it is confirmed turns "maybe lost" into "maybe twice
//! with one id", which a subscription's handled-once window recognises; a caller retrying
//! through a generated publisher would mint a new id instead.

use std::time::Duration;

use lapin::options::BasicPublishOptions;
use lapin::types::ShortString;
use lapin::Confirmation;
use tokio::time::Instant;

use super::{headers, topology, RabbitMq};
use crate::events::envelope::Envelope;
use crate::events::error::{PublishError, PublishOutcome};

/// The longest pause between two tries of an in-doubt publish: the connection is watched, so
/// the pause only paces a broker that keeps refusing (negative confirms).
const RETRY_PAUSE_MAX: Duration = Duration::from_secs(1);

impl RabbitMq {
    /// Publishes `envelope` and waits for the broker's confirm; an unknown outcome is retried
    /// with the same envelope for `publish_retry_within`.
    pub(crate) async fn publish(&self, envelope: Envelope) -> Result<(), PublishError> {
        let mut in_doubt = match self.publish_once(&envelope).await {
            Err(error)
                if error.outcome() == PublishOutcome::MaybePublished
                    && !self.publish_retry_within.is_zero() =>
            {
                error
            }
            settled => return settled,
        };
        let deadline = Instant::now() + self.publish_retry_within;
        let mut pause = self.publish_retry_pause;
        let mut tries = 1u32;
        loop {
            if Instant::now() + pause >= deadline || !self.connected_before(deadline).await {
                tracing::warn!(
                    event = %envelope.event, id = %envelope.id, tries, error = %in_doubt,
                    "gave up publishing an unconfirmed event again"
                );
                return Err(in_doubt);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RETRY_PAUSE_MAX);
            tries += 1;
            match self.publish_once(&envelope).await {
                Ok(()) => {
                    tracing::debug!(
                        event = %envelope.event, id = %envelope.id, tries,
                        "unconfirmed event published again with its id and confirmed"
                    );
                    return Ok(());
                }
                // Whatever this try says, an earlier one may have reached a queue: the error
                // returned stays one whose outcome is "maybe published".
                Err(PublishError::Closed) => return Err(in_doubt),
                Err(error) if error.outcome() == PublishOutcome::MaybePublished => {
                    in_doubt = error;
                }
                Err(error) => {
                    tracing::debug!(id = %envelope.id, %error, "publishing an unconfirmed event again failed");
                }
            }
        }
    }

    /// Waits until a connection is up; `false` if none is by `deadline` or the bus closed.
    async fn connected_before(&self, deadline: Instant) -> bool {
        let mut state = self.state.clone();
        let up = tokio::time::timeout_at(
            deadline,
            state.wait_for(|live| live.as_ref().is_some_and(|live| live.is_up())),
        )
        .await;
        matches!(up, Ok(Ok(_))) && !self.closing.is_cancelled()
    }

    async fn publish_once(&self, envelope: &Envelope) -> Result<(), PublishError> {
        if self.closing.is_cancelled() {
            return Err(PublishError::Closed);
        }
        let live = self.live().ok_or(PublishError::Disconnected)?;
        live.ensure_exchange(&envelope.contract)
            .await
            .map_err(|error| PublishError::Broker(error.to_string()))?;
        // From here the frames may be on their way: a failure cannot prove the broker did
        // not route the event.
        let unconfirmed = |error: lapin::Error| PublishError::Unconfirmed(error.to_string());
        let confirm = live
            .publisher
            .basic_publish(
                ShortString::from(topology::exchange(&envelope.contract)),
                ShortString::from(envelope.event.as_ref()),
                BasicPublishOptions::default(),
                &envelope.payload,
                headers::properties(envelope),
            )
            .await
            .map_err(unconfirmed)?;
        match confirm.await.map_err(unconfirmed)? {
            Confirmation::Ack(_) => Ok(()),
            Confirmation::Nack(_) => Err(PublishError::Nacked),
            Confirmation::NotRequested => Err(PublishError::Unconfirmed(
                "the publishing channel is not in confirm mode".to_owned(),
            )),
        }
    }
}
