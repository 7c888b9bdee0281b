//! gRPC server reflection, `grpc.reflection.v1.ServerReflection/ServerReflectionInfo` and
//! the same under `grpc.reflection.v1alpha`: the answers that let `grpcurl list`,
//! `grpcurl describe` and other tools call a wirecall server without its `.proto`.
//!
//! Every answer is computed from descriptors built once at start-up: the services' file
//! ([`descriptors`](crate::reflect::descriptors)), the well-known files it imports, and the files of
//! the health and reflection services themselves, so that every service the server lists
//! can be described.

use std::collections::{HashMap, HashSet};

use prost::Message as _;
use prost_types::{DescriptorProto, FileDescriptorProto};

use super::reflection_messages::{
    ErrorResponse, ExtensionNumberResponse, FileDescriptorResponse, ListServiceResponse,
    MessageRequest, MessageResponse, ServerReflectionRequest, ServerReflectionResponse,
    ServiceResponse,
};
use super::well_known::{self, HEALTH_SERVICE, REFLECTION_V1ALPHA_SERVICE, REFLECTION_V1_SERVICE};
use crate::reflect::descriptors;
use crate::reflect::proto_model::{is_exported, service_identifier};
use crate::reflect::ServiceSchema;

/// gRPC's `NOT_FOUND` status code, which reflection puts in an `ErrorResponse`.
const NOT_FOUND: i32 = 5;

/// The reflection answers of one server.
#[derive(Debug, Default)]
pub(crate) struct Reflection {
    /// Full names of the services, in the order they are listed.
    services: Vec<String>,
    /// File name -> the encoded file and the names of the files it imports.
    files: HashMap<String, File>,
    /// Full name of a service, method, message or enum -> the file that declares it.
    symbols: HashMap<String, String>,
    /// Full names of the messages (the types extensions could extend).
    messages: HashSet<String>,
}

#[derive(Debug)]
struct File {
    encoded: Vec<u8>,
    dependencies: Vec<String>,
}

impl Reflection {
    /// `schemas`: the services the server serves; `package`: their gRPC package.
    ///
    /// Services the `.proto` export leaves out (no Protobuf, or no described types) are
    /// not listed. If the services have no `.proto` form at all (a bad package name, two
    /// types with one name), they are still listed, with a warning, but no file describes
    /// them.
    pub(crate) fn new(schemas: &[ServiceSchema], package: &str) -> Self {
        let mut reflection = Reflection::default();
        match descriptors::file_descriptors(schemas, package) {
            Ok(files) => {
                for file in &files {
                    for service in &file.service {
                        let name = service.name.as_deref().unwrap_or_default();
                        reflection
                            .services
                            .push(full_name(file.package.as_deref(), name));
                    }
                }
                for file in files {
                    reflection.add(file);
                }
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    "gRPC reflection lists the services but cannot describe them"
                );
                reflection.services.extend(
                    schemas
                        .iter()
                        .filter(|schema| is_exported(schema))
                        .map(|schema| format!("{package}.{}", service_identifier(&schema.name))),
                );
            }
        }
        reflection.services.extend(
            [
                REFLECTION_V1_SERVICE,
                REFLECTION_V1ALPHA_SERVICE,
                HEALTH_SERVICE,
            ]
            .map(String::from),
        );
        reflection.add(well_known::reflection_file("v1"));
        reflection.add(well_known::reflection_file("v1alpha"));
        reflection.add(well_known::health_file());
        reflection
    }

    /// Answers one `ServerReflectionRequest` (its encoded bytes) with an encoded
    /// `ServerReflectionResponse`. A request that does not decode, or asks nothing, gets
    /// `Err` with the reason (the door ends the stream with `INVALID_ARGUMENT`).
    pub(crate) fn answer(&self, request: &[u8]) -> Result<Vec<u8>, String> {
        let request = ServerReflectionRequest::decode(request)
            .map_err(|error| format!("not a reflection request: {error}"))?;
        let Some(question) = &request.message_request else {
            return Err("the reflection request asks nothing".into());
        };
        let answer = match question {
            MessageRequest::FileByFilename(name) => self
                .file_with_imports(name)
                .unwrap_or_else(|| not_found(format!("no file named `{name}`"))),
            MessageRequest::FileContainingSymbol(symbol) => {
                let symbol = symbol.strip_prefix('.').unwrap_or(symbol);
                self.symbols
                    .get(symbol)
                    .and_then(|file| self.file_with_imports(file))
                    .unwrap_or_else(|| not_found(format!("no symbol named `{symbol}`")))
            }
            MessageRequest::FileContainingExtension(extension) => not_found(format!(
                "`{}` has no extension {}: this server declares no extensions",
                extension.containing_type, extension.extension_number
            )),
            MessageRequest::AllExtensionNumbersOfType(name) => {
                let name = name.strip_prefix('.').unwrap_or(name);
                if self.messages.contains(name) {
                    MessageResponse::AllExtensionNumbersResponse(ExtensionNumberResponse {
                        base_type_name: name.to_owned(),
                        extension_number: Vec::new(),
                    })
                } else {
                    not_found(format!("no message named `{name}`"))
                }
            }
            MessageRequest::ListServices(_) => {
                MessageResponse::ListServicesResponse(ListServiceResponse {
                    service: self
                        .services
                        .iter()
                        .map(|name| ServiceResponse { name: name.clone() })
                        .collect(),
                })
            }
        };
        Ok(ServerReflectionResponse {
            valid_host: request.host.clone(),
            original_request: Some(request),
            message_response: Some(answer),
        }
        .encode_to_vec())
    }

    /// Indexes `file`'s symbols (the first file to declare a name keeps it) and keeps it.
    fn add(&mut self, file: FileDescriptorProto) {
        let name = file.name.clone().unwrap_or_default();
        if self.files.contains_key(&name) {
            return;
        }
        let package = file.package.as_deref();
        let mut symbols = Vec::new();
        for service in &file.service {
            let service_name = full_name(package, service.name.as_deref().unwrap_or_default());
            for method in &service.method {
                let method = method.name.as_deref().unwrap_or_default();
                symbols.push(format!("{service_name}.{method}"));
            }
            symbols.push(service_name);
        }
        for def in &file.enum_type {
            symbols.push(full_name(package, def.name.as_deref().unwrap_or_default()));
        }
        for message in &file.message_type {
            self.index_message(&mut symbols, &full_name(package, ""), message);
        }
        for symbol in symbols {
            self.symbols.entry(symbol).or_insert_with(|| name.clone());
        }
        self.files.insert(
            name,
            File {
                encoded: file.encode_to_vec(),
                dependencies: file.dependency,
            },
        );
    }

    fn index_message(&mut self, symbols: &mut Vec<String>, scope: &str, message: &DescriptorProto) {
        let full = full_name(Some(scope), message.name.as_deref().unwrap_or_default());
        for def in &message.enum_type {
            symbols.push(full_name(
                Some(&full),
                def.name.as_deref().unwrap_or_default(),
            ));
        }
        for nested in &message.nested_type {
            self.index_message(symbols, &full, nested);
        }
        self.messages.insert(full.clone());
        symbols.push(full);
    }

    /// The file `name` first, then every file it imports, directly or not, each once.
    fn file_with_imports(&self, name: &str) -> Option<MessageResponse> {
        self.files.get(name)?;
        let mut order = vec![name.to_owned()];
        let mut next = 0;
        while let Some(current) = order.get(next).cloned() {
            next += 1;
            for dependency in self
                .files
                .get(&current)
                .map_or(&[][..], |f| &f.dependencies)
            {
                if !order.contains(dependency) && self.files.contains_key(dependency) {
                    order.push(dependency.clone());
                }
            }
        }
        let file_descriptor_proto = order
            .iter()
            .filter_map(|name| self.files.get(name))
            .map(|file| file.encoded.clone())
            .collect();
        Some(MessageResponse::FileDescriptorResponse(
            FileDescriptorResponse {
                file_descriptor_proto,
            },
        ))
    }
}

fn not_found(message: String) -> MessageResponse {
    MessageResponse::ErrorResponse(ErrorResponse {
        error_code: NOT_FOUND,
        error_message: message,
    })
}

/// `package.name`, or `name` in the root package.
fn full_name(package: Option<&str>, name: &str) -> String {
    match package {
        Some(package) if !package.is_empty() && !name.is_empty() => format!("{package}.{name}"),
        Some(package) if name.is_empty() => package.to_owned(),
        _ => name.to_owned(),
    }
}

#[cfg(test)]
#[path = "reflection_tests.rs"]
mod tests;
