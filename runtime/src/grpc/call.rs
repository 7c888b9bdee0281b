//! One gRPC call: its request read and checked, run through the server's one pipeline (the
//! same layers, admission, authorisation, metrics and span as a wirecall call), bounded by
//! `grpc-timeout`, stopped by the caller's reset, and answered.

use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use h2::server::SendResponse;
use h2::RecvStream;
use tokio::time::Instant;
use tracing::Instrument;

use super::builtin::Builtin;
use super::messages::{message, Messages};
use super::reply::{self, SendEnd};
use super::shared::GrpcConnection;
use super::status::{parse_timeout, Code, Status};
use super::upload::{GrpcUpload, UploadFailure};
use crate::call_span::{CallSpan, Side};
use crate::codec::Codec;
use crate::context::CallContext;
use crate::error::{CallError, ErrorCode};
use crate::metadata::Metadata;
use crate::server::connection::reply::panic_message;
use crate::server::metrics::{Outcome, ServerMetrics};
use crate::server::request::{Reply, ReplyBody, Request};
use crate::server::stream::upload_queue::Upload;
use crate::trace::{TraceContext, TRACEPARENT};

/// Serves one request of a gRPC connection to its end.
pub(crate) async fn serve(
    connection: Arc<GrpcConnection>,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
) {
    let received = Instant::now();
    let (head, body) = request.into_parts();
    if head.method != http::Method::POST {
        let mut response = http::Response::new(());
        *response.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
        let _ = respond.send_response(response, true);
        return;
    }
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if !matches!(content_type, "application/grpc" | "application/grpc+proto") {
        let status = if content_type.starts_with("application/grpc") {
            Status::new(
                Code::Unimplemented,
                "this server speaks gRPC with Protobuf only",
            )
        } else {
            let mut response = http::Response::new(());
            *response.status_mut() = http::StatusCode::UNSUPPORTED_MEDIA_TYPE;
            let _ = respond.send_response(response, true);
            return;
        };
        return reply::trailers_only(&mut respond, &status);
    }
    let authenticated = match &connection.shared.token_check {
        None => false,
        Some(_) => {
            let ip = connection.identity.peer_addr.map(|addr| addr.ip());
            let token = super::headers::bearer_token(&head.headers).unwrap_or_default();
            if !connection.shared.authenticate(ip, token) {
                crate::server::metrics::handshake_failed("authentication");
                let status = Status::new(
                    Code::Unauthenticated,
                    "this server requires its token: send `authorization: Bearer TOKEN`",
                );
                return reply::trailers_only(&mut respond, &status);
            }
            true
        }
    };
    let path = head.uri.path();
    let messages = Messages::new(body, connection.shared.config.max_frame_len as usize);
    if let Some(builtin) = Builtin::at(path) {
        return builtin.answer(&connection, messages, respond).await;
    }
    let deadline = match head.headers.get("grpc-timeout") {
        None => None,
        Some(value) => match parse_timeout(value.as_bytes()) {
            Some(timeout) => Some(received + timeout.min(Duration::from_secs(100 * 365 * 86_400))),
            None => {
                let status = Status::new(Code::InvalidArgument, "grpc-timeout is malformed");
                return reply::trailers_only(&mut respond, &status);
            }
        },
    };
    let call = Call {
        connection,
        received,
        deadline,
        metadata: super::headers::metadata_of(&head.headers),
        authenticated,
    };
    call.run(path, messages, respond).await;
}

/// A call between its checks and its end.
struct Call {
    connection: Arc<GrpcConnection>,
    received: Instant,
    deadline: Option<Instant>,
    metadata: Metadata,
    authenticated: bool,
}

impl Call {
    async fn run(self, path: &str, mut messages: Messages, mut respond: SendResponse<Bytes>) {
        let shared = Arc::clone(&self.connection.shared);
        let method = match self.connection.door.method(path) {
            Ok(method) => method,
            Err(message) => {
                crate::server::metrics::unknown_method();
                return reply::trailers_only(
                    &mut respond,
                    &Status::new(Code::Unimplemented, message),
                );
            }
        };
        let Some(route) = shared.router.get(method.id) else {
            let status = Status::new(Code::Unimplemented, format!("no method at {path}"));
            return reply::trailers_only(&mut respond, &status);
        };
        let shape = route.method.shape;
        // The arguments: the one request message, or for an upload the first message's
        // field 2 when the method takes arguments besides its upload.
        let first = if shape.takes_upload() && !method.has_args {
            Ok(Bytes::new())
        } else {
            match messages.next_message().await {
                None => Err(reply::no_message()),
                Some(Err(status)) => Err(status),
                Some(Ok(first)) if shape.takes_upload() => {
                    args_of_upload(&first).map_err(|err| Status::new(Code::InvalidArgument, err))
                }
                Some(Ok(first)) => Ok(first),
            }
        };
        let payload = match first {
            Ok(payload) => payload,
            Err(status) => return reply::trailers_only(&mut respond, &status),
        };
        let failure = UploadFailure::default();
        // An upload's body goes to the handler; any other's rest is read to its end once the
        // call is answered (`Messages::finish`).
        let (open, rest) = if shape.takes_upload() {
            let upload = Upload::grpc(GrpcUpload {
                messages,
                failure: failure.clone(),
            });
            (Some(upload), None)
        } else {
            (shape.is_stream().then(Upload::none), Some(messages))
        };
        let stream_id = u64::from(u32::from(respond.stream_id()));
        let peer = if self.authenticated {
            Arc::clone(&self.connection.authenticated)
        } else {
            Arc::clone(&self.connection.identity)
        };
        let trace = self
            .metadata
            .get(TRACEPARENT)
            .and_then(TraceContext::parse)
            .map(|parent| parent.child());
        let span = CallSpan {
            side: Side::Server,
            stream: shape.is_stream(),
            service: Some(route.service.descriptor().name),
            method: &route.method.name,
            request_id: stream_id,
            codec: Codec::Protobuf,
            peer: peer.peer_addr,
            trace,
        }
        .start();
        let request = Request {
            context: CallContext {
                request_id: stream_id,
                method: route.method,
                service: route.service.descriptor(),
                peer,
                deadline: self.deadline,
                metadata: self.metadata,
                trace,
                replies_carry_metadata: true,
                // As HTTP/2 headers and trailers: a stream's metadata set before it opens goes
                // out with its response headers, its trailers beside `grpc-status`.
                streams_carry_metadata: true,
                protocol_version: crate::wire::PROTOCOL_VERSION,
                sent_back: RefCell::new(None),
                copied: false,
            },
            codec: Codec::Protobuf,
            payload,
            open,
            service: route.service_index,
        };
        shared.metrics.in_flight.increment(1.0);
        let _in_flight = Held(shared.metrics.in_flight.clone());
        let work = tower::Service::call(&mut &shared.pipeline, request);
        let work = AssertUnwindSafe(work).catch_unwind();
        let ended = async {
            let outcome = tokio::select! {
                outcome = within(self.deadline, work) => outcome,
                _ = std::future::poll_fn(|cx| respond.poll_reset(cx)) => return Outcome::Cancelled,
            };
            let status = match outcome {
                None => Err(deadline_passed(self.deadline, self.received)),
                Some(Err(panic)) => Err(Status::of(
                    ErrorCode::HandlerPanicked,
                    panic_message(panic.as_ref()),
                )),
                Some(Ok(Err(call_error))) => Err(status_of(&call_error)),
                Some(Ok(Ok(reply))) => Ok(reply),
            };
            let reply = match status {
                Ok(reply) => reply,
                Err(status) => {
                    let status = failure.take().unwrap_or(status);
                    reply::trailers_only(&mut respond, &status);
                    return outcome_of(&status);
                }
            };
            let metrics = &shared.metrics;
            answer(
                reply,
                &mut respond,
                self.deadline,
                self.received,
                &failure,
                metrics,
            )
            .await
        };
        let outcome = match &span {
            Some(span) if !span.is_disabled() => ended.instrument(span.clone()).await,
            _ => ended.await,
        };
        if let Some(span) = &span {
            span.record("outcome", outcome.label());
        }
        route.metrics.record(outcome, self.received.elapsed());
        if let Some(rest) = rest {
            rest.finish().await;
        }
    }
}

/// Sends a handler's reply, or its stream's messages, and the status that ends the call.
async fn answer(
    reply: Reply,
    respond: &mut SendResponse<Bytes>,
    deadline: Option<Instant>,
    received: Instant,
    failure: &UploadFailure,
    metrics: &ServerMetrics,
) -> Outcome {
    let Reply { body, admission } = reply;
    // A stream keeps its place under `max_in_flight` until its last message is out.
    let _admission = admission;
    match body {
        ReplyBody::Message(frame) => {
            let (metadata, payload) = match frame.into_parts() {
                Ok(parts) => parts,
                Err(err) => {
                    let status = Status::of(ErrorCode::EncodeFailed, err);
                    reply::trailers_only(respond, &status);
                    return outcome_of(&status);
                }
            };
            let Some(mut stream) = reply::open(respond, metadata.as_ref()) else {
                return Outcome::Cancelled;
            };
            match reply::send_message(&mut stream, message(&payload)).await {
                SendEnd::Gone => Outcome::Cancelled,
                _ => {
                    reply::close(&mut stream, &Status::ok());
                    Outcome::Ok
                }
            }
        }
        ReplyBody::Stream(mut items) => {
            let head = items.call().and_then(CallContext::take_stream_head);
            let Some(mut stream) = reply::open(respond, head.as_ref()) else {
                return Outcome::Cancelled;
            };
            metrics.streams_opened.increment(1);
            metrics.streams_open.increment(1.0);
            let _open = Held(metrics.streams_open.clone());
            let sending = reply::send_items(
                &mut stream,
                &mut items,
                Codec::Protobuf,
                &metrics.stream_items,
            );
            let status = match within(deadline, sending).await {
                None => deadline_passed(deadline, received),
                Some(SendEnd::Gone) => return Outcome::Cancelled,
                Some(SendEnd::Failed(status)) => status,
                Some(SendEnd::Done) => Status::ok(),
            };
            let status = failure.take().unwrap_or(status);
            let trailers = items.call().and_then(CallContext::take_trailers);
            reply::close_with(&mut stream, &status, trailers.as_ref());
            outcome_of(&status)
        }
    }
}

/// Runs `work` until it ends or `deadline` passes (`None`).
async fn within<F: std::future::Future>(deadline: Option<Instant>, work: F) -> Option<F::Output> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at, work).await.ok(),
        None => Some(work.await),
    }
}

fn deadline_passed(deadline: Option<Instant>, received: Instant) -> Status {
    let budget = deadline.map_or(Duration::ZERO, |at| at - received);
    Status::of(
        ErrorCode::DeadlineExceeded,
        format!("the call did not finish within its grpc-timeout of {budget:?}"),
    )
}

/// The status of a call error, by the one table (`Code::of`).
fn status_of(error: &CallError) -> Status {
    Status::of(error.code(), error.to_string())
}

/// The call's outcome for its metrics and span.
fn outcome_of(status: &Status) -> Outcome {
    match status.code {
        Code::Ok => Outcome::Ok,
        Code::Cancelled => Outcome::Cancelled,
        Code::InvalidArgument => Outcome::Failed(ErrorCode::BadRequest),
        Code::DeadlineExceeded => Outcome::Failed(ErrorCode::DeadlineExceeded),
        Code::PermissionDenied => Outcome::Failed(ErrorCode::PermissionDenied),
        Code::ResourceExhausted => Outcome::Failed(ErrorCode::FrameTooLarge),
        Code::Unavailable => Outcome::Failed(ErrorCode::Overloaded),
        Code::Internal => Outcome::Failed(ErrorCode::HandlerPanicked),
        _ => Outcome::Failed(ErrorCode::LayerFailed),
    }
}

/// The arguments an upload's first message carries in its field 2 (an embedded
/// `{Service}_{method}_Args`); absent, the arguments' defaults. Repeated occurrences of an
/// embedded message merge, which for its encoding is concatenation.
fn args_of_upload(first: &[u8]) -> Result<Bytes, String> {
    use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
    let mut rest = first;
    let mut args = Vec::new();
    while !rest.is_empty() {
        let (tag, wire_type) = decode_key(&mut rest).map_err(|err| err.to_string())?;
        if tag == 2 && wire_type == WireType::LengthDelimited {
            let len = decode_varint(&mut rest).map_err(|err| err.to_string())?;
            let len = usize::try_from(len)
                .ok()
                .filter(|len| *len <= rest.len())
                .ok_or("the arguments' length is past the message's end")?;
            args.extend_from_slice(&rest[..len]);
            rest = &rest[len..];
        } else {
            skip_field(wire_type, tag, &mut rest, DecodeContext::default())
                .map_err(|err| err.to_string())?;
        }
    }
    Ok(Bytes::from(args))
}

/// A place in a gauge (calls in flight, streams open), given back however the task ends.
struct Held(::metrics::Gauge);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::args_of_upload;

    #[test]
    fn an_uploads_arguments_are_its_first_messages_field_two() {
        // value = 7 (field 1, varint), args = { count = 3 } (field 2, 2 bytes).
        let first = [0x08, 0x07, 0x12, 0x02, 0x08, 0x03];
        assert_eq!(&args_of_upload(&first).unwrap()[..], &[0x08, 0x03]);
        assert!(args_of_upload(&[]).unwrap().is_empty());
        assert!(args_of_upload(&[0x12, 0x05, 0x08]).is_err());
    }
}
