//! [`Pool`]: the endpoints a balanced channel knows, each with its connection and counters,
//! shared by every clone of the channel; and how the client stack's retry loop sends an
//! attempt to one of them (balancing, counting, ejecting, naming the endpoint in errors).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::task::JoinHandle;
use tower::retry::budget::TpsBudget;

use crate::client::endpoint::options::EndpointOptions;
use crate::client::endpoint::Endpoint;
use crate::client::request::Reply;
use crate::client::stack::call::Call;
use crate::client::stack::endpoints::Endpoints;
use crate::client::stack::endpoints::HedgePlan;
use crate::discovery::balance::{Balance, Candidate, Ring};
use crate::discovery::balanced::hedging::Hedging;
use crate::discovery::balanced::latency::Latencies;
use crate::error::{Error, Failure};
use crate::policy::Hedge;

/// What every clone of a balanced channel shares.
pub(crate) struct Pool {
    pub(crate) service: String,
    pub(super) balance: Balance,
    /// What every endpoint's connection is opened with.
    pub(super) options: EndpointOptions,
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
    /// When slow idempotent calls are sent to a second endpoint.
    pub(super) hedging: Hedging,
    /// Each method's latency, for the adaptive hedge delay.
    pub(super) latencies: Latencies,
    /// Set by `Channel::close`: no endpoint is dialled or probed any more.
    pub(super) closed: AtomicBool,
    /// Follows the registry (and checks health); aborted when the last clone goes.
    pub(super) tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        abort_all(self.tasks.get_mut().unwrap_or_else(|p| p.into_inner()));
    }
}

/// Stops the pool's background tasks (following the registry, health checks).
pub(super) fn abort_all(tasks: &mut Vec<JoinHandle<()>>) {
    for task in tasks.drain(..) {
        task.abort();
    }
}

/// The endpoint set at one moment: replaced whole when the registry's set changes.
#[derive(Default)]
pub(super) struct State {
    pub(super) slots: Vec<Arc<Slot>>,
    pub(super) ring: Ring,
}

/// One endpoint and its connection.
pub(crate) struct Slot {
    pub(super) address: String,
    pub(super) weight: AtomicU32,
    pub(super) in_flight: AtomicUsize,
    pub(super) ejected: AtomicBool,
    pub(super) ready: RwLock<Option<Arc<Endpoint>>>,
    /// One dial at a time.
    pub(super) dial: tokio::sync::Mutex<()>,
    pub(super) calls: AtomicU64,
    pub(super) failures: AtomicU64,
    /// Hedges sent to it (second copies of calls slow on another endpoint).
    pub(super) hedges: AtomicU64,
    /// Failed or out-raced calls since the endpoint last answered one (see
    /// [`CONSECUTIVE_FAILURES_TO_EJECT`]).
    pub(super) consecutive_failures: AtomicU32,
}

/// An endpoint whose calls failed (timed out, could not be sent, or had not answered when a
/// hedge on another endpoint did) this many times in a row leaves the rotation and is probed
/// back, as Envoy's consecutive-failures outlier detection does with the same default.
pub(super) const CONSECUTIVE_FAILURES_TO_EJECT: u32 = 5;

impl Candidate for Arc<Slot> {
    fn weight(&self) -> u32 {
        self.weight.load(Ordering::Relaxed)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// A snapshot of one endpoint of a balanced channel ([`Channel::endpoints`](crate::Channel::endpoints)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointStats {
    /// The endpoint's address.
    pub address: String,
    /// Its weight.
    pub weight: u32,
    /// Calls waiting for a reply from it now.
    pub in_flight: usize,
    /// Calls it answered (with a reply, an application error or an error about the call
    /// itself) since it joined.
    pub calls: u64,
    /// Calls that failed on it: it could not be reached or broke, was overloaded or shutting
    /// down, or did not answer in time.
    pub failures: u64,
    /// Whether it is ejected (its connection failed, or its calls failed five times in a
    /// row; a probe will re-add it).
    pub ejected: bool,
    /// Hedges sent to it: second copies of `#[idempotent]` calls that were slow on another
    /// endpoint (each one extra call).
    pub hedges: u64,
}

impl Pool {
    pub(super) fn state(&self) -> Arc<State> {
        Arc::clone(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether the endpoints' options have layers of their own.
    pub(crate) fn endpoints_have_layers(&self) -> bool {
        self.options.has_layers()
    }

    /// The open endpoints, as they are now.
    pub(super) fn open_endpoints(&self) -> Vec<Arc<Endpoint>> {
        self.state()
            .slots
            .iter()
            .filter_map(|slot| slot.ready_endpoint())
            .collect()
    }

    pub(crate) fn no_endpoints(&self) -> Error {
        let state = self.state();
        Error::NoEndpoints {
            service: self.service.clone(),
            reason: if self.closed.load(Ordering::Acquire) {
                "the channel was closed with Channel::close".to_owned()
            } else if state.slots.is_empty() {
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
    pub(super) fn pick_slot(
        &self,
        hash_key: Option<u64>,
        tried: &[Arc<Slot>],
    ) -> Option<Arc<Slot>> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
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

    /// The endpoint's open connection, dialling it first if it has none.
    pub(super) async fn endpoint(&self, slot: &Slot) -> Result<Arc<Endpoint>, Error> {
        if let Some(endpoint) = slot.ready_endpoint() {
            return Ok(endpoint);
        }
        let _dialling = slot.dial.lock().await;
        if let Some(endpoint) = slot.ready_endpoint() {
            return Ok(endpoint);
        }
        let endpoint = Arc::new(self.options.dial(&slot.address).await?);
        *slot.ready.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&endpoint));
        Ok(endpoint)
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
            hedges: AtomicU64::new(0),
            consecutive_failures: AtomicU32::new(0),
        }
    }

    /// The endpoint's connection, if it has one that is still open.
    pub(super) fn ready_endpoint(&self) -> Option<Arc<Endpoint>> {
        self.ready
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|endpoint| !endpoint.link.current().pending.is_closed())
            .cloned()
    }
}

/// Counts a call in its endpoint's in-flight number for as long as it lives.
struct InFlight<'a>(&'a Slot);

impl<'a> InFlight<'a> {
    fn start(slot: &'a Slot) -> Self {
        slot.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(slot)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How the retry loop balances the attempts of a call over the endpoints.
impl Endpoints for Pool {
    type Picked = Arc<Slot>;

    const MOVES_ON: bool = true;

    fn pick(&self, call: &Call<'_>, tried: &[Arc<Slot>]) -> Option<Arc<Slot>> {
        self.pick_slot(call.hash_key.map(std::num::NonZeroU64::get), tried)
    }

    async fn attempt<'a>(
        &'a self,
        slot: &'a Arc<Slot>,
        call: &'a Call<'a>,
        wire: Option<Duration>,
    ) -> Result<Reply, Error> {
        let _in_flight = InFlight::start(slot);
        let endpoint = self.endpoint(slot).await?;
        endpoint.attempt(call, wire).await
    }

    fn report(&self, slot: &Arc<Slot>, failed: Option<(&Error, Failure)>) {
        match failed {
            Some((error, failure)) if failure.endpoint_failed() => {
                slot.failures.fetch_add(1, Ordering::Relaxed);
                if failure.unreachable() {
                    self.eject(slot, error);
                } else {
                    self.failed_again(slot, error);
                }
            }
            Some((_, failure)) if !failure.answered() => {}
            _ => {
                slot.calls.fetch_add(1, Ordering::Relaxed);
                slot.consecutive_failures.store(0, Ordering::Relaxed);
            }
        }
    }

    fn hedge(&self, call: &Call<'_>) -> Option<HedgePlan> {
        self.hedging.plan(call, &self.latencies)
    }

    fn observe(&self, call: &Call<'_>, latency: Duration) {
        // Only hedged calls come here; with a fixed delay, whether from the channel or from
        // the method's policy, nothing reads the estimate.
        let fixed = match call.hedge() {
            Some(Hedge::On(config)) => config.delay().is_some(),
            Some(Hedge::Off) => true,
            None => self.hedging != Hedging::Adaptive,
        };
        if !fixed {
            self.latencies.observe(call.method, latency);
        }
    }

    fn report_hedge(&self, slot: &Arc<Slot>) {
        slot.hedges.fetch_add(1, Ordering::Relaxed);
    }

    fn report_slow(&self, slot: &Arc<Slot>) {
        self.failed_again(
            slot,
            &Error::Unavailable {
                reason: "its calls go unanswered while other endpoints answer theirs".to_owned(),
                retry_after: None,
            },
        );
    }

    fn label(&self, slot: &Arc<Slot>, error: Error, failure: Failure) -> Error {
        // The server answered about the call itself: the error is its answer. Otherwise the
        // caller learns which endpoint failed.
        if failure.endpoint_failed() {
            Error::Endpoint {
                endpoint: slot.address.clone(),
                cause: Box::new(error),
            }
        } else {
            error
        }
    }

    fn budget(&self) -> Option<&TpsBudget> {
        Some(&self.budget)
    }

    fn none_left(&self) -> Error {
        self.no_endpoints()
    }
}
