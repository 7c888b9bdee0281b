//! The table of calls waiting for a reply on one connection, and the reply slot of each.
//!
//! Invariant: every registered call is completed exactly once, by its reply, by its deadline
//! (`expire`), by its caller giving up (`remove`), or by `close_all` when the connection
//! ends. Registration and `close_all` take the same lock, so no call can slip in after the
//! table closed.
//!
//! A call's reply waits in the call's slot in this table, which its caller polls
//! ([`poll_reply`](PendingCalls::poll_reply)), rather than in a oneshot channel of its own:
//! no allocation per call, and the slot's state is guarded by the lock the table takes
//! anyway. A completed slot stays until its caller takes the outcome (or gives up).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use super::deadlines::{Deadlines, Expiry};
use super::round_trip::RoundTrip;
use crate::client::stream::slot::UploadSender;
use crate::client::stream::slot::{StreamNext, StreamSlot, Taken};
use crate::stream::credit::SendCredit;
use crate::stream::credit_window::{Neighbours, WindowSize};

use super::closed::Closed;
use crate::error::Error;
use crate::id_hash::IdMap;
use crate::transport::frame::Frame;

#[derive(Default)]
pub(crate) struct PendingCalls {
    state: Mutex<State>,
    /// Mirrors `state.closed.is_some()`, so the per-call check takes no lock.
    closed: AtomicBool,
    /// Mirrors `state.waiting`, for the same reason.
    waiting: AtomicUsize,
    /// Set while [`drained`](Self::drained) waits, so that only then does the last completed
    /// call pay for a wake-up.
    draining: AtomicBool,
    /// Woken when no call waits any more while draining.
    empty: tokio::sync::Notify,
    /// The connection's round trip, for the streams' windows.
    pub(crate) round_trip: RoundTrip,
}

#[derive(Default)]
struct State {
    calls: IdMap<u64, Slot>,
    /// How many of `calls` are [`Slot::Waiting`].
    waiting: usize,
    /// How many of `calls` are [`Slot::Stream`]: they share the connection's window bytes.
    streams: usize,
    /// Calls (not streams) registered so far: while this moves, the streams keep their
    /// windows small (see `stream::window`).
    calls_started: u64,
    /// The deadlines of the calls that have one; a call that times out is completed with
    /// [`Error::Timeout`] by [`PendingCalls::expire`].
    deadlines: Deadlines,
    closed: Option<Closed>,
}

/// One call's place in the table.
enum Slot {
    /// No outcome yet; the waker of the caller's task, once it has polled.
    Waiting(Option<Waker>),
    /// The outcome, until the caller takes it.
    Done(Result<Frame, Error>),
    /// A server stream: waiting while it has no end (boxed: rare, and larger than a call).
    Stream(Box<StreamSlot>),
}

impl State {
    /// Ends call `id` with `outcome` if it still waits; returns its caller's waker (`None`
    /// also when it had not polled yet) and whether it waited.
    fn finish(&mut self, id: u64, outcome: Result<Frame, Error>) -> (Option<Waker>, bool) {
        let Some(slot) = self.calls.get_mut(&id) else {
            return (None, false);
        };
        let waker = match slot {
            Slot::Waiting(waker) => {
                let waker = waker.take();
                *slot = Slot::Done(outcome);
                waker
            }
            // A stream's end waits behind its items.
            Slot::Stream(stream) if stream.end.is_none() => stream.end_with(outcome),
            _ => return (None, false),
        };
        self.waiting -= 1;
        (waker, true)
    }

    /// What else runs on the connection, for a stream's window, whose round trip is
    /// `round_trip`.
    fn neighbours(&self, round_trip: Option<Duration>) -> Neighbours {
        Neighbours {
            streams: self.streams,
            calls_started: self.calls_started,
            // `waiting` counts the streams that have not ended too.
            call_waiting: self.waiting > self.streams,
            round_trip,
        }
    }

    fn is_waiting(&self, id: u64) -> bool {
        match self.calls.get(&id) {
            Some(Slot::Waiting(_)) => true,
            Some(Slot::Stream(stream)) => stream.end.is_none(),
            _ => false,
        }
    }

    fn closed_error(&self) -> Error {
        match &self.closed {
            Some(closed) => closed.error(),
            None => Error::closed("the connection's tasks ended"),
        }
    }

    fn unsent_error(&self) -> Error {
        match &self.closed {
            Some(closed) => closed.unsent_error(),
            None => Error::unsent("the connection's tasks ended"),
        }
    }
}

impl PendingCalls {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the map inconsistent (every operation
        // is a single insert/remove/replace), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// After a call stopped waiting: mirrors the count, and wakes a drain once none waits.
    fn counted(&self, state: &State) {
        self.waiting.store(state.waiting, Ordering::Relaxed);
        if state.waiting == 0 && self.draining.load(Ordering::Acquire) {
            self.empty.notify_waiters();
        }
    }

    /// Whether calls or streams wait on the connection (for its keepalive).
    pub(crate) fn holds_calls(&self) -> bool {
        let state = self.lock();
        state.waiting > 0 || state.streams > 0
    }

    /// Registers call `id`, to time out at `deadline` (after its timeout) if it has one, or
    /// fails when the connection has already closed. `waker`, the caller's task, is woken
    /// when the outcome comes, as if the caller had polled already.
    pub(crate) fn register(
        &self,
        id: u64,
        deadline: Option<(Instant, std::time::Duration)>,
        waker: Option<Waker>,
    ) -> Result<(), Error> {
        self.register_slot(id, Slot::Waiting(waker), deadline)
    }

    /// Registers server stream `id`, which has granted the server `window.items` items, to
    /// time out at `deadline` (after its timeout) if it has one.
    pub(crate) fn register_stream(
        &self,
        id: u64,
        window: WindowSize,
        upload: Option<UploadSender>,
        deadline: Option<(Instant, std::time::Duration)>,
    ) -> Result<(), Error> {
        let mut stream = StreamSlot::new(window);
        stream.upload = upload;
        self.register_slot(id, Slot::Stream(Box::new(stream)), deadline)
    }

    /// Adds a `Credit` frame's grant to the upload of stream `id`. A grant for a stream that
    /// is not open is ignored (it may have just ended); a malformed or excessive one is a
    /// protocol violation, whose message this returns.
    pub(crate) fn upload_credit(&self, id: u64, payload: &[u8]) -> Result<(), String> {
        let granted = SendCredit::parse(payload)
            .map_err(|err| format!("protocol violation: stream {id}: {err}"))?;
        match self.lock().calls.get(&id) {
            Some(Slot::Stream(stream)) => stream
                .grant(granted)
                .map_err(|err| format!("protocol violation: stream {id}: {err}")),
            _ => Ok(()),
        }
    }

    /// Ends call or stream `id` with `error` on this side, if it still waits.
    pub(crate) fn fail(&self, id: u64, error: Error) {
        let waker = {
            let mut state = self.lock();
            let (waker, waited) = state.finish(id, Err(error));
            if waited {
                self.counted(&state);
            }
            waker
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn register_slot(
        &self,
        id: u64,
        slot: Slot,
        deadline: Option<(Instant, std::time::Duration)>,
    ) -> Result<(), Error> {
        let mut state = self.lock();
        if let Some(closed) = &state.closed {
            return Err(closed.unsent_error());
        }
        let stream = matches!(slot, Slot::Stream(_));
        state.streams += usize::from(stream);
        state.calls_started += u64::from(!stream);
        state.calls.insert(id, slot);
        state.waiting += 1;
        self.waiting.store(state.waiting, Ordering::Relaxed);
        if let Some((at, after)) = deadline {
            let expiry = Expiry {
                at,
                request_id: id,
                after,
            };
            let State {
                calls, deadlines, ..
            } = &mut *state;
            deadlines.push(expiry, calls.len(), |id| match calls.get(&id) {
                Some(Slot::Waiting(_)) => true,
                Some(Slot::Stream(stream)) => stream.end.is_none(),
                _ => false,
            });
        }
        Ok(())
    }

    /// The outcome of call `id` once there is one (taking it off the table); until then,
    /// `cx` is woken when it comes.
    pub(crate) fn poll_reply(&self, id: u64, cx: &mut Context<'_>) -> Poll<Result<Frame, Error>> {
        let mut state = self.lock();
        if let Some(Slot::Waiting(waker)) = state.calls.get_mut(&id) {
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        match state.calls.remove(&id) {
            Some(Slot::Done(outcome)) => Poll::Ready(outcome),
            // Only polled for a registered call that has not taken its outcome yet.
            _ => Poll::Ready(Err(state.closed_error())),
        }
    }

    /// Visits stream `id` for its consumer: counts the `taken` items it took since its last
    /// visit, and moves the items waiting into `out`, or hands it the end once every item
    /// is out (the end takes the stream off the table). Until either comes, and whenever
    /// nothing was moved, `cx` is woken when something comes.
    pub(crate) fn poll_stream(
        &self,
        id: u64,
        taken: u32,
        out: &mut VecDeque<Frame>,
        cx: &mut Context<'_>,
    ) -> Poll<StreamNext> {
        let mut state = self.lock();
        let neighbours = state.neighbours(self.round_trip.get());
        let next = match state.calls.get_mut(&id) {
            Some(Slot::Stream(stream)) => {
                let next = stream.next(out, taken, neighbours);
                if out.is_empty()
                    && !matches!(next, Some(StreamNext::End(_)))
                    && !stream
                        .waker
                        .as_ref()
                        .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    stream.waker = Some(cx.waker().clone());
                }
                next
            }
            // Only polled for a registered stream that has not taken its end yet.
            _ => return Poll::Ready(StreamNext::End(Err(state.closed_error()))),
        };
        if matches!(next, Some(StreamNext::End(_))) {
            state.calls.remove(&id);
            state.streams -= 1;
        }
        next.map_or(Poll::Pending, Poll::Ready)
    }

    /// Counts `taken` items the consumer of stream `id` took from what it was handed: the
    /// credit due now, and when to report again.
    pub(crate) fn stream_taken(&self, id: u64, taken: u32) -> Taken {
        let mut state = self.lock();
        let neighbours = state.neighbours(self.round_trip.get());
        match state.calls.get_mut(&id) {
            Some(Slot::Stream(stream)) => stream.taken(taken, neighbours),
            _ => Taken {
                grant: None,
                report_after: u32::MAX,
            },
        }
    }

    /// Delivers an item of stream `id`; an item for a stream that is not open (it was
    /// dropped, or has ended) is discarded. An error, a protocol violation, when the server
    /// had no credit for it.
    pub(crate) fn stream_item(&self, id: u64, item: Frame) -> Result<(), String> {
        let waker = {
            let mut state = self.lock();
            match state.calls.get_mut(&id) {
                Some(Slot::Stream(stream)) if stream.end.is_none() => stream.push(item)?,
                _ => None,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Delivers the Head (reply metadata) of stream `id`, to be read before its items; a Head
    /// for a stream that is not open is discarded. An error, a protocol violation, when the
    /// stream already had its Head or an item.
    pub(crate) fn stream_head(&self, id: u64, head: Frame) -> Result<(), String> {
        let waker = {
            let mut state = self.lock();
            match state.calls.get_mut(&id) {
                Some(Slot::Stream(stream)) if stream.end.is_none() => stream.push_head(head)?,
                _ => None,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Ready when a call's deadline has passed: then the sweeper (the connection's reader)
    /// calls [`expire`](Self::expire).
    pub(crate) fn poll_expiry(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.lock().deadlines.poll(cx)
    }

    /// Fails every call whose deadline passed by `now` with [`Error::Timeout`], and returns
    /// their ids (each is to be cancelled on the server).
    pub(crate) fn expire(&self, now: Instant) -> Vec<u64> {
        let mut expired = Vec::new();
        let mut wakers = Vec::new();
        {
            let mut state = self.lock();
            let mut deadlines = std::mem::take(&mut state.deadlines);
            deadlines.expire(now, |expiry, passed| {
                if !passed {
                    return state.is_waiting(expiry.request_id);
                }
                let timeout = Err(Error::Timeout {
                    after: expiry.after,
                });
                let (waker, waited) = state.finish(expiry.request_id, timeout);
                if waited {
                    expired.push(expiry.request_id);
                    wakers.extend(waker);
                }
                waited
            });
            state.deadlines = deadlines;
            self.counted(&state);
        }
        wakers.into_iter().for_each(Waker::wake);
        expired
    }

    /// Delivers a reply; returns false when nobody waits for `id` any more.
    pub(crate) fn complete(&self, id: u64, frame: Frame) -> bool {
        let (waker, waited) = {
            let mut state = self.lock();
            let finished = state.finish(id, Ok(frame));
            if finished.1 {
                self.counted(&state);
            }
            finished
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        waited
    }

    /// Forgets call `id` (its caller gave up); returns whether it was still waiting.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut state = self.lock();
        let waited = match state.calls.remove(&id) {
            Some(Slot::Waiting(_)) => true,
            Some(Slot::Stream(stream)) => {
                state.streams -= 1;
                stream.end.is_none()
            }
            Some(Slot::Done(_)) | None => false,
        };
        if waited {
            state.waiting -= 1;
            self.counted(&state);
        }
        waited
    }

    /// Waits until no call is waiting any more (each ends by its reply, its deadline, its
    /// caller giving up, or the connection closing).
    pub(crate) async fn drained(&self) {
        self.draining.store(true, Ordering::Release);
        loop {
            let empty = self.empty.notified();
            tokio::pin!(empty);
            // Registered before the check, so a wake-up between the two is not lost.
            empty.as_mut().enable();
            if self.lock().waiting == 0 {
                return;
            }
            empty.await;
        }
    }

    /// Fails every waiting call and refuses new ones (with the first closing's reason, if
    /// the table was already closed).
    pub(crate) fn close_all(&self, closed: Closed) {
        self.close(closed);
    }

    /// Fails every waiting call, and refuses new ones, with `error`: the server refused the
    /// hello these calls were sent behind.
    pub(crate) fn fail_hello(&self, error: Error) {
        self.close(Closed::Hello(error));
    }

    fn close(&self, why: Closed) {
        let mut wakers = Vec::new();
        {
            let mut state = self.lock();
            let state = &mut *state;
            let closed = state.closed.get_or_insert(why);
            self.closed.store(true, Ordering::Release);
            for slot in state.calls.values_mut() {
                match slot {
                    Slot::Waiting(waker) => {
                        wakers.extend(waker.take());
                        *slot = Slot::Done(Err(closed.error()));
                    }
                    Slot::Stream(stream) if stream.end.is_none() => {
                        wakers.extend(stream.end_with(Err(closed.error())));
                    }
                    _ => {}
                }
            }
            state.waiting = 0;
            self.waiting.store(0, Ordering::Relaxed);
            state.deadlines.clear();
        }
        self.empty.notify_waiters();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The error of a call on this connection after it closed.
    pub(crate) fn closed_error(&self) -> Error {
        self.lock().closed_error()
    }

    /// The error of a call that could not be sent because the connection closed.
    pub(crate) fn unsent_error(&self) -> Error {
        self.lock().unsent_error()
    }

    /// Whether the connection has closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Why the connection closed, if it has.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.lock().closed.as_ref().map(Closed::reason)
    }

    /// Calls currently waiting.
    pub(crate) fn len(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
#[path = "pending_tests.rs"]
mod tests;
