//! What a failed call says, decided once for every error: [`Outcome`], what happened to the
//! request (the caller's question: may I send it again?), and [`Failure`], what the client
//! stack does with it (send it again, take the endpoint out of rotation, count it against a
//! circuit, answer it with a fallback).
//!
//! One table, [`Failure::of`], answers all of these, so the retry loop, a balanced channel's
//! ejection, the circuit breaker and the fallbacks cannot disagree about an error.

use super::caller::Error;
use crate::codec::CodecError;
use wirecall_wire::ErrorCode;

/// What happened to the request of a failed call, as far as this side can know: whether
/// sending it again could run it twice. [`Error::outcome`] gives it for every error.
///
/// | outcome | sending it again |
/// |---|---|
/// | [`NotRun`](Self::NotRun) | cannot run it twice: safe for any method |
/// | [`MaybeRan`](Self::MaybeRan) | may run it twice: only for `#[idempotent]` methods |
/// | [`Ran`](Self::Ran) | runs it again |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The server did not run the call: the request was never sent (no connection, the
    /// channel waiting to reconnect or closed, a limit or a circuit breaker on this side, a
    /// request that could not be encoded), or the server refused it before running it
    /// (overloaded, shutting down, an unknown method, permission denied, arguments that did
    /// not decode).
    NotRun,
    /// The call may have run: the request was sent and no answer came (the connection broke,
    /// the deadline passed, a layer failed it after sending).
    MaybeRan,
    /// The server ran the call and answered, with a failure (the handler panicked, its reply
    /// did not encode, or did not decode here).
    Ran,
}

/// Everything the client stack reads from one error: one row of [`Failure::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What happened to the request.
    pub(crate) outcome: Outcome,
    /// Another attempt could succeed (on another endpoint, or once the connection is dialled
    /// again) within the same deadline: nothing about the call itself failed.
    retriable: bool,
    /// The endpoint's connection is unusable or going away: a balanced channel takes the
    /// endpoint out of rotation and probes it.
    unreachable: bool,
    /// The endpoint could not take the call, or not in time: a circuit breaker counts it.
    counts_against_circuit: bool,
    /// No answer came for a reason outside the method itself: a fallback answers it.
    takes_fallback: bool,
    /// Whom the failure is about: the endpoint, the call itself, or this side.
    blame: Blame,
}

/// Whom a failure is about, for a balanced channel's counters and its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blame {
    /// The endpoint could not take the call (or not in time): counted against it, and named
    /// in the error.
    Endpoint,
    /// The server answered about the call itself (an error of the call, not of the server):
    /// counted as a call its endpoint answered, and passed on as it is.
    Answer,
    /// This side refused the call before sending it (its own configuration, a codec, a
    /// limit): nothing to do with the endpoint.
    Local,
}

impl Failure {
    /// The one classification of `error`.
    pub(crate) fn of(error: &Error) -> Self {
        use Outcome::{MaybeRan, NotRun, Ran};
        // Columns: outcome, retriable, unreachable, counts against a circuit, takes a fallback;
        // `answer` marks the rows of the server's answers about the call itself.
        let row = |outcome, retriable, unreachable, counts, fallback| Self {
            outcome,
            retriable,
            unreachable,
            counts_against_circuit: counts,
            takes_fallback: fallback,
            blame: Blame::Endpoint,
        };
        let answer = |outcome, counts| Self {
            blame: Blame::Answer,
            ..row(outcome, false, false, counts, false)
        };
        let local = |fallback| Self {
            blame: Blame::Local,
            ..row(NotRun, false, false, false, fallback)
        };
        match error {
            // The transport: the endpoint could not be reached, or broke.
            Error::Connect { .. } | Error::Negotiation(_) | Error::Tls(_) => {
                row(NotRun, true, true, true, true)
            }
            Error::Unavailable { .. } => row(NotRun, true, true, true, true),
            // A server shutting down stops reading, finishes every call it read and only then
            // says so: a call still waiting never ran.
            Error::ConnectionClosed {
                code: Some(ErrorCode::ShuttingDown),
                ..
            } => row(NotRun, true, true, true, true),
            Error::ConnectionClosed { .. } => row(MaybeRan, true, true, true, true),
            Error::Timeout { .. } => row(MaybeRan, false, false, true, true),
            Error::Remote { code, .. } => match code {
                ErrorCode::ShuttingDown => row(NotRun, true, true, true, true),
                ErrorCode::Overloaded => row(NotRun, true, false, true, true),
                // A time limit of the server's own (its caller's deadline is `Timeout`).
                ErrorCode::DeadlineExceeded => Self {
                    takes_fallback: true,
                    ..answer(MaybeRan, true)
                },
                ErrorCode::BadRequest | ErrorCode::UnknownMethod | ErrorCode::PermissionDenied => {
                    answer(NotRun, false)
                }
                ErrorCode::HandlerPanicked | ErrorCode::EncodeFailed | ErrorCode::FrameTooLarge => {
                    answer(Ran, false)
                }
                _ => answer(MaybeRan, false),
            },
            Error::HandlerPanicked { .. } => answer(Ran, true),
            Error::UnknownMethod { .. } | Error::PermissionDenied { .. } => answer(NotRun, false),
            Error::StreamsUnsupported { .. } => answer(NotRun, false),
            // A layer of this side: load shedding refused the call before it was sent (another
            // endpoint may have room); a timeout layer gave up on it; anything else is the
            // layer's own decision.
            Error::Layer { code, .. } => match code {
                ErrorCode::Overloaded => row(NotRun, true, false, false, true),
                ErrorCode::DeadlineExceeded => row(MaybeRan, false, false, true, true),
                _ => row(MaybeRan, false, false, false, false),
            },
            // Refused on this side, before sending: another endpoint's circuit may be closed.
            Error::CircuitOpen { .. } => row(NotRun, true, false, false, true),
            Error::ConcurrencyLimit { .. } | Error::NoEndpoints { .. } => local(true),
            Error::Codec(CodecError::Decode { .. } | CodecError::EmptyResult) => answer(Ran, false),
            Error::Codec(_)
            | Error::Config(_)
            | Error::FrameTooLarge { .. }
            | Error::Bind { .. } => local(false),
            Error::Endpoint { cause, .. } => Self::of(cause),
        }
    }

    /// Whether the call may be sent again (to another endpoint, or once more on a direct
    /// channel), within its deadline: when it certainly did not run, or when it may have and
    /// the method is `#[idempotent]`, and nothing about the call itself failed.
    pub(crate) fn may_retry(self, idempotent: bool) -> bool {
        self.retriable && (self.outcome == Outcome::NotRun || idempotent)
    }

    /// Whether the endpoint leaves a balanced channel's rotation (to be probed back).
    pub(crate) fn unreachable(self) -> bool {
        self.unreachable
    }

    /// Whether a circuit breaker counts it as a failure of the method on this endpoint.
    pub(crate) fn counts_against_circuit(self) -> bool {
        self.counts_against_circuit
    }

    /// Whether a method's fallback answers it.
    pub(crate) fn takes_fallback(self) -> bool {
        self.takes_fallback
    }

    /// Whether the attempt failed on its endpoint, rather than the server answering about
    /// the call itself or this side refusing it: a balanced channel counts it against the
    /// endpoint and names the endpoint in the error.
    pub(crate) fn endpoint_failed(self) -> bool {
        self.blame == Blame::Endpoint
    }

    /// Whether the server answered about the call itself: the endpoint answered a call.
    pub(crate) fn answered(self) -> bool {
        self.blame == Blame::Answer
    }
}

impl Error {
    /// What happened to the request: whether the server did not run it, may have run it, or
    /// ran it. It decides whether a call may be sent again: a [`NotRun`](Outcome::NotRun)
    /// call always, a [`MaybeRan`](Outcome::MaybeRan) one only if running it twice is harmless
    /// (an `#[idempotent]` method); the book's Errors chapter gives it for every variant.
    ///
    /// ```
    /// use wirecall_runtime::{Error, Outcome};
    ///
    /// let lost = Error::ConnectionClosed { reason: "reset".to_owned(), code: None };
    /// assert_eq!(lost.outcome(), Outcome::MaybeRan);
    /// ```
    pub fn outcome(&self) -> Outcome {
        Failure::of(self).outcome
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::method::method_id;
    use crate::negotiate::NegotiationError;

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

    fn layer(code: ErrorCode) -> Error {
        Error::Layer {
            code,
            cause: "layer".into(),
        }
    }

    fn open_circuit() -> Error {
        Error::CircuitOpen {
            method: method_id("S", "m"),
            endpoint: Some("127.0.0.1:7000".to_owned()),
            retry_after: Duration::from_secs(5),
        }
    }

    #[test]
    fn a_refused_connection_did_not_run_and_takes_the_endpoint_out() {
        for err in [
            Error::Connect {
                addr: "127.0.0.1:1".to_owned(),
                cause: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            },
            Error::Negotiation(NegotiationError::TimedOut),
            Error::Tls(std::io::Error::other("bad certificate")),
            Error::Unavailable {
                reason: "reconnecting".to_owned(),
                retry_after: Some(Duration::from_millis(50)),
            },
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure.outcome, Outcome::NotRun, "{err}");
            assert!(failure.unreachable(), "{err}");
            assert!(failure.may_retry(false), "{err}");
            assert!(failure.counts_against_circuit(), "{err}");
            assert!(failure.takes_fallback(), "{err}");
        }
    }

    #[test]
    fn a_connection_lost_after_sending_may_have_run_and_is_replayed_only_when_idempotent() {
        let failure = Failure::of(&closed(None));
        assert_eq!(failure.outcome, Outcome::MaybeRan);
        assert!(failure.unreachable());
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
            assert_eq!(failure.outcome, Outcome::NotRun, "{err}");
            assert!(failure.unreachable(), "{err}");
            assert!(failure.may_retry(false), "{err}");
        }
    }

    #[test]
    fn an_overloaded_endpoint_or_an_open_circuit_keeps_the_endpoint_and_sends_the_call_elsewhere() {
        for err in [
            remote(ErrorCode::Overloaded),
            layer(ErrorCode::Overloaded),
            open_circuit(),
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure.outcome, Outcome::NotRun, "{err}");
            assert!(!failure.unreachable(), "{err}");
            assert!(failure.may_retry(false), "{err}");
            assert!(failure.takes_fallback(), "{err}");
        }
        // The server's refusal says the endpoint is busy; this side's own refusals do not.
        assert!(Failure::of(&remote(ErrorCode::Overloaded)).counts_against_circuit());
        assert!(!Failure::of(&layer(ErrorCode::Overloaded)).counts_against_circuit());
        assert!(!Failure::of(&open_circuit()).counts_against_circuit());
    }

    #[test]
    fn an_answer_of_the_call_itself_is_never_sent_again() {
        let method = method_id("S", "m");
        for (err, outcome) in [
            (
                Error::HandlerPanicked {
                    method,
                    message: String::new(),
                },
                Outcome::Ran,
            ),
            (remote(ErrorCode::BadRequest), Outcome::NotRun),
            (remote(ErrorCode::EncodeFailed), Outcome::Ran),
            (Error::UnknownMethod { method }, Outcome::NotRun),
            (Error::PermissionDenied { method }, Outcome::NotRun),
            (
                Error::Codec(CodecError::Decode {
                    codec: crate::codec::Codec::Json,
                    cause: "bad".into(),
                }),
                Outcome::Ran,
            ),
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure.outcome, outcome, "{err}");
            assert!(!failure.unreachable(), "{err}");
            assert!(!failure.may_retry(true), "{err}");
            assert!(!failure.takes_fallback(), "{err}");
        }
    }

    #[test]
    fn a_passed_deadline_may_have_run_counts_against_the_circuit_and_is_not_retried() {
        for err in [
            Error::Timeout {
                after: Duration::from_millis(5),
            },
            remote(ErrorCode::DeadlineExceeded),
            layer(ErrorCode::DeadlineExceeded),
        ] {
            let failure = Failure::of(&err);
            assert_eq!(failure.outcome, Outcome::MaybeRan, "{err}");
            assert!(!failure.may_retry(true), "{err}");
            assert!(failure.counts_against_circuit(), "{err}");
            assert!(failure.takes_fallback(), "{err}");
        }
    }

    #[test]
    fn what_this_side_refused_did_not_run_and_no_other_attempt_could_change() {
        let errors = [
            Error::Config("bad".to_owned()),
            Error::FrameTooLarge { len: 10, max: 5 },
            Error::ConcurrencyLimit {
                service: "S".into(),
                method: "m".into(),
                limit: 1,
            },
            Error::NoEndpoints {
                service: "S".to_owned(),
                reason: "none registered".to_owned(),
            },
        ];
        for err in errors {
            let failure = Failure::of(&err);
            assert_eq!(failure.outcome, Outcome::NotRun, "{err}");
            assert!(!failure.may_retry(true), "{err}");
            assert!(!failure.counts_against_circuit(), "{err}");
        }
    }

    #[test]
    fn an_endpoints_error_is_classified_by_what_failed_there() {
        let err = Error::Endpoint {
            endpoint: "127.0.0.1:7000".to_owned(),
            cause: Box::new(closed(None)),
        };
        assert_eq!(Failure::of(&err), Failure::of(&closed(None)));
        assert_eq!(err.outcome(), Outcome::MaybeRan);
    }
}
