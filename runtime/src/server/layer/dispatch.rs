//! The innermost service: hands the call to its service (found once, when the call was read),
//! whose handler decodes the arguments, runs, and encodes its reply or its stream's items,
//! with the call's context current while it is polled.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures::future::Either;
use tower::Service;

use crate::context::InCall;
use crate::error::CallError;
use crate::layers::next::{Next, NextFuture};
use crate::server::handler::unknown_method;
use crate::server::request::{Reply, ReplyBody, Request};
use crate::server::router::Router;
use crate::service::ReplyFuture;

/// Runs handlers; always ready.
#[derive(Clone)]
pub(crate) struct Dispatch {
    router: Arc<Router>,
}

impl Dispatch {
    pub(crate) fn new(router: Arc<Router>) -> Self {
        Self { router }
    }
}

/// A handler's future, with its call's context current while it is polled; a stream's
/// context goes on with its items, current while they are produced.
pub(crate) struct DispatchFuture(InCall<ReplyFuture>);

impl Future for DispatchFuture {
    type Output = Result<Reply, CallError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut reply = ready!(Pin::new(&mut this.0).poll(cx));
        if let Ok(Reply {
            body: ReplyBody::Stream(items),
            ..
        }) = &mut reply
        {
            if let Some(call) = this.0.take_context() {
                items.run_in(call);
            }
        }
        Poll::Ready(reply)
    }
}

impl Service<Request> for Dispatch {
    type Response = Reply;
    type Error = CallError;
    type Future = DispatchFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, request: Request) -> DispatchFuture {
        self.dispatch(request)
    }
}

impl Dispatch {
    /// Hands the call to its service, found when the call was read (every shape alike).
    #[inline]
    fn dispatch(&self, request: Request) -> DispatchFuture {
        let Request {
            context,
            codec,
            payload,
            open,
            service,
        } = request;
        let method = context.method_id();
        let reply = match self.router.service(service) {
            Some(service) => service.call(method, codec, payload, open.unwrap_or_default()),
            None => unknown_method(method),
        };
        DispatchFuture(context.around(reply))
    }
}

/// What the built-in layers wrap: the dispatcher itself, or the user's layers around it.
#[derive(Clone)]
pub(crate) enum Core {
    Direct(Dispatch),
    Layered(Next<Request, Reply>),
}

/// A call through the user's layers, its error classified by [`CallError::from_layer`]. A
/// named future rather than `MapErr` with a function pointer, whose higher-ranked type the
/// compiler cannot prove `Send` through the generic code that spawns a call's task.
pub(crate) struct LayeredFuture(NextFuture<Reply>);

impl std::future::Future for LayeredFuture {
    type Output = Result<Reply, CallError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Reply, CallError>> {
        self.0.as_mut().poll(cx).map_err(CallError::from_layer)
    }
}

impl Service<Request> for Core {
    type Response = Reply;
    type Error = CallError;
    type Future = Either<DispatchFuture, LayeredFuture>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        // The user's layers are awaited for readiness inside the call's future.
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        self.call_ref(request)
    }
}

impl Core {
    #[inline]
    fn call_ref(&self, request: Request) -> <Self as Service<Request>>::Future {
        match self {
            Self::Direct(dispatch) => Either::Left(dispatch.dispatch(request)),
            Self::Layered(layers) => Either::Right(LayeredFuture(layers.call_shared(request))),
        }
    }
}

/// Called through a shared reference, like the built-in layers around it.
impl Service<Request> for &Core {
    type Response = Reply;
    type Error = CallError;
    type Future = <Core as Service<Request>>::Future;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        self.call_ref(request)
    }
}
