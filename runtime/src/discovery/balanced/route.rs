//! The balancing and failover stage of a balanced channel's call path: a tower service under
//! the channel's own layers (run once per call) and over each endpoint channel's layers (run
//! once per attempt). It picks an endpoint, sends the call through that endpoint's channel,
//! and on a failure that allows it sends it again elsewhere, within the call's deadline and
//! the retry budget.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;
use tower::retry::budget::Budget;

use super::pool::{InFlight, Inner, Slot};
use crate::client::{Channel, Reply, Request};
use crate::codec::Codec;
use crate::error::{Error, Failure, Outcome};
use crate::policy::metrics as policy_metrics;

/// The innermost service of a balanced channel's own layers: balancing and failover.
#[derive(Clone)]
pub(super) struct Route {
    pub(super) inner: Arc<Inner>,
}

type RouteFuture = Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send>>;

impl tower::Service<Request> for Route {
    type Response = Reply;
    type Error = Error;
    type Future = RouteFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> RouteFuture {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.route(request).await })
    }
}

impl Inner {
    /// The failover loop of every call, one-way calls included: pick an endpoint, send, and on
    /// a failure that allows it, send again elsewhere within the deadline and the retry
    /// budget.
    pub(super) async fn route(self: &Arc<Self>, request: Request) -> Result<Reply, Error> {
        let timeout = request.timeout();
        let deadline = timeout.map(|t| Instant::now() + t);
        self.budget.deposit();
        let mut tried: Vec<Arc<Slot>> = Vec::new();
        let mut last: Option<Error> = None;
        // Attempts sent again after a failure (endpoints skipped for an open circuit are not).
        let mut retried: u32 = 0;
        loop {
            let Some(slot) = self.pick(request.hash_key, &tried) else {
                return Err(last.unwrap_or_else(|| self.no_endpoints()));
            };
            let remaining = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(last.unwrap_or(Error::Timeout {
                            after: timeout.unwrap_or_default(),
                        }));
                    }
                    Some(left)
                }
                None => None,
            };
            let in_flight = InFlight::start(&slot);
            let result = match self.channel(&slot).await {
                Ok(channel) => {
                    // A payload in the wrong codec is this side's configuration error, not the
                    // endpoint's failure: no failover, nothing counted against it.
                    if let Some(codec) = request.raw_codec {
                        check_codec(&channel, codec)?;
                    }
                    channel.send(request.attempt(remaining)).await
                }
                Err(err) => Err(err),
            };
            drop(in_flight);
            let err = match result {
                Ok(reply) => {
                    slot.calls.fetch_add(1, Ordering::Relaxed);
                    return Ok(reply);
                }
                Err(err) => err,
            };
            if let Error::CircuitOpen { .. } = err {
                // The endpoint's breaker is open for this method: it is out of picking for
                // the call, which goes to the next endpoint. Not a failure of the endpoint,
                // not a retry (it never left this process), so neither is counted.
                tried.push(slot);
                last = Some(err);
                continue;
            }
            let failure = Failure::of(&err);
            if !failure.unreachable()
                && !failure.may_retry(true)
                && failure.outcome != Outcome::MaybeRan
            {
                // The server answered (an error of the call itself): nothing to fail over.
                slot.calls.fetch_add(1, Ordering::Relaxed);
                return Err(err);
            }
            slot.failures.fetch_add(1, Ordering::Relaxed);
            if failure.unreachable() {
                self.eject(&slot, &err);
            }
            let err = Error::Endpoint {
                endpoint: slot.address.clone(),
                cause: Box::new(err),
            };
            // A policy's `retries` bound the failovers; without one, the endpoints and the
            // budget do.
            let policy = request.policy.as_deref();
            let allowed = policy.and_then(|state| state.policy.retries());
            if allowed.is_some_and(|allowed| retried >= allowed)
                || !failure.may_retry(request.is_idempotent())
                || !self.budget.withdraw()
            {
                return Err(err);
            }
            retried += 1;
            match policy {
                Some(state) => policy_metrics::retried(state.declared, retried, &err),
                None => {
                    tracing::debug!(%err, service = %self.service, "retrying on another endpoint")
                }
            }
            tried.push(slot);
            last = Some(err);
        }
    }
}

/// A raw payload must be in the codec the endpoint's connection speaks.
fn check_codec(channel: &Channel, codec: Codec) -> Result<(), Error> {
    if channel.codec() == codec {
        return Ok(());
    }
    Err(Error::Config(format!(
        "the arguments are encoded in {codec} but the endpoint's connection uses {}; build \
         the balanced channel with `.codec(Codec::{codec:?})` alone",
        channel.codec()
    )))
}
