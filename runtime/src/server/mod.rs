//! The server side: a [`ServerBuilder`] collects services and limits, [`ServerBuilder::bind`]
//! starts accepting, and the [`RunningServer`] handle reports the address and shuts down.

mod builder;
mod config;
mod connection;
mod descriptor_budget;
mod identity;
mod launch;
mod layer;
mod listener;
pub mod metrics;
mod registration;
mod request;
pub use registration::DEFAULT_DRAIN_DELAY;
mod router;
mod running;
mod shared;

pub use builder::{Server, ServerBuilder};
pub use identity::{CallTarget, PeerIdentity};
pub use request::{Reply, Request};
pub use running::{shutdown_signal, RunningServer, ShutdownHandle};
