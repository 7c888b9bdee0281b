//! The gRPC contract of a set of services as Protobuf file descriptors: what
//! `protoc --descriptor_set_out` makes of the text that
//! [`proto_file`](crate::reflect::proto_file) writes, built from the same
//! [`ProtoModel`](crate::reflect::proto_model::ProtoModel), without protoc.
//!
//! The services' file is named [`file_name`]: `wirecall/{package}.proto` (so
//! `wirecall/wirecall.services.proto` by default). Reflection clients ask for a file's imports
//! by name, so the well-known files it imports come with it, built by hand in
//! [`well_known`](super::well_known).

use std::collections::HashMap;

use prost_types::field_descriptor_proto::{Label as DescriptorLabel, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, MessageOptions, MethodDescriptorProto, OneofDescriptorProto,
    ServiceDescriptorProto,
};

use super::field_names::{json_name, map_entry_name};
use super::well_known;
use crate::reflect::proto_model::{
    FieldType, Label, ProtoField, ProtoMessage, ProtoModel, ProtoType, Scalar,
};
use crate::reflect::{ProtoFileError, ServiceSchema};

/// The name of the file that holds the services of `package`.
pub(crate) fn file_name(package: &str) -> String {
    format!("wirecall/{package}.proto")
}

/// The descriptors of `schemas` exported in `package`: the services' file first, then each
/// well-known file it imports. Services that `proto_file` leaves out are left out here.
pub(crate) fn file_descriptors(
    schemas: &[ServiceSchema],
    package: &str,
) -> Result<Vec<FileDescriptorProto>, ProtoFileError> {
    let model = ProtoModel::build(schemas, package)?;
    let mut files = vec![Builder::new(&model).file()?];
    files.extend(model.imports.iter().map(|import| well_known::file(*import)));
    Ok(files)
}

/// What a full name (without the leading dot) stands for, as protoc's scoping sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Symbol {
    Package,
    Message,
    Enum,
}

struct Builder<'m> {
    model: &'m ProtoModel,
    symbols: HashMap<String, Symbol>,
}

impl<'m> Builder<'m> {
    fn new(model: &'m ProtoModel) -> Self {
        let mut builder = Builder {
            model,
            symbols: HashMap::new(),
        };
        builder.package(&model.package);
        for import in &model.imports {
            let name = import.type_name();
            if let Some((package, _)) = name.rsplit_once('.') {
                builder.package(package);
            }
            builder.symbols.insert(name.to_owned(), Symbol::Message);
        }
        let package = model.package.as_str();
        for service in &model.services {
            for message in &service.messages {
                builder.define_message(package, message);
            }
        }
        for def in &model.types {
            match def {
                ProtoType::Message(message) => builder.define_message(package, message),
                ProtoType::Enum(def) => {
                    builder
                        .symbols
                        .insert(join(package, &def.name), Symbol::Enum);
                }
            }
        }
        for wrapper in &model.wrappers {
            builder.define_message(package, wrapper);
        }
        builder
    }

    /// `a.b.c` defines the packages `a`, `a.b` and `a.b.c`.
    fn package(&mut self, package: &str) {
        let mut prefix = String::new();
        for part in package.split('.') {
            prefix = join(&prefix, part);
            self.symbols.insert(prefix.clone(), Symbol::Package);
        }
    }

    fn define_message(&mut self, scope: &str, message: &ProtoMessage) {
        let full = join(scope, &message.name);
        for nested in &message.nested {
            self.define_message(&full, nested);
        }
        for field in &message.fields {
            if matches!(field.ty, FieldType::Map { .. }) {
                let entry = join(&full, &map_entry_name(&field.name));
                self.symbols.insert(entry, Symbol::Message);
            }
        }
        self.symbols.insert(full, Symbol::Message);
    }

    fn file(&self) -> Result<FileDescriptorProto, ProtoFileError> {
        let package = self.model.package.as_str();
        let mut messages = Vec::new();
        let mut enums = Vec::new();
        let mut services = Vec::new();
        for service in &self.model.services {
            for message in &service.messages {
                messages.push(self.message(package, message)?);
            }
            let absolute = |name: &str| format!(".{}", join(package, name));
            services.push(ServiceDescriptorProto {
                name: Some(service.name.clone()),
                method: service
                    .methods
                    .iter()
                    .map(|method| MethodDescriptorProto {
                        name: Some(method.name.clone()),
                        input_type: Some(absolute(&method.input)),
                        output_type: Some(absolute(&method.output)),
                        // protoc sets the flags only where the text says `stream`.
                        client_streaming: method.client_streaming.then_some(true),
                        server_streaming: method.server_streaming.then_some(true),
                        options: None,
                    })
                    .collect(),
                options: None,
            });
        }
        for def in &self.model.types {
            match def {
                ProtoType::Message(message) => messages.push(self.message(package, message)?),
                ProtoType::Enum(def) => enums.push(EnumDescriptorProto {
                    name: Some(def.name.clone()),
                    value: def
                        .values
                        .iter()
                        .map(|value| EnumValueDescriptorProto {
                            name: Some(value.name.clone()),
                            number: Some(value.number),
                            options: None,
                        })
                        .collect(),
                    ..Default::default()
                }),
            }
        }
        for wrapper in &self.model.wrappers {
            messages.push(self.message(package, wrapper)?);
        }
        Ok(FileDescriptorProto {
            name: Some(file_name(package)),
            package: Some(package.to_owned()),
            dependency: self
                .model
                .imports
                .iter()
                .map(|import| import.file().to_owned())
                .collect(),
            message_type: messages,
            enum_type: enums,
            service: services,
            syntax: Some("proto3".into()),
            ..Default::default()
        })
    }

    /// The descriptor of `message`, declared in `scope` (a package or a message).
    fn message(
        &self,
        scope: &str,
        message: &ProtoMessage,
    ) -> Result<DescriptorProto, ProtoFileError> {
        let full = join(scope, &message.name);
        let mut descriptor = DescriptorProto {
            name: Some(message.name.clone()),
            ..Default::default()
        };
        for nested in &message.nested {
            descriptor.nested_type.push(self.message(&full, nested)?);
        }
        if let Some(oneof) = &message.oneof {
            descriptor.oneof_decl.push(OneofDescriptorProto {
                name: Some(oneof.clone()),
                options: None,
            });
        }
        for field in &message.fields {
            let mut proto = match &field.ty {
                FieldType::Map { key, value } => {
                    // protoc's form of `map<K, V> name`: a repeated nested `NameEntry`.
                    let entry_name = map_entry_name(&field.name);
                    let entry_scope = join(&full, &entry_name);
                    descriptor.nested_type.push(DescriptorProto {
                        name: Some(entry_name),
                        field: vec![
                            self.field(&entry_scope, "key", 1, Label::Singular, key)?,
                            self.field(&entry_scope, "value", 2, Label::Singular, value)?,
                        ],
                        options: Some(MessageOptions {
                            map_entry: Some(true),
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                    FieldDescriptorProto {
                        label: Some(DescriptorLabel::Repeated.into()),
                        r#type: Some(Type::Message.into()),
                        type_name: Some(format!(".{entry_scope}")),
                        ..self.field(&full, &field.name, field.number, Label::Singular, key)?
                    }
                }
                ty => self.field(&full, &field.name, field.number, field.label, ty)?,
            };
            if message.oneof.is_some() {
                proto.oneof_index = Some(0);
            }
            descriptor.field.push(proto);
        }
        synthetic_oneofs(&mut descriptor, &message.fields);
        Ok(descriptor)
    }

    /// A field `name` of type `ty` in the message `scope`.
    fn field(
        &self,
        scope: &str,
        name: &str,
        number: u32,
        label: Label,
        ty: &FieldType,
    ) -> Result<FieldDescriptorProto, ProtoFileError> {
        let (r#type, type_name) = match ty {
            FieldType::Scalar(scalar) => (scalar_type(*scalar), None),
            FieldType::Named(name) => match self.resolve(scope, name) {
                Some((full, Symbol::Enum)) => (Type::Enum, Some(format!(".{full}"))),
                Some((full, _)) => (Type::Message, Some(format!(".{full}"))),
                None => return Err(ProtoFileError::UnknownType(name.clone())),
            },
            // A map is never a map's key or value; the caller handles map fields.
            FieldType::Map { .. } => (Type::Message, None),
        };
        Ok(FieldDescriptorProto {
            name: Some(name.to_owned()),
            number: i32::try_from(number).ok(),
            label: Some(
                match label {
                    Label::Repeated => DescriptorLabel::Repeated,
                    Label::Singular | Label::Optional => DescriptorLabel::Optional,
                }
                .into(),
            ),
            r#type: Some(r#type.into()),
            type_name,
            json_name: Some(json_name(name)),
            proto3_optional: (label == Label::Optional).then_some(true),
            ..Default::default()
        })
    }

    /// What `name`, written in the message `scope`, refers to: protoc looks its first part
    /// up from the innermost scope outwards (C++ rules), so a variant's nested message
    /// shadows a top-level type of the same name.
    fn resolve(&self, scope: &str, name: &str) -> Option<(String, Symbol)> {
        let (first, dotted) = match name.split_once('.') {
            Some((first, _)) => (first, true),
            None => (name, false),
        };
        let mut scope = scope;
        loop {
            match self.symbols.get(&join(scope, first)) {
                Some(Symbol::Message | Symbol::Enum) if !dotted => {
                    let full = join(scope, name);
                    return self.symbols.get(&full).map(|symbol| (full, *symbol));
                }
                Some(Symbol::Package | Symbol::Message) if dotted => {
                    let full = join(scope, name);
                    return match self.symbols.get(&full) {
                        Some(symbol @ (Symbol::Message | Symbol::Enum)) => Some((full, *symbol)),
                        _ => None,
                    };
                }
                _ => {}
            }
            if scope.is_empty() {
                return None;
            }
            scope = scope.rsplit_once('.').map_or("", |(outer, _)| outer);
        }
    }
}

/// protoc gives each proto3 `optional` field a oneof of its own, after the real ones, named
/// `_field` (prefixed with `X` until no field or oneof has that name).
fn synthetic_oneofs(descriptor: &mut DescriptorProto, fields: &[ProtoField]) {
    let mut names: Vec<String> = fields.iter().map(|field| field.name.clone()).collect();
    names.extend(
        descriptor
            .oneof_decl
            .iter()
            .filter_map(|oneof| oneof.name.clone()),
    );
    for field in &mut descriptor.field {
        if field.proto3_optional != Some(true) {
            continue;
        }
        let field_name = field.name.clone().unwrap_or_default();
        let mut name = if field_name.starts_with('_') {
            field_name
        } else {
            format!("_{field_name}")
        };
        while names.contains(&name) {
            name.insert(0, 'X');
        }
        names.push(name.clone());
        field.oneof_index = i32::try_from(descriptor.oneof_decl.len()).ok();
        descriptor.oneof_decl.push(OneofDescriptorProto {
            name: Some(name),
            options: None,
        });
    }
}

fn scalar_type(scalar: Scalar) -> Type {
    match scalar {
        Scalar::Bool => Type::Bool,
        Scalar::Uint32 => Type::Uint32,
        Scalar::Uint64 => Type::Uint64,
        Scalar::Int32 => Type::Int32,
        Scalar::Int64 => Type::Int64,
        Scalar::Float => Type::Float,
        Scalar::Double => Type::Double,
        Scalar::String => Type::String,
        Scalar::Bytes => Type::Bytes,
    }
}

fn join(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

#[cfg(test)]
#[path = "services_file_tests.rs"]
mod tests;
