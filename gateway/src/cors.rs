//! Cross-origin calls from browsers, for the origins listed on the builder
//! ([`GatewayBuilder::cors_origins`](crate::GatewayBuilder::cors_origins)) and no others.
//!
//! With no origin listed (the default) the gateway sends no CORS header at all: a browser
//! lets a page call it only from the gateway's own origin (the explorer), since every call
//! needs a preflight (`content_type.rs`) and none is answered. For a listed origin the
//! gateway answers the preflight (`OPTIONS` with `Access-Control-Request-Method`) with 204
//! and lets the page read the answers, their `wirecall-meta-*` headers included. Credentials
//! (cookies) are not allowed: the gateway has no use for them.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// How long a browser may keep a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// The origins allowed to call, exactly as a browser sends them (`https://app.example.com`,
/// `http://localhost:3000`).
#[derive(Debug, Clone)]
pub(crate) struct AllowedOrigins(pub(crate) Arc<[String]>);

/// Answers a listed origin's preflight, and marks the answers to its calls as readable by
/// it; requests from anywhere else pass untouched.
pub(crate) async fn allow_listed(
    State(allowed): State<AllowedOrigins>,
    request: Request,
    next: Next,
) -> Response {
    let origin = request
        .headers()
        .get(ORIGIN)
        .filter(|origin| {
            allowed
                .0
                .iter()
                .any(|listed| listed.as_bytes() == origin.as_bytes())
        })
        .cloned();
    let Some(origin) = origin else {
        return next.run(request).await;
    };
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST"),
        );
        if let Some(asked) = request.headers().get(ACCESS_CONTROL_REQUEST_HEADERS) {
            // Any request header: `content-type`, `accept`, `wirecall-meta-*`.
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        headers.insert(
            ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(PREFLIGHT_MAX_AGE),
        );
        response
    } else {
        let mut response = next.run(request).await;
        response
            .headers_mut()
            .insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("*"));
        response
    };
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.append(VARY, HeaderValue::from_static("origin"));
    response
}
