//! [`DeclaredPolicy`]: the policy a method's declaration gives it, as generated code hands it
//! to the client on every call, with the names run-time overrides are matched by.

use std::sync::atomic::{AtomicU32, Ordering};

use super::method_policy::MethodPolicy;

/// A declaration whose slot is not assigned yet.
const UNASSIGNED: u32 = u32::MAX;

/// The next slot to hand out, process-wide.
static NEXT_SLOT: AtomicU32 = AtomicU32::new(0);

/// The policy declared for one method in its trait (the trait's `#[wirecall(..)]` defaults
/// under the method's own), with the service and method names that run-time overrides
/// ([`Policies`](super::Policies)) name it by. Generated clients keep one as a constant per
/// method; a hand-written client builds its own with [`new`](Self::new) and keeps it in a
/// `static` (calls take it as `&'static`).
#[derive(Debug)]
pub struct DeclaredPolicy {
    service: &'static str,
    method: &'static str,
    idempotent: bool,
    policy: MethodPolicy,
    /// A small number of this declaration's own, handed out on its first call with a policy:
    /// where a channel keeps the method's resolved state, found without a lock.
    slot: AtomicU32,
}

impl DeclaredPolicy {
    /// The declared `policy` of `method` of `service` (wire names); `idempotent`: the method
    /// is marked `#[idempotent]`, so retries apply to it.
    pub const fn new(
        service: &'static str,
        method: &'static str,
        idempotent: bool,
        policy: MethodPolicy,
    ) -> Self {
        Self {
            service,
            method,
            idempotent,
            policy,
            slot: AtomicU32::new(UNASSIGNED),
        }
    }

    /// The service's wire name.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The method's wire name.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// Whether the method is `#[idempotent]`.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// The policy as declared.
    pub fn policy(&self) -> &MethodPolicy {
        &self.policy
    }

    /// This declaration's slot (see the field), assigned on first use.
    pub(crate) fn slot(&self) -> u32 {
        let slot = self.slot.load(Ordering::Relaxed);
        if slot != UNASSIGNED {
            return slot;
        }
        // Two first calls racing may both take a number; one keeps it, the other is unused.
        let next = NEXT_SLOT
            .fetch_add(1, Ordering::Relaxed)
            .min(UNASSIGNED - 1);
        match self
            .slot
            .compare_exchange(UNASSIGNED, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => next,
            Err(assigned) => assigned,
        }
    }
}
