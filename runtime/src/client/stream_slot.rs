//! One server stream's place in its connection's table of pending calls: the items read and
//! not yet taken by the consumer, how the stream ended, and the receive window that decides
//! when to grant the server more credit (wire chapter, "Credit").
//!
//! The items waiting here are bounded by the credit the client granted: the server may not
//! send more, and an item beyond it is a protocol violation that closes the connection.

use std::collections::VecDeque;
use std::task::Waker;

use crate::error::Error;
use crate::transport::frame::Frame;

/// A server stream, as its connection's pending table holds it.
pub(super) struct StreamSlot {
    /// Items read, in order, not yet taken.
    items: VecDeque<Frame>,
    /// How the server ended the stream (End or Error frame), or why the client did (its
    /// deadline, the connection's end): taken after the last item.
    pub(super) end: Option<Result<Frame, Error>>,
    /// The consumer's task, once it has polled.
    pub(super) waker: Option<Waker>,
    /// Credit granted and not yet used by an item.
    outstanding: u32,
    /// Items taken since credit was last granted.
    taken: u32,
    /// How many items the server may send ahead of the consumer.
    window: u32,
}

/// What the consumer of a stream gets next.
pub(crate) enum StreamNext {
    /// An item, and the credit to grant the server now, if any.
    Item(Frame, Option<u32>),
    /// The stream's end: its End or Error frame, or the client's error.
    End(Result<Frame, Error>),
}

impl StreamSlot {
    /// A stream that has granted the server `window` items.
    pub(super) fn new(window: u32) -> Self {
        Self {
            items: VecDeque::new(),
            end: None,
            waker: None,
            outstanding: window,
            taken: 0,
            window,
        }
    }

    /// Takes an item the server sent; an error (a protocol violation) when it had no credit
    /// for it. Returns the consumer's waker.
    pub(super) fn push(&mut self, item: Frame) -> Result<Option<Waker>, String> {
        if self.outstanding == 0 {
            return Err(format!(
                "protocol violation: the server sent an item on stream {} without credit",
                item.request_id
            ));
        }
        self.outstanding -= 1;
        self.items.push_back(item);
        Ok(self.waker.take())
    }

    /// The next item, or the end once every item has been taken; `None` while there is
    /// neither. Taking an item may grant credit: half a window at a time, so that a steady
    /// consumer tops the server up before it runs out, with one Credit frame per half window.
    pub(super) fn next(&mut self) -> Option<StreamNext> {
        if let Some(item) = self.items.pop_front() {
            self.taken += 1;
            let grant = (self.end.is_none() && self.taken >= (self.window / 2).max(1)).then(|| {
                let grant = std::mem::take(&mut self.taken);
                self.outstanding += grant;
                grant
            });
            return Some(StreamNext::Item(item, grant));
        }
        self.end.take().map(StreamNext::End)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::frame::FrameKind;

    fn item() -> Frame {
        Frame::control(FrameKind::Item, 1)
    }

    #[test]
    fn credit_is_granted_back_half_a_window_at_a_time() {
        let mut slot = StreamSlot::new(4);
        for _ in 0..4 {
            slot.push(item()).unwrap();
        }
        assert!(slot.push(item()).is_err(), "a fifth item had no credit");
        assert!(matches!(slot.next(), Some(StreamNext::Item(_, None))));
        assert!(matches!(slot.next(), Some(StreamNext::Item(_, Some(2)))));
        slot.push(item()).unwrap();
        slot.push(item()).unwrap();
        assert!(slot.push(item()).is_err());
        assert!(slot.next().is_some());
    }

    #[test]
    fn the_end_comes_after_the_last_item() {
        let mut slot = StreamSlot::new(2);
        slot.push(item()).unwrap();
        slot.end = Some(Ok(Frame::control(FrameKind::End, 1)));
        assert!(matches!(slot.next(), Some(StreamNext::Item(_, None))));
        assert!(matches!(slot.next(), Some(StreamNext::End(Ok(_)))));
        assert!(slot.next().is_none());
    }
}
