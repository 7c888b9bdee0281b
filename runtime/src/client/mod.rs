//! The client side: a [`Channel`] reaches one server, or every live endpoint of a service, and
//! any number of generated clients (and tasks) share it. Calls are multiplexed by request id
//! and may complete in any order.
//!
//! Layout: `channel.rs` is the [`Channel`] handle and its one call surface; `builder.rs` the
//! options and `connect*`; `settings.rs` the one `ConnectionSettings` value every connection
//! of a channel is opened with, and the defaults; `declared.rs` the [`Method`] a call names;
//! `stack/` the one call stack every call goes down (policy, deadline, retries); `endpoint/`
//! one server at the bottom of it (breaker, layers, connection); `stream/` stream calls;
//! `typed.rs` the calls of a generated client;
//! `request.rs` what the stack's tower layers see; `args.rs` a call's arguments on their way
//! to a frame; [`reply_metadata`] reading what a server sent back. This module only declares
//! and re-exports.

pub(crate) mod args;
pub(crate) mod builder;
pub(crate) mod channel;
pub(crate) mod declared;
pub(crate) mod endpoint;
pub mod reply_metadata;
pub(crate) mod request;
mod settings;
pub(crate) mod stack;
pub(crate) mod stream;
#[doc(hidden)]
pub mod typed;

pub use builder::ChannelBuilder;
pub use channel::Channel;
pub use declared::Method;
pub use request::{Reply, Request};
pub use settings::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_KEEPALIVE_INTERVAL,
    DEFAULT_KEEPALIVE_TIMEOUT, DEFAULT_KEEPALIVE_WHILE_WAITING, DEFAULT_MAX_RECONNECT_BACKOFF,
    DEFAULT_TIMEOUT,
};
pub use stream::item_stream::ItemStream;
