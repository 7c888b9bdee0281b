//! The per-server limit of calls in flight as a layer: a call beyond it fails at once with
//! [`CallError::Overloaded`] (load shedding, not queueing); an admitted call holds its
//! admission until its future completes or is dropped.

use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::Either;
use tower::{Layer, Service};

use crate::error::CallError;
use crate::limit::Limit;
use crate::server::request::{Reply, Request};

/// The server's calls in flight, counted against `max_in_flight`: the one limiter of both
/// sides ([`Limit`]), with a permit that lives as long as the call's future.
pub(crate) type CallBudget = Limit;

use crate::server::request::Admission;

/// Adds [`InFlightLimit`] with the server's budget.
#[derive(Clone)]
pub(crate) struct InFlightLimitLayer {
    calls: Arc<CallBudget>,
}

impl InFlightLimitLayer {
    pub(crate) fn new(calls: Arc<CallBudget>) -> Self {
        Self { calls }
    }
}

impl<S> Layer<S> for InFlightLimitLayer {
    type Service = InFlightLimit<S>;

    fn layer(&self, inner: S) -> InFlightLimit<S> {
        InFlightLimit {
            calls: Arc::clone(&self.calls),
            inner,
        }
    }
}

/// Refuses calls beyond the limit.
#[derive(Clone)]
pub(crate) struct InFlightLimit<S> {
    calls: Arc<CallBudget>,
    inner: S,
}

impl<S> Service<Request> for InFlightLimit<S>
where
    S: Service<Request, Response = Reply>,
    S::Error: From<CallError>,
{
    type Response = Reply;
    type Error = S::Error;
    type Future = Either<Ready<Result<Reply, S::Error>>, Admitted<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        match admit(&self.calls, &request) {
            Ok(permit) => Either::Right(Admitted {
                permit: Some(permit),
                inner: self.inner.call(request),
            }),
            Err(error) => Either::Left(ready(Err(error.into()))),
        }
    }
}

/// Called through a shared reference, like [`Authorize`](super::authorize::Authorize).
impl<'a, S> Service<Request> for &'a InFlightLimit<S>
where
    &'a S: Service<Request, Response = Reply>,
    <&'a S as Service<Request>>::Error: From<CallError>,
{
    type Response = Reply;
    type Error = <&'a S as Service<Request>>::Error;
    type Future =
        Either<Ready<Result<Reply, Self::Error>>, Admitted<<&'a S as Service<Request>>::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        (&mut &self.inner).poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        match admit(&self.calls, &request) {
            Ok(permit) => Either::Right(Admitted {
                permit: Some(permit),
                inner: (&mut &self.inner).call(request),
            }),
            Err(error) => Either::Left(ready(Err(error.into()))),
        }
    }
}

/// An admission for one more call, or the refusal.
#[inline]
fn admit(calls: &Arc<CallBudget>, request: &Request) -> Result<Admission, CallError> {
    calls.try_acquire_owned().ok_or_else(|| {
        tracing::warn!(method = %request.method_id(), "server at max_in_flight; refusing a call");
        CallError::Overloaded(
            "the server is at its limit of calls in flight; retry later".to_owned(),
        )
    })
}

pin_project_lite::pin_project! {
    /// An admitted call: the inner future, holding its admission until it completes.
    pub(crate) struct Admitted<F> {
        #[pin]
        inner: F,
        permit: Option<Admission>,
    }
}

impl<F, E> Future for Admitted<F>
where
    F: Future<Output = Result<Reply, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let output = std::task::ready!(this.inner.poll(cx));
        let permit = this.permit.take();
        // An opened stream keeps its place for as long as it is open; a unary call's ends
        // here.
        Poll::Ready(output.map(|mut reply| {
            if reply.is_stream() {
                reply.admission = permit;
            }
            reply
        }))
    }
}
