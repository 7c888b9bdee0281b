//! A connection's free slots for calls (or for streams): taken by the connection's reader,
//! given back by whichever task ends a call.
//!
//! A count in an atomic rather than a tokio `Semaphore`: the semaphore takes its wait list's
//! lock on every release, which every call paid, though someone waits only when every slot
//! is taken or the connection is closing. Here a release is one atomic add, and it wakes
//! anyone only in those two cases.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use tokio::sync::Notify;

pub(super) struct Slots {
    free: AtomicU32,
    limit: u32,
    /// Set while someone waits for every slot to come back.
    draining: AtomicBool,
    /// Woken when a slot comes back to an empty count, or, while draining, when the last
    /// one comes back.
    returned: Notify,
}

impl Slots {
    /// `limit` slots, all free (at least one).
    pub(super) fn new(limit: u32) -> Self {
        let limit = limit.max(1);
        Self {
            free: AtomicU32::new(limit),
            limit,
            draining: AtomicBool::new(false),
            returned: Notify::new(),
        }
    }

    /// The number of slots.
    pub(super) fn limit(&self) -> u32 {
        self.limit
    }

    /// Takes a slot if one is free.
    pub(super) fn try_take(&self) -> bool {
        self.free
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |free| {
                free.checked_sub(1)
            })
            .is_ok()
    }

    /// Takes a slot, waiting for one to come back if none is free.
    pub(super) async fn take(&self) {
        self.wait_until(|| self.try_take()).await;
    }

    /// Gives a taken slot back.
    pub(super) fn give_back(&self) {
        let before = self.free.fetch_add(1, Ordering::SeqCst);
        if before == 0 || (before + 1 == self.limit && self.draining.load(Ordering::SeqCst)) {
            self.returned.notify_waiters();
        }
    }

    /// Whether every slot is free.
    pub(super) fn all_free(&self) -> bool {
        self.free.load(Ordering::SeqCst) == self.limit
    }

    /// Waits until every slot is free.
    pub(super) async fn all_returned(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.wait_until(|| self.all_free()).await;
    }

    /// Waits until `done` holds, checking it again each time a slot comes back.
    async fn wait_until(&self, mut done: impl FnMut() -> bool) {
        loop {
            // Registered before the check, so a slot given back in between still wakes it.
            let notified = self.returned.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::Slots;

    #[test]
    fn slots_are_taken_up_to_the_limit_and_come_back() {
        let slots = Slots::new(2);
        assert!(slots.try_take() && slots.try_take());
        assert!(!slots.try_take());
        slots.give_back();
        assert!(slots.try_take());
        assert!(!slots.all_free());
        slots.give_back();
        slots.give_back();
        assert!(slots.all_free());
        assert_eq!(Slots::new(0).limit(), 1);
    }

    #[tokio::test]
    async fn a_waiting_taker_gets_the_slot_given_back() {
        let slots = Arc::new(Slots::new(1));
        assert!(slots.try_take());
        let waiter = tokio::spawn({
            let slots = Arc::clone(&slots);
            async move { slots.take().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        slots.give_back();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the waiter got no slot")
            .expect("the waiter panicked");
        assert!(!slots.all_free());
    }

    #[tokio::test]
    async fn draining_ends_when_the_last_slot_comes_back() {
        let slots = Arc::new(Slots::new(3));
        assert!(slots.try_take() && slots.try_take());
        let drained = tokio::spawn({
            let slots = Arc::clone(&slots);
            async move { slots.all_returned().await }
        });
        tokio::task::yield_now().await;
        slots.give_back();
        tokio::task::yield_now().await;
        assert!(!drained.is_finished());
        slots.give_back();
        tokio::time::timeout(Duration::from_secs(5), drained)
            .await
            .expect("draining never ended")
            .expect("the drain panicked");
    }
}
