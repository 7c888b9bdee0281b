//! Per-method call policies: the deadline, retries, concurrency limit, circuit breaker and
//! fallback a method declares in its trait (`#[wirecall(timeout = "300ms", retries = 2,
//! concurrency = 50, breaker)]`), overridable at run time ([`Policies`]).
//!
//! Layout, one job a file: `method_policy.rs` the settings ([`MethodPolicy`]);
//! `declared.rs` what generated code passes per call ([`DeclaredPolicy`]); `overrides.rs`
//! the run-time overrides and their order ([`Policies`]); `target.rs` what an override names;
//! `text.rs` the text form of policy files and `WIRECALL_POLICY`, read and written; `error.rs` [`PolicyError`]; `table.rs` each method's
//! resolved policy and state in a client handle; `limiter.rs` the concurrency limit;
//! `call.rs` one call under its policy; `fallback.rs` when a fallback answers
//! ([`takes_fallback`]); [`metrics`] what policies count. This module only declares and
//! re-exports.

pub(crate) mod call;
pub(crate) mod declared;
mod error;
mod fallback;
mod limiter;
pub(crate) mod method_policy;
pub mod metrics;
pub(crate) mod overrides;
pub(crate) mod table;
mod target;
mod text;

pub use declared::DeclaredPolicy;
pub use error::PolicyError;
pub use fallback::{fallback_for, takes_fallback};
pub use method_policy::{Breaker, MethodPolicy};
pub use overrides::{Policies, POLICY_ENV, POLICY_FILE_ENV};
