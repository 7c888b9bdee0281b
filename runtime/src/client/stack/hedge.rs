//! Hedging: the attempts of a unary call to an `#[idempotent]` method, on endpoints that hedge
//! (a balanced channel). The first attempt goes out; each time the call has gone unanswered
//! for the plan's delay, a copy goes to an endpoint it has not tried, up to the plan's
//! number of attempts. The first answer wins; dropping the other attempts cancels them on
//! their servers.
//!
//! Each copy spends the same budget as a retry, and is sent only while the call's deadline
//! lasts and an endpoint it has not tried is in rotation. An attempt that was still waiting
//! when a later copy was answered is reported slow, so that a server that stopped answering
//! leaves rotation after a few such calls (see the balanced channel's outlier ejection). An
//! attempt that fails while others still run leaves the call to them; when the last one
//! fails, what follows is the retry loop's ([`Hedged::Failed`]), with the endpoints the
//! other attempts went to counted as tried.

use std::pin::pin;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tower::retry::budget::Budget;

use super::call::Call;
use super::endpoints::{Endpoints, HedgePlan};
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

/// The attempts sent so far, in the order they went out (the first is number 0).
struct Sent<P> {
    picked: Vec<P>,
    started: Vec<Instant>,
    /// The attempt ended (it failed; an answer ends the call).
    ended: Vec<bool>,
}

impl<P: Clone> Sent<P> {
    fn push(&mut self, picked: P, started: Instant) -> usize {
        self.picked.push(picked);
        self.started.push(started);
        self.ended.push(false);
        self.picked.len() - 1
    }
}

/// Sends `call` to `first`, and copies of it to other endpoints as `plan` says.
pub(super) async fn send_hedged<E: Endpoints>(
    endpoints: &E,
    call: &Call<'_>,
    first: E::Picked,
    wire: Option<Duration>,
    plan: HedgePlan,
) -> Hedged<E::Picked> {
    let started = Instant::now();
    let mut first_attempt = pin!(async { (0, endpoints.attempt(&first, call, wire).await) });
    // Most calls are answered within the delay: they take this path, which allocates nothing.
    let waited = tokio::select! {
        biased;
        (_, result) = &mut first_attempt => Some(result),
        () = tokio::time::sleep(plan.delay) => None,
    };
    if let Some(result) = waited {
        return settle(endpoints, call, &first, result, started);
    }

    // Slow: the race, with copies in `racing` beside the first attempt.
    let capacity = plan.attempts as usize;
    let mut sent = Sent {
        picked: Vec::with_capacity(capacity),
        started: Vec::with_capacity(capacity),
        ended: Vec::with_capacity(capacity),
    };
    sent.push(first.clone(), started);
    let mut first_running = true;
    let mut racing = FuturesUnordered::new();
    let mut copies_left = plan.attempts.saturating_sub(1);
    let mut next_copy = Instant::now();

    // An attempt is always running here: the call returns when its last attempt ends.
    loop {
        let (index, result) = tokio::select! {
            biased;
            ended = &mut first_attempt, if first_running => {
                first_running = false;
                ended
            }
            Some(ended) = racing.next() => ended,
            () = tokio::time::sleep_until(next_copy), if copies_left > 0 => {
                copies_left -= 1;
                match another(endpoints, call, &sent.picked) {
                    Some((picked, wire)) => {
                        tracing::debug!(
                            method = %call.method,
                            delay = ?plan.delay,
                            attempt = sent.picked.len() + 1,
                            "no answer yet; hedging on another endpoint"
                        );
                        endpoints.report_hedge(&picked);
                        let index = sent.push(picked.clone(), Instant::now());
                        racing.push(attempt(endpoints, call, picked, wire, index));
                        next_copy = Instant::now() + plan.delay;
                    }
                    None => copies_left = 0,
                }
                continue;
            }
        };
        match result {
            Ok(reply) => {
                endpoints.report(&sent.picked[index], None);
                // The attempts sent before this one and still waiting lost to a later copy.
                for earlier in 0..index {
                    if !sent.ended[earlier] {
                        endpoints.report_slow(&sent.picked[earlier]);
                    }
                }
                endpoints.observe(call, sent.started[index].elapsed());
                return Hedged::Answered(reply);
            }
            Err(err) if !first_running && racing.is_empty() => {
                let picked = sent.picked[index].clone();
                let tried = (0..sent.picked.len())
                    .filter(|&other| other != index)
                    .map(|other| sent.picked[other].clone())
                    .collect();
                return Hedged::Failed { picked, err, tried };
            }
            Err(err) => {
                // Other attempts still run: the call is theirs.
                endpoints.report(&sent.picked[index], Some((&err, Failure::of(&err))));
                sent.ended[index] = true;
            }
        }
    }
}

/// The one attempt ended before a copy was sent: as the retry loop would take it.
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

/// One attempt of the call, numbered `index` in the order they went out.
async fn attempt<'a, E: Endpoints>(
    endpoints: &'a E,
    call: &'a Call<'a>,
    picked: E::Picked,
    wire: Option<Duration>,
    index: usize,
) -> (usize, Result<Reply, Error>) {
    (index, endpoints.attempt(&picked, call, wire).await)
}

/// The endpoint and wire deadline of another copy, if the deadline, the rotation (none of
/// `tried`) and the budget allow one.
fn another<E: Endpoints>(
    endpoints: &E,
    call: &Call<'_>,
    tried: &[E::Picked],
) -> Option<(E::Picked, Option<Duration>)> {
    let wire = match call.deadline.map(|deadline| deadline.remaining()) {
        None => None,
        Some(Ok(left)) => Some(left),
        Some(Err(_)) => return None,
    };
    let picked = endpoints.pick(call, tried)?;
    endpoints
        .budget()
        .is_none_or(|budget| budget.withdraw())
        .then_some((picked, wire))
}
