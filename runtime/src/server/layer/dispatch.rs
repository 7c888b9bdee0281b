//! The innermost service: finds the call's handler, which decodes the arguments, runs, and
//! encodes its reply, with the call's context current while it is polled.

use std::sync::Arc;
use std::task::{Context, Poll};

use std::future::Future;
use std::pin::Pin;

use futures::future::{Either, MapErr};
use futures::TryFutureExt;
use tower::Service;

use crate::context::InCall;
use crate::dispatch::unknown_method;
use crate::error::BoxError;
use crate::error::CallError;
use crate::layers::next::{Next, NextFuture};
use crate::server::request::{Reply, ReplyBody, Request};
use crate::server::router::Router;
use crate::service::ReplyFuture;
use crate::stream::outgoing::unknown_stream;
use crate::stream::OpenFuture;

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

/// A handler's future, with its context, its reply wrapped for the layers. Not futures'
/// `MapOk`, which moves its whole state (the call's context included) out when it completes.
pub(crate) enum DispatchFuture {
    /// A unary call: its reply.
    Call(InCall<ReplyFuture>),
    /// A stream call: its items, once the handler has returned them.
    Open(InCall<OpenFuture>),
}

impl Future for DispatchFuture {
    type Output = Result<Reply, CallError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Call(call) => Pin::new(call)
                .poll(cx)
                .map_ok(|frame| Reply(ReplyBody::Message(frame))),
            Self::Open(open) => Pin::new(open)
                .poll(cx)
                .map_ok(|items| Reply(ReplyBody::Stream(items))),
        }
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
    #[inline]
    fn dispatch(&self, request: Request) -> DispatchFuture {
        let Request {
            context,
            codec,
            payload,
            open,
        } = request;
        let method = context.method_id();
        let route = self.router.get(method);
        if let Some(upload) = open {
            let items = match route {
                Some(route) => route.service.open(method, codec, payload, upload),
                None => unknown_stream(method),
            };
            return DispatchFuture::Open(context.around(items));
        }
        let handler = match route {
            Some(route) => route.service.call(method, codec, payload),
            None => unknown_method(method),
        };
        DispatchFuture::Call(context.around(handler))
    }
}

/// What the built-in layers wrap: the dispatcher itself, or the user's layers around it.
#[derive(Clone)]
pub(crate) enum Core {
    Direct(Dispatch),
    Layered(Next<Request, Reply>),
}

type LayeredFuture = MapErr<NextFuture<Reply>, fn(BoxError) -> CallError>;

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
            Self::Layered(layers) => Either::Right(
                layers
                    .call_shared(request)
                    .map_err(CallError::from_layer as fn(BoxError) -> CallError),
            ),
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
