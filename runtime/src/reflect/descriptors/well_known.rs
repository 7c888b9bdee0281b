//! Descriptors of the well-known files a services' file imports,
//! `google/protobuf/duration.proto` and `timestamp.proto`, and the small builders of
//! hand-written proto3 files, which the gRPC door also uses for the health and reflection
//! files it serves.
//!
//! They are written by hand, with the messages, fields and numbers of the official files
//! and none of their language options, which no reflection client reads.

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    ServiceDescriptorProto,
};

use super::field_names::json_name;
use crate::reflect::proto_model::WellKnown;

/// The file that declares a well-known type.
pub(crate) fn file(import: WellKnown) -> FileDescriptorProto {
    // Duration and Timestamp have the same two fields.
    let name = match import {
        WellKnown::Duration => "Duration",
        WellKnown::Timestamp => "Timestamp",
    };
    let seconds_and_nanos = vec![
        field("seconds", 1, Type::Int64, None),
        field("nanos", 2, Type::Int32, None),
    ];
    proto3_file(
        import.file(),
        "google.protobuf",
        vec![message(name, seconds_and_nanos)],
        Vec::new(),
        Vec::new(),
    )
}

/// A proto3 file that declares these messages, enums and services.
pub(crate) fn proto3_file(
    name: &str,
    package: &str,
    messages: Vec<DescriptorProto>,
    enums: Vec<EnumDescriptorProto>,
    services: Vec<ServiceDescriptorProto>,
) -> FileDescriptorProto {
    FileDescriptorProto {
        name: Some(name.into()),
        package: Some(package.into()),
        message_type: messages,
        enum_type: enums,
        service: services,
        syntax: Some("proto3".into()),
        ..Default::default()
    }
}

/// A message with these fields.
pub(crate) fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

/// A singular proto3 field; `type_name` (absolute) for messages and enums.
pub(crate) fn field(
    name: &str,
    number: i32,
    r#type: Type,
    type_name: Option<&str>,
) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(Label::Optional.into()),
        r#type: Some(r#type.into()),
        type_name: type_name.map(str::to_owned),
        json_name: Some(json_name(name)),
        ..Default::default()
    }
}
