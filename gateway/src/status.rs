//! How a failed call becomes an HTTP response: the status table of the book's "Calling from
//! outside Rust" chapter, and a JSON body `{"error": name, "code": wire code, "message": ...}`.

use axum::http::StatusCode;
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

impl GatewayError {
    /// The response's status and its JSON body, `{"error": name, ...}`; a server stream that
    /// fails after its first item has sent its status, and ends with the body alone.
    pub(crate) fn status_and_body(&self) -> (StatusCode, Value) {
        match self {
            Self::NotFound(message) => (
                StatusCode::NOT_FOUND,
                json!({ "error": "NotFound", "message": message }),
            ),
            Self::BadBody(message) => (
                StatusCode::BAD_REQUEST,
                json!({ "error": "BadRequest", "code": 2, "message": message }),
            ),
            Self::BadLine { line, .. } => (
                StatusCode::BAD_REQUEST,
                json!({ "error": "BadRequest", "code": 2, "message": self.to_string(), "line": line }),
            ),
            Self::LineTooLong { line, .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({ "error": "PayloadTooLarge", "message": self.to_string(), "line": line }),
            ),
            Self::TimeLimit(_) => (
                StatusCode::GATEWAY_TIMEOUT,
                json!({ "error": "DeadlineExceeded", "code": 4, "message": self.to_string() }),
            ),
            Self::Application(value) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({ "error": "Application", "value": value }),
            ),
            Self::Call(error) => match error.code() {
                Some(code) => (
                    status_for(code),
                    json!({
                        "error": format!("{code:?}"),
                        "code": code.to_u16(),
                        "message": error.to_string(),
                    }),
                ),
                None => {
                    let (status, name) = match error {
                        Error::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, "DeadlineExceeded"),
                        // Nothing was sent: the service is unavailable for now, not broken.
                        Error::CircuitOpen { .. } => {
                            (StatusCode::SERVICE_UNAVAILABLE, "CircuitOpen")
                        }
                        Error::ConcurrencyLimit { .. } => {
                            (StatusCode::SERVICE_UNAVAILABLE, "ConcurrencyLimit")
                        }
                        Error::Unavailable { .. } => {
                            (StatusCode::SERVICE_UNAVAILABLE, "Unavailable")
                        }
                        _ => (StatusCode::BAD_GATEWAY, "Unavailable"),
                    };
                    (
                        status,
                        json!({ "error": name, "message": error.to_string() }),
                    )
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
        (status, Json(body)).into_response()
    }
}
