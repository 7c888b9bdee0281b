//! What a circuit breaker tells the outside: a log line and metrics for each change of state,
//! through `tracing` (a warning when a circuit opens, info when it closes, debug when it
//! turns half-open) and the `metrics` facade (whatever recorder the application installs).
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `wirecall_client_circuit_state_changes_total` | counter | `method`, `endpoint`, `to` |
//! | `wirecall_client_circuits_open` | gauge | `method`, `endpoint` |
//!
//! `method` is the method id in hex (`0x...`, as [`MethodId`] displays), `to` the new state:
//! `open`, `half_open` or `closed`. `endpoint` is the address of the endpoint the circuit
//! guards when the breaker knows it (a breaker turned on by a method's policy does), and empty
//! otherwise (a [`CircuitBreakerLayer`](super::CircuitBreakerLayer), which sits inside a
//! channel and never sees its address). The gauge counts the circuits of the method that are not
//! closed (open or half-open): one breaker per endpoint on a balanced channel means several
//! circuits per method, and the gauge adds them up. Labels are built only on a change of
//! state, never per call.

use ::metrics::{counter, gauge};

use super::circuit_state::{CircuitState, Transition};
use crate::method::MethodId;

/// Changes of state, by method and new state.
pub const STATE_CHANGES: &str = "wirecall_client_circuit_state_changes_total";
/// Circuits not closed now (open or half-open), by method.
pub const CIRCUITS_OPEN: &str = "wirecall_client_circuits_open";

/// Logs and counts `transition` of the circuit of `method`: a warning when it opens, an
/// info line when it closes (the method works again), debug in between.
pub(super) fn state_changed(method: MethodId, endpoint: Option<&str>, transition: Transition) {
    let Transition { from, to, window } = transition;
    match (from, to) {
        (CircuitState::Closed, CircuitState::Open) => tracing::warn!(
            %method,
            endpoint = endpoint.unwrap_or_default(),
            failures = window.failures,
            calls = window.calls(),
            "circuit opened: calls of this method fail fast"
        ),
        (_, CircuitState::Open) => {
            tracing::warn!(%method, endpoint = endpoint.unwrap_or_default(), "circuit opened again: a trial call failed");
        }
        (_, CircuitState::Closed) => {
            tracing::info!(%method, endpoint = endpoint.unwrap_or_default(), "circuit closed: the trial calls succeeded");
        }
        (_, CircuitState::HalfOpen) => {
            tracing::debug!(%method, endpoint = endpoint.unwrap_or_default(), "circuit half-open: letting trial calls through");
        }
    }
    let label = method.to_string();
    let endpoint = endpoint.unwrap_or_default().to_owned();
    counter!(STATE_CHANGES, "method" => label.clone(), "endpoint" => endpoint.clone(), "to" => to.label())
        .increment(1);
    let open = gauge!(CIRCUITS_OPEN, "method" => label, "endpoint" => endpoint);
    match (from, to) {
        (CircuitState::Closed, _) => open.increment(1.0),
        (_, CircuitState::Closed) => open.decrement(1.0),
        _ => {}
    }
}

/// A breaker dropped with circuits not closed takes them out of the gauge.
pub(super) fn circuit_dropped(method: MethodId, endpoint: Option<&str>, state: CircuitState) {
    if state != CircuitState::Closed {
        let endpoint = endpoint.unwrap_or_default().to_owned();
        gauge!(CIRCUITS_OPEN, "method" => method.to_string(), "endpoint" => endpoint)
            .decrement(1.0);
    }
}
