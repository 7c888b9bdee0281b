//! The endpoints a balanced channel knows, each with its connection and counters, and the
//! state every clone of the channel shares.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::task::JoinHandle;
use tower::retry::budget::TpsBudget;

use crate::client::{Channel, ChannelBuilder};
use crate::discovery::balance::{Balance, Candidate, Ring};
use crate::error::Error;
use crate::policy::table::PolicyTable;

/// What every clone of a balanced channel shares.
pub(super) struct Inner {
    pub(super) service: String,
    pub(super) balance: Balance,
    /// The options every endpoint's channel is opened with (never redialling by itself).
    pub(super) options: ChannelBuilder,
    pub(super) eager: bool,
    /// Connect to at most this many endpoints, chosen with `subset_seed`.
    pub(super) subset: Option<usize>,
    pub(super) subset_seed: u64,
    pub(super) probe_backoff: Duration,
    pub(super) max_probe_backoff: Duration,
    /// How often endpoints in rotation are asked for their health (`None`: never).
    pub(super) health_interval: Option<Duration>,
    /// Whether an empty set from the registry replaces a non-empty one.
    pub(super) accept_empty_set: bool,
    /// Set while an empty set from the registry is being ignored (so it is logged once).
    pub(super) ignoring_empty_set: AtomicBool,
    pub(super) state: RwLock<Arc<State>>,
    pub(super) counter: AtomicUsize,
    pub(super) budget: TpsBudget,
    /// Follows the registry (and checks health); aborted when the last clone goes.
    pub(super) tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The resolved policy of each method called through the channel.
    pub(super) policies: PolicyTable,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

/// The endpoint set at one moment: replaced whole when the registry's set changes.
#[derive(Default)]
pub(super) struct State {
    pub(super) slots: Vec<Arc<Slot>>,
    pub(super) ring: Ring,
}

/// One endpoint and its connection.
pub(super) struct Slot {
    pub(super) address: String,
    pub(super) weight: AtomicU32,
    pub(super) in_flight: AtomicUsize,
    pub(super) ejected: AtomicBool,
    pub(super) ready: RwLock<Option<Channel>>,
    /// One dial at a time.
    pub(super) dial: tokio::sync::Mutex<()>,
    pub(super) calls: AtomicU64,
    pub(super) failures: AtomicU64,
}

impl Candidate for Arc<Slot> {
    fn weight(&self) -> u32 {
        self.weight.load(Ordering::Relaxed)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// A snapshot of one endpoint of a [`BalancedChannel`](super::BalancedChannel).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointStats {
    /// The endpoint's address.
    pub address: String,
    /// Its weight.
    pub weight: u32,
    /// Calls waiting for a reply from it now.
    pub in_flight: usize,
    /// Calls it answered (with a reply or an application error) since it joined.
    pub calls: u64,
    /// Calls that failed on it (connection or server failures).
    pub failures: u64,
    /// Whether it is ejected (its connection failed; a probe will re-add it).
    pub ejected: bool,
}

impl Inner {
    pub(super) fn state(&self) -> Arc<State> {
        Arc::clone(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub(super) fn endpoints(&self) -> Vec<EndpointStats> {
        self.state()
            .slots
            .iter()
            .map(|slot| EndpointStats {
                address: slot.address.clone(),
                weight: slot.weight.load(Ordering::Relaxed),
                in_flight: slot.in_flight.load(Ordering::Relaxed),
                calls: slot.calls.load(Ordering::Relaxed),
                failures: slot.failures.load(Ordering::Relaxed),
                ejected: slot.ejected.load(Ordering::Relaxed),
            })
            .collect()
    }

    pub(super) fn no_endpoints(&self) -> Error {
        let state = self.state();
        Error::NoEndpoints {
            service: self.service.clone(),
            reason: if state.slots.is_empty() {
                "none is registered".to_owned()
            } else {
                format!(
                    "all {} are ejected after failing; they are probed with backoff",
                    state.slots.len()
                )
            },
        }
    }

    /// An endpoint in rotation that the call has not tried yet, by the balancing policy.
    pub(super) fn pick(&self, hash_key: Option<u64>, tried: &[Arc<Slot>]) -> Option<Arc<Slot>> {
        let state = self.state();
        let slots = &state.slots;
        let index = self
            .balance
            .pick(slots, &state.ring, &self.counter, hash_key, |i| {
                let slot = &slots[i];
                !slot.ejected.load(Ordering::Relaxed) && !tried.iter().any(|t| Arc::ptr_eq(t, slot))
            })?;
        Some(Arc::clone(&slots[index]))
    }

    /// The endpoint's open channel, dialling it first if it has none.
    pub(super) async fn channel(&self, slot: &Slot) -> Result<Channel, Error> {
        if let Some(channel) = slot.ready_channel() {
            return Ok(channel);
        }
        let _dialling = slot.dial.lock().await;
        if let Some(channel) = slot.ready_channel() {
            return Ok(channel);
        }
        let channel = self.options.clone().connect(slot.address.as_str()).await?;
        *slot.ready.write().unwrap_or_else(|p| p.into_inner()) = Some(channel.clone());
        Ok(channel)
    }
}

impl Slot {
    pub(super) fn new(address: String, weight: u32) -> Self {
        Self {
            address,
            weight: AtomicU32::new(weight),
            in_flight: AtomicUsize::new(0),
            ejected: AtomicBool::new(false),
            ready: RwLock::new(None),
            dial: tokio::sync::Mutex::new(()),
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    pub(super) fn ready_channel(&self) -> Option<Channel> {
        self.ready
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|channel| !channel.is_closed())
            .cloned()
    }
}

/// Counts a call in its endpoint's in-flight number for as long as it lives.
pub(super) struct InFlight<'a>(&'a Slot);

impl<'a> InFlight<'a> {
    pub(super) fn start(slot: &'a Slot) -> Self {
        slot.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(slot)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
