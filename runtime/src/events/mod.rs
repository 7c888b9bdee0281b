//! Typed events: publish once, every subscription receives it, durably with RabbitMQ.
//!
//! A trait marked `#[wirecall::events]` is a contract; the macro generates
//! `{Trait}Publisher`, one typed method per event, and `{Trait}Subscriber`, which wraps an
//! implementation of the trait so that [`EventBus::subscribe`] can hand it events. Payloads
//! are the event's arguments, encoded with the same codecs as calls; the message's
//! content type names the codec, so a consumer decodes whatever a producer chose.
//!
//! Layout, one job per file: [`EventBus`] (`bus.rs`) over a back-end, `in_process.rs` (the
//! default) or `rabbitmq/` (feature `rabbitmq`); [`Envelope`] (`envelope.rs`), what travels
//! with an event; `contract.rs`, the seam generated code implements; `consume.rs`, how one
//! delivered event is handled and judged, the same for every back-end; `redelivery.rs`,
//! `config.rs`, `dead_letter.rs`, `context.rs`, `subscription.rs`, `error.rs`;
//! `handled_once/`, the opt-in window that acknowledges a redelivery of a handled event
//! without running its handler again; [`metrics`], what consuming counts.
//!
//! The book's "Events" chapter describes the topology and every guarantee.

mod bus;
mod config;
mod consume;
mod context;
mod contract;
mod dead_letter;
mod envelope;
mod error;
mod handled_once;
mod in_process;
pub mod metrics;
#[cfg(feature = "rabbitmq")]
mod rabbitmq;
mod redelivery;
mod subscription;

pub use bus::EventBus;
pub use config::{SubscriptionConfig, DEFAULT_PREFETCH};
pub use context::EventContext;
pub use contract::{ContractDescriptor, EventHandler, HandlerFuture, HandlerOutcome};
pub use dead_letter::DeadLetter;
pub use envelope::{codec_of, content_type, Envelope, EventId};
pub use error::{
    ConnectError, DeadLetterReason, HandlerError, PublishError, PublishOutcome, SubscribeError,
};
pub use handled_once::{
    HandledIdFuture, HandledIdStore, HandledIdStoreError, HandledOnce, DEFAULT_HANDLED_AGE,
    DEFAULT_HANDLED_IDS,
};
pub use in_process::IN_PROCESS_QUEUE_CAPACITY;
#[cfg(feature = "rabbitmq")]
#[cfg_attr(docsrs, doc(cfg(feature = "rabbitmq")))]
pub use rabbitmq::{
    topology, RabbitMqConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PUBLISH_RETRY_WITHIN,
    DEFAULT_RECONNECT_MAX_DELAY, DEFAULT_RECONNECT_MIN_DELAY,
};
pub use redelivery::{
    RetryDecision, RetryPolicy, DEFAULT_FIRST_RETRY_DELAY, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_RETRY_DELAY,
};
pub use subscription::Subscription;

/// What generated event code calls.
#[doc(hidden)]
pub mod __private {
    pub use super::bus::publish;
    pub use super::contract::{handle_event, unknown_event};
}
