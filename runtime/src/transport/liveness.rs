//! When is a silent peer dead? A connection that holds calls or streams gives its peer `busy`
//! without a sign of life, an idle one `idle`; then the peer is pinged, and if nothing at all
//! arrives within `answer` after the ping, it is declared dead. The server's liveness and the
//! client's keepalive are the same rule, so both read loops use this one.
//!
//! While calls wait, a sign of life is any bytes read, not only whole frames: a large frame
//! arriving slowly over a slow link keeps its peer alive (an idle connection still needs
//! whole frames, so a frame trickling in a byte at a time cannot hold it open). And a ping that still waits behind this side's own
//! backlog (a large frame going out slowly) has not been sent yet: while that backlog
//! drains, the answer's clock does not run.
//!
//! The clock is read once per burst of frames (when the loop is about to wait for input),
//! not once per frame.

use std::time::Duration;

use tokio::time::Instant;

/// What to do when the liveness timer fires.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Silence {
    /// The peer showed life meanwhile: set the timer to this instant and keep waiting.
    Rearm(Instant),
    /// Silent for too long: send a ping, and set the timer to this instant.
    Ping(Instant),
    /// No answer to the ping either: the peer is gone.
    Dead,
}

/// How long a peer may stay silent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Periods {
    /// Silence allowed while the connection holds nothing.
    pub(crate) idle: Duration,
    /// Silence allowed while calls or streams wait on the connection.
    pub(crate) busy: Duration,
    /// The wait for any sign of life after a ping.
    pub(crate) answer: Duration,
    /// Fire at least every `busy` even while idle, for a loop that cannot see a call start
    /// (a client's reader sees replies, not requests).
    pub(crate) tick_while_idle: bool,
}

/// What the loop sees of the connection when the timer fires.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    /// Whether calls or streams wait on the connection.
    pub(crate) busy: bool,
    /// The reader's count of reads that brought bytes.
    pub(crate) reads: u32,
    /// The sink's count of writes, if it still has frames to write.
    pub(crate) backlog_writes: Option<u32>,
}

/// What one connection's read loop knows of its peer's liveness.
///
/// The periods are passed to each method rather than kept: a server keeps one of these in the
/// task of every connection it holds, and the periods are the same for all of them.
#[derive(Debug)]
pub(crate) struct Liveness {
    last_frame: Instant,
    pinged: bool,
    /// Frames handled since the loop last waited for input.
    burst: u32,
    /// The reader's read count when the timer last fired.
    reads: u32,
    /// The sink's write count when the ping was queued (or its backlog last moved).
    writes: u32,
}

impl Liveness {
    pub(crate) fn new() -> Self {
        Self {
            last_frame: Instant::now(),
            pinged: false,
            burst: 0,
            reads: 0,
            writes: 0,
        }
    }

    /// When the timer should first fire.
    pub(crate) fn first_deadline(&self, periods: &Periods) -> Instant {
        self.last_frame
            + if periods.tick_while_idle {
                periods.busy.min(periods.idle)
            } else {
                periods.idle
            }
    }

    /// When the timer should fire at the latest while the connection holds calls: a loop
    /// that sees calls start moves its timer here. `None` while a ping waits for its answer:
    /// the answer's own deadline stands, or the peer would be declared dead the moment it
    /// was pinged.
    pub(crate) fn busy_deadline(&self, periods: &Periods) -> Option<Instant> {
        (!self.pinged).then(|| self.last_frame + periods.busy)
    }

    /// A frame was handled: one more in the current burst.
    pub(crate) fn frame(&mut self) {
        self.burst += 1;
    }

    /// Frames handled since the loop last waited for input.
    pub(crate) fn burst(&self) -> u32 {
        self.burst
    }

    /// The loop is about to wait for input, its reader having counted `reads`: the burst just
    /// handled counts as activity now (and the reads that brought it are not news later).
    pub(crate) fn before_wait(&mut self, reads: u32) {
        self.reads = reads;
        if self.burst > 0 {
            self.last_frame = Instant::now();
            self.pinged = false;
            self.burst = 0;
        }
    }

    /// The timer fired at `now`, with the connection as `seen`.
    pub(crate) fn on_timer(&mut self, now: Instant, seen: Seen, periods: &Periods) -> Silence {
        if seen.reads != self.reads && seen.busy {
            // Bytes came (a frame still arriving) for the calls that wait: a sign of life.
            // Not for an idle connection, which must not be kept open by a frame trickling
            // in a byte at a time.
            self.reads = seen.reads;
            self.last_frame = now;
            self.pinged = false;
        }
        if self.pinged {
            return match seen.backlog_writes {
                // The ping waits behind frames that are still going out: its clock starts
                // when the backlog stops moving.
                Some(writes) if writes != self.writes => {
                    self.writes = writes;
                    Silence::Rearm(now + periods.answer)
                }
                _ => Silence::Dead,
            };
        }
        let allowed = if seen.busy {
            periods.busy
        } else {
            periods.idle
        };
        let due = self.last_frame + allowed;
        if now < due {
            let next = if !seen.busy && periods.tick_while_idle {
                due.min(now + periods.busy)
            } else {
                due
            };
            return Silence::Rearm(next);
        }
        self.pinged = true;
        self.writes = seen.backlog_writes.unwrap_or(self.writes);
        Silence::Ping(now + periods.answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIODS: Periods = Periods {
        idle: Duration::from_secs(30),
        busy: Duration::from_secs(1),
        answer: Duration::from_secs(2),
        tick_while_idle: true,
    };

    fn seen(busy: bool, reads: u32, backlog_writes: Option<u32>) -> Seen {
        Seen {
            busy,
            reads,
            backlog_writes,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_peer_holding_calls_is_pinged_after_the_busy_period_then_declared_dead() {
        let mut liveness = Liveness::new();
        tokio::time::advance(PERIODS.busy).await;
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, seen(true, 0, None), &PERIODS),
            Silence::Ping(now + PERIODS.answer)
        );
        tokio::time::advance(PERIODS.answer).await;
        assert_eq!(
            liveness.on_timer(Instant::now(), seen(true, 0, None), &PERIODS),
            Silence::Dead
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_ping_waiting_for_its_answer_is_not_cut_short_by_the_busy_period() {
        let mut liveness = Liveness::new();
        let start = Instant::now();
        assert_eq!(liveness.busy_deadline(&PERIODS), Some(start + PERIODS.busy));
        tokio::time::advance(PERIODS.busy).await;
        assert!(matches!(
            liveness.on_timer(Instant::now(), seen(true, 0, None), &PERIODS),
            Silence::Ping(_)
        ));
        // The loop must not move its timer back to the busy period's end (already past):
        // the peer has `answer` to reply.
        assert_eq!(liveness.busy_deadline(&PERIODS), None);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_waits_the_idle_period_but_ticks_to_notice_calls() {
        let mut liveness = Liveness::new();
        tokio::time::advance(PERIODS.busy).await;
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, seen(false, 0, None), &PERIODS),
            Silence::Rearm(now + PERIODS.busy)
        );
        // A call started meanwhile: the peer has been silent for longer than the busy period.
        tokio::time::advance(PERIODS.busy).await;
        assert!(matches!(
            liveness.on_timer(Instant::now(), seen(true, 0, None), &PERIODS),
            Silence::Ping(_)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn frames_after_a_ping_keep_the_peer_alive() {
        let mut liveness = Liveness::new();
        tokio::time::advance(PERIODS.busy).await;
        assert!(matches!(
            liveness.on_timer(Instant::now(), seen(true, 0, None), &PERIODS),
            Silence::Ping(_)
        ));
        liveness.frame();
        liveness.before_wait(0);
        let now = Instant::now();
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(
            liveness.on_timer(Instant::now(), seen(true, 0, None), &PERIODS),
            Silence::Rearm(now + PERIODS.busy)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_of_a_frame_still_arriving_keep_the_peer_alive() {
        let mut liveness = Liveness::new();
        tokio::time::advance(PERIODS.busy).await;
        assert!(matches!(
            liveness.on_timer(Instant::now(), seen(true, 0, None), &PERIODS),
            Silence::Ping(_)
        ));
        tokio::time::advance(PERIODS.answer).await;
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, seen(true, 7, None), &PERIODS),
            Silence::Rearm(now + PERIODS.busy)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_ping_behind_a_draining_backlog_waits_for_it_but_not_for_a_stuck_one() {
        let mut liveness = Liveness::new();
        tokio::time::advance(PERIODS.busy).await;
        assert!(matches!(
            liveness.on_timer(Instant::now(), seen(true, 0, Some(3)), &PERIODS),
            Silence::Ping(_)
        ));
        tokio::time::advance(PERIODS.answer).await;
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, seen(true, 0, Some(9)), &PERIODS),
            Silence::Rearm(now + PERIODS.answer)
        );
        tokio::time::advance(PERIODS.answer).await;
        assert_eq!(
            liveness.on_timer(Instant::now(), seen(true, 0, Some(9)), &PERIODS),
            Silence::Dead
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_counts_when_the_loop_waits() {
        let mut liveness = Liveness::new();
        liveness.frame();
        liveness.frame();
        assert_eq!(liveness.burst(), 2);
        tokio::time::advance(PERIODS.idle).await;
        liveness.before_wait(0);
        assert_eq!(liveness.burst(), 0);
        let now = Instant::now();
        assert_eq!(
            liveness.on_timer(now, seen(false, 0, None), &PERIODS),
            Silence::Rearm(now + PERIODS.busy)
        );
    }
}
