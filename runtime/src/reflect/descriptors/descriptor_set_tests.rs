//! One service's descriptor set: its file first with its service and messages, then the
//! well-known files it imports; services without a Protobuf form get an error.

use prost::Message as _;
use prost_types::FileDescriptorSet;

use super::{descriptor_set, DescriptorSetError};
use crate::reflect::proto_fixtures::{hub, tags, undescribed};
use crate::reflect::ProtoFileError;

fn decoded(bytes: &[u8]) -> FileDescriptorSet {
    FileDescriptorSet::decode(bytes).expect("a FileDescriptorSet")
}

#[test]
fn the_services_file_comes_first_then_its_imports() {
    let set = decoded(&descriptor_set(&tags(), "wirecall.services").expect("exported"));
    let names: Vec<&str> = set.file.iter().map(|file| file.name()).collect();
    assert_eq!(
        names,
        [
            "wirecall/wirecall.services.proto",
            "google/protobuf/duration.proto",
            "google/protobuf/timestamp.proto",
        ]
    );
    let main = &set.file[0];
    assert_eq!(main.package(), "wirecall.services");
    assert_eq!(main.dependency, names[1..]);
    assert_eq!(main.service.len(), 1);
    assert_eq!(main.service[0].name(), "Tags");
}

#[test]
fn every_method_has_its_messages() {
    let set = decoded(&descriptor_set(&hub(), "wirecall.services").expect("exported"));
    let main = &set.file[0];
    let messages: Vec<&str> = main.message_type.iter().map(|m| m.name()).collect();
    for method in &main.service[0].method {
        for message in [method.input_type(), method.output_type()] {
            let name = message
                .strip_prefix(".wirecall.services.")
                .expect("in the package");
            assert!(messages.contains(&name), "{name} is declared");
        }
    }
    // The upload's item message travels beside the arguments and the reply.
    assert!(messages.contains(&"acme_Hub_ingest_Upload"));
}

#[test]
fn a_service_without_protobuf_has_no_descriptors() {
    assert_eq!(
        descriptor_set(&undescribed(), "wirecall.services"),
        Err(DescriptorSetError::NotExported)
    );
    assert_eq!(
        descriptor_set(&tags(), "not a package"),
        Err(DescriptorSetError::NoProtoForm(ProtoFileError::BadPackage(
            "not a package".into()
        )))
    );
}
