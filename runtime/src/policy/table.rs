//! [`PolicyTable`]: the resolved policy of each method a channel has called, with the state
//! its policy needs (the concurrency limit, the breaker's settings), made once per method on
//! its first call.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

use super::hedge::Hedge;
use super::method_policy::MethodPolicy;
use super::metrics;
use super::overrides::Policies;
use crate::client::declared::Method;
use crate::error::Error;
use crate::id_hash::IdMap;
use crate::layers::circuit_breaker::config::CircuitBreakerConfig;
use crate::limit::{Limit, Permit};
use crate::method::MethodId;

/// The policies of one channel and its clones.
#[derive(Debug, Default)]
pub(crate) struct PolicyTable {
    overrides: Policies,
    /// The states of the first [`SLOTS`] declared methods in the process, by their slot: read
    /// on every call with one load, no lock and no shared write, so two cores calling the same
    /// method do not contend here. Allocated on the first call with a policy.
    by_slot: OnceLock<Box<[OnceLock<Resolved>]>>,
    /// The others, by method.
    by_method: Mutex<IdMap<MethodId, Resolved>>,
}

/// A method's resolved state; `None`: no policy applies to it.
type Resolved = Option<Arc<MethodState>>;

/// Methods with a slot of their own (in a program with more policy-bearing methods than
/// this, the rest are found under a lock). A table with slots costs 16 bytes each.
const SLOTS: usize = 64;

/// A method's state as [`PolicyTable::state`] finds it: borrowed from its slot, or shared.
pub(crate) enum StateRef<'a> {
    Slot(&'a Arc<MethodState>),
    Shared(Arc<MethodState>),
}

impl Deref for StateRef<'_> {
    type Target = Arc<MethodState>;

    fn deref(&self) -> &Arc<MethodState> {
        match self {
            Self::Slot(state) => state,
            Self::Shared(state) => state,
        }
    }
}

/// One method's resolved policy and its state, for the stages of the call stack that act on
/// it: the concurrency limit and the deadline (per call), the retries (the retry loop), the
/// breaker (per attempt).
#[derive(Debug)]
pub(crate) struct MethodState {
    /// The service's and the method's wire names, for logs and metrics.
    pub(crate) service: Cow<'static, str>,
    pub(crate) method: Cow<'static, str>,
    pub(crate) policy: MethodPolicy,
    /// The concurrency limit; `Arc`: a stream holds its place for as long as it is open.
    limit: Option<Arc<Limit>>,
    pub(crate) breaker: Option<Arc<CircuitBreakerConfig>>,
}

impl PolicyTable {
    pub(crate) fn new(overrides: Policies) -> Self {
        Self {
            overrides,
            by_slot: OnceLock::new(),
            by_method: Mutex::default(),
        }
    }

    /// The state of `method`, or `None` when nothing applies to it (neither its declaration
    /// nor an override): the call then passes the policy stages without a look.
    #[inline]
    pub(crate) fn state(&self, method: &Method) -> Option<StateRef<'_>> {
        if self.overrides.is_empty() && method.policy().is_empty() {
            return None;
        }
        self.lookup(method)
    }

    fn lookup(&self, method: &Method) -> Option<StateRef<'_>> {
        if let Some(slot) = method.slot().map(|slot| slot as usize) {
            if slot < SLOTS {
                let slots = self
                    .by_slot
                    .get_or_init(|| (0..SLOTS).map(|_| OnceLock::new()).collect());
                return slots[slot]
                    .get_or_init(|| MethodState::resolve(method, &self.overrides))
                    .as_ref()
                    .map(StateRef::Slot);
            }
        }
        // Held for a lookup; a holder that panicked left at most a missing entry.
        let mut by_method = self.by_method.lock().unwrap_or_else(|p| p.into_inner());
        by_method
            .entry(method.id())
            .or_insert_with(|| MethodState::resolve(method, &self.overrides))
            .clone()
            .map(StateRef::Shared)
    }
}

/// A call's place under its method's concurrency limit: borrowed for a call, owned by a
/// stream (which outlives the call that opened it).
pub(crate) type CallPermit<'a> = Permit<&'a Limit>;
/// A stream's place under its method's concurrency limit, held while it is open.
pub(crate) type StreamPermit = Permit<Arc<Limit>>;

impl MethodState {
    fn resolve(method: &Method, overrides: &Policies) -> Option<Arc<Self>> {
        let mut policy = overrides.resolve(method);
        if !method.is_idempotent()
            && (policy.retries().is_some_and(|n| n > 0)
                || matches!(policy.hedge(), Some(Hedge::On(_))))
        {
            tracing::warn!(
                service = method.service(),
                method = method.name(),
                "ignoring `retries` and `hedge` for a method that is not #[idempotent]: a call \
                 sent twice may run twice, and only the method can say that this is harmless"
            );
            policy.clear_resends();
        }
        if policy.is_empty() {
            return None;
        }
        let breaker = policy
            .breaker_config()
            .and_then(|config| match config.validate() {
                Ok(()) => Some(Arc::new(config.clone())),
                Err(err) => {
                    // Declared settings are checked at compile time and run-time ones when they
                    // are read; a hand-built `Method` is the only way here.
                    tracing::warn!(
                        service = method.service(),
                        method = method.name(),
                        %err,
                        "ignoring a circuit breaker whose settings cannot work"
                    );
                    None
                }
            });
        let (service, name) = method.names();
        Some(Arc::new(Self {
            service,
            method: name,
            limit: policy
                .concurrency()
                .map(|limit| Arc::new(Limit::new(limit as usize))),
            breaker,
            policy,
        }))
    }

    /// A place for one more call, or [`Error::ConcurrencyLimit`] when the method's
    /// concurrency limit is reached (`None`: no limit).
    pub(crate) fn admit(&self) -> Result<Option<CallPermit<'_>>, Error> {
        let Some(limit) = &self.limit else {
            return Ok(None);
        };
        limit
            .try_acquire()
            .map(Some)
            .ok_or_else(|| self.over_limit(limit))
    }

    /// Like [`admit`](Self::admit), for a stream, which holds its place while it is open.
    pub(crate) fn admit_stream(&self) -> Result<Option<StreamPermit>, Error> {
        let Some(limit) = &self.limit else {
            return Ok(None);
        };
        limit
            .try_acquire_owned()
            .map(Some)
            .ok_or_else(|| self.over_limit(limit))
    }

    fn over_limit(&self, limit: &Limit) -> Error {
        metrics::concurrency_rejected(self.service.clone(), self.method.clone());
        Error::ConcurrencyLimit {
            service: self.service.to_string(),
            method: self.method.to_string(),
            limit: u32::try_from(limit.limit()).unwrap_or(u32::MAX),
        }
    }
}
