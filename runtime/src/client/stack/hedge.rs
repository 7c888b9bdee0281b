//! Hedging: the first attempt of a unary call to an `#[idempotent]` method, on endpoints that
//! hedge (a balanced channel), with a second copy sent to another endpoint if the first has
//! not answered within the method's hedge delay. The first answer wins; dropping the other
//! attempt cancels it on its server.
//!
//! A hedge spends the same budget as a retry, and is sent only while the call's deadline
//! lasts and an endpoint it has not tried is in rotation. An attempt that loses the race to
//! its hedge is reported slow, so that a server that stopped answering leaves rotation after
//! a few such calls (see the balanced channel's outlier ejection). What follows a failure is
//! the retry loop's ([`Hedged::Failed`]), with the endpoints both attempts went to counted as
//! tried.

use std::future::Future;
use std::pin::{pin, Pin};
use std::time::Duration;

use tokio::time::Instant;
use tower::retry::budget::Budget;

use super::call::Call;
use super::endpoints::Endpoints;
use crate::client::request::Reply;
use crate::error::{Error, Failure};

/// How the hedged attempts of a call ended.
pub(super) enum Hedged<P> {
    /// One of them was answered.
    Answered(Reply),
    /// The last one failed with `err` on `picked` (not yet reported); the retry loop takes
    /// over, with the endpoints in `tried` already tried.
    Failed {
        picked: P,
        err: Error,
        tried: Vec<P>,
    },
}

/// Sends `call` to `first`, and after `delay` without an answer a copy to another endpoint.
pub(super) async fn send_hedged<E: Endpoints>(
    endpoints: &E,
    call: &Call<'_>,
    first: E::Picked,
    wire: Option<Duration>,
    delay: Duration,
) -> Hedged<E::Picked> {
    let started = Instant::now();
    let mut first_attempt = pin!(endpoints.attempt(&first, call, wire));
    let waited = tokio::select! {
        biased;
        result = &mut first_attempt => Some(result),
        () = tokio::time::sleep(delay) => None,
    };
    if let Some(result) = waited {
        return settle(endpoints, call, &first, result, started);
    }

    // Slow: a copy goes to another endpoint, if the deadline, the rotation and the budget
    // allow one.
    let second = match call.deadline.map(|deadline| deadline.remaining()) {
        None => Some(None),
        Some(Ok(left)) => Some(Some(left)),
        Some(Err(_)) => None,
    }
    .and_then(|wire| Some((endpoints.pick(call, std::slice::from_ref(&first))?, wire)))
    .filter(|_| endpoints.budget().is_none_or(|budget| budget.withdraw()));
    let Some((second, second_wire)) = second else {
        let result = first_attempt.await;
        return settle(endpoints, call, &first, result, started);
    };
    tracing::debug!(method = %call.method, ?delay, "no answer yet; hedging on another endpoint");
    endpoints.report_hedge(&second);
    let hedged = Instant::now();
    let mut second_attempt = pin!(endpoints.attempt(&second, call, second_wire));

    tokio::select! {
        result = &mut first_attempt => {
            let ended = Attempt { picked: &first, started, hedge: false };
            let other = Attempt { picked: &second, started: hedged, hedge: true };
            finish_race(endpoints, call, (ended, result), (other, second_attempt)).await
        }
        result = &mut second_attempt => {
            let ended = Attempt { picked: &second, started: hedged, hedge: true };
            let other = Attempt { picked: &first, started, hedge: false };
            finish_race(endpoints, call, (ended, result), (other, first_attempt)).await
        }
    }
}

/// One of the two raced attempts: where it went, when, and whether it is the hedge.
struct Attempt<'a, P> {
    picked: &'a P,
    started: Instant,
    hedge: bool,
}

/// The first of the two raced attempts to end ended with `result`: an answer wins (a hedge
/// that wins marks the other attempt's endpoint slow); a failure leaves the call to the other
/// attempt, still running.
async fn finish_race<E: Endpoints>(
    endpoints: &E,
    call: &Call<'_>,
    (ended, result): (Attempt<'_, E::Picked>, Result<Reply, Error>),
    (other, attempt): (
        Attempt<'_, E::Picked>,
        Pin<&mut impl Future<Output = Result<Reply, Error>>>,
    ),
) -> Hedged<E::Picked> {
    match result {
        Ok(reply) => {
            endpoints.report(ended.picked, None);
            if ended.hedge {
                endpoints.report_slow(other.picked);
            }
            endpoints.observe(call, ended.started.elapsed());
            Hedged::Answered(reply)
        }
        Err(err) => {
            endpoints.report(ended.picked, Some((&err, Failure::of(&err))));
            match attempt.await {
                Ok(reply) => {
                    endpoints.report(other.picked, None);
                    endpoints.observe(call, other.started.elapsed());
                    Hedged::Answered(reply)
                }
                Err(err) => Hedged::Failed {
                    picked: other.picked.clone(),
                    err,
                    tried: vec![ended.picked.clone()],
                },
            }
        }
    }
}

/// The one attempt ended (no hedge was sent): as the retry loop would take it.
fn settle<E: Endpoints>(
    endpoints: &E,
    call: &Call<'_>,
    picked: &E::Picked,
    result: Result<Reply, Error>,
    started: Instant,
) -> Hedged<E::Picked> {
    match result {
        Ok(reply) => {
            endpoints.report(picked, None);
            endpoints.observe(call, started.elapsed());
            Hedged::Answered(reply)
        }
        Err(err) => Hedged::Failed {
            picked: picked.clone(),
            err,
            tried: Vec::new(),
        },
    }
}
