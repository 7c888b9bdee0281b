//! [`BalancedChannel`]: one multiplexed channel per live endpoint of a service, a
//! [`Balance`](crate::discovery::Balance) policy over them, passive and active health
//! checks, and failover, as one stage of the call path.
//!
//! Layout: `handle.rs` is the handle and its call surface, which turns every call into one
//! `Request`; `builder.rs` the options and `discover`; `route.rs` the balancing and failover
//! stage (a tower service under the channel's own layers; what a failed attempt means is
//! `client/failure.rs`, shared with direct channels' retries); `pool.rs` the endpoints and their connections; `eject.rs` ejection and
//! probing; `health_check.rs` the active health checks; `follow.rs` following the registry;
//! `stream.rs` server streams, on one endpoint each.
//! This module only declares and re-exports.

mod builder;
mod eject;
mod follow;
mod handle;
mod health_check;
mod pool;
mod route;
mod stream;

pub use builder::{
    BalancedChannelBuilder, DEFAULT_MAX_PROBE_BACKOFF, DEFAULT_MIN_RETRIES_PER_SECOND,
    DEFAULT_PROBE_BACKOFF, DEFAULT_RETRY_RATIO,
};
pub use handle::BalancedChannel;
pub use pool::EndpointStats;
