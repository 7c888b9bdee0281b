//! What a generated client calls: the [`Channel`]'s calls in the terms of a method's declared
//! messages ([`MethodMessages`]), taking the arguments as a tuple and giving back the caller's
//! value, so that each generated method is one line. Each returns the channel's own future
//! (mapped), so a generated call costs what a hand-written one does.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{FutureExt, Stream};

use super::channel::Channel;
use super::declared::Method;
use super::stream::item_stream::{single_reply, ItemStream};
use crate::error::Error;
use crate::message::{ArgValues, ArgsMessage, MethodMessages, ReplyItem, UploadItem};
use crate::stream::ItemMessage;

/// A unary call: the reply as the method returns it. A plain function over the channel's
/// future rather than an `async fn`, so that the caller's future holds the arguments once.
pub fn call<'a, M>(
    channel: &'a Channel,
    method: &'a Method,
    args: ArgValues<M>,
) -> impl Future<Output = Result<ReplyItem<M>, Error>> + Send + 'a
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage>,
{
    OutOfLine {
        call: channel
            .call_sync::<M::Args, M::Reply>(method, M::Args::from_values(args))
            .map(|reply| reply?.into_item()),
    }
}

pin_project_lite::pin_project! {
    /// A call's future, polled by a function of its own, compiled once per method, rather
    /// than inlined into each future that awaits the generated method (1 KB of binary a
    /// method in `bench/build-cost/methods.py`). One function call a poll is nothing beside
    /// a call's work (I1's client instructions did not move).
    struct OutOfLine<F> {
        #[pin]
        call: F,
    }
}

impl<F: Future> Future for OutOfLine<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().call.poll(cx)
    }
}

/// A one-way call: resolves once the request is queued.
pub fn notify<'a, M>(
    channel: &'a Channel,
    method: &'a Method,
    args: ArgValues<M>,
) -> impl Future<Output = Result<(), Error>> + Send + 'a
where
    M: MethodMessages<Args: ArgsMessage>,
{
    channel.notify_sync(method, M::Args::from_values(args))
}

/// A server stream: its items as they come.
pub fn open_stream<'a, M>(
    channel: &'a Channel,
    method: &'a Method,
    args: ArgValues<M>,
) -> impl Future<Output = Result<ItemStream<ReplyItem<M>>, Error>> + Send + 'a
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage>,
{
    channel.open_stream::<_, M::Reply>(method, M::Args::from_values(args))
}

/// A bidirectional stream: uploads `items`, yields the server's.
pub fn open_upload<'a, M, S>(
    channel: &'a Channel,
    method: &'a Method,
    args: ArgValues<M>,
    items: S,
) -> impl Future<Output = Result<ItemStream<ReplyItem<M>>, Error>> + Send + 'a
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage, Upload: ItemMessage>,
    S: Stream<Item = UploadItem<M>> + Send + 'static,
{
    channel.open_upload::<_, M::Upload, M::Reply, S>(method, M::Args::from_values(args), items)
}

/// A client stream: uploads `items`, resolves with the server's one reply.
pub async fn upload<M, S>(
    channel: &Channel,
    method: &Method,
    args: ArgValues<M>,
    items: S,
) -> Result<ReplyItem<M>, Error>
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage, Upload: ItemMessage>,
    S: Stream<Item = UploadItem<M>> + Send + 'static,
{
    single_reply(open_upload::<M, S>(channel, method, args, items).await?).await
}
