//! The pool as a balanced channel's route ([`BalancedRoute`]), and as the innermost service
//! of the channel's own layers ([`Balancing`]): both send a call through the client stack's
//! retry loop over the pool's endpoints.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::pool::{abort_all, EndpointStats, Pool};
use crate::client::request::{Reply, Request};
use crate::client::stack::balanced_route::{BalancedRoute, BoxedSend};
use crate::client::stack::call::Call;
use crate::client::stack::retry;
use crate::codec::Codec;
use crate::error::Error;

impl BalancedRoute for Pool {
    fn send<'a>(&'a self, call: &'a Call<'a>) -> BoxedSend<'a, Result<Reply, Error>> {
        Box::pin(retry::send(self, call))
    }

    fn service(&self) -> &str {
        &self.service
    }

    fn codec(&self) -> Codec {
        self.open_endpoints()
            .last()
            .map(|endpoint| endpoint.link.current().codec)
            .unwrap_or_else(|| self.options.first_codec())
    }

    fn protocol_version(&self) -> Option<u8> {
        self.open_endpoints()
            .last()
            .map(|endpoint| endpoint.link.current().version)
    }

    fn endpoints(&self) -> Vec<EndpointStats> {
        self.state()
            .slots
            .iter()
            .map(|slot| EndpointStats {
                address: slot.address.clone(),
                weight: slot.weight.load(Ordering::Relaxed),
                in_flight: slot.in_flight.load(Ordering::Relaxed),
                calls: slot.calls.load(Ordering::Relaxed),
                failures: slot.failures.load(Ordering::Relaxed),
                ejected: slot.ejected.load(Ordering::Relaxed),
                hedges: slot.hedges.load(Ordering::Relaxed),
            })
            .collect()
    }

    fn in_flight(&self) -> usize {
        self.state()
            .slots
            .iter()
            .map(|slot| slot.in_flight.load(Ordering::Relaxed))
            .sum()
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.open_endpoints().is_empty()
    }

    /// Stops following the registry, and closes every endpoint's connection as
    /// `Channel::close` says.
    fn close(&self) -> BoxedSend<'_, ()> {
        Box::pin(async move {
            if self.closed.swap(true, Ordering::AcqRel) {
                return;
            }
            abort_all(&mut self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
            let endpoints = self.open_endpoints();
            futures::future::join_all(endpoints.iter().map(|endpoint| endpoint.close())).await;
        })
    }
}

/// The innermost service of a balanced channel's own layers: the retry loop over its
/// endpoints.
#[derive(Clone)]
pub(super) struct Balancing {
    pub(super) pool: Arc<Pool>,
}

impl tower::Service<Request> for Balancing {
    type Response = Reply;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let pool = Arc::clone(&self.pool);
        // Through the route's own boxed send: the retry loop over the pool is compiled once.
        Box::pin(async move { pool.send(&request.as_call()).await })
    }
}
