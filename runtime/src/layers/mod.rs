//! The tower seam shared by both sides, and the layers wirecall ships for it.
//!
//! - [`Next`]: what a layer added with `ServerBuilder::layer` or `ChannelBuilder::layer`
//!   wraps (`next.rs`);
//! - [`CircuitBreakerLayer`]: a client-side circuit breaker, one per method
//!   (`circuit_breaker/`).
//!
//! This module only declares and re-exports.

pub mod circuit_breaker;
pub(crate) mod next;

pub use circuit_breaker::{
    counts_as_failure, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigError,
    CircuitBreakerFuture, CircuitBreakerLayer, DEFAULT_ERROR_THRESHOLD_PERCENT,
    DEFAULT_MINIMUM_CALLS, DEFAULT_OPEN_WINDOW, DEFAULT_ROLLING_WINDOW, DEFAULT_TRIAL_CALLS,
    DEFAULT_WINDOW_BUCKETS,
};
pub use next::{Next, NextFuture};
