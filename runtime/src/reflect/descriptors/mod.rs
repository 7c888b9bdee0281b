//! The Protobuf form of services as file descriptors: what `protoc --descriptor_set_out`
//! makes of the `.proto` export, built from the same
//! [`ProtoModel`](super::proto_model::ProtoModel) without protoc.
//!
//! Two readers: the reflection service's `descriptors` method, which hands a client the
//! messages it encodes a service's Protobuf payloads with, and the gRPC door's server
//! reflection (feature `grpc`). Layout: `services_file.rs` the file of a set of services,
//! `well_known.rs` the Duration and Timestamp files it imports (and the builders of
//! hand-written files), `field_names.rs` the names protoc derives from a field's name,
//! `descriptor_set.rs` one service's files as an encoded `FileDescriptorSet`.

mod descriptor_set;
mod field_names;
mod services_file;
pub(crate) mod well_known;

pub(crate) use descriptor_set::{descriptor_set, DescriptorSetError};
#[cfg(feature = "grpc")]
pub(crate) use services_file::file_descriptors;
