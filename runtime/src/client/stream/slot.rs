//! One server stream's place in its connection's table of pending calls: the items read and
//! not yet taken by the consumer, how the stream ended, and the receive window that decides
//! when to grant the server more credit (wire chapter, "Credit").
//!
//! The items waiting here are bounded by the credit the client granted: the server may not
//! send more, and an item beyond it is a protocol violation that closes the connection.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::stream::credit::{CreditError, SendCredit};
use crate::stream::credit_window::{Neighbours, ReceiveWindow, WindowSize};
use crate::transport::frame::Frame;

/// A server stream, as its connection's pending table holds it.
pub(crate) struct StreamSlot {
    /// Items read, in order, not yet taken.
    items: VecDeque<Frame>,
    /// How the server ended the stream (End or Error frame), or why the client did (its
    /// deadline, the connection's end): taken after the last item.
    pub(crate) end: Option<Result<Frame, Error>>,
    /// The consumer's task, once it has polled.
    pub(crate) waker: Option<Waker>,
    /// The credit granted to the server.
    window: ReceiveWindow,
    /// The client's upload, for a method that takes one.
    pub(crate) upload: Option<UploadSender>,
    /// Whether the server has sent a Head or an item: a Head after either is a violation.
    answered: bool,
}

/// What the consumer of a stream gets when it visits the slot.
pub(crate) enum StreamNext {
    /// Items were moved to the consumer: the credit to grant the server now, if any, and
    /// how many items the consumer may take before it is to report them (credit is due).
    Items {
        grant: Option<u32>,
        report_after: u32,
    },
    /// The stream's end: its End or Error frame, or the client's error.
    End(Result<Frame, Error>),
}

/// The credit due for items the consumer took, and when to report again.
pub(crate) struct Taken {
    pub(crate) grant: Option<u32>,
    pub(crate) report_after: u32,
}

impl StreamSlot {
    /// A stream that has granted the server `window.items` items.
    pub(crate) fn new(window: WindowSize) -> Self {
        Self {
            items: VecDeque::new(),
            end: None,
            waker: None,
            window: ReceiveWindow::granted(window),
            upload: None,
            answered: false,
        }
    }

    /// Ends the stream on this side with `outcome` (the server's last frame, or the client's
    /// error), unless it has ended already; the consumer's waker. The upload, if any, stops.
    pub(crate) fn end_with(&mut self, outcome: Result<Frame, Error>) -> Option<Waker> {
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
    pub(crate) fn grant(&self, granted: u32) -> Result<(), CreditError> {
        match &self.upload {
            Some(upload) => upload.credit.grant(granted),
            None => Ok(()),
        }
    }

    /// Takes an item the server sent; an error (a protocol violation) when it had no credit
    /// for it. Returns the consumer's waker.
    pub(crate) fn push(&mut self, item: Frame) -> Result<Option<Waker>, String> {
        if !self.window.receive(item.payload.len()) {
            return Err(format!(
                "protocol violation: the server sent an item on stream {} without credit",
                item.request_id
            ));
        }
        self.answered = true;
        self.items.push_back(item);
        Ok(self.waker.take())
    }

    /// Takes the stream's Head (its reply metadata), queued before the items, which need no
    /// credit for it; an error (a protocol violation) when the stream had its Head or an
    /// item already. Returns the consumer's waker.
    pub(crate) fn push_head(&mut self, head: Frame) -> Result<Option<Waker>, String> {
        if self.answered {
            return Err(format!(
                "protocol violation: the server sent a Head on stream {} after its Head or an item",
                head.request_id
            ));
        }
        self.answered = true;
        self.items.push_back(head);
        Ok(self.waker.take())
    }

    /// Counts `taken` items the consumer took (credit is granted as they are taken, not as
    /// they are moved to it), sized with `neighbours` on the connection; no credit once the
    /// server has ended the stream.
    pub(crate) fn taken(&mut self, taken: u32, neighbours: Neighbours) -> Taken {
        let mut granted = 0u32;
        for _ in 0..taken {
            if let Some(grant) = self.window.take(neighbours) {
                granted = granted.saturating_add(grant);
            }
        }
        Taken {
            grant: (granted > 0 && self.end.is_none()).then_some(granted),
            report_after: self.window.until_grant(),
        }
    }

    /// Moves every item waiting into `out`, after counting `taken` items the consumer took
    /// since its last visit; the end once every item has been moved; `None` while there is
    /// neither. One visit (one lock of the table) for all the items read meanwhile.
    pub(crate) fn next(
        &mut self,
        out: &mut VecDeque<Frame>,
        taken: u32,
        neighbours: Neighbours,
    ) -> Option<StreamNext> {
        let Taken {
            grant,
            report_after,
        } = self.taken(taken, neighbours);
        if !self.items.is_empty() {
            out.append(&mut self.items);
            return Some(StreamNext::Items {
                grant,
                report_after,
            });
        }
        if self.end.is_none() {
            // The consumer has taken everything and will wait: the window learns of it.
            self.window.starving();
        }
        match self.end.take() {
            Some(end) => Some(StreamNext::End(end)),
            None if grant.is_some() => Some(StreamNext::Items {
                grant,
                report_after,
            }),
            None => None,
        }
    }
}

/// What a stream's slot in the pending table keeps of its upload: the credit the server
/// grants (its `Credit` frames add to it), and the signal that stops the sending task.
pub(crate) struct UploadSender {
    pub(crate) credit: Arc<SendCredit>,
    pub(crate) stop: CancellationToken,
}

impl UploadSender {
    pub(crate) fn new() -> Self {
        Self {
            credit: Arc::new(SendCredit::default()),
            stop: CancellationToken::new(),
        }
    }
}

impl Drop for UploadSender {
    fn drop(&mut self) {
        // The stream's slot is gone: nobody waits for the upload any more.
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::frame::FrameKind;

    fn item() -> Frame {
        Frame::control(FrameKind::Item, 1)
    }

    fn next(slot: &mut StreamSlot, taken: u32) -> (usize, Option<StreamNext>) {
        let mut out = VecDeque::new();
        let next = slot.next(&mut out, taken, Neighbours::ALONE);
        (out.len(), next)
    }

    #[test]
    fn credit_is_granted_as_items_are_taken_half_a_window_at_a_time() {
        let mut slot = StreamSlot::new(WindowSize {
            items: 4,
            bytes: 0,
            connection: u32::MAX,
        });
        for _ in 0..4 {
            slot.push(item()).unwrap();
        }
        assert!(slot.push(item()).is_err(), "a fifth item had no credit");
        // All four move at once; none is taken yet, so no credit.
        let (moved, visit) = next(&mut slot, 0);
        assert_eq!(moved, 4);
        assert!(matches!(
            visit,
            Some(StreamNext::Items {
                grant: None,
                report_after: 2
            })
        ));
        assert!(
            slot.push(item()).is_err(),
            "moved items still hold their credit"
        );
        // Two taken: half the window goes back.
        let taken = slot.taken(2, Neighbours::ALONE);
        assert_eq!(taken.grant, Some(2));
        slot.push(item()).unwrap();
        slot.push(item()).unwrap();
        assert!(slot.push(item()).is_err());
    }

    #[test]
    fn a_head_comes_once_before_any_item_and_needs_no_credit() {
        let window = WindowSize {
            items: 1,
            bytes: 0,
            connection: u32::MAX,
        };
        let head = || Frame::control(FrameKind::Head, 1);
        let mut slot = StreamSlot::new(window);
        slot.push_head(head()).unwrap();
        assert!(slot.push_head(head()).is_err(), "a second Head");
        slot.push(item()).unwrap();
        assert!(
            slot.push(item()).is_err(),
            "the Head took no credit; the item did"
        );

        let mut slot = StreamSlot::new(window);
        slot.push(item()).unwrap();
        assert!(slot.push_head(head()).is_err(), "a Head after an item");
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
        let (moved, visit) = next(&mut slot, 0);
        assert_eq!(moved, 1);
        assert!(matches!(visit, Some(StreamNext::Items { grant: None, .. })));
        let (moved, visit) = next(&mut slot, 1);
        assert_eq!(moved, 0);
        assert!(matches!(visit, Some(StreamNext::End(Ok(_)))));
        assert!(next(&mut slot, 0).1.is_none());
    }
}
