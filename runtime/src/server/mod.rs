//! The server side: a [`ServerBuilder`] collects services and limits, [`ServerBuilder::bind`]
//! starts accepting, and the [`RunningServer`] handle reports the address and shuts down.

mod accept_backoff;
mod builder;
mod config;
mod connection;
mod descriptor_budget;
pub(crate) mod identity;
mod launch;
mod layer;
mod listener;
pub mod metrics;
mod registration;
mod request;
mod router;
mod running;
mod shared;

pub use builder::{Server, ServerBuilder};
pub use config::{
    DEFAULT_AUTH_FAILURE_WINDOW, DEFAULT_AUTH_MAX_FAILURES, DEFAULT_DRAIN_DELAY,
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_LISTEN_BACKLOG,
    DEFAULT_MAX_CONNECTIONS_CEILING, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION,
    DEFAULT_PING_TIMEOUT, DEFAULT_RESERVED_DESCRIPTORS, DEFAULT_SHUTDOWN_GRACE_PERIOD,
    DEFAULT_WRITE_TIMEOUT,
};
pub use identity::{CallTarget, PeerIdentity};
pub use request::{Reply, Request};
pub use running::{shutdown_signal, RunningServer, ShutdownHandle};
