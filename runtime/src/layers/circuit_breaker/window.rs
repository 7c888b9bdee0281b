//! A rolling count of successes and failures by time bucket: the calls that ended in the last
//! window, forgotten one bucket at a time. Pure: it is told the time, it never reads a clock.

use std::time::Duration;

use tokio::time::Instant;

/// The calls of one bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bucket {
    /// Which bucket since the window's origin this slot holds (slots are reused in a ring).
    index: u64,
    successes: u32,
    failures: u32,
}

/// The totals of the window at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Totals {
    pub(super) successes: u32,
    pub(super) failures: u32,
}

impl Totals {
    pub(super) fn calls(self) -> u32 {
        self.successes.saturating_add(self.failures)
    }
}

/// Successes and failures of the last `buckets × bucket_len`, in a ring of buckets.
#[derive(Clone, Debug)]
pub(super) struct RollingWindow {
    origin: Instant,
    bucket_len: Duration,
    buckets: Vec<Bucket>,
}

impl RollingWindow {
    /// An empty window of `buckets` buckets of `bucket_len` each, starting at `now`.
    /// `buckets` and `bucket_len` are not zero (the configuration checks them).
    pub(super) fn new(now: Instant, bucket_len: Duration, buckets: u32) -> Self {
        Self {
            origin: now,
            bucket_len,
            buckets: vec![Bucket::default(); buckets.max(1) as usize],
        }
    }

    /// Forgets every call, as if the window started at `now`.
    pub(super) fn clear(&mut self, now: Instant) {
        self.origin = now;
        self.buckets.fill(Bucket::default());
    }

    pub(super) fn record_success(&mut self, at: Instant) {
        if let Some(bucket) = self.bucket_at(at) {
            bucket.successes = bucket.successes.saturating_add(1);
        }
    }

    pub(super) fn record_failure(&mut self, at: Instant) {
        if let Some(bucket) = self.bucket_at(at) {
            bucket.failures = bucket.failures.saturating_add(1);
        }
    }

    /// The calls of the buckets that still overlap the window ending at `now`.
    pub(super) fn totals(&self, now: Instant) -> Totals {
        let current = self.index_of(now);
        let oldest = current.saturating_sub(self.buckets.len() as u64 - 1);
        self.buckets
            .iter()
            .filter(|bucket| (oldest..=current).contains(&bucket.index))
            .fold(Totals::default(), |totals, bucket| Totals {
                successes: totals.successes.saturating_add(bucket.successes),
                failures: totals.failures.saturating_add(bucket.failures),
            })
    }

    /// The number of the bucket `now` falls in; instants before the origin (a caller's clock
    /// read before the window was cleared) fall in the first.
    fn index_of(&self, now: Instant) -> u64 {
        // In u64 nanoseconds (584 years) rather than u128: a u128 division is several times
        // the cost of the rest of recording an outcome, and this runs for every call.
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let elapsed = now.saturating_duration_since(self.origin);
        nanos(elapsed) / nanos(self.bucket_len).max(1)
    }

    /// The bucket `at` falls in, emptied first when its slot still holds an older bucket;
    /// `None` when its slot already holds a newer one: `at` is older than the whole window
    /// (the success of a call admitted long ago, counted at its admission), and counts for
    /// nothing.
    fn bucket_at(&mut self, at: Instant) -> Option<&mut Bucket> {
        let index = self.index_of(at);
        let len = self.buckets.len() as u64;
        let slot = &mut self.buckets[(index % len) as usize];
        if slot.index > index {
            return None;
        }
        if slot.index != index {
            *slot = Bucket {
                index,
                ..Bucket::default()
            };
        }
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// Ten buckets of one second, starting at the returned instant.
    fn ten_seconds() -> (RollingWindow, Instant) {
        let start = Instant::now();
        (RollingWindow::new(start, SECOND, 10), start)
    }

    #[test]
    fn an_empty_window_counts_nothing() {
        let (window, start) = ten_seconds();
        assert_eq!(window.totals(start), Totals::default());
        assert_eq!(window.totals(start + 100 * SECOND).calls(), 0);
    }

    #[test]
    fn calls_in_the_window_add_up_across_buckets() {
        let (mut window, start) = ten_seconds();
        window.record_success(start);
        window.record_failure(start + Duration::from_millis(500));
        window.record_failure(start + 3 * SECOND);
        window.record_success(start + 9 * SECOND);
        let totals = window.totals(start + 9 * SECOND);
        assert_eq!(
            totals,
            Totals {
                successes: 2,
                failures: 2
            }
        );
        assert_eq!(totals.calls(), 4);
    }

    #[test]
    fn the_oldest_bucket_is_forgotten_when_the_window_slides_past_it() {
        let (mut window, start) = ten_seconds();
        window.record_failure(start);
        window.record_failure(start + 5 * SECOND);
        // Bucket 10 starts at 10 s: the window is buckets 1..=10, bucket 0 is gone.
        let totals = window.totals(start + 10 * SECOND);
        assert_eq!(totals.failures, 1);
        let totals = window.totals(start + 15 * SECOND);
        assert_eq!(totals.failures, 0);
    }

    #[test]
    fn a_reused_slot_starts_empty() {
        let (mut window, start) = ten_seconds();
        window.record_failure(start + 2 * SECOND);
        // Bucket 12 shares slot 2 with bucket 2, which has left the window.
        window.record_success(start + 12 * SECOND);
        assert_eq!(
            window.totals(start + 12 * SECOND),
            Totals {
                successes: 1,
                failures: 0
            }
        );
    }

    #[test]
    fn clearing_forgets_every_call() {
        let (mut window, start) = ten_seconds();
        window.record_failure(start);
        window.record_failure(start + SECOND);
        window.clear(start + 2 * SECOND);
        assert_eq!(window.totals(start + 2 * SECOND).calls(), 0);
        // An instant read before the clear counts in the new first bucket.
        window.record_success(start + SECOND);
        assert_eq!(window.totals(start + 2 * SECOND).successes, 1);
    }

    #[test]
    fn an_outcome_older_than_the_window_counts_for_nothing() {
        let (mut window, start) = ten_seconds();
        window.record_failure(start + SECOND * 12);
        // A success of a call admitted 11 s earlier, in the slot bucket 12 now holds.
        window.record_success(start + SECOND * 2);
        let totals = window.totals(start + SECOND * 12);
        assert_eq!((totals.successes, totals.failures), (0, 1));
    }
}
