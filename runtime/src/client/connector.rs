//! The innermost service of a layered channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use super::channel::ChannelShared;
use super::outgoing::Outgoing;
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
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let Request {
                method,
                one_way,
                timeout,
                metadata,
                trace,
                args,
            } = request;
            let outgoing = Outgoing {
                metadata: metadata.as_deref(),
                trace,
            };
            if one_way {
                shared.send_notify(method, args, timeout, outgoing).await?;
                // No reply to decode: the codec is only what the reply says it is in.
                let codec = shared.current().codec;
                return Ok(Reply {
                    payload: Bytes::new(),
                    codec,
                });
            }
            let (payload, codec) = shared.send_call(method, args, timeout, outgoing).await?;
            Ok(Reply { payload, codec })
        })
    }
}
