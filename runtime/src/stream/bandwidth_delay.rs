//! Whether a stream's window, rather than its link, its producer or its consumer, sets its
//! pace: the receiver's measure of the bandwidth-delay product.
//!
//! Over a stretch of at least one round trip, the items the consumer took, scaled to one
//! round trip, are what the link carried per round trip. When that comes near the whole
//! window (two thirds, as hyper's adaptive window) and the consumer ran out of items during
//! the stretch, the sender spent part of every round trip waiting for credit: the window is
//! too small for the link. A slow producer takes far less than a window per round trip, and
//! a slow consumer never runs out, so neither calls for more; on loopback a round trip is
//! too short to carry a window. The round trip itself is the connection's, timed with a Ping
//! (`client/endpoint/round_trip.rs`), as gRPC's BDP estimator times its own.

use std::time::Duration;

use tokio::time::Instant;

/// A receiver's running measurement.
#[derive(Debug, Default)]
pub(crate) struct BandwidthDelay {
    /// When the current stretch started (none before the first decision).
    since: Option<Instant>,
    /// Items the consumer took in the stretch.
    taken: u64,
    /// Whether the consumer found no item waiting during the stretch.
    starved: bool,
}

impl BandwidthDelay {
    /// Counts an item the consumer took.
    pub(crate) fn took(&mut self) {
        self.taken += 1;
    }

    /// The consumer found no item waiting.
    pub(crate) fn starving(&mut self) {
        self.starved = true;
    }

    /// Whether a `window` of items held the stream back, over a link whose round trip is
    /// `round_trip`; once the stretch is a round trip long, starts the next one.
    pub(crate) fn window_too_small(&mut self, window: u32, round_trip: Duration) -> bool {
        let now = Instant::now();
        let Some(since) = self.since else {
            self.restart(now);
            return false;
        };
        let stretch = now.saturating_duration_since(since);
        if stretch < round_trip || stretch.is_zero() {
            return false;
        }
        let per_round_trip =
            u128::from(self.taken) * round_trip.as_nanos() / stretch.as_nanos().max(1);
        let too_small = self.starved && per_round_trip * 3 >= u128::from(window) * 2;
        self.restart(now);
        too_small
    }

    fn restart(&mut self, now: Instant) {
        self.since = Some(now);
        self.taken = 0;
        self.starved = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(20);

    /// One stretch: `taken` items over `elapsed`, the consumer starving or not.
    async fn stretch(
        meter: &mut BandwidthDelay,
        taken: u32,
        elapsed: Duration,
        starved: bool,
    ) -> bool {
        tokio::time::advance(elapsed).await;
        (0..taken).for_each(|_| meter.took());
        if starved {
            meter.starving();
        }
        meter.window_too_small(100, RTT)
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_a_round_trip_with_a_starving_consumer_is_too_small() {
        let mut meter = BandwidthDelay::default();
        assert!(
            !meter.window_too_small(100, RTT),
            "the first stretch starts"
        );
        assert!(stretch(&mut meter, 100, RTT, true).await);
        assert!(
            stretch(&mut meter, 140, RTT * 2, true).await,
            "70 a round trip"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_producer_or_consumer_is_not_held_back_by_the_window() {
        let mut meter = BandwidthDelay::default();
        meter.window_too_small(100, RTT);
        assert!(
            !stretch(&mut meter, 10, RTT, true).await,
            "a slow producer: 10 a round trip"
        );
        assert!(
            !stretch(&mut meter, 100, RTT, false).await,
            "a consumer that never ran out"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stretch_shorter_than_a_round_trip_decides_nothing() {
        let mut meter = BandwidthDelay::default();
        meter.window_too_small(100, RTT);
        assert!(!stretch(&mut meter, 100, RTT / 4, true).await);
        // The stretch goes on: 200 items over 1.25 round trips.
        assert!(stretch(&mut meter, 100, RTT, true).await);
    }
}
