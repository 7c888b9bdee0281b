//! Server streams through a balanced channel: one endpoint is picked for the whole stream.
//!
//! A stream fails over only while no endpoint has been reached (the picked endpoint could not
//! be dialled): once its Open is on the way, items may reach the caller, and sending the
//! stream again elsewhere could repeat them. A stream does not go down the call path's tower
//! stack (its layers see one request and one reply).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::handle::BalancedChannel;
use crate::client::{Channel, ItemStream};
use crate::codec::WireMessage;
use crate::error::Error;
use crate::method::MethodId;
use crate::policy::declared::DeclaredPolicy;
use crate::stream::ItemMessage;
use futures::Stream;

impl BalancedChannel {
    /// Opens a server stream of `method` on one endpoint, chosen by the channel's balancing
    /// policy (and its hash key, if the handle has one), under the method's policy deadline
    /// (see [`Channel::open_stream_with_policy`](crate::Channel::open_stream_with_policy)).
    /// An endpoint that cannot be dialled is ejected and the next one tried; once the stream
    /// is open on an endpoint, it stays there.
    pub async fn open_stream_with_policy<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> Result<ItemStream<M::Item>, Error> {
        let channel = self.stream_endpoint().await?;
        let timeout = channel.stream_timeout(method, declared, self.timeout);
        channel
            .open_stream_carrying::<A, M>(method, args, timeout, self.metadata.as_deref())
            .await
    }

    /// Like [`open_stream_with_policy`](Self::open_stream_with_policy), for a method that
    /// takes an upload (see
    /// [`Channel::open_upload_with_policy`](crate::Channel::open_upload_with_policy)): the
    /// whole call, upload included, goes to one endpoint.
    pub async fn open_upload_with_policy<A, U, M, S>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
        items: S,
    ) -> Result<ItemStream<M::Item>, Error>
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        let channel = self.stream_endpoint().await?;
        let timeout = channel.stream_timeout(method, declared, self.timeout);
        let metadata = self.metadata.as_deref();
        channel
            .open_upload_carrying::<A, U, M, S>(method, args, items, timeout, metadata)
            .await
    }

    /// The connection of the endpoint a stream call goes to: the next one the balancing
    /// policy picks that can be dialled (one that cannot is ejected, and the next tried).
    async fn stream_endpoint(&self) -> Result<Channel, Error> {
        let mut tried = Vec::new();
        let mut last = None;
        loop {
            let Some(slot) = self.inner.pick(self.hash_key, &tried) else {
                return Err(last.unwrap_or_else(|| self.inner.no_endpoints()));
            };
            match self.inner.channel(&slot).await {
                Ok(channel) => {
                    slot.calls.fetch_add(1, Ordering::Relaxed);
                    return Ok(channel);
                }
                Err(err) => {
                    slot.failures.fetch_add(1, Ordering::Relaxed);
                    self.inner.eject(&slot, &err);
                    tried.push(Arc::clone(&slot));
                    last = Some(err);
                }
            }
        }
    }
}
