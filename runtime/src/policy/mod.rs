//! Per-method call policies: the deadline, retries, hedging, concurrency limit, circuit breaker
//! and fallback a method declares in its trait (`#[wirecall(timeout = "300ms", retries = 2,
//! concurrency = 50, breaker)]`), overridable at run time ([`Policies`]).
//!
//! Layout, one job a file: `method_policy.rs` the settings ([`MethodPolicy`]); `hedge.rs`
//! the hedging setting ([`Hedge`]);
//! `overrides.rs` the run-time overrides and their order ([`Policies`]); `target.rs` what an
//! override names; `text.rs` the text form of policy files and `WIRECALL_POLICY`, read and
//! written; `error.rs` [`PolicyError`]; `table.rs` each method's resolved policy and the state
//! it needs, per channel; `fallback.rs` when a fallback answers ([`takes_fallback`]);
//! [`metrics`] what policies count. The policies act in the client's one call stack
//! (`client/stack/`): the concurrency limit and the deadline once per call, the retries in its
//! one retry loop, the breaker once per attempt. This module only declares and re-exports.

mod error;
mod fallback;
mod hedge;
pub(crate) mod method_policy;
pub mod metrics;
pub(crate) mod overrides;
pub(crate) mod table;
mod target;
mod text;

pub use error::PolicyError;
#[doc(hidden)]
pub use fallback::fallback_for;
pub use fallback::takes_fallback;
pub use hedge::{Hedge, HedgeConfig, DEFAULT_HEDGE_ATTEMPTS, MAX_HEDGE_ATTEMPTS};
pub use method_policy::{Breaker, MethodPolicy};
pub use overrides::{Policies, POLICY_ENV, POLICY_FILE_ENV};
