//! The client side: a [`Channel`] is one negotiated connection that any number of generated
//! clients (and tasks) share. Calls are multiplexed by request id and may complete in any
//! order.
//!
//! Layout: `channel.rs` is the [`Channel`] handle (calls, notifications, metadata, close,
//! reconnecting); `builder.rs` the options and `connect*`; `settings.rs` the one
//! `ConnectionSettings` value every connection of a channel is opened with, and the
//! defaults; `dial.rs` opens connections with it (TCP or Unix, TLS, the hello); `early.rs`
//! the servers known to understand early calls; `connection.rs` a connection's call path and
//! `exchange.rs` one call's wait for its reply; `failure.rs` what a failed attempt says
//! (may it be sent again?); `pending.rs` the calls waiting for replies
//! and `reader.rs` the task that delivers them; `args.rs` and `outgoing.rs` what a call
//! carries; `request.rs` the tower seam that [`ChannelBuilder::layer`] wraps, and
//! `connector.rs` its innermost service; `open.rs` opens a stream call, `stream_slot.rs`
//! holds its items in the pending table and `item_stream.rs` is the caller's [`ItemStream`];
//! `upload.rs` sends an upload as the server's credit allows, and `upload_sender.rs` is what
//! the stream's slot keeps of it.
//! This module only declares and re-exports.

pub(crate) mod args;
mod builder;
mod channel;
mod connection;
mod connector;
mod deadlines;
mod dial;
mod early;
mod exchange;
mod item_stream;
mod open;
mod outgoing;
mod pending;
mod reader;
pub mod reply_metadata;
pub(crate) mod request;
mod settings;
mod stream_opener;
mod stream_slot;
mod upload;
mod upload_sender;

pub(crate) use args::{CallArgs, EncodeArgs, RawArgs};
pub use builder::ChannelBuilder;
pub use channel::Channel;
#[doc(hidden)]
pub use item_stream::single_reply;
pub use item_stream::ItemStream;
pub(crate) use outgoing::Outgoing;
pub use request::{Reply, Request};
pub use settings::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_KEEPALIVE_INTERVAL, DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_RECONNECT_BACKOFF, DEFAULT_TIMEOUT,
};
