//! Building a [`ProtoModel`] from schemas: which services are exported, the messages of
//! each method, how each Rust type becomes a field, and which wrapper messages exist.

use std::collections::BTreeMap;

use super::super::schema::{ReplySchema, ServiceSchema, TypeDef, TypeKind, TypeRef, VariantShape};
use super::error::ProtoFileError;
use super::model::{
    FieldType, Label, ProtoEnum, ProtoEnumValue, ProtoField, ProtoMessage, ProtoMethod, ProtoModel,
    ProtoService, ProtoType, Scalar, WellKnown,
};

/// Whether a service is part of a `.proto` export: it speaks Protobuf and describes its
/// types.
pub(crate) fn is_exported(schema: &ServiceSchema) -> bool {
    schema.described && schema.codecs.iter().any(|codec| codec == "protobuf")
}

/// A service name as a protobuf identifier: `pkg.Users` -> `pkg_Users`.
pub(crate) fn service_identifier(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl ProtoModel {
    /// The model of `schemas` exported in `package`.
    pub(crate) fn build(schemas: &[ServiceSchema], package: &str) -> Result<Self, ProtoFileError> {
        let valid_package = !package.is_empty()
            && package.split('.').all(|part| {
                part.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        if !valid_package {
            return Err(ProtoFileError::BadPackage(package.to_owned()));
        }
        let mut types: BTreeMap<&str, &TypeDef> = BTreeMap::new();
        let mut order: Vec<&TypeDef> = Vec::new();
        let mut skipped = Vec::new();
        let mut exported = Vec::new();
        for schema in schemas {
            if !is_exported(schema) {
                skipped.push(schema.name.clone());
                continue;
            }
            exported.push(schema);
            for def in &schema.types {
                match types.get(def.name.as_str()) {
                    Some(known) if known.rust_path != def.rust_path => {
                        return Err(ProtoFileError::NameClash {
                            name: def.name.clone(),
                            first: known.rust_path.clone(),
                            second: def.rust_path.clone(),
                        })
                    }
                    Some(_) => {}
                    None => {
                        types.insert(&def.name, def);
                        order.push(def);
                    }
                }
            }
        }
        let mut builder = Builder {
            user_names: types.keys().map(|name| (*name).to_owned()).collect(),
            wrappers: BTreeMap::new(),
            wrapper_order: Vec::new(),
            duration: false,
            timestamp: false,
        };
        // The order of these calls is the order wrappers are first met, and so declared.
        let services = exported
            .iter()
            .map(|schema| builder.service(schema))
            .collect();
        let types = order.iter().map(|def| builder.type_def(def)).collect();
        let wrappers = builder
            .wrapper_order
            .iter()
            .map(|name| ProtoMessage {
                name: name.clone(),
                doc: String::new(),
                nested: Vec::new(),
                fields: builder.wrappers.get(name).cloned().unwrap_or_default(),
                oneof: None,
            })
            .collect();
        let mut imports = Vec::new();
        if builder.duration {
            imports.push(WellKnown::Duration);
        }
        if builder.timestamp {
            imports.push(WellKnown::Timestamp);
        }
        Ok(ProtoModel {
            package: package.to_owned(),
            skipped,
            imports,
            services,
            types,
            wrappers,
        })
    }
}

/// How an upload travels over gRPC, the comment of the `_Upload` message of a method that
/// also takes arguments.
const UPLOAD_WITH_ARGS: &str = "\
Over gRPC, the first message of the request stream carries the arguments in `args` and no
item; each later message carries one item in `value`. wirecall's own frames send the
arguments as the `_Args` message and each item as this message with `value` alone.";

/// The same, for a method whose only input is the upload.
const UPLOAD_WITHOUT_ARGS: &str = "Over gRPC, every message of the request stream is one item.";

struct Builder {
    user_names: Vec<String>,
    /// Wrapper message name -> its fields.
    wrappers: BTreeMap<String, Vec<ProtoField>>,
    wrapper_order: Vec<String>,
    duration: bool,
    timestamp: bool,
}

impl Builder {
    fn service(&mut self, schema: &ServiceSchema) -> ProtoService {
        let service = service_identifier(&schema.name);
        let mut methods = Vec::new();
        let mut messages = Vec::new();
        for method in &schema.methods {
            let prefix = format!("{service}_{}", method.name);
            let args = (1..)
                .zip(&method.args)
                .map(|(number, arg)| self.field(&arg.ty, &arg.name, number, &arg.doc))
                .collect();
            messages.push(message(format!("{prefix}_Args"), String::new(), args));
            let reply = match &method.reply {
                ReplySchema::Unit => Vec::new(),
                ReplySchema::Value(ty) => vec![self.field(ty, "value", 1, "")],
                ReplySchema::Result { ok: Some(ok), err } => vec![
                    self.field(&TypeRef::Option(Box::new(ok.clone())), "ok", 1, ""),
                    self.field(&TypeRef::Option(Box::new(err.clone())), "err", 2, ""),
                ],
                ReplySchema::Result { ok: None, err } => {
                    vec![self.field(&TypeRef::Option(Box::new(err.clone())), "err", 1, "")]
                }
            };
            messages.push(message(format!("{prefix}_Reply"), String::new(), reply));
            let input = match &method.upload {
                Some(item) => {
                    let mut fields = vec![self.field(item, "value", 1, "")];
                    let doc = if method.args.is_empty() {
                        UPLOAD_WITHOUT_ARGS
                    } else {
                        fields.push(ProtoField {
                            name: "args".into(),
                            number: 2,
                            label: Label::Singular,
                            ty: FieldType::Named(format!("{prefix}_Args")),
                            doc: String::new(),
                        });
                        UPLOAD_WITH_ARGS
                    };
                    messages.push(message(format!("{prefix}_Upload"), doc.into(), fields));
                    format!("{prefix}_Upload")
                }
                None => format!("{prefix}_Args"),
            };
            methods.push(ProtoMethod {
                name: method.name.clone(),
                doc: method.doc.clone(),
                oneway: method.oneway,
                idempotent: method.idempotent,
                input,
                output: format!("{prefix}_Reply"),
                client_streaming: method.upload.is_some(),
                server_streaming: method.server_stream,
            });
        }
        ProtoService {
            name: service,
            doc: schema.doc.clone(),
            methods,
            messages,
        }
    }

    fn type_def(&mut self, def: &TypeDef) -> ProtoType {
        match &def.kind {
            TypeKind::Struct { fields } => {
                let fields = (1..)
                    .zip(fields)
                    .map(|(number, field)| self.field(&field.ty, &field.name, number, &field.doc))
                    .collect();
                ProtoType::Message(message(def.name.clone(), def.doc.clone(), fields))
            }
            TypeKind::Enum { values } => {
                let prefix = upper_snake(&def.name);
                let mut sorted: Vec<_> = values.iter().collect();
                sorted.sort_by_key(|value| value.number != 0);
                ProtoType::Enum(ProtoEnum {
                    name: def.name.clone(),
                    doc: def.doc.clone(),
                    values: sorted
                        .into_iter()
                        .map(|value| ProtoEnumValue {
                            name: format!("{prefix}_{}", upper_snake(&value.name)),
                            number: value.number,
                            doc: value.doc.clone(),
                        })
                        .collect(),
                })
            }
            TypeKind::OneOf { variants } => {
                let mut nested = Vec::new();
                let mut members = Vec::new();
                for variant in variants {
                    let ty = match &variant.shape {
                        VariantShape::Unit => self.wrapper("Empty", Vec::new()),
                        VariantShape::Newtype(ty) => self.value(ty),
                        VariantShape::Fields { fields, .. } => {
                            let fields = (1..)
                                .zip(fields)
                                .map(|(number, inner)| {
                                    // A tuple variant's fields are named `0`, `1`, ...
                                    let name =
                                        if inner.name.starts_with(|c: char| c.is_ascii_digit()) {
                                            format!("f{}", inner.name)
                                        } else {
                                            inner.name.clone()
                                        };
                                    self.field(&inner.ty, &name, number, "")
                                })
                                .collect();
                            nested.push(message(variant.name.clone(), String::new(), fields));
                            FieldType::Named(variant.name.clone())
                        }
                    };
                    members.push(ProtoField {
                        name: snake(&variant.name),
                        number: variant.tag,
                        label: Label::Singular,
                        ty,
                        doc: variant.doc.clone(),
                    });
                }
                ProtoType::Message(ProtoMessage {
                    name: def.name.clone(),
                    doc: def.doc.clone(),
                    nested,
                    fields: members,
                    oneof: Some(format!("{}_variant", snake(&def.name))),
                })
            }
        }
    }

    /// A message field of type `ty`.
    fn field(&mut self, ty: &TypeRef, name: &str, number: u32, doc: &str) -> ProtoField {
        let (label, ty) = match ty {
            TypeRef::Option(inner) => (Label::Optional, self.value(inner)),
            TypeRef::List(inner) | TypeRef::Set(inner) if **inner == TypeRef::U8 => {
                (Label::Singular, FieldType::Scalar(Scalar::Bytes))
            }
            TypeRef::List(inner) | TypeRef::Set(inner) => (Label::Repeated, self.value(inner)),
            TypeRef::Map { key, value } => {
                let key = self.value(key);
                // A field of a map holds an `Option<T>` value as T.
                let value = match &**value {
                    TypeRef::Option(inner) => self.value(inner),
                    other => self.value(other),
                };
                (
                    Label::Singular,
                    FieldType::Map {
                        key: Box::new(key),
                        value: Box::new(value),
                    },
                )
            }
            other => (Label::Singular, self.value(other)),
        };
        ProtoField {
            name: name.to_owned(),
            number,
            label,
            ty,
            doc: doc.to_owned(),
        }
    }

    /// The type of one always-present value of `ty`.
    fn value(&mut self, ty: &TypeRef) -> FieldType {
        let scalar = match ty {
            TypeRef::Bool => Scalar::Bool,
            TypeRef::U8 | TypeRef::U16 | TypeRef::U32 | TypeRef::Char => Scalar::Uint32,
            TypeRef::U64 => Scalar::Uint64,
            TypeRef::I8 | TypeRef::I16 | TypeRef::I32 => Scalar::Int32,
            TypeRef::I64 => Scalar::Int64,
            TypeRef::F32 => Scalar::Float,
            TypeRef::F64 => Scalar::Double,
            TypeRef::String => Scalar::String,
            // Services with opaque types are not exported; keep the file valid regardless.
            TypeRef::Bytes | TypeRef::Opaque(_) => Scalar::Bytes,
            TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. }
                if **inner == TypeRef::U8 =>
            {
                Scalar::Bytes
            }
            TypeRef::Duration => {
                self.duration = true;
                return FieldType::Named(WellKnown::Duration.type_name().into());
            }
            TypeRef::Timestamp => {
                self.timestamp = true;
                return FieldType::Named(WellKnown::Timestamp.type_name().into());
            }
            TypeRef::Named(name) => return FieldType::Named(name.clone()),
            TypeRef::Option(inner) => {
                let field = self.field(ty, "value", 1, "");
                return self.wrapper(&format!("Option_{}", mangle(inner)), vec![field]);
            }
            TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. } => {
                let field = ProtoField {
                    name: "values".into(),
                    number: 1,
                    label: Label::Repeated,
                    ty: self.value(inner),
                    doc: String::new(),
                };
                return self.wrapper(&format!("List_{}", mangle(inner)), vec![field]);
            }
            TypeRef::Map { key, value } => {
                let field = self.field(ty, "entries", 1, "");
                let name = format!("Map_{}_{}", mangle(key), mangle(value));
                return self.wrapper(&name, vec![field]);
            }
            TypeRef::Tuple(elements) => {
                let fields = (1..)
                    .zip(elements)
                    .map(|(number, element)| {
                        self.field(element, &format!("f{}", number - 1), number, "")
                    })
                    .collect();
                let names: Vec<String> = elements.iter().map(mangle).collect();
                return self.wrapper(&format!("Tuple_{}", names.join("_")), fields);
            }
        };
        FieldType::Scalar(scalar)
    }

    /// Declares a wrapper message (once) and returns its type; a name a user type already
    /// has, or a different wrapper, gets `_` appended.
    fn wrapper(&mut self, name: &str, fields: Vec<ProtoField>) -> FieldType {
        let mut name = name.to_owned();
        loop {
            if self.user_names.contains(&name) {
                name.push('_');
                continue;
            }
            match self.wrappers.get(&name) {
                Some(existing) if *existing == fields => return FieldType::Named(name),
                Some(_) => name.push('_'),
                None => {
                    self.wrappers.insert(name.clone(), fields);
                    self.wrapper_order.push(name.clone());
                    return FieldType::Named(name);
                }
            }
        }
    }
}

fn message(name: String, doc: String, fields: Vec<ProtoField>) -> ProtoMessage {
    ProtoMessage {
        name,
        doc,
        nested: Vec::new(),
        fields,
        oneof: None,
    }
}

/// A name fragment for a wrapper: the Protobuf type of scalars, the name of named types.
fn mangle(ty: &TypeRef) -> String {
    match ty {
        TypeRef::Bool => "bool".into(),
        TypeRef::U8 | TypeRef::U16 | TypeRef::U32 | TypeRef::Char => "uint32".into(),
        TypeRef::U64 => "uint64".into(),
        TypeRef::I8 | TypeRef::I16 | TypeRef::I32 => "int32".into(),
        TypeRef::I64 => "int64".into(),
        TypeRef::F32 => "float".into(),
        TypeRef::F64 => "double".into(),
        TypeRef::String => "string".into(),
        TypeRef::Bytes => "bytes".into(),
        TypeRef::Duration => "Duration".into(),
        TypeRef::Timestamp => "Timestamp".into(),
        TypeRef::Named(name) => name.clone(),
        TypeRef::Opaque(_) => "bytes".into(),
        TypeRef::Option(inner) => format!("Option_{}", mangle(inner)),
        TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. }
            if **inner == TypeRef::U8 =>
        {
            "bytes".into()
        }
        TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. } => {
            format!("List_{}", mangle(inner))
        }
        TypeRef::Map { key, value } => format!("Map_{}_{}", mangle(key), mangle(value)),
        TypeRef::Tuple(elements) => {
            let names: Vec<String> = elements.iter().map(mangle).collect();
            format!("Tuple_{}", names.join("_"))
        }
    }
}

/// `UserModel` -> `user_model`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (index, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `UserModel` -> `USER_MODEL`.
fn upper_snake(name: &str) -> String {
    snake(name).to_ascii_uppercase()
}
