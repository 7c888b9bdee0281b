//! # wirecall
//!
//! Typed, multiplexed RPC for Rust. Put [`#[wirecall::service]`](macro@service) on a plain
//! trait and get, at compile time, a typed client (`{Trait}Client`) and a server dispatcher
//! (`{Trait}Server`). Calls travel over TCP in length-prefixed frames, many in flight on one
//! connection, encoded with a codec that client and server negotiate per connection: JSON,
//! MessagePack or Protobuf.
//!
//! ```no_run
//! use wirecall::{message, service, Server};
//!
//! #[message]
//! #[derive(Clone, PartialEq)]
//! pub struct Greeting {
//!     pub text: String,
//! }
//!
//! #[service]
//! pub trait Greeter {
//!     /// Says hello to `name`.
//!     async fn hello(&self, name: String) -> Greeting;
//! }
//!
//! struct English;
//!
//! impl Greeter for English {
//!     async fn hello(&self, name: String) -> Greeting {
//!         Greeting { text: format!("hello, {name}") }
//!     }
//! }
//!
//! # async fn run() -> Result<(), wirecall::Error> {
//! let server = Server::builder()
//!     .serve(GreeterServer::new(English))
//!     .bind("127.0.0.1:0")
//!     .await?;
//! let client = GreeterClient::connect(server.local_addr()).await?;
//! let greeting = client.hello("wirecall".to_owned()).await?;
//! assert_eq!(greeting.text, "hello, wirecall");
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The guide (`book/`) explains every piece; the wire protocol is specified there too.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `json`, `msgpack`, `protobuf` | on | the codecs (serde_json, rmp-serde, prost) |
//! | `tls` | off | TLS and mutual TLS with rustls and the ring provider: `ServerBuilder::tls`, `ChannelBuilder::tls`, `ServerTlsConfig`, `ClientTlsConfig` (2.4 MB of a 5.5 MB hello binary) |
//! | `zstd` | off | negotiated zstd compression of large frames: `Compression`, `ServerBuilder::compression`, `ChannelBuilder::compression` (builds the zstd C library) |
//! | `etcd` | off | the etcd registry back-end, `discovery::Etcd` (etcd-client; building it needs `protoc`) |
//! | `zookeeper` | off | the ZooKeeper back-end, `discovery::ZooKeeper` (zookeeper-client) |
//! | `rabbitmq` | off | the RabbitMQ event-bus back-end, `events::EventBus::rabbitmq` (lapin; needs Rust 1.88) |
//! | `grpc` | off | the gRPC door: the server answers standard gRPC on its port too, with reflection and the health check (`ServerBuilder::grpc`; h2) |
//!
//! A first service needs none of the features that are off: each is named where its items
//! are documented, and the README has the same table.
//! docs.rs marks every item that needs a feature.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod health {
    //! A built-in health service, like gRPC's health-checking protocol: per service, `Serving`,
    //! `NotServing` or `Draining`, which orchestrators and clients can probe over wirecall, and
    //! which a balanced channel asks before it sends an endpoint calls again
    //! ([`BalancedChannelBuilder::health_check`](crate::discovery::BalancedChannelBuilder::health_check)).
    //!
    //! ```no_run
    //! use wirecall::health::{HealthReporter, ServingStatus};
    //! # #[wirecall::service]
    //! # pub trait Users { async fn ping(&self) -> u32; }
    //! # struct Impl;
    //! # impl Users for Impl { async fn ping(&self) -> u32 { 1 } }
    //!
    //! # async fn run() -> Result<(), wirecall::Error> {
    //! let health = HealthReporter::new();
    //! health.set(UsersClient::SERVICE_NAME, ServingStatus::Serving);
    //! let server = wirecall::Server::builder()
    //!     .serve(UsersServer::new(Impl))
    //!     .serve(health.service())
    //!     .bind("127.0.0.1:7000")
    //!     .await?;
    //! // Every service reports Draining as soon as a graceful shutdown begins.
    //! health.drain_on_shutdown(server.shutdown_handle());
    //! server.run_until_shutdown_signal().await;
    //! # Ok(())
    //! # }
    //! ```

    pub use wirecall_runtime::health::*;
}

/// Cheaply cloneable bytes (the `bytes` crate's), for binary payloads: `Bytes` fields and
/// arguments travel as `bin` in MessagePack and `bytes` in Protobuf, where `Vec<u8>` would be an
/// array of integers in MessagePack and JSON.
pub use ::bytes::Bytes;
pub use wirecall_macros::{events, message, service};
pub use wirecall_runtime::shutdown_signal;
/// What [`ChannelBuilder::connect_with`] and [`RunningServer::serve_stream`] accept: any
/// byte stream that can be split into a read and a write half (TCP, TLS, a Unix socket, an
/// in-memory `tokio::io::duplex`).
pub use wirecall_runtime::transport::Transport;
/// The wire vocabulary in one place: frame kinds and header layout, error codes, hello
/// fields and statuses, codec ids and the method-id hash. The book's wire-protocol chapter
/// is the normative description; this is the code both the runtime and the macros use.
pub use wirecall_runtime::wire;
pub use wirecall_runtime::{
    method_id, CallError, CallTarget, Channel, ChannelBuilder, Codec, CodecError, Compression,
    DecompressError, Error, ErrorCode, FrameError, MethodDescriptor, MethodId, MethodShape,
    NegotiationError, Outcome, PeerIdentity, ReplyFuture, RunningServer, Server, ServerBuilder,
    Service, ServiceDescriptor, ShutdownHandle, Streaming, Token, WireMessage, PROTOCOL_VERSION,
};
/// Stream calls (protocol version 3): [`Streaming`], what a handler of a method declared
/// `-> wirecall::Streaming<T>` returns, and what travels for each item. The caller receives
/// a [`client::ItemStream`]. See the book's "Streaming" chapter.
pub mod stream {
    pub use wirecall_runtime::stream::*;
}
pub use wirecall_runtime::{
    BoxError, CallContext, Metadata, MetadataError, Next, MAX_METADATA_BYTES, MAX_METADATA_ENTRIES,
};
/// Service discovery and load balancing: registries ([`discovery::StaticRegistry`], and
/// `discovery::Etcd` and `discovery::ZooKeeper` with the `etcd` and `zookeeper` features),
/// the [`discovery::Registration`] record a server publishes with
/// [`ServerBuilder::register`], and the options of a balanced [`Channel`]
/// ([`discovery::BalancedChannelBuilder`], from [`Channel::balanced`]), which generated
/// clients use through `{Trait}Client::discover`. See the book's "Discovery and load
/// balancing" chapter.
pub mod discovery {
    pub use wirecall_runtime::discovery::*;
}
/// Typed events: a trait marked [`#[wirecall::events]`](macro@events) is a contract, the
/// macro generates `{Trait}Publisher` and `{Trait}Subscriber`, and an [`events::EventBus`]
/// carries the events, in-process (the default) or over RabbitMQ (feature `rabbitmq`),
/// durably, at least once, with retries and dead letters. See the book's "Events" chapter.
pub mod events {
    pub use wirecall_runtime::events::*;
}
/// The tower seam both sides share ([`Next`], what a layer added with
/// [`ChannelBuilder::layer`] or [`ServerBuilder::layer`] wraps) and the layers wirecall ships:
/// [`layers::CircuitBreakerLayer`], a client-side circuit breaker per method, with its
/// [`layers::CircuitBreakerConfig`] and defaults. See the book's "Circuit breaker" section.
pub mod layers {
    pub use wirecall_runtime::layers::*;
}
/// Per-method policies: the deadline, retries, concurrency limit, circuit breaker and
/// fallback a method declares with `#[wirecall(..)]` in its trait ([`policy::MethodPolicy`]),
/// and their run-time overrides ([`policy::Policies`], `WIRECALL_POLICY_FILE`,
/// `WIRECALL_POLICY`). See the book's "Resilience" chapter.
pub mod policy {
    pub use wirecall_runtime::policy::*;
}
/// The client side beyond [`Channel`]: the [`client::Method`] a call names, a stream call's
/// items, reading reply metadata, what a channel's tower layers see
/// ([`ChannelBuilder::layer`]), and the channel's defaults.
pub mod client {
    pub use wirecall_runtime::client::reply_metadata;
    pub use wirecall_runtime::client::{ItemStream, Method, Reply, Request};
    pub use wirecall_runtime::client::{
        DEFAULT_CONNECT_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_KEEPALIVE_INTERVAL,
        DEFAULT_KEEPALIVE_TIMEOUT, DEFAULT_KEEPALIVE_WHILE_WAITING, DEFAULT_MAX_RECONNECT_BACKOFF,
        DEFAULT_TIMEOUT,
    };
}
/// The server side beyond [`Server`]: what a server's tower layers see
/// ([`ServerBuilder::layer`]), the server's defaults, and the names and labels of the
/// metrics it reports ([`server::metrics`]).
pub mod server {
    pub use wirecall_runtime::server::metrics;
    pub use wirecall_runtime::server::{Reply, Request};
    pub use wirecall_runtime::server::{
        DEFAULT_AUTH_FAILURE_WINDOW, DEFAULT_AUTH_MAX_FAILURES, DEFAULT_DRAIN_DELAY,
        DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE_WHILE_SERVING,
        DEFAULT_LISTEN_BACKLOG, DEFAULT_MAX_CONNECTIONS_CEILING, DEFAULT_MAX_IN_FLIGHT,
        DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION, DEFAULT_MAX_STREAMS_PER_CONNECTION,
        DEFAULT_PING_TIMEOUT, DEFAULT_RESERVED_DESCRIPTORS, DEFAULT_SHUTDOWN_GRACE_PERIOD,
        DEFAULT_WRITE_TIMEOUT,
    };
}
/// Service reflection: schemas, the built-in `wirecall.Reflection` service and its client,
/// and the `.proto` and JSON Schema exports.
pub use wirecall_runtime::reflect;
/// W3C trace context propagation (`traceparent` in call metadata).
pub use wirecall_runtime::trace;
/// TLS configuration (feature `tls`, off by default): rustls with the ring provider, ALPN id
/// `wirecall`. See the Security chapter of the book.
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use wirecall_runtime::{ClientTlsConfig, ServerTlsConfig};

/// Items used by the code that `#[service]` and `#[message]` generate. Not a public API:
/// it may change in any release.
#[doc(hidden)]
pub use wirecall_runtime::__private;

/// The README and the chapters of the book (`book/src`), compiled and run as doctests so that
/// their code cannot drift from the crate. See `book/README.md`.
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../README.md")]
    mod readme {}
    #[doc = include_str!("../book/src/introduction.md")]
    mod introduction {}
    #[doc = include_str!("../book/src/quick-start.md")]
    mod quick_start {}
    #[doc = include_str!("../book/src/services.md")]
    mod services {}
    #[doc = include_str!("../book/src/types-and-codecs.md")]
    mod types_and_codecs {}
    #[doc = include_str!("../book/src/errors.md")]
    mod errors {}
    #[doc = include_str!("../book/src/server.md")]
    mod server {}
    #[doc = include_str!("../book/src/client.md")]
    mod client {}
    #[doc = include_str!("../book/src/metadata.md")]
    mod metadata {}
    #[doc = include_str!("../book/src/resilience.md")]
    mod resilience {}
    #[doc = include_str!("../book/src/discovery.md")]
    mod discovery {}
    #[doc = include_str!("../book/src/streaming.md")]
    mod streaming {}
    #[doc = include_str!("../book/src/events.md")]
    mod events {}
    #[doc = include_str!("../book/src/wire-protocol.md")]
    mod wire_protocol {}
    #[doc = include_str!("../book/src/outside-rust.md")]
    mod outside_rust {}
    #[doc = include_str!("../book/src/performance.md")]
    mod performance {}
    #[doc = include_str!("../book/src/limits.md")]
    mod limits {}
    #[doc = include_str!("../book/src/security.md")]
    mod security {}
}
