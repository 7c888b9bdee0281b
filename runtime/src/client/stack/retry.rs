//! The one retry loop of the client: every attempt of every call, whatever its shape and
//! whichever channel it goes through, is sent from here.
//!
//! An attempt that fails is sent again only when the one classification of its error
//! ([`Failure`]) allows it: when the call did not run, or when it may have and the method is
//! `#[idempotent]`; and only within the call's deadline, the method's `retries` (if its policy
//! sets them) and, on a balanced channel, the channel's retry budget. A direct channel sends
//! it again to its one server after a pause (a broken connection is dialled again, an
//! overloaded server gets a moment); a balanced channel sends it at once to an endpoint the
//! call has not tried yet.
//!
//! A stream call passes here for its open only: once its `Open` is on the way, items may
//! reach the caller, and it is never sent again (gRPC commits a stream at its first reply the
//! same way).

use std::time::Duration;

use tower::retry::budget::Budget;

use super::call::Call;
use super::endpoints::Endpoints;
use super::hedge::{send_hedged, Hedged};
use crate::client::request::Reply;
use crate::error::{Error, Failure};
use crate::negotiate::NegotiationError;
use crate::policy::metrics as policy_metrics;

/// The pause before the first retry on a direct channel; it doubles each time, within the
/// deadline.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(20);
/// The longest pause between two retries.
const MAX_RETRY_DELAY: Duration = Duration::from_millis(500);

/// Sends `call` to `endpoints` until an attempt succeeds or the rules above say stop.
///
/// The first attempt is sent here; what follows a failure is the loop of
/// [`after_failure`], boxed: most calls never fail, and its state (the endpoints tried, the
/// last error) stays out of their futures.
pub(crate) async fn send<E: Endpoints>(endpoints: &E, call: &Call<'_>) -> Result<Reply, Error> {
    if let Some(budget) = endpoints.budget() {
        budget.deposit();
    }
    let Some(picked) = endpoints.pick(call, &[]) else {
        return Err(endpoints.none_left());
    };
    // What the server is told of the deadline: all of it the first time (no clock read),
    // what is left of it after.
    let wire = call.deadline.map(|deadline| deadline.timeout());
    if let Some(plan) = endpoints.hedge(call) {
        // Boxed like the retry loop: only idempotent calls on balanced channels come here.
        return Box::pin(async move {
            match send_hedged(endpoints, call, picked, wire, plan).await {
                Hedged::Answered(reply) => Ok(reply),
                Hedged::Failed { picked, err, tried } => {
                    after_failure(endpoints, call, picked, err, tried).await
                }
            }
        })
        .await;
    }
    match endpoints.attempt(&picked, call, wire).await {
        Ok(reply) => {
            endpoints.report(&picked, None);
            Ok(reply)
        }
        Err(err) => Box::pin(after_failure(endpoints, call, picked, err, Vec::new())).await,
    }
}

/// The retry loop: what the failure `err` on `picked` leads to, and every attempt after it;
/// `tried` holds the endpoints that already failed the call (a hedge's other attempt).
async fn after_failure<E: Endpoints>(
    endpoints: &E,
    call: &Call<'_>,
    mut picked: E::Picked,
    mut err: Error,
    mut tried: Vec<E::Picked>,
) -> Result<Reply, Error> {
    let mut last: Option<Error> = None;
    // Attempts sent again after a failure (an endpoint skipped for an open circuit, and a
    // call sent again because its early hello was refused, are not).
    let mut retried: u32 = 0;
    let mut resent_early = false;
    let mut pause = FIRST_RETRY_DELAY;
    loop {
        // Sent behind an early hello the server refused: it never ran, and the endpoint's
        // next connection (dialled without early calls) takes it, once, like a first attempt.
        if !resent_early && refused_early(&err) {
            resent_early = true;
        } else if let Error::CircuitOpen { .. } = err {
            // The endpoint's circuit for the method is open: not a failure of the endpoint,
            // not a retry (nothing left this process). A balanced channel tries another
            // endpoint.
            if !E::MOVES_ON {
                return Err(err);
            }
            tried.push(picked);
            last = Some(err);
            picked = match endpoints.pick(call, &tried) {
                Some(next) => next,
                None => return Err(last.unwrap_or_else(|| endpoints.none_left())),
            };
        } else {
            let failure = Failure::of(&err);
            endpoints.report(&picked, Some((&err, failure)));
            let labelled = endpoints.label(&picked, err, failure);
            let allowed = match call.retries() {
                Some(retries) => retried < retries,
                // Without a policy, a direct channel does not retry; a balanced channel fails
                // over while endpoints and the budget last.
                None => E::MOVES_ON,
            };
            if !allowed
                || !failure.may_retry(call.idempotent)
                || !endpoints.budget().is_none_or(|budget| budget.withdraw())
            {
                return Err(labelled);
            }
            retried += 1;
            match &call.policy {
                Some(state) => policy_metrics::retried(
                    state.service.clone(),
                    state.method.clone(),
                    retried,
                    &labelled,
                ),
                None => {
                    tracing::debug!(err = %labelled, method = %call.method, "retrying on another endpoint")
                }
            }
            if E::MOVES_ON {
                tried.push(picked);
                last = Some(labelled);
                picked = match endpoints.pick(call, &tried) {
                    Some(next) => next,
                    None => return Err(last.unwrap_or_else(|| endpoints.none_left())),
                };
            } else {
                if let Some(deadline) = call.deadline {
                    if deadline.remaining().map_or(true, |left| left <= pause) {
                        return Err(labelled);
                    }
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_RETRY_DELAY);
                last = Some(labelled);
            }
        }
        let wire = match call.deadline {
            None => None,
            Some(deadline) => match deadline.remaining() {
                Ok(left) => Some(left),
                Err(timeout) => return Err(last.unwrap_or(timeout)),
            },
        };
        err = match endpoints.attempt(&picked, call, wire).await {
            Ok(reply) => {
                endpoints.report(&picked, None);
                return Ok(reply);
            }
            Err(err) => err,
        };
    }
}

/// Whether `err` is the refusal of the early hello a call was sent behind.
fn refused_early(err: &Error) -> bool {
    matches!(
        err,
        Error::Negotiation(NegotiationError::EarlyCallsRefused { .. })
    )
}
