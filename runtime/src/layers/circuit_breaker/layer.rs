//! [`CircuitBreakerLayer`] and its service [`CircuitBreaker`]: one circuit per method, shared
//! by every clone of the service, consulted before each call and fed with its outcome.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{Layer, Service};

use super::circuits::Circuits;
use super::config::{CircuitBreakerConfig, CircuitBreakerConfigError};
use crate::client::request::{Reply, Request};
use crate::error::{BoxError, Error};

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
///   (`Channel::balanced().channel(Channel::builder().layer(..))`): one method on one
///   endpoint, per attempt. Its [`Error::CircuitOpen`] names the endpoint, and a balanced
///   channel sends the call to another endpoint, so a failing endpoint leaves the rotation
///   for that method only;
/// - in a balanced channel's own layers
///   ([`BalancedChannelBuilder::layer`](crate::discovery::BalancedChannelBuilder::layer)):
///   one method of the whole service, per call, after failover has done what it could.
///
/// ```no_run
/// use wirecall_runtime::layers::{CircuitBreakerConfig, CircuitBreakerLayer};
/// use wirecall_runtime::Channel;
///
/// # fn run() -> Result<(), wirecall_runtime::Error> {
/// let breaker = CircuitBreakerLayer::new(CircuitBreakerConfig::default().minimum_calls(10))?;
/// let builder = Channel::balanced().channel(Channel::builder().layer(breaker));
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
            config: Arc::clone(&self.config),
            // The channel around the layers knows the endpoint and names it in the error.
            circuits: Circuits::new(None),
        }
    }
}

/// The service of a [`CircuitBreakerLayer`] around `S`. Clones share its circuits.
#[derive(Clone)]
pub struct CircuitBreaker<S> {
    inner: S,
    config: Arc<CircuitBreakerConfig>,
    circuits: Arc<Circuits>,
}

impl<S> fmt::Debug for CircuitBreaker<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("config", &self.config)
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
        let pending = match self.circuits.admit(request.method_id(), &self.config) {
            Ok(pending) => pending,
            Err(open) => return Box::pin(std::future::ready(Err(open))),
        };
        let call = self.inner.call(request);
        Box::pin(async move {
            let result = call.await.map_err(|err| Error::from_layer(err.into()));
            pending.finish(&result);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::client::args::{CallArgs, RawArgs};
    use crate::error::ErrorCode;
    use crate::method::method_id;
    use crate::method::MethodId;

    fn request(method: MethodId) -> Request {
        Request {
            method,
            kind: crate::client::stack::call::Kind::Unary,
            idempotent: false,
            deadline: None,
            metadata: None,
            trace: None,
            hash_key: None,
            uncompressed: false,
            raw_codec: None,
            policy: None,
            args: CallArgs::new(RawArgs(bytes::Bytes::new())),
            upload: None,
        }
    }

    fn overloaded() -> Error {
        Error::Remote {
            code: ErrorCode::Overloaded,
            message: "busy".to_owned(),
        }
    }

    /// Opens after 2 failures.
    fn layer() -> CircuitBreakerLayer {
        let config = CircuitBreakerConfig::default()
            .minimum_calls(2)
            .open_window(Duration::from_millis(1))
            .trial_calls(1);
        CircuitBreakerLayer::new(config).unwrap()
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
