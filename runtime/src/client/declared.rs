//! [`Method`]: a method as its declaration gives it to a caller: its wire id, its names,
//! whether it is idempotent and the policy its trait declares. Every call through a
//! [`Channel`](crate::Channel) takes one, so what a method is (idempotent or not, its
//! deadline, its limits) comes from its declaration and never from an argument of the call.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::method::{method_id, MethodId};
use crate::policy::method_policy::MethodPolicy;

/// A slot not handed out yet.
const UNASSIGNED: u32 = u32::MAX;
/// A method that never takes a slot (one built at run time, see [`Method::named`]).
const NO_SLOT: u32 = u32::MAX - 1;

/// The next slot to hand out, process-wide.
static NEXT_SLOT: AtomicU32 = AtomicU32::new(0);

/// One method of one service, as a call through a [`Channel`](crate::Channel) names it.
///
/// Generated clients keep one in a `static` per method, with the method's `#[idempotent]` mark
/// and its `#[wirecall(..)]` policy. A hand-written client does the same with the `const`
/// constructors; a tool that learns a service at run time (through reflection) builds one with
/// [`named`](Self::named), or [`from_id`](Self::from_id) when it knows only the id.
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::client::Method;
/// use wirecall_runtime::policy::MethodPolicy;
///
/// static GET_USER: Method = Method::new("UserService", "get_user")
///     .idempotent()
///     .with_policy(MethodPolicy::new().with_timeout(Duration::from_millis(300)));
/// assert_eq!(GET_USER.id(), wirecall_runtime::method_id("UserService", "get_user"));
/// ```
pub struct Method {
    id: MethodId,
    service: Cow<'static, str>,
    name: Cow<'static, str>,
    idempotent: bool,
    policy: MethodPolicy,
    /// A small number of this method's own, handed out on its first call with a policy:
    /// where a channel keeps the method's resolved policy, found without a lock.
    slot: AtomicU32,
}

impl Method {
    /// `name` of `service` (wire names), its id computed from them, not idempotent, with no
    /// policy of its own.
    pub const fn new(service: &'static str, name: &'static str) -> Self {
        Self {
            id: method_id(service, name),
            service: Cow::Borrowed(service),
            name: Cow::Borrowed(name),
            idempotent: false,
            policy: MethodPolicy::new(),
            slot: AtomicU32::new(UNASSIGNED),
        }
    }

    /// A method learned at run time, by its wire names. Run-time policies
    /// ([`Policies`](crate::policy::Policies), `WIRECALL_POLICY`) apply to it as to a declared
    /// one; keep it for as long as you call the method.
    pub fn named(service: impl Into<String>, name: impl Into<String>) -> Self {
        let (service, name) = (service.into(), name.into());
        Self {
            id: method_id(&service, &name),
            service: Cow::Owned(service),
            name: Cow::Owned(name),
            idempotent: false,
            policy: MethodPolicy::new(),
            slot: AtomicU32::new(NO_SLOT),
        }
    }

    /// A method known only by its wire id: no names, so no run-time policy can name it.
    pub const fn from_id(id: MethodId) -> Self {
        Self {
            id,
            service: Cow::Borrowed(""),
            name: Cow::Borrowed(""),
            idempotent: false,
            policy: MethodPolicy::new(),
            slot: AtomicU32::new(NO_SLOT),
        }
    }

    /// The same method, marked `#[idempotent]`: running it twice has the effect of running it
    /// once, so a call that may have run can be sent again (by a policy's `retries`, a
    /// balanced channel's failover).
    pub const fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// The same method with `policy` as its declared policy (the trait's `#[wirecall(..)]`).
    pub const fn with_policy(mut self, policy: MethodPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The method's wire id.
    pub fn id(&self) -> MethodId {
        self.id
    }

    /// The service's wire name (empty for a method made with [`from_id`](Self::from_id)).
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The method's wire name (empty for a method made with [`from_id`](Self::from_id)).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the method is `#[idempotent]`.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// The policy its declaration gives it.
    pub fn policy(&self) -> &MethodPolicy {
        &self.policy
    }

    /// The names, owned, for what outlives the call (a resolved policy, metrics labels).
    pub(crate) fn names(&self) -> (Cow<'static, str>, Cow<'static, str>) {
        (self.service.clone(), self.name.clone())
    }

    /// This method's slot (see the field), assigned on first use; `None` for a method built
    /// at run time, which is looked up by id instead.
    pub(crate) fn slot(&self) -> Option<u32> {
        let slot = self.slot.load(Ordering::Relaxed);
        match slot {
            NO_SLOT => None,
            UNASSIGNED => {
                // Two first calls racing may both take a number; one keeps it, the other is
                // unused.
                let next = NEXT_SLOT.fetch_add(1, Ordering::Relaxed).min(NO_SLOT - 1);
                match self.slot.compare_exchange(
                    UNASSIGNED,
                    next,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => Some(next),
                    Err(assigned) => Some(assigned),
                }
            }
            slot => Some(slot),
        }
    }
}

impl fmt::Debug for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Method")
            .field("id", &self.id)
            .field("service", &self.service)
            .field("name", &self.name)
            .field("idempotent", &self.idempotent)
            .field("policy", &self.policy)
            .finish()
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.service.is_empty() && self.name.is_empty() {
            write!(f, "{}", self.id)
        } else {
            write!(f, "{}.{}", self.service, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_method_gets_one_slot_and_keeps_it() {
        static DECLARED: Method = Method::new("S", "m");
        let first = DECLARED.slot().expect("a slot");
        assert_eq!(DECLARED.slot(), Some(first));
        assert_eq!(DECLARED.id(), method_id("S", "m"));
    }

    #[test]
    fn a_method_built_at_run_time_takes_no_slot() {
        let named = Method::named("S", "m");
        assert_eq!(named.slot(), None);
        assert_eq!(named.id(), method_id("S", "m"));
        assert_eq!(named.to_string(), "S.m");
        assert_eq!(Method::from_id(method_id("S", "m")).slot(), None);
    }
}
