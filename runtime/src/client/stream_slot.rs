//! One server stream's place in its connection's table of pending calls: the items read and
//! not yet taken by the consumer, how the stream ended, and the receive window that decides
//! when to grant the server more credit (wire chapter, "Credit").
//!
//! The items waiting here are bounded by the credit the client granted: the server may not
//! send more, and an item beyond it is a protocol violation that closes the connection.

use std::collections::VecDeque;
use std::task::Waker;

use super::upload_sender::UploadSender;
use crate::error::Error;
use crate::stream::credit::CreditError;
use crate::stream::window::{Neighbours, ReceiveWindow, WindowSize};
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
    /// The credit granted to the server.
    window: ReceiveWindow,
    /// The client's upload, for a method that takes one.
    pub(super) upload: Option<UploadSender>,
}

/// What the consumer of a stream gets next.
pub(crate) enum StreamNext {
    /// An item, and the credit to grant the server now, if any.
    Item(Frame, Option<u32>),
    /// The stream's end: its End or Error frame, or the client's error.
    End(Result<Frame, Error>),
}

impl StreamSlot {
    /// A stream that has granted the server `window.items` items.
    pub(super) fn new(window: WindowSize) -> Self {
        Self {
            items: VecDeque::new(),
            end: None,
            waker: None,
            window: ReceiveWindow::granted(window),
            upload: None,
        }
    }

    /// Ends the stream on this side with `outcome` (the server's last frame, or the client's
    /// error), unless it has ended already; the consumer's waker. The upload, if any, stops.
    pub(super) fn end_with(&mut self, outcome: Result<Frame, Error>) -> Option<Waker> {
        if self.end.is_none() {
            self.end = Some(outcome);
        }
        if let Some(upload) = &self.upload {
            upload.stop.cancel();
        }
        self.waker.take()
    }

    /// Adds the server's grant to the upload's credit. A grant to a stream without upload is
    /// ignored: it may be meant for an upload this side never started.
    pub(super) fn grant(&self, granted: u32) -> Result<(), CreditError> {
        match &self.upload {
            Some(upload) => upload.credit.grant(granted),
            None => Ok(()),
        }
    }

    /// Takes an item the server sent; an error (a protocol violation) when it had no credit
    /// for it. Returns the consumer's waker.
    pub(super) fn push(&mut self, item: Frame) -> Result<Option<Waker>, String> {
        if !self.window.receive(item.payload.len()) {
            return Err(format!(
                "protocol violation: the server sent an item on stream {} without credit",
                item.request_id
            ));
        }
        self.items.push_back(item);
        Ok(self.waker.take())
    }

    /// The next item, or the end once every item has been taken; `None` while there is
    /// neither. Taking an item may grant credit (none once the server has ended the stream),
    /// sized with `neighbours` on the connection.
    pub(super) fn next(&mut self, neighbours: Neighbours) -> Option<StreamNext> {
        if let Some(item) = self.items.pop_front() {
            let grant = self.window.take(neighbours).filter(|_| self.end.is_none());
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
        let mut slot = StreamSlot::new(WindowSize {
            items: 4,
            bytes: 0,
            connection: u32::MAX,
        });
        for _ in 0..4 {
            slot.push(item()).unwrap();
        }
        assert!(slot.push(item()).is_err(), "a fifth item had no credit");
        assert!(matches!(
            slot.next(Neighbours::ALONE),
            Some(StreamNext::Item(_, None))
        ));
        assert!(matches!(
            slot.next(Neighbours::ALONE),
            Some(StreamNext::Item(_, Some(2)))
        ));
        slot.push(item()).unwrap();
        slot.push(item()).unwrap();
        assert!(slot.push(item()).is_err());
        assert!(slot.next(Neighbours::ALONE).is_some());
    }

    #[test]
    fn the_end_comes_after_the_last_item() {
        let mut slot = StreamSlot::new(WindowSize {
            items: 2,
            bytes: 0,
            connection: u32::MAX,
        });
        slot.push(item()).unwrap();
        slot.end = Some(Ok(Frame::control(FrameKind::End, 1)));
        assert!(matches!(
            slot.next(Neighbours::ALONE),
            Some(StreamNext::Item(_, None))
        ));
        assert!(matches!(
            slot.next(Neighbours::ALONE),
            Some(StreamNext::End(Ok(_)))
        ));
        assert!(slot.next(Neighbours::ALONE).is_none());
    }
}
