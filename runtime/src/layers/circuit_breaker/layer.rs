//! [`CircuitBreakerLayer`] and its service [`CircuitBreaker`]: one circuit per method, shared
//! by every clone of the service, consulted before each call and fed with its outcome.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::time::Instant;
use tower::{Layer, Service};

use super::config::{CircuitBreakerConfig, CircuitBreakerConfigError};
use super::failure::counts_as_failure;
use super::metrics;
use super::state::{Admission, MethodCircuit, Outcome, Ticket, Transition};
use crate::client::{Reply, Request};
use crate::error::{BoxError, Error};
use crate::method::MethodId;

/// A tower layer for a channel ([`ChannelBuilder::layer`](crate::ChannelBuilder::layer)) that
/// fails the calls of a method at once, without sending them, while too many of its recent
/// calls failed, and tests it again with a few trial calls after a while.
///
/// Each method has its own circuit (closed, open, half-open; see [`CircuitBreakerConfig`] for
/// when it opens and closes), so one broken method does not take the others down. An open
/// circuit fails a call with [`Error::CircuitOpen`] without calling the layers inside it or
/// the connection. [`counts_as_failure`](super::counts_as_failure) says which errors count.
///
/// Every service this layer builds has circuits of its own, shared by its clones. Where the
/// layer goes decides what a circuit guards:
/// - in a [`Channel`](crate::Channel)'s layers, or in a balanced channel's endpoint options
///   (`BalancedChannel::builder().channel(Channel::builder().layer(..))`): one method on one
///   endpoint, per attempt. Its [`Error::CircuitOpen`] names the endpoint, and a balanced
///   channel sends the call to another endpoint, so a failing endpoint leaves the rotation
///   for that method only;
/// - in a balanced channel's own layers
///   ([`BalancedChannelBuilder::layer`](crate::discovery::BalancedChannelBuilder::layer)):
///   one method of the whole service, per call, after failover has done what it could.
///
/// ```no_run
/// use wirecall_runtime::discovery::BalancedChannel;
/// use wirecall_runtime::layers::{CircuitBreakerConfig, CircuitBreakerLayer};
/// use wirecall_runtime::Channel;
///
/// # fn run() -> Result<(), wirecall_runtime::Error> {
/// let breaker = CircuitBreakerLayer::new(CircuitBreakerConfig::default().minimum_calls(10))?;
/// let builder = BalancedChannel::builder().channel(Channel::builder().layer(breaker));
/// # let _ = builder;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct CircuitBreakerLayer {
    config: Arc<CircuitBreakerConfig>,
}

impl CircuitBreakerLayer {
    /// A breaker with `config`, once its settings are checked.
    pub fn new(config: CircuitBreakerConfig) -> Result<Self, CircuitBreakerConfigError> {
        config.validate()?;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The breaker's settings.
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.config
    }
}

impl<S> Layer<S> for CircuitBreakerLayer {
    type Service = CircuitBreaker<S>;

    fn layer(&self, inner: S) -> CircuitBreaker<S> {
        CircuitBreaker {
            inner,
            circuits: Arc::new(Circuits {
                config: Arc::clone(&self.config),
                by_method: Mutex::new(HashMap::new()),
            }),
        }
    }
}

/// The service of a [`CircuitBreakerLayer`] around `S`. Clones share its circuits.
#[derive(Clone)]
pub struct CircuitBreaker<S> {
    inner: S,
    circuits: Arc<Circuits>,
}

impl<S> fmt::Debug for CircuitBreaker<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("config", &self.circuits.config)
            .finish_non_exhaustive()
    }
}

/// The future of a call through a [`CircuitBreaker`].
pub type CircuitBreakerFuture = Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send>>;

impl<S> Service<Request> for CircuitBreaker<S>
where
    S: Service<Request, Response = Reply>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Reply;
    type Error = Error;
    type Future = CircuitBreakerFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.inner
            .poll_ready(cx)
            .map_err(|err| Error::from_layer(err.into()))
    }

    fn call(&mut self, request: Request) -> CircuitBreakerFuture {
        let method = request.method_id();
        let ticket = match self.circuits.admit(method) {
            Admission::Admitted(ticket) => ticket,
            Admission::Rejected { retry_after } => {
                return Box::pin(std::future::ready(Err(Error::CircuitOpen {
                    method,
                    // The channel around the layers knows the endpoint and names it.
                    endpoint: None,
                    retry_after,
                })));
            }
        };
        let pending = PendingOutcome {
            circuits: Arc::clone(&self.circuits),
            method,
            ticket: Some(ticket),
        };
        let call = self.inner.call(request);
        Box::pin(async move {
            let result = call.await.map_err(|err| Error::from_layer(err.into()));
            let outcome = match &result {
                Ok(_) => Outcome::Success,
                Err(err) if counts_as_failure(err) => Outcome::Failure,
                Err(_) => Outcome::Ignored,
            };
            pending.finish(outcome);
            result
        })
    }
}

/// The circuits of one breaker service, by method. One lock for all methods: it is held for a
/// few comparisons per call, never across an await.
struct Circuits {
    config: Arc<CircuitBreakerConfig>,
    by_method: Mutex<HashMap<MethodId, MethodCircuit>>,
}

impl Circuits {
    fn lock(&self) -> MutexGuard<'_, HashMap<MethodId, MethodCircuit>> {
        // The map stays consistent if a holder panicked: every update is one assignment.
        self.by_method.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn admit(&self, method: MethodId) -> Admission {
        let now = Instant::now();
        let (admission, transition) = self
            .lock()
            .entry(method)
            .or_insert_with(|| MethodCircuit::new(now, &self.config))
            .admit(now, &self.config);
        report(method, transition);
        admission
    }

    fn record(&self, method: MethodId, ticket: Ticket, outcome: Outcome) {
        let now = Instant::now();
        let transition = self
            .lock()
            .get_mut(&method)
            .and_then(|circuit| circuit.record(ticket, outcome, now, &self.config));
        report(method, transition);
    }
}

impl Drop for Circuits {
    fn drop(&mut self) {
        for (method, circuit) in self.lock().iter() {
            metrics::circuit_dropped(*method, circuit.state());
        }
    }
}

/// Logs and counts a change of state, outside the lock.
fn report(method: MethodId, transition: Option<Transition>) {
    if let Some(transition) = transition {
        metrics::state_changed(method, transition);
    }
}

/// An admitted call whose outcome is not recorded yet. A call dropped before it ended (its
/// caller gave up) counts for nothing, but gives back its place if it was a trial call:
/// otherwise a half-open circuit whose trials were all cancelled would stay half-open.
struct PendingOutcome {
    circuits: Arc<Circuits>,
    method: MethodId,
    ticket: Option<Ticket>,
}

impl PendingOutcome {
    fn finish(mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            self.circuits.record(self.method, ticket, outcome);
        }
    }
}

impl Drop for PendingOutcome {
    fn drop(&mut self) {
        // Ignoring a call of a closed circuit changes nothing: only trials need the lock.
        if let Some(ticket) = self.ticket.take().filter(|ticket| ticket.is_trial()) {
            self.circuits.record(self.method, ticket, Outcome::Ignored);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::client::args::{CallArgs, RawArgs};
    use crate::error::ErrorCode;
    use crate::method::method_id;

    fn request(method: MethodId) -> Request {
        Request::new(
            method,
            false,
            CallArgs::new(RawArgs(bytes::Bytes::new())),
            None,
            None,
            None,
        )
    }

    fn overloaded() -> Error {
        Error::Remote {
            code: ErrorCode::Overloaded,
            message: "busy".to_owned(),
        }
    }

    /// Opens after 2 failures, half-open after 1 ms, 1 trial.
    fn layer() -> CircuitBreakerLayer {
        let config = CircuitBreakerConfig::default()
            .minimum_calls(2)
            .open_window(Duration::from_millis(1))
            .trial_calls(1);
        CircuitBreakerLayer::new(config).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_trial_call_gives_its_place_to_the_next_call() {
        let method = method_id("S", "m");
        let circuits = layer().layer(()).circuits;
        for _ in 0..2 {
            let Admission::Admitted(ticket) = circuits.admit(method) else {
                panic!("closed");
            };
            circuits.record(method, ticket, Outcome::Failure);
        }
        assert!(matches!(circuits.admit(method), Admission::Rejected { .. }));
        tokio::time::advance(Duration::from_millis(1)).await;
        let Admission::Admitted(trial) = circuits.admit(method) else {
            panic!("half-open");
        };
        assert!(matches!(circuits.admit(method), Admission::Rejected { .. }));
        drop(PendingOutcome {
            circuits: Arc::clone(&circuits),
            method,
            ticket: Some(trial),
        });
        assert!(matches!(circuits.admit(method), Admission::Admitted(_)));
    }

    #[tokio::test]
    async fn an_open_circuit_fails_at_once_without_calling_the_inner_service() {
        let method = method_id("S", "m");
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let inner = tower::service_fn(move |_: Request| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::future::ready(Err::<Reply, _>(overloaded()))
        });
        let mut breaker = layer().layer(inner);
        for _ in 0..2 {
            let err = breaker.call(request(method)).await.unwrap_err();
            assert!(matches!(err, Error::Remote { .. }), "{err}");
        }
        let err = breaker.call(request(method)).await.unwrap_err();
        assert!(matches!(err, Error::CircuitOpen { .. }), "{err}");
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Another method has its own circuit.
        let other = method_id("S", "other");
        let err = breaker.clone().call(request(other)).await.unwrap_err();
        assert!(matches!(err, Error::Remote { .. }), "{err}");
    }
}
