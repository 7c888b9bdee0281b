//! When is a silent peer dead? After `idle` without a frame, ping it; if nothing at all arrives
//! within `answer` after the ping, give up. The server's idle timeout and the client's
//! keepalive are the same rule, so both read loops use this one.
//!
//! The clock is read once per burst of frames (when the loop is about to wait for input),
//! not once per frame.

use std::time::Duration;

use tokio::time::Instant;

/// What to do when the liveness timer fires.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Silence {
    /// Frames arrived meanwhile: set the timer to this instant and keep waiting.
    Rearm(Instant),
    /// Silent for the idle period: send a ping, and set the timer to this instant.
    Ping(Instant),
    /// No answer to the ping either: the peer is gone.
    Dead,
}

#[derive(Debug)]
///
/// The periods are passed to each method rather than kept: a server keeps one of these in the
/// task of every connection it holds, and the periods are the same for all of them.
pub(crate) struct Liveness {
    last_frame: Instant,
    pinged: bool,
    /// Frames handled since the loop last waited for input.
    burst: u32,
}

impl Liveness {
    pub(crate) fn new() -> Self {
        Self {
            last_frame: Instant::now(),
            pinged: false,
            burst: 0,
        }
    }

    /// When the timer should first fire.
    pub(crate) fn first_deadline(&self, idle: Duration) -> Instant {
        self.last_frame + idle
    }

    /// A frame was handled: one more in the current burst.
    pub(crate) fn frame(&mut self) {
        self.burst += 1;
    }

    /// Frames handled since the loop last waited for input.
    pub(crate) fn burst(&self) -> u32 {
        self.burst
    }

    /// The loop is about to wait for input: the burst just handled counts as activity now.
    pub(crate) fn before_wait(&mut self) {
        if self.burst > 0 {
            self.last_frame = Instant::now();
            self.pinged = false;
            self.burst = 0;
        }
    }

    /// The timer fired at `now`; the peer gets `idle` without a frame, then `answer` to
    /// answer a ping.
    pub(crate) fn on_timer(&mut self, now: Instant, idle: Duration, answer: Duration) -> Silence {
        if !self.pinged && now < self.last_frame + idle {
            return Silence::Rearm(self.last_frame + idle);
        }
        if self.pinged {
            return Silence::Dead;
        }
        self.pinged = true;
        Silence::Ping(now + answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(10);
    const ANSWER: Duration = Duration::from_secs(2);

    #[tokio::test(start_paused = true)]
    async fn a_silent_peer_is_pinged_then_declared_dead() {
        let mut liveness = Liveness::new();
        tokio::time::advance(IDLE).await;
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, IDLE, ANSWER),
            Silence::Ping(now + ANSWER)
        );
        tokio::time::advance(ANSWER).await;
        assert_eq!(
            liveness.on_timer(Instant::now(), IDLE, ANSWER),
            Silence::Dead
        );
    }

    #[tokio::test(start_paused = true)]
    async fn frames_after_a_ping_keep_the_peer_alive() {
        let mut liveness = Liveness::new();
        tokio::time::advance(IDLE).await;
        assert!(matches!(
            liveness.on_timer(Instant::now(), IDLE, ANSWER),
            Silence::Ping(_)
        ));
        liveness.frame();
        liveness.before_wait();
        let now = Instant::now();
        tokio::time::advance(ANSWER).await;
        assert_eq!(
            liveness.on_timer(Instant::now(), IDLE, ANSWER),
            Silence::Rearm(now + IDLE)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_counts_when_the_loop_waits() {
        let mut liveness = Liveness::new();
        liveness.frame();
        liveness.frame();
        assert_eq!(liveness.burst(), 2);
        tokio::time::advance(IDLE).await;
        liveness.before_wait();
        assert_eq!(liveness.burst(), 0);
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, IDLE, ANSWER),
            Silence::Rearm(now + IDLE)
        );
    }
}
