//! The Protobuf form of a set of service schemas as a small model: services, messages,
//! fields and enums, with every name, field number and type decided here, once.
//!
//! Two renderers read it: [`proto_file`](super::proto_file) writes it as `.proto` text, and
//! the gRPC door (feature `grpc`) turns it into the descriptors that `protoc` would make of
//! that text. Because both follow this one model, the text and the descriptors cannot
//! disagree on a name or a number.
//!
//! Type references stay as the text writes them (a bare name, `google.protobuf.Duration`):
//! what a name resolves to is protoc's scoping rule, applied by the descriptor builder.

mod build;
mod error;
mod model;

pub use error::ProtoFileError;

// Which services have a Protobuf form; the gRPC door names its services with the second.
pub(crate) use build::is_exported;
#[cfg(feature = "grpc")]
pub(crate) use build::service_identifier;

// Every type of the model, for the two renderers (which use different sets of them).
pub(crate) use model::*;
