//! The broker connection and its supervisor: connect, notice a loss, reconnect with
//! backoff. The current connection is published on a `watch` channel (`None` while
//! disconnected); publishers read it and fail fast when it is `None`, consumers wait on it
//! and resubscribe when a new one appears.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use lapin::options::ConfirmSelectOptions;
use lapin::{Channel, Connection, ConnectionProperties, Event};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::config::{redact, RabbitMqConfig};
use super::topology;
use crate::events::error::ConnectError;

/// How often the supervisor also checks the connection's status, in case a loss produced no
/// error event.
const STATUS_POLL: Duration = Duration::from_millis(250);

/// One established connection.
pub(crate) struct Live {
    /// Counts connections: a consumer compares it to know a new one is up.
    pub(crate) generation: u64,
    pub(crate) connection: Connection,
    /// In confirm mode; shared by every publish (lapin pipelines them).
    pub(crate) publisher: Channel,
    /// Exchanges declared on this connection (read on every publish).
    declared: RwLock<HashSet<String>>,
}

impl Live {
    /// Declares the exchange of `contract` once per connection.
    pub(crate) async fn ensure_exchange(&self, contract: &str) -> lapin::Result<()> {
        if self
            .declared
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(contract)
        {
            return Ok(());
        }
        topology::declare_exchange(&self.publisher, contract).await?;
        self.declared
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(contract.to_owned());
        Ok(())
    }

    pub(crate) fn is_up(&self) -> bool {
        self.connection.status().connected() && self.publisher.status().connected()
    }
}

/// Opens a connection and its publishing channel.
pub(crate) async fn open(config: &RabbitMqConfig, generation: u64) -> Result<Live, ConnectError> {
    let unreachable = |cause: String| ConnectError::Unreachable {
        url: redact(&config.url),
        cause,
    };
    let properties =
        ConnectionProperties::default().with_connection_name(config.connection_name.clone().into());
    let connection = tokio::time::timeout(
        config.connect_timeout,
        Connection::connect(&config.url, properties),
    )
    .await
    .map_err(|_| unreachable(format!("no answer within {:?}", config.connect_timeout)))?
    .map_err(|error| unreachable(error.to_string()))?;
    let publisher = connection
        .create_channel()
        .await
        .map_err(|error| unreachable(error.to_string()))?;
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .map_err(|error| unreachable(error.to_string()))?;
    Ok(Live {
        generation,
        connection,
        publisher,
        declared: RwLock::new(HashSet::new()),
    })
}

/// Watches `live` and replaces it after a loss, until `closing`.
pub(crate) async fn supervise(
    config: RabbitMqConfig,
    state: watch::Sender<Option<Arc<Live>>>,
    mut live: Arc<Live>,
    closing: CancellationToken,
) {
    loop {
        tokio::select! {
            () = closing.cancelled() => return,
            () = until_lost(&live) => {}
        }
        tracing::warn!(url = %redact(&config.url), "event broker connection lost; reconnecting");
        state.send_replace(None);
        let generation = live.generation + 1;
        let mut delay = config.reconnect_min_delay;
        live = loop {
            match open(&config, generation).await {
                Ok(next) => break Arc::new(next),
                Err(error) => {
                    tracing::debug!(%error, ?delay, "event broker reconnect failed");
                    tokio::select! {
                        () = closing.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(config.reconnect_max_delay);
                }
            }
        };
        tracing::info!(generation, "event broker connection re-established");
        state.send_replace(Some(Arc::clone(&live)));
    }
}

async fn until_lost(live: &Live) {
    let mut events = live.connection.events_listener();
    let mut poll = tokio::time::interval(STATUS_POLL);
    loop {
        tokio::select! {
            event = events.next() => match event {
                // A channel's error is reported here too; only a dead connection or
                // publishing channel needs a new connection.
                Some(Event::Error(_)) if !live.is_up() => return,
                None => return,
                Some(_) => {}
            },
            _ = poll.tick() => if !live.is_up() {
                return;
            },
        }
    }
}
