//! The calls running on one connection: by request id for cancellation, and counted against
//! the connection's in-flight limit.

use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::AbortHandle;

use super::slots::Slots;
use crate::id_hash::IdMap;
use crate::server::stream::upload_queue::UploadQueue;
use crate::stream::credit::{CreditError, SendCredit};

/// One running call: how to stop it, and for a stream, the credit its client grants and the
/// items it uploads.
pub(super) struct Running {
    abort: AbortHandle,
    credit: Option<Arc<SendCredit>>,
    upload: Option<Arc<UploadQueue>>,
}

/// Where an upload frame from the client goes.
pub(super) enum UploadTarget {
    /// An open stream that takes an upload.
    Queue(Arc<UploadQueue>),
    /// An open call that takes none: the frame is a protocol violation.
    NoUpload,
    /// No open call: it ended (an early answer) or was cancelled; the frame is discarded.
    Gone,
}

/// Calls running on one connection: by request id, so that a `Cancel` frame can stop one,
/// and counted against the connection's in-flight limit.
///
/// One value per connection holds both (rather than a semaphore and a task tracker of their
/// own): a server holds many connections, and each shared allocation costs every one of them.
pub(super) struct Calls {
    calls: Mutex<IdMap<u64, Running>>,
    /// One slot per call that may start; every call holds one ([`CallSlot`]) until it ends,
    /// so all slots free means no call is running.
    slots: Slots,
    /// Likewise for streams, which have a limit of their own: a stream lives on the client's
    /// Credit, Cancel and upload frames, so an `Open` over the limit is refused rather than
    /// made to wait (waiting stops reading the connection, and the streams holding the slots
    /// would then wait for frames nobody reads).
    streams: Slots,
}

/// A running call's or stream's place in its connection's limit, given back when dropped
/// (when it ends, however it ends).
pub(super) struct CallSlot {
    in_flight: Arc<Calls>,
    stream: bool,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        if self.stream {
            self.in_flight.streams.give_back();
        } else {
            self.in_flight.slots.give_back();
        }
    }
}

impl Calls {
    /// Allows `limit` calls and `stream_limit` streams at once (at least one of each).
    pub(super) fn new(limit: usize, stream_limit: usize) -> Self {
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let stream_limit = u32::try_from(stream_limit).unwrap_or(u32::MAX);
        Self {
            calls: Mutex::default(),
            slots: Slots::new(limit),
            streams: Slots::new(stream_limit),
        }
    }

    fn slot_of(self: &Arc<Self>, stream: bool) -> CallSlot {
        CallSlot {
            in_flight: Arc::clone(self),
            stream,
        }
    }

    /// A slot for a new call, if one is free.
    pub(super) fn try_slot(self: &Arc<Self>) -> Option<CallSlot> {
        self.slots.try_take().then(|| self.slot_of(false))
    }

    /// A slot for a new stream, if one is free.
    pub(super) fn try_stream_slot(self: &Arc<Self>) -> Option<CallSlot> {
        self.streams.try_take().then(|| self.slot_of(true))
    }

    /// The most streams open at once.
    pub(super) fn stream_limit(&self) -> u32 {
        self.streams.limit()
    }

    /// Waits for a free slot.
    pub(super) async fn slot(self: &Arc<Self>) -> CallSlot {
        self.slots.take().await;
        self.slot_of(false)
    }

    /// Whether no call or stream is running.
    pub(super) fn none_running(&self) -> bool {
        self.slots.all_free() && self.streams.all_free()
    }

    /// Waits until no call or stream is running.
    pub(super) async fn finished(&self) {
        self.slots.all_returned().await;
        self.streams.all_returned().await;
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, IdMap<u64, Running>> {
        // Every operation is a single map update, so a poisoned map is still consistent.
        self.calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn contains(&self, request_id: u64) -> bool {
        self.lock().contains_key(&request_id)
    }

    pub(super) fn insert(&self, request_id: u64, abort: AbortHandle) {
        self.lock().insert(
            request_id,
            Running {
                abort,
                credit: None,
                upload: None,
            },
        );
    }

    /// Registers a stream call, with the credit its `Credit` frames add to.
    pub(super) fn insert_stream(
        &self,
        request_id: u64,
        abort: AbortHandle,
        credit: Arc<SendCredit>,
        upload: Option<Arc<UploadQueue>>,
    ) {
        let credit = Some(credit);
        self.lock().insert(
            request_id,
            Running {
                abort,
                credit,
                upload,
            },
        );
    }

    /// Where an `Item` or `End` from the client for `request_id` goes.
    pub(super) fn upload(&self, request_id: u64) -> UploadTarget {
        match self.lock().get(&request_id) {
            Some(Running {
                upload: Some(queue),
                ..
            }) => UploadTarget::Queue(Arc::clone(queue)),
            Some(_) => UploadTarget::NoUpload,
            None => UploadTarget::Gone,
        }
    }

    /// Adds a `Credit` frame's grant to stream `request_id`. A grant for an id that is no
    /// open stream is ignored (the stream may have just ended); a malformed or excessive one
    /// is an error, a protocol violation.
    pub(super) fn grant(&self, request_id: u64, payload: &[u8]) -> Result<(), CreditError> {
        let granted = SendCredit::parse(payload)?;
        let credit = self
            .lock()
            .get(&request_id)
            .and_then(|running| running.credit.clone());
        match credit {
            Some(credit) => credit.grant(granted),
            None => Ok(()),
        }
    }

    pub(super) fn remove(&self, request_id: u64) {
        self.lock().remove(&request_id);
    }

    /// Stops one call; a cancel for an id that is not running is ignored (it may have just
    /// finished).
    pub(super) fn abort(&self, request_id: u64) {
        if let Some(running) = self.lock().remove(&request_id) {
            running.abort.abort();
        }
    }

    /// Stops every call still running; returns how many there were.
    pub(super) fn abort_all(&self) -> usize {
        let mut running = self.lock();
        let stopped = running.len();
        for (_, call) in running.drain() {
            call.abort.abort();
        }
        stopped
    }
}
