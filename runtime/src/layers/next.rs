//! [`Next`], the tower seam shared by both sides: a stack of type-erased layers, built once
//! around an innermost service.
//!
//! Each layer wraps a [`Next`]: a cheap, cloneable handle on one shared instance of the rest
//! of the stack. So layers that clone their inner service (tower's `AsyncFilter`, `Retry`)
//! work, and so do layers that are not `Clone` themselves (tower's `RateLimit`), which one
//! instance then serves for every connection: a rate or a concurrency limit counts every call,
//! not those of one clone.
//!
//! Nothing here runs when no layer is configured: the client and the server then call their
//! innermost service directly, without boxing.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::util::{BoxCloneSyncService, BoxService};
use tower::{Layer, Service, ServiceExt};

use crate::error::BoxError;

type Boxed<Req, Resp> = BoxService<Req, Resp, BoxError>;

type LayerFn<Req, Resp> = Arc<dyn Fn(Next<Req, Resp>) -> Boxed<Req, Resp> + Send + Sync>;

/// What a layer added with `ServerBuilder::layer` or `ChannelBuilder::layer` wraps: the rest
/// of the call pipeline (the layers added after it, then the handler or the connection).
///
/// Cheap to clone; every clone calls the same instance. It is always ready: the readiness of
/// the layers behind it is awaited inside each call's future. Layers that consult their
/// inner service's readiness (tower's `load_shed` over a `concurrency_limit`) therefore go in
/// one `tower::ServiceBuilder` passed as a single layer.
pub struct Next<Req, Resp> {
    inner: Inner<Req, Resp>,
}

enum Inner<Req, Resp> {
    /// More layers: one instance, shared by every clone.
    Shared(Arc<tokio::sync::Mutex<Boxed<Req, Resp>>>),
    /// The innermost service, always ready and cheap to clone: called without a lock.
    Innermost(BoxCloneSyncService<Req, Resp, BoxError>),
}

impl<Req, Resp> Clone for Next<Req, Resp> {
    fn clone(&self) -> Self {
        let inner = match &self.inner {
            Inner::Shared(shared) => Inner::Shared(Arc::clone(shared)),
            Inner::Innermost(service) => Inner::Innermost(service.clone()),
        };
        Self { inner }
    }
}

impl<Req, Resp> fmt::Debug for Next<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next").finish_non_exhaustive()
    }
}

/// The future of a call through [`Next`].
pub type NextFuture<Resp> = Pin<Box<dyn Future<Output = Result<Resp, BoxError>> + Send>>;

impl<Req: Send + 'static, Resp: 'static> Next<Req, Resp> {
    fn new(service: Boxed<Req, Resp>) -> Self {
        Self {
            inner: Inner::Shared(Arc::new(tokio::sync::Mutex::new(service))),
        }
    }

    /// Waits until the service behind is ready, in call order (tokio's mutex is fair), starts
    /// the call, and waits for its result.
    pub(crate) fn call_shared(&self, request: Req) -> NextFuture<Resp> {
        let shared = match &self.inner {
            Inner::Shared(shared) => Arc::clone(shared),
            Inner::Innermost(service) => return service.clone().call(request),
        };
        Box::pin(async move {
            let response = {
                let mut service = shared.lock().await;
                service.ready().await?;
                service.call(request)
            };
            response.await
        })
    }
}

impl<Req: Send + 'static, Resp: 'static> Service<Req> for Next<Req, Resp> {
    type Response = Resp;
    type Error = BoxError;
    type Future = NextFuture<Resp>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> NextFuture<Resp> {
        match &mut self.inner {
            Inner::Innermost(service) => service.call(request),
            Inner::Shared(_) => self.call_shared(request),
        }
    }
}

/// The layers added to a builder, the first added outermost (as in tower's `ServiceBuilder`).
pub(crate) struct Layers<Req, Resp> {
    stack: Vec<LayerFn<Req, Resp>>,
}

impl<Req, Resp> Default for Layers<Req, Resp> {
    fn default() -> Self {
        Self { stack: Vec::new() }
    }
}

impl<Req, Resp> Clone for Layers<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            stack: self.stack.clone(),
        }
    }
}

impl<Req, Resp> fmt::Debug for Layers<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} layer(s)", self.stack.len())
    }
}

impl<Req, Resp> Layers<Req, Resp> {
    /// Whether no layer was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }
}

impl<Req: Send + 'static, Resp: 'static> Layers<Req, Resp> {
    /// Adds `layer` inside the layers added so far.
    pub(crate) fn push<L>(&mut self, layer: L)
    where
        L: Layer<Next<Req, Resp>> + Send + Sync + 'static,
        L::Service: Service<Req, Response = Resp> + Send + 'static,
        <L::Service as Service<Req>>::Future: Send + 'static,
        <L::Service as Service<Req>>::Error: Into<BoxError>,
    {
        self.stack.push(Arc::new(move |inner| {
            BoxService::new(layer.layer(inner).map_err(Into::into))
        }));
    }

    /// The layers around `innermost`, or `None` without layers.
    pub(crate) fn wrap<S>(&self, innermost: S) -> Option<Next<Req, Resp>>
    where
        S: Service<Req, Response = Resp> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
    {
        if self.stack.is_empty() {
            return None;
        }
        let mut next = Next {
            inner: Inner::Innermost(BoxCloneSyncService::new(innermost.map_err(Into::into))),
        };
        for layer in self.stack.iter().rev() {
            next = Next::new(layer(next));
        }
        Some(next)
    }
}
