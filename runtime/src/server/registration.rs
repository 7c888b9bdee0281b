//! A server's registrations: made once the listener is bound, withdrawn first on a graceful
//! shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::codec::Codec;
use crate::discovery::record::Registration;
use crate::discovery::registered::Registered;
use crate::discovery::registry::Registry;
use crate::service::Service;

/// Fills in what the server knows (its address, services and codecs) and starts keeping each
/// registration alive in the background.
pub(crate) fn start(
    requests: Vec<(Registry, Registration)>,
    local_addr: SocketAddr,
    services: &[Arc<dyn Service>],
    codecs: &[Codec],
) -> Vec<Registered> {
    requests
        .into_iter()
        .map(|(registry, mut registration)| {
            if registration.address.is_empty() {
                registration.address = local_addr.to_string();
            }
            if registration.services.is_empty() {
                registration.services = services
                    .iter()
                    .map(|service| service.descriptor().name.to_owned())
                    .collect();
            }
            if registration.codecs.is_empty() {
                registration.codecs = codecs.iter().map(|c| c.name().to_owned()).collect();
            }
            registry.keep_registered(registration)
        })
        .collect()
}

/// Deregisters everything (concurrently), then waits `drain_delay` so that clients see the
/// removal before the server stops reading calls.
pub(crate) async fn withdraw(registered: Vec<Registered>, drain_delay: Duration) {
    if registered.is_empty() {
        return;
    }
    futures::future::join_all(registered.into_iter().map(Registered::deregister)).await;
    tracing::info!(
        ?drain_delay,
        "deregistered; waiting for clients to see it before draining"
    );
    tokio::time::sleep(drain_delay).await;
}
