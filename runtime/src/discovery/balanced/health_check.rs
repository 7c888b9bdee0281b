//! Active health checks ([`BalancedChannelBuilder::health_check`](super::BalancedChannelBuilder::health_check)):
//! every interval, each endpoint in rotation with an open connection is asked for the
//! service's status, and one that is not serving or does not answer is ejected, unless every
//! endpoint in rotation fails at once.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::eject::{health, not_serving, Health};
use super::pool::Pool;
use crate::client::channel::Channel;
use crate::error::Error;

/// Checks the health of the endpoints in rotation every `interval`, for as long as the
/// channel lives.
pub(super) async fn run_health_checks(pool: Weak<Pool>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(pool) = pool.upgrade() else { return };
        pool.check_health_once(interval).await;
    }
}

/// Whether the endpoints that failed a round of checks are ejected: not when that would eject
/// every endpoint in rotation, since calling servers that say they are unfit (or a check that
/// is wrong everywhere) beats failing every call.
fn ejects_the_unfit(unfit: usize, in_rotation: usize) -> bool {
    unfit > 0 && unfit < in_rotation
}

impl Pool {
    /// One round: asks every endpoint in rotation for its health, and ejects those that are
    /// not serving or do not answer within the interval (see [`ejects_the_unfit`]).
    async fn check_health_once(self: &Arc<Self>, interval: Duration) {
        let state = self.state();
        let in_rotation = state
            .slots
            .iter()
            .filter(|slot| !slot.ejected.load(std::sync::atomic::Ordering::Relaxed))
            .count();
        let checks = state.slots.iter().filter_map(|slot| {
            if slot.ejected.load(std::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            // Only endpoints with an open connection: an unopened one is checked by its
            // first call (and ejected if that cannot connect).
            let endpoint = slot.ready_endpoint()?;
            Some(async move {
                let channel = Channel::on_endpoint(endpoint, &self.options);
                let verdict = tokio::time::timeout(interval, health(&channel, &self.service)).await;
                let err = match verdict {
                    Ok(Ok(Health::Serving)) => return None,
                    Ok(Ok(Health::Not(status))) => not_serving(status),
                    Ok(Err(err)) => err,
                    Err(_) => Error::Timeout { after: interval },
                };
                Some((slot, err))
            })
        });
        let unfit: Vec<_> = futures::future::join_all(checks)
            .await
            .into_iter()
            .flatten()
            .collect();
        if !ejects_the_unfit(unfit.len(), in_rotation) {
            if !unfit.is_empty() {
                tracing::warn!(
                    service = %self.service,
                    endpoints = in_rotation,
                    "every endpoint in rotation fails its health check; keeping them all \
                     rather than calling none"
                );
            }
            return;
        }
        for (slot, err) in unfit {
            self.eject(slot, &err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ejects_the_unfit;

    #[test]
    fn some_unfit_endpoints_are_ejected() {
        assert!(ejects_the_unfit(1, 3));
        assert!(ejects_the_unfit(2, 3));
    }

    #[test]
    fn a_rotation_that_fails_whole_is_kept_whole() {
        assert!(!ejects_the_unfit(3, 3));
        assert!(!ejects_the_unfit(1, 1));
    }

    #[test]
    fn a_clean_round_ejects_nothing() {
        assert!(!ejects_the_unfit(0, 3));
        assert!(!ejects_the_unfit(0, 0));
    }
}
