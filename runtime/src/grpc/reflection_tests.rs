//! What a reflection client (grpcurl) sees when it asks a server about its services.

use prost::Message as _;
use prost_types::FileDescriptorProto;

use super::super::reflection_messages::{
    ExtensionRequest, MessageRequest, MessageResponse, ServerReflectionRequest,
    ServerReflectionResponse,
};
use super::Reflection;
use crate::reflect::proto_fixtures::{hub, tags, undescribed};

fn reflection() -> Reflection {
    Reflection::new(&[tags(), undescribed(), hub()], "acme.tags")
}

fn ask(reflection: &Reflection, question: MessageRequest) -> MessageResponse {
    let request = ServerReflectionRequest {
        host: "localhost".into(),
        message_request: Some(question.clone()),
    };
    let answer = reflection
        .answer(&request.encode_to_vec())
        .expect("a well-formed request is answered");
    let answer = ServerReflectionResponse::decode(&answer[..]).expect("the answer decodes");
    assert_eq!(answer.valid_host, "localhost");
    assert_eq!(answer.original_request, Some(request));
    answer
        .message_response
        .expect("every answer says something")
}

fn files(answer: MessageResponse) -> Vec<FileDescriptorProto> {
    match answer {
        MessageResponse::FileDescriptorResponse(files) => files
            .file_descriptor_proto
            .iter()
            .map(|bytes| FileDescriptorProto::decode(&bytes[..]).expect("a file descriptor"))
            .collect(),
        other => panic!("expected files, got {other:?}"),
    }
}

fn file_names(answer: MessageResponse) -> Vec<String> {
    files(answer)
        .iter()
        .map(|file| file.name().to_owned())
        .collect()
}

fn error_code(answer: MessageResponse) -> i32 {
    match answer {
        MessageResponse::ErrorResponse(error) => error.error_code,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn listed(reflection: &Reflection) -> Vec<String> {
    match ask(reflection, MessageRequest::ListServices(String::new())) {
        MessageResponse::ListServicesResponse(list) => list
            .service
            .into_iter()
            .map(|service| service.name)
            .collect(),
        other => panic!("expected services, got {other:?}"),
    }
}

#[test]
fn list_services_names_the_exported_services_reflection_and_health() {
    assert_eq!(
        listed(&reflection()),
        [
            "acme.tags.Tags",
            "acme.tags.acme_Hub",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
            "grpc.health.v1.Health",
        ]
    );
}

#[test]
fn the_file_of_a_service_comes_with_the_files_it_imports() {
    let names = file_names(ask(
        &reflection(),
        MessageRequest::FileContainingSymbol("acme.tags.Tags".into()),
    ));
    assert_eq!(
        names,
        [
            "wirecall/acme.tags.proto",
            "google/protobuf/duration.proto",
            "google/protobuf/timestamp.proto",
        ]
    );
}

#[test]
fn methods_messages_nested_messages_and_enums_are_symbols() {
    let reflection = reflection();
    for symbol in [
        "acme.tags.acme_Hub.echo",
        "acme.tags.Sighting",
        ".acme.tags.Sighting",
        "acme.tags.Sighting.LabelsEntry",
        "acme.tags.Event.Moved",
        "acme.tags.Colour",
        "acme.tags.acme_Hub_tagged_Upload",
    ] {
        let names = file_names(ask(
            &reflection,
            MessageRequest::FileContainingSymbol(symbol.into()),
        ));
        assert_eq!(names[0], "wirecall/acme.tags.proto", "{symbol}");
    }
    let files = files(ask(
        &reflection,
        MessageRequest::FileContainingSymbol("google.protobuf.Duration".into()),
    ));
    assert_eq!(files[0].name(), "google/protobuf/duration.proto");
    assert_eq!(files[0].message_type[0].field.len(), 2);
}

#[test]
fn imports_are_answered_by_file_name() {
    let reflection = reflection();
    for name in [
        "google/protobuf/timestamp.proto",
        "wirecall/acme.tags.proto",
        "grpc/health/v1/health.proto",
        "grpc/reflection/v1alpha/reflection.proto",
    ] {
        let names = file_names(ask(
            &reflection,
            MessageRequest::FileByFilename(name.into()),
        ));
        assert_eq!(names[0], name);
    }
    let missing = ask(
        &reflection,
        MessageRequest::FileByFilename("x.proto".into()),
    );
    assert_eq!(error_code(missing), 5);
}

#[test]
fn the_health_and_reflection_services_can_be_described() {
    let reflection = reflection();
    let health = files(ask(
        &reflection,
        MessageRequest::FileContainingSymbol("grpc.health.v1.Health".into()),
    ));
    let service = &health[0].service[0];
    assert_eq!(service.name(), "Health");
    let watch = &service.method[1];
    assert_eq!((watch.name(), watch.server_streaming()), ("Watch", true));
    let status = file_names(ask(
        &reflection,
        MessageRequest::FileContainingSymbol(
            "grpc.health.v1.HealthCheckResponse.ServingStatus".into(),
        ),
    ));
    assert_eq!(status, ["grpc/health/v1/health.proto"]);
    for version in ["v1", "v1alpha"] {
        let symbol = format!("grpc.reflection.{version}.ServerReflection.ServerReflectionInfo");
        let names = file_names(ask(
            &reflection,
            MessageRequest::FileContainingSymbol(symbol),
        ));
        assert_eq!(
            names,
            [format!("grpc/reflection/{version}/reflection.proto")]
        );
    }
}

#[test]
fn an_unknown_symbol_is_not_found() {
    let answer = ask(
        &reflection(),
        MessageRequest::FileContainingSymbol("acme.tags.Nope".into()),
    );
    assert_eq!(error_code(answer), 5);
}

#[test]
fn extensions_are_not_found_or_none() {
    let reflection = reflection();
    let extension = ask(
        &reflection,
        MessageRequest::FileContainingExtension(ExtensionRequest {
            containing_type: "acme.tags.Sighting".into(),
            extension_number: 100,
        }),
    );
    assert_eq!(error_code(extension), 5);
    match ask(
        &reflection,
        MessageRequest::AllExtensionNumbersOfType("acme.tags.Sighting".into()),
    ) {
        MessageResponse::AllExtensionNumbersResponse(numbers) => {
            assert_eq!(numbers.base_type_name, "acme.tags.Sighting");
            assert!(numbers.extension_number.is_empty());
        }
        other => panic!("expected extension numbers, got {other:?}"),
    }
    let unknown = ask(
        &reflection,
        MessageRequest::AllExtensionNumbersOfType("acme.tags.Nope".into()),
    );
    assert_eq!(error_code(unknown), 5);
}

#[test]
fn a_request_that_does_not_decode_or_asks_nothing_is_refused() {
    let reflection = reflection();
    // Field 4 (a string) whose length runs past the end.
    assert!(reflection.answer(&[0x22, 0x7f, b'a']).is_err());
    assert!(reflection.answer(&[0xff; 12]).is_err());
    let empty = ServerReflectionRequest {
        host: String::new(),
        message_request: None,
    };
    assert!(reflection.answer(&empty.encode_to_vec()).is_err());
}

#[test]
fn services_without_a_proto_form_are_listed_but_not_described() {
    let reflection = Reflection::new(&[tags()], "not a package");
    assert_eq!(listed(&reflection)[0], "not a package.Tags");
    let answer = ask(
        &reflection,
        MessageRequest::FileContainingSymbol("not a package.Tags".into()),
    );
    assert_eq!(error_code(answer), 5);
    let health = ask(
        &reflection,
        MessageRequest::FileContainingSymbol("grpc.health.v1.Health".into()),
    );
    assert_eq!(file_names(health), ["grpc/health/v1/health.proto"]);
}
