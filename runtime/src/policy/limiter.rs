//! [`Limiter`]: the client-side concurrency limit of one method, and the [`Permit`] each call
//! in flight holds.

use std::sync::atomic::{AtomicU32, Ordering};

/// At most `limit` calls of one method in flight through one client handle (and its clones).
/// One call more fails at once instead of queueing: a caller that waits behind a saturated
/// method only adds to the tail the limit is there to cut.
#[derive(Debug)]
pub(super) struct Limiter {
    limit: u32,
    in_flight: AtomicU32,
}

/// One call's place under a [`Limiter`], given back when it is dropped (the call ended or was
/// cancelled). It borrows the limiter: the call holds its method's state anyway, and a
/// reference count shared by every call of the method would be one more contended write.
#[derive(Debug)]
pub(crate) struct Permit<'a>(&'a Limiter);

impl Limiter {
    pub(super) fn new(limit: u32) -> Self {
        Self {
            limit,
            in_flight: AtomicU32::new(0),
        }
    }

    pub(super) fn limit(&self) -> u32 {
        self.limit
    }

    /// A place for one more call, unless `limit` calls are in flight.
    pub(super) fn try_acquire(&self) -> Option<Permit<'_>> {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .ok()?;
        Some(Permit(self))
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_over_the_limit_is_refused_until_one_ends() {
        let limiter = Limiter::new(2);
        let first = limiter.try_acquire().unwrap();
        let _second = limiter.try_acquire().unwrap();
        assert!(limiter.try_acquire().is_none());
        drop(first);
        assert!(limiter.try_acquire().is_some());
    }
}
