//! [`Caller`]: what a generated client calls through. A [`Channel`] is one; a
//! [`BalancedChannel`](crate::discovery::BalancedChannel) over discovered endpoints is another.

use std::future::Future;
use std::time::Duration;

use crate::client::{Channel, ItemStream};
use crate::codec::WireMessage;
use crate::error::Error;
use crate::method::MethodId;
use crate::policy::declared::DeclaredPolicy;
use crate::stream::ItemMessage;
use futures::Stream;

/// Something a generated `{Trait}Client` sends its calls through.
///
/// Generated clients are generic over it (`{Trait}Client<C = Channel>`), so a client over a
/// single [`Channel`] compiles to the same code as calling the channel directly.
pub trait Caller: Clone + Send + Sync + 'static {
    /// Calls `method` with `args` and waits for the reply (see [`Channel::call`]).
    fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send;

    /// Like [`call`](Self::call) for a method marked `#[idempotent]`: the caller may run it
    /// again (on another endpoint) when the connection it went out on fails.
    fn call_idempotent<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        self.call(method, args)
    }

    /// Calls `method` under its policy (see [`Channel::call_with_policy`]): generated
    /// clients call every request/response method through this. The default ignores the
    /// policy and calls [`call`](Self::call) or [`call_idempotent`](Self::call_idempotent):
    /// a hand-written `Caller` that wants policies overrides it.
    fn call_with_policy<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        async move {
            if declared.is_idempotent() {
                self.call_idempotent(method, args).await
            } else {
                self.call(method, args).await
            }
        }
    }

    /// Opens a server stream of `method` under its policy (see
    /// [`Channel::open_stream_with_policy`]): generated clients call this for each method
    /// that returns `Streaming<T>`. The default refuses: a hand-written `Caller` that can
    /// open streams overrides it.
    fn open_stream<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> impl Future<Output = Result<ItemStream<M::Item>, Error>> + Send {
        let _ = (declared, args);
        std::future::ready(Err(Error::Config(format!(
            "this caller cannot open streams, so {method} cannot be called through it; call \
             it through a Channel"
        ))))
    }

    /// Opens a stream of `method` that takes an upload, under its policy (see
    /// [`Channel::open_upload_with_policy`]): generated clients call this for each method
    /// with an argument of type `Streaming<T>`. The default refuses, as for
    /// [`open_stream`](Self::open_stream).
    fn open_upload<A, U, M, S>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
        items: S,
    ) -> impl Future<Output = Result<ItemStream<M::Item>, Error>> + Send
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        let _ = (declared, args, items);
        std::future::ready(Err(Error::Config(format!(
            "this caller cannot open streams, so {method} cannot be called through it; call \
             it through a Channel"
        ))))
    }

    /// Sends a one-way call (see [`Channel::notify`]).
    fn notify<A: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// A handle whose calls use `timeout` as their deadline.
    fn with_timeout(&self, timeout: Duration) -> Self;
}

impl Caller for Channel {
    fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        Channel::call(self, method, args)
    }

    fn call_with_policy<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        Channel::call_with_policy(self, method, declared, args)
    }

    fn notify<A: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        Channel::notify(self, method, args)
    }

    fn open_stream<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> impl Future<Output = Result<ItemStream<M::Item>, Error>> + Send {
        Channel::open_stream_with_policy::<A, M>(self, method, declared, args)
    }

    fn open_upload<A, U, M, S>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
        items: S,
    ) -> impl Future<Output = Result<ItemStream<M::Item>, Error>> + Send
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        Channel::open_upload_with_policy::<A, U, M, S>(self, method, declared, args, items)
    }

    fn with_timeout(&self, timeout: Duration) -> Self {
        Channel::with_timeout(self, timeout)
    }
}
