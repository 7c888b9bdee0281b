//! A client-side circuit breaker as a tower layer: [`CircuitBreakerLayer`].
//!
//! When too many recent calls of a method fail, its circuit opens and further calls fail at
//! once with [`Error::CircuitOpen`](crate::Error::CircuitOpen), without being sent; after an
//! open window a few trial calls test the method, and the circuit closes once they succeed.
//!
//! Layout, one job a file: `config.rs` the settings and their `DEFAULT_*`; `window.rs` the
//! rolling count of outcomes; `circuit_state.rs` the state machine of one method's circuit;
//! `circuits.rs` a breaker's circuits, one per method (shared with the per-method policies);
//! `failure.rs` which errors count ([`counts_as_failure`]); `layer.rs` the tower layer and
//! service, one circuit per method; [`metrics`] its logs and metrics.
//! This module only declares and re-exports.

mod circuit_state;
pub(crate) mod circuits;
pub(crate) mod config;
mod failure;
mod layer;
pub mod metrics;
mod window;

pub use config::{
    CircuitBreakerConfig, CircuitBreakerConfigError, DEFAULT_ERROR_THRESHOLD_PERCENT,
    DEFAULT_MINIMUM_CALLS, DEFAULT_OPEN_WINDOW, DEFAULT_ROLLING_WINDOW, DEFAULT_TRIAL_CALLS,
    DEFAULT_WINDOW_BUCKETS,
};
pub use failure::counts_as_failure;
pub use layer::{CircuitBreaker, CircuitBreakerFuture, CircuitBreakerLayer};
