//! The gRPC door (feature `grpc`): a wirecall service answered as the gRPC service
//! `{package}.{Service}`, its request and reply messages those of the `.proto` export.
//!
//! - [`descriptor`]: the services' `.proto` export as Protobuf file descriptors;
//! - [`well_known`]: the standard files served beside it (Duration, Timestamp, health,
//!   reflection);
//! - [`reflection`] and [`reflection_messages`]: gRPC server reflection;
//! - [`health_messages`]: the messages of the gRPC health service.

pub(crate) mod descriptor;
pub(crate) mod health_messages;
pub(crate) mod reflection;
pub(crate) mod reflection_messages;
pub(crate) mod well_known;
