//! The receiver's side of a stream's credit: how many items the sender may still send, and
//! when to grant it more. The client keeps one per server stream, the server one per upload.
//!
//! Credit on the wire counts items, but what a receiver has to hold is bytes: 32 items of
//! 1 KiB are a round trip per 16 KiB, while 32 items of 1 MiB are 32 MiB of buffer. So the
//! window starts at its configured number of items and then sizes itself from the items it
//! receives: it grows (or shrinks, as items are taken) towards `budget` bytes divided by
//! the largest item seen so far, never below the configured items and never above
//! [`MAX_STREAM_CREDIT`]. Small items get a deep window, large ones keep the configured one;
//! the sender needs to know nothing of it (its credit is just larger).
//!
//! A deep window has a price for the calls that share the connection: every byte of it can
//! sit in the write queue and the socket buffers ahead of a reply, so a saturating stream
//! with 1 MiB of credit made a call beside it several times slower. So while calls run
//! beside the stream (a call waiting for its reply as the window decides, or any call
//! started on the connection since it last decided), the window falls back to its
//! configured items; it grows again once calls stop.
//!
//! Over a long link even the budget is too small: a window's worth of items per round trip
//! is 50 MB/s at 20 ms with 1 MiB. So the budget itself grows, doubling up to the
//! connection's bytes, each time a round trip shows the window is what holds the stream
//! back ([`BandwidthDelay`]). Shrinking items or calls beside the stream still bring the
//! window down; the connection's bytes stay the bound on what the client may hold.

use std::time::Duration;

use crate::stream::bandwidth_delay::BandwidthDelay;
use crate::wire::MAX_STREAM_CREDIT;

/// The most bytes of items a receiver takes before it grants credit back, however large its
/// window. A window's half is the step up to a 2 MiB window (the default 1 MiB one grants
/// every half window); a window grown on a long link grants every 1 MiB instead, so that
/// seven eighths of an 8 MiB window stay in flight rather than half of it, and the link,
/// not the wait for credit, sets the pace. One more `Credit` frame per MiB costs nothing
/// worth counting.
const GRANT_STEP_BYTES: u32 = 1 << 20;

/// What an item costs its receiver beyond its payload, counted against the budget: its frame
/// header and its place in the queue. Without it, tiny items would get a window whose queue
/// alone outweighs the budget.
const ITEM_OVERHEAD: u32 = 64;

/// How large a receiver's window is: `items` at first, then sized towards `bytes` of items
/// (0: never resized), and towards no more than its share of `connection` bytes, which all
/// the streams open on its connection share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WindowSize {
    pub(crate) items: u32,
    pub(crate) bytes: u32,
    pub(crate) connection: u32,
}

/// The credit a receiver has granted: an item the sender had no credit for is a protocol
/// violation, and credit is granted back half a window at a time (at most
/// [`GRANT_STEP_BYTES`] of items) as the consumer takes items, so a steady consumer tops the
/// sender up before it runs out with one `Credit` frame per step.
#[derive(Debug)]
pub(crate) struct ReceiveWindow {
    /// Granted and not yet used by an item.
    outstanding: u32,
    /// Items taken since credit was last granted.
    taken: u32,
    /// The credit given and not yet given back: outstanding, plus items held or taken since
    /// the last grant.
    window: u32,
    /// The smallest window: the configured items, granted at the open.
    floor: u32,
    /// The bytes of items the window grows towards (0: it never grows).
    budget: u32,
    /// The bytes all the streams of the connection share.
    connection: u32,
    /// The largest item received, in bytes with its overhead (0 until an item has come).
    largest: u32,
    /// The connection's count of calls started, as of the last decision.
    calls_seen: u64,
    /// Whether the last decision left the window at all its budget allows (not still
    /// growing, nor held at its floor by calls beside the stream): only then can the budget
    /// be too small.
    at_budget: bool,
    /// Whether the window holds the stream back on a long link.
    pace: BandwidthDelay,
}

/// What else runs on a stream's connection, as the window decides.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Neighbours {
    /// Streams open, this one included.
    pub(crate) streams: usize,
    /// Calls (not streams) started on the connection so far: a running count, compared
    /// between decisions.
    pub(crate) calls_started: u64,
    /// Whether a call (not a stream) waits for its reply right now.
    pub(crate) call_waiting: bool,
    /// The connection's round trip, once timed.
    pub(crate) round_trip: Option<Duration>,
}

impl Neighbours {
    /// A stream alone on its connection, as far as the window is told (an upload).
    pub(crate) const ALONE: Neighbours = Neighbours {
        streams: 1,
        calls_started: 0,
        call_waiting: false,
        round_trip: None,
    };
}

impl ReceiveWindow {
    /// A window of `size.items` items, all granted at once (the first `Credit` frame), which
    /// then sizes itself towards `size.bytes` of items.
    pub(crate) fn granted(size: WindowSize) -> Self {
        let items = size.items.clamp(1, MAX_STREAM_CREDIT);
        Self {
            outstanding: items,
            taken: 0,
            window: items,
            floor: items,
            budget: size.bytes,
            connection: size.connection,
            largest: 0,
            calls_seen: 0,
            at_budget: false,
            pace: BandwidthDelay::default(),
        }
    }

    /// Counts an item of `len` bytes that arrived; false when the sender had no credit for
    /// it.
    pub(crate) fn receive(&mut self, len: usize) -> bool {
        match self.outstanding.checked_sub(1) {
            Some(left) => {
                self.outstanding = left;
                let cost = u32::try_from(len)
                    .unwrap_or(u32::MAX)
                    .saturating_add(ITEM_OVERHEAD);
                self.largest = self.largest.max(cost);
                true
            }
            None => false,
        }
    }

    /// The window the items seen so far call for, with `streams` open on the connection.
    fn target(&self, streams: usize) -> u32 {
        if self.budget == 0 || self.largest == 0 {
            return self.window;
        }
        let share = self.connection / u32::try_from(streams.max(1)).unwrap_or(u32::MAX);
        (self.budget.min(share) / self.largest).clamp(self.floor, MAX_STREAM_CREDIT)
    }

    /// The consumer found no item waiting.
    pub(crate) fn starving(&mut self) {
        self.pace.starving();
    }

    /// How many more items the consumer may take before credit is next due.
    pub(crate) fn until_grant(&self) -> u32 {
        self.grant_step().saturating_sub(self.taken).max(1)
    }

    /// The items taken between two grants: half the window, at most [`GRANT_STEP_BYTES`] of
    /// the largest items seen.
    fn grant_step(&self) -> u32 {
        let half = (self.window / 2).max(1);
        match GRANT_STEP_BYTES.checked_div(self.largest) {
            Some(step) => half.min(step.max(1)),
            None => half,
        }
    }

    /// Counts an item the consumer took, with `neighbours` on the connection; the credit to
    /// grant now, if any.
    pub(crate) fn take(&mut self, neighbours: Neighbours) -> Option<u32> {
        self.taken += 1;
        self.pace.took();
        if self.taken < self.grant_step() {
            return None;
        }
        let calls_beside = neighbours.call_waiting || neighbours.calls_started != self.calls_seen;
        self.calls_seen = neighbours.calls_started;
        if let Some(round_trip) = neighbours.round_trip {
            if self.pace.window_too_small(self.window, round_trip) && self.at_budget {
                self.budget = self.budget.saturating_mul(2).min(self.connection);
            }
        }
        let target = if calls_beside {
            self.floor
        } else {
            self.target(neighbours.streams)
        };
        // Growing adds credit at once; shrinking holds back taken items until the window is
        // down to its target, so that what was granted is never taken back.
        let grow = target.saturating_sub(self.window);
        let shed = self.window.saturating_sub(target).min(self.taken);
        let grant = std::mem::take(&mut self.taken) - shed + grow;
        self.window = self.window - shed + grow;
        self.at_budget = self.budget > 0 && !calls_beside && grow == 0 && shed == 0;
        self.outstanding += grant;
        (grant > 0).then_some(grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(items: u32, bytes: u32) -> WindowSize {
        WindowSize {
            items,
            bytes,
            connection: u32::MAX,
        }
    }

    #[test]
    fn credit_is_granted_back_half_a_window_at_a_time() {
        let mut window = ReceiveWindow::granted(size(4, 0));
        assert!((0..4).all(|_| window.receive(1024)));
        assert!(!window.receive(1024), "a fifth item had no credit");
        assert_eq!(window.take(Neighbours::ALONE), None);
        assert_eq!(window.take(Neighbours::ALONE), Some(2));
        assert!(window.receive(1024) && window.receive(1024));
        assert!(!window.receive(1024));
    }

    #[test]
    fn a_window_over_two_mib_grants_every_mib() {
        let item = 1024 + ITEM_OVERHEAD;
        let per_mib = GRANT_STEP_BYTES / item;
        // 1 MiB of 1 KiB items: half of it at a time, as any window.
        let mut window = ReceiveWindow::granted(size(963, 963 * item));
        assert!((0..963).all(|_| window.receive(1024)));
        assert_eq!(window.until_grant(), 481);
        // 8 MiB of them: 1 MiB at a time, so seven eighths stay in flight.
        let mut window = ReceiveWindow::granted(size(8 * per_mib, 8 * per_mib * item));
        assert!(window.receive(1024));
        assert_eq!(window.until_grant(), per_mib);
        let grants: Vec<_> = (0..2 * per_mib)
            .filter_map(|_| window.take(Neighbours::ALONE))
            .collect();
        assert_eq!(grants, [per_mib, per_mib]);
    }

    #[test]
    fn a_window_of_one_grants_each_item_back() {
        let mut window = ReceiveWindow::granted(size(1, 0));
        assert!(window.receive(10));
        assert!(!window.receive(10));
        assert_eq!(window.take(Neighbours::ALONE), Some(1));
        assert!(window.receive(10));
    }

    #[test]
    fn small_items_grow_the_window_towards_the_budget() {
        // 1 KiB items and a budget of 64 of them: 64 items.
        let mut window = ReceiveWindow::granted(size(4, 64 * (1024 + ITEM_OVERHEAD)));
        assert!((0..4).all(|_| window.receive(1024)));
        assert_eq!(window.take(Neighbours::ALONE), None);
        assert_eq!(
            window.take(Neighbours::ALONE),
            Some(2 + 60),
            "the two taken, and 60 more"
        );
        assert!((0..62).all(|_| window.receive(1024)));
        assert!(!window.receive(1024), "the window is 64 items");
    }

    #[test]
    fn a_larger_item_shrinks_the_window_as_items_are_taken() {
        let mut window = ReceiveWindow::granted(size(2, 16 * (1024 + ITEM_OVERHEAD)));
        assert!(window.receive(1024) && window.receive(1024));
        assert_eq!(
            window.take(Neighbours::ALONE),
            Some(15),
            "grown to 16 items of 1 KiB"
        );
        assert_eq!(window.take(Neighbours::ALONE), None);
        // 8 KiB items: the target is 2 items. What was granted stays granted.
        assert!((0..15).all(|_| window.receive(8 * 1024)));
        assert!(!window.receive(8 * 1024));
        assert!(
            (0..13).all(|_| window.take(Neighbours::ALONE).is_none()),
            "the window sheds 14 items on its way down to 2"
        );
        assert_eq!(window.window, 2);
        assert_eq!(window.take(Neighbours::ALONE), Some(1));
    }

    #[test]
    fn calls_beside_the_stream_keep_the_window_at_its_configured_items() {
        let mut window = ReceiveWindow::granted(size(4, 64 * (1024 + ITEM_OVERHEAD)));
        let beside = |calls_started| Neighbours {
            calls_started,
            ..Neighbours::ALONE
        };
        assert!((0..4).all(|_| window.receive(1024)));
        assert_eq!(window.take(beside(1)), None);
        assert_eq!(window.take(beside(2)), Some(2), "a call started: no growth");
        assert_eq!(window.window, 4);
        assert!(window.receive(1024) && window.receive(1024));
        assert_eq!(window.take(beside(2)), None);
        assert_eq!(
            window.take(beside(2)),
            Some(2 + 60),
            "no call since the last grant: grown to the budget"
        );
        assert!((0..62).all(|_| window.receive(1024)));
        // Calls again: each half window taken is shed, until the window is back at 4.
        let mut calls = 2;
        for expected in [32, 16, 8, 4] {
            let half = window.window / 2;
            for _ in 0..half {
                calls += 1;
                assert_eq!(window.take(beside(calls)), None);
            }
            assert_eq!(window.window, expected);
        }
        calls += 1;
        assert!(window.take(beside(calls)).is_none());
        calls += 1;
        assert_eq!(
            window.take(beside(calls)),
            Some(2),
            "at 4, taken items go back"
        );
    }

    #[test]
    fn the_window_never_shrinks_below_its_configured_items() {
        let mut window = ReceiveWindow::granted(size(8, 1024));
        assert!(window.receive(1024 * 1024));
        assert_eq!(window.target(1), 8);
    }

    #[test]
    fn streams_on_one_connection_share_its_bytes() {
        let mut window = ReceiveWindow::granted(WindowSize {
            connection: 64 * (1024 + ITEM_OVERHEAD),
            ..size(2, 64 * (1024 + ITEM_OVERHEAD))
        });
        assert!(window.receive(1024));
        assert_eq!(window.target(1), 64, "alone, the whole budget");
        assert_eq!(window.target(4), 16, "a quarter of the connection's");
        assert_eq!(window.target(1000), 2, "never below the configured items");
    }

    const RTT: Duration = Duration::from_millis(20);

    /// A window of 1 KiB items sized to a budget of `items`, all granted, over a connection
    /// of `connection_items`.
    fn sized(items: u32, connection_items: u32) -> ReceiveWindow {
        let item = 1024 + ITEM_OVERHEAD;
        ReceiveWindow::granted(WindowSize {
            items,
            bytes: items * item,
            connection: connection_items * item,
        })
    }

    /// `round_trips` round trips of a stream whose producer and consumer are both fast:
    /// everything granted comes a round trip later; the consumer takes it all, then waits
    /// (`starves`) or not. Returns the window at the end.
    async fn run(
        window: &mut ReceiveWindow,
        round_trips: usize,
        starves: bool,
        neighbours: Neighbours,
    ) -> u32 {
        for _ in 0..round_trips {
            tokio::time::advance(RTT).await;
            let arrived = window.outstanding;
            assert!((0..arrived).all(|_| window.receive(1024)));
            for _ in 0..arrived {
                let _ = window.take(neighbours);
            }
            if starves {
                window.starving();
            }
        }
        window.window
    }

    fn over(round_trip: Duration) -> Neighbours {
        Neighbours {
            round_trip: Some(round_trip),
            ..Neighbours::ALONE
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_that_holds_the_stream_back_grows_to_the_connections_bytes() {
        let mut window = sized(8, 64);
        assert_eq!(run(&mut window, 12, true, over(RTT)).await, 64);
        assert_eq!(window.budget, 64 * (1024 + ITEM_OVERHEAD));
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_grows_only_when_it_holds_the_stream_back() {
        // The consumer never runs out: it, not the window, sets the pace.
        assert_eq!(run(&mut sized(8, 64), 12, false, over(RTT)).await, 8);
        // The round trip not yet timed.
        assert_eq!(run(&mut sized(8, 64), 12, true, Neighbours::ALONE).await, 8);
        // Calls beside the stream keep it at its floor.
        let beside = Neighbours {
            call_waiting: true,
            ..over(RTT)
        };
        assert_eq!(run(&mut sized(8, 64), 12, true, beside).await, 8);
        // A window every 20 ms over a 5 ms link: the producer, not the window, is slow.
        assert_eq!(run(&mut sized(8, 64), 12, true, over(RTT / 4)).await, 8);
    }
}
