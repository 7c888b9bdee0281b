//! Service reflection: a schema of every service, derived at compile time, a built-in
//! reflection service that lists and describes the services a server serves, and exports of
//! a schema as a `.proto` file and as JSON Schema, and the JSON messages ([`JsonArgs`],
//! [`JsonItem`]) a tool calls such a method with.
//!
//! `#[wirecall::service]` gives each generated server a [`ServiceSchema`]
//! ([`Service::schema`](crate::Service::schema)); `#[wirecall::message]` implements
//! [`Reflect`] for each struct and enum, and this module implements it for every standard
//! type that can travel. How a type is described follows how it travels (`codec/proto` for
//! Protobuf, serde for JSON and MessagePack), so the exports decode real payloads.
//!
//! The reflection service is served under the name [`REFLECTION_SERVICE`] by every server
//! unless [`ServerBuilder::reflection`](crate::ServerBuilder::reflection) turns it off; it is
//! called like any other service, so the server's token, TLS and authorisation hook apply.

pub(crate) mod descriptors;
#[cfg(feature = "json")]
mod json_messages;
#[cfg(feature = "json")]
mod json_schema;
mod proto_file;
#[cfg(test)]
pub(crate) mod proto_fixtures;
pub(crate) mod proto_model;
mod reflection_service;
pub(crate) mod schema;
mod std_impls;
mod type_name;
pub(crate) mod type_registry;

#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub use json_messages::{JsonArgs, JsonItem};
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub use json_schema::{
    json_schema, method_json_schemas, type_json_schema, type_json_schemas, MethodJsonSchemas,
};
pub use proto_file::{proto_file, ProtoFileError};
pub(crate) use reflection_service::reflection_for;
pub use reflection_service::{
    Reflection, ReflectionClient, ReflectionServer, ReflectionService, DESCRIPTORS_PACKAGE,
};
pub use schema::{
    EnumValue, FieldSchema, MethodSchema, ReflectionError, ReplySchema, ServiceSchema,
    ServiceSummary, TypeDef, TypeKind, TypeRef, VariantSchema, VariantShape,
};
pub use type_registry::{Reflect, TypeRegistry};

/// The wire name of the built-in reflection service.
pub const REFLECTION_SERVICE: &str = "wirecall.Reflection";
