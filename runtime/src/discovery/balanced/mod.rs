//! A balanced channel: a [`Channel`](crate::Channel) over every live endpoint of a service,
//! one multiplexed connection per endpoint, a [`Balance`](crate::discovery::Balance) policy
//! over them, passive and active health checks, and failover. Its calls go down the client's
//! one stack (`client/stack/`) like a direct channel's; this module is where the stack's
//! attempts go.
//!
//! Layout: `builder.rs` the options and `discover`; `pool.rs` the endpoints and their
//! connections, and how an attempt is balanced, counted and named; `eject.rs` ejection (a failed connection, or
//! calls failing in a row) and probing; `hedging.rs` and `latency.rs` when a slow idempotent
//! call goes to a second endpoint (the attempts themselves are raced by the client stack's
//! `hedge.rs`); `health_check.rs` the active health checks; `follow.rs` following the registry;
//! `route.rs` the pool as the channel's route and as the innermost service of its layers.
//! This module only declares and re-exports.

mod builder;
mod eject;
mod follow;
mod health_check;
mod hedging;
mod latency;
pub(crate) mod pool;
mod route;

pub use builder::{
    BalancedChannelBuilder, DEFAULT_MAX_PROBE_BACKOFF, DEFAULT_MIN_RETRIES_PER_SECOND,
    DEFAULT_PROBE_BACKOFF, DEFAULT_RETRY_RATIO,
};
pub use hedging::Hedging;
pub use pool::EndpointStats;
