//! What the per-method policies tell the outside, through `tracing` and the `metrics` facade.
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `wirecall_client_retries_total` | counter | `service`, `method` |
//! | `wirecall_client_fallbacks_total` | counter | `service`, `method` |
//! | `wirecall_client_concurrency_rejected_total` | counter | `service`, `method` |
//!
//! Labels are the wire names. A breaker turned on by a policy reports through the circuit
//! breaker's metrics ([`layers::circuit_breaker::metrics`](crate::layers::circuit_breaker::metrics)),
//! with the endpoint's address.

use std::borrow::Cow;

use ::metrics::counter;

use crate::client::declared::Method;
use crate::error::Error;

/// Calls sent again by a policy's `retries` (a direct channel) or by failover under it (a
/// balanced channel), one per extra attempt.
pub const RETRIES: &str = "wirecall_client_retries_total";
/// Calls answered by their method's fallback instead of the error.
pub const FALLBACKS: &str = "wirecall_client_fallbacks_total";
/// Calls refused because their method's concurrency limit was reached.
pub const CONCURRENCY_REJECTED: &str = "wirecall_client_concurrency_rejected_total";

/// A call of `method` of `service` sent again, as its `attempt`th retry.
pub(crate) fn retried(
    service: Cow<'static, str>,
    method: Cow<'static, str>,
    attempt: u32,
    error: &Error,
) {
    tracing::debug!(
        service = %service,
        method = %method,
        attempt,
        %error,
        "retrying the call"
    );
    counter!(RETRIES, "service" => service, "method" => method).increment(1);
}

pub(super) fn fallback_taken(method: &Method, error: &Error) {
    tracing::debug!(
        service = method.service(),
        method = method.name(),
        %error,
        "the call failed; answering with its fallback"
    );
    let (service, name) = method.names();
    counter!(FALLBACKS, "service" => service, "method" => name).increment(1);
}

pub(super) fn concurrency_rejected(service: Cow<'static, str>, method: Cow<'static, str>) {
    counter!(CONCURRENCY_REJECTED, "service" => service, "method" => method).increment(1);
}
