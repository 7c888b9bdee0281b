//! How [`Gateway::serve`](crate::Gateway::serve) takes connections: HTTP/1.1 on hyper, each
//! connection given [`GatewayBuilder::header_read_timeout`] to send each request head (hyper's
//! own `header_read_timeout`, which also closes a keep-alive connection idle that long), and
//! at most [`GatewayBuilder::max_connections`] served at once.
//!
//! A connection over the cap is not served: it gets one answer, 503 with the JSON error body
//! (`Overloaded`, code 7) and `Connection: close`, to its first request, and is closed. At
//! most [`REFUSING_AT_ONCE`] such refusals run at a time, each bounded by the header timeout;
//! a connection beyond those is closed as soon as it is accepted.
//!
//! [`GatewayBuilder::header_read_timeout`]: crate::GatewayBuilder::header_read_timeout
//! [`GatewayBuilder::max_connections`]: crate::GatewayBuilder::max_connections

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CONNECTION, CONTENT_TYPE};
use axum::http::{HeaderValue, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use wirecall::ErrorCode;

/// How many connections over the cap are answered 503 at once; beyond, they are closed at
/// accept.
pub const REFUSING_AT_ONCE: usize = 64;

/// How long to wait before accepting again after `accept` failed (for lack of descriptors,
/// most likely).
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// The settings of the door.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Door {
    pub(crate) header_read_timeout: Duration,
    pub(crate) max_connections: usize,
}

impl Door {
    fn http(self) -> http1::Builder {
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new());
        // Zero turns the timeout off.
        http.header_read_timeout(
            (!self.header_read_timeout.is_zero()).then_some(self.header_read_timeout),
        );
        http
    }
}

/// Serves `router` on `listener` behind `door`, until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, router: Router, door: Door) -> io::Result<()> {
    let open = Arc::new(Semaphore::new(door.max_connections));
    let refusing = Arc::new(Semaphore::new(REFUSING_AT_ONCE));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) if is_per_connection(&error) => continue,
            Err(_) => {
                // Out of descriptors (EMFILE, ENFILE) or memory, most likely: the
                // connections served meanwhile may free some.
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        // Small answers go out at once.
        let _ = stream.set_nodelay(true);
        if let Ok(permit) = Arc::clone(&open).try_acquire_owned() {
            let router = router.clone();
            tokio::spawn(async move {
                let service = TowerToHyperService::new(router);
                // A connection that breaks is the client's business.
                let _ = door
                    .http()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                drop(permit);
            });
        } else if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
            tokio::spawn(async move {
                refuse(stream, door).await;
                drop(permit);
            });
        }
        // Otherwise the stream is dropped: closed at once.
    }
}

/// Answers the first request on `stream` with 503, and closes it.
async fn refuse(stream: TcpStream, door: Door) {
    let max = door.max_connections;
    let service = hyper::service::service_fn(move |_: Request<Incoming>| async move {
        Ok::<_, Infallible>(over_the_cap(max))
    });
    let _ = door
        .http()
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// The refusal of a connection over the cap.
fn over_the_cap(max: usize) -> Response<Body> {
    let body = serde_json::json!({
        "error": "Overloaded",
        "code": ErrorCode::Overloaded.to_u16(),
        "message": format!(
            "the gateway serves at most {max} connections at once; try again later"
        ),
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// An error of one connection that `accept` reports: the next one may be fine.
fn is_per_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
