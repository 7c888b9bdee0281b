//! An HTTP/JSON gateway for wirecall services, built from the server's reflection service.
//!
//! - `POST /{service}/{method}` with a JSON object of named arguments calls the method and
//!   answers its reply as JSON (200), its application error as `{"error": "Application",
//!   "value": ...}` (422), and a wirecall error with the status of the table in
//!   [`status_for`] and a body `{"error": name, "code": wire code, "message": ...}`. A
//!   one-way method answers 202 once the call is sent.
//! - A server-streaming method (`-> Streaming<T>`) answers newline-delimited JSON
//!   (`Content-Type: application/x-ndjson`): one item per line, each written as it arrives.
//!   An error before the first item is answered as a unary call's; a stream that fails after
//!   it ends with a line `{"error": {...}}`, the body a unary call would have answered. The
//!   time limit bounds the whole stream; a client that disconnects cancels it.
//! - A request whose `Accept` prefers `text/event-stream` to `application/x-ndjson` (by
//!   q-values; NDJSON wins ties, so it stays the default) gets the stream as Server-Sent
//!   Events instead: one event per item, its data the item's JSON; then an event `end` (data
//!   `{}`), or an event `error` whose data is the error body; and a keep-alive comment while
//!   it is idle ([`GatewayBuilder::event_stream_keep_alive`]).
//! - A method that takes an upload (an argument of type `Streaming<T>`: client or
//!   bidirectional streaming) takes a newline-delimited JSON body: the first line is the
//!   argument object of its other arguments (`{}` if none), each following line one item,
//!   sent as soon as it is read, so the body streams through in bounded memory. A
//!   client-streaming method answers as a unary call does, a bidirectional one as a server
//!   stream does. A line that is not JSON or not an item (or over the body limit) ends the
//!   call: 400 (413) with its number in `line`, or an error line if the answer has started.
//!   The same upload may also be sent as one JSON array (`Content-Type: application/json`):
//!   `[arguments, item, item, ...]`, read whole within the body limit, element `n` standing
//!   for line `n`.
//! - Arguments and items are checked against the types the server reflects, by the rules the
//!   OpenAPI document states (the document is written from the same types): a value it does
//!   not allow is refused with 400 and where it is (``argument `all`: at `.an_f32`: ...``),
//!   before the call is made. An integer written with a zero fraction (`436.0`) is sent as
//!   the integer; a `Result<Option<T>, E>` answers `T` or `null`.
//! - Request headers `wirecall-meta-{key}` become call metadata `{key}`; a unary call's reply
//!   metadata comes back as `wirecall-meta-{key}` response headers. (Streams and uploads
//!   answer without: a stream's frames carry no reply metadata yet.)
//! - Bodies are limited in size ([`GatewayBuilder::max_body_bytes`], 413 past it; for an
//!   upload, each line is) and calls in time ([`GatewayBuilder::time_limit`], 504 past it;
//!   counted from the request's head, so a body not all read by then gets 408).
//! - A call must say `Content-Type: application/json` ([`JSON`]; [`NDJSON`] or [`JSON`] for
//!   an upload), else 415: a browser then cannot call from another origin without a CORS
//!   preflight, which is answered only for the origins of [`GatewayBuilder::cors_origins`]
//!   (none by default).
//!   The explorer calls only when its Call button is clicked.
//! - [`Gateway::serve`] holds the door: a connection must send each request head within
//!   [`GatewayBuilder::header_read_timeout`] (closed otherwise, as is a keep-alive connection
//!   idle that long), a body that stalls for [`GatewayBuilder::body_read_timeout`] gets 408 and
//!   a closed connection, and at most [`GatewayBuilder::max_connections`] are served at once
//!   (one more gets 503).
//! - Every error is a JSON body `{"error": name, "code": wire code, "message": ...}`, the
//!   gateway's own refusals (404, 405, 400 for a bad path, 408, 413, 415, 503) too.
//! - `GET /openapi.json` is an OpenAPI 3.1 document of every method; `GET /services.json` the
//!   reflected schemas; `GET /` an explorer page (no external assets) to pick a method, fill
//!   its arguments and call it.
//!
//! The gateway talks to the server through a [`Channel`] on the JSON codec: a remote server,
//! or one in the same process (connect to its address, or hand it an in-memory stream with
//! `RunningServer::serve_stream` and `ChannelBuilder::connect_with`), or a fleet found by
//! service discovery (`Channel::balanced()`): every call then goes to one live endpoint, with
//! the balanced channel's failover.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use wirecall::{Channel, Codec};
//! use wirecall_gateway::Gateway;
//!
//! let channel = Channel::builder().codec(Codec::Json).connect("127.0.0.1:7000").await?;
//! let gateway = Gateway::builder().build(channel).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! gateway.serve(listener).await?; // or mount `gateway.router()` in your own axum app
//! # Ok(())
//! # }
//! ```

mod accept;
mod answer_part;
mod arguments;
mod body_lines;
mod content_type;
mod cors;
mod door;
mod event_stream;
mod json_shape;
mod ndjson;
mod openapi;
mod request_body;
mod route_errors;
mod schema_of;
mod status;
mod stream;
mod time_limit;
mod upload;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde_json::Value;
use wirecall::client::reply_metadata::with_reply_metadata;
use wirecall::client::Method;
use wirecall::reflect::{MethodSchema, ReflectionClient, ServiceSchema};
use wirecall::{Channel, Codec, Error, MethodId};

use accept::StreamFormat;
pub use content_type::JSON;
pub use door::REFUSING_AT_ONCE;
pub use event_stream::EVENT_STREAM;
pub use ndjson::NDJSON;
pub use status::{status_for, GatewayError, RequestTimeout};
use stream::AnswerFormat;
use time_limit::CallTimeLimit;
use upload::UploadCall;

/// The prefix of headers that carry call metadata, both ways.
pub const METADATA_HEADER_PREFIX: &str = "wirecall-meta-";

/// How long an event stream may be idle before the gateway sends a keep-alive comment, by
/// default: below the idle timeouts of common proxies and load balancers (60 s for nginx's
/// `proxy_read_timeout` and for AWS's load balancers), and below the default time limit, so
/// a stream whose items are slow is kept open for as long as it may run.
pub const DEFAULT_EVENT_STREAM_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a connection may take to send a request head, by default; also how long a
/// keep-alive connection may sit idle between requests. A head is one packet or a few: 10 s
/// is a slow mobile link's round trips many times over.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request body may stall (no byte while the gateway waits for one), by default.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How many connections [`Gateway::serve`] serves at once, by default. Each costs a
/// descriptor and a task with hyper's buffers (8 KiB to start); 4,096 of them fit in tens of
/// MiB and far exceed the calls two cores answer at once (a few hundred, at the gateway's
/// tens of thousands of small calls per second), so the cap is met by a flood, not by load:
/// 680 browsers' full pools of 6 connections each.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// Configures a [`Gateway`].
#[derive(Debug, Clone)]
pub struct GatewayBuilder {
    max_body_bytes: usize,
    time_limit: Duration,
    event_stream_keep_alive: Duration,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    max_connections: usize,
    cors_origins: Vec<String>,
}

impl Default for GatewayBuilder {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            time_limit: Duration::from_secs(30),
            event_stream_keep_alive: DEFAULT_EVENT_STREAM_KEEP_ALIVE,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            cors_origins: Vec::new(),
        }
    }
}

impl GatewayBuilder {
    /// The largest request body accepted (default 1 MiB); a larger one gets 413. For a
    /// method that takes an upload it bounds each line of the body instead (the arguments,
    /// and each item), since the body as a whole streams through without being held.
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// How long one call may take (default 30 s), counted from the request's head: reading
    /// the body counts (a body not all read by then gets 408), and it is also the call's
    /// deadline on the server. A call past it gets 504. For a server stream it bounds the whole stream: one
    /// cut off after its first item ends with an error line. For a method that takes an
    /// upload it bounds the upload and the answer together.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// How long a stream answered as Server-Sent Events may go without an event before the
    /// gateway sends a keep-alive comment (default [`DEFAULT_EVENT_STREAM_KEEP_ALIVE`]), so
    /// that a proxy that closes idle connections does not cut a stream whose items are slow.
    /// Zero sends none. (Newline-delimited JSON has no comment to send: an NDJSON stream
    /// stays silent.)
    pub fn event_stream_keep_alive(mut self, interval: Duration) -> Self {
        self.event_stream_keep_alive = interval;
        self
    }

    /// How long a connection served by [`Gateway::serve`] may take to send a request's head
    /// (default [`DEFAULT_HEADER_READ_TIMEOUT`], 10 s), counted from the first byte it is
    /// awaited: a connection that has not sent a whole head by then is closed, without an
    /// answer (none can be framed). A keep-alive connection idle that long between requests
    /// is closed the same way. Zero waits forever. (A router mounted in another server takes
    /// that server's.)
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a request body may stall: when the gateway waits this long for its next
    /// byte (default [`DEFAULT_BODY_READ_TIMEOUT`], 30 s), the request gets 408 with the JSON
    /// error body (`RequestTimeout`, code 10) and its connection is closed; an upload whose
    /// answer has started ends with that error line. Time the gateway spends not reading (an
    /// upload the server takes slowly) does not count. Zero waits forever (the time limit
    /// still bounds the call).
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// How many connections [`Gateway::serve`] serves at once (default
    /// [`DEFAULT_MAX_CONNECTIONS`], 4,096). A connection over the cap gets 503 with the JSON
    /// error body (`Overloaded`, code 7) to its first request and is closed (and is closed at
    /// once while [`REFUSING_AT_ONCE`] others are being refused). Keep it below the process's
    /// open-file limit.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// The origins whose pages may call the gateway from a browser (default none), exactly
    /// as a browser sends them in `Origin`: `https://app.example.com`,
    /// `http://localhost:3000`. The gateway answers their CORS preflights and lets them read
    /// its answers; with none listed it sends no CORS header, so only pages of its own origin
    /// (the explorer) can call it.
    pub fn cors_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cors_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Learns the server's services through `channel` (which must use the JSON codec) and
    /// builds the gateway. The schemas are taken once: build a new gateway when the server's
    /// services change.
    ///
    /// `channel` may reach one server or every live endpoint of a discovered service
    /// (`Channel::balanced()`): then the schemas are learnt from one endpoint, and each call
    /// goes to one endpoint picked by the channel's balancer, failing over as it does. Build
    /// a balanced channel with the JSON codec alone
    /// (`Channel::balanced().channel(Channel::builder().codec(Codec::Json))`); a call that
    /// meets an endpoint connection in another codec fails with a configuration error. The
    /// endpoints must serve the same services (one deployment behind one name).
    pub async fn build(self, channel: Channel) -> Result<Gateway, Error> {
        if channel.codec() != Codec::Json {
            return Err(Error::Config(format!(
                "the gateway passes JSON bodies through, so its channel must use the json \
                 codec (it uses {}); connect with `Channel::builder().codec(Codec::Json)`",
                channel.codec()
            )));
        }
        let schemas = reflect(channel.clone()).await?;
        let upstream = Upstream(channel.with_timeout(self.time_limit));
        Ok(self.gateway(upstream, schemas))
    }

    fn gateway(self, upstream: Upstream, schemas: Vec<ServiceSchema>) -> Gateway {
        Gateway {
            inner: Arc::new(Inner {
                upstream,
                schemas,
                config: self,
            }),
        }
    }
}

/// The schemas of every service behind `channel`, from its reflection service.
async fn reflect(channel: Channel) -> Result<Vec<ServiceSchema>, Error> {
    let reflection = ReflectionClient::new(channel);
    let mut schemas = Vec::new();
    for summary in reflection.list_services().await? {
        if let Ok(schema) = reflection.describe(summary.name).await? {
            schemas.push(schema);
        }
    }
    Ok(schemas)
}

/// Where the gateway's calls go: one server, or a discovered fleet, behind one channel.
#[derive(Debug, Clone)]
struct Upstream(Channel);

/// A reflected method as the channel calls it: by its id, idempotent as its schema says, so a
/// balanced channel may send it again to another endpoint after a broken connection.
fn method_of(method: &MethodSchema) -> Method {
    let declared = Method::from_id(MethodId::new(method.id));
    if method.idempotent {
        declared.idempotent()
    } else {
        declared
    }
}

impl Upstream {
    fn with_metadata(&self, key: &str, value: &str) -> Result<Self, wirecall::MetadataError> {
        Ok(Self(self.0.with_metadata(key, value)?))
    }

    /// An untyped call with JSON arguments.
    async fn call_raw(&self, method: &MethodSchema, args: Bytes) -> Result<Bytes, Error> {
        self.0.call_raw(&method_of(method), Codec::Json, args).await
    }

    async fn notify_raw(&self, method: &MethodSchema, args: Bytes) -> Result<(), Error> {
        self.0
            .notify_raw(&method_of(method), Codec::Json, args)
            .await
    }
}

/// The gateway: an axum [`Router`] in front of one wirecall server.
#[derive(Debug, Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    upstream: Upstream,
    schemas: Vec<ServiceSchema>,
    config: GatewayBuilder,
}

impl Gateway {
    /// A builder with the default limits.
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// The schemas the gateway serves.
    pub fn schemas(&self) -> &[ServiceSchema] {
        &self.inner.schemas
    }

    /// The OpenAPI 3.1 document of every method.
    pub fn openapi(&self) -> Value {
        openapi::document(&self.inner.schemas)
    }

    /// The routes: `POST /{service}/{method}`, `GET /openapi.json`, `GET /services.json` and
    /// `GET /`; with the body limits, the stall timeout and the CORS rule. (The header
    /// timeout and the connection cap are [`Gateway::serve`]'s.)
    pub fn router(&self) -> Router {
        let config = &self.inner.config;
        let stall = config.body_read_timeout;
        let router = Router::new()
            .route("/", get(explorer))
            .route("/openapi.json", get(openapi_json))
            .route("/services.json", get(services_json))
            .route("/{service}/{method}", post(call))
            .fallback(route_errors::no_route)
            .method_not_allowed_fallback(route_errors::method_not_allowed)
            .with_state(self.clone())
            .layer(axum::middleware::map_request(move |request: Request| {
                std::future::ready(request_body::limit_stalls(request, stall))
            }));
        if config.cors_origins.is_empty() {
            return router;
        }
        let allowed = cors::AllowedOrigins(config.cors_origins.clone().into());
        router.layer(axum::middleware::from_fn_with_state(
            allowed,
            cors::allow_listed,
        ))
    }

    /// Serves the gateway's routes on `listener` (HTTP/1.1), with the header timeout and the
    /// connection cap of the builder, until the task is dropped.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let config = &self.inner.config;
        let door = door::Door {
            header_read_timeout: config.header_read_timeout,
            max_connections: config.max_connections,
        };
        door::serve(listener, self.router(), door).await
    }

    /// The upstream, carrying the request's `wirecall-meta-{key}` headers as call metadata.
    fn upstream_with_metadata(&self, headers: &HeaderMap) -> Result<Upstream, GatewayError> {
        let mut upstream = self.inner.upstream.clone();
        for (name, value) in headers {
            let Some(key) = name.as_str().strip_prefix(METADATA_HEADER_PREFIX) else {
                continue;
            };
            let value = value.to_str().map_err(|_| {
                GatewayError::BadBody(format!("header {name} is not visible ASCII"))
            })?;
            upstream = upstream
                .with_metadata(key, value)
                .map_err(|error| GatewayError::BadBody(format!("header {name}: {error}")))?;
        }
        Ok(upstream)
    }

    /// The service and the method an HTTP path names.
    fn method(
        &self,
        service: &str,
        method: &str,
    ) -> Result<(&ServiceSchema, &MethodSchema), GatewayError> {
        let schema = self
            .inner
            .schemas
            .iter()
            .find(|schema| schema.name == service)
            .ok_or_else(|| GatewayError::NotFound(format!("no service named `{service}`")))?;
        let method = schema
            .method(method)
            .ok_or_else(|| GatewayError::NotFound(format!("{service} has no method `{method}`")))?;
        Ok((schema, method))
    }
}

async fn explorer() -> Html<&'static str> {
    Html(include_str!("explorer.html"))
}

async fn openapi_json(State(gateway): State<Gateway>) -> Json<Value> {
    Json(gateway.openapi())
}

async fn services_json(State(gateway): State<Gateway>) -> Json<Vec<ServiceSchema>> {
    Json(gateway.inner.schemas.clone())
}

async fn call(
    State(gateway): State<Gateway>,
    path: Result<Path<(String, String)>, PathRejection>,
    request: Request,
) -> Result<Response, GatewayError> {
    // The time limit counts from the request's head: reading the body is part of the call.
    let time = CallTimeLimit::starting_now(gateway.inner.config.time_limit);
    let Path((service, method)) = path.map_err(route_errors::bad_path)?;
    let (service, schema) = gateway.method(&service, &method)?;
    let media_type = if schema.upload.is_some() {
        content_type::require_upload(request.headers())?
    } else {
        content_type::require(request.headers(), JSON)?;
        JSON
    };
    // What checking an upload's items takes: the item's type and the service's named types.
    let upload = schema
        .upload
        .clone()
        .map(|item| (item, service.types.clone()));
    let schema = schema.clone();
    let service_types = service.types.clone();
    let (parts, body) = request.into_parts();
    let upstream = gateway.upstream_with_metadata(&parts.headers)?;
    let config = &gateway.inner.config;
    let answer_format = AnswerFormat {
        format: StreamFormat::preferred_by(&parts.headers),
        keep_alive: config.event_stream_keep_alive,
    };
    if let Some((item, types)) = upload {
        let body = if media_type == JSON {
            let whole =
                request_body::read_whole(&parts.headers, body, config.max_body_bytes, time).await?;
            axum::body::Body::from(arguments::upload_array_as_lines(&whole)?)
        } else {
            body
        };
        return upload::upload_response(UploadCall {
            upstream,
            method: schema,
            item,
            types,
            body,
            max_line: config.max_body_bytes,
            time,
            answer_format,
        })
        .await;
    }
    let body = request_body::read_whole(&parts.headers, body, config.max_body_bytes, time).await?;
    let (args, arguments) = arguments::check_body(&schema, &service_types, &body)?;
    if schema.server_stream {
        return stream::stream_response(upstream, schema, arguments, time, answer_format).await;
    }
    if schema.oneway {
        time.bound(upstream.notify_raw(&schema, args)).await??;
        return Ok(StatusCode::ACCEPTED.into_response());
    }
    let (reply, metadata) = time
        .bound(with_reply_metadata(upstream.call_raw(&schema, args)))
        .await?;
    let reply: Value = serde_json::from_slice(&reply?).map_err(|error| {
        GatewayError::Call(Error::Config(format!("reply is not JSON: {error}")))
    })?;
    let body = stream::item_value(&schema.reply, reply)?;
    let mut response = Json(body).into_response();
    response
        .headers_mut()
        .extend(stream::metadata_headers(&metadata));
    Ok(response)
}
