//! The gRPC door (feature `grpc`): the server answers standard gRPC (HTTP/2, with the h2
//! crate) on its own port, so that any gRPC stack calls a wirecall service with no `.proto`
//! written by hand. Each service is the gRPC service `{package}.{Service}`, its request and
//! reply messages those of the `.proto` export.
//!
//! Layout: `sniff.rs` tells a gRPC connection from a wirecall one by its first byte;
//! `connection.rs` one HTTP/2 connection, `shared.rs` what its calls share; `call.rs` one call, through the server's one
//! pipeline; `messages.rs` gRPC's length-prefixed messages; `upload.rs` a call's uploaded
//! messages as the handler's stream; `reply.rs` what goes back (headers, messages,
//! trailers); `headers.rs` metadata and the token as headers; `status.rs` the status codes
//! and the table from wirecall's; `door.rs` the routes by gRPC path. The services the door
//! answers itself: `builtin.rs` routes to them; `health.rs` and `health_messages.rs` the
//! health check; `reflection.rs` and `reflection_messages.rs` server reflection, from
//! the export as Protobuf file descriptors (built in `reflect::descriptors`) and
//! `well_known.rs` (the standard files served beside it: health, reflection).

mod builtin;
mod call;
mod connection;
pub(crate) mod door;
mod headers;
mod health;
pub(crate) mod health_messages;
mod messages;
pub(crate) mod reflection;
pub(crate) mod reflection_messages;
mod reply;
mod shared;
pub(crate) mod sniff;
mod status;
pub(crate) mod upload;
pub(crate) mod well_known;

pub(crate) use door::GrpcDoor;
