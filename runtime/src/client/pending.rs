//! The table of calls waiting for a reply on one connection.
//!
//! Invariant: every registered call is completed exactly once, by its reply, by its caller
//! giving up (`remove`), or by `close_all` when the connection ends. Registration and
//! `close_all` take the same lock, so no call can slip in after the table closed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::error::{Error, ErrorCode};
use crate::id_hash::IdMap;
use crate::transport::frame::Frame;

pub(crate) type ReplySender = oneshot::Sender<Result<Frame, Error>>;
pub(crate) type ReplyReceiver = oneshot::Receiver<Result<Frame, Error>>;

#[derive(Default)]
pub(crate) struct PendingCalls {
    state: Mutex<State>,
    /// Mirrors `state.closed.is_some()`, so the per-call check takes no lock.
    closed: AtomicBool,
    /// Mirrors `state.calls.len()`, for the same reason.
    waiting: AtomicUsize,
    /// Set while [`drained`](Self::drained) waits, so that only then does the last completed
    /// call pay for a wake-up.
    draining: AtomicBool,
    /// Woken when the table becomes empty while draining.
    empty: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    calls: IdMap<u64, ReplySender>,
    closed: Option<Closed>,
}

/// Why the table closed.
pub(crate) enum Closed {
    /// The connection ended: calls fail with [`Error::ConnectionClosed`], this reason and,
    /// when the server said why before closing, the code of its connection-level `Error`
    /// frame.
    Ended {
        reason: String,
        code: Option<ErrorCode>,
    },
    /// The server refused (or garbled) its answer to a hello sent with early calls: calls
    /// fail with the error a connect would have returned.
    Hello(Error),
}

impl Closed {
    /// The connection ended for `reason`, the server having said `code` (if anything).
    pub(crate) fn new(reason: impl Into<String>, code: Option<ErrorCode>) -> Self {
        Self::Ended {
            reason: reason.into(),
            code,
        }
    }

    /// The error of a call that this closing ended.
    fn error(&self) -> Error {
        match self {
            Self::Ended { reason, code } => Error::ConnectionClosed {
                reason: reason.clone(),
                code: *code,
            },
            Self::Hello(Error::Negotiation(error)) => Error::Negotiation(error.duplicate()),
            Self::Hello(Error::Tls(error)) => {
                Error::Tls(std::io::Error::new(error.kind(), error.to_string()))
            }
            Self::Hello(other) => Error::closed(other.to_string()),
        }
    }

    fn reason(&self) -> String {
        match self {
            Self::Ended { reason, .. } => reason.clone(),
            Self::Hello(error) => error.to_string(),
        }
    }
}

impl PendingCalls {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the map inconsistent (every operation
        // is a single insert/remove), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers call `id`, or fails when the connection has already closed.
    pub(crate) fn register(&self, id: u64) -> Result<ReplyReceiver, Error> {
        let mut state = self.lock();
        if let Some(closed) = &state.closed {
            return Err(closed.error());
        }
        let (tx, rx) = oneshot::channel();
        state.calls.insert(id, tx);
        self.waiting.store(state.calls.len(), Ordering::Relaxed);
        Ok(rx)
    }

    /// Delivers a reply; returns false when nobody waits for `id` any more.
    pub(crate) fn complete(&self, id: u64, frame: Frame) -> bool {
        let sender = self.take(id);
        match sender {
            Some(tx) => tx.send(Ok(frame)).is_ok(),
            None => false,
        }
    }

    /// Forgets call `id` (its caller gave up); returns whether it was still waiting.
    pub(crate) fn remove(&self, id: u64) -> bool {
        self.take(id).is_some()
    }

    fn take(&self, id: u64) -> Option<ReplySender> {
        let mut state = self.lock();
        let sender = state.calls.remove(&id);
        self.waiting.store(state.calls.len(), Ordering::Relaxed);
        if state.calls.is_empty() && self.draining.load(Ordering::Acquire) {
            self.empty.notify_waiters();
        }
        sender
    }

    /// Waits until no call is waiting any more (each ends by its reply, its caller giving up,
    /// or the connection closing).
    pub(crate) async fn drained(&self) {
        self.draining.store(true, Ordering::Release);
        loop {
            let empty = self.empty.notified();
            tokio::pin!(empty);
            // Registered before the check, so a wake-up between the two is not lost.
            empty.as_mut().enable();
            if self.lock().calls.is_empty() {
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
        let (calls, error) = {
            let mut state = self.lock();
            let closed = state.closed.get_or_insert(why);
            let error = closed.error();
            self.closed.store(true, Ordering::Release);
            self.waiting.store(0, Ordering::Relaxed);
            (std::mem::take(&mut state.calls), error)
        };
        self.empty.notify_waiters();
        let mut error = Some(error);
        for (_, tx) in calls {
            let error = error.take().unwrap_or_else(|| self.closed_error());
            let _ = tx.send(Err(error));
        }
    }

    /// The error of a call on this connection after it closed.
    pub(crate) fn closed_error(&self) -> Error {
        match &self.lock().closed {
            Some(closed) => closed.error(),
            None => Error::closed("the connection's tasks ended"),
        }
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
mod tests {
    use super::*;
    use crate::transport::frame::FrameKind;

    #[test]
    fn close_all_fails_waiting_calls_and_refuses_new_ones() {
        let pending = PendingCalls::default();
        let mut rx = pending.register(1).unwrap();
        pending.close_all(Closed::new("peer reset", None));
        assert!(matches!(
            rx.try_recv(),
            Ok(Err(Error::ConnectionClosed { reason, code: None })) if reason == "peer reset"
        ));
        assert!(pending.register(2).is_err());
        assert_eq!(pending.len(), 0);
    }

    #[test]
    fn the_first_closing_is_the_one_callers_see() {
        let pending = PendingCalls::default();
        let mut rx = pending.register(1).unwrap();
        pending.close_all(Closed::new("shutting down", Some(ErrorCode::ShuttingDown)));
        pending.close_all(Closed::new("closed by its owner", None));
        assert!(matches!(
            rx.try_recv(),
            Ok(Err(Error::ConnectionClosed {
                code: Some(ErrorCode::ShuttingDown),
                ..
            }))
        ));
        assert!(matches!(
            pending.register(2),
            Err(Error::ConnectionClosed {
                code: Some(ErrorCode::ShuttingDown),
                ..
            })
        ));
    }

    #[test]
    fn a_reply_completes_only_its_own_call() {
        let pending = PendingCalls::default();
        let mut one = pending.register(1).unwrap();
        let mut two = pending.register(2).unwrap();
        assert!(pending.complete(2, Frame::control(FrameKind::Response, 2)));
        assert!(!pending.complete(2, Frame::control(FrameKind::Response, 2)));
        assert!(one.try_recv().is_err());
        assert!(matches!(two.try_recv(), Ok(Ok(f)) if f.request_id == 2));
    }
}
