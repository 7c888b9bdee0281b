//! The deadlines of one connection's waiting calls, in one structure swept by the
//! connection's reader, instead of a tokio timer per call.
//!
//! A timer per call costs a registration with tokio's timer wheel when first polled and a
//! removal (under the wheel's lock) when dropped, on every call, though nearly every call
//! ends long before its deadline. Here a call's deadline is one push into a heap, and the
//! connection holds one timer, set to the earliest deadline that may still matter.
//!
//! Entries of calls that ended otherwise are not removed one by one: they are skipped when
//! they come to the front, and the heap is compacted whenever it holds more than twice the
//! calls waiting, so it never grows past that (amortised, one lookup per call).
//!
//! Lives inside the pending-calls table, under its lock, so that a call's registration and
//! its deadline are one step, and closing the table clears both.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// Compaction starts past this many entries: small heaps are never worth a pass.
const COMPACT_ABOVE: usize = 64;

/// One call's deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Expiry {
    /// When the call times out (first: the heap orders by it).
    pub(crate) at: Instant,
    pub(crate) request_id: u64,
    /// The call's timeout, for its error.
    pub(crate) after: Duration,
}

#[derive(Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<Expiry>>,
    /// The one timer, created with the first deadline (a table made outside a runtime, as in
    /// tests, has none until then).
    timer: Option<Pin<Box<Sleep>>>,
    /// The deadline the timer is set to; `None`: the timer is not armed.
    armed: Option<Instant>,
    /// The task that sweeps (the connection's reader), woken when the timer is armed anew.
    sweeper: Option<Waker>,
}

impl Deadlines {
    /// Adds call `expiry`; `waiting` says whether a call is still waiting (for compaction)
    /// and `calls` how many are.
    pub(crate) fn push(&mut self, expiry: Expiry, calls: usize, waiting: impl Fn(u64) -> bool) {
        if self.heap.len() > COMPACT_ABOVE && self.heap.len() > 2 * calls {
            self.heap.retain(|Reverse(entry)| waiting(entry.request_id));
        }
        self.heap.push(Reverse(expiry));
        if self.armed.is_none_or(|armed| expiry.at < armed) {
            self.arm(expiry.at);
        }
    }

    fn arm(&mut self, at: Instant) {
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(at),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
        }
        self.armed = Some(at);
        // The sweeper polls the timer next, so that it is woken when it fires (whether or
        // not the timer kept the waker of an earlier poll).
        if let Some(sweeper) = &self.sweeper {
            sweeper.wake_by_ref();
        }
    }

    /// Ready when the earliest deadline has passed: then call [`expire`](Self::expire).
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self
            .sweeper
            .as_ref()
            .is_some_and(|sweeper| sweeper.will_wake(cx.waker()))
        {
            self.sweeper = Some(cx.waker().clone());
        }
        match (&mut self.timer, self.armed) {
            (Some(timer), Some(_)) => timer.as_mut().poll(cx),
            _ => Poll::Pending,
        }
    }

    /// Takes off every deadline passed by `now`, handing each to `visit` with `passed` set
    /// (it ends that call if it still waits); then sets the timer to the next deadline of a
    /// call still waiting, which `visit` (with `passed` unset) tells.
    pub(crate) fn expire(&mut self, now: Instant, mut visit: impl FnMut(&Expiry, bool) -> bool) {
        while let Some(Reverse(first)) = self.heap.peek().copied() {
            let passed = first.at <= now;
            if !passed && visit(&first, false) {
                break;
            }
            self.heap.pop();
            if passed {
                visit(&first, true);
            }
        }
        self.armed = None;
        if let Some(Reverse(next)) = self.heap.peek().copied() {
            self.arm(next.at);
        }
    }

    /// Forgets every deadline (the connection closed).
    pub(crate) fn clear(&mut self) {
        self.heap = BinaryHeap::new();
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expiry(at: Instant, request_id: u64) -> Expiry {
        Expiry {
            at,
            request_id,
            after: Duration::from_secs(1),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn only_passed_deadlines_of_waiting_calls_expire() {
        let now = Instant::now();
        let mut deadlines = Deadlines::default();
        deadlines.push(expiry(now + Duration::from_millis(30), 3), 3, |_| true);
        deadlines.push(expiry(now + Duration::from_millis(10), 1), 3, |_| true);
        deadlines.push(expiry(now + Duration::from_millis(20), 2), 3, |_| true);
        let mut expired = Vec::new();
        // Call 1 ended otherwise; call 2's deadline passed; call 3's is still ahead.
        deadlines.expire(now + Duration::from_millis(25), |e, passed| {
            let waiting = e.request_id != 1;
            if passed && waiting {
                expired.push(e.request_id);
            }
            waiting
        });
        assert_eq!(expired, [2]);
        assert_eq!(deadlines.armed, Some(now + Duration::from_millis(30)));
        // Call 3 ended otherwise too.
        deadlines.expire(now + Duration::from_millis(25), |_, passed| {
            assert!(!passed);
            false
        });
        assert_eq!(deadlines.armed, None);
        assert!(deadlines.heap.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_heap_stays_within_twice_the_waiting_calls() {
        let now = Instant::now();
        let mut deadlines = Deadlines::default();
        for id in 0..10_000u64 {
            // One call waits at a time: every earlier one has ended.
            deadlines.push(expiry(now + Duration::from_secs(30), id), 1, |waiting| {
                waiting == id
            });
        }
        assert!(deadlines.heap.len() <= COMPACT_ABOVE + 2);
    }
}
