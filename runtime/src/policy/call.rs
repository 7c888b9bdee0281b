//! One call under its method's policy, at the level of the client handle: the concurrency
//! limit, the deadline, and (on a direct channel) the retries. The breaker is consulted per
//! attempt, by the channel each attempt goes out on, so that on a balanced channel each
//! endpoint has its own circuit per method.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::metrics;
use super::table::MethodState;
use crate::client::request::{Reply, Request};
use crate::error::{Error, Failure};

/// The pause before the first retry on a direct channel; it doubles each time, within the
/// deadline. A connection that just broke is dialled again by the retry, and a server that
/// refused the call as overloaded gets a moment.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(20);
/// The longest pause between two retries.
const MAX_RETRY_DELAY: Duration = Duration::from_millis(500);

/// Who sends the retries of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retries {
    /// This loop, on the same channel (a direct channel).
    Here,
    /// The balanced channel's failover, on other endpoints, limited by the policy.
    Failover,
}

/// Sends `request` under `state`'s policy through `send`, the handle's own path (its layers,
/// then its connection or its balancing).
pub(crate) async fn call<F, Fut>(
    state: &Arc<MethodState>,
    mut request: Request,
    retries: Retries,
    send: F,
) -> Result<Reply, Error>
where
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Result<Reply, Error>>,
{
    let _permit = state.admit()?;
    request.timeout = shorter(request.timeout, state.policy.timeout());
    request.idempotent = state.declared.is_idempotent();
    request.policy = Some(Arc::clone(state));
    let allowed = state.policy.retries().unwrap_or(0);
    if retries == Retries::Failover || allowed == 0 {
        return send(request).await;
    }
    let deadline = request.timeout.map(|timeout| Instant::now() + timeout);
    let mut delay = FIRST_RETRY_DELAY;
    let mut attempt = 0;
    loop {
        let remaining = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        let result = send(request.attempt(remaining)).await;
        let err = match result {
            Ok(reply) => return Ok(reply),
            Err(err) => err,
        };
        // The same channel's breaker would refuse the retry too.
        let may_retry =
            Failure::of(&err).may_retry(true) && !matches!(err, Error::CircuitOpen { .. });
        if attempt >= allowed || !may_retry {
            return Err(err);
        }
        let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left <= delay) {
            return Err(err);
        }
        attempt += 1;
        metrics::retried(state.declared, attempt, &err);
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(MAX_RETRY_DELAY);
    }
}

/// The shorter of two optional deadlines (`None`: no deadline).
pub(crate) fn shorter(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
