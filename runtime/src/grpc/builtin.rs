//! The services the door answers itself, beside the server's own: gRPC server reflection
//! (`grpc.reflection.v1` and `v1alpha`) and the standard health check (`grpc.health.v1`).
//! They are the door's, not the server's services, so they pass the token check but not the
//! server's layers.

use bytes::Bytes;
use h2::server::SendResponse;

use super::health;
use super::messages::{message, Messages};
use super::reply::{self, SendEnd};
use super::shared::GrpcConnection;
use super::status::{Code, Status};

/// A service the door answers itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    /// `grpc.reflection.v1(alpha).ServerReflection/ServerReflectionInfo`.
    Reflection,
    /// `grpc.health.v1.Health/Check`.
    HealthCheck,
    /// `grpc.health.v1.Health/Watch`.
    HealthWatch,
}

impl Builtin {
    /// The built-in service at `path`, if it is one.
    pub(crate) fn at(path: &str) -> Option<Self> {
        match path {
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
            | "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo" => {
                Some(Self::Reflection)
            }
            "/grpc.health.v1.Health/Check" => Some(Self::HealthCheck),
            "/grpc.health.v1.Health/Watch" => Some(Self::HealthWatch),
            _ => None,
        }
    }

    /// Answers a call to this service.
    pub(crate) async fn answer(
        self,
        connection: &GrpcConnection,
        mut messages: Messages,
        mut respond: SendResponse<Bytes>,
    ) {
        match self {
            Self::Reflection => reflect(connection, messages, respond).await,
            Self::HealthCheck | Self::HealthWatch => {
                let request = match messages.next_message().await {
                    Some(Ok(request)) => request,
                    Some(Err(status)) => return reply::trailers_only(&mut respond, &status),
                    None => return reply::trailers_only(&mut respond, &reply::no_message()),
                };
                let answer = match health::check(connection, &request).await {
                    Ok(answer) => answer,
                    Err(status) => return reply::trailers_only(&mut respond, &status),
                };
                let Some(mut stream) = reply::open(&mut respond, None) else {
                    return;
                };
                if let SendEnd::Gone = reply::send_message(&mut stream, message(&answer)).await {
                    return;
                }
                if self == Self::HealthWatch {
                    // A status that changes is sent as it changes (checked each second) until
                    // the caller leaves or the server stops.
                    health::watch(connection, &request, answer, &mut stream).await;
                    return;
                }
                reply::close(&mut stream, &Status::ok());
            }
        }
    }
}

/// The reflection stream: one answer per request, in order, until the caller ends it.
async fn reflect(
    connection: &GrpcConnection,
    mut messages: Messages,
    mut respond: SendResponse<Bytes>,
) {
    let Some(mut stream) = reply::open(&mut respond, None) else {
        return;
    };
    let status = loop {
        let request = match messages.next_message().await {
            None => break Status::ok(),
            Some(Err(status)) => break status,
            Some(Ok(request)) => request,
        };
        let answer = match connection.door.reflection.answer(&request) {
            Ok(answer) => answer,
            Err(err) => break Status::new(Code::InvalidArgument, err),
        };
        if let SendEnd::Gone = reply::send_message(&mut stream, message(&answer)).await {
            return;
        }
    };
    reply::close(&mut stream, &status);
}
