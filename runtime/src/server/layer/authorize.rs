//! The authorisation hook as a layer: a call the hook refuses fails with
//! [`CallError::PermissionDenied`] before the handler (or any inner layer) runs.

use std::future::{ready, Ready};
use std::task::{Context, Poll};

use futures::future::Either;
use tower::{Layer, Service};

use crate::error::CallError;
use crate::server::identity::{Authorize as Hook, CallTarget};
use crate::server::request::{Reply, Request};

/// Adds [`Authorize`]; without a hook it lets every call through.
#[derive(Clone)]
pub(crate) struct AuthorizeLayer {
    hook: Option<Hook>,
}

impl AuthorizeLayer {
    pub(crate) fn new(hook: Option<Hook>) -> Self {
        Self { hook }
    }
}

impl<S> Layer<S> for AuthorizeLayer {
    type Service = Authorize<S>;

    fn layer(&self, inner: S) -> Authorize<S> {
        Authorize {
            hook: self.hook.clone(),
            inner,
        }
    }
}

/// Asks the hook about every call before passing it on.
#[derive(Clone)]
pub(crate) struct Authorize<S> {
    hook: Option<Hook>,
    inner: S,
}

impl<S> Service<Request> for Authorize<S>
where
    S: Service<Request, Response = Reply>,
    S::Error: From<CallError>,
{
    type Response = Reply;
    type Error = S::Error;
    type Future = Either<Ready<Result<Reply, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        match check(self.hook.as_ref(), &request) {
            Ok(()) => Either::Right(self.inner.call(request)),
            Err(error) => Either::Left(ready(Err(error.into()))),
        }
    }
}

/// The server calls its pipeline through a shared reference: no clone (and no reference
/// count touched) per call.
impl<'a, S> Service<Request> for &'a Authorize<S>
where
    &'a S: Service<Request, Response = Reply>,
    <&'a S as Service<Request>>::Error: From<CallError>,
{
    type Response = Reply;
    type Error = <&'a S as Service<Request>>::Error;
    type Future = Either<Ready<Result<Reply, Self::Error>>, <&'a S as Service<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        (&mut &self.inner).poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        match check(self.hook.as_ref(), &request) {
            Ok(()) => Either::Right((&mut &self.inner).call(request)),
            Err(error) => Either::Left(ready(Err(error.into()))),
        }
    }
}

/// Asks the hook, if there is one, about `request`.
#[inline]
fn check(hook: Option<&Hook>, request: &Request) -> Result<(), CallError> {
    let Some(hook) = hook else {
        return Ok(());
    };
    let target = CallTarget {
        service: request.service(),
        method: request.method_name(),
        method_id: request.method_id(),
    };
    if hook(request.peer(), &target) {
        return Ok(());
    }
    tracing::debug!(
        method = %target.method_id,
        peer = ?request.peer().peer_addr,
        "call refused by the authorisation hook"
    );
    Err(CallError::PermissionDenied(format!(
        "this caller may not call {}.{}",
        target.service, target.method
    )))
}
