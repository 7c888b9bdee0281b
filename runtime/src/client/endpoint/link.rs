//! [`Link`]: a server's connection, and how it is dialled again when it broke.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::connection::Connection;
use super::dial::Redial;
use crate::client::settings::FIRST_BACKOFF;
use crate::error::Error;

/// Why calls on a channel closed with `Channel::close` fail.
pub(crate) const CLOSED_BY_OWNER: &str = "the channel was closed with Channel::close";

/// A server's connection, and how to dial it again.
pub(crate) struct Link {
    current: Mutex<Arc<Connection>>,
    /// Set by `Channel::close`: no new call, no reconnect.
    closed_by_owner: AtomicBool,
    /// How to dial again; `None` for connections over a stream the caller supplied. Kept
    /// with `reconnect(false)` too: a refusal of early calls is answered by dialling once
    /// more without them.
    redial: Option<Redial>,
}

impl Link {
    pub(crate) fn new(connection: Connection, redial: Option<Redial>) -> Self {
        Self {
            current: Mutex::new(Arc::new(connection)),
            closed_by_owner: AtomicBool::new(false),
            redial,
        }
    }

    pub(crate) fn current(&self) -> Arc<Connection> {
        // Only ever held to clone or swap an `Arc`, so a poisoned lock is still consistent.
        Arc::clone(&self.current.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub(crate) fn peer_addr(&self) -> Option<SocketAddr> {
        self.current().peer
    }

    /// Marks the link closed by its owner; `false` if it already was.
    pub(crate) fn close_by_owner(&self) -> bool {
        !self.closed_by_owner.swap(true, Ordering::AcqRel)
    }

    /// The current connection, if a call can go out on it now: the link is not closed, and
    /// the connection is open or will not be dialled again (then the call fails on it).
    #[inline]
    pub(crate) fn ready_connection(&self) -> Option<Arc<Connection>> {
        if self.closed_by_owner.load(Ordering::Acquire) {
            return None;
        }
        let current = self.current();
        match &self.redial {
            Some(redial)
                if current.pending.is_closed()
                    && (redial.reconnect || current.refused_early_calls()) =>
            {
                None
            }
            _ => Some(current),
        }
    }

    /// The connection to send on: the current one, or a new one if it closed (when the link
    /// dials again, or its early calls were refused).
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, Error> {
        if self.closed_by_owner.load(Ordering::Acquire) {
            return Err(Error::unsent(CLOSED_BY_OWNER));
        }
        let current = self.current();
        match &self.redial {
            Some(redial)
                if current.pending.is_closed()
                    && (redial.reconnect || current.refused_early_calls()) =>
            {
                // Boxed: dialling's state is kilobytes, and inline it would be part of every
                // call's future (held per call in flight) for a path taken only on reconnect.
                Box::pin(self.reconnect(redial)).await
            }
            _ => Ok(current),
        }
    }

    async fn reconnect(&self, redial: &Redial) -> Result<Arc<Connection>, Error> {
        let mut backoff = redial.backoff.lock().await;
        // Another call may have reconnected while this one waited for the lock.
        let current = self.current();
        if !current.pending.is_closed() {
            return Ok(current);
        }
        let now = Instant::now();
        if now < backoff.not_before {
            let wait = backoff.not_before - now;
            return Err(Error::Unavailable {
                reason: format!(
                    "{}; the next reconnect attempt is in {wait:?}",
                    current.closed_reason()
                ),
                retry_after: Some(wait),
            });
        }
        match redial.settings.dial(&redial.target).await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&connection);
                backoff.delay = FIRST_BACKOFF;
                tracing::debug!(peer = ?connection.peer, "reconnected");
                Ok(connection)
            }
            Err(err) => {
                backoff.not_before = Instant::now() + backoff.delay;
                backoff.delay = (backoff.delay * 2).min(redial.max_backoff);
                tracing::debug!(%err, "reconnect failed");
                Err(err)
            }
        }
    }
}
