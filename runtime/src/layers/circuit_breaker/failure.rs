//! Which errors count against a method's circuit: [`counts_as_failure`].

use crate::error::{Error, Failure};

/// Whether `error` counts as a failure of the method for a circuit breaker: it says that the
/// endpoint could not take the call, or not in time.
///
/// Failures:
/// - the transport failed: [`Error::Connect`], [`Error::ConnectionClosed`],
///   [`Error::Negotiation`], [`Error::Tls`];
/// - the deadline passed: [`Error::Timeout`], [`Error::Remote`] with
///   [`DeadlineExceeded`](crate::ErrorCode::DeadlineExceeded) (a server time limit), and
///   [`Error::Layer`] with `DeadlineExceeded` (a timeout layer under the breaker);
/// - the server could not take it: [`Error::Remote`] with
///   [`Overloaded`](crate::ErrorCode::Overloaded) or [`ShuttingDown`](crate::ErrorCode::ShuttingDown);
/// - the handler panicked: [`Error::HandlerPanicked`];
/// - any of these behind [`Error::Endpoint`] (a breaker over a balanced channel's failover).
///
/// Not failures (the call still counts for nothing, neither way): the caller's own mistakes
/// and decisions ([`Error::Codec`], [`Error::Config`], [`Error::FrameTooLarge`], other
/// [`Error::Layer`]s such as load shedding on this side), answers that the endpoint is
/// healthy enough to give ([`Error::PermissionDenied`], [`Error::UnknownMethod`], a remote
/// `BadRequest`), [`Error::NoEndpoints`], and [`Error::CircuitOpen`] of another breaker
/// (nothing was sent). Application errors are not errors at this level at all: a method
/// returning `Result<T, E>` whose handler returned `Err(e)` arrives as a successful reply.
///
/// A one-way call can only fail while it is sent, so only those errors count for it; once
/// it is sent it counts as a success.
pub fn counts_as_failure(error: &Error) -> bool {
    Failure::of(error).counts_against_circuit()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::codec::CodecError;
    use crate::error::ErrorCode;
    use crate::method::method_id;
    use crate::negotiate::NegotiationError;

    fn remote(code: ErrorCode) -> Error {
        Error::Remote {
            code,
            message: String::new(),
        }
    }

    fn layer(code: ErrorCode) -> Error {
        Error::Layer {
            code,
            cause: "layer".into(),
        }
    }

    #[test]
    fn transport_failures_count() {
        let errors = [
            Error::Connect {
                addr: "127.0.0.1:1".to_owned(),
                cause: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            },
            Error::closed("reset"),
            Error::Negotiation(NegotiationError::TimedOut),
            Error::Tls(std::io::Error::other("bad certificate")),
        ];
        for error in errors {
            assert!(counts_as_failure(&error), "{error}");
        }
    }

    #[test]
    fn deadlines_count_wherever_they_passed() {
        let errors = [
            Error::Timeout {
                after: Duration::from_millis(10),
            },
            remote(crate::ErrorCode::DeadlineExceeded),
            layer(crate::ErrorCode::DeadlineExceeded),
        ];
        for error in errors {
            assert!(counts_as_failure(&error), "{error}");
        }
    }

    #[test]
    fn an_overloaded_or_stopping_server_and_a_panicking_handler_count() {
        let panicked = Error::HandlerPanicked {
            method: method_id("S", "m"),
            message: "boom".to_owned(),
        };
        for error in [
            remote(crate::ErrorCode::Overloaded),
            remote(crate::ErrorCode::ShuttingDown),
            panicked,
        ] {
            assert!(counts_as_failure(&error), "{error}");
        }
    }

    #[test]
    fn a_failure_behind_an_endpoint_of_a_balanced_channel_counts() {
        let error = Error::Endpoint {
            endpoint: "127.0.0.1:7000".to_owned(),
            cause: Box::new(remote(crate::ErrorCode::Overloaded)),
        };
        assert!(counts_as_failure(&error));
    }

    #[test]
    fn the_callers_mistakes_and_healthy_refusals_do_not_count() {
        let method = method_id("S", "m");
        let errors = [
            Error::PermissionDenied { method },
            Error::UnknownMethod { method },
            remote(ErrorCode::BadRequest),
            Error::Codec(CodecError::Decode {
                codec: crate::codec::Codec::Json,
                cause: "bad".into(),
            }),
            Error::Config("bad".to_owned()),
            Error::FrameTooLarge { len: 10, max: 5 },
            layer(crate::ErrorCode::Overloaded),
            layer(ErrorCode::LayerFailed),
            Error::NoEndpoints {
                service: "S".to_owned(),
                reason: "none registered".to_owned(),
            },
            Error::CircuitOpen {
                method,
                endpoint: None,
                retry_after: Duration::from_secs(1),
            },
            Error::Endpoint {
                endpoint: "127.0.0.1:7000".to_owned(),
                cause: Box::new(Error::PermissionDenied { method }),
            },
        ];
        for error in errors {
            assert!(!counts_as_failure(&error), "{error}");
        }
    }
}
