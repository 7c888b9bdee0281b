//! The answers to requests no call route takes, in the gateway's JSON error body: a path
//! that is no route (404), a route asked with another HTTP method (405), and a path that
//! does not decode (400, such as `%FF`, not UTF-8).

use axum::extract::rejection::PathRejection;
use axum::http::{Method, Uri};

use crate::GatewayError;

/// The answer to a path no route has.
pub(crate) async fn no_route(uri: Uri) -> GatewayError {
    GatewayError::NoRoute(uri.path().to_owned())
}

/// The answer to a route asked with an HTTP method it does not take.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> GatewayError {
    GatewayError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

/// A call path whose segments do not decode, as a 400.
pub(crate) fn bad_path(rejection: PathRejection) -> GatewayError {
    GatewayError::BadBody(format!(
        "the path does not name a method: {}",
        rejection.body_text()
    ))
}
