//! One server, as the client stack reaches it: an [`Endpoint`] is the bottom of the stack,
//! where each attempt of a call goes: the method's circuit breaker on this server, the layers
//! of the channel's options, then the server's connection ([`Link`]), dialled again when it
//! broke.
//!
//! A direct channel has one endpoint; a balanced channel one per server it calls.
//!
//! Layout: this module is the endpoint; `link.rs` its connection and how it is dialled again;
//! `connector.rs` the innermost service of the endpoint's layers; `connection.rs` one
//! negotiated connection and how a call's frame is made; `send.rs` one attempt of each call
//! shape on a connection; `exchange.rs` a unary call's wait for its reply; `dial.rs` opening
//! connections (TCP or Unix, TLS, the hello) and `early.rs` the servers known to understand
//! early calls; `pending.rs` the calls waiting on a connection, `closed.rs` why they ended
//! when it closed, `reader.rs` the task that delivers their replies and `deadlines.rs` their
//! one deadline timer; `options.rs` what a balanced channel opens each endpoint with.

mod closed;
pub(crate) mod connection;
mod connector;
pub(crate) mod deadlines;
pub(crate) mod dial;
mod early;
mod exchange;
mod link;
pub(crate) mod options;
pub(crate) mod pending;
mod reader;
pub(crate) mod round_trip;
mod send;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::request::{Reply, Request};
use super::stack::call::{Call, Kind};
use super::stack::hop::Hop;
use crate::error::Error;
use crate::layers::circuit_breaker::circuits::Circuits;
use crate::layers::circuit_breaker::config::CircuitBreakerConfig;
use crate::layers::next::{Layers, Next};
use connection::Connection;
use connector::Connector;
use dial::Redial;
pub(crate) use link::Link;

/// How long `Channel::close` waits for the server to close its side before it drops the
/// connection.
const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// One server: its connection, the circuits of the breakers methods' policies turn on for it,
/// and the layers of the channel options, which run once per attempt on it.
pub(crate) struct Endpoint {
    pub(crate) link: Arc<Link>,
    circuits: Arc<Circuits>,
    layers: Option<Next<Request, Reply>>,
}

impl Endpoint {
    /// The endpoint of the server `connection` reached, with `layers` around its link.
    pub(crate) fn new(
        connection: Connection,
        redial: Option<Redial>,
        layers: &Layers<Request, Reply>,
    ) -> Self {
        let name = connection.peer.map(|addr| addr.to_string());
        let link = Arc::new(Link::new(connection, redial));
        let layers = layers.wrap(Connector {
            link: Arc::clone(&link),
        });
        Self {
            link,
            circuits: Circuits::new(name),
            layers,
        }
    }

    /// Whether the endpoint has layers of its own (then a call's arguments must be shareable
    /// before it reaches them).
    pub(crate) fn has_layers(&self) -> bool {
        self.layers.is_some()
    }

    /// Sends one attempt of `call`, `wire` being what the server is told of its deadline:
    /// through the method's circuit breaker and the endpoint's layers, when there are, to the
    /// connection. A call with neither goes straight on, inline (see [`Hop`]).
    pub(crate) fn attempt<'a>(
        &'a self,
        call: &'a Call<'a>,
        wire: Option<Duration>,
    ) -> Hop<'a, impl Future<Output = Result<Reply, Error>> + Send + 'a, Result<Reply, Error>> {
        match (call.breaker(), &self.layers) {
            (None, None) => Hop::inline(self.link.send(call, wire)),
            (None, Some(layers)) => Hop::boxed(self.through_layers(layers, call)),
            (Some(config), _) => Hop::boxed(self.guarded(call, wire, config)),
        }
    }

    /// [`attempt`](Self::attempt) through the method's circuit on this endpoint: the one
    /// place a policy's circuit breaker is entered. An open circuit refuses the attempt
    /// before anything is sent. A unary call reports its outcome when it ends; a stream
    /// carries its pending outcome and reports when the stream ends, so a stream that fails
    /// half-way counts as the failure it is.
    async fn guarded(
        &self,
        call: &Call<'_>,
        wire: Option<Duration>,
        config: &Arc<CircuitBreakerConfig>,
    ) -> Result<Reply, Error> {
        if call.kind == Kind::Stream {
            let pending = self.circuits.admit(call.method, config)?;
            return match self.pass(call, wire).await {
                Ok(mut reply) => {
                    match &mut reply.stream {
                        Some(stream) => stream.report_to(pending),
                        None => pending.finish(&Ok(())),
                    }
                    Ok(reply)
                }
                Err(err) => {
                    pending.finish_failed(&err);
                    Err(err)
                }
            };
        }
        let pending = self.circuits.admit_borrowed(call.method, config)?;
        let result = self.pass(call, wire).await;
        pending.finish(&result);
        result
    }

    /// Through the endpoint's layers, if it has any, to its connection.
    async fn pass(&self, call: &Call<'_>, wire: Option<Duration>) -> Result<Reply, Error> {
        match &self.layers {
            None => self.link.send(call, wire).await,
            Some(layers) => self.through_layers(layers, call).await,
        }
    }

    /// Through the endpoint's layers to its connection (the innermost layer tells the server
    /// what is left of the deadline then).
    async fn through_layers(
        &self,
        layers: &Next<Request, Reply>,
        call: &Call<'_>,
    ) -> Result<Reply, Error> {
        layers
            .call_shared(Request::from_call(call))
            .await
            .map_err(|err| self.name_open_circuit(Error::from_layer(err)))
    }

    /// A circuit breaker among the layers cannot know which endpoint it guards; the endpoint
    /// does, so its error names it.
    fn name_open_circuit(&self, error: Error) -> Error {
        match error {
            Error::CircuitOpen {
                method,
                endpoint: None,
                retry_after,
            } => Error::CircuitOpen {
                method,
                endpoint: self.link.peer_addr().map(|addr| addr.to_string()),
                retry_after,
            },
            other => other,
        }
    }
}

impl Endpoint {
    /// Gives up on the endpoint's connection at once (a balanced channel ejected it): calls
    /// waiting on it fail now with [`Error::ConnectionClosed`] for `reason` (they may have
    /// run, so an `#[idempotent]` one is sent elsewhere and any other fails), rather than
    /// wait out their deadlines on a server that stopped answering.
    pub(crate) fn abandon(&self, reason: &str) {
        if !self.link.close_by_owner() {
            return;
        }
        let connection = self.link.current();
        connection
            .pending
            .close_all(closed::Closed::new(reason.to_owned(), None));
        connection.sink.close();
        connection.reader.abort();
    }

    /// Closes the endpoint's connection for good: new calls fail at once, calls in flight
    /// finish first, then what is queued is written and the connection shut down (see
    /// `Channel::close`).
    pub(crate) async fn close(&self) {
        if !self.link.close_by_owner() {
            return;
        }
        let connection = self.link.current();
        connection.pending.drained().await;
        connection
            .pending
            .close_all(closed::Closed::new(link::CLOSED_BY_OWNER, None));
        connection.sink.close();
        connection.tasks.close();
        if tokio::time::timeout(CLOSE_LIMIT, connection.tasks.wait())
            .await
            .is_err()
        {
            tracing::debug!("the server did not close its side in time; dropping the connection");
            connection.reader.abort();
            connection.tasks.wait().await;
        }
    }
}
