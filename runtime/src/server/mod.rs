//! The server side: a [`ServerBuilder`] collects services and limits, [`ServerBuilder::bind`]
//! starts accepting, and the [`RunningServer`] handle reports the address and shuts down.
//!
//! Layout: `builder.rs` is [`Server::builder`] and the [`ServerBuilder`] options; `config.rs`
//! the settings value they fill and every default (the `DEFAULT_*` constants);
//! `launch.rs` how `bind` turns a builder into a running server; `listener.rs` binding, the
//! accept loop and how an accepted stream is opened (TLS, then the hello), with
//! `accept_backoff.rs` the pause after a failed `accept`; `shared.rs` the state every
//! connection shares (token check, shutdown signals, the connection slot); `running.rs` the
//! [`RunningServer`] and [`ShutdownHandle`] handles and [`shutdown_signal`];
//! `connection/` one connection's read loop and calls; `layer/` the tower stack every call
//! goes through; `handler.rs` what generated servers run a handler through, every shape
//! alike; `stream/` what is a stream's own; `router.rs` method ids to handlers; `identity.rs`
//! and `request.rs` what the authorisation hook and the layers see; `registration.rs`
//! publishing in a registry;
//! `descriptor_budget.rs` the default connection limit; `metrics.rs` the server's metrics.

mod accept_backoff;
mod builder;
mod config;
pub(crate) mod connection;
mod descriptor_budget;
#[doc(hidden)]
pub mod handler;
pub(crate) mod identity;
mod launch;
mod layer;
mod listener;
pub mod metrics;
mod registration;
pub(crate) mod request;
mod router;
pub(crate) mod running;
pub(crate) mod shared;
pub(crate) mod stream;

pub use builder::{Server, ServerBuilder};
#[cfg(feature = "grpc")]
pub use config::DEFAULT_GRPC_PACKAGE;
pub use config::{
    DEFAULT_AUTH_FAILURE_WINDOW, DEFAULT_AUTH_MAX_FAILURES, DEFAULT_DRAIN_DELAY,
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE_WHILE_SERVING,
    DEFAULT_LISTEN_BACKLOG, DEFAULT_MAX_CONNECTIONS_CEILING, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION, DEFAULT_MAX_STREAMS_PER_CONNECTION, DEFAULT_PING_TIMEOUT,
    DEFAULT_RESERVED_DESCRIPTORS, DEFAULT_SHUTDOWN_GRACE_PERIOD, DEFAULT_WRITE_TIMEOUT,
};
pub use identity::{CallTarget, PeerIdentity};
pub use request::{Reply, Request};
pub use running::{shutdown_signal, RunningServer, ShutdownHandle};
