//! [`BalancedRoute`]: a balanced channel's endpoints, as its channel and stack see them.
//!
//! A trait object rather than the pool itself: only building a balanced channel names the
//! pool, so a program that never balances a channel links none of its code (the retry loop
//! over endpoints, ejection, probing, health checks). The boxed future costs a balanced call
//! nothing it did not pay before: its retry loop was boxed already.

use std::future::Future;
use std::pin::Pin;

use super::call::Call;
use crate::client::request::Reply;
use crate::codec::Codec;
use crate::discovery::balanced::pool::EndpointStats;
use crate::error::Error;

/// A boxed future borrowing its route for `'a`.
pub(crate) type BoxedSend<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a channel asks of its balanced endpoints (the discovery module's pool).
pub(crate) trait BalancedRoute: Send + Sync {
    /// Sends `call` through the retry loop over the endpoints (stages 5 to 9).
    fn send<'a>(&'a self, call: &'a Call<'a>) -> BoxedSend<'a, Result<Reply, Error>>;

    /// The service whose endpoints these are.
    fn service(&self) -> &str;

    /// The codec of the last endpoint connection opened, or the first one offered.
    fn codec(&self) -> Codec;

    /// The protocol version of the last endpoint connection opened, if any is open.
    fn protocol_version(&self) -> Option<u8>;

    /// The endpoints, with their counters.
    fn endpoints(&self) -> Vec<EndpointStats>;

    /// Calls waiting for a reply, over every endpoint.
    fn in_flight(&self) -> usize;

    /// Whether the channel was closed, or has no open endpoint connection.
    fn is_closed(&self) -> bool;

    /// Closes the channel and every endpoint's connection.
    fn close(&self) -> BoxedSend<'_, ()>;
}
