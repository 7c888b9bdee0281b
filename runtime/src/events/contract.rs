//! The seam between generated code and the bus: a contract's description, and the
//! [`EventHandler`] a generated `{Trait}Subscriber` implements.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use super::error::HandlerError;
use crate::codec::Codec;
use crate::message::{ArgValues, ArgsMessage, MethodMessages};

/// An event contract (a trait marked `#[wirecall::events]`): its name, which names the
/// exchange, and its events, which are the routing keys.
#[derive(Debug)]
pub struct ContractDescriptor {
    /// The contract's name: the trait's name, or `name = "..."`.
    pub name: &'static str,
    /// The events, one per trait method, by method name.
    pub events: &'static [&'static str],
}

/// What handling one event returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send>>;

/// A subscriber: something that decodes and handles the events of one contract.
/// `#[wirecall::events]` generates one (`{Trait}Subscriber`) for every implementation of the
/// trait; pass it to [`EventBus::subscribe`](super::EventBus::subscribe).
pub trait EventHandler: Send + Sync + 'static {
    /// The contract whose events this handles.
    fn contract(&self) -> &'static ContractDescriptor;

    /// Decodes `payload` as `event`'s arguments with `codec` and runs the handler.
    fn handle(&self, event: &str, codec: Codec, payload: Bytes) -> HandlerFuture;
}

/// What an event handler method may return: `()` (always success) or `Result<(), E>` where
/// `E` is shown in the dead letter if every attempt fails.
#[diagnostic::on_unimplemented(
    message = "an event handler returns `()` or `Result<(), E>` with `E: Display`",
    label = "`{Self}` is not `()` or `Result<(), E: Display>`"
)]
pub trait HandlerOutcome {
    /// `Ok` for success, the error's text otherwise.
    fn into_outcome(self) -> Result<(), String>;
}

impl HandlerOutcome for () {
    fn into_outcome(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: std::fmt::Display> HandlerOutcome for Result<(), E> {
    fn into_outcome(self) -> Result<(), String> {
        self.map_err(|error| error.to_string())
    }
}

/// Decodes the arguments of one event and runs `handler` on them; what generated
/// `{Trait}Subscriber`s call for each event.
#[doc(hidden)]
pub fn handle_event<M, F, Fut>(codec: Codec, payload: Bytes, handler: F) -> HandlerFuture
where
    M: MethodMessages<Args: ArgsMessage>,
    F: FnOnce(ArgValues<M>) -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: HandlerOutcome,
{
    match codec.decode_shared::<M::Args>(payload) {
        Ok(args) => Box::pin(async move {
            handler(args.into_values())
                .await
                .into_outcome()
                .map_err(HandlerError::Failed)
        }),
        Err(error) => Box::pin(std::future::ready(Err(HandlerError::Undecodable(error)))),
    }
}

/// The answer to an event name the contract does not have.
#[doc(hidden)]
pub fn unknown_event(event: &str) -> HandlerFuture {
    Box::pin(std::future::ready(Err(HandlerError::UnknownEvent(
        event.to_owned(),
    ))))
}
