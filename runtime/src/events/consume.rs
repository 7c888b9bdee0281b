//! Handling one delivered event, the same for every back-end: skip it if the subscription's
//! handled-once window holds its id, find the codec, run the handler inside its
//! [`EventContext`] and a `tracing` span in the publisher's trace, catch a panic, and decide
//! between acknowledging, retrying and dead-lettering.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use tracing::Instrument;

use super::context::EventContext;
use super::contract::EventHandler;
use super::envelope::{codec_of, Envelope};
use super::error::{DeadLetterReason, HandlerError};
use super::handled_once::HandledOnceGate;
use super::redelivery::{RetryDecision, RetryPolicy};

/// What the back-end does with a delivered event.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Handled: acknowledge it.
    Done,
    /// Failed, attempts left: publish it again after `delay` with `attempts` recorded.
    Retry {
        /// The wait before the next run.
        delay: Duration,
        /// Failed runs so far, this one included.
        attempts: u32,
    },
    /// Give up: to the dead letters.
    DeadLetter {
        /// Failed runs so far (0 when the event was never handed to a handler).
        attempts: u32,
        /// Why.
        reason: DeadLetterReason,
        /// The last error.
        error: String,
    },
}

/// Runs `handler` on `envelope` and judges the outcome by `retry`; with a handled-once
/// `window`, acknowledges an id the window holds without running the handler, and records the
/// id of an event handled successfully.
pub(crate) async fn handle(
    handler: &dyn EventHandler,
    envelope: &Envelope,
    retry: &RetryPolicy,
    window: Option<&HandledOnceGate>,
) -> Verdict {
    let Some(window) = window else {
        return judge(handler, envelope, retry).await;
    };
    // Held until the verdict is recorded: a second delivery of this id waits here and then
    // sees the record.
    let _claim = window.claim(envelope.id).await;
    if window.already_handled(envelope).await {
        return Verdict::Done;
    }
    let verdict = judge(handler, envelope, retry).await;
    if matches!(verdict, Verdict::Done) {
        // Before the acknowledgement is sent: an acknowledgement lost with the connection is
        // the redelivery the window exists for.
        window.record(envelope).await;
    }
    verdict
}

async fn judge(handler: &dyn EventHandler, envelope: &Envelope, retry: &RetryPolicy) -> Verdict {
    let outcome = run(handler, envelope).await;
    let error = match outcome {
        Ok(()) => return Verdict::Done,
        Err(error) => error,
    };
    if !error.is_retryable() {
        tracing::warn!(event = %envelope.event, id = %envelope.id, %error, "event dead-lettered");
        return Verdict::DeadLetter {
            attempts: envelope.attempts,
            reason: error.reason(),
            error: error.to_string(),
        };
    }
    let attempts = envelope.attempts + 1;
    match retry.after_failure(attempts) {
        RetryDecision::RetryAfter(delay) => {
            tracing::debug!(
                event = %envelope.event, id = %envelope.id, attempts, ?delay, %error,
                "event handler failed; retrying"
            );
            Verdict::Retry { delay, attempts }
        }
        RetryDecision::DeadLetter => {
            tracing::warn!(
                event = %envelope.event, id = %envelope.id, attempts, %error,
                "event dead-lettered after its last attempt"
            );
            Verdict::DeadLetter {
                attempts,
                reason: error.reason(),
                error: error.to_string(),
            }
        }
    }
}

async fn run(handler: &dyn EventHandler, envelope: &Envelope) -> Result<(), HandlerError> {
    let Some(codec) = codec_of(&envelope.content_type) else {
        return Err(HandlerError::UnknownContentType(
            envelope.content_type.to_string(),
        ));
    };
    let context = EventContext::of(envelope);
    let span = tracing::info_span!(
        "event",
        contract = %envelope.contract,
        event = %envelope.event,
        id = %envelope.id,
        attempt = context.attempt,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
    );
    // Only a span someone listens to is worth the two hex strings.
    if let (Some(trace), false) = (&context.trace, span.is_disabled()) {
        span.record("trace_id", trace.trace_id_hex());
        span.record("span_id", trace.span_id_hex());
    }
    // A panic is caught where it happens so that one bad event cannot take the consumer
    // down; it counts as a failure like an error does.
    let handling = AssertUnwindSafe(async {
        handler
            .handle(&envelope.event, codec, envelope.payload.clone())
            .await
    })
    .catch_unwind();
    match context.scope(handling).instrument(span).await {
        Ok(result) => result,
        Err(panic) => Err(HandlerError::Panicked(panic_message(&panic))),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
