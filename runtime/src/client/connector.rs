//! The innermost service of a layered channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::channel::ChannelShared;
use super::request::{Reply, Request};
use crate::error::Error;

/// The innermost service of a layered channel: sends a request on the channel's current
/// connection (dialling again when it broke) and waits for the reply.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) shared: Arc<ChannelShared>,
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
        Box::pin(Arc::clone(&self.shared).send_request(request))
    }
}
