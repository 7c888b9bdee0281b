//! The gRPC door: the server answers standard gRPC (HTTP/2, with the h2 crate) on its own
//! port, so that any gRPC stack calls a wirecall service with no `.proto` written by hand.
//!
//! Layout: `sniff.rs` tells a gRPC connection from a wirecall one by its first byte;
//! `connection.rs` one HTTP/2 connection; `call.rs` one call, through the server's one
//! pipeline; `messages.rs` gRPC's length-prefixed messages; `upload.rs` a call's uploaded
//! messages as the handler's stream; `reply.rs` what goes back (headers, messages,
//! trailers); `headers.rs` metadata and the token as headers; `status.rs` the status codes
//! and the table from wirecall's; `door.rs` the routes by gRPC path; `builtin.rs`,
//! `health.rs`, `reflection.rs`, `descriptor.rs` and `health_messages.rs` the services the
//! door answers itself (server reflection from wirecall's schemas, the health check).

mod builtin;
mod call;
mod connection;
pub(crate) mod door;
mod headers;
mod health;
mod health_messages;
mod messages;
mod reply;
pub(crate) mod sniff;
mod status;
pub(crate) mod upload;

pub(crate) use connection::serve_connection;
pub(crate) use door::GrpcDoor;
