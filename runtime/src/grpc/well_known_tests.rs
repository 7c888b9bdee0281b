//! The hand-written standard files equal what protoc makes of their official text (without
//! the official files' language options), where protoc is installed.

use std::process::Command;

use prost::Message as _;
use prost_types::{FileDescriptorProto, FileDescriptorSet};

use super::{health_file, reflection_file, HEALTH_FILE};

const HEALTH_PROTO: &str = r#"syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest {
  string service = 1;
}
message HealthCheckResponse {
  enum ServingStatus {
    UNKNOWN = 0;
    SERVING = 1;
    NOT_SERVING = 2;
    SERVICE_UNKNOWN = 3;
  }
  ServingStatus status = 1;
}
service Health {
  rpc Check(HealthCheckRequest) returns (HealthCheckResponse);
  rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);
}
"#;

const REFLECTION_PROTO: &str = r#"syntax = "proto3";
package grpc.reflection.VERSION;
service ServerReflection {
  rpc ServerReflectionInfo(stream ServerReflectionRequest)
      returns (stream ServerReflectionResponse);
}
message ServerReflectionRequest {
  string host = 1;
  oneof message_request {
    string file_by_filename = 3;
    string file_containing_symbol = 4;
    ExtensionRequest file_containing_extension = 5;
    string all_extension_numbers_of_type = 6;
    string list_services = 7;
  }
}
message ExtensionRequest {
  string containing_type = 1;
  int32 extension_number = 2;
}
message ServerReflectionResponse {
  string valid_host = 1;
  ServerReflectionRequest original_request = 2;
  oneof message_response {
    FileDescriptorResponse file_descriptor_response = 4;
    ExtensionNumberResponse all_extension_numbers_response = 5;
    ListServiceResponse list_services_response = 6;
    ErrorResponse error_response = 7;
  }
}
message FileDescriptorResponse {
  repeated bytes file_descriptor_proto = 1;
}
message ExtensionNumberResponse {
  string base_type_name = 1;
  repeated int32 extension_number = 2;
}
message ListServiceResponse {
  repeated ServiceResponse service = 1;
}
message ServiceResponse {
  string name = 1;
}
message ErrorResponse {
  int32 error_code = 1;
  string error_message = 2;
}
"#;

/// protoc's descriptor of `text` saved as `name`; `None` when protoc is not installed.
fn protoc(name: &str, text: &str) -> Option<FileDescriptorProto> {
    if Command::new("protoc").arg("--version").output().is_err() {
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "wirecall-well-known-{}-{}",
        std::process::id(),
        name.replace('/', "_")
    ));
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    let set = dir.join("set.pb");
    let output = Command::new("protoc")
        .arg("-I")
        .arg(&dir)
        .arg(format!("--descriptor_set_out={}", set.display()))
        .arg(name)
        .output()
        .expect("protoc runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let set = FileDescriptorSet::decode(&std::fs::read(&set).unwrap()[..]).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    set.file.into_iter().next()
}

#[test]
fn the_standard_files_are_what_protoc_makes_of_their_text() {
    let mut cases = vec![(health_file(), HEALTH_PROTO.to_owned())];
    for version in ["v1", "v1alpha"] {
        cases.push((
            reflection_file(version),
            REFLECTION_PROTO.replace("VERSION", version),
        ));
    }
    for (ours, text) in cases {
        assert!(ours.name().starts_with("grpc/"));
        // Without protoc there is nothing to compare with; the reflection tests still
        // decode these files.
        let Some(theirs) = protoc(ours.name(), &text) else {
            eprintln!("protoc is not installed: the comparison with protoc is skipped");
            return;
        };
        assert_eq!(ours, theirs);
    }
    assert_eq!(health_file().name(), HEALTH_FILE);
}
