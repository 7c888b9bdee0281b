//! Following the registry: every endpoint set it reports replaces the channel's, keeping
//! the connections and counters of endpoints that stay; an empty set is ignored unless the
//! channel accepts it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::pool::{Pool, Slot, State};
use crate::discovery::balance::{subset, Balance, Ring};
use crate::discovery::record::Registration;
use crate::discovery::watch::{EndpointSet, Endpoints};

/// Follows the registry's updates for as long as the channel lives.
pub(super) async fn follow(pool: Weak<Pool>, mut endpoints: Endpoints) {
    loop {
        let set = endpoints.changed().await;
        let Some(pool) = pool.upgrade() else { return };
        pool.update(&set);
    }
}

impl Pool {
    /// Replaces the endpoint set with `set`, keeping the slots (connections, counters) of
    /// endpoints that stay.
    pub(super) fn update(self: &Arc<Self>, set: &EndpointSet) {
        let old = self.state();
        if set.endpoints.is_empty() && !old.slots.is_empty() && !self.accept_empty_set {
            if !self.ignoring_empty_set.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    service = %self.service,
                    endpoints = old.slots.len(),
                    "the registry lists no endpoint any more; keeping the last known ones \
                     (a failed one is still ejected at its first failed call)"
                );
            }
            return;
        }
        self.ignoring_empty_set.store(false, Ordering::Relaxed);
        let mut slots: Vec<Arc<Slot>> = Vec::new();
        let mut registrations: Vec<&Registration> = Vec::new();
        for endpoint in set.endpoints.iter() {
            if !registrations
                .iter()
                .any(|r| r.address == endpoint.registration.address)
            {
                registrations.push(&endpoint.registration);
            }
        }
        if let Some(k) = self.subset {
            let addresses: Vec<&str> = registrations.iter().map(|r| r.address.as_str()).collect();
            let chosen = subset(self.subset_seed, &addresses, k);
            registrations = chosen.into_iter().map(|i| registrations[i]).collect();
        }
        for registration in registrations {
            // A server that registered again (a new lease) while its old record lingers
            // appears twice: one slot per address (the first record's weight).
            let weight = registration.effective_weight();
            let slot = match old.slots.iter().find(|s| s.address == registration.address) {
                Some(slot) => {
                    slot.weight.store(weight, Ordering::Relaxed);
                    Arc::clone(slot)
                }
                None => {
                    let slot = Arc::new(Slot::new(registration.address.clone(), weight));
                    if self.eager {
                        let pool = Arc::downgrade(self);
                        let eager = Arc::clone(&slot);
                        tokio::spawn(async move {
                            if let Some(pool) = pool.upgrade() {
                                if let Err(err) = pool.endpoint(&eager).await {
                                    pool.eject(&eager, &err);
                                }
                            }
                        });
                    }
                    slot
                }
            };
            slots.push(slot);
        }
        let added: Vec<&str> = slots
            .iter()
            .filter(|s| !old.slots.iter().any(|o| Arc::ptr_eq(o, s)))
            .map(|s| s.address.as_str())
            .collect();
        let removed: Vec<&str> = old
            .slots
            .iter()
            .filter(|o| !slots.iter().any(|s| Arc::ptr_eq(o, s)))
            .map(|s| s.address.as_str())
            .collect();
        if !added.is_empty() || !removed.is_empty() {
            tracing::info!(
                service = %self.service,
                ?added,
                ?removed,
                endpoints = slots.len(),
                "endpoint set changed"
            );
        }
        let weights: Vec<(&str, u32)> = slots
            .iter()
            .map(|s| (s.address.as_str(), s.weight.load(Ordering::Relaxed)))
            .collect();
        let ring = if self.balance == Balance::ConsistentHash {
            Ring::build(&weights)
        } else {
            Ring::default()
        };
        let state = Arc::new(State { slots, ring });
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = state;
    }
}
