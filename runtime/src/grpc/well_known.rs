//! Descriptors of the standard files a gRPC server's reflection hands out besides its own
//! and the well-known ones it imports (which
//! [`reflect::descriptors`](crate::reflect::descriptors) builds):
//! `grpc/health/v1/health.proto` and the two `grpc/reflection/*/reflection.proto`, so that
//! `grpcurl describe` works on every service the server lists.
//!
//! They are written by hand, with the messages, fields and numbers of the official files
//! and none of their language options, which no reflection client reads.

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    MethodDescriptorProto, OneofDescriptorProto, ServiceDescriptorProto,
};

use crate::reflect::descriptors::well_known::{field, message, proto3_file};

/// The file of the gRPC health service.
pub(crate) const HEALTH_FILE: &str = "grpc/health/v1/health.proto";
/// The gRPC health service's full name.
pub(crate) const HEALTH_SERVICE: &str = "grpc.health.v1.Health";
/// The reflection service's full name, version 1.
pub(crate) const REFLECTION_V1_SERVICE: &str = "grpc.reflection.v1.ServerReflection";
/// The reflection service's full name, the older `v1alpha` some clients still ask for.
pub(crate) const REFLECTION_V1ALPHA_SERVICE: &str = "grpc.reflection.v1alpha.ServerReflection";

/// `grpc/health/v1/health.proto`.
pub(crate) fn health_file() -> FileDescriptorProto {
    let status = ".grpc.health.v1.HealthCheckResponse.ServingStatus";
    let mut response = message(
        "HealthCheckResponse",
        vec![field("status", 1, Type::Enum, Some(status))],
    );
    response.enum_type.push(EnumDescriptorProto {
        name: Some("ServingStatus".into()),
        value: ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"]
            .into_iter()
            .zip(0..)
            .map(|(name, number)| EnumValueDescriptorProto {
                name: Some(name.into()),
                number: Some(number),
                options: None,
            })
            .collect(),
        ..Default::default()
    });
    let request = ".grpc.health.v1.HealthCheckRequest";
    let reply = ".grpc.health.v1.HealthCheckResponse";
    proto3_file(
        HEALTH_FILE,
        "grpc.health.v1",
        vec![
            message(
                "HealthCheckRequest",
                vec![field("service", 1, Type::String, None)],
            ),
            response,
        ],
        Vec::new(),
        vec![service(
            "Health",
            vec![
                method("Check", request, reply, false, false),
                method("Watch", request, reply, false, true),
            ],
        )],
    )
}

/// `grpc/reflection/{version}/reflection.proto`, `version` being `v1` or `v1alpha` (the two
/// have the same messages).
pub(crate) fn reflection_file(version: &str) -> FileDescriptorProto {
    let package = format!("grpc.reflection.{version}");
    let full = |name: &str| format!(".{package}.{name}");
    let oneof = |mut field: FieldDescriptorProto| {
        field.oneof_index = Some(0);
        field
    };
    let mut request = message(
        "ServerReflectionRequest",
        vec![
            field("host", 1, Type::String, None),
            oneof(field("file_by_filename", 3, Type::String, None)),
            oneof(field("file_containing_symbol", 4, Type::String, None)),
            oneof(field(
                "file_containing_extension",
                5,
                Type::Message,
                Some(&full("ExtensionRequest")),
            )),
            oneof(field(
                "all_extension_numbers_of_type",
                6,
                Type::String,
                None,
            )),
            oneof(field("list_services", 7, Type::String, None)),
        ],
    );
    request.oneof_decl.push(oneof_decl("message_request"));
    let mut response = message(
        "ServerReflectionResponse",
        vec![
            field("valid_host", 1, Type::String, None),
            field(
                "original_request",
                2,
                Type::Message,
                Some(&full("ServerReflectionRequest")),
            ),
            oneof(field(
                "file_descriptor_response",
                4,
                Type::Message,
                Some(&full("FileDescriptorResponse")),
            )),
            oneof(field(
                "all_extension_numbers_response",
                5,
                Type::Message,
                Some(&full("ExtensionNumberResponse")),
            )),
            oneof(field(
                "list_services_response",
                6,
                Type::Message,
                Some(&full("ListServiceResponse")),
            )),
            oneof(field(
                "error_response",
                7,
                Type::Message,
                Some(&full("ErrorResponse")),
            )),
        ],
    );
    response.oneof_decl.push(oneof_decl("message_response"));
    let messages = vec![
        request,
        message(
            "ExtensionRequest",
            vec![
                field("containing_type", 1, Type::String, None),
                field("extension_number", 2, Type::Int32, None),
            ],
        ),
        response,
        message(
            "FileDescriptorResponse",
            vec![repeated(field(
                "file_descriptor_proto",
                1,
                Type::Bytes,
                None,
            ))],
        ),
        message(
            "ExtensionNumberResponse",
            vec![
                field("base_type_name", 1, Type::String, None),
                repeated(field("extension_number", 2, Type::Int32, None)),
            ],
        ),
        message(
            "ListServiceResponse",
            vec![repeated(field(
                "service",
                1,
                Type::Message,
                Some(&full("ServiceResponse")),
            ))],
        ),
        message(
            "ServiceResponse",
            vec![field("name", 1, Type::String, None)],
        ),
        message(
            "ErrorResponse",
            vec![
                field("error_code", 1, Type::Int32, None),
                field("error_message", 2, Type::String, None),
            ],
        ),
    ];
    let info = method(
        "ServerReflectionInfo",
        &full("ServerReflectionRequest"),
        &full("ServerReflectionResponse"),
        true,
        true,
    );
    proto3_file(
        &format!("grpc/reflection/{version}/reflection.proto"),
        &package,
        messages,
        Vec::new(),
        vec![service("ServerReflection", vec![info])],
    )
}

fn repeated(mut field: FieldDescriptorProto) -> FieldDescriptorProto {
    field.label = Some(Label::Repeated.into());
    field
}

fn oneof_decl(name: &str) -> OneofDescriptorProto {
    OneofDescriptorProto {
        name: Some(name.into()),
        options: None,
    }
}

fn service(name: &str, methods: Vec<MethodDescriptorProto>) -> ServiceDescriptorProto {
    ServiceDescriptorProto {
        name: Some(name.into()),
        method: methods,
        options: None,
    }
}

fn method(
    name: &str,
    input: &str,
    output: &str,
    client_streaming: bool,
    server_streaming: bool,
) -> MethodDescriptorProto {
    MethodDescriptorProto {
        name: Some(name.into()),
        input_type: Some(input.into()),
        output_type: Some(output.into()),
        client_streaming: client_streaming.then_some(true),
        server_streaming: server_streaming.then_some(true),
        options: None,
    }
}

#[cfg(test)]
#[path = "well_known_tests.rs"]
mod tests;
