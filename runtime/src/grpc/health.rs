//! `grpc.health.v1.Health`, backed by the server's health state: the server's
//! `wirecall.Health` service when it serves one (a [`HealthReporter`](crate::HealthReporter)),
//! else `SERVING` for the server and each of its services until shutdown begins.

use std::time::Duration;

use bytes::Bytes;
use h2::SendStream;
use prost::Message as _;

use super::health_messages::{HealthCheckRequest, HealthCheckResponse, ServingStatus};
use super::messages::message;
use super::reply::{self, SendEnd};
use super::shared::GrpcConnection;
use super::status::{Code, Status};
use crate::codec::Codec;
use crate::server::request::ReplyBody;
use crate::server::stream::upload_queue::Upload;

/// How often a `Watch` looks at the status again.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Answers a `Check` request (encoded): the encoded response, or `NOT_FOUND` for a service
/// the server does not know.
pub(crate) async fn check(connection: &GrpcConnection, request: &[u8]) -> Result<Vec<u8>, Status> {
    let request = HealthCheckRequest::decode(request).map_err(|err| {
        Status::new(
            Code::InvalidArgument,
            format!("not a HealthCheckRequest: {err}"),
        )
    })?;
    let status = status_of(connection, &request.service).await?;
    if status == ServingStatus::ServiceUnknown {
        return Err(Status::new(
            Code::NotFound,
            format!("no service {} on this server", request.service),
        ));
    }
    Ok(encode(status))
}

/// Sends the status of a `Watch` each time it changes, until the caller leaves or the
/// server shuts down; `last` is the answer already sent.
pub(crate) async fn watch(
    connection: &GrpcConnection,
    request: &[u8],
    mut last: Vec<u8>,
    stream: &mut SendStream<Bytes>,
) {
    let Ok(request) = HealthCheckRequest::decode(request) else {
        return;
    };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(WATCH_EVERY) => {}
            _ = std::future::poll_fn(|cx| stream.poll_reset(cx)) => return,
            _ = connection.shared.shutdown.cancelled() => break,
        }
        let Ok(status) = status_of(connection, &request.service).await else {
            break;
        };
        let answer = encode(status);
        if answer != last {
            if let SendEnd::Gone = reply::send_message(stream, message(&answer)).await {
                return;
            }
            last = answer;
        }
    }
    reply::close(
        stream,
        &Status::new(Code::Unavailable, "the server is shutting down"),
    );
}

fn encode(status: ServingStatus) -> Vec<u8> {
    HealthCheckResponse {
        status: status as i32,
    }
    .encode_to_vec()
}

/// The status of `service` (a gRPC full name, or the wire name; `""`: the server).
async fn status_of(connection: &GrpcConnection, service: &str) -> Result<ServingStatus, Status> {
    let door = &connection.door;
    let name = service
        .strip_prefix(door.package.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(service);
    let shared = &connection.shared;
    let Some(route) = door.health_check().and_then(|id| shared.router.get(id)) else {
        if shared.shutdown.is_cancelled() {
            return Ok(ServingStatus::NotServing);
        }
        let known = name.is_empty() || door.serves(name);
        return Ok(if known {
            ServingStatus::Serving
        } else {
            ServingStatus::ServiceUnknown
        });
    };
    // `wirecall.Health.check(service: String)`: its arguments are laid out as a
    // `HealthCheckRequest`.
    let args = HealthCheckRequest {
        service: name.to_owned(),
    }
    .encode_to_vec();
    let reply = route
        .service
        .call(
            route.method.id,
            Codec::Protobuf,
            Bytes::from(args),
            Upload::none(),
        )
        .await
        .map_err(|err| Status::of(err.code(), err.to_string()))?;
    let ReplyBody::Message(frame) = reply.body else {
        return Err(Status::new(
            Code::Internal,
            "the health service answered with a stream",
        ));
    };
    let (_, payload) = frame
        .into_parts()
        .map_err(|err| Status::new(Code::Internal, err))?;
    // Its reply `{ ServingStatus value = 1; }`: Unknown, Serving, NotServing, Draining.
    let value = HealthCheckResponse::decode(payload.as_ref())
        .map_err(|err| Status::new(Code::Internal, err.to_string()))?
        .status;
    Ok(match value {
        0 => ServingStatus::ServiceUnknown,
        1 => ServingStatus::Serving,
        _ => ServingStatus::NotServing,
    })
}
