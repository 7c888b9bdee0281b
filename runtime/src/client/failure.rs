//! What a failed attempt says about the call and about the endpoint: whether the call may be
//! sent again (to another endpoint, or once more on a direct channel), and whether the
//! endpoint leaves the rotation.

use crate::error::{Error, ErrorCode};

/// What a failed attempt says about the call and the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server did not run the call; `broke`: the endpoint's connection is unusable.
    NotRun { broke: bool },
    /// The connection broke after the call was sent: it may have run.
    MaybeRun,
    /// The server answered with an error of the call itself.
    Answered,
    /// Nothing another endpoint could change (the deadline passed, a local encoding error).
    Final,
}

impl Failure {
    pub(crate) fn of(err: &Error) -> Self {
        match err {
            Error::Connect { .. } | Error::Negotiation(_) | Error::Tls(_) => {
                Self::NotRun { broke: true }
            }
            // The server stopped reading before it closed, and finished every call it had
            // read: a call still waiting when it says it is shutting down never ran.
            Error::ConnectionClosed {
                code: Some(ErrorCode::ShuttingDown),
                ..
            } => Self::NotRun { broke: true },
            Error::ConnectionClosed { .. } => Self::MaybeRun,
            Error::Remote {
                code: ErrorCode::ShuttingDown,
                ..
            } => Self::NotRun { broke: true },
            Error::Remote {
                code: ErrorCode::Overloaded,
                ..
            } => Self::NotRun { broke: false },
            // An endpoint's own layer shed the attempt before it was sent (a load shedder over
            // a per-endpoint limit): another endpoint may have room.
            Error::Layer {
                code: ErrorCode::Overloaded,
                ..
            } => Self::NotRun { broke: false },
            // An endpoint's own circuit breaker refused the attempt before it was sent: the
            // endpoint is not taken out for every method, the call goes to another one.
            Error::CircuitOpen { .. } => Self::NotRun { broke: false },
            Error::Timeout { .. }
            | Error::Codec(_)
            | Error::Config(_)
            | Error::FrameTooLarge { .. }
            | Error::Layer { .. }
            | Error::NoEndpoints { .. }
            | Error::ConcurrencyLimit { .. } => Self::Final,
            _ => Self::Answered,
        }
    }

    /// Whether the endpoint leaves the rotation (to be probed back).
    pub(crate) fn connection_broke(self) -> bool {
        matches!(self, Self::NotRun { broke: true } | Self::MaybeRun)
    }

    /// Whether the call may be sent to another endpoint (within its deadline and the retry
    /// budget): when it certainly did not run, or when it may have and the method is
    /// `#[idempotent]`.
    pub(crate) fn may_retry(self, idempotent: bool) -> bool {
        match self {
            Self::NotRun { .. } => true,
            Self::MaybeRun => idempotent,
            Self::Answered | Self::Final => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn remote(code: ErrorCode) -> Error {
        Error::Remote {
            code,
            message: String::new(),
        }
    }

    fn closed(code: Option<ErrorCode>) -> Error {
        Error::ConnectionClosed {
            reason: "test".to_owned(),
            code,
        }
    }

    #[test]
    fn a_refused_connection_did_not_run_and_takes_the_endpoint_out() {
        let err = Error::Connect {
            addr: "127.0.0.1:1".to_owned(),
            cause: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        };
        let failure = Failure::of(&err);
        assert_eq!(failure, Failure::NotRun { broke: true });
        assert!(failure.connection_broke());
        assert!(failure.may_retry(false));
    }

    #[test]
    fn a_connection_lost_after_sending_may_have_run_and_is_replayed_only_when_idempotent() {
        let failure = Failure::of(&closed(None));
        assert_eq!(failure, Failure::MaybeRun);
        assert!(failure.connection_broke());
        assert!(!failure.may_retry(false));
        assert!(failure.may_retry(true));
    }

    #[test]
    fn a_server_shutting_down_never_ran_the_call() {
        for err in [
            closed(Some(ErrorCode::ShuttingDown)),
            remote(ErrorCode::ShuttingDown),
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure, Failure::NotRun { broke: true }, "{err}");
            assert!(failure.may_retry(false));
        }
    }

    #[test]
    fn an_overloaded_endpoint_stays_in_rotation_and_the_call_goes_elsewhere() {
        let shed = Error::Layer {
            code: ErrorCode::Overloaded,
            cause: "shed".into(),
        };
        for err in [remote(ErrorCode::Overloaded), shed] {
            let failure = Failure::of(&err);
            assert_eq!(failure, Failure::NotRun { broke: false }, "{err}");
            assert!(!failure.connection_broke());
            assert!(failure.may_retry(false));
        }
    }

    #[test]
    fn an_open_circuit_of_the_endpoint_sends_the_call_elsewhere_and_keeps_the_endpoint() {
        let err = Error::CircuitOpen {
            method: crate::method_id("S", "m"),
            endpoint: Some("127.0.0.1:7000".to_owned()),
            retry_after: Duration::from_secs(5),
        };
        let failure = Failure::of(&err);
        assert_eq!(failure, Failure::NotRun { broke: false });
        assert!(!failure.connection_broke());
        assert!(failure.may_retry(false));
    }

    #[test]
    fn an_answer_of_the_call_itself_is_final_and_counts_as_answered() {
        for err in [
            remote(ErrorCode::HandlerPanicked),
            remote(ErrorCode::BadRequest),
            Error::UnknownMethod {
                method: crate::method_id("S", "m"),
            },
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure, Failure::Answered, "{err}");
            assert!(!failure.connection_broke());
            assert!(!failure.may_retry(true));
        }
    }

    #[test]
    fn what_no_other_endpoint_could_change_is_final() {
        let layer = Error::Layer {
            code: ErrorCode::LayerFailed,
            cause: "refused".into(),
        };
        for err in [
            Error::Timeout {
                after: Duration::from_millis(5),
            },
            Error::Config("bad".to_owned()),
            layer,
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure, Failure::Final, "{err}");
            assert!(!failure.connection_broke());
            assert!(!failure.may_retry(true));
        }
    }
}
