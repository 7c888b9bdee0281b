//! The innermost service of an endpoint's layers: what a layer added with
//! [`ChannelBuilder::layer`](crate::ChannelBuilder::layer) calls on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::link::Link;
use crate::client::request::{Reply, Request};
use crate::error::Error;

/// Sends a request on the endpoint's current connection (dialling again when it broke) and
/// waits for the reply.
#[derive(Clone)]
pub(super) struct Connector {
    pub(super) link: Arc<Link>,
}

type ConnectorFuture = Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send>>;

impl tower::Service<Request> for Connector {
    type Response = Reply;
    type Error = Error;
    type Future = ConnectorFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> ConnectorFuture {
        let link = Arc::clone(&self.link);
        Box::pin(async move {
            // What is left of the deadline a layer may have moved.
            let wire = match request.deadline {
                Some(deadline) => Some(deadline.remaining()?),
                None => None,
            };
            link.send(&request.as_call(), wire).await
        })
    }
}
