//! The table of waiting calls: each call completed once, by its reply, its caller or the
//! connection's end.

use super::*;
use crate::error::ErrorCode;
use crate::transport::frame::FrameKind;

/// Call `id`'s outcome, if it has one yet (taken off the table).
fn outcome(pending: &PendingCalls, id: u64) -> Option<Result<Frame, Error>> {
    match pending.poll_reply(id, &mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => Some(outcome),
        Poll::Pending => None,
    }
}

#[test]
fn close_all_fails_waiting_calls_and_refuses_new_ones() {
    let pending = PendingCalls::default();
    pending.register(1, None, None).unwrap();
    pending.close_all(Closed::new("peer reset", None));
    assert!(matches!(
        outcome(&pending, 1),
        Some(Err(Error::ConnectionClosed { reason, code: None })) if reason == "peer reset"
    ));
    assert!(pending.register(2, None, None).is_err());
    assert_eq!(pending.len(), 0);
}

#[test]
fn the_first_closing_is_the_one_callers_see() {
    let pending = PendingCalls::default();
    pending.register(1, None, None).unwrap();
    pending.close_all(Closed::new("shutting down", Some(ErrorCode::ShuttingDown)));
    pending.close_all(Closed::new("closed by its owner", None));
    assert!(matches!(
        outcome(&pending, 1),
        Some(Err(Error::ConnectionClosed {
            code: Some(ErrorCode::ShuttingDown),
            ..
        }))
    ));
    // A call registered after the close was never sent, whatever the close said.
    assert!(matches!(
        pending.register(2, None, None),
        Err(Error::Unavailable { reason, retry_after: None }) if reason.contains("shutting down")
    ));
}

#[tokio::test(start_paused = true)]
async fn a_passed_deadline_fails_its_call_with_a_timeout_once() {
    let pending = PendingCalls::default();
    let after = std::time::Duration::from_millis(50);
    let now = Instant::now();
    pending
        .register(1, Some((now + after, after)), None)
        .unwrap();
    pending
        .register(2, Some((now + after, after)), None)
        .unwrap();
    assert!(pending.complete(2, Frame::control(FrameKind::Response, 2)));
    assert!(pending.expire(now).is_empty());
    assert_eq!(pending.expire(now + after), [1]);
    assert!(matches!(outcome(&pending, 1), Some(Err(Error::Timeout { after: a })) if a == after));
    assert!(matches!(outcome(&pending, 2), Some(Ok(_))));
    // Ended by its deadline, the call takes no reply and no second timeout.
    assert!(!pending.complete(1, Frame::control(FrameKind::Response, 1)));
    assert!(pending.expire(now + after * 2).is_empty());
    assert_eq!(pending.len(), 0);
}

#[test]
fn a_reply_completes_only_its_own_call() {
    let pending = PendingCalls::default();
    pending.register(1, None, None).unwrap();
    pending.register(2, None, None).unwrap();
    assert!(pending.complete(2, Frame::control(FrameKind::Response, 2)));
    assert!(!pending.complete(2, Frame::control(FrameKind::Response, 2)));
    assert!(outcome(&pending, 1).is_none());
    assert!(matches!(outcome(&pending, 2), Some(Ok(f)) if f.request_id == 2));
    assert_eq!(pending.len(), 1);
}

#[test]
fn a_caller_that_gives_up_after_its_reply_came_sends_no_cancel() {
    let pending = PendingCalls::default();
    pending.register(1, None, None).unwrap();
    pending.register(2, None, None).unwrap();
    assert!(pending.complete(1, Frame::control(FrameKind::Response, 1)));
    // Call 1's reply waits in its slot: dropping the call only frees it.
    assert!(!pending.remove(1));
    assert!(pending.remove(2));
    assert_eq!(pending.len(), 0);
    assert!(pending.lock().calls.is_empty());
}

#[test]
fn a_reply_wakes_the_caller_that_polled() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let woken = Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&woken));
    let pending = PendingCalls::default();
    pending.register(1, None, None).unwrap();
    assert!(pending
        .poll_reply(1, &mut Context::from_waker(&waker))
        .is_pending());
    pending.complete(1, Frame::control(FrameKind::Response, 1));
    assert_eq!(woken.0.load(Ordering::Relaxed), 1);
    assert!(outcome(&pending, 1).is_some());
}
