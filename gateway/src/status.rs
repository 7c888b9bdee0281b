//! How a failed call becomes an HTTP response: the status table of the book's "Calling from
//! outside Rust" chapter, and a JSON body `{"error": name, "code": wire code, "message": ...}`.

use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use wirecall::{Error, ErrorCode};

/// The HTTP status for a wirecall error code.
pub fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UnknownMethod => StatusCode::NOT_FOUND,
        ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
        ErrorCode::HandlerPanicked | ErrorCode::EncodeFailed => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::DeadlineExceeded | ErrorCode::IdleTimeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::FrameTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::Overloaded | ErrorCode::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
        ErrorCode::ProtocolViolation | ErrorCode::Other(_) => StatusCode::BAD_GATEWAY,
        _ => StatusCode::BAD_GATEWAY,
    }
}

/// Why the gateway could not answer with the method's reply.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No such service or method in the reflected schemas.
    #[error("{0}")]
    NotFound(String),
    /// The request body is not what the method takes.
    #[error("{0}")]
    BadBody(String),
    /// A line of an upload's body (numbered from 1, blank lines counted) is not what the
    /// method takes: its arguments on the first line, one item on each after it.
    #[error("line {line}: {message}")]
    BadLine {
        /// The line's number.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// A line of an upload's body is longer than the gateway's body limit
    /// ([`GatewayBuilder::max_body_bytes`](crate::GatewayBuilder::max_body_bytes)).
    #[error("line {line} is longer than the gateway's limit of {max} bytes")]
    LineTooLong {
        /// The line's number.
        line: u64,
        /// The limit.
        max: usize,
    },
    /// A request body is longer than the gateway's body limit
    /// ([`GatewayBuilder::max_body_bytes`](crate::GatewayBuilder::max_body_bytes)).
    #[error("the body is longer than the gateway's limit of {max} bytes")]
    BodyTooLarge {
        /// The limit.
        max: usize,
    },
    /// No route of the gateway has this path.
    #[error("no route `{0}`: calls are `POST /{{service}}/{{method}}`")]
    NoRoute(String),
    /// The path names a route that does not take this HTTP method.
    #[error("{path} does not take {method}: calls are POSTs")]
    MethodNotAllowed {
        /// The HTTP method of the request.
        method: String,
        /// The request's path.
        path: String,
    },
    /// A method call's body is not of a media type the method takes (a call must say
    /// `Content-Type: application/json`, or `application/x-ndjson` for an upload).
    #[error("a call to this method takes `Content-Type: {expected}`, not {found}")]
    UnsupportedMediaType {
        /// The media type the method takes.
        expected: &'static str,
        /// What the request said, quoted, or `none`.
        found: String,
    },
    /// The client did not send its request in time: the body stalled, or did not arrive
    /// within the time limit. The connection is closed after the answer.
    #[error(transparent)]
    RequestTimeout(#[from] RequestTimeout),
    /// The call failed.
    #[error(transparent)]
    Call(#[from] Error),
    /// The call did not finish within the gateway's time limit.
    #[error("no reply within the gateway's limit of {0:?}")]
    TimeLimit(std::time::Duration),
    /// The method returned its application error.
    #[error("the method returned an error")]
    Application(serde_json::Value),
}

/// How a request body failed to arrive in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestTimeout {
    /// No byte of the body came for this long while the gateway waited for one
    /// ([`GatewayBuilder::body_read_timeout`](crate::GatewayBuilder::body_read_timeout)).
    #[error("no byte of the request body came for {0:?}")]
    BodyStalled(std::time::Duration),
    /// The body had not all come when the call's time limit passed
    /// ([`GatewayBuilder::time_limit`](crate::GatewayBuilder::time_limit)).
    #[error("the request body did not all arrive within the gateway's limit of {0:?}")]
    TimeLimit(std::time::Duration),
}

impl RequestTimeout {
    /// The wire code closest to it: `IdleTimeout` for a stall, `DeadlineExceeded` past
    /// the time limit.
    fn code(self) -> ErrorCode {
        match self {
            Self::BodyStalled(_) => ErrorCode::IdleTimeout,
            Self::TimeLimit(_) => ErrorCode::DeadlineExceeded,
        }
    }
}

/// The body `{"error": name, "code": wire code, "message": ...}`.
fn error_body(name: &str, code: ErrorCode, message: String) -> Value {
    json!({ "error": name, "code": code.to_u16(), "message": message })
}

impl GatewayError {
    /// The response's status and its JSON body, `{"error": name, "code": wire code,
    /// "message": ...}` (an application error: `{"error": "Application", "value": ...}`); a
    /// server stream that fails after its first item has sent its status, and ends with the
    /// body alone.
    pub(crate) fn status_and_body(&self) -> (StatusCode, Value) {
        let message = self.to_string();
        let with_line = |mut body: Value, line: u64| {
            body["line"] = line.into();
            body
        };
        match self {
            Self::NotFound(_) | Self::NoRoute(_) => (
                StatusCode::NOT_FOUND,
                error_body("NotFound", ErrorCode::UnknownMethod, message),
            ),
            Self::BadBody(_) => (
                StatusCode::BAD_REQUEST,
                error_body("BadRequest", ErrorCode::BadRequest, message),
            ),
            Self::BadLine { line, .. } => (
                StatusCode::BAD_REQUEST,
                with_line(
                    error_body("BadRequest", ErrorCode::BadRequest, message),
                    *line,
                ),
            ),
            Self::LineTooLong { line, .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                with_line(
                    error_body("PayloadTooLarge", ErrorCode::FrameTooLarge, message),
                    *line,
                ),
            ),
            Self::BodyTooLarge { .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                error_body("PayloadTooLarge", ErrorCode::FrameTooLarge, message),
            ),
            Self::MethodNotAllowed { .. } => (
                StatusCode::METHOD_NOT_ALLOWED,
                error_body("MethodNotAllowed", ErrorCode::BadRequest, message),
            ),
            Self::UnsupportedMediaType { .. } => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                error_body("UnsupportedMediaType", ErrorCode::BadRequest, message),
            ),
            Self::RequestTimeout(timeout) => (
                StatusCode::REQUEST_TIMEOUT,
                error_body("RequestTimeout", timeout.code(), message),
            ),
            Self::TimeLimit(_) => (
                StatusCode::GATEWAY_TIMEOUT,
                error_body("DeadlineExceeded", ErrorCode::DeadlineExceeded, message),
            ),
            Self::Application(value) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({ "error": "Application", "value": value }),
            ),
            Self::Call(error) => match error.code() {
                Some(code) => (
                    status_for(code),
                    error_body(&format!("{code:?}"), code, message),
                ),
                None => {
                    // No code came from the server: the closest one, by the status table.
                    let (status, name, code) = match error {
                        Error::Timeout { .. } => (
                            StatusCode::GATEWAY_TIMEOUT,
                            "DeadlineExceeded",
                            ErrorCode::DeadlineExceeded,
                        ),
                        // Nothing was sent: the service is unavailable for now, not broken.
                        Error::CircuitOpen { .. } => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            "CircuitOpen",
                            ErrorCode::Overloaded,
                        ),
                        Error::ConcurrencyLimit { .. } => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            "ConcurrencyLimit",
                            ErrorCode::Overloaded,
                        ),
                        Error::Unavailable { .. } => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            "Unavailable",
                            ErrorCode::Overloaded,
                        ),
                        _ => (
                            StatusCode::BAD_GATEWAY,
                            "Unavailable",
                            ErrorCode::ProtocolViolation,
                        ),
                    };
                    (status, error_body(name, code, message))
                }
            },
        }
    }
}

impl GatewayError {
    /// The JSON body of the response, also what a stream that fails after its first item
    /// ends with.
    pub(crate) fn body(&self) -> Value {
        self.status_and_body().1
    }
}

impl IntoResponse for GatewayError {
    fn into_response(self) -> Response {
        let (status, body) = self.status_and_body();
        let mut response = (status, Json(body)).into_response();
        if matches!(self, Self::RequestTimeout(_)) {
            // The rest of a stalled body may never come: the connection is not reused.
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}
