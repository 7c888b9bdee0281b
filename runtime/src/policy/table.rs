//! [`PolicyTable`]: the resolved policy of each method a client handle has called, with the
//! state its policy needs (the concurrency limiter, the breaker's settings), made once per
//! method on its first call.

use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

use super::declared::DeclaredPolicy;
use super::limiter::Limiter;
pub(crate) use super::limiter::Permit;
use super::method_policy::MethodPolicy;
use super::metrics;
use super::overrides::Policies;
use crate::error::Error;
use crate::id_hash::IdMap;
use crate::layers::circuit_breaker::config::CircuitBreakerConfig;
use crate::method::MethodId;

/// The policies of one client handle (a [`Channel`](crate::Channel) and its clones, or a
/// balanced channel and its clones).
#[derive(Debug, Default)]
pub(crate) struct PolicyTable {
    overrides: Policies,
    /// The states of the first [`SLOTS`] declarations with a policy in the process, by their
    /// slot: read on every call with one load, no lock and no shared write, so two cores
    /// calling the same method do not contend here. Allocated on the first call with a
    /// policy.
    by_slot: OnceLock<Box<[OnceLock<Resolved>]>>,
    /// The others, by method.
    by_method: Mutex<IdMap<MethodId, Resolved>>,
}

/// A method's resolved state; `None`: no policy applies to it.
type Resolved = Option<Arc<MethodState>>;

/// Declarations with a slot of their own (in a program with more policy-bearing methods than
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

/// One method's resolved policy and its state.
#[derive(Debug)]
pub(crate) struct MethodState {
    pub(crate) declared: &'static DeclaredPolicy,
    pub(crate) policy: MethodPolicy,
    limiter: Option<Limiter>,
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
    /// nor an override): the call then takes the plain path.
    pub(crate) fn state(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
    ) -> Option<StateRef<'_>> {
        if self.overrides.is_empty() && declared.policy().is_empty() {
            return None;
        }
        let slot = declared.slot() as usize;
        if slot < SLOTS {
            let slots = self
                .by_slot
                .get_or_init(|| (0..SLOTS).map(|_| OnceLock::new()).collect());
            return slots[slot]
                .get_or_init(|| MethodState::resolve(declared, &self.overrides))
                .as_ref()
                .map(StateRef::Slot);
        }
        // Held for a lookup; a holder that panicked left at most a missing entry.
        let mut by_method = self.by_method.lock().unwrap_or_else(|p| p.into_inner());
        by_method
            .entry(method)
            .or_insert_with(|| MethodState::resolve(declared, &self.overrides))
            .clone()
            .map(StateRef::Shared)
    }
}

impl MethodState {
    fn resolve(declared: &'static DeclaredPolicy, overrides: &Policies) -> Option<Arc<Self>> {
        let mut policy = overrides.resolve(declared);
        if policy.retries().is_some_and(|n| n > 0) && !declared.is_idempotent() {
            tracing::warn!(
                service = declared.service(),
                method = declared.method(),
                "ignoring `retries` for a method that is not #[idempotent]: a failed call may \
                 have run, and only the method can say that running it twice is harmless"
            );
            policy.clear_retries();
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
                    // are read; a hand-built `DeclaredPolicy` is the only way here.
                    tracing::warn!(
                        service = declared.service(),
                        method = declared.method(),
                        %err,
                        "ignoring a circuit breaker whose settings cannot work"
                    );
                    None
                }
            });
        Some(Arc::new(Self {
            declared,
            limiter: policy.concurrency().map(Limiter::new),
            breaker,
            policy,
        }))
    }

    /// A place for one more call, or [`Error::ConcurrencyLimit`] when the method's concurrency limit
    /// is reached (`None`: no limit).
    pub(crate) fn admit(&self) -> Result<Option<Permit<'_>>, Error> {
        let Some(limiter) = &self.limiter else {
            return Ok(None);
        };
        match limiter.try_acquire() {
            Some(permit) => Ok(Some(permit)),
            None => {
                metrics::concurrency_rejected(self.declared);
                Err(Error::ConcurrencyLimit {
                    service: self.declared.service(),
                    method: self.declared.method(),
                    limit: limiter.limit(),
                })
            }
        }
    }
}
