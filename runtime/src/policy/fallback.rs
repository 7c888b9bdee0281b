//! When a method's fallback answers instead of an error: [`takes_fallback`].

use super::metrics;
use crate::client::declared::Method;
use crate::error::{Error, Failure};

/// Whether a failed call of a method with a fallback (`#[wirecall(fallback = path)]`) is
/// answered by the fallback: when no answer came for a reason outside the method itself
/// (the connection could not be made or broke, the deadline passed, the server or a layer
/// shed the call as overloaded or shutting down, no endpoint was available, a circuit breaker
/// or the concurrency limit refused it).
///
/// Not for errors that another try would meet again and that a cached or default answer
/// would hide: the server's own refusals (permission denied, unknown method), a handler that
/// panicked, codec and configuration errors. The method's application errors (`Ok(Err(e))`)
/// are answers, never fallbacks.
pub fn takes_fallback(error: &Error) -> bool {
    Failure::of(error).takes_fallback()
}

/// For generated clients: whether `error` goes to the method's fallback, counted and logged
/// when it does.
pub fn fallback_for(method: &Method, error: &Error) -> bool {
    let takes = takes_fallback(error);
    if takes {
        metrics::fallback_taken(method, error);
    }
    takes
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::ErrorCode;
    use crate::method::method_id;

    #[test]
    fn transport_failures_and_refusals_on_this_side_take_the_fallback() {
        let open = Error::CircuitOpen {
            method: method_id("S", "m"),
            endpoint: None,
            retry_after: Duration::from_secs(1),
        };
        assert!(takes_fallback(&open));
        assert!(takes_fallback(&Error::closed("broke")));
        assert!(takes_fallback(&Error::Endpoint {
            endpoint: "a".to_owned(),
            cause: Box::new(Error::Timeout {
                after: Duration::from_secs(1)
            }),
        }));
        assert!(takes_fallback(&Error::Remote {
            code: ErrorCode::Overloaded,
            message: String::new(),
        }));
    }

    #[test]
    fn answers_of_the_server_about_the_call_itself_do_not() {
        assert!(!takes_fallback(&Error::PermissionDenied {
            method: method_id("S", "m")
        }));
        assert!(!takes_fallback(&Error::HandlerPanicked {
            method: method_id("S", "m"),
            message: String::new(),
        }));
        assert!(!takes_fallback(&Error::Config("bad".to_owned())));
        assert!(!takes_fallback(&Error::Endpoint {
            endpoint: "a".to_owned(),
            cause: Box::new(Error::UnknownMethod {
                method: method_id("S", "m")
            }),
        }));
    }
}
