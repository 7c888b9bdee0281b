//! The connection's round trip, timed with a Ping of its own while streams take credit, so
//! that a stream's window can tell a long link from a slow producer
//! (`stream/bandwidth_delay.rs`).
//!
//! The timing Ping carries its own id ([`TIMING_PING_ID`]; the keepalive's is 0), and every
//! server answers it as the spec requires, old ones included. One is out at a time, and
//! after the first few samples at most one a second goes: a stream of any length costs a
//! few dozen bytes a second. The shortest answer is kept: a Pong that waited behind the
//! server's own items in flight says more about the queue than about the link.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The request id of the client's timing Pings.
pub(crate) const TIMING_PING_ID: u64 = 1;

/// Samples taken as fast as answers come, before pings slow to one a second.
const EAGER_SAMPLES: u32 = 4;

/// How often a timing Ping goes once the first samples are in.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// A connection's round-trip clock.
#[derive(Debug, Default)]
pub(crate) struct RoundTrip {
    state: Mutex<Timing>,
}

#[derive(Debug, Default)]
struct Timing {
    /// When the Ping that is out went.
    out: Option<Instant>,
    /// When the last Ping went.
    last: Option<Instant>,
    /// Answers so far.
    samples: u32,
    /// The shortest round trip answered.
    shortest: Option<Duration>,
}

impl RoundTrip {
    fn lock(&self) -> std::sync::MutexGuard<'_, Timing> {
        // Every update leaves the timing whole, so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The shortest round trip timed so far.
    pub(crate) fn get(&self) -> Option<Duration> {
        self.lock().shortest
    }

    /// Whether a timing Ping is due now (none is out, and the last went long enough ago);
    /// if so, counts it as sent.
    pub(crate) fn ping_due(&self) -> bool {
        let now = Instant::now();
        let mut timing = self.lock();
        let due = timing.out.is_none()
            && (timing.samples < EAGER_SAMPLES
                || timing
                    .last
                    .is_none_or(|last| now.saturating_duration_since(last) >= SAMPLE_EVERY));
        if due {
            timing.out = Some(now);
            timing.last = Some(now);
        }
        due
    }

    /// The answer to the timing Ping came.
    pub(crate) fn answered(&self) {
        let now = Instant::now();
        let mut timing = self.lock();
        if let Some(sent) = timing.out.take() {
            let sample = now.saturating_duration_since(sent);
            timing.samples = timing.samples.saturating_add(1);
            timing.shortest = Some(timing.shortest.map_or(sample, |best| best.min(sample)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn keeps_the_shortest_answer_and_slows_down_after_a_few() {
        let clock = RoundTrip::default();
        assert_eq!(clock.get(), None);
        for wait in [30, 20, 25, 40] {
            assert!(clock.ping_due());
            assert!(!clock.ping_due(), "one out at a time");
            tokio::time::advance(Duration::from_millis(wait)).await;
            clock.answered();
        }
        assert_eq!(clock.get(), Some(Duration::from_millis(20)));
        assert!(
            !clock.ping_due(),
            "the fifth waits a second after the fourth"
        );
        tokio::time::advance(SAMPLE_EVERY).await;
        assert!(clock.ping_due());
    }

    #[test]
    fn an_unasked_answer_changes_nothing() {
        let clock = RoundTrip::default();
        clock.answered();
        assert_eq!(clock.get(), None);
    }
}
