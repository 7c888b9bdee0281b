//! Outlier ejection: an endpoint whose connection failed (or that failed an active health
//! check) leaves the rotation at once and is probed with a doubling backoff until it connects
//! and its health service reports the service serving.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::pool::{Pool, Slot, CONSECUTIVE_FAILURES_TO_EJECT};
use crate::client::channel::Channel;
use crate::client::endpoint::options::EndpointOptions;
use crate::error::{Error, ErrorCode};
use crate::health::{HealthClient, ServingStatus};

impl Pool {
    /// Takes a failed endpoint out of rotation and probes it with backoff until it connects.
    pub(super) fn eject(&self, slot: &Arc<Slot>, err: &Error) {
        if slot.ejected.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            service = %self.service,
            endpoint = %slot.address,
            %err,
            "endpoint ejected; probing it with backoff"
        );
        let connection = slot.ready.write().unwrap_or_else(|p| p.into_inner()).take();
        // Calls waiting on it would otherwise wait out their deadlines on a server that
        // stopped answering: they fail now, and the idempotent ones go elsewhere.
        if let Some(endpoint) = connection {
            endpoint.abandon(&format!("the endpoint was ejected: {err}"));
        }
        slot.consecutive_failures.store(0, Ordering::Relaxed);
        tokio::spawn(probe(
            Arc::downgrade(slot),
            self.options.clone(),
            self.probe_backoff,
            self.max_probe_backoff,
            self.service.clone(),
        ));
    }
}

impl Pool {
    /// Counts one more failure in a row against an endpoint whose connection still works
    /// (a timeout, an overloaded answer, a call out-raced by its hedge), and ejects it at
    /// [`CONSECUTIVE_FAILURES_TO_EJECT`], unless that would leave fewer than half of the
    /// endpoints in rotation: a fleet that is slow everywhere keeps its endpoints.
    pub(super) fn failed_again(&self, slot: &Arc<Slot>, err: &Error) {
        let failures = slot.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
        if failures < CONSECUTIVE_FAILURES_TO_EJECT || slot.ejected.load(Ordering::Relaxed) {
            return;
        }
        let state = self.state();
        let in_rotation = state
            .slots
            .iter()
            .filter(|slot| !slot.ejected.load(Ordering::Relaxed))
            .count();
        // Counted without a lock: another call may have ejected this endpoint meanwhile.
        if 2 * in_rotation.saturating_sub(1) < state.slots.len() {
            return;
        }
        let err = Error::Unavailable {
            reason: format!("{failures} calls in a row failed on it, the last with: {err}"),
            retry_after: None,
        };
        self.eject(slot, &err);
    }
}

/// The wait before the probe after one that failed after waiting `delay`.
fn next_probe_delay(delay: Duration, max: Duration) -> Duration {
    (delay * 2).min(max)
}

/// Dials an ejected endpoint with a doubling backoff until it answers (then re-admits it) or
/// leaves the endpoint set.
async fn probe(
    slot: Weak<Slot>,
    options: EndpointOptions,
    first: Duration,
    max: Duration,
    service: String,
) {
    let mut delay = first;
    loop {
        tokio::time::sleep(delay).await;
        let Some(address) = slot.upgrade().map(|s| s.address.clone()) else {
            return;
        };
        let answered = match options.dial(&address).await.map(Arc::new) {
            Ok(endpoint) => {
                let channel = Channel::on_endpoint(Arc::clone(&endpoint), &options);
                match health(&channel, &service).await {
                    Ok(Health::Serving) => Ok(endpoint),
                    Ok(Health::Not(status)) => Err(not_serving(status)),
                    Err(err) => Err(err),
                }
            }
            Err(err) => Err(err),
        };
        match answered {
            Ok(endpoint) => {
                let Some(slot) = slot.upgrade() else { return };
                *slot.ready.write().unwrap_or_else(|p| p.into_inner()) = Some(endpoint);
                slot.ejected.store(false, Ordering::Release);
                tracing::info!(%service, endpoint = %address, "endpoint answers again; re-added");
                return;
            }
            Err(err) => {
                tracing::debug!(%service, endpoint = %address, %err, ?delay, "probe failed");
                delay = next_probe_delay(delay, max);
            }
        }
    }
}

/// What an endpoint's health service says of a service.
pub(super) enum Health {
    /// `Serving`, `Unknown` (the server's reporter was not told about the service, so the
    /// passive checks decide), or no health service at all.
    Serving,
    /// `NotServing` or `Draining`.
    Not(ServingStatus),
}

/// Asks the endpoint behind `channel` for the health of `service`.
pub(super) async fn health(channel: &Channel, service: &str) -> Result<Health, Error> {
    match HealthClient::new(channel.clone())
        .check(service.to_owned())
        .await
    {
        Ok(ServingStatus::Serving | ServingStatus::Unknown) => Ok(Health::Serving),
        Ok(status) => Ok(Health::Not(status)),
        // A server without the health service is judged by its connection alone.
        Err(Error::UnknownMethod { .. }) => Ok(Health::Serving),
        Err(err) => Err(err),
    }
}

/// The error an endpoint is ejected with when its health service says it is not serving.
pub(super) fn not_serving(status: ServingStatus) -> Error {
    Error::Remote {
        code: ErrorCode::ShuttingDown,
        message: format!("its health service reports {status:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_wait_twice_as_long_each_time_up_to_the_cap() {
        let max = Duration::from_secs(5);
        let mut delay = Duration::from_millis(100);
        let mut waits = Vec::new();
        for _ in 0..8 {
            waits.push(delay.as_millis());
            delay = next_probe_delay(delay, max);
        }
        assert_eq!(waits, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    }
}
