//! The descriptors agree with the `.proto` text: every type they name is defined, every
//! field number is the text's, and, where `protoc` is installed, they equal what protoc
//! makes of the text.

use std::collections::HashSet;
use std::process::Command;

use prost::Message as _;
use prost_types::field_descriptor_proto::Type;
use prost_types::{DescriptorProto, FileDescriptorProto, FileDescriptorSet};

use super::{file_descriptors, file_name};
use crate::reflect::proto_fixtures::{hub, shapes, tags, undescribed};
use crate::reflect::{proto_file, ServiceSchema};

/// The schema sets every test runs on, with the package each is exported in.
fn cases() -> Vec<(Vec<ServiceSchema>, &'static str)> {
    vec![
        (vec![tags()], "acme.tags"),
        (vec![hub()], "wirecall.services"),
        (vec![shapes()], "shapes"),
        (vec![tags(), undescribed(), hub(), shapes()], "acme.all"),
    ]
}

/// Every message and enum the files define, by full name with a leading dot.
fn defined(files: &[FileDescriptorProto]) -> HashSet<String> {
    fn message(out: &mut HashSet<String>, scope: &str, def: &DescriptorProto) {
        let full = format!("{scope}.{}", def.name());
        for nested in &def.nested_type {
            message(out, &full, nested);
        }
        for inner in &def.enum_type {
            out.insert(format!("{full}.{}", inner.name()));
        }
        out.insert(full);
    }
    let mut out = HashSet::new();
    for file in files {
        let scope = format!(".{}", file.package());
        for def in &file.message_type {
            message(&mut out, &scope, def);
        }
        for def in &file.enum_type {
            out.insert(format!("{scope}.{}", def.name()));
        }
    }
    out
}

fn all_messages(scope: &str, defs: &[DescriptorProto]) -> Vec<(String, DescriptorProto)> {
    let mut out = Vec::new();
    for def in defs {
        let full = format!("{scope}.{}", def.name());
        out.extend(all_messages(&full, &def.nested_type));
        out.push((full, def.clone()));
    }
    out
}

#[test]
fn every_type_a_descriptor_names_is_defined_in_the_files() {
    for (schemas, package) in cases() {
        let files = file_descriptors(&schemas, package).expect("describes");
        let defined = defined(&files);
        let main = &files[0];
        assert_eq!(main.name(), file_name(package));
        // Each import comes along, so a reflection client can ask for it.
        let names: Vec<&str> = files[1..].iter().map(|file| file.name()).collect();
        assert_eq!(main.dependency, names);
        for service in &main.service {
            for method in &service.method {
                assert!(defined.contains(method.input_type()), "{method:?}");
                assert!(defined.contains(method.output_type()), "{method:?}");
            }
        }
        for (full, message) in all_messages(&format!(".{package}"), &main.message_type) {
            for field in &message.field {
                if matches!(field.r#type(), Type::Message | Type::Enum) {
                    assert!(
                        defined.contains(field.type_name()),
                        "{full}.{} names {}",
                        field.name(),
                        field.type_name()
                    );
                } else {
                    assert_eq!(field.type_name, None, "{full}.{}", field.name());
                }
            }
        }
    }
}

#[test]
fn field_numbers_and_streams_are_the_texts() {
    for (schemas, package) in cases() {
        let text = proto_file(&schemas, package).expect("exports");
        let files = file_descriptors(&schemas, package).expect("describes");
        for (full, message) in all_messages("", &files[0].message_type) {
            if message.options.is_some() {
                continue; // a map entry: the text writes `map<K, V>` instead
            }
            assert!(
                text.contains(&format!("message {} {{", message.name())),
                "{full}"
            );
            for field in &message.field {
                let line = format!(" {} = {};", field.name(), field.number());
                assert!(text.contains(&line), "`{line}` of {full} not in:\n{text}");
            }
        }
        for service in &files[0].service {
            for method in &service.method {
                let short = |name: &str| name.rsplit('.').next().unwrap_or_default().to_owned();
                let upload = if method.client_streaming() {
                    "stream "
                } else {
                    ""
                };
                let answer = if method.server_streaming() {
                    "stream "
                } else {
                    ""
                };
                let line = format!(
                    "rpc {}({upload}{}) returns ({answer}{});",
                    method.name(),
                    short(method.input_type()),
                    short(method.output_type())
                );
                assert!(text.contains(&line), "`{line}` not in:\n{text}");
            }
        }
    }
}

#[test]
fn an_upload_with_arguments_is_a_client_stream_carrying_them() {
    let files = file_descriptors(&[hub()], "wirecall.services").expect("describes");
    let hub = &files[0].service[0];
    assert_eq!(hub.name(), "acme_Hub");
    let echo = hub.method.iter().find(|m| m.name() == "echo").unwrap();
    assert_eq!(echo.input_type(), ".wirecall.services.acme_Hub_echo_Upload");
    assert_eq!(echo.client_streaming, Some(true));
    assert_eq!(echo.server_streaming, Some(true));
    let upload = files[0]
        .message_type
        .iter()
        .find(|m| m.name() == "acme_Hub_echo_Upload")
        .unwrap();
    assert_eq!(upload.field[1].name(), "args");
    assert_eq!(upload.field[1].number(), 2);
    assert_eq!(
        upload.field[1].type_name(),
        ".wirecall.services.acme_Hub_echo_Args"
    );
}

#[test]
fn a_variants_nested_message_shadows_a_type_of_the_same_name_as_protoc_does() {
    let files = file_descriptors(&[shapes()], "shapes").expect("describes");
    let shape = files[0]
        .message_type
        .iter()
        .find(|m| m.name() == "Shape")
        .unwrap();
    let other = shape.field.iter().find(|f| f.name() == "other").unwrap();
    assert_eq!(other.type_name(), ".shapes.Shape.Circle");
    let circle = &shape.nested_type[0];
    assert_eq!(circle.nested_type[0].name(), "MarksEntry");
    assert_eq!(
        circle.nested_type[0].field[1].type_name(),
        ".shapes.List_string"
    );
}

#[test]
fn a_bad_package_has_no_descriptors() {
    assert!(file_descriptors(&[tags()], "acme..tags").is_err());
}

/// Runs `protoc` on the text export of `schemas`; `None` when protoc is not installed.
fn protoc_descriptors(schemas: &[ServiceSchema], package: &str) -> Option<FileDescriptorSet> {
    if Command::new("protoc").arg("--version").output().is_err() {
        return None;
    }
    let text = proto_file(schemas, package).expect("exports");
    let dir = std::env::temp_dir().join(format!(
        "wirecall-descriptors-{}-{package}",
        std::process::id()
    ));
    let path = dir.join(file_name(package));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &text).unwrap();
    let set = dir.join("set.pb");
    let output = Command::new("protoc")
        .arg("-I")
        .arg(&dir)
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", set.display()))
        .arg(file_name(package))
        .output()
        .expect("protoc runs");
    assert!(
        output.status.success(),
        "protoc refused the export: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(&set).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(FileDescriptorSet::decode(&bytes[..]).expect("protoc's output decodes"))
}

#[test]
fn the_descriptors_are_what_protoc_makes_of_the_text() {
    for (schemas, package) in cases() {
        let ours = file_descriptors(&schemas, package).expect("describes");
        // Without protoc there is nothing to compare with; the tests above still check the
        // descriptors against the text.
        let Some(theirs) = protoc_descriptors(&schemas, package) else {
            eprintln!("protoc is not installed: the comparison with protoc is skipped");
            return;
        };
        let main = theirs
            .file
            .iter()
            .find(|file| file.name() == file_name(package))
            .expect("protoc describes the export");
        assert_eq!(&ours[0], main, "package {package}");
        // The well-known files: the same messages (protoc's also carry language options).
        for file in &ours[1..] {
            let official = theirs
                .file
                .iter()
                .find(|theirs| theirs.name() == file.name())
                .expect("protoc includes the import");
            assert_eq!(file.package, official.package);
            assert_eq!(file.message_type, official.message_type, "{}", file.name());
        }
    }
}
