//! [`Limit`]: at most so many calls in flight at once, refusing the one more rather than
//! queueing it. The one limiter of both sides: a method's client-side `concurrency` policy,
//! and the server's `max_in_flight`.
//!
//! A count in an atomic rather than a tokio `Semaphore`: nobody ever waits for room (a call
//! over the limit is refused), and a semaphore takes its wait list's lock on every release,
//! which every call would pay.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Room for a fixed number of calls at once.
#[derive(Debug)]
pub(crate) struct Limit {
    free: AtomicUsize,
    limit: usize,
}

/// One call's place under a [`Limit`], given back when dropped (the call ended, however it
/// ended). It holds the limit through `L`: a borrow for a call that lives inside its
/// caller's future, an `Arc` for one that outlives it (a stream, a server call's task).
#[derive(Debug)]
pub(crate) struct Permit<L: Deref<Target = Limit>> {
    limit: L,
}

impl Limit {
    /// Room for `limit` calls at once.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            free: AtomicUsize::new(limit),
            limit,
        }
    }

    /// The number of calls it allows at once.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Calls holding a place now.
    pub(crate) fn running(&self) -> usize {
        self.limit - self.free.load(Ordering::Acquire)
    }

    fn take(&self) -> bool {
        self.free
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |free| {
                free.checked_sub(1)
            })
            .is_ok()
    }

    /// A place for one more call, borrowing the limit; `None` when it is full.
    pub(crate) fn try_acquire(&self) -> Option<Permit<&Self>> {
        self.take().then(|| Permit { limit: self })
    }

    /// A place for one more call that owns a handle on the limit; `None` when it is full.
    pub(crate) fn try_acquire_owned(self: &Arc<Self>) -> Option<Permit<Arc<Self>>> {
        self.take().then(|| Permit {
            limit: Arc::clone(self),
        })
    }
}

impl<L: Deref<Target = Limit>> Drop for Permit<L> {
    fn drop(&mut self) {
        self.limit.free.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_over_the_limit_is_refused_until_one_ends() {
        let limit = Limit::new(2);
        let first = limit.try_acquire().unwrap();
        let _second = limit.try_acquire().unwrap();
        assert!(limit.try_acquire().is_none());
        assert_eq!(limit.running(), 2);
        drop(first);
        assert!(limit.try_acquire().is_some());
    }

    #[test]
    fn an_owned_permit_outlives_the_borrow_it_was_taken_with() {
        let limit = Arc::new(Limit::new(1));
        let permit = limit.try_acquire_owned().unwrap();
        assert!(limit.try_acquire().is_none());
        let moved = std::thread::spawn(move || drop(permit));
        moved.join().unwrap();
        assert_eq!(limit.running(), 0);
    }
}
