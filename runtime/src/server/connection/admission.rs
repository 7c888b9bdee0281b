//! Admission: a Request, Notify or Open frame becomes a running call, or is refused.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures::future::{AbortHandle, Either};
use futures::FutureExt;
use tokio::time::Instant;
use tracing::Instrument;

use super::calls::CallSlot;
use super::gauge::InFlightGauge;
use super::rejected::CallRejected;
use super::reply::{queue_reply, HandlerOutcome, ReplyTo};
use super::state::ConnectionState;
use super::stream_task::{spawn_stream, OpenedStream};
use super::supervise::{supervise, CallRecord, Supervised};
use crate::call_span::{CallSpan, Side};
use crate::codec::encoding::Encoding;
use crate::context::CallContext;
use crate::error::ErrorCode;
use crate::metadata::Metadata;
use crate::server::metrics::{self, Outcome as Ended};
use crate::server::request::Request;
use crate::server::shared::Shared;
use crate::server::stream::produce::StreamOut;
use crate::server::stream::upload_queue::{Upload, UploadQueue};
use crate::stream::credit_window::WindowSize;
use crate::stream::{DEFAULT_STREAM_WINDOW, DEFAULT_STREAM_WINDOW_BYTES};
use crate::trace::{TraceContext, TRACEPARENT};
use crate::transport::frame::{Frame, FrameKind, FLAG_METADATA, FRAME_OVERHEAD};
use crate::transport::writer::Delivery;
use crate::wire::STREAM_METADATA_SINCE_VERSION;

/// The credit window of an upload: the client's default for a server stream, sized per
/// upload. It never grows past its budget, as a client's window does over a long link: a
/// server holds uploads from many clients, so what one upload may make it buffer stays 1 MiB
/// whatever pace a client keeps.
const UPLOAD_WINDOW: WindowSize = WindowSize {
    items: DEFAULT_STREAM_WINDOW,
    bytes: DEFAULT_STREAM_WINDOW_BYTES,
    connection: DEFAULT_STREAM_WINDOW_BYTES,
};

/// Starts one call: runs it inline if it finishes without waiting, else as its own task.
///
/// Synchronous, so that the usual call (its handler done at the first poll, its reply queued
/// at once) costs the read loop no future of its own. `Ok(Some(frame))`: the reply is ready
/// but the sink is full; the caller sends it once there is room.
///
/// `clock`: when the previous call of the same burst finished inline, the time it read then.
/// It is taken as this frame's arrival time (nothing but the read loop ran in between), and
/// left holding this call's finish when it too finishes inline: one clock read per call.
pub(super) fn start_call(
    frame: Frame,
    slot: CallSlot,
    context: &ConnectionState,
    shared: &Shared,
    clock: &mut Option<Instant>,
) -> Result<Option<Bytes>, CallRejected> {
    let Frame {
        kind,
        request_id,
        method,
        deadline_ms,
        flags,
        payload,
    } = frame;
    // The deadline clock starts when the frame is read (wire chapter, "Deadlines"); so does
    // the call's duration.
    let received = clock.take().unwrap_or_else(Instant::now);
    let deadline = (deadline_ms != 0).then(|| received + Duration::from_millis(deadline_ms.into()));
    shared
        .metrics
        .received_bytes
        .increment((payload.len() + FRAME_OVERHEAD) as u64);
    // Checked before anything else: a duplicate id is a violation whatever the method.
    if context.calls.contains(request_id) {
        return Err(CallRejected::Violation(format!(
            "request id {request_id} is already in flight"
        )));
    }
    // A malformed block is a violation whatever the method, like a duplicate id.
    let (metadata, payload) = if flags & FLAG_METADATA != 0 {
        Metadata::decode(payload)
            .map_err(|err| CallRejected::Violation(format!("request {request_id}: {err}")))?
    } else {
        (Metadata::new(), payload)
    };
    let one_way = kind == FrameKind::Notify;
    let opens_stream = kind == FrameKind::Open;
    let Some(route) = shared.router.get(method) else {
        tracing::debug!(%method, "call to an unknown method");
        metrics::unknown_method();
        if !one_way {
            let error = Frame::error(
                request_id,
                method,
                ErrorCode::UnknownMethod,
                &format!("no service on this server has method id {method}"),
            );
            return queue_reply(&context.sink, error.to_bytes());
        }
        return Ok(None);
    };
    // An Open for a unary method or a Request for a streaming one: the caller's definition
    // of the service differs from the server's.
    if opens_stream != route.method.shape.is_stream() {
        let shape = route.method.shape.describe();
        let message = format!("{} is {shape}", route.method.name);
        tracing::debug!(%method, %message, "frame of the wrong shape");
        if !one_way {
            let error = Frame::error(request_id, method, ErrorCode::BadRequest, &message);
            return queue_reply(&context.sink, error.to_bytes());
        }
        return Ok(None);
    }
    let trace = metadata
        .get(TRACEPARENT)
        .and_then(TraceContext::parse)
        .map(|parent| parent.child());
    let span = CallSpan {
        side: Side::Server,
        stream: opens_stream,
        service: Some(route.service.descriptor().name),
        method: &route.method.name,
        request_id,
        codec: context.codec,
        peer: context.identity.peer_addr,
        trace,
    }
    .start();
    let call = CallContext {
        request_id,
        method: route.method,
        service: route.service.descriptor(),
        peer: Arc::clone(&context.identity),
        deadline,
        metadata,
        trace,
        replies_carry_metadata: context.version >= 2,
        protocol_version: context.version,
        streams_carry_metadata: context.version >= STREAM_METADATA_SINCE_VERSION,
        sent_back: RefCell::new(None),
        copied: false,
    };
    // An upload's items are queued from here on, and its first credit goes out now.
    let upload = (opens_stream && route.method.shape.takes_upload())
        .then(|| UploadQueue::open(context.sink.clone(), request_id, UPLOAD_WINDOW));
    let open = opens_stream.then(|| match &upload {
        Some(queue) => Upload::new(Arc::clone(queue)),
        None => Upload::none(),
    });
    let request = Request {
        context: call,
        codec: context.codec,
        payload,
        open,
        service: route.service_index,
    };
    // Every piece of the pipeline is always ready (see `Pipeline`): no `poll_ready` needed.
    let work = tower::Service::call(&mut &shared.pipeline, request);
    // A disabled span (no subscriber wants it) costs nothing if the future is not wrapped.
    let work = match &span {
        Some(span) if !span.is_disabled() => Either::Right(work.instrument(span.clone())),
        _ => Either::Left(work),
    };
    let mut work = AssertUnwindSafe(work).catch_unwind();
    if opens_stream {
        // A stream lives on: it always gets a task of its own.
        shared.metrics.in_flight.increment(1.0);
        shared.metrics.streams_opened.increment(1);
        shared.metrics.streams_open.increment(1.0);
        let opened = OpenedStream {
            out: StreamOut {
                request_id,
                method,
                encoding: Encoding::new(context.codec, context.version),
                send_limit: context.send_limit,
                compressor: context.compressor.clone(),
                sink: context.sink.clone(),
                sent_bytes: shared.metrics.sent_bytes.clone(),
                items: shared.metrics.stream_items.clone(),
            },
            record: CallRecord {
                span,
                metrics: Arc::clone(&route.metrics),
                received,
            },
            deadline,
            deadline_ms,
            calls: Arc::clone(&context.calls),
            slot,
            in_flight: shared.metrics.in_flight.clone(),
            open: shared.metrics.streams_open.clone(),
            upload,
        };
        spawn_stream(work, opened);
        return Ok(None);
    }
    let reply = ReplyTo {
        request_id,
        method,
        deadline_ms,
        send_limit: context.send_limit,
        compressor: context.compressor.clone(),
    };
    // Most handlers finish without ever waiting: run them here, saving a task spawn and a
    // timer. Only a handler that is still pending after its first poll gets its own task.
    // That poll needs no waker: the task polls the call again first thing, and a poll looks
    // at the call's state afresh, so no wake-up in between is lost.
    shared.metrics.in_flight.increment(1.0);
    let record = CallRecord {
        span,
        metrics: Arc::clone(&route.metrics),
        received,
    };
    let mut first_poll = Context::from_waker(Waker::noop());
    if let Poll::Ready(outcome) = Pin::new(&mut work).poll(&mut first_poll) {
        drop(slot);
        let now = Instant::now();
        *clock = Some(now);
        let outcome = within(deadline, now, outcome);
        record.ended(Ended::of(&outcome), now);
        shared.metrics.in_flight.decrement(1.0);
        if !one_way {
            let frame = reply.frame(outcome);
            shared.metrics.sent_bytes.increment(frame.len() as u64);
            return queue_reply(&context.sink, frame);
        }
        return Ok(None);
    }
    let (abort, registration) = AbortHandle::new_pair();
    context.calls.insert(request_id, abort);
    let sink = context.sink.clone();
    let calls = Arc::clone(&context.calls);
    let in_flight = shared.metrics.in_flight.clone();
    let sent_bytes = shared.metrics.sent_bytes.clone();
    tokio::spawn(async move {
        let _slot = slot;
        // Counts the call out however the task ends (an abort at shutdown included).
        let _in_flight = InFlightGauge(in_flight);
        let supervised = supervise(work, registration, deadline, &calls, request_id).await;
        let now = Instant::now();
        let outcome = match supervised {
            // Cancelled by the caller or by the end of the connection: no reply is wanted.
            Supervised::Aborted => {
                record.ended(Ended::Cancelled, now);
                return;
            }
            // `timeout_at` polls the call before its timer, so a call that became ready after
            // the deadline (say, once a long decode finished) still needs the check.
            Supervised::Finished(outcome) => within(deadline, now, outcome),
            Supervised::Late => None,
        };
        record.ended(Ended::of(&outcome), now);
        if !one_way {
            let frame = reply.frame(outcome);
            sent_bytes.increment(frame.len() as u64);
            let _ = sink.send(frame, Delivery::Now).await;
        }
    });
    Ok(None)
}

impl Ended {
    /// How a handler's outcome ends its call (`None`: the deadline passed first).
    pub(super) fn of(outcome: &Option<HandlerOutcome>) -> Self {
        match outcome {
            None => Self::Failed(ErrorCode::DeadlineExceeded),
            Some(Err(_)) => Self::Failed(ErrorCode::HandlerPanicked),
            Some(Ok(Err(call_error))) => Self::Failed(call_error.code()),
            Some(Ok(Ok(_))) => Self::Ok,
        }
    }
}

/// A finished call's outcome, or `None` when it finished (`now`) after its deadline: a caller
/// that has given up must get a timeout, not a late success.
pub(super) fn within(
    deadline: Option<Instant>,
    now: Instant,
    outcome: HandlerOutcome,
) -> Option<HandlerOutcome> {
    match deadline {
        Some(at) if now > at => None,
        _ => Some(outcome),
    }
}
