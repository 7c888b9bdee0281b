//! The server's metrics, through the `metrics` facade: whatever recorder the application
//! installs (a Prometheus exporter, StatsD, ...) receives them.
//!
//! Handles are registered once, when the server starts (per method, on its first call with
//! each outcome), so no label is built per call. Without a recorder the facade hands out
//! no-op handles, and a call costs a few branches. So install the recorder before starting
//! the server: handles registered earlier stay no-ops.
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `wirecall_server_calls_total` | counter | `service`, `method`, `outcome` |
//! | `wirecall_server_call_duration_seconds` | histogram | `service`, `method` |
//! | `wirecall_server_calls_in_flight` | gauge | |
//! | `wirecall_server_connections` | gauge | |
//! | `wirecall_server_connections_total` | counter | |
//! | `wirecall_server_received_bytes_total` | counter | |
//! | `wirecall_server_sent_bytes_total` | counter | |
//! | `wirecall_server_handshake_failures_total` | counter | `reason` |
//! | `wirecall_server_streams_opened_total` | counter | |
//! | `wirecall_server_streams_open` | gauge | |
//! | `wirecall_server_stream_items_total` | counter | |
//!
//! A stream call also counts as a call (`wirecall_server_calls_total`, with how it ended, and
//! its duration is the stream's life); its items' bytes count in `sent_bytes`.
//!
//! `outcome` is `ok`, `cancelled` (by the caller, or its connection closed), or the wire
//! error code the caller got, in snake case (`deadline_exceeded`, `overloaded`,
//! `permission_denied`, `handler_panicked`, `bad_request`, `layer_failed`, ...); calls to
//! unknown methods count with empty `service` and `method` and the outcome `unknown_method`.
//! `reason` is `authentication`, `codec`, `version`, `timeout`, `io`, `malformed`, `busy`
//! (over `max_connections`), `tls` or `tls_expected_plain`.

use std::sync::OnceLock;
use std::time::Duration;

use ::metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};

use crate::error::ErrorCode;
use crate::negotiate::NegotiationError;

/// Calls answered (or dropped), by service, method and outcome.
pub const CALLS: &str = "wirecall_server_calls_total";
/// Time from reading a call's request to its outcome, in seconds.
pub const CALL_DURATION: &str = "wirecall_server_call_duration_seconds";
/// Calls running now.
pub const CALLS_IN_FLIGHT: &str = "wirecall_server_calls_in_flight";
/// Connections open now (past the handshake).
pub const CONNECTIONS: &str = "wirecall_server_connections";
/// Connections that completed the handshake.
pub const CONNECTIONS_TOTAL: &str = "wirecall_server_connections_total";
/// Bytes of request frames read.
pub const RECEIVED_BYTES: &str = "wirecall_server_received_bytes_total";
/// Bytes of reply frames queued for writing.
pub const SENT_BYTES: &str = "wirecall_server_sent_bytes_total";
/// Connections that did not get past the handshake, by reason.
pub const HANDSHAKE_FAILURES: &str = "wirecall_server_handshake_failures_total";

/// Server streams opened (protocol version 3).
pub const STREAMS_OPENED: &str = "wirecall_server_streams_opened_total";
/// Server streams open now.
pub const STREAMS_OPEN: &str = "wirecall_server_streams_open";
/// Items sent on server streams.
pub const STREAM_ITEMS: &str = "wirecall_server_stream_items_total";

/// The server-wide handles, registered when the server starts.
pub(crate) struct ServerMetrics {
    pub(crate) in_flight: Gauge,
    pub(crate) connections: Gauge,
    pub(crate) connections_total: Counter,
    pub(crate) received_bytes: Counter,
    pub(crate) sent_bytes: Counter,
    pub(crate) streams_opened: Counter,
    pub(crate) streams_open: Gauge,
    pub(crate) stream_items: Counter,
}

impl ServerMetrics {
    pub(crate) fn register() -> Self {
        Self {
            in_flight: gauge!(CALLS_IN_FLIGHT),
            connections: gauge!(CONNECTIONS),
            connections_total: counter!(CONNECTIONS_TOTAL),
            received_bytes: counter!(RECEIVED_BYTES),
            sent_bytes: counter!(SENT_BYTES),
            streams_opened: counter!(STREAMS_OPENED),
            streams_open: gauge!(STREAMS_OPEN),
            stream_items: counter!(STREAM_ITEMS),
        }
    }
}

/// Counts a failed handshake (a rare path: the label is built here).
pub(crate) fn handshake_failed(reason: &'static str) {
    counter!(HANDSHAKE_FAILURES, "reason" => reason).increment(1);
}

/// Counts a call to a method no service has (rare: the labels are built here).
pub(crate) fn unknown_method() {
    counter!(CALLS, "service" => "", "method" => "", "outcome" => "unknown_method").increment(1);
}

/// The `reason` label of a failed handshake.
pub(crate) fn handshake_reason(error: &NegotiationError) -> &'static str {
    match error {
        NegotiationError::AuthenticationFailed => "authentication",
        NegotiationError::NoCommonCodec { .. }
        | NegotiationError::EarlyCallsRefused { .. }
        | NegotiationError::NothingToOffer => "codec",
        NegotiationError::UnsupportedVersion { .. } => "version",
        NegotiationError::TimedOut => "timeout",
        NegotiationError::Io(_) => "io",
        NegotiationError::PeerSpeaksTls(_) => "tls_expected_plain",
        _ => "malformed",
    }
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    /// The caller cancelled it, or its connection went away first.
    Cancelled,
    Failed(ErrorCode),
}

/// The `outcome` labels, in the order of [`Outcome::index`].
const OUTCOMES: [&str; 12] = [
    "ok",
    "cancelled",
    "bad_request",
    "handler_panicked",
    "deadline_exceeded",
    "frame_too_large",
    "overloaded",
    "shutting_down",
    "encode_failed",
    "permission_denied",
    "layer_failed",
    "other",
];

impl Outcome {
    fn index(self) -> usize {
        match self {
            Self::Ok => 0,
            Self::Cancelled => 1,
            Self::Failed(code) => match code {
                ErrorCode::BadRequest => 2,
                ErrorCode::HandlerPanicked => 3,
                ErrorCode::DeadlineExceeded => 4,
                ErrorCode::FrameTooLarge => 5,
                ErrorCode::Overloaded => 6,
                ErrorCode::ShuttingDown => 7,
                ErrorCode::EncodeFailed => 8,
                ErrorCode::PermissionDenied => 9,
                ErrorCode::LayerFailed => 10,
                _ => 11,
            },
        }
    }

    /// The word for the call's span.
    pub(crate) fn label(self) -> &'static str {
        OUTCOMES[self.index()]
    }
}

/// One method's handles, each registered on first use.
pub(crate) struct RouteMetrics {
    service: &'static str,
    method: &'static str,
    calls: [OnceLock<Counter>; OUTCOMES.len()],
    duration: OnceLock<Histogram>,
}

impl RouteMetrics {
    pub(crate) fn new(service: &'static str, method: &'static str) -> Self {
        Self {
            service,
            method,
            calls: Default::default(),
            duration: OnceLock::new(),
        }
    }

    /// Counts a call that ended with `outcome` after `elapsed`.
    pub(crate) fn record(&self, outcome: Outcome, elapsed: Duration) {
        let index = outcome.index();
        self.calls[index]
            .get_or_init(|| {
                counter!(
                    CALLS,
                    "service" => self.service,
                    "method" => self.method,
                    "outcome" => OUTCOMES[index]
                )
            })
            .increment(1);
        self.duration
            .get_or_init(
                || histogram!(CALL_DURATION, "service" => self.service, "method" => self.method),
            )
            .record(elapsed.as_secs_f64());
    }
}
